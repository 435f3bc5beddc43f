/* ort_rotated.c - rotated RoIAlign in the ONNX Runtime custom-op library, as pyroi computes
 * it (pyroi.roi_align_rotated), in two spellings:
 *
 *   pyroi::RoIAlignRotated(X (N, C, H, W), rois (K, 5) [cx, cy, w, h, angle],
 *       batch_indices (K) int64; output_height = 1, output_width = 1, spatial_scale = 1.0,
 *       sampling_ratio = 0 (adaptive), aligned = 1, clockwise = 0, angle = "degrees")
 *     detectron2's convention by default, mmcv's with angle = "radians";
 *   mmcv::MMCVRoIAlignRotated(input, rois (K, 6) [batch, cx, cy, w, h, angle in radians];
 *       output_height, output_width (required), spatial_scale, sampling_ratio, aligned,
 *       clockwise), the node mmcv's and mmdeploy's exporters write. */
#include "ort_kernel.h"

#include <string.h>

static const char ROTATED[] = "RoIAlignRotated";
static const char MMCV_ROTATED[] = "MMCVRoIAlignRotated";

/* The kernel of either spelling: mmcv's requires the output size and takes radians. */
static OrtStatus *rotated_make(const OrtKernelInfo *info, int num_threads, int mmcv,
                               pyroi_ort_kernel *kernel)
{
    pyroi_roi_align_rotated_params *p = &kernel->params.rotated;
    const char *op = mmcv ? MMCV_ROTATED : ROTATED;
    pyroi_ort_sampling s;
    int64_t clockwise;
    char angle[16];
    int has_angle = 0;
    OrtStatus *status = pyroi_ort_sampling_read(info, op, "output_height", "output_width",
                                                mmcv ? 0 : 1, 1, &s);
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, op, "clockwise", 0, &clockwise);
    }
    if (status == NULL && !mmcv) {
        status = pyroi_ort_string_attribute(info, op, "angle", angle, sizeof(angle),
                                            &has_angle);
    }
    if (status == NULL && has_angle && strcmp(angle, "degrees") != 0 &&
        strcmp(angle, "radians") != 0) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, op,
                                 "angle must be \"degrees\" or \"radians\", got \"%s\"", angle);
    }
    if (status != NULL) {
        return status;
    }
    pyroi_roi_align_rotated_params_init(p);
    PYROI_ORT_SET_PARAMS(p, kernel, &s, num_threads);
    p->sampling_ratio = s.ratio;
    p->aligned = s.aligned != 0;
    p->clockwise = clockwise != 0;
    p->angle_in_degrees = !mmcv && (!has_angle || strcmp(angle, "degrees") == 0);
    return NULL;
}

static OrtStatus *rotated_create(const OrtKernelInfo *info, int num_threads,
                                 pyroi_ort_kernel *kernel)
{
    return rotated_make(info, num_threads, 0, kernel);
}

static OrtStatus *mmcv_rotated_create(const OrtKernelInfo *info, int num_threads,
                                      pyroi_ort_kernel *kernel)
{
    return rotated_make(info, num_threads, 1, kernel);
}

static pyroi_status rotated_forward(const pyroi_ort_kernel *k, const pyroi_ort_call *c)
{
    return PYROI_ORT_FORWARD(c, pyroi_roi_align_rotated_forward, &k->params.rotated);
}

const pyroi_ort_op_spec pyroi_ort_roi_align_rotated_spec = {
    "pyroi", ROTATED, 3, 5, 0, rotated_create, rotated_forward, pyroi_ort_infer_output_size,
    1, PYROI_ORT_LAST_VERSION};
const pyroi_ort_op_spec pyroi_ort_mmcv_roi_align_rotated_spec = {
    "mmcv", MMCV_ROTATED, 2, 5, 0, mmcv_rotated_create, rotated_forward,
    pyroi_ort_infer_output_size, 1, PYROI_ORT_LAST_VERSION};
