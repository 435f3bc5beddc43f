/* roi_pool.c - RoIPool (quantised max pooling of Fast R-CNN), forward with argmax and
 * backward, float32 and float64. The kernel body is written once in roi_pool_template.h.
 * Semantics: SEMANTICS.md section 5.1 (torchvision.ops.roi_pool). */
#include "parallel.h"
#include "validate.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rounded box coordinates are clamped to [-2^53, 2^53] pixels before they become integers.
 * torchvision converts them to int and is undefined once they leave the int32 range, so
 * every result it defines is unchanged; beyond, pyroi stays defined: the clamp keeps the
 * conversion and every later sum (RoI size, bin offset + RoI start) well inside int64. */
#define ROI_POOL_COORD_LIMIT 9007199254740992.0

/* The pixels [begin, end) that one output bin covers along one axis, clipped to the map. */
typedef struct roi_pool_window {
    int64_t begin;
    int64_t end;
} roi_pool_window;

void pyroi_roi_pool_params_init(pyroi_roi_pool_params *params)
{
    if (params == NULL) {
        return;
    }
    memset(params, 0, sizeof(*params));
    params->pooled_height = 1;
    params->pooled_width = 1;
    params->spatial_scale_h = 1.0;
    params->spatial_scale_w = 1.0;
    params->num_threads = 0;
}

/* Validation of a forward call once the dtype no longer matters. */
static pyroi_status roi_pool_check_forward(const void *input, const int64_t input_shape[4],
                                           const int64_t input_strides[4], const void *boxes,
                                           int64_t num_rois, int64_t box_row_stride,
                                           const int64_t *batch_indices, const void *output,
                                           const int64_t output_strides[4],
                                           const int64_t *argmax,
                                           const int64_t argmax_strides[4],
                                           const pyroi_roi_pool_params *params)
{
    pyroi_status status = pyroi_check_roi_pool_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_check_pooling_call(input, input_shape, input_strides, PYROI_TENSOR_INPUT,
                                      output, output_strides, PYROI_TENSOR_OUTPUT,
                                      -1, params->pooled_height,
                                      params->pooled_width, boxes, num_rois, box_row_stride, 4,
                                      batch_indices);
    if (status == PYROI_OK && argmax != NULL) {
        const int64_t pooled_shape[4] = {num_rois, input_shape[1], params->pooled_height,
                                         params->pooled_width};
        status = pyroi_check_tensor4(argmax, pooled_shape, argmax_strides, PYROI_TENSOR_OUTPUT);
    }
    return status;
}

/* Every argmax entry must be -1 (nothing to propagate) or a pixel of an H x W plane: the
 * backward writes at that pixel, so a bad entry would be an out-of-bounds write. */
static pyroi_status roi_pool_check_argmax(const int64_t *argmax, const int64_t shape[4],
                                          const int64_t strides[4], int64_t plane_size)
{
    int64_t k, c, ph, pw;
    for (k = 0; k < shape[0]; ++k) {
        for (c = 0; c < shape[1]; ++c) {
            const int64_t *winners = argmax + k * strides[0] + c * strides[1];
            for (ph = 0; ph < shape[2]; ++ph) {
                for (pw = 0; pw < shape[3]; ++pw) {
                    const int64_t a = winners[ph * strides[2] + pw * strides[3]];
                    if (a < -1 || a >= plane_size) {
                        return PYROI_E_INVALID_ARGMAX;
                    }
                }
            }
        }
    }
    return PYROI_OK;
}

/* Validation of a backward call once the dtype no longer matters. */
static pyroi_status roi_pool_check_backward(const void *grad_output,
                                            const int64_t grad_output_strides[4],
                                            const int64_t *argmax,
                                            const int64_t argmax_strides[4],
                                            const int64_t *batch_indices, int64_t num_rois,
                                            const void *grad_input,
                                            const int64_t grad_input_shape[4],
                                            const int64_t grad_input_strides[4],
                                            const pyroi_roi_pool_params *params)
{
    int64_t pooled_shape[4];
    int64_t plane_size;
    pyroi_status status = pyroi_check_roi_pool_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    if (num_rois < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    status = pyroi_check_tensor4(grad_input, grad_input_shape, grad_input_strides,
                                 PYROI_TENSOR_OUTPUT);
    if (status != PYROI_OK) {
        return status;
    }
    pooled_shape[0] = num_rois;
    pooled_shape[1] = grad_input_shape[1];
    pooled_shape[2] = params->pooled_height;
    pooled_shape[3] = params->pooled_width;
    status = pyroi_check_tensor4(grad_output, pooled_shape, grad_output_strides,
                                 PYROI_TENSOR_INPUT);
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_check_tensor4(argmax, pooled_shape, argmax_strides, PYROI_TENSOR_INPUT);
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_check_batch_indices(batch_indices, num_rois, grad_input_shape[0]);
    if (status != PYROI_OK) {
        return status;
    }
    if (!pyroi_mul_nonneg(grad_input_shape[2], grad_input_shape[3], &plane_size)) {
        return PYROI_E_INVALID_SHAPE; /* unreachable: the tensor check bounds H * W */
    }
    return roi_pool_check_argmax(argmax, pooled_shape, argmax_strides, plane_size);
}

/* Per-worker scratch: the bin windows of one RoI (rows first, then columns). */
static pyroi_status roi_pool_windows_alloc(roi_pool_window **windows, int workers,
                                           int64_t pooled_height, int64_t pooled_width)
{
    const uint64_t limit = (uint64_t)SIZE_MAX / 4 / sizeof(roi_pool_window) /
                           (uint64_t)PYROI_PARALLEL_MAX_WORKERS;
    if ((uint64_t)pooled_height > limit || (uint64_t)pooled_width > limit) {
        return PYROI_E_NO_MEMORY;
    }
    *windows = (roi_pool_window *)malloc((size_t)workers *
                                         ((size_t)pooled_height + (size_t)pooled_width) *
                                         sizeof(roi_pool_window));
    return *windows == NULL ? PYROI_E_NO_MEMORY : PYROI_OK;
}

static int64_t roi_pool_clamp(int64_t value, int64_t extent)
{
    return value < 0 ? 0 : (value > extent ? extent : value);
}

#define T float
#define PYROI_TYPED(name) PYROI_CAT(name, _f32)
#define ROI_POOL_ROUND roundf
#define ROI_POOL_FLOOR floorf
#define ROI_POOL_CEIL ceilf
#include "roi_pool_template.h"
#undef ROI_POOL_CEIL
#undef ROI_POOL_FLOOR
#undef ROI_POOL_ROUND
#undef PYROI_TYPED
#undef T

#define T double
#define PYROI_TYPED(name) PYROI_CAT(name, _f64)
#define ROI_POOL_ROUND round
#define ROI_POOL_FLOOR floor
#define ROI_POOL_CEIL ceil
#include "roi_pool_template.h"
#undef ROI_POOL_CEIL
#undef ROI_POOL_FLOOR
#undef ROI_POOL_ROUND
#undef PYROI_TYPED
#undef T
