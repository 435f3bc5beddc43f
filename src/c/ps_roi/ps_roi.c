/* ps_roi.c - position-sensitive RoIAlign and RoIPool (R-FCN, Light-Head R-CNN), forward and
 * backward, float32 and float64, as torchvision.ops.ps_roi_align / ps_roi_pool
 * (docs/semantics.md §6). The kernel bodies are written once, in the templates that
 * ps_roi_dtype.h lists. */
#include "core/cpu.h"
#include "core/half.h"
#include "core/parallel.h"
#include "ps_roi/ps_roi_half.h"
#include "core/rois.h"
#include "layout/transpose.h"
#include "core/sampling.h"
#include "core/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pyroi_ps_roi_align_params_init(pyroi_ps_roi_align_params *params)
{
    /* the fields not named are 0 (num_threads: all cores) or NULL */
    static const pyroi_ps_roi_align_params defaults = {
        .pooled_height = 1, .pooled_width = 1, .spatial_scale_h = 1.0, .spatial_scale_w = 1.0,
        .sampling_ratio = -1};
    if (params != NULL) {
        *params = defaults;
    }
}

void pyroi_ps_roi_pool_params_init(pyroi_ps_roi_pool_params *params)
{
    /* the fields not named are 0 (num_threads: all cores) or NULL */
    static const pyroi_ps_roi_pool_params defaults = {
        .pooled_height = 1, .pooled_width = 1, .spatial_scale_h = 1.0, .spatial_scale_w = 1.0};
    if (params != NULL) {
        *params = defaults;
    }
}

/* Output channels C / (PH * PW); C must be a multiple of PH * PW (torchvision checks it). */
static pyroi_status ps_output_channels(int64_t channels, int64_t pooled_height,
                                       int64_t pooled_width, int64_t *channels_out)
{
    int64_t group;
    if (!pyroi_mul_nonneg(pooled_height, pooled_width, &group)) {
        /* more bins than any channel count: only C = 0 is a multiple */
        if (channels != 0) {
            return PYROI_E_INVALID_SHAPE;
        }
        *channels_out = 0;
        return PYROI_OK;
    }
    if (channels % group != 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    *channels_out = channels / group;
    return PYROI_OK;
}

/* Validation shared by every entry point once the parameters are checked: the feature tensor
 * (input or grad_input), its channel count, the pooled tensor (output or grad_output) of
 * shape (num_rois, C / (PH * PW), PH, PW), and the boxes; then copies the RoIs into *rois
 * (value_bytes a coordinate), which the call reads from then on and frees. Each tensor comes
 * as its T pointer and its float16 one: a float16 call (half) checks the float16 ones. */
static pyroi_status ps_check_call(int half, const void *values, const void *half_values,
                                  const int64_t features_shape[4],
                                  const int64_t features_strides[4],
                                  pyroi_tensor_role features_role, const void *pooled_values,
                                  const void *half_pooled, const int64_t pooled_strides[4],
                                  pyroi_tensor_role pooled_role, const void *boxes,
                                  int64_t num_rois, int64_t box_row_stride,
                                  const int64_t *batch_indices, int64_t pooled_height,
                                  int64_t pooled_width, size_t value_bytes, pyroi_rois *rois,
                                  pyroi_cancel *cancel)
{
    const void *features = half ? half_values : values;
    const void *pooled = half ? half_pooled : pooled_values;
    int64_t pooled_channels = 0;
    pyroi_status status = PYROI_OK;
    if (num_rois >= 0 && features_shape != NULL && features_shape[1] >= 0) {
        status = ps_output_channels(features_shape[1], pooled_height, pooled_width,
                                    &pooled_channels);
    }
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_check_pooling_call(features, features_shape, features_strides, features_role,
                                      pooled, pooled_strides, pooled_role, pooled_channels,
                                      pooled_height, pooled_width, boxes, num_rois,
                                      box_row_stride, 4, batch_indices);
    if (status != PYROI_OK) {
        return status;
    }
    return pyroi_rois_copy(rois, boxes, value_bytes, num_rois, box_row_stride, 4, batch_indices,
                           features_shape[0], NULL, cancel);
}

/* ps_roi_pool quantises box corners to whole pixels in int64. Rounded values beyond 2^61 in
 * magnitude saturate there: the map is never that large, and sizes (< 2^62) and bin edges
 * (< 2^62 + 2^61) then stay within int64. torchvision's int conversion overflows past 2^31. */
#define PS_POOL_COORDINATE_LIMIT 2305843009213693952.0 /* 2^61 */

static int64_t ps_pool_saturate(double rounded)
{
    if (rounded >= PS_POOL_COORDINATE_LIMIT) {
        return (int64_t)PS_POOL_COORDINATE_LIMIT;
    }
    if (rounded <= -PS_POOL_COORDINATE_LIMIT) {
        return -(int64_t)PS_POOL_COORDINATE_LIMIT;
    }
    return (int64_t)rounded;
}

/* The backward's quantisation: torchvision's CPU backward calls roundf, so the scaled
 * coordinate is narrowed to float and rounded there, even for float64 data (a value just
 * below .5 in double can round up). Saturates before narrowing so the float is finite. */
static int64_t ps_pool_round_narrowed(double scaled)
{
    if (!(scaled < PS_POOL_COORDINATE_LIMIT) || !(scaled > -PS_POOL_COORDINATE_LIMIT)) {
        return ps_pool_saturate(scaled);
    }
    return ps_pool_saturate((double)roundf((float)scaled));
}

/* A float16 backward's float32 planes, for all workers, at most (ps_half_planes_alloc). */
#define PS_HALF_PLANES_BYTES 268435456.0 /* 256 MiB */

/* How a float16 forward rounds each average it writes (NULL: a T call, no float16; its
 * widening of each element read: pyroi_widen_fn). */
typedef uint16_t (*ps_narrow_fn)(float value);

#define PYROI_DTYPE_TEMPLATE "ps_roi/ps_roi_dtype.h"
#include "core/each_dtype.h"

/* ---- float16 in place (ps_roi_half.h): only where F16C runs ------------------------------ */

#if defined(PYROI_HAVE_VECTOR_CLONES)
#  include <immintrin.h>
/* Every element widened exactly by one VCVTPH2PS (as pyroi_half_to_float), every average
 * rounded by one VCVTPS2PH to nearest even (pyroi_float_to_half's bits). The portable
 * conversions made the forward 3.5 ms against 1.2 in chunks (whose widening of whole runs
 * the compiler vectorises), and the portable rounding after each division alone a third
 * slower. */
__attribute__((target("avx2,f16c"))) static inline float ps_widen_f16c(uint16_t half)
{
    return _cvtsh_ss(half);
}

__attribute__((target("avx2,f16c"))) static inline uint16_t ps_narrow_f16c(float value)
{
    return (uint16_t)_cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT);
}

__attribute__((target("avx2,f16c"))) static void ps_roi_align_half_forward_task(
    void *context, int64_t roi_begin, int64_t roi_end, int worker)
{
    ps_roi_align_forward_rois_f32((const ps_job_f32 *)context, roi_begin, roi_end, worker,
                                  ps_widen_f16c, ps_narrow_f16c);
}

__attribute__((target("avx2,f16c"))) static void ps_roi_pool_half_forward_task(
    void *context, int64_t roi_begin, int64_t roi_end, int worker)
{
    (void)worker;
    ps_roi_pool_forward_rois_f32((const ps_job_f32 *)context, roi_begin, roi_end,
                                 ps_widen_f16c, ps_narrow_f16c);
}

/* Output channels [c, c + count)'s input planes of every image, summed in the worker's
 * float32 planes, rounded once into the float16 grad_input: streamed past the caches where
 * an image's planes are one run (it is not read back), else stored. */
static void ps_half_planes_round(const ps_job_f32 *job, const float *planes, int64_t c,
                                 int64_t count)
{
    const int64_t *shape = job->tensors.result_shape, *strides = job->tensors.result_strides;
    const int64_t group = job->pooled_height * job->pooled_width;
    const int one_run = strides[3] == 1 && strides[2] == shape[3] &&
                        strides[1] == shape[2] * shape[3];
    int64_t n;
    for (n = 0; n < shape[0]; ++n) {
        const float *from = planes + n * job->half_plane_strides[0];
        uint16_t *to = job->half_result + n * strides[0] + c * group * strides[1];
        if (one_run) {
            pyroi_half_round_stream(from, count * group * shape[2] * shape[3], to);
        } else {
            pyroi_half_round_planes(from, count * group, shape[2], shape[3], to, strides);
        }
    }
}

/* A float16 backward, a pass of output channels at a time: their planes zeroed, every RoI's
 * gradients widened and added in the float32 call's order, then rounded once. */
PYROI_CLONE_INLINE void ps_half_backward(void *context, int64_t c_begin, int64_t c_end,
                                         int worker, ps_add_grads_fn_f32 add_grads)
{
    const ps_job_f32 *job = (const ps_job_f32 *)context;
    float *planes = job->half_planes + (int64_t)worker * job->planes_per_worker;
    const int64_t group = job->pooled_height * job->pooled_width;
    const int64_t elements = job->tensors.result_shape[0] * job->half_plane_strides[0];
    int64_t c, count;
    for (c = c_begin; c < c_end; c += count) {
        count = c_end - c < job->channels_per_pass ? c_end - c : job->channels_per_pass;
        memset(planes, 0, (size_t)elements * sizeof(float));
        add_grads(job, worker, c, c + count, planes, c * group, job->half_plane_strides,
                  ps_widen_f16c);
        ps_half_planes_round(job, planes, c, count);
    }
    pyroi_stream_fence(); /* the streamed stores are seen by the thread that joins the task */
}

__attribute__((target("avx2,f16c"))) static void ps_roi_align_half_backward_task(
    void *context, int64_t c_begin, int64_t c_end, int worker)
{
    ps_half_backward(context, c_begin, c_end, worker, ps_roi_align_add_grads_f32);
}

__attribute__((target("avx2,f16c"))) static void ps_roi_pool_half_backward_task(
    void *context, int64_t c_begin, int64_t c_end, int worker)
{
    ps_half_backward(context, c_begin, c_end, worker, ps_roi_pool_add_grads_f32);
}
#endif

/* Whether the float16 calls run in place: where F16C runs (the x86-64 vector builds). */
static int ps_half_in_place(void)
{
#if defined(PYROI_HAVE_VECTOR_CLONES)
    return pyroi_cpu_has_f16c();
#else
    return 0;
#endif
}

#if defined(PYROI_HAVE_VECTOR_CLONES)
#  define PS_HALF_TASK(task) task
#else
#  define PS_HALF_TASK(task) NULL /* never run: ps_half_in_place() is 0 */
#endif

/* The in-place float16 forward and backward of op (ps_roi_align, ps_roi_pool; ps_roi_half.h):
 * its T = float call on the float16 tensors with the F16C tasks, where the CPU has F16C. */
#define PS_HALF_ENTRIES(op)                                                                   \
    pyroi_status pyroi_##op##_forward_half(                                                   \
        const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],  \
        const float *boxes, int64_t num_rois, int64_t box_row_stride,                         \
        const int64_t *batch_indices, uint16_t *output, const int64_t output_strides[4],      \
        const pyroi_##op##_params *params, int *taken)                                        \
    {                                                                                         \
        *taken = ps_half_in_place();                                                          \
        return !*taken ? PYROI_OK                                                             \
                       : op##_forward_call_f32(NULL, input, input_shape, input_strides, boxes, \
                                               num_rois, box_row_stride, batch_indices, NULL, \
                                               output, output_strides, params,                \
                                               PS_HALF_TASK(op##_half_forward_task));         \
    }                                                                                         \
    pyroi_status pyroi_##op##_backward_half(                                                  \
        const uint16_t *grad_output, const int64_t grad_output_strides[4], const float *boxes, \
        int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,               \
        uint16_t *grad_input, const int64_t grad_input_shape[4],                              \
        const int64_t grad_input_strides[4], const pyroi_##op##_params *params, int *taken)   \
    {                                                                                         \
        *taken = ps_half_in_place();                                                          \
        return !*taken ? PYROI_OK                                                             \
                       : op##_backward_call_f32(                                              \
                             NULL, grad_output, grad_output_strides, boxes, num_rois,         \
                             box_row_stride, batch_indices, NULL, grad_input,                 \
                             grad_input_shape, grad_input_strides, params,                    \
                             PS_HALF_TASK(op##_half_backward_task), taken);                   \
    }

PS_HALF_ENTRIES(ps_roi_align)
PS_HALF_ENTRIES(ps_roi_pool)
