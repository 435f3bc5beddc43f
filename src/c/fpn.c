/* fpn.c - multi-scale (FPN) level assignment of boxes, float32 and float64. */
#include "validate.h"

#include <math.h>
#include <string.h>

void pyroi_fpn_level_params_init(pyroi_fpn_level_params *params)
{
    if (params == NULL) {
        return;
    }
    memset(params, 0, sizeof(*params));
    params->min_level = 2;
    params->max_level = 5;
    params->canonical_scale = 224.0;
    params->canonical_level = 4.0;
    params->eps = 1e-6;
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

#define T float
#define PYROI_TYPED(name) PYROI_CAT(name, _f32)
#define PYROI_FLOOR floorf
#define PYROI_SQRT sqrtf
#define PYROI_LOG2 log2f
#include "fpn_template.h"
#undef PYROI_LOG2
#undef PYROI_SQRT
#undef PYROI_FLOOR
#undef PYROI_TYPED
#undef T

#define T double
#define PYROI_TYPED(name) PYROI_CAT(name, _f64)
#define PYROI_FLOOR floor
#define PYROI_SQRT sqrt
#define PYROI_LOG2 log2
#include "fpn_template.h"
#undef PYROI_LOG2
#undef PYROI_SQRT
#undef PYROI_FLOOR
#undef PYROI_TYPED
#undef T
