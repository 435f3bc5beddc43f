/* ort_roi_pool.c - the MaxRoiPool kernel of the ONNX Runtime custom-op library: ONNX
 * MaxRoiPool (rois (num_rois, 5) [batch_index, x1, y1, x2, y2], attributes pooled_shape and
 * spatial_scale) computed by pyroi_roi_pool_forward, in float32, float64 and float16. */
#include "ort_kernel.h"

#include <stdlib.h>

static const char MAX_ROI_POOL[] = "MaxRoiPool";

static OrtStatus *max_roi_pool_create(const OrtKernelInfo *info, int num_threads, void **kernel)
{
    pyroi_roi_pool_params *params;
    int64_t pooled[2];
    float scale;
    OrtStatus *status = pyroi_ort_ints_attribute(info, MAX_ROI_POOL, "pooled_shape", pooled, 2);
    if (status == NULL) {
        status = pyroi_ort_float_attribute(info, MAX_ROI_POOL, "spatial_scale", 1.0f, &scale);
    }
    if (status != NULL) {
        return status;
    }
    if (pooled[0] < 1 || pooled[1] < 1) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, MAX_ROI_POOL,
                               "pooled_shape must be >= 1, got (%lld, %lld)",
                               (long long)pooled[0], (long long)pooled[1]);
    }
    params = (pyroi_roi_pool_params *)malloc(sizeof(*params));
    if (params == NULL) {
        return pyroi_ort_status(MAX_ROI_POOL, PYROI_E_NO_MEMORY);
    }
    pyroi_roi_pool_params_init(params);
    params->pooled_height = pooled[0];
    params->pooled_width = pooled[1];
    params->spatial_scale_h = params->spatial_scale_w = (double)scale;
    params->num_threads = num_threads;
    *kernel = params;
    return NULL;
}

static OrtStatus *max_roi_pool_compute(void *kernel, OrtKernelContext *context)
{
    const pyroi_roi_pool_params *params = (const pyroi_roi_pool_params *)kernel;
    const int64_t pooled[2] = {params->pooled_height, params->pooled_width};
    pyroi_ort_call c;
    pyroi_status result = PYROI_OK;
    OrtStatus *status = pyroi_ort_call_read(context, MAX_ROI_POOL, 4, 1, 1, pooled, &c);
    if (status == NULL && c.num_rois > 0) { /* no RoIs: no rows to point into */
        result = PYROI_ORT_FORWARD_NO_ARGMAX(&c, pyroi_roi_pool_forward, params);
    }
    return pyroi_ort_call_end(&c, MAX_ROI_POOL, status, result);
}

static void max_roi_pool_pooled_size(const OrtShapeInferContext *context, int64_t pooled[2])
{
    pyroi_ort_infer_ints(context, "pooled_shape", pooled, 2);
}

const pyroi_ort_op_spec pyroi_ort_max_roi_pool_spec = {
    "pyroi", MAX_ROI_POOL, 2, 1, max_roi_pool_create, max_roi_pool_compute,
    max_roi_pool_pooled_size, 1, PYROI_ORT_LAST_VERSION, 0};
