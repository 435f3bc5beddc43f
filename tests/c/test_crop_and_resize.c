/* test_crop_and_resize.c - crop_and_resize's C entry points: statuses naming each bad
 * argument, a TensorFlow known answer (crop_and_resize_op_test.cc, 2x2 -> 3x3, NHWC), the
 * onnxruntime placement at a .5 tie, the gradients on a small case, and nothing written
 * on failure. */
#include "check.h"

#include <string.h>

/* NHWC strides of an (N, H, W, C) tensor as the logical (N, C, H, W) */
static void nhwc_strides(int64_t h, int64_t w, int64_t c, int64_t strides[4])
{
    strides[0] = h * w * c;
    strides[1] = 1;
    strides[2] = w * c;
    strides[3] = c;
}

int main(void)
{
    const float image[4] = {1, 2, 3, 4};
    const int64_t shape[4] = {1, 1, 2, 2};
    int64_t strides[4], crop_strides[4];
    const float box[4] = {0, 0, 1, 1}, flipped[4] = {1, 1, 0, 0};
    const int64_t zero = 0, one = 1;
    const float expected[9] = {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4};
    const float expected_flipped_nearest[9] = {4, 4, 3, 4, 4, 3, 2, 2, 1};
    float crops[9], grad_image[4], grad_boxes[4];
    pyroi_crop_and_resize_params params;
    int i;

    nhwc_strides(2, 2, 1, strides);
    nhwc_strides(3, 3, 1, crop_strides);
    pyroi_crop_and_resize_params_init(&params);
    CHECK(params.crop_height == 1 && params.crop_width == 1 &&
          params.method == PYROI_CROP_BILINEAR && params.extrapolation_value == 0.0 &&
          params.placement == PYROI_CROP_PLACEMENT_TENSORFLOW && params.cancel == NULL);
    params.crop_height = params.crop_width = 3;

    /* TensorFlow's TestCropAndResize2x2To3x3 and ...FlippedNearestNeighbor */
    CHECK_STATUS(pyroi_crop_and_resize_forward_f32(image, shape, strides, box, 1, 4, &zero,
                                                   crops, crop_strides, &params), PYROI_OK);
    for (i = 0; i < 9; ++i) {
        CHECK(crops[i] == expected[i]);
    }
    params.method = PYROI_CROP_NEAREST;
    CHECK_STATUS(pyroi_crop_and_resize_forward_f32(image, shape, strides, flipped, 1, 4, &zero,
                                                   crops, crop_strides, &params), PYROI_OK);
    for (i = 0; i < 9; ++i) {
        CHECK(crops[i] == expected_flipped_nearest[i]);
    }

    /* statuses, output untouched */
    memset(crops, 0x7f, sizeof crops);
    CHECK_STATUS(pyroi_crop_and_resize_forward_f32(image, shape, strides, box, 1, 4, &zero,
                                                   crops, crop_strides, NULL),
                 PYROI_E_NULL_POINTER);
    params.method = 7;
    CHECK_STATUS(pyroi_crop_and_resize_forward_f32(image, shape, strides, box, 1, 4, &zero,
                                                   crops, crop_strides, &params),
                 PYROI_E_INVALID_METHOD);
    params.method = PYROI_CROP_BILINEAR;
    params.placement = 5;
    CHECK_STATUS(pyroi_crop_and_resize_forward_f32(image, shape, strides, box, 1, 4, &zero,
                                                   crops, crop_strides, &params),
                 PYROI_E_INVALID_METHOD);
    params.placement = PYROI_CROP_PLACEMENT_TENSORFLOW;
    params.crop_width = 0;
    CHECK_STATUS(pyroi_crop_and_resize_forward_f32(image, shape, strides, box, 1, 4, &zero,
                                                   crops, crop_strides, &params),
                 PYROI_E_INVALID_OUTPUT_SIZE);
    params.crop_width = 3;
    params.num_threads = -1;
    CHECK_STATUS(pyroi_crop_and_resize_forward_f32(image, shape, strides, box, 1, 4, &zero,
                                                   crops, crop_strides, &params),
                 PYROI_E_INVALID_NUM_THREADS);
    params.num_threads = 0;
    CHECK_STATUS(pyroi_crop_and_resize_forward_f32(image, shape, strides, box, 1, 4, &one,
                                                   crops, crop_strides, &params),
                 PYROI_E_INVALID_BATCH_INDEX);
    {
        const float bad[4] = {0, NAN, 1, 1};
        int64_t failed = 7;
        CHECK_STATUS(pyroi_crop_and_resize_forward_f32(image, shape, strides, bad, 1, 4, &zero,
                                                       crops, crop_strides, &params),
                     PYROI_E_INVALID_BOX);
        CHECK_STATUS(pyroi_crop_and_resize_find_invalid_roi_f32(bad, 1, 4, &zero, 1, 2, 2,
                                                                &params, &failed),
                     PYROI_E_INVALID_BOX);
        CHECK(failed == 0);
        CHECK_STATUS(pyroi_crop_and_resize_find_invalid_roi_f32(box, 1, 4, &zero, 1, 2, 2,
                                                                &params, &failed), PYROI_OK);
        CHECK(failed == -1);
    }
    CHECK_STATUS(pyroi_crop_and_resize_forward_f32(image, shape, strides, NULL, 1, 4, &zero,
                                                   crops, crop_strides, &params),
                 PYROI_E_NULL_POINTER);
    {
        const int64_t overlapping[4] = {0, 0, 0, 0};
        CHECK_STATUS(pyroi_crop_and_resize_forward_f32(image, shape, strides, box, 1, 4, &zero,
                                                       crops, overlapping, &params),
                     PYROI_E_INVALID_STRIDES);
    }
    for (i = 0; i < 9; ++i) {
        CHECK(memcmp(&crops[i], &crops[0], sizeof(float)) == 0 && !(crops[i] == expected[i]));
    }

    /* the gradients: one centred sample of the 2x2 map */
    params.crop_height = params.crop_width = 1;
    {
        const float g = 1.0f;
        const int64_t g_strides[4] = {1, 1, 1, 1};
        const float centre[4] = {0.2f, 0.2f, 0.6f, 0.6f};
        CHECK_STATUS(pyroi_crop_and_resize_backward_image_f32(&g, g_strides, box, 1, 4, &zero,
                                                              grad_image, shape, strides,
                                                              &params), PYROI_OK);
        for (i = 0; i < 4; ++i) {
            CHECK(grad_image[i] == 0.25f);
        }
        CHECK_STATUS(pyroi_crop_and_resize_backward_boxes_f32(&g, g_strides, image, shape,
                                                              strides, centre, 1, 4, &zero,
                                                              grad_boxes, 4, &params),
                     PYROI_OK);
        /* dv/dy = 2, dv/dx = 1, d(centre)/d(edge) = (H - 1) / 2 */
        CHECK_CLOSE(grad_boxes[0], 1.0, 1e-6);
        CHECK_CLOSE(grad_boxes[1], 0.5, 1e-6);
        CHECK_CLOSE(grad_boxes[2], 1.0, 1e-6);
        CHECK_CLOSE(grad_boxes[3], 0.5, 1e-6);
        CHECK_STATUS(pyroi_crop_and_resize_backward_boxes_f32(&g, g_strides, image, shape,
                                                              strides, centre, 1, 4, &zero,
                                                              grad_boxes, 3, &params),
                     PYROI_E_INVALID_STRIDES);
        params.method = PYROI_CROP_NEAREST;
        CHECK_STATUS(pyroi_crop_and_resize_backward_boxes_f32(&g, g_strides, image, shape,
                                                              strides, centre, 1, 4, &zero,
                                                              grad_boxes, 4, &params),
                     PYROI_E_INVALID_METHOD);
    }

    /* the placements at a tie: W = 4, x from 0.05 to 0.5, 3 samples, nearest */
    {
        const float ramp[4] = {0, 1, 2, 3};
        const int64_t ramp_shape[4] = {1, 1, 1, 4}, ramp_strides[4] = {4, 4, 4, 1};
        const int64_t out_strides[4] = {3, 3, 3, 1};
        const float tie[4] = {0, 0.05f, 0, 0.5f};
        float row[3];
        params.method = PYROI_CROP_NEAREST;
        params.crop_height = 1;
        params.crop_width = 3;
        CHECK_STATUS(pyroi_crop_and_resize_forward_f32(ramp, ramp_shape, ramp_strides, tie, 1,
                                                       4, &zero, row, out_strides, &params),
                     PYROI_OK);
        CHECK(row[2] == 1.0f);
        params.placement = PYROI_CROP_PLACEMENT_EXACT_ENDS;
        CHECK_STATUS(pyroi_crop_and_resize_forward_f32(ramp, ramp_shape, ramp_strides, tie, 1,
                                                       4, &zero, row, out_strides, &params),
                     PYROI_OK);
        CHECK(row[2] == 2.0f);
    }
    CHECK(strcmp(pyroi_status_string(PYROI_E_INVALID_METHOD), "unknown status") != 0);
    return check_report("crop_and_resize");
}
