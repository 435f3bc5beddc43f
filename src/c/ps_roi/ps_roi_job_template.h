/* ps_roi_job_template.h - what the position-sensitive operators (PSRoIAlign, PSRoIPool)
 * share: the job every worker reads and its initialiser. Included by ps_roi_dtype.h.
 * Semantics: docs/semantics.md §6; evaluation order is torchvision's so that results match
 * it bit for bit. Output bin (ph, pw) of output channel c_out always reads input channel
 * (c_out * PH + ph) * PW + pw, so the backward of output channels [a, b) writes exactly input
 * channels [a * PH * PW, b * PH * PW): the unit of deterministic parallel work. */

typedef PYROI_TYPED(pyroi_sample_axis) PYROI_TYPED(ps_sample_axis);
typedef PYROI_TYPED(pyroi_axis_tap) PYROI_TYPED(ps_axis_tap);

#include "core/job_tensors_template.h"

/* ps_roi_align scratch: the tap tables of one RoI, sized for the largest RoI of the call. */
typedef struct PYROI_TYPED(ps_tap_tables) {
    PYROI_TYPED(ps_axis_tap) *row_taps;
    PYROI_TYPED(ps_axis_tap) *col_taps;
    pyroi_tap_range *row_ranges;
    pyroi_tap_range *col_ranges;
} PYROI_TYPED(ps_tap_tables);

/* Everything a worker needs (forward or backward, align or pool). */
typedef struct PYROI_TYPED(ps_job) {
    PYROI_TYPED(job_tensors) tensors;
    int64_t pooled_height;
    int64_t pooled_width;
    int64_t channels_out;
    const pyroi_ps_roi_align_params *align; /* the operator's parameters: one of the two */
    const pyroi_ps_roi_pool_params *pool;
    PYROI_TYPED(ps_tap_tables) *tables; /* align only: one set per worker */
    /* a float16 call (T float, ps_roi_half.h): the tensor read instead of tensors.features,
     * each element widened exactly, and the one written instead of tensors.result, rounded
     * once; NULL otherwise */
    const uint16_t *half_features;
    uint16_t *half_result;
    /* a float16 backward's float32 planes: the PH * PW input planes of every image of
     * channels_per_pass output channels (half_plane_strides, contiguous) for each worker,
     * planes_per_worker elements apart */
    float *half_planes;
    int64_t half_plane_strides[4];
    /* PSRoIPool's backward: per worker, the [first, end) column windows of the RoI it adds
     * (2 * PW entries a worker), computed once a RoI rather than once a bin */
    int64_t *col_windows;
    int64_t channels_per_pass;
    int64_t planes_per_worker;
} PYROI_TYPED(ps_job);

/* How a backward adds the gradients of output channels [c_begin, c_end) into planes (input
 * channel c_in of image n at n * strides[0] + (c_in - channel0) * strides[1]), the gradients
 * widened by widen where it is not NULL: PSRoIAlign's ps_roi_align_add_grads, PSRoIPool's
 * ps_roi_pool_add_grads. */
typedef void (*PYROI_TYPED(ps_add_grads_fn))(const PYROI_TYPED(ps_job) *job, int worker,
                                             int64_t c_begin, int64_t c_end, T *planes,
                                             int64_t channel0, const int64_t strides[4],
                                             pyroi_widen_fn widen);

/* The backward task body of both operators on T tensors, output channels [c_begin, c_end)
 * (input channels [c_begin * PH * PW, c_end * PH * PW)): zeroes them, then add_grads adds
 * every RoI's gradients into them. */
PYROI_CLONE_INLINE void PYROI_TYPED(ps_backward_channels)(void *context, int64_t c_begin,
                                                          int64_t c_end, int worker,
                                                          PYROI_TYPED(ps_add_grads_fn) add_grads)
{
    const PYROI_TYPED(ps_job) *job = (const PYROI_TYPED(ps_job) *)context;
    const int64_t group = job->pooled_height * job->pooled_width;
    pyroi_cancel *cancel = job->align != NULL ? job->align->cancel : job->pool->cancel;
    if (pyroi_zero_channels(job->tensors.result, sizeof(T), job->tensors.result_shape,
                            job->tensors.result_strides, c_begin * group, c_end * group,
                            cancel)) {
        return;
    }
    add_grads(job, worker, c_begin, c_end, job->tensors.result, 0, job->tensors.result_strides,
              NULL);
}

/* A job with everything but the operator's parameters (align or pool, set by the caller):
 * features are read and result written; the map (input or grad_input) has map_channels; the
 * RoIs are the call's copy. */
static void PYROI_TYPED(ps_job_init)(PYROI_TYPED(ps_job) *job, const T *features,
                                     const int64_t *features_shape,
                                     const int64_t features_strides[4], const pyroi_rois *rois,
                                     T *result,
                                     const int64_t *result_shape,
                                     const int64_t result_strides[4], int64_t pooled_height,
                                     int64_t pooled_width, int64_t map_channels)
{
    memset(job, 0, sizeof(*job));
    PYROI_TYPED(job_tensors_init)(&job->tensors, features, features_shape, features_strides,
                                  rois, result, result_shape, result_strides);
    job->pooled_height = pooled_height;
    job->pooled_width = pooled_width;
    job->channels_out = map_channels / (pooled_height * pooled_width);
}

/* A float16 backward's float32 planes for `workers` workers (job->half_planes, which the
 * caller frees with pyroi_aligned_free): as many output channels a pass as fit the core's L2
 * cache (the planes are zeroed, added to and rounded: three passes over them), at least one.
 * Returns 1, or 0 when one channel's planes would pass PS_HALF_PLANES_BYTES for all workers
 * or the memory cannot be had (the call then runs in chunks). */
static int PYROI_TYPED(ps_half_planes_alloc)(PYROI_TYPED(ps_job) *job, int workers)
{
    const int64_t *shape = job->tensors.result_shape;
    const int64_t group = job->pooled_height * job->pooled_width;
    const double channel_bytes = (double)shape[0] * (double)group * (double)shape[2] *
                                 (double)shape[3] * (double)sizeof(float);
    const int64_t l2 = pyroi_cpu_l2_bytes() > 0 ? pyroi_cpu_l2_bytes() : ((int64_t)256 << 10);
    double pass;
    if (channel_bytes * (double)workers > PS_HALF_PLANES_BYTES) {
        return 0; /* within the bound, every product below fits int64 and size_t */
    }
    pass = floor((double)l2 / channel_bytes);
    pass = pass < 1.0 ? 1.0 : pass;
    pass = pass > (double)job->channels_out ? (double)job->channels_out : pass;
    while (pass > 1.0 && pass * channel_bytes * (double)workers > PS_HALF_PLANES_BYTES) {
        pass = floor(pass / 2.0);
    }
    job->channels_per_pass = (int64_t)pass;
    job->half_plane_strides[3] = 1;
    job->half_plane_strides[2] = shape[3];
    job->half_plane_strides[1] = shape[2] * shape[3];
    job->half_plane_strides[0] = job->channels_per_pass * group * shape[2] * shape[3];
    job->planes_per_worker = (shape[0] * job->half_plane_strides[0] + 15) / 16 * 16; /* lines */
    job->half_planes = (float *)pyroi_aligned_malloc((size_t)job->planes_per_worker *
                                                     (size_t)workers * sizeof(float));
    return job->half_planes != NULL;
}
