/*
 * pyroi.h - the complete public C API of pyroi, a library of region-of-interest (RoI)
 * pooling operators (RoIAlign, ...) for object detectors and instance segmenters.
 *
 * Conventions shared by every function:
 *   - Tensors are a pointer, an int64_t shape[4] and int64_t element strides[4] (strides
 *     count elements, not bytes; they may be negative or zero for inputs), so NCHW, NHWC
 *     and sliced views are passed without copies. Outputs must not overlap themselves.
 *   - Boxes are float coordinates of the tensor's dtype, four per RoI (x1, y1, x2, y2) in
 *     input-image pixels, consecutive in memory, RoI k starting at boxes + k * box_row_stride;
 *     plus a separate int64_t batch-index array of num_rois entries, each in [0, N).
 *   - Every function that can fail returns a pyroi_status. Arguments are validated in full
 *     before any tensor element is read or written; on failure nothing is written.
 *   - The library is stateless and reentrant: no handles, no globals, no printing. Calls may
 *     run concurrently from several threads on distinct outputs. Memory is owned by the
 *     caller; a call allocates only scratch that it frees before returning: tap tables
 *     proportional to the RoIs, and per worker thread a channels-last block of 64 bytes
 *     (RoIPool forward: 128) per feature-map pixel (at most 64 MB; larger maps are read in
 *     place). Failure: PYROI_E_NO_MEMORY.
 *   - Threads are started and joined inside a call (no pool survives it), so a process may
 *     fork() at any time; params.num_threads = 0 uses every online processor for large calls
 *     and one thread for small ones. Results are bit-identical for every thread count.
 *   - A pointer may be NULL only when the tensor it addresses has no elements.
 *
 * The version macros below are the single source of the version for the C library, the
 * CMake package and the Python package.
 */
#ifndef PYROI_H
#define PYROI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PYROI_VERSION_MAJOR 0
#define PYROI_VERSION_MINOR 1
#define PYROI_VERSION_PATCH 0
#define PYROI_VERSION_STRING "0.1.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH, comparable with pyroi_version_number(). */
#define PYROI_VERSION_NUMBER \
    (PYROI_VERSION_MAJOR * 10000 + PYROI_VERSION_MINOR * 100 + PYROI_VERSION_PATCH)

/* Symbol visibility: define PYROI_STATIC when linking the static library on Windows. */
#if defined(_WIN32) && !defined(PYROI_STATIC)
#  ifdef PYROI_BUILDING_LIBRARY
#    define PYROI_API __declspec(dllexport)
#  else
#    define PYROI_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define PYROI_API __attribute__((visibility("default")))
#else
#  define PYROI_API
#endif

/* Largest number of samples per bin along one axis (sampling_ratio, or the adaptive
 * ceil(roi_size / pooled_size)). Matches the 32-bit grid counters of the peers. */
#define PYROI_MAX_SAMPLING_GRID INT64_C(2147483647)

typedef enum pyroi_status {
    PYROI_OK = 0,
    /* A required pointer (tensor with elements, params) is NULL. */
    PYROI_E_NULL_POINTER = 1,
    /* A shape entry is negative, or two shapes that must agree do not. */
    PYROI_E_INVALID_SHAPE = 2,
    /* Strides make an offset overflow int64, or an output overlaps itself. */
    PYROI_E_INVALID_STRIDES = 3,
    /* pooled_height or pooled_width is not positive. */
    PYROI_E_INVALID_OUTPUT_SIZE = 4,
    /* A spatial scale is negative, NaN or infinite. */
    PYROI_E_INVALID_SCALE = 5,
    /* sampling_ratio exceeds PYROI_MAX_SAMPLING_GRID. */
    PYROI_E_INVALID_SAMPLING_RATIO = 6,
    /* A batch index is outside [0, N). */
    PYROI_E_INVALID_BATCH_INDEX = 7,
    /* A box coordinate is NaN or infinite (also after scaling), or a box is so large that its
     * adaptive sampling grid exceeds PYROI_MAX_SAMPLING_GRID. */
    PYROI_E_INVALID_BOX = 8,
    /* num_threads is negative. */
    PYROI_E_INVALID_NUM_THREADS = 9,
    /* A scratch allocation failed. */
    PYROI_E_NO_MEMORY = 10,
    /* An argmax entry given to a max-pooling backward is neither -1 nor a pixel index in
     * [0, H * W). */
    PYROI_E_INVALID_ARGMAX = 11
} pyroi_status;

/* The library's version as PYROI_VERSION_NUMBER; compare with the macro to detect a header
 * that does not match the linked library. Thread-safe. */
PYROI_API int pyroi_version_number(void);

/* The library's version as a static string "MAJOR.MINOR.PATCH". Thread-safe. */
PYROI_API const char *pyroi_version_string(void);

/* A static, human-readable description of a status code ("unknown status" for values outside
 * the enum). Never NULL. Thread-safe. */
PYROI_API const char *pyroi_status_string(pyroi_status status);

/* ------------------------------------------------------------------------------------------
 * RoIAlign (average mode), as torchvision.ops.roi_align / ONNX RoiAlign mode="avg".
 *
 * Each output bin (ph, pw) of RoI k and channel c is the mean of grid_h * grid_w bilinear
 * samples of input plane (batch_indices[k], c) taken at the centres of a regular subdivision
 * of the bin. Samples outside [-1, H] x [-1, W] contribute nothing (they still count in the
 * mean); samples in [-1, 0] or [H-1, H] read the border pixel.
 * ---------------------------------------------------------------------------------------- */
typedef struct pyroi_roi_align_params {
    /* Output bins per RoI along y and x; both > 0. Default 1. */
    int64_t pooled_height;
    int64_t pooled_width;
    /* Factors from box coordinates to feature-map coordinates, >= 0 and finite. torchvision's
     * single spatial_scale sets both. Default 1.0. */
    double spatial_scale_h;
    double spatial_scale_w;
    /* > 0: exactly that many samples per bin along each axis;
     * <= 0: adaptive, ceil(roi_size / pooled_size) per axis. Default -1. */
    int64_t sampling_ratio;
    /* Nonzero: shift box corners by -0.5 pixel (torchvision aligned=True, ONNX half_pixel).
     * Zero: no shift and RoI sizes forced to >= 1 (torchvision aligned=False). Default 0. */
    int aligned;
    /* Worker threads for this call; 0 lets the library choose. Results are bit-identical for
     * every value. Default 0. */
    int num_threads;
} pyroi_roi_align_params;

/* Sets every field of *params to its documented default. */
PYROI_API void pyroi_roi_align_params_init(pyroi_roi_align_params *params);

/* Forward pass.
 *   input           N x C x H x W tensor (input_shape, input_strides in elements).
 *   boxes           num_rois rows of (x1, y1, x2, y2), row k at boxes + k * box_row_stride.
 *   batch_indices   num_rois int64 values in [0, N).
 *   output          num_rois x C x pooled_height x pooled_width, strides output_strides;
 *                   every element is written.
 * Results equal torchvision 0.29's CPU kernel bit for bit for finite data, except that a
 * sample outside the map contributes exactly nothing (torchvision adds 0 * input[b,c,0,0],
 * which is NaN when that pixel is not finite), and that aligned RoIs with adaptive sampling
 * and a negative size on one axis give 0 (torchvision raises).
 * Returns PYROI_OK or the first validation failure. Thread-safe. */
PYROI_API pyroi_status pyroi_roi_align_forward_f32(
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_forward_f64(
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params);

/* Finds the first RoI that a forward or backward call with these arguments would reject:
 * *failed_roi receives its index and the status says why (PYROI_E_INVALID_BATCH_INDEX or
 * PYROI_E_INVALID_BOX); PYROI_OK with *failed_roi = -1 when every RoI is valid. Other
 * failures (NULL pointers, bad params, bad box strides) return their status with
 * *failed_roi = -1. Meant for error reporting: call it after a call failed with one of those
 * two codes to name the offending RoI. height and width are the feature map's H and W.
 * Thread-safe. */
PYROI_API pyroi_status pyroi_roi_align_find_invalid_roi_f32(
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_roi_align_params *params, int64_t *failed_roi);
PYROI_API pyroi_status pyroi_roi_align_find_invalid_roi_f64(
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_roi_align_params *params, int64_t *failed_roi);

/* Backward pass: the gradient with respect to the input.
 *   grad_output     num_rois x C x pooled_height x pooled_width (C = grad_input_shape[1]),
 *                   strides grad_output_strides.
 *   grad_input      tensor of grad_input_shape (N, C, H, W) and grad_input_strides; it is
 *                   overwritten (zeroed, then accumulated), not added to.
 * Accumulation order per input pixel is torchvision's (RoI, bin, sample), so float32 results
 * equal torchvision's CPU autograd bit for bit for finite data. Returns PYROI_OK or the first
 * validation failure. Thread-safe. */
PYROI_API pyroi_status pyroi_roi_align_backward_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_backward_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params);

/* ------------------------------------------------------------------------------------------
 * RoIPool (quantised max pooling), as torchvision.ops.roi_pool, Caffe Fast R-CNN's
 * ROIPooling and ONNX MaxRoiPool.
 *
 * Box corners are scaled and rounded to whole pixels (half away from zero; the end pixel is
 * inclusive, so a RoI spans round(x2 * s) - round(x1 * s) + 1 >= 1 pixels). Bin b of n along
 * an axis covers pixels [floor(b * size / n), ceil((b + 1) * size / n)) from the RoI start,
 * clipped to the map, so neighbouring bins may share pixels. A bin is the maximum of its
 * pixels (ties: the first in row-major order; NaN is never selected); an empty bin (clipped
 * away) is 0. A non-empty bin whose pixels are all NaN, -inf or <= -FLT_MAX is -FLT_MAX,
 * in float64 too (as torchvision, which starts every bin at -FLT_MAX).
 * ---------------------------------------------------------------------------------------- */
typedef struct pyroi_roi_pool_params {
    /* Output bins per RoI along y and x; both > 0. Default 1. */
    int64_t pooled_height;
    int64_t pooled_width;
    /* Factors from box coordinates to feature-map coordinates, >= 0 and finite (converted to
     * the tensor's dtype before use, as torchvision does). torchvision's single spatial_scale
     * sets both; Ascend ROIPooling has one per axis. Default 1.0. */
    double spatial_scale_h;
    double spatial_scale_w;
    /* Worker threads for this call; 0 lets the library choose. Results are bit-identical for
     * every value. Default 0. */
    int num_threads;
} pyroi_roi_pool_params;

/* Sets every field of *params to its documented default. */
PYROI_API void pyroi_roi_pool_params_init(pyroi_roi_pool_params *params);

/* Forward pass.
 *   input           N x C x H x W tensor (input_shape, input_strides in elements).
 *   boxes           num_rois rows of (x1, y1, x2, y2), row k at boxes + k * box_row_stride;
 *                   finite, also after scaling.
 *   batch_indices   num_rois int64 values in [0, N).
 *   output          num_rois x C x pooled_height x pooled_width, strides output_strides;
 *                   every element is written.
 *   argmax          NULL, or a tensor of output's shape with strides argmax_strides (ignored
 *                   when argmax is NULL) not overlapping output: receives the in-plane index
 *                   h * W + w of each bin's maximum, or -1 when the bin is empty or holds no
 *                   pixel above -FLT_MAX. This is what the backward needs.
 * Results equal torchvision 0.29's CPU kernel bit for bit, output and argmax (torchvision
 * stores argmax as int32), wherever torchvision's 32-bit integer arithmetic does not
 * overflow. Beyond that pyroi stays defined: a rounded coordinate is clamped to
 * [-2^53, 2^53] pixels before it becomes an integer, and all pixel arithmetic is 64-bit.
 * Outputs (and argmax) of 8 MiB or more in the C-contiguous layout are written with
 * streaming stores on x86-64: they go to memory without passing through the caches.
 * Returns PYROI_OK or the first validation failure (PYROI_E_INVALID_BOX: a coordinate is
 * not finite, or its product with the spatial scale overflows). Thread-safe. */
PYROI_API pyroi_status pyroi_roi_pool_forward_f32(
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_pool_params *params);
PYROI_API pyroi_status pyroi_roi_pool_forward_f64(
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_pool_params *params);

/* Finds the first RoI that pyroi_roi_pool_forward_* with these arguments would reject:
 * *failed_roi receives its index and the status says why (PYROI_E_INVALID_BATCH_INDEX or
 * PYROI_E_INVALID_BOX); PYROI_OK with *failed_roi = -1 when every RoI is valid. Other
 * failures (NULL pointers, bad params, bad box strides) return their status with
 * *failed_roi = -1. Meant for error reporting. Thread-safe. */
PYROI_API pyroi_status pyroi_roi_pool_find_invalid_roi_f32(
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images,
    const pyroi_roi_pool_params *params, int64_t *failed_roi);
PYROI_API pyroi_status pyroi_roi_pool_find_invalid_roi_f64(
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images,
    const pyroi_roi_pool_params *params, int64_t *failed_roi);

/* Backward pass: the gradient with respect to the input, from the forward's argmax (the
 * boxes are not needed).
 *   grad_output     num_rois x C x pooled_height x pooled_width (C = grad_input_shape[1]),
 *                   strides grad_output_strides.
 *   argmax          the forward's argmax, same shape, strides argmax_strides; every entry
 *                   must be -1 or in [0, H * W), else PYROI_E_INVALID_ARGMAX.
 *   batch_indices   num_rois int64 values in [0, N), as given to the forward.
 *   grad_input      tensor of grad_input_shape (N, C, H, W) and grad_input_strides; it is
 *                   overwritten (zeroed, then accumulated), not added to.
 * grad_input[b, c, argmax] += grad_output for every bin whose argmax is not -1, added per
 * input pixel in torchvision's order (RoI, bin row, bin column) whatever the thread count,
 * so results equal torchvision's CPU autograd bit for bit. params->spatial_scale_* are
 * validated but not used. Returns PYROI_OK or the first validation failure. Thread-safe. */
PYROI_API pyroi_status pyroi_roi_pool_backward_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const int64_t *batch_indices, int64_t num_rois,
    float *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params);
PYROI_API pyroi_status pyroi_roi_pool_backward_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const int64_t *batch_indices, int64_t num_rois,
    double *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params);

#ifdef __cplusplus
}
#endif

#endif /* PYROI_H */
