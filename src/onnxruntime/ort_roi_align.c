/* ort_roi_align.c - the RoiAlign kernel of the ONNX Runtime custom-op library: ONNX RoiAlign
 * (opset 16 attributes and defaults) computed by pyroi, avg mode as pyroi_roi_align_forward,
 * max mode as onnxruntime's own rule (pyroi_roi_align_onnx_max_forward): the bits of
 * onnxruntime's RoiAlign, at pyroi's speed, in float32, float64 and float16. */
#include "ort_kernel.h"

#include <stdlib.h>
#include <string.h>

static const char ROI_ALIGN[] = "RoiAlign";

typedef struct roi_align_kernel {
    pyroi_roi_align_params params;
    int max_mode; /* mode="max": onnxruntime's maximum of weighted taps */
} roi_align_kernel;

/* The kernel of a RoiAlign node: opset >= 16 (half_pixel by default), or RoiAlign-10
 * (opsets 10-15: no coordinate_transformation_mode, never shifted) when opset_10. */
static OrtStatus *roi_align_make(const OrtKernelInfo *info, int num_threads, int opset_10,
                                 void **kernel)
{
    roi_align_kernel *k;
    char mode[16], transform[32];
    int has_mode, has_transform;
    int64_t height, width, ratio;
    float scale;
    OrtStatus *status = pyroi_ort_string_attribute(info, ROI_ALIGN, "mode", mode, sizeof(mode),
                                                   &has_mode);
    if (status == NULL) {
        status = pyroi_ort_string_attribute(info, ROI_ALIGN, "coordinate_transformation_mode",
                                            transform, sizeof(transform), &has_transform);
    }
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, ROI_ALIGN, "output_height", 1, &height);
    }
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, ROI_ALIGN, "output_width", 1, &width);
    }
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, ROI_ALIGN, "sampling_ratio", 0, &ratio);
    }
    if (status == NULL) {
        status = pyroi_ort_float_attribute(info, ROI_ALIGN, "spatial_scale", 1.0f, &scale);
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
    /* opset 16's default; onnxruntime reads any other string as output_half_pixel, pyroi
     * refuses it */
    if (has_transform && strcmp(transform, "half_pixel") != 0 &&
        strcmp(transform, "output_half_pixel") != 0) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, ROI_ALIGN,
                               "coordinate_transformation_mode must be \"half_pixel\" or "
                               "\"output_half_pixel\", got \"%s\"", transform);
    }
    if (height < 1 || width < 1) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, ROI_ALIGN,
                               "output_height and output_width must be >= 1, got %lld x %lld",
                               (long long)height, (long long)width);
    }
    if (ratio < 0 || ratio > PYROI_MAX_SAMPLING_RATIO) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, ROI_ALIGN,
                               "sampling_ratio must be in [0, %lld], got %lld",
                               (long long)PYROI_MAX_SAMPLING_RATIO, (long long)ratio);
    }
    k = (roi_align_kernel *)malloc(sizeof(*k));
    if (k == NULL) {
        return pyroi_ort_status(ROI_ALIGN, PYROI_E_NO_MEMORY);
    }
    pyroi_roi_align_params_init(&k->params);
    k->params.pooled_height = height;
    k->params.pooled_width = width;
    k->params.spatial_scale_h = k->params.spatial_scale_w = (double)scale;
    k->params.sampling_ratio = ratio;
    k->params.aligned = has_transform ? strcmp(transform, "half_pixel") == 0 : !opset_10;
    k->params.num_threads = num_threads;
    k->max_mode = has_mode && strcmp(mode, "max") == 0;
    *kernel = k;
    return NULL;
}

static OrtStatus *roi_align_create(const OrtKernelInfo *info, int num_threads, void **kernel)
{
    return roi_align_make(info, num_threads, 0, kernel);
}

static OrtStatus *roi_align_10_create(const OrtKernelInfo *info, int num_threads,
                                      void **kernel)
{
    return roi_align_make(info, num_threads, 1, kernel);
}

static OrtStatus *roi_align_compute(void *kernel, OrtKernelContext *context)
{
    const roi_align_kernel *k = (const roi_align_kernel *)kernel;
    const int64_t pooled[2] = {k->params.pooled_height, k->params.pooled_width};
    pyroi_ort_call c;
    pyroi_status result = PYROI_OK;
    OrtStatus *status = pyroi_ort_call_read(context, ROI_ALIGN, 4, 0, 1, pooled, &c);
    if (status == NULL) {
        result = k->max_mode ? PYROI_ORT_FORWARD(&c, pyroi_roi_align_onnx_max_forward, &k->params)
                             : PYROI_ORT_FORWARD(&c, pyroi_roi_align_forward, &k->params);
    }
    return pyroi_ort_call_end(&c, ROI_ALIGN, status, result);
}

const pyroi_ort_op_spec pyroi_ort_roi_align_spec = {
    "pyroi", ROI_ALIGN, 3, 1, roi_align_create, roi_align_compute,
    pyroi_ort_infer_output_size, 1, PYROI_ORT_LAST_VERSION, 0};

/* The override of onnxruntime's own RoiAlign (domain "", when the session asks for it): one
 * op per version range, since the kernel cannot see the model's opset and the default
 * coordinate mode differs. */
const pyroi_ort_op_spec pyroi_ort_roi_align_10_override_spec = {
    "", ROI_ALIGN, 3, 1, roi_align_10_create, roi_align_compute, pyroi_ort_infer_output_size,
    10, 15, 0};
const pyroi_ort_op_spec pyroi_ort_roi_align_16_override_spec = {
    "", ROI_ALIGN, 3, 1, roi_align_create, roi_align_compute, pyroi_ort_infer_output_size,
    16, PYROI_ORT_LAST_VERSION, 0};
