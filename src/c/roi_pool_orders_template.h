/* roi_pool_orders_template.h - RoIPool's loop orders: the direct tasks (torchvision's order)
 * and the lane-major tasks (image blocks, RoI regions; the backward's image blocks). Included
 * by roi_pool.c once per dtype with T, PYROI_TYPED(name), ROI_POOL_ROUND, ROI_POOL_FLOOR and
 * ROI_POOL_CEIL defined. */

static void PYROI_TYPED(roi_pool_forward_task)(void *context, int64_t begin, int64_t end,
                                               int worker)
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    const int64_t per_worker = job->params->pooled_height + job->params->pooled_width;
    PYROI_TYPED(roi_pool_forward_rois)(job->features, job->features_shape, job->features_strides,
                                       job->boxes, job->box_row_stride, job->batch_indices,
                                       job->result, job->result_strides, job->argmax_out,
                                       job->argmax_strides, job->params,
                                       job->windows + (int64_t)worker * per_worker, begin, end);
}

static void PYROI_TYPED(roi_pool_backward_task)(void *context, int64_t begin, int64_t end,
                                                int worker)
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    (void)worker;
    PYROI_TYPED(roi_pool_backward_channels)(
        job->features, job->features_strides, job->argmax_in, job->argmax_strides,
        job->batch_indices, job->num_rois, job->result, job->result_shape,
        job->result_strides, job->params, begin, end);
}

/* Pools RoI k from a block holding rows from row0 and columns from col0 of the map, pitch
 * pixels per row: values[s][ph][pw][lane] and, unless winners is NULL, winners likewise.
 * A writer (may be NULL) streams out part of the previous tile after each row of bins. */
static inline void PYROI_TYPED(roi_pool_roi_lanes)(const roi_pool_plan *plan, int64_t k,
                                                   const T *block, int64_t sub_stride,
                                                   int64_t pitch, int64_t row0, int64_t col0,
                                                   int64_t width, int64_t pooled_height,
                                                   int64_t pooled_width,
                                                   T *PYROI_RESTRICT values,
                                                   PYROI_TYPED(roi_pool_index) *PYROI_RESTRICT
                                                       winners,
                                                   PYROI_TYPED(roi_pool_writer) *writer)
{
    const roi_pool_window *row_windows = plan->windows + k * plan->bins;
    const roi_pool_window *col_windows = row_windows + pooled_height;
    const int64_t tile_sub_stride = pooled_height * pooled_width * PYROI_LANES;
    int64_t ph, pw, s, j;
    for (ph = 0; ph < pooled_height; ++ph) {
        const roi_pool_window rw = row_windows[ph];
        for (pw = 0; pw < pooled_width; ++pw) {
            const roi_pool_window cw = col_windows[pw];
            const int64_t bin = (ph * pooled_width + pw) * PYROI_LANES;
            if (rw.end <= rw.begin || cw.end <= cw.begin) { /* clipped away: 0, argmax -1 */
                for (s = 0; s < ROI_POOL_GROUP; ++s) {
                    for (j = 0; j < PYROI_LANES; ++j) {
                        values[s * tile_sub_stride + bin + j] = (T)0;
                        if (winners != NULL) {
                            winners[s * tile_sub_stride + bin + j] = -1;
                        }
                    }
                }
            } else {
                /* the window lies inside the block's rows and columns */
                const T *first =
                    block + ((rw.begin - row0) * pitch + cw.begin - col0) * PYROI_LANES;
                if (winners == NULL) {
                    PYROI_TYPED(roi_pool_bin_max)(first, sub_stride, pitch, rw, cw,
                                                  values + bin, tile_sub_stride);
                } else {
                    PYROI_TYPED(roi_pool_bin_argmax)(first, sub_stride, pitch, width, rw, cw,
                                                     values + bin, winners + bin,
                                                     tile_sub_stride);
                }
            }
        }
        if (writer != NULL) { /* a share of the previous tile's stores per row of bins */
            PYROI_TYPED(pyroi_row_stream_advance)(&writer->run, writer->per_row);
            if (winners != NULL) {
                pyroi_row_stream_advance_i64(&writer->index_run, writer->per_row);
            }
        }
    }
}

/* Forward, work item = (image with RoIs, channel group). */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_pool_forward_image_task))
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    const roi_pool_plan *plan = job->plan;
    const int64_t *shape = job->features_shape;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t whole[4] = {0, shape[2], 0, shape[3]};
    const PYROI_TYPED(roi_pool_scratch) scratch =
        PYROI_TYPED(roi_pool_scratch_of)(job, worker, shape[2] * shape[3]);
    PYROI_TYPED(roi_pool_writer) writer_state;
    PYROI_TYPED(roi_pool_writer) *writer = PYROI_TYPED(roi_pool_writer_of)(job, &writer_state);
    int64_t item, i;

    for (item = begin; item < end; ++item) {
        int64_t c0, channels;
        const int64_t group = PYROI_TYPED(lane_block_item)(item, shape[1], ROI_POOL_GROUP_LANES,
                                                           &c0, &channels);
        const int64_t n = plan->rois->group_image[group];
        PYROI_TYPED(roi_pool_region_to_block)(job->features, shape, job->features_strides, n,
                                              c0, whole, scratch.block, scratch.sub_stride);
        for (i = plan->rois->group_start[group]; i < plan->rois->group_start[group + 1]; ++i) {
            const int64_t k = plan->rois->order[i];
            if (i % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                break; /* an item can hold every RoI: the call ends at the next chunk */
            }
            PYROI_TYPED(roi_pool_roi_lanes)(plan, k, scratch.block, scratch.sub_stride,
                                            shape[3], 0, 0, shape[3], pooled_height,
                                            pooled_width, scratch.values, scratch.winners,
                                            writer);
            PYROI_TYPED(roi_pool_tiles_to_bins)(job, k, c0, &scratch, writer);
        }
    }
    PYROI_TYPED(roi_pool_writer_finish)(writer);
}

/* Forward, work item = RoI: for each channel group only the RoI's region is gathered. */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_pool_forward_region_task))
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    const roi_pool_plan *plan = job->plan;
    const int64_t *shape = job->features_shape;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const PYROI_TYPED(roi_pool_scratch) scratch =
        PYROI_TYPED(roi_pool_scratch_of)(job, worker, plan->max_area);
    PYROI_TYPED(roi_pool_writer) writer_state;
    PYROI_TYPED(roi_pool_writer) *writer = PYROI_TYPED(roi_pool_writer_of)(job, &writer_state);
    int64_t k, c0;

    for (k = begin; k < end; ++k) {
        int64_t region[4];
        roi_pool_region(plan, k, pooled_height, region);
        for (c0 = 0; c0 < shape[1]; c0 += ROI_POOL_GROUP_LANES) {
            /* packed: sub-blocks region-area apart */
            const int64_t sub_stride =
                (region[1] - region[0]) * (region[3] - region[2]) * PYROI_LANES;
            PYROI_TYPED(roi_pool_region_to_block)(job->features, shape, job->features_strides,
                                                  job->batch_indices[k], c0, region,
                                                  scratch.block, sub_stride);
            PYROI_TYPED(roi_pool_roi_lanes)(plan, k, scratch.block, sub_stride,
                                            region[3] - region[2], region[0], region[2],
                                            shape[3], pooled_height, pooled_width,
                                            scratch.values, scratch.winners, writer);
            PYROI_TYPED(roi_pool_tiles_to_bins)(job, k, c0, &scratch, writer);
        }
    }
    PYROI_TYPED(roi_pool_writer_finish)(writer);
}

/* Starts loading one channel's output gradients and argmax, elements of each from grad and
 * winners (one cache line per 64 bytes). */
static inline void PYROI_TYPED(roi_pool_prefetch_run)(const T *grad, const int64_t *winners,
                                                      int64_t elements)
{
    int64_t e;
    for (e = 0; e < elements; e += PYROI_LANE_BYTES / (int64_t)sizeof(T)) {
        PYROI_PREFETCH(grad + e);
    }
    for (e = 0; e < elements; e += PYROI_LANE_BYTES / (int64_t)sizeof(int64_t)) {
        PYROI_PREFETCH(winners + e);
    }
}

/* Backward, work item = (image, channel block): the block accumulates the image's gradient
 * from zero, RoI by RoI in order (each pixel sees torchvision's sequence of additions), and
 * is then written out whole. */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_pool_backward_image_task))
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    const roi_pool_plan *plan = job->plan;
    const int64_t *shape = job->result_shape;
    const int64_t *g_strides = job->features_strides, *a_strides = job->argmax_strides;
    const int64_t *gi_strides = job->result_strides;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t block_elements = shape[2] * shape[3] * PYROI_LANES;
    const int64_t plane_size = shape[2] * shape[3];
    /* in locals: the compiler cannot tell that the block's stores leave them alone */
    const int64_t g_row = g_strides[2], g_column = g_strides[3];
    const int64_t a_row = a_strides[2], a_column = a_strides[3];
    T *block = job->scratch + worker * job->scratch_stride;
    /* what to prefetch of a channel: its bins when they are one run, else the first */
    const int64_t run_elements =
        g_row == pooled_width * g_column && a_row == pooled_width * a_column &&
                g_column == 1 && a_column == 1
            ? pooled_height * pooled_width
            : 1;
    int64_t item, i, j, ph, pw, first, last;

    for (i = 0; i < block_elements; ++i) { /* then each item's write-out leaves it zero */
        block[i] = (T)0;
    }
    for (item = begin; item < end; ++item) {
        int64_t c0, lanes;
        const int64_t n = PYROI_TYPED(lane_block_item)(item, shape[1], PYROI_LANES, &c0, &lanes);
        pyroi_rois_of_image(plan->rois, n, &first, &last);
        for (i = first; i < last; ++i) {
            const int64_t k = plan->rois->order[i];
            /* the next RoI's gradients and argmax, channel by channel while this RoI's are
             * added: a burst of prefetches before the RoI was mostly dropped */
            const int64_t next = i + 1 < last ? plan->rois->order[i + 1] : k;
            if (i % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                break; /* the write-out below still leaves the block zero */
            }
            for (j = 0; j < lanes; ++j) {
                const T *grad = job->features + k * g_strides[0] + (c0 + j) * g_strides[1];
                const int64_t *winners = job->argmax_in + k * a_strides[0] +
                                         (c0 + j) * a_strides[1];
                T *lane = block + j;
                PYROI_TYPED(roi_pool_prefetch_run)(
                    job->features + next * g_strides[0] + (c0 + j) * g_strides[1],
                    job->argmax_in + next * a_strides[0] + (c0 + j) * a_strides[1],
                    run_elements);
                for (ph = 0; ph < pooled_height; ++ph) {
                    const int64_t *winner = winners + ph * a_row;
                    const T *g = grad + ph * g_row;
                    for (pw = 0; pw < pooled_width; ++pw) {
                        const int64_t a = winner[pw * a_column];
                        if (roi_pool_argmax_is_pixel(a, plane_size)) { /* -1: nothing */
                            lane[a * PYROI_LANES] += g[pw * g_column];
                        }
                    }
                }
            }
        }
        PYROI_TYPED(lane_block_to_image)(block, shape[2], shape[3], n, c0, lanes, job->result,
                                         gi_strides, NULL);
    }
}
