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

static const char PS_ROI_ALIGN[] = "PSRoIAlign";
static const char PS_ROI_POOL[] = "PSRoIPool";

/* The kernel of either node (pool: PSRoIPool, which has no sampling_ratio). */
static OrtStatus *ps_make(const OrtKernelInfo *info, int num_threads, int pool,
                          pyroi_ort_kernel *kernel)
{
    pyroi_ort_sampling s;
    OrtStatus *status = pyroi_ort_sampling_read(info, pool ? PS_ROI_POOL : PS_ROI_ALIGN,
                                                "output_height", "output_width", 1, 0, &s);
    if (status != NULL) {
        return status;
    }
    if (pool) {
        pyroi_ps_roi_pool_params *p = &kernel->params.ps_roi_pool;
        pyroi_ps_roi_pool_params_init(p);
        PYROI_ORT_SET_PARAMS(p, kernel, &s, num_threads);
    } else {
        pyroi_ps_roi_align_params *p = &kernel->params.ps_roi_align;
        pyroi_ps_roi_align_params_init(p);
        PYROI_ORT_SET_PARAMS(p, kernel, &s, num_threads);
        p->sampling_ratio = s.ratio;
    }
    return NULL;
}

static OrtStatus *ps_roi_align_create(const OrtKernelInfo *info, int num_threads,
                                      pyroi_ort_kernel *kernel)
{
    return ps_make(info, num_threads, 0, kernel);
}

static OrtStatus *ps_roi_pool_create(const OrtKernelInfo *info, int num_threads,
                                     pyroi_ort_kernel *kernel)
{
    return ps_make(info, num_threads, 1, kernel);
}

static pyroi_status ps_roi_align_forward(const pyroi_ort_kernel *k, const pyroi_ort_call *c)
{
    return PYROI_ORT_FORWARD(c, pyroi_ps_roi_align_forward, &k->params.ps_roi_align);
}

static pyroi_status ps_roi_pool_forward(const pyroi_ort_kernel *k, const pyroi_ort_call *c)
{
    return PYROI_ORT_FORWARD(c, pyroi_ps_roi_pool_forward, &k->params.ps_roi_pool);
}

const pyroi_ort_op_spec pyroi_ort_ps_roi_align_spec = {
    "pyroi", PS_ROI_ALIGN, 3, 4, 1, ps_roi_align_create, ps_roi_align_forward,
    pyroi_ort_infer_output_size, 1, PYROI_ORT_LAST_VERSION};
const pyroi_ort_op_spec pyroi_ort_ps_roi_pool_spec = {
    "pyroi", PS_ROI_POOL, 3, 4, 1, ps_roi_pool_create, ps_roi_pool_forward,
    pyroi_ort_infer_output_size, 1, PYROI_ORT_LAST_VERSION};
