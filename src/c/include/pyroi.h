/*
 * pyroi.h - the complete public C API of pyroi, a library of region-of-interest (RoI)
 * pooling operators (RoIAlign, ...) for object detectors and instance segmenters.
 *
 * Conventions shared by every function:
 *   - Tensors are a pointer, an int64_t shape[4] and int64_t element strides[4] (strides
 *     count elements, not bytes; they may be negative or zero for inputs), so NCHW, NHWC
 *     and sliced views are passed without copies. Outputs must not overlap themselves
 *     (checked: PYROI_E_INVALID_STRIDES) nor any input of the call (not checkable: the
 *     caller's duty, as for memcpy; bindings check it, e.g. pyroi's out=).
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
 *   - Calls can be cancelled from another thread: params.cancel points to a pyroi_cancel
 *     token (see below); the call then returns PYROI_E_CANCELLED within milliseconds.
 *
 * Ownership: every pointer argument is borrowed for the duration of the call only. A call
 * reads its inputs, writes its outputs (and nothing else), keeps no pointer after it returns
 * and never frees caller memory. Strings returned by pyroi_version_string() and
 * pyroi_status_string() are static: never free or modify them.
 *
 * Status codes: an operator checks its arguments in this order and returns the first failure,
 *   1. the params struct: PYROI_E_NULL_POINTER (params NULL), PYROI_E_INVALID_OUTPUT_SIZE,
 *      PYROI_E_INVALID_SCALE, PYROI_E_INVALID_SAMPLING_RATIO, PYROI_E_INVALID_NUM_THREADS;
 *   2. sizes and tensors: PYROI_E_INVALID_SHAPE (num_rois or a shape entry negative, shapes
 *      that disagree, a channel count the op cannot split), PYROI_E_NULL_POINTER (a tensor
 *      with elements but no data), PYROI_E_INVALID_STRIDES (an offset overflows int64, an
 *      output overlaps itself);
 *   3. the RoIs: PYROI_E_NULL_POINTER / PYROI_E_INVALID_STRIDES for the box rows and batch
 *      indices, PYROI_E_INVALID_BATCH_INDEX, then PYROI_E_INVALID_BOX (non-finite coordinate,
 *      adaptive grid above PYROI_MAX_SAMPLING_GRID) and, for max-pooling backward passes,
 *      PYROI_E_INVALID_ARGMAX;
 *   4. scratch memory: PYROI_E_NO_MEMORY. It can come before the box and argmax checks of
 *      step 3 (some ops check box geometry while filling their first scratch table), never
 *      before the checks of steps 1-2 and the batch indices. Nothing is written either way.
 *   5. cancellation: PYROI_E_CANCELLED once the checks of steps 1-2 passed (a token set
 *      before the call gives it too, after every check; one set during the call may stop the
 *      checks of step 3, which are linear in the RoIs). The outputs are then unspecified.
 * A function's comment names the codes that differ from this list or are specific to it.
 * Every code is reachable; the C tests in tests/c/ trigger each one.
 *
 * Thread-safety: every function in this header is thread-safe. Concurrent calls may share
 * inputs (they are only read) but not outputs. A call that uses several threads starts and
 * joins them itself; if the system refuses a thread, the call does the work with fewer (the
 * result is the same). Concurrent writes: if another thread writes a call's inputs (boxes,
 * batch indices, argmax, data) while the call runs, the results (and the status) are
 * unspecified, but the call never reads or writes outside the buffers it was given: every
 * value that decides a size, an index or an address is read from the caller's memory once
 * (the RoIs are copied before use; an argmax entry is checked where it is used).
 *
 * Linking: CMake users write find_package(pyroi) and link pyroi::pyroi (shared, or static
 * when only the static library is installed) or pyroi::pyroi_static; others use
 * `pkg-config --cflags --libs pyroi` (the shared library, or the static one and its
 * dependencies when only that is installed). On Windows define PYROI_STATIC when linking the
 * static library (pyroi::pyroi_static and the static-only pyroi.pc do it).
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

/* Largest adaptive sampling grid, ceil(roi_size / pooled_size) samples per bin along one axis;
 * a larger one is PYROI_E_INVALID_BOX. Matches the 32-bit grid counters of the peers. (A fixed
 * sampling_ratio has the much smaller limit PYROI_MAX_SAMPLING_RATIO below.) */
#define PYROI_MAX_SAMPLING_GRID INT64_C(2147483647)

/* Largest fixed sampling_ratio (samples per bin along each axis) any operator accepts; larger
 * values fail with PYROI_E_INVALID_SAMPLING_RATIO. An adaptive grid spaces its samples at least
 * half a pixel apart, so the samples that land in the map stay proportional to the map whatever
 * the box size; a fixed ratio has no such bound: every sample of a box inside the map is read,
 * grid^2 per bin and channel, and the tap tables grow with grid * (pooled_height + pooled_width).
 * This cap keeps every call within grid^2 = 2^20 samples per output element (exact as a float32
 * count) and its scratch within 2^10 taps per bin and axis. Real models use 0 (adaptive) to 4. */
#define PYROI_MAX_SAMPLING_RATIO INT64_C(1024)

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
    /* sampling_ratio exceeds PYROI_MAX_SAMPLING_RATIO. */
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
     * [0, H * W) (RoIPool) or a winner code of its bin (the RoIAlign max modes). */
    PYROI_E_INVALID_ARGMAX = 11,
    /* The call was cancelled through params.cancel (pyroi_cancel) before it finished. */
    PYROI_E_CANCELLED = 12,
    /* A method or placement the operator does not have (crop_and_resize: method not
     * PYROI_CROP_BILINEAR / PYROI_CROP_NEAREST, placement unknown, or the box gradient of
     * nearest, which has none). */
    PYROI_E_INVALID_METHOD = 13,
    /* An offset given to a deformable pooling call is NaN or infinite. */
    PYROI_E_INVALID_OFFSET = 14
} pyroi_status;

/* The library's version as PYROI_VERSION_NUMBER; compare with the macro to detect a header
 * that does not match the linked library. Thread-safe. */
PYROI_API int pyroi_version_number(void);

/* The library's version as a static string "MAJOR.MINOR.PATCH". Thread-safe. */
PYROI_API const char *pyroi_version_string(void);

/* The instruction set whose code the vectorised loops run on this CPU, as a static string:
 * "x86-64-v4" (AVX-512), "avx2", "baseline" (the build's default target), or "baseline-only
 * build" (no other target compiled: outside x86-64 Linux with GCC or Clang, or
 * PYROI_PORTABLE_ONLY). The environment variable PYROI_MAX_VECTOR_ISA, read once (by the
 * library's first vector call or query), caps the level at one of the first three names (it
 * never raises it); a value that is none of them caps at the baseline, and this returns
 * "baseline (PYROI_MAX_VECTOR_ISA not understood: ...)". Thread-safe. */
PYROI_API const char *pyroi_vector_isa(void);

/* Size in bytes of one core's level-1 data cache (level 1) or level-2 cache (level 2), or of
 * the level-3 cache it shares (level 3, the whole of it), as the CPU reports it (CPUID on
 * x86-64): the sizes the kernels choose their block sizes, loop orders and prefetching by; 0
 * where the CPU or the build does not say (the kernels then assume common sizes) and for any
 * other level. Thread-safe. */
PYROI_API int64_t pyroi_cache_bytes(int level);

/* Scratch memory kept between calls. A call's scratch of 1 MiB or more (the lane-major
 * blocks of features read from NCHW, a float16 call's chunks) is mapped from the operating
 * system, which zeroes each fresh page on its first touch; that cost more than the kernels
 * filling them. So the largest such block freed at the end of a call stays mapped, for the
 * next call on any thread, if it is at most the limit in bytes (default 64 MiB); one block
 * at most, so the library holds at most the limit between calls. pyroi_set_scratch_cache_limit
 * sets the limit (0: keep nothing, and unmap what is kept) and returns the previous one,
 * pyroi_scratch_cache_limit returns it; pyroi_scratch_cache_bytes is the size of the block
 * kept now (0 if none; always 0 in a build without threads, which keeps nothing).
 * Thread-safe. */
PYROI_API size_t pyroi_set_scratch_cache_limit(size_t bytes);
PYROI_API size_t pyroi_scratch_cache_limit(void);
PYROI_API size_t pyroi_scratch_cache_bytes(void);

/* A static, human-readable description of a status code ("unknown status" for values outside
 * the enum). Never NULL. Thread-safe. */
PYROI_API const char *pyroi_status_string(pyroi_status status);

/* ------------------------------------------------------------------------------------------
 * Cooperative cancellation, shared by every operator: each params struct has a field
 * `pyroi_cancel *cancel` (default NULL: the call cannot be cancelled).
 *
 * A call's workers read `requested` before each piece of work they take (about a millisecond
 * of work each, by the library's estimate), and inside a piece after about every million
 * elementary operations (a sample or pixel times a channel) of its bins, so that a RoI of any
 * size -- sampling_ratio 1024, a RoI over a huge map -- stops within about a millisecond of
 * work. The calling thread's preparation before and around the
 * work (checking and copying the RoIs, grouping them by image, tables per RoI, converting
 * float16 tensors) reads it too, every few hundred RoIs or about a millisecond of work. Once
 * it reads nonzero, no new piece starts and the call returns PYROI_E_CANCELLED when the pieces
 * under way end: the outputs then hold unspecified values (old, new or partial), nothing
 * outside them is written and all scratch is freed. Any thread may set `requested` during
 * the call (a plain store of a nonzero int; the library only loads it); a token may serve
 * several calls, also concurrent ones, and is never reset by the library.
 *
 * poll (optional) lets the thread that made the call take part, e.g. to check for a signal,
 * a deadline or a user's request and then set token->requested. In a call of more than about
 * 20 ms of work, helper threads do the work while the calling thread calls poll(token) every
 * 20 ms (where threads are unavailable it works and polls between its pieces); during a long
 * preparation the calling thread calls it between its pieces, at most every 20 ms of that
 * call (each call keeps its own clock, whatever else the thread or the token serve). Short
 * calls never poll and start no thread for it. poll runs inside the call: it must not call
 * pyroi on the call's outputs, and should return quickly.
 * ---------------------------------------------------------------------------------------- */
typedef struct pyroi_cancel {
    /* Nonzero asks every call given this token to stop. Default 0. */
    volatile int requested;
    /* Called by the calling thread every 20 ms of a long call (see above), or NULL. Default
     * NULL. */
    void (*poll)(struct pyroi_cancel *token);
    /* For poll's own use; never read by the library. Default NULL. */
    void *poll_context;
} pyroi_cancel;

/* Sets every field of *token to its documented default (NULL is ignored). Thread-safe. */
PYROI_API void pyroi_cancel_init(pyroi_cancel *token);

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
    /* > 0: exactly that many samples per bin along each axis (at most
     * PYROI_MAX_SAMPLING_RATIO); <= 0: adaptive, ceil(roi_size / pooled_size) per axis.
     * Default -1. */
    int64_t sampling_ratio;
    /* Nonzero: shift box corners by -0.5 pixel (torchvision aligned=True, ONNX half_pixel).
     * Zero: no shift and RoI sizes forced to >= 1 (torchvision aligned=False). Default 0. */
    int aligned;
    /* Worker threads for this call; 0 lets the library choose. Results are bit-identical for
     * every value. Default 0. */
    int num_threads;
    /* Cancellation token (see pyroi_cancel), or NULL. Default NULL. */
    pyroi_cancel *cancel;
    /* Zero: torchvision's arithmetic, bit for bit. Nonzero (avg mode, forward and backward;
     * the max modes ignore it): each bin's samples are merged into one weight per pixel
     * before the map is read, so a pixel that several samples tap is read once. Fewer
     * operations where samples share pixels (adaptive sampling of large boxes); the result is
     * the same sum rounded differently, within (8 S + 16) u of the exact call on |input|
     * (S: the bin's samples, u: 2^-24 for float32, 2^-53 for float64; docs/semantics.md §3.7).
     * Still deterministic: bit-identical for every thread count. Default 0. */
    int merge_samples;
} pyroi_roi_align_params;

/* Sets every field of *params to its documented default (NULL is ignored). Thread-safe. */
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

/* RoIAlign max mode (mmcv's pool_mode="max"): each bin is the largest of its grid_h x grid_w
 * interpolated samples (positions, weights and tap sums exactly as in avg mode), visited in
 * row-major sample order; ties go to the first, NaN propagates (the first NaN wins). A sample
 * outside the map has the value 0 and no taps, as in mmcv. An empty bin (zero samples) gives 0
 * and argmax -1 (mmcv: -10000). argmax, when not NULL (strides argmax_strides, shape of the
 * output), receives the winning sample's index iy * grid_w + ix within its bin.
 * Returns PYROI_OK or the first validation failure. Thread-safe. */
PYROI_API pyroi_status pyroi_roi_align_max_forward_f32(
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_max_forward_f64(
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_align_params *params);

/* Backward of max mode: grad_input (overwritten) receives, for every bin whose argmax names an
 * in-map sample, g * w at that sample's four taps (no division), RoI by RoI in order as mmcv.
 * argmax is the forward's (each value -1 or a sample index of its bin, else
 * PYROI_E_INVALID_ARGMAX, checked before anything is written). Thread-safe. */
PYROI_API pyroi_status pyroi_roi_align_max_backward_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_max_backward_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
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

/* Backward pass of the average with respect to the box coordinates (torchvision's and mmcv's
 * compiled RoIAlign give none; docs/semantics.md §3.8). Avg mode only: the max modes have their
 * own entry points and no box gradient.
 *   grad_output     num_rois x C x pooled_height x pooled_width (C = input_shape[1]),
 *                   strides grad_output_strides.
 *   input           the forward's input: N x C x H x W (input_shape, input_strides).
 *   boxes, batch_indices   as the forward's.
 *   grad_boxes      num_rois rows of 4 values (d/dx1, d/dy1, d/dx2, d/dy2), row k at
 *                   grad_boxes + k * grad_box_row_stride (|stride| >= 4 when num_rois > 1,
 *                   else PYROI_E_INVALID_STRIDES); every row is written.
 * Each sample's position is affine in the box's edges; its value's derivative is the
 * sampler's own slope: along y, (1 - lx)(P[r1, c0] - P[r0, c0]) + lx (P[r1, c1] - P[r0, c1])
 * with the sample's tap rows r0, r1 and columns c0, c1 (x alike), 0 where the sampler clamps (a coordinate in [-1, 0) or >= extent - 1) and
 * outside the halo [-1, H] x [-1, W]; at a whole coordinate the slope of the cell
 * [floor, floor + 1] the forward reads. The adaptive grid (sampling_ratio <= 0) is held
 * constant (the result is piecewise: it jumps where ceil(size / pooled) does). aligned == 0:
 * an axis whose size was raised to 1 gives its far edge (x2 or y2) 0 and its near edge the
 * whole translation. params->merge_samples is ignored (the sums are formed per sample).
 * Accumulated per RoI in double, in a fixed order over bins, samples and channels, each
 * RoI's row written by one worker: bit-identical for every thread count.
 * Returns PYROI_OK or the first validation failure (the boxes' checks are the forward's).
 * Thread-safe. */
PYROI_API pyroi_status pyroi_roi_align_backward_boxes_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *grad_boxes, int64_t grad_box_row_stride,
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_backward_boxes_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *grad_boxes, int64_t grad_box_row_stride,
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
    /* Cancellation token (see pyroi_cancel), or NULL. Default NULL. */
    pyroi_cancel *cancel;
} pyroi_roi_pool_params;

/* Sets every field of *params to its documented default (NULL is ignored). Thread-safe. */
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
 * Outputs (and argmax) larger than a core's L2 cache (at least 1 MiB) in the C-contiguous
 * layout are written with streaming stores on x86-64: they go to memory without passing
 * through the caches.
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

/* The forward with an int32 argmax, torchvision's width (half the bytes of int64, which the
 * backward then reads): output and argmax values identical to pyroi_roi_pool_forward_*'s.
 * When argmax is not NULL, planes of more than 2^31 pixels (H * W) are refused with
 * PYROI_E_INVALID_SHAPE: an int32 cannot index them. */
PYROI_API pyroi_status pyroi_roi_pool_forward_i32_f32(
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *output, const int64_t output_strides[4],
    int32_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_pool_params *params);
PYROI_API pyroi_status pyroi_roi_pool_forward_i32_f64(
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *output, const int64_t output_strides[4],
    int32_t *argmax, const int64_t argmax_strides[4],
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
/* The backward from an int32 argmax (pyroi_roi_pool_forward_i32_*'s, or torchvision's):
 * the same checks and results as pyroi_roi_pool_backward_*. */
PYROI_API pyroi_status pyroi_roi_pool_backward_i32_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const int32_t *argmax, const int64_t argmax_strides[4],
    const int64_t *batch_indices, int64_t num_rois,
    float *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params);
PYROI_API pyroi_status pyroi_roi_pool_backward_i32_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const int32_t *argmax, const int64_t argmax_strides[4],
    const int64_t *batch_indices, int64_t num_rois,
    double *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params);

/* Backward pass from the forward's input instead of its argmax: each bin's winner is found
 * again from the input (the forward's windows and rule: the first maximum in row-major
 * order, NaN never wins, -1 for an empty bin or one with no pixel above -FLT_MAX), so the
 * call reads grad_output and the (small, cache-resident) map, not an argmax as large as
 * grad_output, and a training layer need not keep the argmax.
 *   grad_output     num_rois x C x pooled_height x pooled_width, strides grad_output_strides
 *                   (read only: broadcast strides are fine).
 *   input           the forward's input, N x C x H x W (input_shape, input_strides).
 *   boxes, batch_indices, params   as given to the forward.
 *   grad_input      tensor of input_shape with strides grad_input_strides; overwritten.
 * Results equal pyroi_roi_pool_backward_* fed the forward's argmax bit for bit (and so
 * torchvision's CPU autograd), whatever the thread count. Where the map is too large for the
 * lane-major scratch or the RoIs' bins are few next to its pixels, the call makes the argmax
 * into a temporary (int64, plus the pooled values) and reads it back. Returns PYROI_OK or the
 * first validation failure (in the forward's order, then grad_input's checks; never
 * PYROI_E_INVALID_ARGMAX). Thread-safe. */
PYROI_API pyroi_status pyroi_roi_pool_backward_from_input_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *grad_input, const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params);
PYROI_API pyroi_status pyroi_roi_pool_backward_from_input_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *grad_input, const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params);

/* Whether a training layer should keep the forward's input rather than its argmax: sets
 * *pays to 1 when, on this CPU, a forward of num_rois RoIs on a map of input_shape without
 * an argmax (argmax NULL) followed by pyroi_roi_pool_backward_from_input_* is
 * expected to take less time than the forward with an argmax followed by
 * pyroi_roi_pool_backward_* (the argmax need not be kept either), else to 0. The rule reads
 * the shapes, params' pooled size and the CPU's L2 cache size (the from-input backward pays
 * while one 32-channel float32 image block, 128 bytes a pixel, fits it; docs/performance.md),
 * the same for every dtype. Returns PYROI_OK, PYROI_E_NULL_POINTER (input_shape, params or
 * pays NULL), PYROI_E_INVALID_SHAPE (a negative entry or num_rois) or params' own check. */
PYROI_API pyroi_status pyroi_roi_pool_backward_from_input_pays(
    const int64_t input_shape[4], int64_t num_rois, const pyroi_roi_pool_params *params,
    int *pays);

/* ------------------------------------------------------------------------------------------
 * Position-sensitive RoI pooling (R-FCN's PSRoIPool, Light-Head R-CNN's PSRoIAlign), as
 * torchvision.ops.ps_roi_pool and torchvision.ops.ps_roi_align.
 *
 * The input has C = C_out * pooled_height * pooled_width channels, and output bin (ph, pw) of
 * output channel c_out reads only input channel
 *     c_in = (c_out * pooled_height + ph) * pooled_width + pw.
 * Outputs are num_rois x C_out x pooled_height x pooled_width; a C that is not a multiple of
 * pooled_height * pooled_width is PYROI_E_INVALID_SHAPE. Every other convention (tensors,
 * boxes, batch indices, validation before any access) is the one described at the top.
 * ---------------------------------------------------------------------------------------- */
typedef struct pyroi_ps_roi_align_params {
    /* Output bins per RoI along y and x; both > 0. Default 1. */
    int64_t pooled_height;
    int64_t pooled_width;
    /* Factors from box coordinates to feature-map coordinates, >= 0 and finite. torchvision's
     * single spatial_scale sets both. Default 1.0. */
    double spatial_scale_h;
    double spatial_scale_w;
    /* > 0: exactly that many samples per bin along each axis (at most
     * PYROI_MAX_SAMPLING_RATIO); <= 0: adaptive, ceil(roi_size / pooled_size) per axis.
     * Default -1. */
    int64_t sampling_ratio;
    /* Worker threads for this call; 0 lets the library choose. Results are bit-identical for
     * every value. Default 0. */
    int num_threads;
    /* Cancellation token (see pyroi_cancel), or NULL. Default NULL. */
    pyroi_cancel *cancel;
} pyroi_ps_roi_align_params;

/* Sets every field of *params to its documented default (NULL is ignored). Thread-safe. */
PYROI_API void pyroi_ps_roi_align_params_init(pyroi_ps_roi_align_params *params);

/* Position-sensitive RoIAlign forward (average), as torchvision.ops.ps_roi_align.
 * Each bin is the mean of grid_h * grid_w bilinear samples of its input channel c_in, with
 * the sampler and sample positions of RoIAlign in aligned mode: box corners shifted by -0.5
 * pixel after scaling, no minimum RoI size; an inverted box with a fixed sampling_ratio walks
 * its bins backwards (a mirrored crop).
 *   input           N x C x H x W tensor (input_shape, input_strides in elements),
 *                   C a multiple of pooled_height * pooled_width.
 *   boxes           num_rois rows of (x1, y1, x2, y2), row k at boxes + k * box_row_stride.
 *   batch_indices   num_rois int64 values in [0, N).
 *   output          num_rois x (C / (pooled_height * pooled_width)) x pooled_height x
 *                   pooled_width, strides output_strides; every element is written.
 * Results equal torchvision 0.29's CPU kernel bit for bit for finite data, except where its
 * sample count grid_h * grid_w is not positive (adaptive sampling of a box with zero size,
 * or inverted on exactly one axis): torchvision divides an empty sum by that count and
 * returns NaN (count 0) or -0.0 (negative count); pyroi returns +0.0 there, as for a box
 * inverted on both axes.
 * Returns PYROI_OK or the first validation failure (PYROI_E_INVALID_SHAPE also for the
 * channel count). Thread-safe. */
PYROI_API pyroi_status pyroi_ps_roi_align_forward_f32(
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *output, const int64_t output_strides[4],
    const pyroi_ps_roi_align_params *params);
PYROI_API pyroi_status pyroi_ps_roi_align_forward_f64(
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *output, const int64_t output_strides[4],
    const pyroi_ps_roi_align_params *params);

/* Position-sensitive RoIAlign backward: the gradient with respect to the input.
 *   grad_output     num_rois x (C / (pooled_height * pooled_width)) x pooled_height x
 *                   pooled_width (C = grad_input_shape[1]), strides grad_output_strides.
 *   grad_input      tensor of grad_input_shape (N, C, H, W) and grad_input_strides; it is
 *                   overwritten (zeroed, then accumulated), not added to.
 * Each input pixel receives its contributions in torchvision's order (RoI, sample, tap), so
 * float32 results equal torchvision's CPU autograd bit for bit for finite data; a RoI without
 * samples contributes nothing (as in torchvision). The exact adjoint of the forward.
 * Returns PYROI_OK or the first validation failure. Thread-safe. */
PYROI_API pyroi_status pyroi_ps_roi_align_backward_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_ps_roi_align_params *params);
PYROI_API pyroi_status pyroi_ps_roi_align_backward_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_ps_roi_align_params *params);

/* As pyroi_roi_align_find_invalid_roi_*, for the ps_roi_align entry points: the first RoI
 * they would reject (PYROI_E_INVALID_BATCH_INDEX or PYROI_E_INVALID_BOX) in *failed_roi, or
 * PYROI_OK with *failed_roi = -1. Thread-safe. */
PYROI_API pyroi_status pyroi_ps_roi_align_find_invalid_roi_f32(
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_ps_roi_align_params *params, int64_t *failed_roi);
PYROI_API pyroi_status pyroi_ps_roi_align_find_invalid_roi_f64(
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_ps_roi_align_params *params, int64_t *failed_roi);

typedef struct pyroi_ps_roi_pool_params {
    /* Output bins per RoI along y and x; both > 0. Default 1. */
    int64_t pooled_height;
    int64_t pooled_width;
    /* Factors from box coordinates to feature-map coordinates, >= 0 and finite. torchvision's
     * single spatial_scale sets both. Default 1.0. */
    double spatial_scale_h;
    double spatial_scale_w;
    /* Worker threads for this call; 0 lets the library choose. Results are bit-identical for
     * every value. Default 0. */
    int num_threads;
    /* Cancellation token (see pyroi_cancel), or NULL. Default NULL. */
    pyroi_cancel *cancel;
} pyroi_ps_roi_pool_params;

/* Sets every field of *params to its documented default (NULL is ignored). Thread-safe. */
PYROI_API void pyroi_ps_roi_pool_params_init(pyroi_ps_roi_pool_params *params);

/* Position-sensitive RoIPool forward (average over quantised bins), as
 * torchvision.ops.ps_roi_pool. Box corners are scaled in the tensor's dtype and rounded half
 * away from zero to whole pixels (s, e); the RoI size is max(e - s, 1) (no "+ 1", unlike
 * RoIPool); bin (ph, pw) spans rows floor(ph * bin_h) + s_y ... ceil((ph + 1) * bin_h) + s_y
 * (columns alike), clamped to [0, H - 1] x [0, W - 1] - so the last row and column of the
 * map are never read, as in torchvision - and averages its input channel over that window,
 * row by row; an empty window gives 0.
 *   input, boxes, batch_indices, output: as pyroi_ps_roi_align_forward_*.
 * Results equal torchvision 0.29's CPU kernel bit for bit. Rounded coordinates beyond
 * +-2^61 pixels saturate there (torchvision's 32-bit conversion overflows past 2^31).
 * Returns PYROI_OK or the first validation failure (PYROI_E_INVALID_BOX for a coordinate
 * that is not finite, also after scaling); never PYROI_E_NO_MEMORY. Thread-safe. */
PYROI_API pyroi_status pyroi_ps_roi_pool_forward_f32(
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *output, const int64_t output_strides[4],
    const pyroi_ps_roi_pool_params *params);
PYROI_API pyroi_status pyroi_ps_roi_pool_forward_f64(
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *output, const int64_t output_strides[4],
    const pyroi_ps_roi_pool_params *params);

/* Position-sensitive RoIPool backward, equal to torchvision's CPU autograd (bit for bit),
 * which is NOT the adjoint of its forward at the map's far border: each bin spreads
 * grad / area evenly over its window clamped to [0, H] x [0, W] (the forward clamps to
 * H - 1 and W - 1), and box corners are rounded with float32 roundf even for float64 data
 * (the product coordinate * scale is narrowed to float first). Contributions reach each
 * input pixel in RoI order.
 *   grad_output, grad_input: as pyroi_ps_roi_align_backward_*; grad_input is overwritten.
 * Returns PYROI_OK or the first validation failure; never PYROI_E_NO_MEMORY. Thread-safe. */
PYROI_API pyroi_status pyroi_ps_roi_pool_backward_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_ps_roi_pool_params *params);
PYROI_API pyroi_status pyroi_ps_roi_pool_backward_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_ps_roi_pool_params *params);

/* The first RoI the ps_roi_pool entry points would reject (PYROI_E_INVALID_BATCH_INDEX or
 * PYROI_E_INVALID_BOX) in *failed_roi, or PYROI_OK with *failed_roi = -1; other failures
 * return their status with *failed_roi = -1. For error reporting. Thread-safe. */
PYROI_API pyroi_status pyroi_ps_roi_pool_find_invalid_roi_f32(
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images,
    const pyroi_ps_roi_pool_params *params, int64_t *failed_roi);
PYROI_API pyroi_status pyroi_ps_roi_pool_find_invalid_roi_f64(
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images,
    const pyroi_ps_roi_pool_params *params, int64_t *failed_roi);

/* ------------------------------------------------------------------------------------------
 * Precise RoI Pooling (PrRoIPool, IoU-Net), as mmcv.ops.prroi_pool (docs/semantics.md §12).
 *
 * The feature plane is taken as the zero-padded bilinear surface
 *     f(y, x) = sum_i sum_j P[i, j] * tent(y - i) * tent(x - j),  tent(u) = max(0, 1 - |u|),
 * pixels outside the map being 0 (the surface fades to 0 over the pixel beyond the border).
 * Box corners are scaled (in double) by the spatial scales, without a half-pixel shift and
 * without "+ 1"; the RoI's size is max(x2' - x1', 0) by max(y2' - y1', 0), split into
 * pooled_height x pooled_width equal bins. Output bin (ph, pw) is the exact integral of f over
 * the bin divided by the bin's area; a bin of zero area gives 0. No sampling grid: the result
 * is continuous (C^1 away from a zero-size box) in the box coordinates, so the box gradient
 * below exists. A box is rejected (PYROI_E_INVALID_BOX) when a coordinate, a scaled
 * coordinate or a scaled size is not finite; a box of any finite size costs at most the map's
 * pixels per bin and channel (the rows and columns a bin reaches are clipped to the map).
 * Every other convention is the one described at the top.
 * ---------------------------------------------------------------------------------------- */
typedef struct pyroi_prroi_pool_params {
    /* Output bins per RoI along y and x; both > 0. Default 1. */
    int64_t pooled_height;
    int64_t pooled_width;
    /* Factors from box coordinates to feature-map coordinates, >= 0 and finite. mmcv's
     * single spatial_scale sets both. Default 1.0. */
    double spatial_scale_h;
    double spatial_scale_w;
    /* Worker threads for this call; 0 lets the library choose. Results are bit-identical for
     * every value. Default 0. */
    int num_threads;
    /* Cancellation token (see pyroi_cancel), or NULL. Default NULL. */
    pyroi_cancel *cancel;
} pyroi_prroi_pool_params;

/* Sets every field of *params to its documented default (NULL is ignored). Thread-safe. */
PYROI_API void pyroi_prroi_pool_params_init(pyroi_prroi_pool_params *params);

/* PrRoIPool forward.
 *   input           N x C x H x W tensor (input_shape, input_strides in elements).
 *   boxes           num_rois rows of (x1, y1, x2, y2), row k at boxes + k * box_row_stride.
 *   batch_indices   num_rois int64 values in [0, N).
 *   output          num_rois x C x pooled_height x pooled_width, strides output_strides;
 *                   every element is written.
 * Each bin is sum_i sum_j P[i, j] * wy(i) * wx(j), with wy(i) the integral of tent(y - i)
 * over the bin's rows divided by the bin's height (wx alike), summed row by row; weights in
 * double, the sums in the tensor's dtype. Matches mmcv's CUDA kernel to rounding.
 * Returns PYROI_OK or the first validation failure. Thread-safe. */
PYROI_API pyroi_status pyroi_prroi_pool_forward_f32(
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *output, const int64_t output_strides[4],
    const pyroi_prroi_pool_params *params);
PYROI_API pyroi_status pyroi_prroi_pool_forward_f64(
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *output, const int64_t output_strides[4],
    const pyroi_prroi_pool_params *params);

/* PrRoIPool backward with respect to the input: the exact adjoint of the forward,
 * grad_input[n, c, i, j] = sum over the RoIs k of image n and their bins of
 * grad_output[k, c, ph, pw] * wy(i) * wx(j).
 *   grad_output     num_rois x C x pooled_height x pooled_width (C = grad_input_shape[1]),
 *                   strides grad_output_strides.
 *   grad_input      tensor of grad_input_shape (N, C, H, W) and grad_input_strides; it is
 *                   overwritten (zeroed, then accumulated), not added to.
 * The work is split by channels, each accumulated in RoI order, so results are bit-identical
 * for every thread count. Returns PYROI_OK or the first validation failure. Thread-safe. */
PYROI_API pyroi_status pyroi_prroi_pool_backward_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_prroi_pool_params *params);
PYROI_API pyroi_status pyroi_prroi_pool_backward_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_prroi_pool_params *params);

/* PrRoIPool backward with respect to the box coordinates (the gradient IoU-Net, ATOM and DiMP
 * refine boxes with).
 *   grad_output     num_rois x C x pooled_height x pooled_width (C = input_shape[1]).
 *   input           the forward's input: N x C x H x W (input_shape, input_strides).
 *   boxes, batch_indices   as the forward's.
 *   grad_boxes      num_rois rows of 4 values (d/dx1, d/dy1, d/dx2, d/dy2), row k at
 *                   grad_boxes + k * grad_box_row_stride (|stride| >= 4 when num_rois > 1,
 *                   else PYROI_E_INVALID_STRIDES); every row is written.
 * With a bin's edges ya = y1' + ph * bh and yb = ya + bh (xa, xb alike, bh = roi_h / PH) and
 * its output o: do/dyb = (mean of f along the edge y = yb - o) / bh and do/dya =
 * (o - mean of f along y = ya) / bh (x alike), taken to the box by the chain rule through the
 * affine edges and the spatial scale. A RoI of zero width or height (x2' <= x1' or y2' <= y1')
 * gets 0 (its size is clamped there: mmcv's rule). Accumulated per RoI in double over the
 * channels and bins in order: bit-identical for every thread count.
 * Returns PYROI_OK or the first validation failure. Thread-safe. */
PYROI_API pyroi_status pyroi_prroi_pool_backward_boxes_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *grad_boxes, int64_t grad_box_row_stride,
    const pyroi_prroi_pool_params *params);
PYROI_API pyroi_status pyroi_prroi_pool_backward_boxes_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *grad_boxes, int64_t grad_box_row_stride,
    const pyroi_prroi_pool_params *params);

/* The first RoI the prroi_pool entry points would reject (PYROI_E_INVALID_BATCH_INDEX or
 * PYROI_E_INVALID_BOX) in *failed_roi, or PYROI_OK with *failed_roi = -1; other failures
 * return their status with *failed_roi = -1. For error reporting. Thread-safe. */
PYROI_API pyroi_status pyroi_prroi_pool_find_invalid_roi_f32(
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images,
    const pyroi_prroi_pool_params *params, int64_t *failed_roi);
PYROI_API pyroi_status pyroi_prroi_pool_find_invalid_roi_f64(
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images,
    const pyroi_prroi_pool_params *params, int64_t *failed_roi);

/* ------------------------------------------------------------------------------------------
 * Deformable RoI pooling (mmcv's DeformRoIPool, and with a mask its ModulatedDeformRoIPool;
 * docs/semantics.md §14).
 *
 * Aligned RoIAlign - box corners scaled and shifted by half a pixel, no minimum RoI size, an
 * adaptive grid of ceil(roi_size / pooled_size) samples per bin and axis unless
 * sampling_ratio > 0, each bin the mean of its in-map samples over count = max(grid_h *
 * grid_w, 1), the sampler of the rest of the family (-1 <= coordinate <= extent, clamped into
 * the map) - in which bin (ph, pw) of RoI k is translated as a whole by
 *     dx = (gamma * roi_w) * offset[k, 0, ph, pw],   dy = (gamma * roi_h) * offset[k, 1, ph, pw]
 * (roi_w = x2 * s - x1 * s, roi_h alike, unclamped; evaluated in the tensor's dtype in this
 * order, then added to the RoI's start: with zero offsets the result is
 * pyroi_roi_align_forward's with aligned = 1, bit for bit), and, when a mask is given,
 * multiplied by mask[k, 0, ph, pw] (after the mean).
 *   offset   num_rois x 2 x pooled_height x pooled_width (offset_strides), or NULL: no
 *            translation. Every offset is read once (copied); a value that is not finite
 *            fails with PYROI_E_INVALID_OFFSET. A finite offset of any size is accepted: a
 *            bin moved off the map gives 0.
 *   mask     num_rois x 1 x pooled_height x pooled_width (mask_strides), or NULL: 1.
 * ---------------------------------------------------------------------------------------- */
typedef struct pyroi_deform_roi_pool_params {
    /* Output bins per RoI along y and x; both > 0. Default 1. */
    int64_t pooled_height;
    int64_t pooled_width;
    /* Factors from box coordinates to feature-map coordinates, >= 0 and finite; mmcv's
     * single spatial_scale sets both. Default 1.0. */
    double spatial_scale_h;
    double spatial_scale_w;
    /* Samples per bin and axis: > 0 fixed (at most PYROI_MAX_SAMPLING_RATIO), <= 0 adaptive.
     * Default 0. */
    int64_t sampling_ratio;
    /* The offsets' factor (mmcv's gamma); finite, else PYROI_E_INVALID_SCALE. Default 0.1. */
    double gamma;
    /* Worker threads for this call; 0 lets the library choose. Results are bit-identical for
     * every value. Default 0. */
    int num_threads;
    /* Cancellation token (see pyroi_cancel), or NULL. Default NULL. */
    pyroi_cancel *cancel;
} pyroi_deform_roi_pool_params;

/* Sets every field of *params to its documented default (NULL is ignored). Thread-safe. */
PYROI_API void pyroi_deform_roi_pool_params_init(pyroi_deform_roi_pool_params *params);

/* Deformable RoI pooling forward.
 *   input           N x C x H x W tensor (input_shape, input_strides in elements).
 *   boxes           num_rois rows of (x1, y1, x2, y2), row k at boxes + k * box_row_stride.
 *   batch_indices   num_rois int64 values in [0, N).
 *   offset, mask    as above (NULL: none).
 *   output          num_rois x C x pooled_height x pooled_width, strides output_strides;
 *                   every element is written.
 * Returns PYROI_OK or the first validation failure (PYROI_E_INVALID_SHAPE also for an offset
 * or mask of another shape). Thread-safe. */
PYROI_API pyroi_status pyroi_deform_roi_pool_forward_f32(
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    const float *offset, const int64_t offset_strides[4],
    const float *mask, const int64_t mask_strides[4],
    float *output, const int64_t output_strides[4],
    const pyroi_deform_roi_pool_params *params);
PYROI_API pyroi_status pyroi_deform_roi_pool_forward_f64(
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    const double *offset, const int64_t offset_strides[4],
    const double *mask, const int64_t mask_strides[4],
    double *output, const int64_t output_strides[4],
    const pyroi_deform_roi_pool_params *params);

/* Deformable RoI pooling backward with respect to the input: the exact adjoint of the
 * forward for fixed offsets and mask, grad_input[n, c, i, j] = sum over the RoIs k of image n,
 * their bins and samples of (grad_output[k, c, ph, pw] * mask) * w / count, w the sample's
 * bilinear weight of pixel (i, j) (RoIAlign's order: RoI, bin, sample, tap).
 *   grad_output     num_rois x C x pooled_height x pooled_width (C = grad_input_shape[1]).
 *   grad_input      grad_input_shape (N, C, H, W), grad_input_strides; overwritten (zeroed,
 *                   then accumulated), not added to.
 * Split by channels, each accumulated in RoI order: bit-identical for every thread count.
 * Returns PYROI_OK or the first validation failure. Thread-safe. */
PYROI_API pyroi_status pyroi_deform_roi_pool_backward_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    const float *offset, const int64_t offset_strides[4],
    const float *mask, const int64_t mask_strides[4],
    float *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_deform_roi_pool_params *params);
PYROI_API pyroi_status pyroi_deform_roi_pool_backward_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    const double *offset, const int64_t offset_strides[4],
    const double *mask, const int64_t mask_strides[4],
    double *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_deform_roi_pool_params *params);

/* Deformable RoI pooling backward with respect to the offsets and the mask.
 *   grad_output     num_rois x C x pooled_height x pooled_width (C = input_shape[1]).
 *   input           the forward's input (input_shape, input_strides).
 *   offset, mask    the forward's (NULL: none; a NULL offset is zero offsets here).
 *   grad_offset     num_rois x 2 x pooled_height x pooled_width (grad_offset_strides), or
 *                   NULL: not computed. grad_offset[k, 0, ph, pw] = (gamma * roi_w / count) *
 *                   sum over the bin's in-map samples and the channels of (grad_output *
 *                   mask) * (the slope of the sampled value along x), the slope the exact one
 *                   of the sampler: 0 where it clamps (below 0, at or past extent - 1 along
 *                   that axis), the right-hand cell's at a whole coordinate (y alike).
 *   grad_mask       num_rois x 1 x pooled_height x pooled_width (grad_mask_strides), or NULL:
 *                   not computed. grad_mask[k, 0, ph, pw] = sum over the channels of
 *                   grad_output * (the bin's mean before the mask).
 * Both written in full (when given). Per channel a bin's slopes are summed in the tensor's
 * dtype in sample order; the channels' sums, weighted by grad_output, in double, 16 channels
 * (f64: 8) at a time, then those groups in order: a fixed order, bit-identical for every
 * thread count. Returns PYROI_OK or the first validation failure. Thread-safe. */
PYROI_API pyroi_status pyroi_deform_roi_pool_backward_offset_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    const float *offset, const int64_t offset_strides[4],
    const float *mask, const int64_t mask_strides[4],
    float *grad_offset, const int64_t grad_offset_strides[4],
    float *grad_mask, const int64_t grad_mask_strides[4],
    const pyroi_deform_roi_pool_params *params);
PYROI_API pyroi_status pyroi_deform_roi_pool_backward_offset_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    const double *offset, const int64_t offset_strides[4],
    const double *mask, const int64_t mask_strides[4],
    double *grad_offset, const int64_t grad_offset_strides[4],
    double *grad_mask, const int64_t grad_mask_strides[4],
    const pyroi_deform_roi_pool_params *params);

/* The first RoI the deform_roi_pool entry points would reject (PYROI_E_INVALID_BATCH_INDEX or
 * PYROI_E_INVALID_BOX, as pyroi_roi_align_find_invalid_roi_f32 with aligned = 1) in
 * *failed_roi, or PYROI_OK with *failed_roi = -1; other failures return their status with
 * *failed_roi = -1. For error reporting. Thread-safe. */
PYROI_API pyroi_status pyroi_deform_roi_pool_find_invalid_roi_f32(
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_deform_roi_pool_params *params, int64_t *failed_roi);
PYROI_API pyroi_status pyroi_deform_roi_pool_find_invalid_roi_f64(
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_deform_roi_pool_params *params, int64_t *failed_roi);

/* ------------------------------------------------------------------------------------------
 * RoIs given as rows [batch_index, c_1, ..., c_n] in the boxes' dtype (torchvision's (K, 5)
 * boxes, n = 4; rotated boxes n = 5): their batch indices as the int64 array the operators
 * take. Row k is at rows + k * row_stride, its n coordinates consecutive after the index.
 *
 * Fails with PYROI_E_INVALID_BATCH_INDEX when a batch index is not an integer in
 * [0, num_images): *failed_roi is the first RoI whose index is not an integer, else the first
 * whose index is out of range; with PYROI_E_INVALID_BOX when every index is valid and a
 * coordinate is not finite (*failed_roi: the first such RoI); also PYROI_E_NULL_POINTER,
 * PYROI_E_INVALID_SHAPE (num_rois < 0, coords_per_box < 1, num_images < 0) and
 * PYROI_E_INVALID_STRIDES. *failed_roi is -1 on success and for the other failures.
 * Thread-safe.
 * ---------------------------------------------------------------------------------------- */
PYROI_API pyroi_status pyroi_roi_rows_batch_indices_f32(const float *rows, int64_t num_rois,
                                                        int64_t row_stride,
                                                        int64_t coords_per_box,
                                                        int64_t num_images,
                                                        int64_t *batch_indices,
                                                        int64_t *failed_roi);
PYROI_API pyroi_status pyroi_roi_rows_batch_indices_f64(const double *rows, int64_t num_rois,
                                                        int64_t row_stride,
                                                        int64_t coords_per_box,
                                                        int64_t num_images,
                                                        int64_t *batch_indices,
                                                        int64_t *failed_roi);

/* ------------------------------------------------------------------------------------------
 * Multi-scale (FPN) level assignment, as torchvision.ops.MultiScaleRoIAlign's LevelMapper.
 *
 * Box k (x1, y1, x2, y2 in input-image pixels) goes to pyramid level
 *   clamp(floor(canonical_level + log2(sqrt(area) / canonical_scale) + eps), min_level,
 *         max_level)
 * evaluated in the boxes' dtype, and levels[k] receives that level minus min_level. A box of
 * negative area (inverted on one axis) has no level: levels[k] = -1 (torchvision leaves its
 * output row at zero the same way); a zero-area box goes to min_level.
 * ---------------------------------------------------------------------------------------- */
typedef struct pyroi_fpn_level_params {
    /* Levels of the first and the last feature map (k_min <= k_max); defaults 2 and 5. */
    int64_t min_level;
    int64_t max_level;
    /* Box side mapped to canonical_level (> 0, finite); defaults 224 and 4 (FPN paper). */
    double canonical_scale;
    double canonical_level;
    /* Added after the logarithm so that exact powers of two land on their level; 1e-6. */
    double eps;
} pyroi_fpn_level_params;

/* Sets every field of *params to its documented default (NULL is ignored). Thread-safe. */
PYROI_API void pyroi_fpn_level_params_init(pyroi_fpn_level_params *params);

/* Writes the level index (0 .. max_level - min_level, or -1) of num_rois boxes, row k at
 * boxes + k * box_row_stride, into levels. Fails with PYROI_E_NULL_POINTER,
 * PYROI_E_INVALID_SHAPE (num_rois < 0), PYROI_E_INVALID_STRIDES, PYROI_E_INVALID_SCALE
 * (canonical_scale not positive and finite, or a non-finite level or eps),
 * PYROI_E_INVALID_OUTPUT_SIZE (min_level > max_level) or PYROI_E_INVALID_BOX (a coordinate
 * not finite). Thread-safe. */
PYROI_API pyroi_status pyroi_fpn_levels_f32(const float *boxes, int64_t num_rois,
                                            int64_t box_row_stride,
                                            const pyroi_fpn_level_params *params,
                                            int64_t *levels);
PYROI_API pyroi_status pyroi_fpn_levels_f64(const double *boxes, int64_t num_rois,
                                            int64_t box_row_stride,
                                            const pyroi_fpn_level_params *params,
                                            int64_t *levels);

/* ------------------------------------------------------------------------------------------
 * Multi-scale RoIAlign, as torchvision.ops.MultiScaleRoIAlign: one call pools every RoI from
 * its level of a feature pyramid (forward) or gives the gradient of every level (backward).
 *
 * The pyramid has num_levels maps, level l (0 = min_level) at inputs[l] (forward) or
 * grad_inputs[l] (backward), of shape input_shapes[4 l .. 4 l + 3] (N, C, H_l, W_l: every level
 * has the same N and C) and element strides input_strides[4 l .. 4 l + 3], sampled with
 * spatial scale spatial_scales[l]. num_levels must be level_params->max_level -
 * level_params->min_level + 1 and at most PYROI_MAX_FPN_LEVELS (else PYROI_E_INVALID_SHAPE).
 * RoI k's level is the one pyroi_fpn_levels_* gives its box (level_params); it is pooled as
 * pyroi_roi_align_* would pool it from that level alone, with params (whose spatial scales are
 * replaced by the level's), into row k of the (num_rois, C, pooled_height, pooled_width)
 * output. A RoI of no level (negative area) gets a row of zeros and gives no gradient.
 * Results equal torchvision's MultiScaleRoIAlign bit for bit (forward, and its autograd
 * backward per level) wherever pyroi_roi_align_* equals torchvision's roi_align.
 * The arrays of the pyramid are read once; the maps of a backward must not overlap each other
 * or grad_output (the caller's duty, as for memcpy). Status codes: as pyroi_roi_align_* and
 * pyroi_fpn_levels_* (PYROI_E_INVALID_SCALE also for a bad level scale, PYROI_E_INVALID_SHAPE
 * for levels that differ in N or C); a box that is not finite is PYROI_E_INVALID_BOX. Nothing
 * is written on failure. Thread-safe. */
#define PYROI_MAX_FPN_LEVELS 16

PYROI_API pyroi_status pyroi_roi_align_levels_forward_f32(
    int64_t num_levels, const float *const *inputs, const int64_t *input_shapes,
    const int64_t *input_strides, const double *spatial_scales,
    const float *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    float *output, const int64_t output_strides[4],
    const pyroi_fpn_level_params *level_params, const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_levels_forward_f64(
    int64_t num_levels, const double *const *inputs, const int64_t *input_shapes,
    const int64_t *input_strides, const double *spatial_scales,
    const double *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    double *output, const int64_t output_strides[4],
    const pyroi_fpn_level_params *level_params, const pyroi_roi_align_params *params);

/* Backward: grad_inputs[l] (shapes and strides as the forward's maps) is overwritten with the
 * gradient of level l: zeroed, then the RoIs of that level added in their order, as
 * pyroi_roi_align_backward_* does for a level's RoIs alone. */
PYROI_API pyroi_status pyroi_roi_align_levels_backward_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    int64_t num_levels, float *const *grad_inputs, const int64_t *grad_input_shapes,
    const int64_t *grad_input_strides, const double *spatial_scales,
    const pyroi_fpn_level_params *level_params, const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_levels_backward_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    int64_t num_levels, double *const *grad_inputs, const int64_t *grad_input_shapes,
    const int64_t *grad_input_strides, const double *spatial_scales,
    const pyroi_fpn_level_params *level_params, const pyroi_roi_align_params *params);

/* ------------------------------------------------------------------------------------------
 * Rotated RoIAlign (average), as detectron2 ROIAlignRotated / mmcv roi_align_rotated.
 *
 * A rotated RoI is (cx, cy, w, h, angle): a w x h rectangle centred on (cx, cy) in input-image
 * pixels, turned by angle about its centre (counter-clockwise in image coordinates, i.e. with
 * y pointing down it is the rotation (y, x) -> (y cos - x sin, y sin + x cos), as detectron2).
 * Each output bin (ph, pw) is the mean of grid_h * grid_w bilinear samples taken at the centres
 * of a regular subdivision of the bin in the RoI's own frame, rotated into the map. Per RoI, in
 * the working type T (float or double), one rounding per operation, in this order:
 *   cx' = cx * sw - off,  cy' = cy * sh - off,  w' = w * sw,  h' = h * sh
 *           (sw, sh = spatial scales narrowed to T; off = 0.5 if aligned else 0)
 *   if not aligned: w' = max(w', 1), h' = max(h', 1)
 *   theta = angle_in_degrees ? (T)(angle * pi / 180, formed in double) : angle;
 *   if clockwise: theta = -theta;  c = (T)cos((double)theta), s = (T)sin((double)theta)
 *   bin_h = h' / PH, bin_w = w' / PW; grid = sampling_ratio > 0 ? sampling_ratio
 *           : ceil(h' / PH) (resp. ceil(w' / PW)); count = max(grid_h * grid_w, 1)
 *   yy = (-h'/2 + ph * bin_h) + ((iy + 0.5) * bin_h) / grid_h   (xx likewise with w', pw, ix)
 *   y = (yy * c - xx * s) + cy',  x = (yy * s + xx * c) + cx'
 * and the sample is read with the sampler of pyroi_roi_align (outside [-1, H] x [-1, W]: no
 * contribution). Samples are summed in (iy, ix) order and the sum divided by count.
 *
 * Relation to the peers (neither was runnable here; the order above is theirs, read from source):
 *   - detectron2 ROIAlignRotated = angle_in_degrees 1, aligned 1, clockwise 0 (the defaults).
 *   - mmcv roi_align_rotated(aligned, clockwise) = angle_in_degrees 0 with the same flags.
 *   - Both take spatial_scale as a float32 argument: in float64 they use (double)(float)scale;
 *     pass a float32-representable scale to reproduce them (pyroi uses the double given).
 *   - cos/sin are evaluated in double and narrowed to T. Whether the float32 kernels of the peers
 *     call cosf/sinf instead is unverified; the two can differ in the last ulp of c and s.
 *   - mmcv forms the adaptive grid with ceilf even for float64 (differs only when the narrowed
 *     quotient crosses an integer); pyroi uses ceil in T, as detectron2.
 *   - A sample outside the map contributes exactly nothing (the peers add 0 * input[b,c,0,0],
 *     which is NaN when that pixel is not finite).
 *   - The peers assert w' >= 0 and h' >= 0 in aligned mode; pyroi applies the formulas as
 *     written: an adaptive grid of a negative size is 0 (no samples: the bin pools 0), and a fixed
 *     sampling_ratio walks the samples backwards (a mirrored crop) -- the same results as
 *     pyroi_roi_align gives for inverted axis-aligned boxes.
 *   - With angle 0, a RoI equals the axis-aligned box (cx - w/2, cy - h/2, cx + w/2, cy + h/2) of
 *     pyroi_roi_align up to rounding (the two evaluate the sample coordinates in a different
 *     order; results are bit-identical when every intermediate is exact, e.g. dyadic boxes).
 *     In legacy mode (aligned 0) a size below 1 is widened about the centre here, about the
 *     first corner there.
 *   - Separate spatial_scale_h / spatial_scale_w scale the box in its own frame (w by the x
 *     scale, h by the y scale) and its centre per axis; the peers have one scale.
 *
 * Cost: samples are not separable, so each in-map sample's taps are computed once per RoI (and
 * reused by every channel). In each bin, the rows of samples whose two end points show that the
 * whole row misses the map, or whose local y lies outside the map's extent along the RoI's y
 * axis (widened by a bound on the rounding of the sample coordinates: 64 ulps of the largest
 * magnitude involved), are skipped by bisection, and within the other rows the in-map samples
 * are found by bisection (sample coordinates are monotone along a row and along a column, also
 * after rounding; every visited sample is still tested, so results are those of visiting every
 * sample). A RoI costs about
 *   PH * PW * 12 * log2(grid_h) + R * 8 * log2(grid_w) coordinate evaluations + C * S * 4 reads,
 * where S is the number of samples in [-1, H] x [-1, W] and R the number of rows not skipped.
 * Adaptive grids space samples more than 1/2 pixel apart along an axis whose bins are a pixel
 * or wider (one sample per bin otherwise), so S stays of the order of 4 (H + 3)(W + 3) plus the
 * bin count whatever the box size, and R of the order of PW * 2 * (H + W + 2 * margin) where
 * the margin is the rounding bound above (in float32 about 8e-6 of the box's side). Measured
 * on one core: a 10^9 x 10^9-pixel box at 45 degrees costs about 2 ms (it cost minutes before
 * the band test; a 10^8 one 10 s). Scratch memory is a fixed per-worker buffer.
 * ---------------------------------------------------------------------------------------- */
typedef struct pyroi_roi_align_rotated_params {
    /* Output bins per RoI along the RoI's height and width; both > 0. Default 1. */
    int64_t pooled_height;
    int64_t pooled_width;
    /* Factors from box coordinates to feature-map coordinates, >= 0 and finite: cy and h are
     * multiplied by spatial_scale_h, cx and w by spatial_scale_w. Default 1.0. */
    double spatial_scale_h;
    double spatial_scale_w;
    /* > 0: exactly that many samples per bin along each axis (at most
     * PYROI_MAX_SAMPLING_RATIO); <= 0: adaptive, ceil(size / pooled_size). Default 0. */
    int64_t sampling_ratio;
    /* Nonzero: shift the centre by -0.5 pixel (detectron2; mmcv aligned=True). Zero: no shift
     * and sizes forced to >= 1 (mmcv aligned=False). Default 1. */
    int aligned;
    /* Nonzero: the angle turns clockwise (theta = -angle; mmcv clockwise=True). Default 0. */
    int clockwise;
    /* Nonzero: angles are in degrees (detectron2); zero: in radians (mmcv). Default 1. */
    int angle_in_degrees;
    /* Worker threads for this call; 0 lets the library choose. Results are bit-identical for
     * every value. Default 0. */
    int num_threads;
    /* Cancellation token (see pyroi_cancel), or NULL. Default NULL. */
    pyroi_cancel *cancel;
} pyroi_roi_align_rotated_params;

/* Sets every field of *params to its documented default (detectron2's conventions); NULL
 * is ignored. Thread-safe. */
PYROI_API void pyroi_roi_align_rotated_params_init(pyroi_roi_align_rotated_params *params);

/* Forward pass.
 *   input           N x C x H x W tensor (input_shape, input_strides in elements).
 *   boxes           num_rois rows of (cx, cy, w, h, angle), row k at boxes + k * box_row_stride.
 *   batch_indices   num_rois int64 values in [0, N).
 *   output          num_rois x C x pooled_height x pooled_width, strides output_strides;
 *                   every element is written.
 * Returns PYROI_OK or the first validation failure: PYROI_E_NULL_POINTER,
 * PYROI_E_INVALID_SHAPE, PYROI_E_INVALID_STRIDES, PYROI_E_INVALID_OUTPUT_SIZE,
 * PYROI_E_INVALID_SCALE, PYROI_E_INVALID_SAMPLING_RATIO, PYROI_E_INVALID_NUM_THREADS,
 * PYROI_E_INVALID_BATCH_INDEX, PYROI_E_INVALID_BOX (a coordinate or the angle is not finite,
 * also after scaling or conversion to radians; an adaptive grid beyond PYROI_MAX_SAMPLING_GRID;
 * sample positions that overflow T), PYROI_E_NO_MEMORY. Thread-safe. */
PYROI_API pyroi_status pyroi_roi_align_rotated_forward_f32(
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *output, const int64_t output_strides[4],
    const pyroi_roi_align_rotated_params *params);
PYROI_API pyroi_status pyroi_roi_align_rotated_forward_f64(
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *output, const int64_t output_strides[4],
    const pyroi_roi_align_rotated_params *params);

/* Backward pass: the gradient with respect to the input.
 *   grad_output     num_rois x C x pooled_height x pooled_width (C = grad_input_shape[1]),
 *                   strides grad_output_strides.
 *   grad_input      tensor of grad_input_shape (N, C, H, W) and grad_input_strides; it is
 *                   overwritten (zeroed, then accumulated), not added to.
 * Each in-map sample adds (g * w) / (grid_h * grid_w) to each of its four taps (four separate
 * additions), per input pixel in the peers' order (RoI, bin, sample, tap), whatever the thread
 * count. Returns the statuses of the forward. Thread-safe. */
PYROI_API pyroi_status pyroi_roi_align_rotated_backward_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_rotated_params *params);
PYROI_API pyroi_status pyroi_roi_align_rotated_backward_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_rotated_params *params);

/* As pyroi_roi_align_find_invalid_roi_*, for rotated RoIs (5 coordinates per row): the first
 * RoI a forward or backward call with these arguments would reject, in *failed_roi, with
 * PYROI_E_INVALID_BATCH_INDEX or PYROI_E_INVALID_BOX; PYROI_OK and -1 when all are valid.
 * Thread-safe. */
PYROI_API pyroi_status pyroi_roi_align_rotated_find_invalid_roi_f32(
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_roi_align_rotated_params *params, int64_t *failed_roi);
PYROI_API pyroi_status pyroi_roi_align_rotated_find_invalid_roi_f64(
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_roi_align_rotated_params *params, int64_t *failed_roi);

/* ------------------------------------------------------------------------------------------
 * Compatibility front-ends (ONNX RoiAlign mode="max"; Ascend aclnnRoiAlignV2Backward
 * workspace form). Other front-ends (ONNX RoiAlign avg, ONNX MaxRoiPool, Ascend ROIPooling)
 * need no entry point of their own: they are pyroi_roi_align_forward_* and
 * pyroi_roi_pool_forward_* with the front-end's conventions (see the Python package).
 * ---------------------------------------------------------------------------------------- */

/* ONNX RoiAlign mode="max", exactly as onnxruntime 1.32 computes it (bit for bit, float32 and
 * float64): geometry, sampling grid and sample positions as pyroi_roi_align_forward_*
 * (params->aligned = 1 is ONNX "half_pixel", 0 is "output_half_pixel" / RoiAlign-10), but each
 * bin is a maximum over *weighted taps*, never over interpolated values:
 *   per sample:  t_k = w_k * P[tap_k] (k = 1..4, the bilinear weights and pixels of the
 *                sampler), v = M(M(M(t1, t2), t3), t4) with M(a, b) = a < b ? b : a;
 *                a sample outside [-1, H] x [-1, W] has v = 0 * P[0, 0] (onnxruntime stores
 *                its four weights as 0 at pixel 0): +-0, or NaN when P[0, 0] is not finite;
 *   per bin:     out = v of the first sample, then out = M(out, v) over the others in
 *                row-major sample order; no division; a bin with no samples is 0.
 * So the result is at most the interpolated maximum (a sample midway between four pixels
 * gives a quarter of the local peak) and, for negative data, a sample exactly on a pixel
 * yields -0.0, which beats every negative tap. These are onnxruntime's quirks, reproduced on
 * purpose (docs/semantics.md §4.1). Deviations: onnxruntime raises for an aligned RoI inverted on
 * exactly one axis with adaptive sampling (pyroi gives 0, as avg mode) and reads out of
 * bounds on an empty map (pyroi uses z = 0 when H * W = 0).
 * Arguments as pyroi_roi_align_forward_*. Returns PYROI_OK or the first validation failure.
 * Thread-safe; bit-identical for every thread count. */
PYROI_API pyroi_status pyroi_roi_align_onnx_max_forward_f32(
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_onnx_max_forward_f64(
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params);

/* ONNX RoiAlign mode="max" for training: the forward that also records each output's winner,
 * and the backward that follows it (a layer's forward, winners and backward; its lda_coeff is a
 * product the caller applies to the result, see examples/onnx_roi_align_layer.c).
 *
 * pyroi_roi_align_onnx_max_forward_argmax_*: output exactly as pyroi_roi_align_onnx_max_forward_*
 * (bit for bit) and, when argmax is not NULL (strides argmax_strides, the output's shape, not
 * overlapping it), the code of the term each output took: 4 * s + t for tap t of sample
 * s = iy * grid_w + ix of its bin (taps 0..3: (y_lo, x_lo), (y_lo, x_hi), (y_hi, x_lo),
 * (y_hi, x_hi), the sampler's pixels and weights w_t); -1 for a bin without samples. The
 * winner is the term M's fold kept, so:
 *   ties:      the first in fold order wins (taps in order, samples row-major; +0.0 and -0.0
 *              tie), so -0.0 from a weight-0 tap beating negative taps is that tap;
 *   NaN:       a NaN that starts a fold (the first tap of a sample, the bin's first sample)
 *              stays and is the winner; a NaN offered later never wins;
 *   out-of-map samples: their term 0 * P[0, 0] is tap 0 of the (first) such sample.
 * A RoI whose bins have more than 2^61 samples (codes would overflow) is PYROI_E_INVALID_BOX
 * when argmax is given. Thread-safe; bit-identical for every thread count.
 *
 * pyroi_roi_align_onnx_max_backward_*: the gradient of that forward. grad_input (overwritten)
 * receives g * w_t at the winning tap's pixel of every bin whose argmax is not -1: an
 * out-of-map winner adds g * 0 at pixel (0, 0) of its plane (its term is 0 * P[0, 0]; a
 * no-op for finite g, NaN for infinite or NaN g), as does an in-map weight-0 tap at its pixel.
 * Additions per input pixel in order RoI, bin row, bin column whatever the thread count (no
 * atomics), so the result is bit-identical for every thread count. argmax is the forward's:
 * each entry -1 or a code of its bin (< 4 * grid_h * grid_w), else PYROI_E_INVALID_ARGMAX,
 * checked before anything is written. Other arguments as pyroi_roi_align_max_backward_*.
 * Thread-safe. */
PYROI_API pyroi_status pyroi_roi_align_onnx_max_forward_argmax_f32(
    const float *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_onnx_max_forward_argmax_f64(
    const double *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_onnx_max_backward_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_onnx_max_backward_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params);

/* RoIAlign backward in the two-phase shape of aclnnRoiAlignV2Backward (query the workspace,
 * then call with it), for callers that manage memory themselves.
 *
 * pyroi_roi_align_backward_workspace_size_*: *workspace_size receives the bytes that
 * pyroi_roi_align_backward_with_workspace_* uses with the same boxes, batch indices,
 * grad_input_shape and params (the RoI tap tables, and the per-worker scratch blocks of the
 * loop order and worker count the call will choose; 0 when grad_input has no elements). The
 * arguments are validated as by the backward (boxes, batch indices, params, shape); on failure
 * *workspace_size is 0. Thread-safe.
 *
 * pyroi_roi_align_backward_with_workspace_*: exactly pyroi_roi_align_backward_* (same
 * arguments, validation, statuses and results, bit for bit), but every scratch byte comes from
 * workspace (any alignment; NULL only with workspace_size 0): it calls no allocator. A
 * workspace smaller than the query's answer still works as long as it holds the tap tables:
 * the call then uses fewer workers, or the direct loop order that needs no scratch (results are
 * the same for every loop order and thread count); if even the tap tables do not fit it
 * returns PYROI_E_NO_MEMORY before writing anything. With params->num_threads = 0 the worker
 * count follows the online processors at each call, so query again if that may change (a
 * stale, smaller answer only costs speed). The workspace must not be shared by concurrent
 * calls. Thread-safe otherwise. */
PYROI_API pyroi_status pyroi_roi_align_backward_workspace_size_f32(
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, const int64_t grad_input_shape[4],
    const pyroi_roi_align_params *params, size_t *workspace_size);
PYROI_API pyroi_status pyroi_roi_align_backward_workspace_size_f64(
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, const int64_t grad_input_shape[4],
    const pyroi_roi_align_params *params, size_t *workspace_size);
PYROI_API pyroi_status pyroi_roi_align_backward_with_workspace_f32(
    const float *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    float *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params, void *workspace, size_t workspace_size);
PYROI_API pyroi_status pyroi_roi_align_backward_with_workspace_f64(
    const double *grad_output, const int64_t grad_output_strides[4],
    const double *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    double *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params, void *workspace, size_t workspace_size);

/* ------------------------------------------------------------------------------------------
 * float16 (IEEE 754 binary16, passed as uint16_t bit patterns: C99 has no half type).
 *
 * Every operator has a float16 entry point: pyroi_<name>_f16 is pyroi_<name>_f32 on float16
 * tensors (same arguments, except that the tensors are uint16_t and the boxes float32 - widen
 * float16 boxes first, which is exact). Its result equals the float32 call's on the widened
 * data, rounded once to float16 (to nearest, ties to even; beyond 65504 infinity, NaN a
 * quiet NaN): every sum is accumulated in float32, in the float32 kernels' order, never in
 * half. An argmax (int64; int32 in RoIPool's _i32 forms) is the float32 call's, bit for bit.
 * How: the outputs of every operator are separable over channels (a position-sensitive
 * output channel reads PH * PW consecutive input channels), so the call runs the float32
 * kernel on chunks of channels, each widened exactly into float32 scratch and its result
 * rounded into the float16 tensor; a chunk holds what fits the level 2 caches of the call's
 * workers, at least 16 channels per worker, and a call makes at most 8 chunks. Memory: that
 * scratch (about the level 2 cache per worker, more for maps whose 16 planes exceed it or
 * with more than 8 chunks' worth of channels), never a float32 copy of a tensor;
 * PYROI_E_NO_MEMORY if it cannot be allocated.
 * Validation and statuses are those of the float32 calls, complete before the caller's
 * tensors are written, except for what only a later chunk reads: an invalid argmax entry
 * of a backward (PYROI_E_INVALID_ARGMAX) or a cancellation leave grad_input partly written.
 * Thread-safe; bit-identical for every thread count.
 * ---------------------------------------------------------------------------------------- */
PYROI_API pyroi_status pyroi_roi_align_forward_f16(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_backward_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_max_forward_f16(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_max_backward_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_onnx_max_forward_f16(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_onnx_max_forward_argmax_f16(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_onnx_max_backward_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_pool_forward_f16(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_pool_params *params);
PYROI_API pyroi_status pyroi_roi_pool_backward_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const int64_t *batch_indices, int64_t num_rois,
    uint16_t *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params);
PYROI_API pyroi_status pyroi_roi_pool_forward_i32_f16(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    int32_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_pool_params *params);
PYROI_API pyroi_status pyroi_roi_pool_backward_i32_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const int32_t *argmax, const int64_t argmax_strides[4],
    const int64_t *batch_indices, int64_t num_rois,
    uint16_t *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params);
/* The backward from the forward's float16 input (pyroi_roi_pool_backward_from_input_*),
 * input widened chunk by chunk as grad_output is: the float32 results, rounded once. */
PYROI_API pyroi_status pyroi_roi_pool_backward_from_input_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params);
PYROI_API pyroi_status pyroi_ps_roi_align_forward_f16(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    const pyroi_ps_roi_align_params *params);
PYROI_API pyroi_status pyroi_ps_roi_align_backward_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_ps_roi_align_params *params);
PYROI_API pyroi_status pyroi_ps_roi_pool_forward_f16(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    const pyroi_ps_roi_pool_params *params);
PYROI_API pyroi_status pyroi_ps_roi_pool_backward_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_ps_roi_pool_params *params);
PYROI_API pyroi_status pyroi_roi_align_rotated_forward_f16(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    const pyroi_roi_align_rotated_params *params);
PYROI_API pyroi_status pyroi_roi_align_rotated_backward_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_align_rotated_params *params);

/* PrRoIPool on float16 tensors (float32 boxes): the forward and the input backward in chunks
 * of channels through the float32 entry points, each result rounded once. (The box backward
 * has no float16 entry point: its sums run over every channel; widen to float32.) */
PYROI_API pyroi_status pyroi_prroi_pool_forward_f16(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    const pyroi_prroi_pool_params *params);
PYROI_API pyroi_status pyroi_prroi_pool_backward_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_prroi_pool_params *params);

/* The multi-level RoIAlign (pyroi_roi_align_levels_*) on a float16 pyramid, in the same
 * way: the channels every level shares run in chunks through the float32 entry points. */
PYROI_API pyroi_status pyroi_roi_align_levels_forward_f16(
    int64_t num_levels, const uint16_t *const *inputs, const int64_t *input_shapes,
    const int64_t *input_strides, const double *spatial_scales,
    const float *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    const pyroi_fpn_level_params *level_params, const pyroi_roi_align_params *params);
PYROI_API pyroi_status pyroi_roi_align_levels_backward_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    int64_t num_levels, uint16_t *const *grad_inputs, const int64_t *grad_input_shapes,
    const int64_t *grad_input_strides, const double *spatial_scales,
    const pyroi_fpn_level_params *level_params, const pyroi_roi_align_params *params);

/* target[i] = scale * source[i] rounded to float16, for i in [0, count): the product is formed
 * in float32 (it is the float32 result a float32 caller would hold), then rounded once to
 * float16 (to nearest, ties to even; overflow gives infinity, NaN stays NaN). This is how a
 * float16 gradient is scaled by a coefficient (the layers' lda_coeff) without a second
 * rounding. source and target must not overlap. PYROI_E_INVALID_SHAPE: count < 0;
 * PYROI_E_NULL_POINTER: a NULL array with count > 0. */
PYROI_API pyroi_status pyroi_scale_f32_to_f16(const float *source, int64_t count, float scale,
                                              uint16_t *target);

/* ------------------------------------------------------------------------------------------
 * Explaining one RoI: the geometry the operators use, for pictures, teaching and debugging
 * (pyroi.viz and `pyroi explain` draw from these). Each function evaluates one box with the
 * operator's own code - the same sampler (sample positions, in-map test, bilinear taps) and
 * the same RoIPool bin arithmetic as the forward and backward calls - so what is drawn is
 * what is computed. Nothing here reads a feature map: height and width are its size.
 * ---------------------------------------------------------------------------------------- */

/* One axis (rows or columns) of a RoIAlign sampling grid, as arrays the caller owns. Sample i
 * of bin b is entry b * grid + i (grid: the axis's samples per bin); capacity is the number
 * of entries each array holds (taps and weights hold two values per entry). edges, when not
 * NULL, receives the bins + 1 bin boundaries in feature-map pixels (bins: pooled_height for
 * rows, pooled_width for columns): bin b spans [edges[b], edges[b + 1]], whose samples sit at
 * the centres of grid equal parts (an inverted box has decreasing edges). */
typedef struct pyroi_roi_align_axis_samples_f32 {
    int64_t capacity; /* entries the arrays hold: at least bins * grid of the axis */
    float *coords;    /* sample coordinate in feature-map pixels (before clamping) */
    int64_t *taps;    /* pixels (lo, hi) the sample reads; (-1, -1) when not in the map */
    float *weights;   /* their weights (w_lo, w_hi), w_lo + w_hi = 1; (0, 0) not in the map */
    int8_t *in_map;   /* 1 when the coordinate is in [-1, extent] (the sample is read), else 0 */
    float *edges;     /* NULL, or bins + 1 bin boundaries */
} pyroi_roi_align_axis_samples_f32;
typedef struct pyroi_roi_align_axis_samples_f64 {
    int64_t capacity;
    double *coords;
    int64_t *taps;
    double *weights;
    int8_t *in_map;
    double *edges;
} pyroi_roi_align_axis_samples_f64;

/* The sampling grid RoIAlign (avg and max mode, forward and backward) uses for one box:
 *   box       x1, y1, x2, y2 in input-image pixels (one row of the operators' boxes).
 *   height, width   the feature map's H and W (>= 0).
 *   params    as for pyroi_roi_align_forward_* (num_threads is validated, not used).
 *   grid      receives the samples per bin along y (grid[0]) and x (grid[1]); 0 on an axis
 *             with no samples (an aligned, inverted box with adaptive sampling).
 * Returns PYROI_OK; PYROI_E_NULL_POINTER / PYROI_E_INVALID_OUTPUT_SIZE / _SCALE /
 * _SAMPLING_RATIO / _NUM_THREADS for params; PYROI_E_INVALID_SHAPE for a negative height or
 * width; PYROI_E_NULL_POINTER for a NULL box or grid; PYROI_E_INVALID_BOX as the forward
 * (non-finite coordinate, adaptive grid above PYROI_MAX_SAMPLING_GRID). Nothing is written on
 * failure. Thread-safe. */
PYROI_API pyroi_status pyroi_roi_align_sample_grid_f32(
    const float box[4], int64_t height, int64_t width, const pyroi_roi_align_params *params,
    int64_t grid[2]);
PYROI_API pyroi_status pyroi_roi_align_sample_grid_f64(
    const double box[4], int64_t height, int64_t width, const pyroi_roi_align_params *params,
    int64_t grid[2]);

/* Every sample of one box's RoIAlign grid, per axis: rows receives the pooled_height * grid[0]
 * y samples, cols the pooled_width * grid[1] x samples (grid as pyroi_roi_align_sample_grid_*),
 * each with its coordinate, whether it lies in [-1, extent] and, if so, its two taps and
 * weights - the values the kernels use. Sample (iy, ix) of bin (ph, pw) reads the four pixels
 * (row tap, column tap) with weights row weight * column weight, when both its y and x samples
 * are in the map; an avg bin is the sum over its samples divided by max(grid[0] * grid[1], 1).
 * Statuses as pyroi_roi_align_sample_grid_*, then PYROI_E_NULL_POINTER (rows or cols NULL, or
 * an array NULL on an axis with samples) and PYROI_E_INVALID_SHAPE (a capacity below the
 * axis's sample count). Nothing is written on failure. Thread-safe. */
PYROI_API pyroi_status pyroi_roi_align_sample_axes_f32(
    const float box[4], int64_t height, int64_t width, const pyroi_roi_align_params *params,
    pyroi_roi_align_axis_samples_f32 *rows, pyroi_roi_align_axis_samples_f32 *cols);
PYROI_API pyroi_status pyroi_roi_align_sample_axes_f64(
    const double box[4], int64_t height, int64_t width, const pyroi_roi_align_params *params,
    pyroi_roi_align_axis_samples_f64 *rows, pyroi_roi_align_axis_samples_f64 *cols);

/* The quantised bins RoIPool (pyroi_roi_pool_forward_*) uses for one box:
 *   box         x1, y1, x2, y2 in input-image pixels.
 *   height, width   the feature map's H and W (>= 0).
 *   params      as for pyroi_roi_pool_forward_* (num_threads is validated, not used).
 *   roi_pixels  NULL, or receives the rounded RoI before clipping as pixel ranges: first row,
 *               end row (exclusive), first column, end column (exclusive); it spans at
 *               least one pixel per axis.
 *   row_edges   2 * pooled_height values: bin ph covers rows [row_edges[2 ph],
 *               row_edges[2 ph + 1]) of the map, clipped to [0, H] (empty when equal).
 *   col_edges   2 * pooled_width values, the same for columns.
 * Bin (ph, pw) of the forward is the maximum over rows x columns of its two ranges (0 when
 * either is empty). Returns PYROI_OK; PYROI_E_NULL_POINTER / PYROI_E_INVALID_OUTPUT_SIZE /
 * _SCALE / _NUM_THREADS for params; PYROI_E_INVALID_SHAPE for a negative height or width;
 * PYROI_E_NULL_POINTER for a NULL box, row_edges or col_edges; PYROI_E_INVALID_BOX as the
 * forward (a coordinate not finite, also after scaling). Nothing is written on failure.
 * Thread-safe. */
PYROI_API pyroi_status pyroi_roi_pool_bin_edges_f32(
    const float box[4], int64_t height, int64_t width, const pyroi_roi_pool_params *params,
    int64_t roi_pixels[4], int64_t *row_edges, int64_t *col_edges);
PYROI_API pyroi_status pyroi_roi_pool_bin_edges_f64(
    const double box[4], int64_t height, int64_t width, const pyroi_roi_pool_params *params,
    int64_t roi_pixels[4], int64_t *row_edges, int64_t *col_edges);

/* ---- crop_and_resize (TensorFlow's tf.image.crop_and_resize), docs/semantics.md §13 -------
 * A crop of crop_height x crop_width point samples of box k = [y1, x1, y2, x2], normalised
 * (0 and 1 are the first and last pixel centres), of image box_indices[k]: sample (i, j) lies
 * at y = y1 (H - 1) + i (y2 - y1)(H - 1) / (crop_height - 1) (one row: 0.5 (y1 + y2)(H - 1)),
 * x alike; outside [0, H - 1] x [0, W - 1] it is the extrapolation value. Flipped boxes flip
 * the crop; boxes may reach outside [0, 1].
 * Tensors are 4-d with element strides: the image (N, C, H, W) and the crops (K, C,
 * crop_height, crop_width) as logical shapes, so TensorFlow's NHWC image is the strides
 * (H W C, 1, W C, C) and its (K, ch, cw, C) crops (ch cw C, 1, cw C, C); NCHW is the packed
 * strides. Boxes are rows of 4 consecutive values (row k at k * box_row_stride), box_indices
 * int64 (TensorFlow's int32 widened). Every entry point copies boxes and indices once
 * (indices checked in [0, N) in the copy: PYROI_E_INVALID_BATCH_INDEX), rejects a box with a
 * non-finite coordinate (PYROI_E_INVALID_BOX), runs on num_threads workers over disjoint
 * outputs without atomics (bit-identical for every thread count) and stops within
 * milliseconds when params.cancel is set (PYROI_E_CANCELLED). Float64 computes in double
 * throughout (TensorFlow narrows to float). */
#define PYROI_CROP_BILINEAR 0 /* TensorFlow's lerp form: two lerps along x, one along y */
#define PYROI_CROP_NEAREST 1  /* the pixel at round(y), round(x), halves away from zero */
/* Positions in T as TensorFlow rounds them: y1 (H - 1) + i * scale, every sample. */
#define PYROI_CROP_PLACEMENT_TENSORFLOW 0
/* onnxruntime's com.microsoft.CropAndResize: as TensorFlow, but the first and last samples
 * at exactly y1 (H - 1) and y2 (H - 1) (they can differ from TensorFlow's by an ulp). */
#define PYROI_CROP_PLACEMENT_EXACT_ENDS 1

typedef struct pyroi_crop_and_resize_params {
    /* Samples per crop along y and x; both > 0 (else PYROI_E_INVALID_OUTPUT_SIZE). Default
     * 1. */
    int64_t crop_height;
    int64_t crop_width;
    /* PYROI_CROP_BILINEAR (default) or PYROI_CROP_NEAREST (else PYROI_E_INVALID_METHOD). */
    int method;
    /* PYROI_CROP_PLACEMENT_TENSORFLOW (default) or PYROI_CROP_PLACEMENT_EXACT_ENDS. */
    int placement;
    /* The value of samples outside the image (converted to T; any value, NaN too).
     * Default 0. */
    double extrapolation_value;
    /* Worker threads for this call; 0 lets the library choose. Results are bit-identical for
     * every value. Default 0. */
    int num_threads;
    /* Cancellation token (see pyroi_cancel), or NULL. Default NULL. */
    pyroi_cancel *cancel;
} pyroi_crop_and_resize_params;

/* Sets every field of *params to its documented default (NULL is ignored). Thread-safe. */
PYROI_API void pyroi_crop_and_resize_params_init(pyroi_crop_and_resize_params *params);

/* crop_and_resize forward, as tf.image.crop_and_resize: writes crops (K, C, crop_height,
 * crop_width; strides crops_strides) from image (N, C, H, W) and num_boxes boxes. Returns
 * PYROI_OK or the first validation failure (nothing written then). Thread-safe. */
PYROI_API pyroi_status pyroi_crop_and_resize_forward_f32(
    const float *image, const int64_t image_shape[4], const int64_t image_strides[4],
    const float *boxes, int64_t num_boxes, int64_t box_row_stride, const int64_t *box_indices,
    float *crops, const int64_t crops_strides[4], const pyroi_crop_and_resize_params *params);
PYROI_API pyroi_status pyroi_crop_and_resize_forward_f64(
    const double *image, const int64_t image_shape[4], const int64_t image_strides[4],
    const double *boxes, int64_t num_boxes, int64_t box_row_stride, const int64_t *box_indices,
    double *crops, const int64_t crops_strides[4], const pyroi_crop_and_resize_params *params);

/* The image gradient (TensorFlow's CropAndResizeGradImage): overwrites grad_image (N, C, H,
 * W) with the gradient of the forward's crops given grads (K, C, crop_height, crop_width):
 * bilinear spreads each grads element over its four taps with the lerp weights, nearest
 * adds it to the rounded pixel, extrapolated samples add nothing. Each element receives its
 * terms in TensorFlow's order (box, row, column, tap). Thread-safe. */
PYROI_API pyroi_status pyroi_crop_and_resize_backward_image_f32(
    const float *grads, const int64_t grads_strides[4], const float *boxes, int64_t num_boxes,
    int64_t box_row_stride, const int64_t *box_indices, float *grad_image,
    const int64_t grad_image_shape[4], const int64_t grad_image_strides[4],
    const pyroi_crop_and_resize_params *params);
PYROI_API pyroi_status pyroi_crop_and_resize_backward_image_f64(
    const double *grads, const int64_t grads_strides[4], const double *boxes,
    int64_t num_boxes, int64_t box_row_stride, const int64_t *box_indices, double *grad_image,
    const int64_t grad_image_shape[4], const int64_t grad_image_strides[4],
    const pyroi_crop_and_resize_params *params);

/* The box gradient (TensorFlow's CropAndResizeGradBoxes), bilinear only (nearest:
 * PYROI_E_INVALID_METHOD): writes row k of grad_boxes (4 values [y1, x1, y2, x2] at
 * k * grad_boxes_row_stride, a stride >= 4) with the gradient of the crops, given grads, with
 * respect to box k's coordinates. Where a sample lies on a whole pixel the slope is that of
 * the cell to its right (below), at the last pixel that of the cell before it (the kink rule,
 * docs/semantics.md §13; TensorFlow takes 0 there). Thread-safe. */
PYROI_API pyroi_status pyroi_crop_and_resize_backward_boxes_f32(
    const float *grads, const int64_t grads_strides[4], const float *image,
    const int64_t image_shape[4], const int64_t image_strides[4], const float *boxes,
    int64_t num_boxes, int64_t box_row_stride, const int64_t *box_indices, float *grad_boxes,
    int64_t grad_boxes_row_stride, const pyroi_crop_and_resize_params *params);
PYROI_API pyroi_status pyroi_crop_and_resize_backward_boxes_f64(
    const double *grads, const int64_t grads_strides[4], const double *image,
    const int64_t image_shape[4], const int64_t image_strides[4], const double *boxes,
    int64_t num_boxes, int64_t box_row_stride, const int64_t *box_indices, double *grad_boxes,
    int64_t grad_boxes_row_stride, const pyroi_crop_and_resize_params *params);

/* The first box the crop_and_resize entry points would reject (PYROI_E_INVALID_BATCH_INDEX
 * or PYROI_E_INVALID_BOX) in *failed_roi, or PYROI_OK with *failed_roi = -1. Thread-safe. */
PYROI_API pyroi_status pyroi_crop_and_resize_find_invalid_roi_f32(
    const float *boxes, int64_t num_boxes, int64_t box_row_stride, const int64_t *box_indices,
    int64_t num_images, int64_t height, int64_t width,
    const pyroi_crop_and_resize_params *params, int64_t *failed_roi);
PYROI_API pyroi_status pyroi_crop_and_resize_find_invalid_roi_f64(
    const double *boxes, int64_t num_boxes, int64_t box_row_stride,
    const int64_t *box_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_crop_and_resize_params *params, int64_t *failed_roi);

#ifdef __cplusplus
}
#endif

#endif /* PYROI_H */
