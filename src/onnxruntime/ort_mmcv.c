/* ort_mmcv.c - the nodes mmcv's and mmdeploy's ONNX exporters write for RoIAlign and
 * PrRoIPool (rotated RoIAlign's is in ort_rotated.c), so that their exported models run
 * unchanged:
 *
 *   mmcv::MMCVRoiAlign(input, rois (K, 5) [batch, x1, y1, x2, y2]; output_height,
 *       output_width, spatial_scale, sampling_ratio, mode "avg" | "max", aligned)
 *   mmcv::PrRoIPool(features, rois (K, 5); pooled_height, pooled_width, spatial_scale)
 *
 * computed as mmcv's CPU kernels compute them (pyroi_roi_align_forward for avg, the maximum
 * of the interpolated samples, pyroi_roi_align_max_forward, for max) and PrRoIPool as
 * pyroi_prroi_pool_forward (mmcv runs it on CUDA only). Attribute defaults are those of
 * mmcv's Python functions (spatial_scale 1, sampling_ratio 0, mode "avg", aligned 1); the
 * output sizes, which its exporters always write, are required. */
#include "ort_kernel.h"

#include <string.h>

static const char MMCV_ROI_ALIGN[] = "MMCVRoiAlign";
static const char MMCV_PRROI_POOL[] = "PrRoIPool";

static OrtStatus *mmcv_roi_align_create(const OrtKernelInfo *info, int num_threads,
                                        pyroi_ort_kernel *kernel)
{
    pyroi_roi_align_params *p = &kernel->params.roi_align;
    pyroi_ort_sampling s;
    char mode[16];
    int has_mode;
    OrtStatus *status = pyroi_ort_sampling_read(info, MMCV_ROI_ALIGN, "output_height",
                                                "output_width", 0, 1, &s);
    if (status == NULL) {
        status = pyroi_ort_string_attribute(info, MMCV_ROI_ALIGN, "mode", mode, sizeof(mode),
                                            &has_mode);
    }
    if (status == NULL && has_mode && strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, MMCV_ROI_ALIGN,
                                 "mode must be \"avg\" or \"max\", got \"%s\"", mode);
    }
    if (status != NULL) {
        return status;
    }
    pyroi_roi_align_params_init(p);
    PYROI_ORT_SET_PARAMS(p, kernel, &s, num_threads);
    p->sampling_ratio = s.ratio;
    p->aligned = s.aligned != 0;
    kernel->max_mode = has_mode && strcmp(mode, "max") == 0;
    return NULL;
}

static pyroi_status mmcv_roi_align_forward(const pyroi_ort_kernel *k, const pyroi_ort_call *c)
{
    const pyroi_roi_align_params *p = &k->params.roi_align;
    return k->max_mode ? PYROI_ORT_FORWARD_NO_ARGMAX(c, pyroi_roi_align_max_forward, p)
                       : PYROI_ORT_FORWARD(c, pyroi_roi_align_forward, p);
}

static void mmcv_roi_align_pooled_size(const OrtShapeInferContext *context, int64_t pooled[2])
{
    pooled[0] = pyroi_ort_infer_int(context, "output_height", -1);
    pooled[1] = pyroi_ort_infer_int(context, "output_width", -1);
}

static OrtStatus *mmcv_prroi_create(const OrtKernelInfo *info, int num_threads,
                                    pyroi_ort_kernel *kernel)
{
    pyroi_prroi_pool_params *p = &kernel->params.prroi_pool;
    pyroi_ort_sampling s;
    OrtStatus *status = pyroi_ort_sampling_read(info, MMCV_PRROI_POOL, "pooled_height",
                                                "pooled_width", 0, 0, &s);
    if (status != NULL) {
        return status;
    }
    pyroi_prroi_pool_params_init(p);
    PYROI_ORT_SET_PARAMS(p, kernel, &s, num_threads);
    return NULL;
}

static pyroi_status mmcv_prroi_forward(const pyroi_ort_kernel *k, const pyroi_ort_call *c)
{
    return PYROI_ORT_FORWARD(c, pyroi_prroi_pool_forward, &k->params.prroi_pool);
}

static void mmcv_prroi_pooled_size(const OrtShapeInferContext *context, int64_t pooled[2])
{
    pooled[0] = pyroi_ort_infer_int(context, "pooled_height", -1);
    pooled[1] = pyroi_ort_infer_int(context, "pooled_width", -1);
}

const pyroi_ort_op_spec pyroi_ort_mmcv_roi_align_spec = {
    "mmcv", MMCV_ROI_ALIGN, 2, 4, 0, mmcv_roi_align_create, mmcv_roi_align_forward,
    mmcv_roi_align_pooled_size, 1, PYROI_ORT_LAST_VERSION};
const pyroi_ort_op_spec pyroi_ort_mmcv_prroi_pool_spec = {
    "mmcv", MMCV_PRROI_POOL, 2, 4, 0, mmcv_prroi_create, mmcv_prroi_forward,
    mmcv_prroi_pooled_size, 1, PYROI_ORT_LAST_VERSION};
