/* ort_roi_align.c - the RoiAlign kernel of the ONNX Runtime custom-op library: ONNX RoiAlign
 * (opset 16 attributes and defaults) computed by pyroi, avg mode as pyroi_roi_align_forward,
 * max mode as onnxruntime's own rule (pyroi_roi_align_onnx_max_forward): the bits of
 * onnxruntime's RoiAlign, at pyroi's speed, in float32, float64 and float16. The same kernel
 * overrides onnxruntime's own RoiAlign when a session asks (ort_plugin.c). */
#include "ort_kernel.h"

#include <string.h>

static const char ROI_ALIGN[] = "RoiAlign";

/* The kernel of a RoiAlign node: opset >= 16 (half_pixel by default), or RoiAlign-10
 * (opsets 10-15: no coordinate_transformation_mode, never shifted) when opset_10. */
static OrtStatus *roi_align_make(const OrtKernelInfo *info, int num_threads, int opset_10,
                                 pyroi_ort_kernel *kernel)
{
    pyroi_roi_align_params *p = &kernel->params.roi_align;
    char mode[16], transform[32];
    int has_mode, has_transform;
    pyroi_ort_sampling s;
    OrtStatus *status = pyroi_ort_sampling_read(info, ROI_ALIGN, "output_height",
                                                "output_width", 1, 0, &s);
    if (status == NULL) {
        status = pyroi_ort_string_attribute(info, ROI_ALIGN, "mode", mode, sizeof(mode),
                                            &has_mode);
    }
    if (status == NULL) {
        status = pyroi_ort_string_attribute(info, ROI_ALIGN, "coordinate_transformation_mode",
                                            transform, sizeof(transform), &has_transform);
    }
    if (status != NULL) {
        return status;
    }
    if (has_mode && strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, ROI_ALIGN,
                               "mode must be \"avg\" or \"max\", got \"%s\"", mode);
    }
    if (opset_10 && has_transform) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, ROI_ALIGN,
                               "coordinate_transformation_mode does not exist in RoiAlign "
                               "before opset 16 (RoiAlign-10 never shifts)");
    }
    /* onnxruntime reads any other string as output_half_pixel, pyroi refuses it */
    if (has_transform && strcmp(transform, "half_pixel") != 0 &&
        strcmp(transform, "output_half_pixel") != 0) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, ROI_ALIGN,
                               "coordinate_transformation_mode must be \"half_pixel\" or "
                               "\"output_half_pixel\", got \"%s\"", transform);
    }
    if (s.ratio < 0) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, ROI_ALIGN,
                               "sampling_ratio must be >= 0, got %lld", (long long)s.ratio);
    }
    pyroi_roi_align_params_init(p);
    PYROI_ORT_SET_PARAMS(p, kernel, &s, num_threads);
    p->sampling_ratio = s.ratio;
    p->aligned = has_transform ? strcmp(transform, "half_pixel") == 0 : !opset_10;
    kernel->max_mode = has_mode && strcmp(mode, "max") == 0;
    return NULL;
}

static OrtStatus *roi_align_create(const OrtKernelInfo *info, int num_threads,
                                   pyroi_ort_kernel *kernel)
{
    return roi_align_make(info, num_threads, 0, kernel);
}

static OrtStatus *roi_align_10_create(const OrtKernelInfo *info, int num_threads,
                                      pyroi_ort_kernel *kernel)
{
    return roi_align_make(info, num_threads, 1, kernel);
}

static pyroi_status roi_align_forward(const pyroi_ort_kernel *k, const pyroi_ort_call *c)
{
    const pyroi_roi_align_params *p = &k->params.roi_align;
    return k->max_mode ? PYROI_ORT_FORWARD(c, pyroi_roi_align_onnx_max_forward, p)
                       : PYROI_ORT_FORWARD(c, pyroi_roi_align_forward, p);
}

const pyroi_ort_op_spec pyroi_ort_roi_align_spec = {
    "pyroi", ROI_ALIGN, 3, 4, 0, roi_align_create, roi_align_forward,
    pyroi_ort_infer_output_size, 1, PYROI_ORT_LAST_VERSION};

/* The override of onnxruntime's own RoiAlign (domain "", when the session asks for it): one
 * op per version range, since the kernel cannot see the model's opset and the default
 * coordinate mode differs. */
const pyroi_ort_op_spec pyroi_ort_roi_align_10_override_spec = {
    "", ROI_ALIGN, 3, 4, 0, roi_align_10_create, roi_align_forward,
    pyroi_ort_infer_output_size, 10, 15};
const pyroi_ort_op_spec pyroi_ort_roi_align_16_override_spec = {
    "", ROI_ALIGN, 3, 4, 0, roi_align_create, roi_align_forward,
    pyroi_ort_infer_output_size, 16, PYROI_ORT_LAST_VERSION};
