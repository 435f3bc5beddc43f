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
    pyroi_ort_tensor x, rois, indices;
    int64_t out_shape[4], out_strides[4], num_rois;
    void *out;
    float *wide_rois = NULL;
    pyroi_status result;
    OrtStatus *status = pyroi_ort_input(context, 0, ROI_ALIGN, "X", 4, &x);
    if (status == NULL) {
        status = pyroi_ort_input(context, 1, ROI_ALIGN, "rois", 2, &rois);
    }
    if (status == NULL) {
        status = pyroi_ort_input(context, 2, ROI_ALIGN, "batch_indices", 1, &indices);
    }
    if (status != NULL) {
        return status;
    }
    num_rois = rois.shape[0];
    if (!pyroi_ort_is_float(x.type) || rois.type != x.type) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, ROI_ALIGN,
                               "X and rois must be float, double or float16 tensors of one "
                               "type");
    }
    if (indices.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, ROI_ALIGN, "batch_indices must be int64");
    }
    if (rois.shape[1] != 4 || indices.shape[0] != num_rois) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, ROI_ALIGN,
                               "rois must be (num_rois, 4) and batch_indices (num_rois), got "
                               "(%lld, %lld) and (%lld)", (long long)num_rois,
                               (long long)rois.shape[1], (long long)indices.shape[0]);
    }
    out_shape[0] = num_rois;
    out_shape[1] = x.shape[1];
    out_shape[2] = k->params.pooled_height;
    out_shape[3] = k->params.pooled_width;
    status = pyroi_ort_output(context, 0, out_shape, &out);
    if (status != NULL) {
        return status;
    }
    {
        int64_t x_strides[4];
        const int64_t *batch = (const int64_t *)indices.data;
        pyroi_ort_strides(x.shape, x_strides);
        pyroi_ort_strides(out_shape, out_strides);
        switch (x.type) {
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
            result = (k->max_mode ? pyroi_roi_align_onnx_max_forward_f32
                                  : pyroi_roi_align_forward_f32)(
                (const float *)x.data, x.shape, x_strides, (const float *)rois.data, num_rois, 4,
                batch, (float *)out, out_strides, &k->params);
            break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
            result = (k->max_mode ? pyroi_roi_align_onnx_max_forward_f64
                                  : pyroi_roi_align_forward_f64)(
                (const double *)x.data, x.shape, x_strides, (const double *)rois.data,
                num_rois, 4, batch, (double *)out, out_strides, &k->params);
            break;
        default: /* float16: pyroi takes its boxes as float */
            status = pyroi_ort_widen(ROI_ALIGN, rois.data, num_rois * 4, &wide_rois);
            if (status != NULL) {
                return status;
            }
            result = (k->max_mode ? pyroi_roi_align_onnx_max_forward_f16
                                  : pyroi_roi_align_forward_f16)(
                (const uint16_t *)x.data, x.shape, x_strides, wide_rois, num_rois, 4, batch,
                (uint16_t *)out, out_strides, &k->params);
            free(wide_rois);
            break;
        }
    }
    return result == PYROI_OK ? NULL : pyroi_ort_status(ROI_ALIGN, result);
}

static void roi_align_pooled_size(const OrtShapeInferContext *context, int64_t pooled[2])
{
    pooled[0] = pyroi_ort_infer_int(context, "output_height", 1);
    pooled[1] = pyroi_ort_infer_int(context, "output_width", 1);
}

const pyroi_ort_op_spec pyroi_ort_roi_align_spec = {
    "pyroi", ROI_ALIGN, 3, 1, roi_align_create, roi_align_compute, roi_align_pooled_size,
    1, PYROI_ORT_LAST_VERSION};

/* The override of onnxruntime's own RoiAlign (domain "", when the session asks for it): one
 * op per version range, since the kernel cannot see the model's opset and the default
 * coordinate mode differs. */
const pyroi_ort_op_spec pyroi_ort_roi_align_10_override_spec = {
    "", ROI_ALIGN, 3, 1, roi_align_10_create, roi_align_compute, roi_align_pooled_size, 10, 15};
const pyroi_ort_op_spec pyroi_ort_roi_align_16_override_spec = {
    "", ROI_ALIGN, 3, 1, roi_align_create, roi_align_compute, roi_align_pooled_size, 16,
    PYROI_ORT_LAST_VERSION};
