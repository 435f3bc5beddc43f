/* ort_crop_and_resize.c - onnxruntime's contrib com.microsoft.CropAndResize in the pyroi domain:
 *
 *   pyroi::CropAndResize(X (N, C, H, W), rois (K, 4) normalised [y1, x1, y2, x2],
 *                        batch_indices (K) int32 or int64, crop_size (2) int32 or int64
 *                        [crop_height, crop_width]; mode "bilinear" | "nearest",
 *                        extrapolation_value = 0.0)  ->  (K, C, crop_height, crop_width)
 *
 * the node onnxruntime's operator takes, computed as pyroi_crop_and_resize_forward with
 * onnxruntime's placement (PYROI_CROP_PLACEMENT_EXACT_ENDS: its bits) in float32 and float64
 * (crop_and_resize has no float16 kernel). The output size is data, read per call. */
#include "ort_kernel.h"

#include <string.h>

static const char CROP_AND_RESIZE[] = "CropAndResize";

static OrtStatus *crop_create(const OrtKernelInfo *info, int num_threads,
                              pyroi_ort_kernel *kernel)
{
    pyroi_crop_and_resize_params *p = &kernel->params.crop_and_resize;
    char mode[16];
    int has_mode;
    float fill = 0.0f;
    OrtStatus *status = pyroi_ort_string_attribute(info, CROP_AND_RESIZE, "mode", mode,
                                                   sizeof(mode), &has_mode);
    if (status == NULL) {
        status = pyroi_ort_float_attribute(info, CROP_AND_RESIZE, "extrapolation_value", 0.0f,
                                           &fill);
    }
    if (status == NULL && has_mode && strcmp(mode, "bilinear") != 0 &&
        strcmp(mode, "nearest") != 0) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, CROP_AND_RESIZE,
                                 "mode must be \"bilinear\" or \"nearest\", got \"%s\"", mode);
    }
    if (status != NULL) {
        return status;
    }
    pyroi_crop_and_resize_params_init(p);
    p->method = has_mode && strcmp(mode, "nearest") == 0 ? PYROI_CROP_NEAREST
                                                         : PYROI_CROP_BILINEAR;
    p->placement = PYROI_CROP_PLACEMENT_EXACT_ENDS;
    p->extrapolation_value = (double)fill;
    p->num_threads = num_threads;
    return NULL;
}

static pyroi_status crop_forward(const pyroi_ort_kernel *k, const pyroi_ort_call *c)
{
    pyroi_crop_and_resize_params p = k->params.crop_and_resize;
    p.crop_height = c->out_shape[2]; /* this call's crop_size */
    p.crop_width = c->out_shape[3];
    return c->x.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT
               ? pyroi_crop_and_resize_forward_f32(PYROI_ORT_FORWARD_ARGS(c, float, float), &p)
               : pyroi_crop_and_resize_forward_f64(PYROI_ORT_FORWARD_ARGS(c, double, double),
                                                   &p);
}

static void crop_pooled_size(const OrtShapeInferContext *context, int64_t pooled[2])
{
    (void)context; /* crop_size is an input's value: unknown until the call */
    pooled[0] = pooled[1] = -1;
}

const pyroi_ort_op_spec pyroi_ort_crop_and_resize_spec = {
    "pyroi", CROP_AND_RESIZE, 4, 4, 0, crop_create, crop_forward, crop_pooled_size, 1,
    PYROI_ORT_LAST_VERSION, 3, 1};
