/* ort_mmcv.c - the nodes mmcv's and mmdeploy's ONNX exporters write for RoIAlign and rotated
 * RoIAlign, so that their exported models run unchanged:
 *
 *   mmcv::MMCVRoiAlign(input, rois (K, 5) [batch, x1, y1, x2, y2]; output_height,
 *       output_width, spatial_scale, sampling_ratio, mode "avg" | "max", aligned)
 *   mmcv::MMCVRoIAlignRotated(input, rois (K, 6) [batch, cx, cy, w, h, angle in radians];
 *       output_height, output_width, spatial_scale, sampling_ratio, aligned, clockwise)
 *   mmcv::PrRoIPool(features, rois (K, 5); pooled_height, pooled_width, spatial_scale)
 *
 * computed as mmcv's CPU kernels compute them (pyroi_roi_align_forward for avg, the maximum
 * of the interpolated samples, pyroi_roi_align_max_forward, for max; pyroi's rotated
 * RoIAlign with mmcv's radians and clockwise flag). Attribute defaults are those of mmcv's
 * Python functions (spatial_scale 1, sampling_ratio 0, mode "avg", aligned 1, clockwise 0);
 * the output sizes, which its exporters always write, are required. */
#include "ort_kernel.h"

#include <stdlib.h>
#include <string.h>

static const char MMCV_ROI_ALIGN[] = "MMCVRoiAlign";
static const char MMCV_ROI_ALIGN_ROTATED[] = "MMCVRoIAlignRotated";
static const char MMCV_PRROI_POOL[] = "PrRoIPool";

/* The attributes both nodes share, checked. */
typedef struct mmcv_sampling {
    int64_t height, width, ratio, aligned;
    float scale;
} mmcv_sampling;

static OrtStatus *mmcv_sampling_read(const OrtKernelInfo *info, const char *op,
                                     mmcv_sampling *s)
{
    OrtStatus *status = pyroi_ort_int_attribute(info, op, "output_height", -1, &s->height);
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, op, "output_width", -1, &s->width);
    }
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, op, "sampling_ratio", 0, &s->ratio);
    }
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, op, "aligned", 1, &s->aligned);
    }
    if (status == NULL) {
        status = pyroi_ort_float_attribute(info, op, "spatial_scale", 1.0f, &s->scale);
    }
    if (status != NULL) {
        return status;
    }
    if (s->height < 1 || s->width < 1) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, op,
                               "output_height and output_width are required and must be >= "
                               "1, got %lld x %lld", (long long)s->height, (long long)s->width);
    }
    /* mmcv: a ratio <= 0 samples adaptively; pyroi caps a fixed one */
    if (s->ratio > PYROI_MAX_SAMPLING_RATIO) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, op,
                               "sampling_ratio must be at most %lld, got %lld",
                               (long long)PYROI_MAX_SAMPLING_RATIO, (long long)s->ratio);
    }
    return NULL;
}

static void mmcv_pooled_size(const OrtShapeInferContext *context, int64_t pooled[2])
{
    pooled[0] = pyroi_ort_infer_int(context, "output_height", -1);
    pooled[1] = pyroi_ort_infer_int(context, "output_width", -1);
}

/* ---- MMCVRoiAlign ------------------------------------------------------------------------ */

typedef struct mmcv_roi_align_kernel {
    pyroi_roi_align_params params;
    int max_mode; /* mmcv's max: the largest interpolated sample of a bin */
} mmcv_roi_align_kernel;

static OrtStatus *mmcv_roi_align_create(const OrtKernelInfo *info, int num_threads,
                                        void **kernel)
{
    mmcv_roi_align_kernel *k;
    mmcv_sampling s;
    char mode[16];
    int has_mode;
    OrtStatus *status = mmcv_sampling_read(info, MMCV_ROI_ALIGN, &s);
    if (status == NULL) {
        status = pyroi_ort_string_attribute(info, MMCV_ROI_ALIGN, "mode", mode, sizeof(mode),
                                            &has_mode);
    }
    if (status != NULL) {
        return status;
    }
    if (has_mode && strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, MMCV_ROI_ALIGN,
                               "mode must be \"avg\" or \"max\", got \"%s\"", mode);
    }
    k = (mmcv_roi_align_kernel *)malloc(sizeof(*k));
    if (k == NULL) {
        return pyroi_ort_status(MMCV_ROI_ALIGN, PYROI_E_NO_MEMORY);
    }
    pyroi_roi_align_params_init(&k->params);
    k->params.pooled_height = s.height;
    k->params.pooled_width = s.width;
    k->params.spatial_scale_h = k->params.spatial_scale_w = (double)s.scale;
    k->params.sampling_ratio = s.ratio;
    k->params.aligned = s.aligned != 0;
    k->params.num_threads = num_threads;
    k->max_mode = has_mode && strcmp(mode, "max") == 0;
    *kernel = k;
    return NULL;
}

static OrtStatus *mmcv_roi_align_compute(void *kernel, OrtKernelContext *context)
{
    const mmcv_roi_align_kernel *k = (const mmcv_roi_align_kernel *)kernel;
    const int64_t pooled[2] = {k->params.pooled_height, k->params.pooled_width};
    pyroi_ort_call c;
    pyroi_status result = PYROI_OK;
    OrtStatus *status = pyroi_ort_call_read(context, MMCV_ROI_ALIGN, 4, 1, 1, pooled, &c);
    if (status == NULL && c.num_rois > 0) {
        result = k->max_mode
                     ? PYROI_ORT_FORWARD_NO_ARGMAX(&c, pyroi_roi_align_max_forward, &k->params)
                     : PYROI_ORT_FORWARD(&c, pyroi_roi_align_forward, &k->params);
    }
    return pyroi_ort_call_end(&c, MMCV_ROI_ALIGN, status, result);
}

/* ---- MMCVRoIAlignRotated ----------------------------------------------------------------- */

static OrtStatus *mmcv_rotated_create(const OrtKernelInfo *info, int num_threads,
                                      void **kernel)
{
    pyroi_roi_align_rotated_params *params;
    mmcv_sampling s;
    int64_t clockwise;
    OrtStatus *status = mmcv_sampling_read(info, MMCV_ROI_ALIGN_ROTATED, &s);
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, MMCV_ROI_ALIGN_ROTATED, "clockwise", 0,
                                         &clockwise);
    }
    if (status != NULL) {
        return status;
    }
    params = (pyroi_roi_align_rotated_params *)malloc(sizeof(*params));
    if (params == NULL) {
        return pyroi_ort_status(MMCV_ROI_ALIGN_ROTATED, PYROI_E_NO_MEMORY);
    }
    pyroi_roi_align_rotated_params_init(params);
    params->pooled_height = s.height;
    params->pooled_width = s.width;
    params->spatial_scale_h = params->spatial_scale_w = (double)s.scale;
    params->sampling_ratio = s.ratio;
    params->aligned = s.aligned != 0;
    params->clockwise = clockwise != 0;
    params->angle_in_degrees = 0; /* mmcv's angles are radians */
    params->num_threads = num_threads;
    *kernel = params;
    return NULL;
}

static OrtStatus *mmcv_rotated_compute(void *kernel, OrtKernelContext *context)
{
    const pyroi_roi_align_rotated_params *p = (const pyroi_roi_align_rotated_params *)kernel;
    const int64_t pooled[2] = {p->pooled_height, p->pooled_width};
    pyroi_ort_call c;
    pyroi_status result = PYROI_OK;
    OrtStatus *status = pyroi_ort_call_read(context, MMCV_ROI_ALIGN_ROTATED, 5, 1, 1, pooled,
                                            &c);
    if (status == NULL && c.num_rois > 0) {
        result = PYROI_ORT_FORWARD(&c, pyroi_roi_align_rotated_forward, p);
    }
    return pyroi_ort_call_end(&c, MMCV_ROI_ALIGN_ROTATED, status, result);
}

/* ---- PrRoIPool ------------------------------------------------------------------------- */

static OrtStatus *mmcv_prroi_create(const OrtKernelInfo *info, int num_threads, void **kernel)
{
    pyroi_prroi_pool_params *params;
    int64_t height, width;
    float scale;
    OrtStatus *status = pyroi_ort_int_attribute(info, MMCV_PRROI_POOL, "pooled_height", -1,
                                                &height);
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, MMCV_PRROI_POOL, "pooled_width", -1, &width);
    }
    if (status == NULL) {
        status = pyroi_ort_float_attribute(info, MMCV_PRROI_POOL, "spatial_scale", 1.0f,
                                           &scale);
    }
    if (status != NULL) {
        return status;
    }
    if (height < 1 || width < 1) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, MMCV_PRROI_POOL,
                               "pooled_height and pooled_width are required and must be >= "
                               "1, got %lld x %lld", (long long)height, (long long)width);
    }
    params = (pyroi_prroi_pool_params *)malloc(sizeof(*params));
    if (params == NULL) {
        return pyroi_ort_status(MMCV_PRROI_POOL, PYROI_E_NO_MEMORY);
    }
    pyroi_prroi_pool_params_init(params);
    params->pooled_height = height;
    params->pooled_width = width;
    params->spatial_scale_h = params->spatial_scale_w = (double)scale;
    params->num_threads = num_threads;
    *kernel = params;
    return NULL;
}

static OrtStatus *mmcv_prroi_compute(void *kernel, OrtKernelContext *context)
{
    const pyroi_prroi_pool_params *p = (const pyroi_prroi_pool_params *)kernel;
    const int64_t pooled[2] = {p->pooled_height, p->pooled_width};
    pyroi_ort_call c;
    pyroi_status result = PYROI_OK;
    OrtStatus *status = pyroi_ort_call_read(context, MMCV_PRROI_POOL, 4, 1, 1, pooled, &c);
    if (status == NULL && c.num_rois > 0) {
        result = PYROI_ORT_FORWARD(&c, pyroi_prroi_pool_forward, p);
    }
    return pyroi_ort_call_end(&c, MMCV_PRROI_POOL, status, result);
}

static void mmcv_prroi_pooled_size(const OrtShapeInferContext *context, int64_t pooled[2])
{
    pooled[0] = pyroi_ort_infer_int(context, "pooled_height", -1);
    pooled[1] = pyroi_ort_infer_int(context, "pooled_width", -1);
}

const pyroi_ort_op_spec pyroi_ort_mmcv_roi_align_spec = {
    "mmcv", MMCV_ROI_ALIGN, 2, 1, mmcv_roi_align_create, mmcv_roi_align_compute,
    mmcv_pooled_size, 1, PYROI_ORT_LAST_VERSION, 0};
const pyroi_ort_op_spec pyroi_ort_mmcv_roi_align_rotated_spec = {
    "mmcv", MMCV_ROI_ALIGN_ROTATED, 2, 1, mmcv_rotated_create, mmcv_rotated_compute,
    mmcv_pooled_size, 1, PYROI_ORT_LAST_VERSION, 0};
const pyroi_ort_op_spec pyroi_ort_mmcv_prroi_pool_spec = {
    "mmcv", MMCV_PRROI_POOL, 2, 1, mmcv_prroi_create, mmcv_prroi_compute,
    mmcv_prroi_pooled_size, 1, PYROI_ORT_LAST_VERSION, 0};
