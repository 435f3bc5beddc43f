/* roi_pool_plan_template.h - what every RoIPool worker of a call reads: the job (the call's
 * tensors and its one copy of the RoIs), and the bin windows of every RoI that the lane-major
 * orders precompute (roi_pool_plan, roi_pool.c). Included by roi_pool.c once per dtype with T,
 * PYROI_TYPED(name), ROI_POOL_ROUND, ROI_POOL_FLOOR and ROI_POOL_CEIL defined. */

/* Everything a worker needs; a worker only adds its own index to pick its scratch. */
typedef struct PYROI_TYPED(roi_pool_job) {
    const T *features; /* input (forward) or grad_output (backward) */
    /* a float16 call read and written in place (T float; else NULL): features, result and
     * (backward from the input) map as float16 tensors */
    const uint16_t *half_features;
    uint16_t *half_result;
    const uint16_t *half_map;
    const int64_t *features_shape;
    const int64_t *features_strides;
    pyroi_rois *rois;  /* the call's copy of the RoIs: the fields below point into it */
    const T *boxes;    /* forward */
    int64_t num_rois;
    int64_t box_row_stride;
    const int64_t *batch_indices;
    T *result; /* output (forward) or grad_input (backward) */
    const int64_t *result_shape;
    const int64_t *result_strides;
    void *argmax_out;      /* forward */
    const void *argmax_in; /* backward */
    const int64_t *argmax_strides;
    int argmax_wide;       /* argmax entries are int64, else int32 */
    const T *map;          /* backward from the input: the forward's input, of result_shape */
    const int64_t *map_strides;
    const pyroi_roi_pool_params *params;
    roi_pool_window *windows; /* forward: pooled_height + pooled_width per worker */
    const roi_pool_plan *plan; /* lane-major orders */
    T *scratch;                /* lane-major orders: one block and two tiles per worker */
    int64_t scratch_stride;    /* elements per worker */
    int stream;                /* forward: stream the outputs past the caches (large calls) */
    int keep_blocks;           /* backward image blocks: one per item, written out at the end */
    int bad_argmax[PYROI_PARALLEL_MAX_WORKERS]; /* backward, per worker: read a bad entry */
} PYROI_TYPED(roi_pool_job);

/* Points the job at the call's copy of the RoIs. */
static void PYROI_TYPED(roi_pool_job_rois)(PYROI_TYPED(roi_pool_job) *job, pyroi_rois *rois)
{
    job->rois = rois;
    job->boxes = (const T *)rois->boxes;
    job->num_rois = rois->num_rois;
    job->box_row_stride = rois->coords;
    job->batch_indices = rois->batch_indices;
}

/* Fills the plan's bin windows (boxes validated before) and its work statistics. */
static pyroi_status PYROI_TYPED(roi_pool_plan_windows)(roi_pool_plan *plan, const T *boxes,
                                               int64_t num_rois, int64_t box_row_stride,
                                               int64_t height, int64_t width,
                                               const pyroi_roi_pool_params *params,
                                               pyroi_call_cancel *cancel)
{
    const int64_t pooled_height = params->pooled_height, pooled_width = params->pooled_width;
    int64_t k, b;
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(roi_pool_axis) rows, cols;
        roi_pool_window *windows = plan->windows + k * plan->bins;
        double row_pixels = 0.0, col_pixels = 0.0;
        int64_t region[4], area;
        if (pyroi_cancel_at(cancel, k)) {
            return PYROI_E_CANCELLED;
        }
        (void)PYROI_TYPED(roi_pool_axes)(boxes + k * box_row_stride, params, height, width,
                                         &rows, &cols);
        for (b = 0; b < pooled_height + pooled_width; ++b) {
            windows[b] = b < pooled_height
                             ? PYROI_TYPED(roi_pool_bin_window)(&rows, b)
                             : PYROI_TYPED(roi_pool_bin_window)(&cols, b - pooled_height);
            if (windows[b].end > windows[b].begin) {
                *(b < pooled_height ? &row_pixels : &col_pixels) +=
                    (double)(windows[b].end - windows[b].begin);
            }
        }
        plan->visits += row_pixels * col_pixels;
        roi_pool_region(plan, k, pooled_height, region);
        area = (region[1] - region[0]) * (region[3] - region[2]);
        plan->area += (double)area;
        plan->max_area = area > plan->max_area ? area : plan->max_area;
    }
    return PYROI_OK;
}
