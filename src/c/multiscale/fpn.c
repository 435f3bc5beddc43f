/* fpn.c - multi-scale (FPN) level assignment of boxes, float32 and float64. */
#include "core/validate.h"

#include <math.h>

void pyroi_fpn_level_params_init(pyroi_fpn_level_params *params)
{
    static const pyroi_fpn_level_params defaults = {
        .min_level = 2, .max_level = 5, .canonical_scale = 224.0, .canonical_level = 4.0,
        .eps = 1e-6};
    if (params != NULL) {
        *params = defaults;
    }
}

static pyroi_status check_fpn_call(const void *boxes, int64_t num_rois, int64_t box_row_stride,
                                   const pyroi_fpn_level_params *params, const int64_t *levels)
{
    if (params == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    if (!(isfinite(params->canonical_scale) && params->canonical_scale > 0.0) ||
        !isfinite(params->canonical_level) || !isfinite(params->eps)) {
        return PYROI_E_INVALID_SCALE;
    }
    if (params->min_level > params->max_level) {
        return PYROI_E_INVALID_OUTPUT_SIZE;
    }
    if (num_rois > 0 && levels == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    if (num_rois < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    if (num_rois > 0) {
        if (boxes == NULL) {
            return PYROI_E_NULL_POINTER;
        }
        if (box_row_stride == INT64_MIN ||
            (box_row_stride != 0 &&
             (box_row_stride < 0 ? -box_row_stride : box_row_stride) >
                 (INT64_MAX - 4) / (num_rois > 1 ? num_rois - 1 : 1))) {
            return PYROI_E_INVALID_STRIDES;
        }
    }
    return PYROI_OK;
}

#define PYROI_DTYPE_TEMPLATE "multiscale/fpn_template.h"
#include "core/each_dtype.h"
