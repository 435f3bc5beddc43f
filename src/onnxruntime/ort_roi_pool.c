/* ort_roi_pool.c - the MaxRoiPool kernel of the ONNX Runtime custom-op library: ONNX
 * MaxRoiPool (rois (num_rois, 5) [batch_index, x1, y1, x2, y2], attributes pooled_shape and
 * spatial_scale) computed by pyroi_roi_pool_forward, in float32, float64 and float16. */
#include "ort_kernel.h"

#include <stdlib.h>

static const char MAX_ROI_POOL[] = "MaxRoiPool";

static OrtStatus *max_roi_pool_create(const OrtKernelInfo *info, int num_threads, void **kernel)
{
    pyroi_roi_pool_params *params;
    int64_t pooled[2];
    float scale;
    OrtStatus *status = pyroi_ort_ints_attribute(info, MAX_ROI_POOL, "pooled_shape", pooled, 2);
    if (status == NULL) {
        status = pyroi_ort_float_attribute(info, MAX_ROI_POOL, "spatial_scale", 1.0f, &scale);
    }
    if (status != NULL) {
        return status;
    }
    if (pooled[0] < 1 || pooled[1] < 1) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, MAX_ROI_POOL,
                               "pooled_shape must be >= 1, got (%lld, %lld)",
                               (long long)pooled[0], (long long)pooled[1]);
    }
    params = (pyroi_roi_pool_params *)malloc(sizeof(*params));
    if (params == NULL) {
        return pyroi_ort_status(MAX_ROI_POOL, PYROI_E_NO_MEMORY);
    }
    pyroi_roi_pool_params_init(params);
    params->pooled_height = pooled[0];
    params->pooled_width = pooled[1];
    params->spatial_scale_h = params->spatial_scale_w = (double)scale;
    params->num_threads = num_threads;
    *kernel = params;
    return NULL;
}

static OrtStatus *max_roi_pool_compute(void *kernel, OrtKernelContext *context)
{
    const pyroi_roi_pool_params *params = (const pyroi_roi_pool_params *)kernel;
    pyroi_ort_tensor x, rois;
    pyroi_ort_rows rows;
    int64_t out_shape[4], out_strides[4], x_strides[4], num_rois;
    void *out;
    pyroi_status result = PYROI_OK;
    OrtStatus *status = pyroi_ort_input(context, 0, MAX_ROI_POOL, "X", 4, &x);
    if (status == NULL) {
        status = pyroi_ort_input(context, 1, MAX_ROI_POOL, "rois", 2, &rois);
    }
    if (status != NULL) {
        return status;
    }
    num_rois = rois.shape[0];
    if (!pyroi_ort_is_float(x.type) || rois.type != x.type) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, MAX_ROI_POOL,
                               "X and rois must be float, double or float16 tensors of one "
                               "type");
    }
    out_shape[0] = num_rois;
    out_shape[1] = x.shape[1];
    out_shape[2] = params->pooled_height;
    out_shape[3] = params->pooled_width;
    status = pyroi_ort_rows_read(MAX_ROI_POOL, &rois, 4, x.shape[0], &rows);
    if (status == NULL) {
        status = pyroi_ort_output(context, 0, out_shape, &out);
    }
    pyroi_ort_strides(x.shape, x_strides);
    pyroi_ort_strides(out_shape, out_strides);
    if (status == NULL && num_rois > 0) { /* no RoIs: nothing to pool */
        switch (x.type) {
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
            result = pyroi_roi_pool_forward_f32((const float *)x.data, x.shape, x_strides,
                                                (const float *)rows.coordinates, num_rois,
                                                rows.row_stride, rows.batch_indices,
                                                (float *)out, out_strides, NULL, NULL, params);
            break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
            result = pyroi_roi_pool_forward_f64((const double *)x.data, x.shape, x_strides,
                                                (const double *)rows.coordinates, num_rois,
                                                rows.row_stride, rows.batch_indices,
                                                (double *)out, out_strides, NULL, NULL, params);
            break;
        default:
            result = pyroi_roi_pool_forward_f16((const uint16_t *)x.data, x.shape, x_strides,
                                                (const float *)rows.coordinates, num_rois,
                                                rows.row_stride, rows.batch_indices,
                                                (uint16_t *)out, out_strides, NULL, NULL,
                                                params);
            break;
        }
    }
    pyroi_ort_rows_free(&rows);
    return status != NULL || result == PYROI_OK ? status
                                                : pyroi_ort_status(MAX_ROI_POOL, result);
}

static void max_roi_pool_pooled_size(const OrtShapeInferContext *context, int64_t pooled[2])
{
    pyroi_ort_infer_ints(context, "pooled_shape", pooled, 2);
}

const pyroi_ort_op_spec pyroi_ort_max_roi_pool_spec = {
    "pyroi", MAX_ROI_POOL, 2, 1, max_roi_pool_create, max_roi_pool_compute,
    max_roi_pool_pooled_size, 1, PYROI_ORT_LAST_VERSION};
