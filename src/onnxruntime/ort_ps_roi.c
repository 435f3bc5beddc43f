/* ort_ps_roi.c - the position-sensitive kernels of the ONNX Runtime custom-op library, in the
 * pyroi domain, with RoiAlign's inputs (X (N, C, H, W), rois (K, 4) [x1, y1, x2, y2],
 * batch_indices (K) int64) and torchvision's semantics:
 *
 *   pyroi::PSRoIAlign(output_height = 1, output_width = 1, spatial_scale = 1.0,
 *                     sampling_ratio = 0: adaptive)   as pyroi.ps_roi_align
 *   pyroi::PSRoIPool(output_height = 1, output_width = 1, spatial_scale = 1.0)
 *                                                      as pyroi.ps_roi_pool
 *
 * The output is (K, C / (output_height * output_width), output_height, output_width). */
#include "ort_kernel.h"

#include <stdlib.h>

static const char PS_ROI_ALIGN[] = "PSRoIAlign";
static const char PS_ROI_POOL[] = "PSRoIPool";

static OrtStatus *ps_roi_align_create(const OrtKernelInfo *info, int num_threads, void **kernel)
{
    pyroi_ps_roi_align_params *params;
    int64_t pooled[2], ratio;
    float scale;
    OrtStatus *status = pyroi_ort_output_size(info, PS_ROI_ALIGN, pooled);
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, PS_ROI_ALIGN, "sampling_ratio", 0, &ratio);
    }
    if (status == NULL) {
        status = pyroi_ort_float_attribute(info, PS_ROI_ALIGN, "spatial_scale", 1.0f, &scale);
    }
    if (status == NULL && ratio > PYROI_MAX_SAMPLING_RATIO) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, PS_ROI_ALIGN,
                                 "sampling_ratio must be at most %lld, got %lld",
                                 (long long)PYROI_MAX_SAMPLING_RATIO, (long long)ratio);
    }
    if (status != NULL) {
        return status;
    }
    params = (pyroi_ps_roi_align_params *)malloc(sizeof(*params));
    if (params == NULL) {
        return pyroi_ort_status(PS_ROI_ALIGN, PYROI_E_NO_MEMORY);
    }
    pyroi_ps_roi_align_params_init(params);
    params->pooled_height = pooled[0];
    params->pooled_width = pooled[1];
    params->spatial_scale_h = params->spatial_scale_w = (double)scale;
    params->sampling_ratio = ratio;
    params->num_threads = num_threads;
    *kernel = params;
    return NULL;
}

static OrtStatus *ps_roi_align_compute(void *kernel, OrtKernelContext *context)
{
    const pyroi_ps_roi_align_params *p = (const pyroi_ps_roi_align_params *)kernel;
    const int64_t pooled[2] = {p->pooled_height, p->pooled_width};
    pyroi_ort_call c;
    pyroi_status result = PYROI_OK;
    OrtStatus *status = pyroi_ort_call_read(context, PS_ROI_ALIGN, 4, 0,
                                            pooled[0] * pooled[1], pooled, &c);
    if (status == NULL) {
        result = PYROI_ORT_FORWARD(&c, pyroi_ps_roi_align_forward, p);
    }
    return pyroi_ort_call_end(&c, PS_ROI_ALIGN, status, result);
}

static OrtStatus *ps_roi_pool_create(const OrtKernelInfo *info, int num_threads, void **kernel)
{
    pyroi_ps_roi_pool_params *params;
    int64_t pooled[2];
    float scale;
    OrtStatus *status = pyroi_ort_output_size(info, PS_ROI_POOL, pooled);
    if (status == NULL) {
        status = pyroi_ort_float_attribute(info, PS_ROI_POOL, "spatial_scale", 1.0f, &scale);
    }
    if (status != NULL) {
        return status;
    }
    params = (pyroi_ps_roi_pool_params *)malloc(sizeof(*params));
    if (params == NULL) {
        return pyroi_ort_status(PS_ROI_POOL, PYROI_E_NO_MEMORY);
    }
    pyroi_ps_roi_pool_params_init(params);
    params->pooled_height = pooled[0];
    params->pooled_width = pooled[1];
    params->spatial_scale_h = params->spatial_scale_w = (double)scale;
    params->num_threads = num_threads;
    *kernel = params;
    return NULL;
}

static OrtStatus *ps_roi_pool_compute(void *kernel, OrtKernelContext *context)
{
    const pyroi_ps_roi_pool_params *p = (const pyroi_ps_roi_pool_params *)kernel;
    const int64_t pooled[2] = {p->pooled_height, p->pooled_width};
    pyroi_ort_call c;
    pyroi_status result = PYROI_OK;
    OrtStatus *status = pyroi_ort_call_read(context, PS_ROI_POOL, 4, 0, pooled[0] * pooled[1],
                                            pooled, &c);
    if (status == NULL) {
        result = PYROI_ORT_FORWARD(&c, pyroi_ps_roi_pool_forward, p);
    }
    return pyroi_ort_call_end(&c, PS_ROI_POOL, status, result);
}

const pyroi_ort_op_spec pyroi_ort_ps_roi_align_spec = {
    "pyroi", PS_ROI_ALIGN, 3, 1, ps_roi_align_create, ps_roi_align_compute,
    pyroi_ort_infer_output_size, 1, PYROI_ORT_LAST_VERSION, 1};
const pyroi_ort_op_spec pyroi_ort_ps_roi_pool_spec = {
    "pyroi", PS_ROI_POOL, 3, 1, ps_roi_pool_create, ps_roi_pool_compute,
    pyroi_ort_infer_output_size, 1, PYROI_ORT_LAST_VERSION, 1};
