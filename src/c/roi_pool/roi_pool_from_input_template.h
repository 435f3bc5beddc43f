/* roi_pool_from_input_template.h - RoIPool's backward from the forward's input instead of
 * its argmax: each bin's maximum is found again from the map (the forward's bin windows and
 * lane-major max kernel) and its gradient added at the first pixel of the window equal to it
 * (roi_pool_bin_add_at_max: the argmax kernel's winner, so the same pixel), RoI after RoI in
 * the argmax backward's order per pixel. The argmax backward reads an argmax as large as
 * grad_output (int32: 30 MB for a VGG conv5 call of 300 RoIs); the map is a few MB and stays
 * in the caches, and a training layer keeps it anyway. Included by roi_pool.c once per dtype
 * with T, PYROI_TYPED(name), ROI_POOL_ROUND, ROI_POOL_FLOOR and ROI_POOL_CEIL defined. */

/* A worker's scratch (elements of T): the channels-last image block (ROI_POOL_GROUP
 * sub-blocks), the gradient sums in the same layout, lane-major tiles of one RoI's maxima and
 * gradients, and the staging of a float16 write-out (lane_block_to_half_image). */
static int64_t PYROI_TYPED(roi_pool_from_input_scratch_elements)(int64_t map_pixels,
                                                                 int64_t bins)
{
    return ROI_POOL_GROUP_LANES * (2 * map_pixels + 2 * bins) +
           PYROI_STAGING_RUN * PYROI_LANES;
}

/* Whether the backward from the input of num_rois RoIs on a map of shape takes the
 * lane-major order (else it goes through an argmax): the argmax backward's choice of its
 * image blocks, with the block and the sums in the scratch. */
static int PYROI_TYPED(roi_pool_from_input_in_lanes)(const int64_t shape[4], int64_t num_rois,
                                                     int64_t bins)
{
    const int64_t map_pixels = shape[2] * shape[3];
    return PYROI_TYPED(roi_pool_scratch_fits)(2 * map_pixels, bins) &&
           (double)num_rois * (double)bins * 4.0 >= (double)shape[0] * (double)map_pixels;
}

/* The gradients of RoI k for the channel group at c0 as lane-major tiles
 * (tiles[s][bin][lane], a sub-block past the last channel 0): one transposition per
 * sub-block when a channel's bins are one run (packed_bins), else one per row of bins. */
static void PYROI_TYPED(roi_pool_grad_tiles)(const PYROI_TYPED(roi_pool_job) *job, int64_t k,
                                             int64_t c0, int packed_bins, T *tiles)
{
    const int64_t *g_strides = job->features_strides;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t bins = pooled_height * pooled_width;
    int64_t s, ph;
    for (s = 0; s < ROI_POOL_GROUP; ++s) {
        const int64_t lanes = PYROI_TYPED(roi_pool_sub_lanes)(job->result_shape[1], c0, s);
        const int64_t grad = k * g_strides[0] + (c0 + s * PYROI_LANES) * g_strides[1];
        T *tile = tiles + s * bins * PYROI_LANES;
        if (lanes == 0) {
            memset(tile, 0, (size_t)(bins * PYROI_LANES) * sizeof(T));
        } else if (packed_bins) {
            PYROI_TYPED(lane_block_to_lanes)(job->features, job->half_features, grad,
                                             g_strides[1], 1, bins, lanes, tile, PYROI_LANES);
        } else {
            for (ph = 0; ph < pooled_height; ++ph) {
                PYROI_TYPED(lane_block_to_lanes)(job->features, job->half_features,
                                                 grad + ph * g_strides[2], g_strides[1],
                                                 g_strides[3], pooled_width, lanes,
                                                 tile + ph * pooled_width * PYROI_LANES,
                                                 PYROI_LANES);
            }
        }
    }
}

/* Backward from the input, work item = (image, channel group): the group's channels of the
 * image are gathered channels-last once; for each RoI of the image in order, each bin's
 * window is scanned twice in a row, for the maxima and then to add the gradients at the
 * winners (the second scan reads the window from L1). */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_pool_backward_from_input_task))
{
    PYROI_TYPED(roi_pool_job) *job = (PYROI_TYPED(roi_pool_job) *)context;
    const roi_pool_plan *plan = job->plan;
    const int64_t *shape = job->result_shape;
    const int64_t *g_strides = job->features_strides;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t map_pixels = shape[2] * shape[3];
    const int64_t whole[4] = {0, shape[2], 0, shape[3]};
    const int64_t sub_stride = map_pixels * PYROI_LANES;
    const int64_t bins = pooled_height * pooled_width;
    const int64_t tile_sub_stride = bins * PYROI_LANES;
    const int packed_bins = g_strides[3] == 1 && g_strides[2] == pooled_width;
    /* the next RoI's gradients of the group are one run when channels are packed too */
    const int packed_group = packed_bins && g_strides[1] == bins;
    T *block = job->scratch + worker * job->scratch_stride;
    T *sums = block + ROI_POOL_GROUP * sub_stride; /* zero, and left zero by each item */
    T *values = sums + ROI_POOL_GROUP * sub_stride;
    T *grads = values + ROI_POOL_GROUP * tile_sub_stride;
    T *staging = grads + ROI_POOL_GROUP * tile_sub_stride;
    /* bytes of an element of grad_output, and the element offset of a cache line */
    const int64_t grad_bytes = job->half_features != NULL ? 2 : (int64_t)sizeof(T);
    const int64_t line_elements = 64 / grad_bytes;
    int64_t item, i, s, ph, pw, first, last;

    memset(sums, 0, (size_t)(ROI_POOL_GROUP * sub_stride) * sizeof(T));
    for (item = begin; item < end; ++item) {
        int64_t c0, channels, lines;
        const int64_t n = PYROI_TYPED(lane_block_item)(item, shape[1], ROI_POOL_GROUP_LANES,
                                                       &c0, &channels);
        /* cache lines of one RoI's gradients of the group, prefetched a few per bin */
        lines = (grad_bytes * channels * bins + 63) / 64;
        pyroi_rois_of_image(plan->rois, n, &first, &last);
        if (first < last) {
            PYROI_TYPED(roi_pool_region_to_block)(job->map, job->half_map, shape,
                                                  job->map_strides, n, c0, whole, block,
                                                  sub_stride);
        }
        for (i = first; i < last; ++i) {
            const int64_t k = plan->rois->order[i];
            const roi_pool_window *row_windows = plan->windows + k * plan->bins;
            const roi_pool_window *col_windows = row_windows + pooled_height;
            /* the next RoI's gradients, loaded while this RoI's are added */
            const int64_t next =
                (i + 1 < last ? plan->rois->order[i + 1] : k) * g_strides[0] + c0 * g_strides[1];
            int64_t line = 0;
            if (i % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                break; /* the write-out below still leaves the sums zero */
            }
            PYROI_TYPED(roi_pool_grad_tiles)(job, k, c0, packed_bins, grads);
            for (ph = 0; ph < pooled_height; ++ph) {
                const roi_pool_window rw = row_windows[ph];
                for (pw = 0; pw < pooled_width; ++pw) {
                    const roi_pool_window cw = col_windows[pw];
                    const int64_t bin = (ph * pooled_width + pw) * PYROI_LANES;
                    const int64_t at = (rw.begin * shape[3] + cw.begin) * PYROI_LANES;
                    if (packed_group) {
                        for (; line * bins < lines * (ph * pooled_width + pw + 1); ++line) {
                            PYROI_TYPED(lane_block_prefetch_element)(
                                job->features, job->half_features, next + line * line_elements);
                        }
                    }
                    if (rw.end > rw.begin && cw.end > cw.begin) { /* else no winner */
                        PYROI_TYPED(roi_pool_bin_max)(block + at, sub_stride, shape[3], rw, cw,
                                                      values + bin, tile_sub_stride);
                        PYROI_TYPED(roi_pool_bin_add_at_max)(block + at, sub_stride, shape[3],
                                                             rw, cw, values + bin, grads + bin,
                                                             tile_sub_stride, sums + at);
                    }
                }
            }
        }
        for (s = 0; s < ROI_POOL_GROUP; ++s) {
            const int64_t lanes = PYROI_TYPED(roi_pool_sub_lanes)(shape[1], c0, s);
            if (lanes > 0 && job->half_result != NULL) {
                PYROI_TYPED(lane_block_to_half_image)(sums + s * sub_stride, shape[2], shape[3],
                                                      n, c0 + s * PYROI_LANES, lanes,
                                                      job->half_result, job->result_strides,
                                                      staging, 0);
            } else if (lanes > 0) {
                PYROI_TYPED(lane_block_to_image)(sums + s * sub_stride, shape[2], shape[3], n,
                                                 c0 + s * PYROI_LANES, lanes, job->result,
                                                 job->result_strides, NULL);
            }
        }
    }
}

/* Where the lane-major order does not pay (a map too large for the scratch, or few bins next
 * to its pixels), the argmax is made by the forward into a temporary and read by the argmax
 * backward: the same results, at the argmax's memory. job: the backward's, as
 * roi_pool_backward_from_input_checked receives it. */
static pyroi_status PYROI_TYPED(roi_pool_backward_through_argmax)(PYROI_TYPED(roi_pool_job) *job)
{
    const int64_t *shape = job->result_shape;
    const pyroi_roi_pool_params *params = job->params;
    const int64_t pooled_shape[4] = {job->num_rois, shape[1], params->pooled_height,
                                     params->pooled_width};
    int64_t pooled_strides[4], count = 1;
    PYROI_TYPED(roi_pool_job) forward;
    T *pooled;
    int64_t *argmax;
    pyroi_status status;
    int i;
    for (i = 3; i >= 0; --i) { /* C-contiguous */
        pooled_strides[i] = count;
        if (!pyroi_mul_nonneg(count, pooled_shape[i], &count) ||
            (uint64_t)count > (uint64_t)SIZE_MAX / (sizeof(T) + sizeof(int64_t))) {
            return PYROI_E_NO_MEMORY;
        }
    }
    pooled = (T *)malloc((size_t)count * sizeof(T) + 1);
    argmax = (int64_t *)malloc((size_t)count * sizeof(int64_t) + 1);
    if (pooled == NULL || argmax == NULL) {
        free(pooled);
        free(argmax);
        return PYROI_E_NO_MEMORY;
    }
    /* the forward of the same RoIs on the same map, into the temporaries */
    forward = (PYROI_TYPED(roi_pool_job)){.features = job->map, .features_shape = shape,
                                          .features_strides = job->map_strides,
                                          .result = pooled, .result_strides = pooled_strides,
                                          .argmax_out = argmax,
                                          .argmax_strides = pooled_strides, .argmax_wide = 1,
                                          .params = params};
    PYROI_TYPED(roi_pool_job_rois)(&forward, job->rois);
    status = PYROI_TYPED(roi_pool_forward_checked)(&forward);
    if (status == PYROI_OK) {
        job->argmax_in = argmax;
        job->argmax_strides = pooled_strides;
        job->argmax_wide = 1;
        status = PYROI_TYPED(roi_pool_backward_checked)(job);
        job->argmax_in = NULL;
        job->argmax_strides = NULL;
    }
    free(pooled);
    free(argmax);
    return status;
}

/* The backward from the input of the call's RoIs (job->rois) once its checks passed. */
static pyroi_status PYROI_TYPED(roi_pool_backward_from_input_checked)(
    PYROI_TYPED(roi_pool_job) *job)
{
    const int64_t *shape = job->result_shape;
    const pyroi_roi_pool_params *params = job->params;
    const int64_t map_pixels = shape[2] * shape[3];
    const int64_t bins = params->pooled_height * params->pooled_width;
    const int64_t groups = (shape[1] + ROI_POOL_GROUP_LANES - 1) / ROI_POOL_GROUP_LANES;
    double max_area;
    int64_t failed_roi;
    roi_pool_plan plan;
    pyroi_status status = PYROI_TYPED(roi_pool_scan_boxes)(
        job->boxes, job->num_rois, job->box_row_stride, shape[2], shape[3], params,
        &job->rois->cancel, &max_area, &failed_roi);
    if (status != PYROI_OK || pyroi_shape_is_empty(shape)) {
        return status;
    }
    if (!PYROI_TYPED(roi_pool_from_input_in_lanes)(shape, job->num_rois, bins)) {
        return PYROI_TYPED(roi_pool_backward_through_argmax)(job); /* never for float16 */
    }
    status = roi_pool_plan_init(&plan, job->rois, params->pooled_height + params->pooled_width);
    if (status == PYROI_OK) {
        status = PYROI_TYPED(roi_pool_plan_windows)(&plan, job->boxes, job->num_rois,
                                                    job->box_row_stride, shape[2], shape[3],
                                                    params, &job->rois->cancel);
    }
    if (status == PYROI_OK) {
        job->plan = &plan;
        status = PYROI_TYPED(roi_pool_run_lanes)(
            job, PYROI_TYPED(roi_pool_backward_from_input_task), shape[0] * groups,
            (double)ROI_POOL_GROUP_LANES *
                (plan.visits / (double)shape[0] + 3.0 * (double)map_pixels),
            PYROI_TYPED(roi_pool_from_input_scratch_elements)(map_pixels, bins));
        job->plan = NULL;
    }
    roi_pool_plan_free(&plan);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_pool_backward_from_input)(
    const T *grad_output, const int64_t grad_output_strides[4], const T *input,
    const int64_t input_shape[4], const int64_t input_strides[4], const T *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices, T *grad_input,
    const int64_t grad_input_strides[4], const pyroi_roi_pool_params *params)
{
    int64_t shape[4]; /* read once: it sizes both maps */
    PYROI_TYPED(roi_pool_job) job;
    pyroi_rois rois;
    pyroi_status status;
    if (input_shape != NULL) {
        memcpy(shape, input_shape, sizeof(shape));
    }
    status = roi_pool_check_backward_from_input(
        grad_output, grad_output_strides, input, input_shape == NULL ? NULL : shape,
        input_strides, boxes, num_rois, box_row_stride, batch_indices, grad_input,
        grad_input_strides, params, sizeof(T), &rois);
    if (status != PYROI_OK) {
        return status;
    }
    /* the map has no pixels: input may be NULL */
    job = (PYROI_TYPED(roi_pool_job)){.features = grad_output,
                                      .features_strides = grad_output_strides,
                                      .map = (const T *)pyroi_data_or_placeholder(input),
                                      .map_strides = input_strides, .result = grad_input,
                                      .result_shape = shape,
                                      .result_strides = grad_input_strides, .params = params};
    PYROI_TYPED(roi_pool_job_rois)(&job, &rois);
    status = PYROI_TYPED(roi_pool_backward_from_input_checked)(&job);
    pyroi_rois_free(&rois);
    return status;
}
