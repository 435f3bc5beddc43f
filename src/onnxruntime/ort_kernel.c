/* ort_kernel.c - statuses, attributes and tensors for the kernels of the ONNX Runtime
 * custom-op library (see ort_kernel.h). */
#include "ort_kernel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h" /* the core's one float16 conversion */

const OrtApi *pyroi_ort_api = NULL;

OrtStatus *pyroi_ort_error(OrtErrorCode code, const char *op, const char *format, ...)
{
    char message[512];
    int used = snprintf(message, sizeof(message), "pyroi %s: ", op);
    va_list arguments;
    if (used < 0 || (size_t)used >= sizeof(message)) {
        used = 0;
    }
    va_start(arguments, format);
    vsnprintf(message + used, sizeof(message) - (size_t)used, format, arguments);
    va_end(arguments);
    return pyroi_ort_api->CreateStatus(code, message);
}

OrtStatus *pyroi_ort_status(const char *op, pyroi_status status)
{
    const char *argument;
    switch (status) {
    case PYROI_E_INVALID_BOX:
        argument = "rois";
        break;
    case PYROI_E_INVALID_BATCH_INDEX:
        argument = "batch_indices";
        break;
    case PYROI_E_INVALID_OUTPUT_SIZE:
    case PYROI_E_INVALID_SCALE:
    case PYROI_E_INVALID_SAMPLING_RATIO:
    case PYROI_E_INVALID_NUM_THREADS:
        argument = "attributes";
        break;
    case PYROI_E_NO_MEMORY:
        /* the runtime's trouble, not the model's */
        return pyroi_ort_error(ORT_RUNTIME_EXCEPTION, op, "%s", pyroi_status_string(status));
    default:
        argument = "X";
        break;
    }
    return pyroi_ort_error(ORT_INVALID_ARGUMENT, op, "%s: %s", argument,
                           pyroi_status_string(status));
}

/* A failed read of a scalar attribute takes its default: API 21 cannot tell an absent
 * attribute from one of another type, and the runtime has checked the node against the
 * operator's schema where it has one. */
static void release(OrtStatus *status)
{
    if (status != NULL) {
        pyroi_ort_api->ReleaseStatus(status);
    }
}

OrtStatus *pyroi_ort_int_attribute(const OrtKernelInfo *info, const char *op, const char *name,
                                   int64_t fallback, int64_t *value)
{
    OrtStatus *status = pyroi_ort_api->KernelInfoGetAttribute_int64(info, name, value);
    (void)op;
    if (status != NULL) {
        release(status);
        *value = fallback;
    }
    return NULL;
}

OrtStatus *pyroi_ort_float_attribute(const OrtKernelInfo *info, const char *op,
                                     const char *name, float fallback, float *value)
{
    OrtStatus *status = pyroi_ort_api->KernelInfoGetAttribute_float(info, name, value);
    (void)op;
    if (status != NULL) {
        release(status);
        *value = fallback;
    }
    return NULL;
}

OrtStatus *pyroi_ort_string_attribute(const OrtKernelInfo *info, const char *op,
                                      const char *name, char *value, size_t capacity,
                                      int *present)
{
    size_t size = 0;
    OrtStatus *status = pyroi_ort_api->KernelInfoGetAttribute_string(info, name, NULL, &size);
    *present = 0;
    value[0] = '\0';
    if (status != NULL) {
        release(status);
        return NULL;
    }
    if (size > capacity) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, op, "attribute %s is too long (%zu bytes)",
                               name, size);
    }
    status = pyroi_ort_api->KernelInfoGetAttribute_string(info, name, value, &size);
    if (status != NULL) {
        return status;
    }
    value[capacity - 1] = '\0';
    *present = 1;
    return NULL;
}

OrtStatus *pyroi_ort_ints_attribute(const OrtKernelInfo *info, const char *op, const char *name,
                                    int64_t *values, size_t count)
{
    size_t size = 0;
    OrtStatus *status = pyroi_ort_api->KernelInfoGetAttributeArray_int64(info, name, NULL, &size);
    if (status != NULL) {
        release(status);
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, op, "attribute %s is required", name);
    }
    if (size != count) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, op,
                               "attribute %s must have %zu values, has %zu", name, count, size);
    }
    return pyroi_ort_api->KernelInfoGetAttributeArray_int64(info, name, values, &size);
}

OrtStatus *pyroi_ort_input(OrtKernelContext *context, size_t index, const char *op,
                           const char *name, size_t rank, pyroi_ort_tensor *tensor)
{
    const OrtValue *value = NULL;
    OrtTensorTypeAndShapeInfo *info = NULL;
    void *data = NULL;
    OrtStatus *status = pyroi_ort_api->KernelContext_GetInput(context, index, &value);
    if (status == NULL && value == NULL) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, op, "input %s is missing", name);
    }
    if (status == NULL) {
        status = pyroi_ort_api->GetTensorTypeAndShape(value, &info);
    }
    if (status == NULL) {
        status = pyroi_ort_api->GetTensorElementType(info, &tensor->type);
    }
    if (status == NULL) {
        status = pyroi_ort_api->GetDimensionsCount(info, &tensor->rank);
    }
    if (status == NULL && tensor->rank != rank) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, op, "input %s must have %zu dimensions, "
                                 "has %zu", name, rank, tensor->rank);
    }
    if (status == NULL) {
        status = pyroi_ort_api->GetDimensions(info, tensor->shape, rank);
    }
    if (info != NULL) {
        pyroi_ort_api->ReleaseTensorTypeAndShapeInfo(info);
    }
    if (status == NULL) {
        /* API 21 has no const accessor; the kernels only read inputs */
        status = pyroi_ort_api->GetTensorMutableData((OrtValue *)value, &data);
    }
    tensor->data = data;
    return status;
}

OrtStatus *pyroi_ort_output(OrtKernelContext *context, size_t index, const int64_t shape[4],
                            void **data)
{
    OrtValue *value = NULL;
    OrtStatus *status = pyroi_ort_api->KernelContext_GetOutput(context, index, shape, 4, &value);
    *data = NULL;
    if (status == NULL) {
        status = pyroi_ort_api->GetTensorMutableData(value, data);
    }
    return status;
}

void pyroi_ort_strides(const int64_t shape[4], int64_t strides[4])
{
    strides[3] = 1;
    strides[2] = shape[3];
    strides[1] = shape[2] * shape[3];
    strides[0] = shape[1] * shape[2] * shape[3];
}

OrtStatus *pyroi_ort_widen(const char *op, const void *half_values, int64_t count, float **out)
{
    const uint16_t *half = (const uint16_t *)half_values;
    int64_t i;
    *out = NULL;
    if (count < 0 || (uint64_t)count > SIZE_MAX / sizeof(float)) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, op, "too many values (%lld)",
                               (long long)count);
    }
    *out = (float *)malloc((size_t)(count > 0 ? count : 1) * sizeof(float));
    if (*out == NULL) {
        return pyroi_ort_status(op, PYROI_E_NO_MEMORY);
    }
    for (i = 0; i < count; ++i) {
        (*out)[i] = pyroi_half_to_float(half[i]);
    }
    return NULL;
}

int pyroi_ort_is_float(ONNXTensorElementDataType type)
{
    return type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT ||
           type == ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE ||
           type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
}

int64_t pyroi_ort_infer_int(const OrtShapeInferContext *context, const char *name,
                            int64_t fallback)
{
    const OrtOpAttr *attribute = NULL;
    int64_t value = fallback;
    size_t size = 0;
    OrtStatus *status = pyroi_ort_api->ShapeInferContext_GetAttribute(context, name, &attribute);
    if (status == NULL && attribute != NULL) {
        status = pyroi_ort_api->ReadOpAttr(attribute, ORT_OP_ATTR_INT, &value, sizeof(value),
                                           &size);
    }
    release(status);
    return status == NULL ? value : fallback;
}

void pyroi_ort_infer_ints(const OrtShapeInferContext *context, const char *name,
                          int64_t *values, size_t count)
{
    const OrtOpAttr *attribute = NULL;
    size_t size = 0, i;
    OrtStatus *status = pyroi_ort_api->ShapeInferContext_GetAttribute(context, name, &attribute);
    if (status == NULL && attribute != NULL) {
        status = pyroi_ort_api->ReadOpAttr(attribute, ORT_OP_ATTR_INTS, values,
                                           count * sizeof(int64_t), &size);
    }
    if (status != NULL || attribute == NULL || size != count * sizeof(int64_t)) {
        for (i = 0; i < count; ++i) {
            values[i] = -1;
        }
    }
    release(status);
}

OrtStatus *pyroi_ort_rows_read(const char *op, const pyroi_ort_tensor *rois, int64_t coords,
                               int64_t num_images, pyroi_ort_rows *rows)
{
    const int64_t num_rois = rois->shape[0];
    int64_t failed_roi;
    pyroi_status status;
    OrtStatus *error;
    rows->batch_indices = NULL;
    rows->wide = NULL;
    rows->coordinates = NULL;
    rows->row_stride = 1 + coords;
    if (rois->shape[1] != 1 + coords) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, op,
                               "rois must be (num_rois, %lld) [batch_index, ...], got "
                               "(%lld, %lld)", (long long)(1 + coords), (long long)num_rois,
                               (long long)rois->shape[1]);
    }
    if (rois->type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {
        error = pyroi_ort_widen(op, rois->data, num_rois * (1 + coords), &rows->wide);
        if (error != NULL) {
            return error;
        }
    }
    rows->batch_indices = (int64_t *)malloc((size_t)(num_rois > 0 ? num_rois : 1) *
                                            sizeof(int64_t));
    if (rows->batch_indices == NULL) {
        return pyroi_ort_status(op, PYROI_E_NO_MEMORY);
    }
    if (num_rois == 0) {
        return NULL; /* no rows: nothing to point at */
    }
    if (rois->type == ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE) {
        status = pyroi_roi_rows_batch_indices_f64((const double *)rois->data, num_rois,
                                                  1 + coords, coords, num_images,
                                                  rows->batch_indices, &failed_roi);
        rows->coordinates = (const double *)rois->data + 1;
    } else {
        const float *values = rows->wide != NULL ? rows->wide : (const float *)rois->data;
        status = pyroi_roi_rows_batch_indices_f32(values, num_rois, 1 + coords, coords,
                                                  num_images, rows->batch_indices, &failed_roi);
        rows->coordinates = values + 1;
    }
    if (status == PYROI_E_INVALID_BATCH_INDEX || status == PYROI_E_INVALID_BOX) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, op, "%s: RoI %lld: %s",
                               status == PYROI_E_INVALID_BOX ? "rois" : "batch_indices (rois "
                               "column 0)", (long long)failed_roi, pyroi_status_string(status));
    }
    return status == PYROI_OK ? NULL : pyroi_ort_status(op, status);
}

void pyroi_ort_rows_free(pyroi_ort_rows *rows)
{
    free(rows->batch_indices);
    free(rows->wide);
    rows->batch_indices = NULL;
    rows->wide = NULL;
}

/* int32 batch indices as the int64 ones pyroi takes (malloc'd; the values are checked by
 * the pyroi call). */
static OrtStatus *widen_indices(const char *op, const int32_t *indices, int64_t count,
                                int64_t **out)
{
    int64_t i;
    *out = (int64_t *)malloc((size_t)(count > 0 ? count : 1) * sizeof(int64_t));
    if (*out == NULL) {
        return pyroi_ort_status(op, PYROI_E_NO_MEMORY);
    }
    for (i = 0; i < count; ++i) {
        (*out)[i] = indices[i];
    }
    return NULL;
}

/* The output size held by input index (crop_size: 2 values, int32 or int64, each >= 1),
 * read once. */
static OrtStatus *size_input_read(OrtKernelContext *context, size_t index, const char *op,
                                  int64_t size[2])
{
    pyroi_ort_tensor tensor;
    OrtStatus *status = pyroi_ort_input(context, index, op, "crop_size", 1, &tensor);
    int axis;
    if (status != NULL) {
        return status;
    }
    if (tensor.shape[0] != 2 || (tensor.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 &&
                                 tensor.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, op, "crop_size must be 2 int32 or int64 "
                               "values [crop_height, crop_width]");
    }
    for (axis = 0; axis < 2; ++axis) {
        size[axis] = tensor.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32
                         ? (int64_t)((const int32_t *)tensor.data)[axis]
                         : ((const int64_t *)tensor.data)[axis];
    }
    if (size[0] < 1 || size[1] < 1) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, op, "crop_size must be >= 1, got [%lld, "
                               "%lld]", (long long)size[0], (long long)size[1]);
    }
    return NULL;
}

OrtStatus *pyroi_ort_call_read(OrtKernelContext *context, const char *op, int64_t coords,
                               int rows, int64_t channel_divisor, const int64_t pooled[2],
                               pyroi_ort_call *call)
{
    pyroi_ort_tensor rois, indices;
    OrtStatus *status;
    memset(call, 0, sizeof(*call));
    status = pyroi_ort_input(context, 0, op, "X", 4, &call->x);
    if (status == NULL) {
        status = pyroi_ort_input(context, 1, op, "rois", 2, &rois);
    }
    if (status == NULL && !rows) {
        status = pyroi_ort_input(context, 2, op, "batch_indices", 1, &indices);
    }
    if (status != NULL) {
        return status;
    }
    call->num_rois = rois.shape[0];
    if (!pyroi_ort_is_float(call->x.type) || rois.type != call->x.type) {
        return pyroi_ort_error(ORT_INVALID_ARGUMENT, op, "X and rois must be float, double or "
                               "float16 tensors of one type");
    }
    if (rows) {
        status = pyroi_ort_rows_read(op, &rois, coords, call->x.shape[0], &call->rows);
        call->boxes = call->rows.coordinates;
        call->box_row_stride = call->rows.row_stride;
        call->batch_indices = call->rows.batch_indices;
    } else if (indices.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 &&
               indices.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, op, "batch_indices must be int64 or "
                                 "int32");
    } else if (rois.shape[1] != coords || indices.shape[0] != call->num_rois) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, op,
                                 "rois must be (num_rois, %lld) and batch_indices (num_rois), "
                                 "got (%lld, %lld) and (%lld)", (long long)coords,
                                 (long long)call->num_rois, (long long)rois.shape[1],
                                 (long long)indices.shape[0]);
    } else {
        call->boxes = rois.data;
        call->box_row_stride = coords;
        call->batch_indices = (const int64_t *)indices.data;
        if (indices.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
            status = widen_indices(op, (const int32_t *)indices.data, call->num_rois,
                                   &call->rows.batch_indices);
            call->batch_indices = call->rows.batch_indices;
        }
        if (status == NULL && rois.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {
            status = pyroi_ort_widen(op, rois.data, call->num_rois * coords, &call->rows.wide);
            call->boxes = call->rows.wide;
        }
    }
    if (status == NULL && call->x.shape[1] % channel_divisor != 0) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, op,
                                 "X's channels (%lld) must be a multiple of output_height x "
                                 "output_width (%lld)", (long long)call->x.shape[1],
                                 (long long)channel_divisor);
    }
    if (status != NULL) {
        return status;
    }
    call->out_shape[0] = call->num_rois;
    call->out_shape[1] = call->x.shape[1] / channel_divisor;
    call->out_shape[2] = pooled[0];
    call->out_shape[3] = pooled[1];
    pyroi_ort_strides(call->x.shape, call->x_strides);
    pyroi_ort_strides(call->out_shape, call->out_strides);
    return pyroi_ort_output(context, 0, call->out_shape, &call->out);
}

OrtStatus *pyroi_ort_call_end(pyroi_ort_call *call, const char *op, OrtStatus *read,
                              pyroi_status result)
{
    pyroi_ort_rows_free(&call->rows);
    return read != NULL || result == PYROI_OK ? read : pyroi_ort_status(op, result);
}

OrtStatus *pyroi_ort_sampling_read(const OrtKernelInfo *info, const char *op,
                                   const char *height, const char *width,
                                   int64_t size_default, int64_t aligned_default,
                                   pyroi_ort_sampling *sampling)
{
    float scale = 1.0f;
    OrtStatus *status = pyroi_ort_int_attribute(info, op, height, size_default,
                                                &sampling->pooled[0]);
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, op, width, size_default, &sampling->pooled[1]);
    }
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, op, "sampling_ratio", 0, &sampling->ratio);
    }
    if (status == NULL) {
        status = pyroi_ort_int_attribute(info, op, "aligned", aligned_default,
                                         &sampling->aligned);
    }
    if (status == NULL) {
        status = pyroi_ort_float_attribute(info, op, "spatial_scale", 1.0f, &scale);
    }
    sampling->scale = (double)scale;
    if (status == NULL && (sampling->pooled[0] < 1 || sampling->pooled[1] < 1)) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, op, "%s and %s %smust be >= 1, got %lld "
                                 "x %lld", height, width,
                                 size_default < 1 ? "are required and " : "",
                                 (long long)sampling->pooled[0], (long long)sampling->pooled[1]);
    }
    if (status == NULL && sampling->ratio > PYROI_MAX_SAMPLING_RATIO) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, op,
                                 "sampling_ratio must be at most %lld, got %lld",
                                 (long long)PYROI_MAX_SAMPLING_RATIO, (long long)sampling->ratio);
    }
    return status;
}

void pyroi_ort_infer_output_size(const OrtShapeInferContext *context, int64_t pooled[2])
{
    pooled[0] = pyroi_ort_infer_int(context, "output_height", 1);
    pooled[1] = pyroi_ort_infer_int(context, "output_width", 1);
}

OrtStatus *pyroi_ort_compute(const pyroi_ort_kernel *kernel, OrtKernelContext *context)
{
    const pyroi_ort_op_spec *spec = kernel->spec;
    pyroi_ort_call call;
    pyroi_status result = PYROI_OK;
    int64_t pooled[2];
    OrtStatus *status = NULL;
    memset(&call, 0, sizeof(call)); /* nothing to free if the size input fails */
    pooled[0] = kernel->pooled[0];
    pooled[1] = kernel->pooled[1];
    if (spec->size_input != 0) {
        status = size_input_read(context, spec->size_input, spec->name, pooled);
    }
    if (status == NULL) {
        status = pyroi_ort_call_read(context, spec->name, spec->coords, spec->input_count == 2,
                                     spec->position_sensitive ? pooled[0] * pooled[1] : 1,
                                     pooled, &call);
    }
    if (status == NULL && spec->no_float16 &&
        call.x.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {
        status = pyroi_ort_error(ORT_INVALID_ARGUMENT, spec->name, "X and rois must be float "
                                 "or double (no float16 kernel)");
    }
    if (status == NULL && call.num_rois > 0) { /* no RoIs: an empty output, nothing to read */
        result = spec->forward(kernel, &call);
    }
    return pyroi_ort_call_end(&call, spec->name, status, result);
}
