/* roi_pool_driver_template.h - RoIPool's driver: which loop order a call takes, running it
 * with the workers' scratch, and the public entry points (forward, backward,
 * find_invalid_roi). Included by roi_pool.c once per dtype with T, PYROI_TYPED(name),
 * ROI_POOL_ROUND, ROI_POOL_FLOOR and ROI_POOL_CEIL defined. */

/* Runs a lane-major order: allocates the scratch (scratch_elements a part), runs task over
 * items and frees the scratch. The parts are the workers', or with job->keep_blocks (the
 * backward) the items', which roi_pool_backward_write_task writes out once task found every
 * argmax entry good. */
static pyroi_status PYROI_TYPED(roi_pool_run_lanes)(PYROI_TYPED(roi_pool_job) *job,
                                                    pyroi_range_task task, int64_t items,
                                                    double work_per_item,
                                                    int64_t scratch_elements)
{
    const int workers = pyroi_parallel_workers(job->params->num_threads, items, work_per_item);
    const int64_t parts = job->keep_blocks ? items : workers;
    int worker;
    pyroi_status status;
    unsigned char *allocation = (unsigned char *)malloc(
        (size_t)parts * (size_t)scratch_elements * sizeof(T) + PYROI_LANE_BYTES);
    if (allocation == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    /* the first lane group on a 64-byte (cache line) boundary; every part is a whole number
     * of lane groups, so each starts on one too */
    job->scratch = (T *)(void *)(allocation + (PYROI_LANE_BYTES -
                                               (uintptr_t)allocation % PYROI_LANE_BYTES));
    job->scratch_stride = scratch_elements;
    status = pyroi_parallel_for(workers, items, work_per_item, job->params->cancel, task, job);
    for (worker = 0; worker < workers; ++worker) {
        if (status == PYROI_OK && job->bad_argmax[worker]) {
            status = PYROI_E_INVALID_ARGMAX;
        }
    }
    if (status == PYROI_OK && job->keep_blocks) {
        status = pyroi_parallel_for(
            pyroi_parallel_workers(job->params->num_threads, items, (double)scratch_elements),
            items, (double)scratch_elements, job->params->cancel,
            PYROI_TYPED(roi_pool_backward_write_task), job);
    }
    free(allocation);
    job->scratch = NULL;
    return status;
}

/* Forward in a lane-major order (the caller checked roi_pool_scratch_fits for the map). */
static pyroi_status PYROI_TYPED(roi_pool_forward_lanes)(PYROI_TYPED(roi_pool_job) *job)
{
    const int64_t *shape = job->features_shape;
    const int64_t tile = job->params->pooled_height * job->params->pooled_width;
    const int64_t map_pixels = shape[2] * shape[3];
    const int64_t groups = (shape[1] + ROI_POOL_GROUP_LANES - 1) / ROI_POOL_GROUP_LANES;
    roi_pool_plan plan;
    pyroi_status status = roi_pool_plan_init(
        &plan, job->rois, job->params->pooled_height + job->params->pooled_width);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(roi_pool_plan_windows)(&plan, job->boxes, job->num_rois,
                                                job->box_row_stride, shape[2], shape[3],
                                                job->params, &job->rois->cancel);
    if (status != PYROI_OK) {
        roi_pool_plan_free(&plan);
        return status;
    }
    job->plan = &plan;
    /* gathering whole images pays once the RoIs cover about half the pixels of the images
     * they are on; below that, gathering each RoI's region reads less */
    if (plan.area * 2.0 >= (double)job->rois->num_groups * (double)map_pixels) {
        /* items follow the images with RoIs, not the batch (which may be broadcast) */
        status = PYROI_TYPED(roi_pool_run_lanes)(
            job, PYROI_TYPED(roi_pool_forward_image_task), job->rois->num_groups * groups,
            (double)ROI_POOL_GROUP_LANES *
                (plan.visits / (double)job->rois->num_groups + (double)map_pixels),
            PYROI_TYPED(roi_pool_scratch_elements)(map_pixels, tile));
    } else {
        status = PYROI_TYPED(roi_pool_run_lanes)(
            job, PYROI_TYPED(roi_pool_forward_region_task), job->num_rois,
            (double)shape[1] * (plan.visits + plan.area) / (double)job->num_rois,
            PYROI_TYPED(roi_pool_scratch_elements)(plan.max_area, tile));
    }
    roi_pool_plan_free(&plan);
    return status;
}

/* The forward of the call's RoIs (job->rois, job->boxes...) once its checks passed. */
static pyroi_status PYROI_TYPED(roi_pool_forward_checked)(PYROI_TYPED(roi_pool_job) *job)
{
    const int64_t *input_shape = job->features_shape;
    const pyroi_roi_pool_params *params = job->params;
    const int64_t num_rois = job->num_rois;
    double max_area;
    int64_t failed_roi;
    int workers;
    pyroi_status status = PYROI_TYPED(roi_pool_scan_boxes)(
        job->boxes, num_rois, job->box_row_stride, input_shape[2], input_shape[3], params,
        &job->rois->cancel, &max_area, &failed_roi);
    if (status != PYROI_OK || num_rois == 0 || input_shape[1] == 0) {
        return status;
    }
    /* an output much larger than a core's caches is not read back soon: stream it */
    job->stream = (double)num_rois * (double)input_shape[1] * (double)params->pooled_height *
                      (double)params->pooled_width *
                      (double)(job->half_result != NULL ? sizeof(uint16_t) : sizeof(T)) >=
                  pyroi_stream_bytes();
    if (PYROI_TYPED(roi_pool_scratch_fits)(input_shape[2] * input_shape[3],
                                           params->pooled_height * params->pooled_width)) {
        return PYROI_TYPED(roi_pool_forward_lanes)(job);
    }
    /* direct order. Work per RoI: every channel reads the pixels of every bin (bins overlap
     * little) */
    const double work_per_item = (double)input_shape[1] *
                                 ((double)params->pooled_height * (double)params->pooled_width + max_area);
    workers = pyroi_parallel_workers(params->num_threads, num_rois, work_per_item);
    status = roi_pool_windows_alloc(&job->windows, workers, params->pooled_height,
                                    params->pooled_width);
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_parallel_for(workers, num_rois, work_per_item, params->cancel,
                                PYROI_TYPED(roi_pool_forward_task), job);
    free(job->windows);
    job->windows = NULL;
    return status;
}

/* The forward with an argmax of either width (argmax_wide: int64 entries, else int32). */
static pyroi_status PYROI_TYPED(roi_pool_forward_any)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    void *argmax, const int64_t argmax_strides[4], int argmax_wide,
    const pyroi_roi_pool_params *params)
{
    PYROI_TYPED(roi_pool_job) job;
    pyroi_rois rois;
    pyroi_status status = roi_pool_check_forward(input, input_shape, input_strides, boxes,
                                                 num_rois, box_row_stride, batch_indices,
                                                 output, output_strides, argmax,
                                                 argmax_strides, argmax_wide, params,
                                                 sizeof(T), &rois);
    if (status != PYROI_OK) {
        return status;
    }
    memset(&job, 0, sizeof(job));
    job.features = (const T *)pyroi_data_or_placeholder(input); /* no pixels: may be NULL */
    job.features_shape = input_shape;
    job.features_strides = input_strides;
    PYROI_TYPED(roi_pool_job_rois)(&job, &rois);
    job.result = output;
    job.result_strides = output_strides;
    job.argmax_out = argmax;
    job.argmax_strides = argmax_strides;
    job.argmax_wide = argmax_wide;
    job.params = params;
    status = PYROI_TYPED(roi_pool_forward_checked)(&job);
    pyroi_rois_free(&rois);
    return status;
}

/* The public forward of an argmax of index_type (wide: int64). */
#define ROI_POOL_FORWARD_ENTRY(name, index_type, wide)                                         \
    pyroi_status PYROI_TYPED(name)(                                                            \
        const T *input, const int64_t input_shape[4], const int64_t input_strides[4],          \
        const T *boxes, int64_t num_rois, int64_t box_row_stride,                              \
        const int64_t *batch_indices, T *output, const int64_t output_strides[4],              \
        index_type *argmax, const int64_t argmax_strides[4],                                   \
        const pyroi_roi_pool_params *params)                                                   \
    {                                                                                          \
        return PYROI_TYPED(roi_pool_forward_any)(input, input_shape, input_strides, boxes,     \
                                                 num_rois, box_row_stride, batch_indices,      \
                                                 output, output_strides, argmax,               \
                                                 argmax_strides, wide, params);                \
    }
ROI_POOL_FORWARD_ENTRY(pyroi_roi_pool_forward, int64_t, 1)
ROI_POOL_FORWARD_ENTRY(pyroi_roi_pool_forward_i32, int32_t, 0)
#undef ROI_POOL_FORWARD_ENTRY

pyroi_status PYROI_TYPED(pyroi_roi_pool_find_invalid_roi)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images,
    const pyroi_roi_pool_params *params, int64_t *failed_roi)
{
    double max_area;
    const pyroi_status status = pyroi_find_invalid_batch_index(
        pyroi_check_roi_pool_params(params), boxes, num_rois, box_row_stride, 4, batch_indices,
        num_images, 0, 0, failed_roi);
    if (status != PYROI_OK) {
        return status;
    }
    pyroi_call_cancel cancel = pyroi_call_cancel_of(params->cancel); /* params checked */
    /* the map size only matters for the work estimate */
    return PYROI_TYPED(roi_pool_scan_boxes)(boxes, num_rois, box_row_stride, 0, 0, params,
                                            &cancel, &max_area, failed_roi);
}

/* Whether the argmax backward of num_rois RoIs into grad_input of shape takes image blocks:
 * once the RoIs' bins are not few next to the map pixels (the block turns every add into a
 * unit-stride-free, division-free scalar add in a cache-resident block) and a block fits. */
static int PYROI_TYPED(roi_pool_backward_in_image_blocks)(const int64_t shape[4],
                                                          int64_t num_rois,
                                                          const pyroi_roi_pool_params *params)
{
    const int64_t map_pixels = shape[2] * shape[3];
    const double bins =
        (double)num_rois * (double)params->pooled_height * (double)params->pooled_width;
    return PYROI_TYPED(roi_pool_scratch_fits)(map_pixels, 0) &&
           bins * 4.0 >= (double)shape[0] * (double)map_pixels;
}

/* The backward of the call's RoIs (job->rois) once its checks passed, but for the values
 * of argmax. */
static pyroi_status PYROI_TYPED(roi_pool_backward_checked)(PYROI_TYPED(roi_pool_job) *job)
{
    const int64_t *grad_input_shape = job->result_shape;
    const pyroi_roi_pool_params *params = job->params;
    const int64_t map_pixels = grad_input_shape[2] * grad_input_shape[3];
    const int64_t pooled_shape[4] = {job->num_rois, grad_input_shape[1], params->pooled_height,
                                     params->pooled_width};
    const double bins =
        (double)job->num_rois * (double)params->pooled_height * (double)params->pooled_width;
    const int64_t blocks = (grad_input_shape[1] + PYROI_LANES - 1) / PYROI_LANES;
    const int image_blocks = PYROI_TYPED(roi_pool_backward_in_image_blocks)(
        grad_input_shape, job->num_rois, params);
    int workers;
    pyroi_status status;
    /* argmax is the largest array read (int64: twice the gradients'). When the image blocks
     * of the whole gradient fit the scratch limit, the kernels check each entry as they read
     * it and nothing is written before all were read; otherwise a separate pass checks it */
    job->keep_blocks = image_blocks &&
                       (double)grad_input_shape[0] * (double)blocks * (double)(map_pixels + 1) *
                               (double)PYROI_LANE_BYTES <=
                           (double)ROI_POOL_SCRATCH_BYTES;
    if (!job->keep_blocks) {
        status = roi_pool_check_argmax(job->argmax_in, job->argmax_wide, pooled_shape,
                                       job->argmax_strides, map_pixels, params);
        if (status != PYROI_OK) {
            return status;
        }
    }
    if (image_blocks) {
        roi_pool_plan plan;
        status = roi_pool_plan_init(&plan, job->rois, 0);
        if (status != PYROI_OK) {
            return status;
        }
        job->plan = &plan;
        status = PYROI_TYPED(roi_pool_run_lanes)(
            job, PYROI_TYPED(roi_pool_backward_image_task), grad_input_shape[0] * blocks,
            (double)PYROI_LANES *
                (2.0 * (double)map_pixels + bins / (double)grad_input_shape[0]),
            /* + roi_pool_add_run's spare pixel, and a float16 write-out's staging */
            (map_pixels + 1) * PYROI_LANES +
                (job->half_result != NULL ? PYROI_STAGING_RUN * PYROI_LANES : 0));
        roi_pool_plan_free(&plan);
        job->plan = NULL;
        return status;
    }
    /* direct order. Work per channel: zero N planes, then one add per bin of every RoI */
    const double work_per_item = (double)grad_input_shape[0] * (double)map_pixels + bins;
    workers = pyroi_parallel_workers(params->num_threads, grad_input_shape[1], work_per_item);
    return pyroi_parallel_for(workers, grad_input_shape[1], work_per_item, params->cancel,
                              PYROI_TYPED(roi_pool_backward_task), job);
}

/* The backward with an argmax of either width (argmax_wide: int64 entries, else int32). */
static pyroi_status PYROI_TYPED(roi_pool_backward_any)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const void *argmax, const int64_t argmax_strides[4], int argmax_wide,
    const int64_t *batch_indices, int64_t num_rois,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params)
{
    PYROI_TYPED(roi_pool_job) job;
    pyroi_rois rois;
    pyroi_status status = roi_pool_check_backward(
        grad_output, grad_output_strides, argmax, argmax_strides, batch_indices, num_rois,
        grad_input, grad_input_shape, grad_input_strides, params, &rois);
    if (status != PYROI_OK) {
        return status;
    }
    /* nothing to write with an empty grad_input (which may then be NULL), but argmax is
     * still checked */
    if (pyroi_shape_is_empty(grad_input_shape)) {
        const int64_t pooled_shape[4] = {num_rois, grad_input_shape[1], params->pooled_height,
                                         params->pooled_width};
        status = roi_pool_check_argmax(argmax, argmax_wide, pooled_shape, argmax_strides,
                                       grad_input_shape[2] * grad_input_shape[3], params);
    } else {
        memset(&job, 0, sizeof(job));
        job.features = grad_output;
        job.features_strides = grad_output_strides;
        PYROI_TYPED(roi_pool_job_rois)(&job, &rois);
        job.result = grad_input;
        job.result_shape = grad_input_shape;
        job.result_strides = grad_input_strides;
        job.argmax_in = argmax;
        job.argmax_strides = argmax_strides;
        job.argmax_wide = argmax_wide;
        job.params = params;
        status = PYROI_TYPED(roi_pool_backward_checked)(&job);
    }
    pyroi_rois_free(&rois);
    return status;
}

/* The public backward from an argmax of index_type (wide: int64). */
#define ROI_POOL_BACKWARD_ENTRY(name, index_type, wide)                                        \
    pyroi_status PYROI_TYPED(name)(                                                            \
        const T *grad_output, const int64_t grad_output_strides[4],                            \
        const index_type *argmax, const int64_t argmax_strides[4],                             \
        const int64_t *batch_indices, int64_t num_rois, T *grad_input,                         \
        const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],                \
        const pyroi_roi_pool_params *params)                                                   \
    {                                                                                          \
        return PYROI_TYPED(roi_pool_backward_any)(grad_output, grad_output_strides, argmax,    \
                                                  argmax_strides, wide, batch_indices,         \
                                                  num_rois, grad_input, grad_input_shape,      \
                                                  grad_input_strides, params);                 \
    }
ROI_POOL_BACKWARD_ENTRY(pyroi_roi_pool_backward, int64_t, 1)
ROI_POOL_BACKWARD_ENTRY(pyroi_roi_pool_backward_i32, int32_t, 0)
#undef ROI_POOL_BACKWARD_ENTRY
