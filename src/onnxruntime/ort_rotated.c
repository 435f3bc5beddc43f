/* ort_rotated.c - rotated RoIAlign in the pyroi domain of the ONNX Runtime custom-op library:
 *
 *   pyroi::RoIAlignRotated(X (N, C, H, W), rois (K, 5) [cx, cy, w, h, angle],
 *       batch_indices (K) int64; output_height = 1, output_width = 1, spatial_scale = 1.0,
 *       sampling_ratio = 0 (adaptive), aligned = 1, clockwise = 0, angle = "degrees")
 *
 * as pyroi.roi_align_rotated: detectron2's convention by default, mmcv's with
 * angle = "radians" (and its clockwise flag). */
#include "ort_kernel.h"

#include <stdlib.h>
#include <string.h>

static const char ROTATED[] = "RoIAlignRotated";

static OrtStatus *rotated_create(const OrtKernelInfo *info, int num_threads, void **kernel)
{
    pyroi_roi_align_rotated_params *params;
    int64_t pooled[2], ratio, aligned, clockwise;
    float scale;
    char angle[16];
    int has_angle;
    OrtStatus *status = pyroi_ort_output_size(info, ROTATED, pooled);
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, ROTATED, "sampling_ratio", 0, &ratio);
    }
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, ROTATED, "aligned", 1, &aligned);
    }
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, ROTATED, "clockwise", 0, &clockwise);
    }
    if (status == NULL) {
        status = pyroi_ort_float_attribute(info, ROTATED, "spatial_scale", 1.0f, &scale);
    }
    if (status == NULL) {
        status = pyroi_ort_string_attribute(info, ROTATED, "angle", angle, sizeof(angle),
                                            &has_angle);
    }
    if (status == NULL && has_angle && strcmp(angle, "degrees") != 0 &&
        strcmp(angle, "radians") != 0) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, ROTATED,
                                 "angle must be \"degrees\" or \"radians\", got \"%s\"", angle);
    }
    if (status == NULL && ratio > PYROI_MAX_SAMPLING_RATIO) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, ROTATED,
                                 "sampling_ratio must be at most %lld, got %lld",
                                 (long long)PYROI_MAX_SAMPLING_RATIO, (long long)ratio);
    }
    if (status != NULL) {
        return status;
    }
    params = (pyroi_roi_align_rotated_params *)malloc(sizeof(*params));
    if (params == NULL) {
        return pyroi_ort_status(ROTATED, PYROI_E_NO_MEMORY);
    }
    pyroi_roi_align_rotated_params_init(params);
    params->pooled_height = pooled[0];
    params->pooled_width = pooled[1];
    params->spatial_scale_h = params->spatial_scale_w = (double)scale;
    params->sampling_ratio = ratio;
    params->aligned = aligned != 0;
    params->clockwise = clockwise != 0;
    params->angle_in_degrees = !has_angle || strcmp(angle, "degrees") == 0;
    params->num_threads = num_threads;
    *kernel = params;
    return NULL;
}

static OrtStatus *rotated_compute(void *kernel, OrtKernelContext *context)
{
    const pyroi_roi_align_rotated_params *p = (const pyroi_roi_align_rotated_params *)kernel;
    const int64_t pooled[2] = {p->pooled_height, p->pooled_width};
    pyroi_ort_call c;
    pyroi_status result = PYROI_OK;
    OrtStatus *status = pyroi_ort_call_read(context, ROTATED, 5, 0, 1, pooled, &c);
    if (status == NULL) {
        result = PYROI_ORT_FORWARD(&c, pyroi_roi_align_rotated_forward, p);
    }
    return pyroi_ort_call_end(&c, ROTATED, status, result);
}

const pyroi_ort_op_spec pyroi_ort_roi_align_rotated_spec = {
    "pyroi", ROTATED, 3, 1, rotated_create, rotated_compute, pyroi_ort_infer_output_size, 1,
    PYROI_ORT_LAST_VERSION, 0};
