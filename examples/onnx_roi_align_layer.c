/* onnx_roi_align_layer.c - the C calls behind a trainable ONNX RoiAlign layer (mode="max"),
 * a complete program to copy (ctest runs it and checks every number it prints).
 *
 * A layer's training step is four calls:
 *   1. forward, recording each output's winner:  pyroi_roi_align_onnx_max_forward_argmax_f32
 *   2. (keep the winners, boxes and batch indices until the backward)
 *   3. backward from the winners:                pyroi_roi_align_onnx_max_backward_f32
 *   4. the layer's lda_coeff: grad_input *= lda_coeff (a plain product, here in the caller)
 * In mode="avg" the calls are pyroi_roi_align_forward_f32 / pyroi_roi_align_backward_f32 with
 * the same params and no winners. ONNX attributes map onto pyroi_roi_align_params as:
 *   output_height/width -> pooled_height/width, sampling_ratio -> sampling_ratio (0 adaptive),
 *   spatial_scale -> spatial_scale_h and _w (ONNX's default 1.0, as a float32 value),
 *   coordinate_transformation_mode "half_pixel" -> aligned = 1, "output_half_pixel" and
 *   RoiAlign-10 -> aligned = 0.
 *
 * The map is 1 x 1 x 4 x 4 with pixel (y, x) = 10 * y + x; one RoI (0, 0, 4, 4) pooled to
 * 2 x 2 bins, half_pixel, one sample per bin. Each sample lies midway between four pixels, so
 * ONNX's max over weighted taps is a quarter of the largest of them (its documented quirk):
 * 2.75 3.25 / 7.75 8.25, each won by tap 3 (the lower-right pixel, weight 0.25).
 *
 * Build against an installed pyroi:
 *     cc -std=c99 onnx_roi_align_layer.c $(pkg-config --cflags --libs pyroi) -o layer
 */
#include <pyroi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H 4
#define W 4
#define PH 2
#define PW 2

static void check(pyroi_status status, const char *what)
{
    if (status != PYROI_OK) {
        fprintf(stderr, "%s failed: %s (status %d)\n", what, pyroi_status_string(status),
                (int)status);
        exit(1);
    }
}

int main(void)
{
    static const float expected_output[PH * PW] = {2.75f, 3.25f, 7.75f, 8.25f};
    const int64_t map_shape[4] = {1, 1, H, W};
    const int64_t map_strides[4] = {H * W, H * W, W, 1};
    const int64_t pooled_strides[4] = {PH * PW, PH * PW, PW, 1};
    const float boxes[4] = {0.0f, 0.0f, 4.0f, 4.0f}; /* x1, y1, x2, y2 */
    const int64_t batch_indices[1] = {0};
    const float lda_coeff = 0.5f;
    float input[H * W], output[PH * PW], grad_output[PH * PW];
    float grad_input[H * W], grad_input_4_threads[H * W];
    int64_t winners[PH * PW];
    pyroi_roi_align_params params;
    int i, failures = 0;

    for (i = 0; i < H * W; ++i) {
        input[i] = (float)(10 * (i / W) + i % W);
    }
    pyroi_roi_align_params_init(&params); /* then ONNX's attributes: */
    params.pooled_height = PH;            /* output_height */
    params.pooled_width = PW;             /* output_width */
    params.sampling_ratio = 1;            /* sampling_ratio */
    params.spatial_scale_h = 1.0;         /* spatial_scale (ONNX default 1.0) */
    params.spatial_scale_w = 1.0;
    params.aligned = 1;                   /* coordinate_transformation_mode = "half_pixel" */

    /* 1. forward with winners: code 4 * sample + tap (tap 0..3: (y_lo, x_lo), (y_lo, x_hi),
     *    (y_hi, x_lo), (y_hi, x_hi)), -1 for a bin without samples */
    check(pyroi_roi_align_onnx_max_forward_argmax_f32(input, map_shape, map_strides, boxes, 1, 4,
                                                      batch_indices, output, pooled_strides,
                                                      winners, pooled_strides, &params),
          "forward");
    for (i = 0; i < PH * PW; ++i) {
        printf("bin %d: %g (sample %lld, tap %lld)\n", i, output[i], (long long)(winners[i] / 4),
               (long long)(winners[i] % 4));
        failures += output[i] != expected_output[i] || winners[i] != 3;
    }

    /* 3. backward of loss = sum of the outputs: each output's gradient goes to its winning
     *    tap, times that tap's weight (0.25 here) */
    for (i = 0; i < PH * PW; ++i) {
        grad_output[i] = 1.0f;
    }
    check(pyroi_roi_align_onnx_max_backward_f32(grad_output, pooled_strides, winners,
                                                pooled_strides, boxes, 1, 4, batch_indices,
                                                grad_input, map_shape, map_strides, &params),
          "backward");
    /* 4. the layer's lda_coeff */
    for (i = 0; i < H * W; ++i) {
        grad_input[i] *= lda_coeff;
    }
    for (i = 0; i < H * W; ++i) {
        const int winner_pixel = (i / W) % 2 == 1 && (i % W) % 2 == 1; /* (1|3, 1|3) */
        printf("%6.3f%s", grad_input[i], i % W == W - 1 ? "\n" : " ");
        failures += grad_input[i] != (winner_pixel ? 0.125f : 0.0f);
    }

    /* results are bit-identical for every thread count */
    params.num_threads = 4;
    check(pyroi_roi_align_onnx_max_backward_f32(grad_output, pooled_strides, winners,
                                                pooled_strides, boxes, 1, 4, batch_indices,
                                                grad_input_4_threads, map_shape, map_strides,
                                                &params),
          "backward on 4 threads");
    for (i = 0; i < H * W; ++i) {
        grad_input_4_threads[i] *= lda_coeff;
    }
    failures += memcmp(grad_input, grad_input_4_threads, sizeof(grad_input)) != 0;

    if (failures != 0) {
        fprintf(stderr, "%d unexpected values\n", failures);
        return 1;
    }
    return 0;
}
