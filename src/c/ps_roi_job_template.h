/* ps_roi_job_template.h - what the position-sensitive operators (PSRoIAlign, PSRoIPool)
 * share: the job every worker reads and its initialiser. Included by ps_roi_dtype.h.
 * Semantics: docs/semantics.md §6; evaluation order is torchvision's so that results match
 * it bit for bit. Output bin (ph, pw) of output channel c_out always reads input channel
 * (c_out * PH + ph) * PW + pw, so the backward of output channels [a, b) writes exactly input
 * channels [a * PH * PW, b * PH * PW): the unit of deterministic parallel work. */

typedef PYROI_TYPED(pyroi_sample_axis) PYROI_TYPED(ps_sample_axis);
typedef PYROI_TYPED(pyroi_axis_tap) PYROI_TYPED(ps_axis_tap);

#include "job_tensors_template.h"

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
    /* a float16 PSRoIPool forward (T float, ps_roi_half.h): the map read instead of
     * tensors.features, each pixel widened exactly, and the output written instead of
     * tensors.result, each bin rounded once; NULL otherwise */
    const uint16_t *half_features;
    uint16_t *half_result;
} PYROI_TYPED(ps_job);

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
