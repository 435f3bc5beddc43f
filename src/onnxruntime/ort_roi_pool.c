/* ort_roi_pool.c - the MaxRoiPool kernel of the ONNX Runtime custom-op library: ONNX
 * MaxRoiPool (rois (num_rois, 5) [batch_index, x1, y1, x2, y2], attributes pooled_shape and
 * spatial_scale) computed by pyroi_roi_pool_forward, in float32, float64 and float16. */
#include "ort_kernel.h"

static const char MAX_ROI_POOL[] = "MaxRoiPool";

static OrtStatus *max_roi_pool_create(const OrtKernelInfo *info, int num_threads,
                                      pyroi_ort_kernel *kernel)
{
    pyroi_roi_pool_params *p = &kernel->params.roi_pool;
    pyroi_ort_sampling s = {{0, 0}, 0, 0, 1.0};
    float scale;
    OrtStatus *status = pyroi_ort_ints_attribute(info, MAX_ROI_POOL, "pooled_shape", s.pooled,
                                                 2);
    if (status == NULL) {
        status = pyroi_ort_float_attribute(info, MAX_ROI_POOL, "spatial_scale", 1.0f, &scale);
    }
    if (status != NULL) {
        return status;
    }
    if (s.pooled[0] < 1 || s.pooled[1] < 1) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, MAX_ROI_POOL,
                               "pooled_shape must be >= 1, got (%lld, %lld)",
                               (long long)s.pooled[0], (long long)s.pooled[1]);
    }
    s.scale = (double)scale;
    pyroi_roi_pool_params_init(p);
    PYROI_ORT_SET_PARAMS(p, kernel, &s, num_threads);
    return NULL;
}

static pyroi_status max_roi_pool_forward(const pyroi_ort_kernel *k, const pyroi_ort_call *c)
{
    return PYROI_ORT_FORWARD_NO_ARGMAX(c, pyroi_roi_pool_forward, &k->params.roi_pool);
}

static void max_roi_pool_pooled_size(const OrtShapeInferContext *context, int64_t pooled[2])
{
    pyroi_ort_infer_ints(context, "pooled_shape", pooled, 2);
}

const pyroi_ort_op_spec pyroi_ort_max_roi_pool_spec = {
    "pyroi", MAX_ROI_POOL, 2, 4, 0, max_roi_pool_create, max_roi_pool_forward,
    max_roi_pool_pooled_size, 1, PYROI_ORT_LAST_VERSION};
