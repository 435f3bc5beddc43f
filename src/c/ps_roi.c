/* ps_roi.c - position-sensitive RoIAlign and RoIPool (R-FCN, Light-Head R-CNN), forward and
 * backward, float32 and float64, as torchvision.ops.ps_roi_align / ps_roi_pool
 * (docs/semantics.md §6). The kernel bodies are written once, in the templates that
 * ps_roi_dtype.h lists. */
#include "parallel.h"
#include "rois.h"
#include "sampling.h"
#include "validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pyroi_ps_roi_align_params_init(pyroi_ps_roi_align_params *params)
{
    /* the fields not named are 0 (num_threads: all cores) or NULL */
    static const pyroi_ps_roi_align_params defaults = {
        .pooled_height = 1, .pooled_width = 1, .spatial_scale_h = 1.0, .spatial_scale_w = 1.0,
        .sampling_ratio = -1};
    if (params != NULL) {
        *params = defaults;
    }
}

void pyroi_ps_roi_pool_params_init(pyroi_ps_roi_pool_params *params)
{
    /* the fields not named are 0 (num_threads: all cores) or NULL */
    static const pyroi_ps_roi_pool_params defaults = {
        .pooled_height = 1, .pooled_width = 1, .spatial_scale_h = 1.0, .spatial_scale_w = 1.0};
    if (params != NULL) {
        *params = defaults;
    }
}

/* Output channels C / (PH * PW); C must be a multiple of PH * PW (torchvision checks it). */
static pyroi_status ps_output_channels(int64_t channels, int64_t pooled_height,
                                       int64_t pooled_width, int64_t *channels_out)
{
    int64_t group;
    if (!pyroi_mul_nonneg(pooled_height, pooled_width, &group)) {
        /* more bins than any channel count: only C = 0 is a multiple */
        if (channels != 0) {
            return PYROI_E_INVALID_SHAPE;
        }
        *channels_out = 0;
        return PYROI_OK;
    }
    if (channels % group != 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    *channels_out = channels / group;
    return PYROI_OK;
}

/* Validation shared by every entry point once the parameters are checked: the feature tensor
 * (input or grad_input), its channel count, the pooled tensor (output or grad_output) of
 * shape (num_rois, C / (PH * PW), PH, PW), and the boxes; then copies the RoIs into *rois
 * (value_bytes a coordinate), which the call reads from then on and frees. */
static pyroi_status ps_check_call(const void *features, const int64_t features_shape[4],
                                  const int64_t features_strides[4],
                                  pyroi_tensor_role features_role, const void *pooled,
                                  const int64_t pooled_strides[4], pyroi_tensor_role pooled_role,
                                  const void *boxes, int64_t num_rois, int64_t box_row_stride,
                                  const int64_t *batch_indices, int64_t pooled_height,
                                  int64_t pooled_width, size_t value_bytes, pyroi_rois *rois,
                                  pyroi_cancel *cancel)
{
    int64_t pooled_channels = 0;
    pyroi_status status = PYROI_OK;
    if (num_rois >= 0 && features_shape != NULL && features_shape[1] >= 0) {
        status = ps_output_channels(features_shape[1], pooled_height, pooled_width,
                                    &pooled_channels);
    }
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_check_pooling_call(features, features_shape, features_strides, features_role,
                                      pooled, pooled_strides, pooled_role, pooled_channels,
                                      pooled_height, pooled_width, boxes, num_rois,
                                      box_row_stride, 4, batch_indices);
    if (status != PYROI_OK) {
        return status;
    }
    return pyroi_rois_copy(rois, boxes, value_bytes, num_rois, box_row_stride, 4, batch_indices,
                           features_shape[0], NULL, cancel);
}

/* ps_roi_pool quantises box corners to whole pixels in int64. Rounded values beyond 2^61 in
 * magnitude saturate there: the map is never that large, and sizes (< 2^62) and bin edges
 * (< 2^62 + 2^61) then stay within int64. torchvision's int conversion overflows past 2^31. */
#define PS_POOL_COORDINATE_LIMIT 2305843009213693952.0 /* 2^61 */

static int64_t ps_pool_saturate(double rounded)
{
    if (rounded >= PS_POOL_COORDINATE_LIMIT) {
        return (int64_t)PS_POOL_COORDINATE_LIMIT;
    }
    if (rounded <= -PS_POOL_COORDINATE_LIMIT) {
        return -(int64_t)PS_POOL_COORDINATE_LIMIT;
    }
    return (int64_t)rounded;
}

/* The backward's quantisation: torchvision's CPU backward calls roundf, so the scaled
 * coordinate is narrowed to float and rounded there, even for float64 data (a value just
 * below .5 in double can round up). Saturates before narrowing so the float is finite. */
static int64_t ps_pool_round_narrowed(double scaled)
{
    if (!(scaled < PS_POOL_COORDINATE_LIMIT) || !(scaled > -PS_POOL_COORDINATE_LIMIT)) {
        return ps_pool_saturate(scaled);
    }
    return ps_pool_saturate((double)roundf((float)scaled));
}

#define PYROI_DTYPE_TEMPLATE "ps_roi_dtype.h"
#include "each_dtype.h"
