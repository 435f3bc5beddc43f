/* roi_align.c - RoIAlign (average mode), forward and backward, float32 and float64.
 * The kernel body is written once in roi_align_template.h. */
#include "parallel.h"
#include "sampling.h"
#include "transpose.h"
#include "validate.h"

#include <stdlib.h>
#include <string.h>

void pyroi_roi_align_params_init(pyroi_roi_align_params *params)
{
    if (params == NULL) {
        return;
    }
    memset(params, 0, sizeof(*params));
    params->pooled_height = 1;
    params->pooled_width = 1;
    params->spatial_scale_h = 1.0;
    params->spatial_scale_w = 1.0;
    params->sampling_ratio = -1;
    params->aligned = 0;
    params->num_threads = 0;
}

/* Validation shared by forward and backward once the dtype no longer matters. */
static pyroi_status roi_align_check_call(const void *features, const int64_t features_shape[4],
                                         const int64_t features_strides[4],
                                         pyroi_tensor_role features_role,
                                         const void *pooled, const int64_t pooled_strides[4],
                                         pyroi_tensor_role pooled_role,
                                         const void *boxes, int64_t num_rois,
                                         int64_t box_row_stride, const int64_t *batch_indices,
                                         const pyroi_roi_align_params *params)
{
    pyroi_status status = pyroi_check_roi_align_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    return pyroi_check_pooling_call(features, features_shape, features_strides, features_role,
                                    pooled, pooled_strides, pooled_role,
                                    -1, params->pooled_height,
                                    params->pooled_width, boxes, num_rois, box_row_stride, 4,
                                    batch_indices);
}

#define T float
#define PYROI_TYPED(name) PYROI_CAT(name, _f32)
#include "roi_align_template.h"
#undef PYROI_TYPED
#undef T

#define T double
#define PYROI_TYPED(name) PYROI_CAT(name, _f64)
#include "roi_align_template.h"
#undef PYROI_TYPED
#undef T
