/* ort_kernel.h - what every kernel of the ONNX Runtime custom-op library shares (internal):
 * the runtime's API table, statuses that name the node and the argument, the node's
 * attributes with their ONNX defaults, and the tensors a kernel reads and writes.
 *
 * The library is written against ONNX Runtime's stable C API, version 21 (ORT 1.21 and
 * later): it links nothing of ONNX Runtime, and refuses to register with an older runtime.
 * Only RegisterCustomOps is exported. */
#ifndef PYROI_ORT_KERNEL_H
#define PYROI_ORT_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "onnxruntime_c_api.h"
#include "pyroi.h"

/* The API version the library is built against and asks the runtime for. */
#define PYROI_ORT_API_VERSION 21

/* The runtime's function table, set once by RegisterCustomOps. */
extern const OrtApi *pyroi_ort_api;

/* A status for the user: "<op>: <message>" (ORT_INVALID_ARGUMENT unless code says else). */
OrtStatus *pyroi_ort_error(OrtErrorCode code, const char *op, const char *format, ...);

/* The status of a pyroi call that failed: its status string and the input or attribute it
 * concerns (rois, batch_indices, X, an attribute), named as in the ONNX operator. */
OrtStatus *pyroi_ort_status(const char *op, pyroi_status status);

/* Attributes of a node, read once when its kernel is made; a missing one takes its
 * default. */
OrtStatus *pyroi_ort_int_attribute(const OrtKernelInfo *info, const char *op, const char *name,
                                   int64_t fallback, int64_t *value);
OrtStatus *pyroi_ort_float_attribute(const OrtKernelInfo *info, const char *op,
                                     const char *name, float fallback, float *value);
/* A string attribute into value (capacity bytes, NUL-terminated); *present 0 when absent. */
OrtStatus *pyroi_ort_string_attribute(const OrtKernelInfo *info, const char *op,
                                      const char *name, char *value, size_t capacity,
                                      int *present);
/* An INTS attribute of exactly count values (required: absent is an error). */
OrtStatus *pyroi_ort_ints_attribute(const OrtKernelInfo *info, const char *op, const char *name,
                                    int64_t *values, size_t count);

/* One input tensor as a kernel reads it: element type, shape (rank <= 4), data. */
typedef struct pyroi_ort_tensor {
    ONNXTensorElementDataType type;
    size_t rank;
    int64_t shape[4];
    const void *data;
} pyroi_ort_tensor;

/* Reads input index of a node (rank must be `rank`; `name` is the ONNX input's name). */
OrtStatus *pyroi_ort_input(OrtKernelContext *context, size_t index, const char *op,
                           const char *name, size_t rank, pyroi_ort_tensor *tensor);

/* Makes output index with the given 4-D shape; *data is its first element. */
OrtStatus *pyroi_ort_output(OrtKernelContext *context, size_t index, const int64_t shape[4],
                            void **data);

/* Row-major element strides of a contiguous 4-D shape. */
void pyroi_ort_strides(const int64_t shape[4], int64_t strides[4]);

struct pyroi_ort_op_spec;
struct pyroi_ort_call;

/* A node's kernel: what its attributes set, read once when the session is made. */
typedef struct pyroi_ort_kernel {
    const struct pyroi_ort_op_spec *spec;
    int64_t pooled[2]; /* the output's height and width */
    int max_mode;      /* RoiAlign's mode="max" (onnxruntime's rule, or mmcv's) */
    union {
        pyroi_roi_align_params roi_align;
        pyroi_roi_pool_params roi_pool;
        pyroi_ps_roi_align_params ps_roi_align;
        pyroi_ps_roi_pool_params ps_roi_pool;
        pyroi_roi_align_rotated_params rotated;
        pyroi_prroi_pool_params prroi_pool;
        pyroi_crop_and_resize_params crop_and_resize;
    } params;
} pyroi_ort_kernel;

/* The description of one operator: its domain and ONNX name, its inputs, how its kernel is
 * made from the node's attributes (num_threads from the registration) and which pyroi call
 * it runs. */
typedef struct pyroi_ort_op_spec {
    /* "pyroi"; "mmcv" for the nodes mmcv's exporters write; "" for the opt-in override of
     * onnxruntime's own operators */
    const char *domain;
    const char *name;
    /* 3: X, rois (K, coords), batch_indices (K); 2: X, rois (K, 1 + coords) with the batch
     * index first */
    size_t input_count;
    int64_t coords;
    /* the output has C / (pooled_height * pooled_width) channels (PS-RoIAlign, PS-RoIPool) */
    int position_sensitive;
    OrtStatus *(*create)(const OrtKernelInfo *info, int num_threads, pyroi_ort_kernel *kernel);
    pyroi_status (*forward)(const pyroi_ort_kernel *kernel, const struct pyroi_ort_call *call);
    /* the output's pooled height and width from the node's attributes, for shape inference
     * (-1 where unknown) */
    void (*pooled_size)(const OrtShapeInferContext *context, int64_t pooled[2]);
    /* the opsets of the domain the op serves (for the override of a standard op) */
    int start_version;
    int end_version;
    /* 0: the output size comes from the attributes; else the index of an input holding it
     * ([height, width], int32 or int64: CropAndResize's crop_size), read once per call */
    size_t size_input;
    /* 1: no float16 kernel (X and rois must be float or double) */
    int no_float16;
} pyroi_ort_op_spec;

/* "every later opset" */
#define PYROI_ORT_LAST_VERSION 2147483647

/* The attributes most operators share, read with their defaults and checked: the output
 * size (attributes `height` and `width`; size_default 1, or 0: required), spatial_scale
 * (1.0), sampling_ratio (0: adaptive; at most PYROI_MAX_SAMPLING_RATIO), aligned
 * (aligned_default). */
typedef struct pyroi_ort_sampling {
    int64_t pooled[2];
    int64_t ratio;
    int64_t aligned;
    double scale;
} pyroi_ort_sampling;

/* The fields every pyroi params struct has, set from a node's sampling attributes (the
 * struct initialised first): output size (also the kernel's), spatial scale, threads. */
#define PYROI_ORT_SET_PARAMS(p, kernel, sampling, threads)                                   \
    do {                                                                                    \
        (kernel)->pooled[0] = (p)->pooled_height = (sampling)->pooled[0];                   \
        (kernel)->pooled[1] = (p)->pooled_width = (sampling)->pooled[1];                    \
        (p)->spatial_scale_h = (p)->spatial_scale_w = (sampling)->scale;                    \
        (p)->num_threads = (threads);                                                       \
    } while (0)

OrtStatus *pyroi_ort_sampling_read(const OrtKernelInfo *info, const char *op,
                                   const char *height, const char *width,
                                   int64_t size_default, int64_t aligned_default,
                                   pyroi_ort_sampling *sampling);

/* output_height and output_width for shape inference (1 when absent). */
void pyroi_ort_infer_output_size(const OrtShapeInferContext *context, int64_t pooled[2]);

/* A node's INT attribute (or count INTS values) during shape inference; fallback (or -1s)
 * when absent or unreadable. */
int64_t pyroi_ort_infer_int(const OrtShapeInferContext *context, const char *name,
                            int64_t fallback);
void pyroi_ort_infer_ints(const OrtShapeInferContext *context, const char *name,
                          int64_t *values, size_t count);

/* The operators (ort_roi_align.c, ort_roi_pool.c, ort_ps_roi.c, ort_rotated.c, ort_mmcv.c,
 * ort_crop_and_resize.c). */
extern const pyroi_ort_op_spec pyroi_ort_roi_align_spec;
extern const pyroi_ort_op_spec pyroi_ort_max_roi_pool_spec;
extern const pyroi_ort_op_spec pyroi_ort_mmcv_roi_align_spec;
extern const pyroi_ort_op_spec pyroi_ort_mmcv_roi_align_rotated_spec;
extern const pyroi_ort_op_spec pyroi_ort_mmcv_prroi_pool_spec;
extern const pyroi_ort_op_spec pyroi_ort_ps_roi_align_spec;
extern const pyroi_ort_op_spec pyroi_ort_ps_roi_pool_spec;
extern const pyroi_ort_op_spec pyroi_ort_roi_align_rotated_spec;
extern const pyroi_ort_op_spec pyroi_ort_crop_and_resize_spec;
extern const pyroi_ort_op_spec pyroi_ort_roi_align_10_override_spec;
extern const pyroi_ort_op_spec pyroi_ort_roi_align_16_override_spec;

/* RoIs given as rows [batch_index, c_1, ..., c_n] (a (K, 1 + n) rois input, as MaxRoiPool and
 * mmcv take them), read for a pyroi call: the batch indices as int64, each checked to be an
 * integer in [0, num_images), and where the coordinates start (row stride 1 + n) -- in the
 * tensor's own type, or widened to float for float16. */
typedef struct pyroi_ort_rows {
    int64_t *batch_indices;  /* malloc'd */
    float *wide;             /* float16 rows widened (malloc'd), else NULL */
    const void *coordinates; /* c_1 of row 0 (the tensor's type, or float when widened) */
    int64_t row_stride;
} pyroi_ort_rows;

/* Reads rois (K, 1 + coords) of a float type into rows (free with pyroi_ort_rows_free, also
 * after a failure). */
OrtStatus *pyroi_ort_rows_read(const char *op, const pyroi_ort_tensor *rois, int64_t coords,
                               int64_t num_images, pyroi_ort_rows *rows);
void pyroi_ort_rows_free(pyroi_ort_rows *rows);

/* A float16 input's values widened to float32 (exact), which pyroi's float16 entry points
 * take for boxes: count values into a malloc'd *out (the caller frees it). */
OrtStatus *pyroi_ort_widen(const char *op, const void *half_values, int64_t count, float **out);

/* Whether ONNX element type `type` is one pyroi computes in: float, double, float16. */
int pyroi_ort_is_float(ONNXTensorElementDataType type);

/* One forward call of a kernel, read from its node's inputs and ready for pyroi: the map, the
 * boxes as the pyroi function takes them (coordinates in the map's type, float for float16;
 * a row stride; int64 batch indices) and the output made. Two input forms:
 *   rows = 0: X (N, C, H, W), rois (K, coords), batch_indices (K) int64 (ONNX RoiAlign's) or
 *             int32 (onnxruntime's CropAndResize's; widened);
 *   rows = 1: X, rois (K, 1 + coords) [batch_index, ...] (MaxRoiPool's and mmcv's).
 * The output is (K, C / channel_divisor, pooled[0], pooled[1]) (channel_divisor: PH * PW for
 * the position-sensitive ops, else 1). */
typedef struct pyroi_ort_call {
    pyroi_ort_tensor x;
    int64_t x_strides[4];
    int64_t num_rois;
    const void *boxes;
    int64_t box_row_stride;
    const int64_t *batch_indices;
    void *out;
    int64_t out_shape[4];
    int64_t out_strides[4];
    pyroi_ort_rows rows; /* the rows form's (and float16 boxes') own memory */
} pyroi_ort_call;

OrtStatus *pyroi_ort_call_read(OrtKernelContext *context, const char *op, int64_t coords,
                               int rows, int64_t channel_divisor, const int64_t pooled[2],
                               pyroi_ort_call *call);

/* Runs a kernel on a node's inputs: the call read as its spec says, its forward, the status. */
OrtStatus *pyroi_ort_compute(const pyroi_ort_kernel *kernel, OrtKernelContext *context);

/* Frees the call's memory and gives the kernel's status: read's failure, else the pyroi
 * call's result. */
OrtStatus *pyroi_ort_call_end(pyroi_ort_call *call, const char *op, OrtStatus *read,
                              pyroi_status result);

/* A pyroi forward of the call's dtype (fn##_f32 / _f64 / _f16), with argmax or not. */
#define PYROI_ORT_FORWARD_ARGS(c, T, B) \
    (const T *)(c)->x.data, (c)->x.shape, (c)->x_strides, (const B *)(c)->boxes, \
        (c)->num_rois, (c)->box_row_stride, (c)->batch_indices, (T *)(c)->out, (c)->out_strides
#define PYROI_ORT_FORWARD(c, fn, params)                                                      \
    ((c)->x.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT                                       \
         ? fn##_f32(PYROI_ORT_FORWARD_ARGS(c, float, float), params)                          \
     : (c)->x.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE                                    \
         ? fn##_f64(PYROI_ORT_FORWARD_ARGS(c, double, double), params)                        \
         : fn##_f16(PYROI_ORT_FORWARD_ARGS(c, uint16_t, float), params))
#define PYROI_ORT_FORWARD_NO_ARGMAX(c, fn, params)                                            \
    ((c)->x.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT                                       \
         ? fn##_f32(PYROI_ORT_FORWARD_ARGS(c, float, float), NULL, NULL, params)              \
     : (c)->x.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE                                    \
         ? fn##_f64(PYROI_ORT_FORWARD_ARGS(c, double, double), NULL, NULL, params)            \
         : fn##_f16(PYROI_ORT_FORWARD_ARGS(c, uint16_t, float), NULL, NULL, params))

#endif /* PYROI_ORT_KERNEL_H */
