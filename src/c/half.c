/* half.c - float16 entry points of RoIAlign: the float16 tensors are widened (exactly) into
 * float32 scratch, the float32 kernels run (so every sum is accumulated in float32), and the
 * result is rounded once to float16; and the scaled rounding of a float32 result to float16. */
#include "half.h"
#include "parallel.h"
#include "validate.h"

#include <stdlib.h>
#include <string.h>

/* Elements of a 4-d shape already checked by pyroi_check_tensor4 (no overflow). */
static int64_t half_count(const int64_t shape[4])
{
    return shape[0] * shape[1] * shape[2] * shape[3];
}

static void half_contiguous_strides(const int64_t shape[4], int64_t strides[4])
{
    strides[3] = 1;
    strides[2] = shape[3];
    strides[1] = shape[2] * shape[3];
    strides[0] = shape[1] * shape[2] * shape[3];
}

/* float32 scratch of count elements (at least one), or NULL. */
static float *half_scratch(int64_t count)
{
    if ((uint64_t)count > (uint64_t)(SIZE_MAX / sizeof(float))) {
        return NULL;
    }
    return (float *)malloc((size_t)(count > 0 ? count : 1) * sizeof(float));
}

/* Elements converted between two cancellation checks (well under a millisecond). */
#define HALF_CHECK_ELEMENTS ((int64_t)1 << 18)

/* Converts between a float16 tensor of any strides and contiguous float32 (wide): widens
 * from halves_in when it is given, else narrows into halves_out. Returns 0 when the call's
 * token stops it (checked between rows). */
static int half_convert(const uint16_t *halves_in, uint16_t *halves_out, const int64_t shape[4],
                        const int64_t strides[4], float *wide, pyroi_cancel *cancel)
{
    int64_t n, c, h, w, i = 0, checked = 0;
    for (n = 0; n < shape[0]; ++n) {
        for (c = 0; c < shape[1]; ++c) {
            for (h = 0; h < shape[2]; ++h) {
                const int64_t row = n * strides[0] + c * strides[1] + h * strides[2];
                if (halves_in != NULL) {
                    for (w = 0; w < shape[3]; ++w) {
                        wide[i + w] = pyroi_half_to_float(halves_in[row + w * strides[3]]);
                    }
                } else {
                    for (w = 0; w < shape[3]; ++w) {
                        halves_out[row + w * strides[3]] = pyroi_float_to_half(wide[i + w]);
                    }
                }
                i += shape[3];
                if (i - checked >= HALF_CHECK_ELEMENTS) {
                    if (pyroi_cancel_check(cancel)) {
                        return 0;
                    }
                    checked = i;
                }
            }
        }
    }
    return 1;
}

/* The float32 copies of the tensor a call reads and the one it writes, with their contiguous
 * strides; 0 (nothing left allocated) when memory is short. */
static int half_wide_pair(const int64_t read_shape[4], float **wide_read,
                          int64_t read_strides[4], const int64_t written_shape[4],
                          float **wide_written, int64_t written_strides[4])
{
    *wide_read = half_scratch(half_count(read_shape));
    *wide_written = half_scratch(half_count(written_shape));
    if (*wide_read == NULL || *wide_written == NULL) {
        free(*wide_read);
        free(*wide_written);
        return 0;
    }
    half_contiguous_strides(read_shape, read_strides);
    half_contiguous_strides(written_shape, written_strides);
    return 1;
}

/* Every check of the float32 call, done before any element is read or written. */
static pyroi_status half_check(const void *map, const int64_t map_shape[4],
                               const int64_t map_strides[4], pyroi_tensor_role map_role,
                               const void *pooled, const int64_t pooled_strides[4],
                               pyroi_tensor_role pooled_role, const float *boxes,
                               int64_t num_rois, int64_t box_row_stride,
                               const int64_t *batch_indices,
                               const pyroi_roi_align_params *params, int64_t pooled_shape[4])
{
    int64_t failed_roi, shape[4];
    pyroi_status status = pyroi_check_roi_align_params(params);
    if (status == PYROI_OK && map_shape == NULL) {
        status = PYROI_E_NULL_POINTER;
    }
    if (status == PYROI_OK) {
        /* one read of the map's shape, so that the pooled shape returned is the one checked */
        memcpy(shape, map_shape, sizeof(shape));
        status = pyroi_check_pooling_call(map, shape, map_strides, map_role, pooled,
                                          pooled_strides, pooled_role, -1,
                                          params->pooled_height, params->pooled_width, boxes,
                                          num_rois, box_row_stride, 4, batch_indices);
    }
    if (status == PYROI_OK) {
        status = pyroi_check_batch_indices(batch_indices, num_rois, shape[0]);
    }
    if (status != PYROI_OK) {
        return status;
    }
    pyroi_pooled_shape(num_rois, shape[1], params->pooled_height, params->pooled_width,
                       pooled_shape);
    return pyroi_roi_align_find_invalid_roi_f32(boxes, num_rois, box_row_stride, batch_indices,
                                                shape[0], shape[2], shape[3],
                                                params, &failed_roi);
}

pyroi_status pyroi_roi_align_forward_f16(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params)
{
    int64_t output_shape[4], input_contiguous[4], output_contiguous[4];
    float *wide_input, *wide_output;
    pyroi_status status = half_check(input, input_shape, input_strides, PYROI_TENSOR_INPUT,
                                     output, output_strides, PYROI_TENSOR_OUTPUT, boxes,
                                     num_rois, box_row_stride, batch_indices, params,
                                     output_shape);
    if (status != PYROI_OK || half_count(output_shape) == 0) {
        return status;
    }
    if (!half_wide_pair(input_shape, &wide_input, input_contiguous, output_shape, &wide_output,
                        output_contiguous)) {
        return PYROI_E_NO_MEMORY;
    }
    status = half_convert(input, NULL, input_shape, input_strides, wide_input, params->cancel)
                 ? pyroi_roi_align_forward_f32(wide_input, input_shape, input_contiguous, boxes,
                                               num_rois, box_row_stride, batch_indices,
                                               wide_output, output_contiguous, params)
                 : PYROI_E_CANCELLED;
    if (status == PYROI_OK &&
        !half_convert(NULL, output, output_shape, output_strides, wide_output,
                      params->cancel)) {
        status = PYROI_E_CANCELLED;
    }
    free(wide_input);
    free(wide_output);
    return status;
}

pyroi_status pyroi_roi_align_backward_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_align_params *params)
{
    int64_t grad_output_shape[4], go_contiguous[4], gi_contiguous[4];
    float *wide_grad_output, *wide_grad_input;
    pyroi_status status = half_check(grad_input, grad_input_shape, grad_input_strides,
                                     PYROI_TENSOR_OUTPUT, grad_output, grad_output_strides,
                                     PYROI_TENSOR_INPUT, boxes, num_rois, box_row_stride,
                                     batch_indices, params, grad_output_shape);
    if (status != PYROI_OK || half_count(grad_input_shape) == 0) {
        return status;
    }
    if (!half_wide_pair(grad_output_shape, &wide_grad_output, go_contiguous, grad_input_shape,
                        &wide_grad_input, gi_contiguous)) {
        return PYROI_E_NO_MEMORY;
    }
    status = half_convert(grad_output, NULL, grad_output_shape, grad_output_strides,
                          wide_grad_output, params->cancel)
                 ? pyroi_roi_align_backward_f32(wide_grad_output, go_contiguous, boxes,
                                                num_rois, box_row_stride, batch_indices,
                                                wide_grad_input, grad_input_shape,
                                                gi_contiguous, params)
                 : PYROI_E_CANCELLED;
    if (status == PYROI_OK && !half_convert(NULL, grad_input, grad_input_shape,
                                            grad_input_strides, wide_grad_input,
                                            params->cancel)) {
        status = PYROI_E_CANCELLED;
    }
    free(wide_grad_output);
    free(wide_grad_input);
    return status;
}

pyroi_status pyroi_scale_f32_to_f16(const float *source, int64_t count, float scale,
                                    uint16_t *target)
{
    int64_t i;
    if (count < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    if (count > 0 && (source == NULL || target == NULL)) {
        return PYROI_E_NULL_POINTER;
    }
    for (i = 0; i < count; ++i) {
        const float product = source[i] * scale; /* rounded to float32 here, as in C99 */
        target[i] = pyroi_float_to_half(product);
    }
    return PYROI_OK;
}
