/* roi_pool.c - RoIPool (quantised max pooling of Fast R-CNN), forward with argmax and
 * backward, float32 and float64: the dtype-free checks, the argmax check and the bin-window
 * plan here; the rest is written once per concern in templates that roi_pool_dtype.h
 * includes, once per dtype. Semantics: docs/semantics.md §5.1 (torchvision.ops.roi_pool). */
#include "core/cpu.h"
#include "core/half.h"
#include "core/parallel.h"
#include "roi_pool/roi_pool_half.h"
#include "core/rois.h"
#include "layout/transpose.h"
#include "core/validate.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rounded box coordinates are clamped to [-2^53, 2^53] pixels before they become integers.
 * torchvision converts them to int and is undefined once they leave the int32 range, so
 * every result it defines is unchanged; beyond, pyroi stays defined: the clamp keeps the
 * conversion and every later sum (RoI size, bin offset + RoI start) well inside int64. */
#define ROI_POOL_COORD_LIMIT 9007199254740992.0

/* Pixels per plane an int32 argmax can index: 2^31. */
#define ROI_POOL_INT32_PIXELS 2147483648.0

/* An argmax tensor holds int64 entries (wide) or int32 ones (torchvision's width: half the
 * bytes). The functions that read or write one take the width as an argument; the hot ones
 * are inlined where it is a constant, so each width gets its own loop from the one body. */
static inline int64_t roi_pool_argmax_get(const void *argmax, int64_t i, int wide)
{
    return wide ? ((const int64_t *)argmax)[i] : (int64_t)((const int32_t *)argmax)[i];
}

static inline void roi_pool_argmax_set(void *argmax, int64_t i, int wide, int64_t value)
{
    if (wide) {
        ((int64_t *)argmax)[i] = value;
    } else {
        ((int32_t *)argmax)[i] = (int32_t)value; /* an index below 2^31, or -1 */
    }
}

/* Entry i of argmax, read once (common.h), where it is checked and then addresses memory. */
static inline int64_t roi_pool_argmax_read_once(const void *argmax, int64_t i, int wide)
{
    return wide ? pyroi_read_once_i64((const int64_t *)argmax + i)
                : (int64_t)pyroi_read_once_i32((const int32_t *)argmax + i);
}

/* The address of entry i of argmax. */
static inline const void *roi_pool_argmax_at(const void *argmax, int64_t i, int wide)
{
    return (const char *)argmax + i * (wide ? (int64_t)sizeof(int64_t) : (int64_t)sizeof(int32_t));
}

/* The pixels [begin, end) that one output bin covers along one axis, clipped to the map. */
typedef struct roi_pool_window {
    int64_t begin;
    int64_t end;
} roi_pool_window;

void pyroi_roi_pool_params_init(pyroi_roi_pool_params *params)
{
    /* the fields not named are 0 (num_threads: all cores) or NULL */
    static const pyroi_roi_pool_params defaults = {
        .pooled_height = 1, .pooled_width = 1, .spatial_scale_h = 1.0, .spatial_scale_w = 1.0};
    if (params != NULL) {
        *params = defaults;
    }
}

/* Validation of a forward call once the dtype no longer matters, with the copy of the RoIs
 * (value_bytes a coordinate) that the call reads from then on and frees. */
static pyroi_status roi_pool_check_forward(const void *input, const int64_t input_shape[4],
                                           const int64_t input_strides[4], const void *boxes,
                                           int64_t num_rois, int64_t box_row_stride,
                                           const int64_t *batch_indices, const void *output,
                                           const int64_t output_strides[4],
                                           const void *argmax,
                                           const int64_t argmax_strides[4], int argmax_wide,
                                           const pyroi_roi_pool_params *params,
                                           size_t value_bytes, pyroi_rois *rois)
{
    pyroi_status status = pyroi_check_roi_pool_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_check_pooling_call(input, input_shape, input_strides, PYROI_TENSOR_INPUT,
                                      output, output_strides, PYROI_TENSOR_OUTPUT,
                                      -1, params->pooled_height,
                                      params->pooled_width, boxes, num_rois, box_row_stride, 4,
                                      batch_indices);
    if (status != PYROI_OK) {
        return status;
    }
    /* an int32 argmax holds every pixel index of planes of up to 2^31 pixels */
    if (argmax != NULL && !argmax_wide &&
        (double)input_shape[2] * (double)input_shape[3] > ROI_POOL_INT32_PIXELS) {
        return PYROI_E_INVALID_SHAPE;
    }
    status = pyroi_rois_copy(rois, boxes, value_bytes, num_rois, box_row_stride, 4,
                             batch_indices, input_shape[0], NULL, params->cancel);
    if (status == PYROI_OK && argmax != NULL) {
        const int64_t pooled_shape[4] = {num_rois, input_shape[1], params->pooled_height,
                                         params->pooled_width};
        status = pyroi_check_tensor4(argmax, pooled_shape, argmax_strides, PYROI_TENSOR_OUTPUT);
        if (status != PYROI_OK) {
            pyroi_rois_free(rois);
        }
    }
    return status;
}

/* Every argmax entry must be -1 (nothing to propagate) or a pixel of an H x W plane: the
 * backward writes at that pixel, so a bad entry would be an out-of-bounds write. This check
 * runs before the backward orders that write grad_input as they go; it reads all of argmax,
 * so large ones are split over the workers by RoI. It gives the call's status; the kernels
 * test each entry again where they read it (the caller may write argmax meanwhile), see
 * roi_pool_argmax_is_pixel. */
typedef struct roi_pool_argmax_check {
    const void *argmax;
    int wide; /* int64 entries, else int32 */
    const int64_t *shape;
    const int64_t *strides;
    int64_t plane_size;
    int bad[PYROI_PARALLEL_MAX_WORKERS]; /* per worker: found a bad entry */
} roi_pool_argmax_check;

/* Whether RoIs [begin, end) of the check hold a bad entry (wide: a constant where inlined). */
PYROI_CLONE_INLINE int roi_pool_argmax_rois_bad(const roi_pool_argmax_check *check,
                                                int64_t begin, int64_t end, int wide)
{
    const int64_t *shape = check->shape, *strides = check->strides;
    const uint64_t limit = (uint64_t)check->plane_size;
    int64_t k, c, ph, pw, i;
    if (strides[3] == 1 && strides[2] == shape[3] && strides[1] == shape[2] * shape[3]) {
        /* the usual layout: each RoI's entries are one run, checked as such (vectorised) */
        const int64_t count = shape[1] * shape[2] * shape[3];
        for (k = begin; k < end; ++k) {
            const void *run = roi_pool_argmax_at(check->argmax, k * strides[0], wide);
            int bad = 0;
            for (i = 0; i < count; ++i) {
                bad |= (uint64_t)roi_pool_argmax_get(run, i, wide) + 1u > limit;
            }
            if (bad) {
                return 1;
            }
        }
        return 0;
    }
    for (k = begin; k < end; ++k) {
        for (c = 0; c < shape[1]; ++c) {
            const void *winners =
                roi_pool_argmax_at(check->argmax, k * strides[0] + c * strides[1], wide);
            /* branch-free: a is in [-1, plane_size) exactly when a + 1 <= plane_size
             * without sign (a wraps around when below -1) */
            int bad = 0;
            for (ph = 0; ph < shape[2]; ++ph) {
                for (pw = 0; pw < shape[3]; ++pw) {
                    bad |= (uint64_t)roi_pool_argmax_get(
                               winners, ph * strides[2] + pw * strides[3], wide) +
                               1u >
                           limit;
                }
            }
            if (bad) {
                return 1;
            }
        }
    }
    return 0;
}

PYROI_VECTOR_TASK(roi_pool_check_argmax_task)
{
    roi_pool_argmax_check *check = (roi_pool_argmax_check *)context;
    if (check->wide ? roi_pool_argmax_rois_bad(check, begin, end, 1)
                    : roi_pool_argmax_rois_bad(check, begin, end, 0)) {
        check->bad[worker] = 1;
    }
}

static pyroi_status roi_pool_check_argmax(const void *argmax, int wide, const int64_t shape[4],
                                          const int64_t strides[4], int64_t plane_size,
                                          const pyroi_roi_pool_params *params)
{
    roi_pool_argmax_check check;
    const double work_per_roi = (double)shape[1] * (double)shape[2] * (double)shape[3];
    const int workers = pyroi_parallel_workers(params->num_threads, shape[0], work_per_roi);
    int worker;
    pyroi_status status;
    if (shape[0] == 0 || shape[1] == 0 || shape[2] == 0 || shape[3] == 0) {
        return PYROI_OK; /* no entries (argmax may then be NULL) */
    }
    check.argmax = argmax;
    check.wide = wide;
    check.shape = shape;
    check.strides = strides;
    check.plane_size = plane_size;
    for (worker = 0; worker < PYROI_PARALLEL_MAX_WORKERS; ++worker) {
        check.bad[worker] = 0;
    }
    status = pyroi_parallel_for(workers, shape[0], work_per_roi, params->cancel,
                                roi_pool_check_argmax_task, &check);
    if (status != PYROI_OK) {
        return status; /* not all checked: the backward must not run */
    }
    for (worker = 0; worker < workers; ++worker) {
        if (check.bad[worker]) {
            return PYROI_E_INVALID_ARGMAX;
        }
    }
    return PYROI_OK;
}

/* Validation of a backward call once the dtype no longer matters, with the copy of the batch
 * indices that the call reads from then on and frees. The values of argmax are checked by
 * the driver: before the kernels run (roi_pool_check_argmax), or by the kernels as they read
 * them when nothing is written before all were read. */
static pyroi_status roi_pool_check_backward(const void *grad_output,
                                            const int64_t grad_output_strides[4],
                                            const void *argmax,
                                            const int64_t argmax_strides[4],
                                            const int64_t *batch_indices, int64_t num_rois,
                                            const void *grad_input,
                                            const int64_t grad_input_shape[4],
                                            const int64_t grad_input_strides[4],
                                            const pyroi_roi_pool_params *params,
                                            pyroi_rois *rois)
{
    int64_t pooled_shape[4];
    pyroi_status status = pyroi_check_roi_pool_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    if (num_rois < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    status = pyroi_check_tensor4(grad_input, grad_input_shape, grad_input_strides,
                                 PYROI_TENSOR_OUTPUT);
    if (status != PYROI_OK) {
        return status;
    }
    pooled_shape[0] = num_rois;
    pooled_shape[1] = grad_input_shape[1];
    pooled_shape[2] = params->pooled_height;
    pooled_shape[3] = params->pooled_width;
    status = pyroi_check_tensor4(grad_output, pooled_shape, grad_output_strides,
                                 PYROI_TENSOR_INPUT);
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_check_tensor4(argmax, pooled_shape, argmax_strides, PYROI_TENSOR_INPUT);
    if (status != PYROI_OK) {
        return status;
    }
    if (num_rois > 0 && batch_indices == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    return pyroi_rois_copy(rois, NULL, 1, num_rois, 0, 0, batch_indices, grad_input_shape[0],
                           NULL, params->cancel);
}

/* Validation of a backward-from-the-input call once the dtype no longer matters (input_shape
 * is also grad_input's), with the copy of the RoIs (value_bytes a coordinate) that the call
 * reads from then on and frees. grad_output is read only: a broadcast view is fine. */
static pyroi_status roi_pool_check_backward_from_input(
    const void *grad_output, const int64_t grad_output_strides[4], const void *input,
    const int64_t input_shape[4], const int64_t input_strides[4], const void *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    const void *grad_input, const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params, size_t value_bytes, pyroi_rois *rois)
{
    pyroi_status status = pyroi_check_roi_pool_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_check_pooling_call(input, input_shape, input_strides, PYROI_TENSOR_INPUT,
                                      grad_output, grad_output_strides, PYROI_TENSOR_INPUT,
                                      -1, params->pooled_height, params->pooled_width, boxes,
                                      num_rois, box_row_stride, 4, batch_indices);
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_check_tensor4(grad_input, input_shape, grad_input_strides,
                                 PYROI_TENSOR_OUTPUT);
    if (status != PYROI_OK) {
        return status;
    }
    return pyroi_rois_copy(rois, boxes, value_bytes, num_rois, box_row_stride, 4,
                           batch_indices, input_shape[0], NULL, params->cancel);
}

/* Whether argmax entry a (read once by the caller) names a pixel of a plane of plane_size. */
static inline int roi_pool_argmax_is_pixel(int64_t a, int64_t plane_size)
{
    return (uint64_t)a < (uint64_t)plane_size;
}

/* Per-worker scratch: the bin windows of one RoI (rows first, then columns). */
static pyroi_status roi_pool_windows_alloc(roi_pool_window **windows, int workers,
                                           int64_t pooled_height, int64_t pooled_width)
{
    const uint64_t limit = (uint64_t)SIZE_MAX / 4 / sizeof(roi_pool_window) /
                           (uint64_t)PYROI_PARALLEL_MAX_WORKERS;
    if ((uint64_t)pooled_height > limit || (uint64_t)pooled_width > limit) {
        return PYROI_E_NO_MEMORY;
    }
    *windows = (roi_pool_window *)malloc((size_t)workers *
                                         ((size_t)pooled_height + (size_t)pooled_width) *
                                         sizeof(roi_pool_window));
    return *windows == NULL ? PYROI_E_NO_MEMORY : PYROI_OK;
}

/* The most pixels of one window of an axis (0 when every window is empty). */
static int64_t roi_pool_largest_window(const roi_pool_window *windows, int64_t bins)
{
    int64_t b, largest = 0;
    for (b = 0; b < bins; ++b) {
        const int64_t size = windows[b].end - windows[b].begin;
        largest = size > largest ? size : largest;
    }
    return largest;
}

static int64_t roi_pool_clamp(int64_t value, int64_t extent)
{
    return value < 0 ? 0 : (value > extent ? extent : value);
}

/* ---- plan of the lane-major loop orders (see roi_pool_blocks_template.h) ------------ */

/* Largest lane-major scratch per worker (a channels-last block of 64-byte lane lines per
 * pixel, and bin tiles); larger maps or bin grids take the direct loop order. */
#define ROI_POOL_SCRATCH_BYTES ((size_t)64 << 20)
/* Lane lines pooled together by the forward: more independent work per pixel read (the
 * kernels of roi_pool_math_template.h are written for two). */
#define ROI_POOL_GROUP 2
typedef char roi_pool_group_is_two[ROI_POOL_GROUP == 2 ? 1 : -1];

/* Argmax entries the backward copies and checks at a time before adding their gradients: a
 * RoI's 7 x 7 bins of a lane line of channels at once. */
#define ROI_POOL_ADD_CHUNK 1024

/* The bin windows of every RoI of a call, and the call's RoIs grouped by image. */
typedef struct roi_pool_plan {
    const pyroi_rois *rois;   /* the call's copy, grouped by image */
    int64_t bins;             /* pooled_height + pooled_width: windows per RoI */
    roi_pool_window *windows; /* RoI k: windows + k * bins: rows, then columns (forward) */
    double visits;            /* sum over RoIs and bins of the pixels in the window */
    double area;              /* sum over RoIs of the map pixels a RoI covers */
    int64_t max_area;         /* the largest of those */
    void *allocation;
} roi_pool_plan;

/* Allocates the plan of the call's RoIs, with bins windows per RoI (0: no windows, for the
 * backward), and groups the RoIs by image (cancelled by the call's token in rois). */
static pyroi_status roi_pool_plan_init(roi_pool_plan *plan, pyroi_rois *rois, int64_t bins)
{
    const uint64_t per_roi_bytes = (uint64_t)bins * sizeof(roi_pool_window);
    pyroi_status status;
    memset(plan, 0, sizeof(*plan));
    plan->rois = rois;
    plan->bins = bins;
    status = pyroi_rois_group_by_image(rois);
    if (status != PYROI_OK) {
        return status;
    }
    /* bins <= 2 * (output elements per channel): the caller's output bounds the plan */
    if ((uint64_t)bins > (uint64_t)SIZE_MAX / 64 ||
        (uint64_t)rois->num_rois > (uint64_t)(SIZE_MAX / 4) / (per_roi_bytes + 1)) {
        return PYROI_E_NO_MEMORY;
    }
    plan->allocation = malloc((size_t)((uint64_t)rois->num_rois * per_roi_bytes + 1));
    if (plan->allocation == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    plan->windows = (roi_pool_window *)plan->allocation;
    return PYROI_OK;
}

static void roi_pool_plan_free(roi_pool_plan *plan)
{
    free(plan->allocation);
    plan->allocation = NULL;
}

/* The map pixels the non-empty bins of one axis cover: [*begin, *end), empty (0, 0) when
 * every bin is clipped away. */
static void roi_pool_axis_extent(const roi_pool_window *windows, int64_t bins, int64_t *begin,
                                 int64_t *end)
{
    int64_t b;
    *begin = INT64_MAX;
    *end = 0;
    for (b = 0; b < bins; ++b) {
        if (windows[b].end > windows[b].begin) {
            *begin = windows[b].begin < *begin ? windows[b].begin : *begin;
            *end = windows[b].end > *end ? windows[b].end : *end;
        }
    }
    if (*end == 0) {
        *begin = 0;
    }
}

/* The region RoI k of a forward plan reads: rows [region[0], region[1]) x columns
 * [region[2], region[3]); empty in both axes when any axis has no pixel. */
static void roi_pool_region(const roi_pool_plan *plan, int64_t k, int64_t pooled_height,
                            int64_t region[4])
{
    const roi_pool_window *windows = plan->windows + k * plan->bins;
    roi_pool_axis_extent(windows, pooled_height, &region[0], &region[1]);
    roi_pool_axis_extent(windows + pooled_height, plan->bins - pooled_height, &region[2],
                         &region[3]);
    if (region[1] == region[0] || region[3] == region[2]) {
        region[0] = region[1] = region[2] = region[3] = 0;
    }
}

/* The argmax kernel uses GCC/Clang generic vectors of half a lane group (one AVX2
 * register) for clean compare-and-blend code; elsewhere, and in portable-only builds, a
 * plain per-lane loop with the same comparisons. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(PYROI_NO_CLONES)
#  define ROI_POOL_VECTORS 1
#endif
/* Keeps a short fixed-count loop rolled so that GCC's loop vectoriser, not its weaker
 * straight-line vectoriser, sees it. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8
#  define ROI_POOL_NO_UNROLL _Pragma("GCC unroll 1")
#else
#  define ROI_POOL_NO_UNROLL
#endif
/* An argmax in the lane-major kernels: an integer of the value's width, so that it blends
 * with the masks that comparing the values gives. */
typedef int32_t roi_pool_index_f32;
typedef int64_t roi_pool_index_f64;

/* The RoIPool templates name T's rounding functions ROI_POOL_*. */
#define ROI_POOL_ROUND PYROI_ROUND
#define ROI_POOL_FLOOR PYROI_FLOOR
#define ROI_POOL_CEIL PYROI_CEIL
#define PYROI_DTYPE_TEMPLATE "roi_pool/roi_pool_dtype.h"
#include "core/each_dtype.h"

/* ---- the forward and the backward from the input of a float16 call (roi_pool_half.h) ---- */

/* Whether a float16 call whose checks gave status goes on in place (returns 1, *taken 1).
 * Else *taken tells the caller what to do with status: 1, the checks failed (the chunks would
 * fail the same way), or 0, the call's order does not run in place (in_place 0: the chunks
 * run; rois, the checks' copy, is freed). */
static int roi_pool_half_taken(pyroi_status status, int in_place, pyroi_rois *rois, int *taken)
{
    *taken = status != PYROI_OK || in_place;
    if (status == PYROI_OK && !in_place) {
        pyroi_rois_free(rois);
    }
    return status == PYROI_OK && in_place;
}

/* The rest of a float16 call taken in place: job (filled but for the RoIs) pointed at the
 * checks' copy of them, the float32 driver's stage that runs on checked arguments, the copy
 * freed. */
static pyroi_status roi_pool_half_run(roi_pool_job_f32 *job, pyroi_rois *rois,
                                      pyroi_status (*checked)(roi_pool_job_f32 *))
{
    pyroi_status status;
    roi_pool_job_rois_f32(job, rois);
    status = checked(job);
    pyroi_rois_free(rois);
    return status;
}

pyroi_status pyroi_roi_pool_forward_half(const uint16_t *input, const int64_t input_shape[4],
                                         const int64_t input_strides[4], const float *boxes,
                                         int64_t num_rois, int64_t box_row_stride,
                                         const int64_t *batch_indices, uint16_t *output,
                                         const int64_t output_strides[4], void *argmax,
                                         const int64_t argmax_strides[4], int argmax_wide,
                                         const pyroi_roi_pool_params *params, int *taken)
{
    roi_pool_job_f32 job;
    pyroi_rois rois;
    pyroi_status status = roi_pool_check_forward(input, input_shape, input_strides, boxes,
                                                 num_rois, box_row_stride, batch_indices,
                                                 output, output_strides, argmax,
                                                 argmax_strides, argmax_wide, params,
                                                 sizeof(float), &rois);
    /* only the lane-major orders widen what they gather; the direct order reads the map in
     * place */
    if (!roi_pool_half_taken(status, status == PYROI_OK &&
                                         roi_pool_scratch_fits_f32(
                                             input_shape[2] * input_shape[3],
                                             params->pooled_height * params->pooled_width),
                             &rois, taken)) {
        return status;
    }
    job = (roi_pool_job_f32){.half_features = input, .features_shape = input_shape,
                             .features_strides = input_strides, .half_result = output,
                             .result_strides = output_strides, .argmax_out = argmax,
                             .argmax_strides = argmax_strides, .argmax_wide = argmax_wide,
                             .params = params};
    return roi_pool_half_run(&job, &rois, roi_pool_forward_checked_f32);
}

pyroi_status pyroi_roi_pool_backward_from_input_half(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const uint16_t *input,
    const int64_t input_shape[4], const int64_t input_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params, int *taken)
{
    roi_pool_job_f32 job;
    pyroi_rois rois;
    pyroi_status status = roi_pool_check_backward_from_input(
        grad_output, grad_output_strides, input, input_shape, input_strides, boxes, num_rois,
        box_row_stride, batch_indices, grad_input, grad_input_strides, params, sizeof(float),
        &rois);
    /* not through an argmax: the image blocks, or nothing to do */
    if (!roi_pool_half_taken(status, status == PYROI_OK &&
                                         (pyroi_shape_is_empty(input_shape) ||
                                          roi_pool_from_input_in_lanes_f32(
                                              input_shape, num_rois,
                                              params->pooled_height * params->pooled_width)),
                             &rois, taken)) {
        return status;
    }
    job = (roi_pool_job_f32){.half_features = grad_output,
                             .features_strides = grad_output_strides, .half_map = input,
                             .map_strides = input_strides, .half_result = grad_input,
                             .result_shape = input_shape, .result_strides = grad_input_strides,
                             .params = params};
    return roi_pool_half_run(&job, &rois, roi_pool_backward_from_input_checked_f32);
}

/* A core's L2 cache where the CPU does not report it: small enough for every current core. */
#define ROI_POOL_L2_FALLBACK_BYTES ((int64_t)256 << 10)

pyroi_status pyroi_roi_pool_backward_from_input_pays(const int64_t input_shape[4],
                                                     int64_t num_rois,
                                                     const pyroi_roi_pool_params *params,
                                                     int *pays)
{
    int64_t shape[4], bins;
    const int64_t l2_bytes =
        pyroi_cpu_l2_bytes() > 0 ? pyroi_cpu_l2_bytes() : ROI_POOL_L2_FALLBACK_BYTES;
    pyroi_status status = pyroi_check_roi_pool_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    if (input_shape == NULL || pays == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    memcpy(shape, input_shape, sizeof(shape));
    /* no tensor bounds the pooled size here: past 2^53 bins nothing fits the scratch anyway */
    bins = (double)params->pooled_height * (double)params->pooled_width < 9007199254740992.0
               ? params->pooled_height * params->pooled_width
               : (int64_t)1 << 53;
    if (shape[0] < 0 || shape[1] < 0 || shape[2] < 0 || shape[3] < 0 || num_rois < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    /* Nothing to compute: the values alone are the cheaper thing to keep. Else the lane-major
     * order must be taken (the float32 test answers for every dtype: an image block is
     * ROI_POOL_GROUP 64-byte lines a pixel in each) and one image block must fit a core's L2
     * cache: each RoI's windows are scanned twice from it, and a larger block streams from
     * the L3 for every RoI (measured on Zen 3: docs/performance-history.md). */
    *pays = pyroi_shape_is_empty(shape) || num_rois == 0 ||
            (roi_pool_from_input_in_lanes_f32(shape, num_rois, bins) &&
             (double)shape[2] * (double)shape[3] * ROI_POOL_GROUP * 64.0 <=
                 (double)l2_bytes);
    return PYROI_OK;
}

pyroi_status pyroi_roi_pool_backward_half(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const void *argmax,
    const int64_t argmax_strides[4], int argmax_wide, const int64_t *batch_indices,
    int64_t num_rois, uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_pool_params *params, int *taken)
{
    roi_pool_job_f32 job;
    pyroi_rois rois;
    pyroi_status status = roi_pool_check_backward(
        grad_output, grad_output_strides, argmax, argmax_strides, batch_indices, num_rois,
        grad_input, grad_input_shape, grad_input_strides, params, &rois);
    if (!roi_pool_half_taken(
            status,
            status == PYROI_OK && !pyroi_shape_is_empty(grad_input_shape) &&
                roi_pool_backward_in_image_blocks_f32(grad_input_shape, num_rois, params) &&
                roi_pool_backward_whole_runs_f32(grad_output_strides, argmax_strides,
                                                 params->pooled_height, params->pooled_width),
            &rois, taken)) {
        return status;
    }
    job = (roi_pool_job_f32){.half_features = grad_output,
                             .features_strides = grad_output_strides,
                             .half_result = grad_input, .result_shape = grad_input_shape,
                             .result_strides = grad_input_strides, .argmax_in = argmax,
                             .argmax_strides = argmax_strides, .argmax_wide = argmax_wide,
                             .params = params};
    return roi_pool_half_run(&job, &rois, roi_pool_backward_checked_f32);
}
