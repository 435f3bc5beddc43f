/* roi_align.c - RoIAlign (avg, mmcv max and ONNX max reductions), forward and backward,
 * float32 and float64: the dtype-free checks, the caller-workspace arena and the enums the
 * templates share here; the rest is written once per concern in templates that
 * roi_align_dtype.h includes, once per dtype. */
#include "core/cpu.h"
#include "core/half.h"
#include "core/parallel.h"
#include "roi_align/roi_align_half.h"
#include "roi_align/roi_align_rows.h"
#include "core/rois.h"
#include "core/sampling.h"
#include "layout/transpose.h"
#include "core/validate.h"

#include <stdlib.h>
#include <string.h>

void pyroi_roi_align_params_init(pyroi_roi_align_params *params)
{
    /* the fields not named are 0 (num_threads: all cores) or NULL */
    static const pyroi_roi_align_params defaults = {
        .pooled_height = 1, .pooled_width = 1, .spatial_scale_h = 1.0, .spatial_scale_w = 1.0,
        .sampling_ratio = -1};
    if (params != NULL) {
        *params = defaults;
    }
}

/* Validation shared by forward and backward once the dtype no longer matters. */
static pyroi_status roi_align_check_call(const void *features, const int64_t features_shape[4],
                                         const int64_t features_strides[4],
                                         pyroi_tensor_role features_role,
                                         const void *pooled, const int64_t pooled_strides[4],
                                         pyroi_tensor_role pooled_role,
                                         const void *boxes, int64_t num_rois,
                                         int64_t box_row_stride, const int64_t *batch_indices,
                                         const pyroi_roi_align_params *params)
{
    pyroi_status status = pyroi_check_roi_align_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    return pyroi_check_pooling_call(features, features_shape, features_strides, features_role,
                                    pooled, pooled_strides, pooled_role,
                                    -1, params->pooled_height,
                                    params->pooled_width, boxes, num_rois, box_row_stride, 4,
                                    batch_indices);
}

/* A caller's workspace handed out in 64-byte aligned pieces (the aclnn-style two-phase
 * backward); a NULL arena means malloc. */
typedef struct roi_align_arena {
    unsigned char *base;
    size_t size;
    size_t used;
} roi_align_arena;

#define ROI_ALIGN_ARENA_ALIGNMENT 64

static size_t roi_align_arena_padding(const roi_align_arena *arena)
{
    const uintptr_t address = (uintptr_t)(arena->base + arena->used);
    return (size_t)((ROI_ALIGN_ARENA_ALIGNMENT - address % ROI_ALIGN_ARENA_ALIGNMENT) %
                    ROI_ALIGN_ARENA_ALIGNMENT);
}

/* Bytes a next piece may have (after its alignment padding). */
static size_t roi_align_arena_available(const roi_align_arena *arena)
{
    const size_t padding = roi_align_arena_padding(arena);
    if (arena->base == NULL || arena->size - arena->used < padding) {
        return 0;
    }
    return arena->size - arena->used - padding;
}

static void *roi_align_arena_alloc(roi_align_arena *arena, size_t bytes)
{
    size_t padding;
    void *piece;
    if (arena == NULL) {
        return malloc(bytes);
    }
    if (bytes > roi_align_arena_available(arena)) {
        return NULL;
    }
    padding = roi_align_arena_padding(arena);
    piece = arena->base + arena->used + padding;
    arena->used += padding + bytes;
    return piece;
}

/* Workspace bytes of one piece: its size plus the worst alignment padding. */
static int roi_align_workspace_add(size_t *total, size_t bytes)
{
    const size_t piece = bytes + (ROI_ALIGN_ARENA_ALIGNMENT - 1);
    if (bytes > SIZE_MAX / 4 || piece > SIZE_MAX / 4 - *total) {
        return 0;
    }
    *total += piece;
    return 1;
}

/* int64 words of a RoIAlign plan per RoI besides its bin ranges: first tap, row taps, column
 * taps, samples (roi_align_plan_template.h). */
#define ROI_ALIGN_PLAN_WORDS 4

/* The loop orders a schedule picks (roi_align_driver_template.h). */
enum roi_align_order { ROI_ALIGN_ORDER_DIRECT, ROI_ALIGN_ORDER_REGION, ROI_ALIGN_ORDER_IMAGE };

/* The forward tasks of one reduction, one per loop order; without lane-major tasks (region and
 * image NULL) the direct order is always taken, without channels_last the channels-last
 * features are gathered like others (roi_align_channels_last_template.h). */
typedef struct roi_align_forward_tasks {
    pyroi_range_task direct;
    pyroi_range_task region;
    pyroi_range_task image;
    pyroi_range_task channels_last;
} roi_align_forward_tasks;

/* The per-RoI reductions of the lane-major forward orders; each task passes one as a constant
 * to the shared block loops, which are inlined into it, so every task keeps its own
 * specialised (and vectorised) loop. */
enum roi_align_reduction { ROI_ALIGN_REDUCE_AVG, ROI_ALIGN_REDUCE_ONNX_MAX, ROI_ALIGN_REDUCE_MAX };

/* A max mode's winner (mmcv's sample index, ONNX's code) in the lane-major kernels where all
 * of the RoI's fit it: an integer of the value's width, so that it blends with the masks that
 * comparing the values gives. */
typedef int32_t roi_align_index_f32;
typedef int64_t roi_align_index_f64;

#define PYROI_DTYPE_TEMPLATE "roi_align/roi_align_dtype.h"
#include "core/each_dtype.h"

/* ---- the avg forward and backward of a float16 call (roi_align_half.h) ------------------ */

/* The call on the float16 map (input or grad_input) and pooled tensor (output or
 * grad_output) in place, in the lane-major orders, which gather every map pixel they read
 * (forward) or sum in blocks and round each pixel once (backward); see roi_align_half.h. */
pyroi_status pyroi_roi_align_rows_half(int backward, int dry_run, uint16_t *map,
                                       const int64_t map_shape[4], const int64_t map_strides[4],
                                       uint16_t *pooled, const int64_t pooled_strides[4],
                                       const float *boxes, int64_t num_rois,
                                       int64_t box_row_stride, const int64_t *batch_indices,
                                       const int64_t *rows,
                                       const pyroi_roi_align_params *params, int *taken)
{
    roi_align_job_f32 job;
    roi_align_plan_f32 plan;
    int planned;
    pyroi_status status = roi_align_check_call(
        map, map_shape, map_strides, backward ? PYROI_TENSOR_OUTPUT : PYROI_TENSOR_INPUT,
        pooled, pooled_strides, backward ? PYROI_TENSOR_INPUT : PYROI_TENSOR_OUTPUT, boxes,
        num_rois, box_row_stride, batch_indices, params);
    *taken = 0;
    if (status != PYROI_OK) {
        return status;
    }
    status = roi_align_call_plan_f32(
        &plan, backward ? pyroi_shape_is_empty(map_shape) : num_rois == 0 || map_shape[1] == 0,
        boxes, num_rois, box_row_stride, batch_indices, map_shape, params, 1, NULL,
        &planned);
    if (!planned) {
        *taken = 1; /* nothing to write, or the status of the RoIs' checks */
        return status;
    }
    roi_align_job_init_f32(&job, NULL, backward ? pooled_strides : map_strides, NULL,
                           backward ? map_strides : pooled_strides, map_shape, params, &plan,
                           NULL);
    job.rows = rows;
    *taken = roi_align_half_in_place_f32(&job, backward, backward ? pooled : map,
                                         backward ? map : pooled, NULL);
    if (!*taken || dry_run) {
        /* an order that reads or adds to the map in place: not taken; or only asked */
        roi_align_plan_free_f32(&plan);
        return PYROI_OK;
    }
    status = backward ? PYROI_OK : roi_align_plan_order_by_rows_f32(&plan);
    if (status != PYROI_OK) {
        return status; /* the plan is freed */
    }
    status = roi_align_execute_f32(&job, backward);
    roi_align_plan_free_f32(&plan);
    return status;
}

pyroi_status pyroi_roi_align_forward_half(const uint16_t *input, const int64_t input_shape[4],
                                          const int64_t input_strides[4], const float *boxes,
                                          int64_t num_rois, int64_t box_row_stride,
                                          const int64_t *batch_indices, uint16_t *output,
                                          const int64_t output_strides[4],
                                          const pyroi_roi_align_params *params, int *taken)
{
    /* the input is only read */
    return pyroi_roi_align_rows_half(0, 0, (uint16_t *)(uintptr_t)input, input_shape,
                                     input_strides, output, output_strides, boxes, num_rois,
                                     box_row_stride, batch_indices, NULL, params, taken);
}

pyroi_status pyroi_roi_align_backward_half(const uint16_t *grad_output,
                                           const int64_t grad_output_strides[4],
                                           const float *boxes, int64_t num_rois,
                                           int64_t box_row_stride, const int64_t *batch_indices,
                                           uint16_t *grad_input,
                                           const int64_t grad_input_shape[4],
                                           const int64_t grad_input_strides[4],
                                           const pyroi_roi_align_params *params, int *taken)
{
    /* grad_output is only read */
    return pyroi_roi_align_rows_half(1, 0, grad_input, grad_input_shape, grad_input_strides,
                                     (uint16_t *)(uintptr_t)grad_output, grad_output_strides,
                                     boxes, num_rois, box_row_stride, batch_indices, NULL,
                                     params, taken);
}

/* The max backwards' float16 tasks: each of the bins' gradients (12.5 million for the box
 * head's 1,000 RoIs of 256 channels) widened by F16C where it runs (the portable conversion
 * made the mmcv max backward 1.16-1.24x its float32 call's time), else portably. */
static float roi_align_widen_portable(uint16_t half)
{
    return pyroi_half_to_float(half);
}

static void roi_align_max_half_backward_task(void *context, int64_t begin, int64_t end,
                                             int worker)
{
    roi_align_max_like_backward_channels_f32((const roi_align_max_job_f32 *)context,
                                             ROI_ALIGN_REDUCE_MAX, begin, end, worker,
                                             roi_align_widen_portable);
}

static void roi_align_onnx_max_half_backward_task(void *context, int64_t begin, int64_t end,
                                                  int worker)
{
    roi_align_max_like_backward_channels_f32((const roi_align_max_job_f32 *)context,
                                             ROI_ALIGN_REDUCE_ONNX_MAX, begin, end, worker,
                                             roi_align_widen_portable);
}

#if defined(PYROI_HAVE_VECTOR_CLONES)
#  include <immintrin.h>
__attribute__((target("avx2,f16c"))) static inline float roi_align_widen_f16c(uint16_t half)
{
    return _cvtsh_ss(half); /* exact, as pyroi_half_to_float */
}

__attribute__((target("avx2,f16c"))) static void roi_align_max_half_backward_task_f16c(
    void *context, int64_t begin, int64_t end, int worker)
{
    roi_align_max_like_backward_channels_f32((const roi_align_max_job_f32 *)context,
                                             ROI_ALIGN_REDUCE_MAX, begin, end, worker,
                                             roi_align_widen_f16c);
}

__attribute__((target("avx2,f16c"))) static void roi_align_onnx_max_half_backward_task_f16c(
    void *context, int64_t begin, int64_t end, int worker)
{
    roi_align_max_like_backward_channels_f32((const roi_align_max_job_f32 *)context,
                                             ROI_ALIGN_REDUCE_ONNX_MAX, begin, end, worker,
                                             roi_align_widen_f16c);
}
#endif

pyroi_status pyroi_roi_align_max_backward_half(
    int onnx, const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_align_params *params, int *taken)
{
    const roi_align_half_backward_f32 half = {grad_output, grad_input, taken};
    pyroi_range_task task =
        onnx ? roi_align_onnx_max_half_backward_task : roi_align_max_half_backward_task;
#if defined(PYROI_HAVE_VECTOR_CLONES)
    if (pyroi_cpu_has_f16c()) {
        task = onnx ? roi_align_onnx_max_half_backward_task_f16c
                    : roi_align_max_half_backward_task_f16c;
    }
#endif
    return roi_align_max_like_backward_f32(
        NULL, grad_output_strides, argmax, argmax_strides, onnx ? 4 : 1, boxes, num_rois,
        box_row_stride, batch_indices, NULL, grad_input_shape, grad_input_strides, params,
        task, &half);
}

pyroi_status pyroi_roi_align_max_forward_half(
    int onnx, const uint16_t *input, const int64_t input_shape[4],
    const int64_t input_strides[4], const float *boxes, int64_t num_rois,
    int64_t box_row_stride, const int64_t *batch_indices, uint16_t *output,
    const int64_t output_strides[4], int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_align_params *params, int *taken)
{
    const roi_align_half_forward_f32 half = {input, output, taken};
    const roi_align_forward_tasks tasks =
        onnx ? roi_align_onnx_max_tasks_f32() : roi_align_max_tasks_f32(argmax != NULL);
    return roi_align_max_like_forward_f32(NULL, input_shape, input_strides, boxes, num_rois,
                                          box_row_stride, batch_indices, NULL, output_strides,
                                          argmax, argmax_strides, onnx ? 4 : 1, params, &tasks,
                                          &half);
}
