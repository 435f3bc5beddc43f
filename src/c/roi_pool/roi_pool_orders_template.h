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
                                       job->argmax_strides, job->argmax_wide, job->params,
                                       job->windows + (int64_t)worker * per_worker, begin, end);
}

static void PYROI_TYPED(roi_pool_backward_task)(void *context, int64_t begin, int64_t end,
                                                int worker)
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    (void)worker;
    PYROI_TYPED(roi_pool_backward_channels)(
        job->features, job->features_strides, job->argmax_in, job->argmax_strides,
        job->argmax_wide, job->batch_indices, job->num_rois, job->result, job->result_shape,
        job->result_strides, job->params, begin, end);
}

/* Pools RoI k from a block holding rows from row0 and columns from col0 of the map, pitch
 * pixels per row: values[s][ph][pw][lane] and, unless winners is NULL, winners likewise.
 * A writer (may be NULL) streams out part of the previous tile after each row of bins;
 * lines (may be NULL) receive each row of bins as soon as it is pooled. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_pool_roi_lanes)(const roi_pool_plan *plan, int64_t k,
                                                   const T *block, int64_t sub_stride,
                                                   int64_t pitch, int64_t row0, int64_t col0,
                                                   int64_t width, int64_t pooled_height,
                                                   int64_t pooled_width,
                                                   T *PYROI_RESTRICT values,
                                                   PYROI_TYPED(roi_pool_index) *PYROI_RESTRICT
                                                       winners,
                                                   PYROI_TYPED(roi_pool_writer) *writer,
                                                   const PYROI_TYPED(roi_pool_lines) *lines)
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
        for (s = 0; lines != NULL && s < lines->subs; ++s) {
            pyroi_lines_stream(values + s * tile_sub_stride + ph * pooled_width * PYROI_LANES,
                               pooled_width,
                               lines->base + s * PYROI_LANES + ph * lines->strides[2],
                               lines->strides[3] * (int64_t)sizeof(T));
        }
        if (writer != NULL) { /* a share of the previous tile's stores per row of bins */
            PYROI_TYPED(pyroi_row_stream_advance)(&writer->run, writer->per_row);
            if (winners != NULL) {
                PYROI_TYPED(roi_pool_writer_advance_index)(writer, writer->per_row);
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
    PYROI_TYPED(roi_pool_lines) lines_state;
    int64_t item, i;

    for (item = begin; item < end; ++item) {
        int64_t c0, channels;
        const int64_t group = PYROI_TYPED(lane_block_item)(item, shape[1], ROI_POOL_GROUP_LANES,
                                                           &c0, &channels);
        const int64_t n = plan->rois->group_image[group];
        PYROI_TYPED(roi_pool_region_to_block)(job->features, job->half_features, shape,
                                              job->features_strides, n, c0, whole,
                                              scratch.block, scratch.sub_stride);
        for (i = plan->rois->group_start[group]; i < plan->rois->group_start[group + 1]; ++i) {
            const int64_t k = plan->rois->order[i];
            const PYROI_TYPED(roi_pool_lines) *lines =
                PYROI_TYPED(roi_pool_lines_of)(job, k, c0, &lines_state);
            if (pyroi_cancel_requested(job->params->cancel)) {
                break; /* an item can hold every RoI, each up to the block's pixels */
            }
            PYROI_TYPED(roi_pool_roi_lanes)(plan, k, scratch.block, scratch.sub_stride,
                                            shape[3], 0, 0, shape[3], pooled_height,
                                            pooled_width, scratch.values, scratch.winners,
                                            writer, lines);
            PYROI_TYPED(roi_pool_tiles_to_bins)(job, k, c0, &scratch, writer,
                                                lines != NULL ? lines->subs : 0);
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
    PYROI_TYPED(roi_pool_lines) lines_state;
    int64_t k, c0;

    for (k = begin; k < end; ++k) {
        int64_t region[4];
        roi_pool_region(plan, k, pooled_height, region);
        for (c0 = 0; c0 < shape[1]; c0 += ROI_POOL_GROUP_LANES) {
            if (pyroi_cancel_requested(job->params->cancel)) {
                break; /* a RoI's channel groups: each up to its region's pixels */
            }
            /* packed: sub-blocks region-area apart */
            const int64_t sub_stride =
                (region[1] - region[0]) * (region[3] - region[2]) * PYROI_LANES;
            const PYROI_TYPED(roi_pool_lines) *lines =
                PYROI_TYPED(roi_pool_lines_of)(job, k, c0, &lines_state);
            PYROI_TYPED(roi_pool_region_to_block)(job->features, job->half_features, shape,
                                                  job->features_strides, job->batch_indices[k],
                                                  c0, region, scratch.block, sub_stride);
            PYROI_TYPED(roi_pool_roi_lanes)(plan, k, scratch.block, sub_stride,
                                            region[3] - region[2], region[0], region[2],
                                            shape[3], pooled_height, pooled_width,
                                            scratch.values, scratch.winners, writer, lines);
            PYROI_TYPED(roi_pool_tiles_to_bins)(job, k, c0, &scratch, writer,
                                                lines != NULL ? lines->subs : 0);
        }
    }
    PYROI_TYPED(roi_pool_writer_finish)(writer);
}

/* Adds count (at most ROI_POOL_ADD_CHUNK) output gradients grad[e] at argmax winners[e] into
 * a block (lanes: block[pixel * PYROI_LANES + lane]), entry e into the lane lane_bytes[e] /
 * sizeof(T), in the order of e (torchvision's order for each lane); block[-PYROI_LANES...] is
 * a spare pixel that takes the -1 entries (nothing), so that good entries need no test. Each
 * entry is read once: copied with its check, and added from the copy only when all count
 * were good. Meanwhile it starts loading the next run (next_grad, next_winners; a burst of
 * prefetches before a run was mostly dropped). Returns whether some entry was neither -1 nor
 * a pixel of a plane of plane_size. */
PYROI_CLONE_INLINE int PYROI_TYPED(roi_pool_add_run)(T *PYROI_RESTRICT block, const T *grad,
                                                     const void *winners, int wide,
                                                     int64_t count, const int64_t *lane_bytes,
                                                     uint64_t plane_size, const T *next_grad,
                                                     const void *next_winners)
{
    enum { LINE = PYROI_LANE_BYTES / (int)sizeof(int64_t) }; /* int64 entries a line */
    const int64_t entries_a_line = wide ? LINE : 2 * LINE;
    int64_t checked[ROI_POOL_ADD_CHUNK];
    uint64_t bad = 0; /* of the entries' width: no narrowing in the vector loop */
    char *bytes = (char *)(void *)block;
    int64_t e, first;
    for (e = 0; e < count; ++e) { /* vectorised: the run's one read */
        checked[e] = roi_pool_argmax_get(winners, e, wide);
    }
    /* the check and the offsets take the copy's values (common.h): a compiler that split
     * one loop into a check and an offset loop, each loading argmax, let a racing writer's
     * value past the check */
    PYROI_OWN_COPY(checked);
    for (e = 0; e < count; ++e) { /* vectorised */
        const int64_t a = checked[e];
        /* a is in [-1, plane_size) exactly when a + 1 <= plane_size without sign (a wraps
         * around when below -1); a bad entry's offset is not formed (it could overflow) */
        const int is_bad = (uint64_t)a + 1u > plane_size;
        bad |= (uint64_t)is_bad;
        checked[e] = (is_bad ? 0 : a) * (int64_t)(PYROI_LANES * sizeof(T)) + lane_bytes[e];
    }
    if (bad) {
        return 1;
    }
    for (first = 0; first < count; first += LINE) {
        if (first % entries_a_line == 0) {
            PYROI_PREFETCH(roi_pool_argmax_at(next_winners, first, wide));
        }
        if (first % (PYROI_LANE_BYTES / (int64_t)sizeof(T)) == 0) { /* a line of T */
            PYROI_PREFETCH(next_grad + first);
        }
        if (count - first >= LINE) { /* a whole line: a constant count, unrolled */
            const int64_t *at = checked + first;
            const T *g = grad + first;
            for (e = 0; e < LINE; ++e) {
                *(T *)(void *)(bytes + at[e]) += g[e];
            }
            continue;
        }
        for (e = first; e < count; ++e) {
            *(T *)(void *)(bytes + checked[e]) += grad[e];
        }
    }
    return 0;
}

/* roi_pool_add_run for the bins of one RoI and channel at any strides (the argmax entry of
 * bin (ph, pw) at winners[ph * a_row + pw * a_column], its gradient likewise), into one lane
 * of a block: each entry read once, and only pixels added to. */
PYROI_CLONE_INLINE int PYROI_TYPED(roi_pool_add_strided)(T *PYROI_RESTRICT lane, const T *grad,
                                                    const void *winners, int wide,
                                                    int64_t pooled_height,
                                                    int64_t pooled_width, int64_t g_row,
                                                    int64_t g_column, int64_t a_row,
                                                    int64_t a_column, uint64_t plane_size)
{
    int64_t ph, pw;
    int bad = 0;
    for (ph = 0; ph < pooled_height; ++ph) {
        for (pw = 0; pw < pooled_width; ++pw) {
            const int64_t a = roi_pool_argmax_read_once(winners, ph * a_row + pw * a_column,
                                                        wide);
            bad |= (uint64_t)a + 1u > plane_size;
            if ((uint64_t)a < plane_size) {
                lane[a * PYROI_LANES] += grad[ph * g_row + pw * g_column];
            }
        }
    }
    return bad;
}

/* Whether the image blocks add a RoI's bins of a block's channels as one run: C-contiguous
 * grad_output and argmax (a channel's bins one run of each, channels bins apart), and the
 * run of a block's channels within a chunk of roi_pool_add_run. */
static int PYROI_TYPED(roi_pool_backward_whole_runs)(const int64_t g_strides[4],
                                                     const int64_t a_strides[4],
                                                     int64_t pooled_height,
                                                     int64_t pooled_width)
{
    return PYROI_TYPED(roi_pool_bins_contiguous)(g_strides, pooled_height, pooled_width) &&
           PYROI_TYPED(roi_pool_bins_contiguous)(a_strides, pooled_height, pooled_width) &&
           pooled_height * pooled_width <= ROI_POOL_ADD_CHUNK / PYROI_LANES;
}

/* Backward, work item = (image, channel block): the block accumulates the image's gradient
 * from zero, RoI by RoI in order (each pixel sees torchvision's sequence of additions). With
 * job->keep_blocks each item has its own block, left for roi_pool_backward_write_task once
 * every item was added without a bad argmax entry (argmax is read once, and a bad entry
 * leaves grad_input untouched); otherwise a worker's one block is written out after each
 * item (argmax was checked before). wide: argmax entries are int64, else int32. A float16
 * call (whole runs only) widens each run of gradients before it is added, and rounds the
 * block once as it is written out (staging: after the block). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_pool_backward_images)(PYROI_TYPED(roi_pool_job) *job,
                                                              int64_t begin, int64_t end,
                                                              int worker, int wide)
{
    const roi_pool_plan *plan = job->plan;
    const int64_t *shape = job->result_shape;
    const int64_t *g_strides = job->features_strides, *a_strides = job->argmax_strides;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t block_elements = shape[2] * shape[3] * PYROI_LANES;
    const uint64_t plane_size = (uint64_t)(shape[2] * shape[3]);
    /* in locals: the compiler cannot tell that the block's stores leave them alone */
    const int64_t g_row = g_strides[2], g_column = g_strides[3];
    const int64_t a_row = a_strides[2], a_column = a_strides[3];
    const int64_t bins = pooled_height * pooled_width;
    /* a channel's bins as one run of each; and a RoI's bins of a block's channels */
    const int contiguous = PYROI_TYPED(roi_pool_channel_bins_one_run)(g_strides, pooled_width) &&
                           PYROI_TYPED(roi_pool_channel_bins_one_run)(a_strides, pooled_width);
    const int whole_runs = PYROI_TYPED(roi_pool_backward_whole_runs)(g_strides, a_strides,
                                                                     pooled_height, pooled_width);
    int64_t lane_bytes[ROI_POOL_ADD_CHUNK]; /* roi_pool_add_run's: the lane of each entry */
    T widened[ROI_POOL_ADD_CHUNK];          /* a float16 call's run of gradients */
    /* a block is its spare pixel (roi_pool_add_run), then the image's pixels */
    T *block = job->scratch + (job->keep_blocks ? 0 : worker * job->scratch_stride) +
               PYROI_LANES;
    int64_t item, i, j, e, first, last;
    int bad = 0;

    for (e = 0; e < ROI_POOL_ADD_CHUNK; ++e) {
        lane_bytes[e] = whole_runs && e < PYROI_LANES * bins ? e / bins * (int64_t)sizeof(T) : 0;
    }
    for (i = -PYROI_LANES; !job->keep_blocks && i < block_elements; ++i) {
        block[i] = (T)0; /* then each item's write-out leaves it zero */
    }
    for (item = begin; item < end; ++item) {
        int64_t c0, lanes;
        const int64_t n = PYROI_TYPED(lane_block_item)(item, shape[1], PYROI_LANES, &c0, &lanes);
        if (job->keep_blocks) {
            block = job->scratch + item * job->scratch_stride + PYROI_LANES;
            for (i = -PYROI_LANES; i < block_elements; ++i) {
                block[i] = (T)0;
            }
        }
        pyroi_rois_of_image(plan->rois, n, &first, &last);
        for (i = first; i < last; ++i) {
            const int64_t k = plan->rois->order[i];
            /* the next RoI's gradients and argmax, loaded while this RoI's are added */
            const int64_t next = i + 1 < last ? plan->rois->order[i + 1] : k;
            if (i % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                break; /* the write-out below still leaves the block zero */
            }
            const int64_t grad_at = k * g_strides[0] + c0 * g_strides[1];
            const int64_t winners = k * a_strides[0] + c0 * a_strides[1];
            const int64_t next_grad_at = next * g_strides[0] + c0 * g_strides[1];
            const int64_t next_winners = next * a_strides[0] + c0 * a_strides[1];
            const T *grad, *next_grad;
            if (job->half_features != NULL && sizeof(T) == sizeof(float)) {
                /* float16 (whole runs): the next run's loads start here, by its own bytes */
                pyroi_half_widen_run(job->half_features + grad_at, 1, lanes * bins,
                                     (float *)(void *)widened);
                for (e = 0; e < lanes * bins; e += 32) {
                    PYROI_PREFETCH(job->half_features + next_grad_at + e);
                }
                grad = widened;
                next_grad = widened;
            } else {
                grad = job->features + grad_at;
                next_grad = job->features + next_grad_at;
            }
            if (whole_runs) {
                bad |= PYROI_TYPED(roi_pool_add_run)(
                    block, grad, roi_pool_argmax_at(job->argmax_in, winners, wide), wide,
                    lanes * bins, lane_bytes, plane_size, next_grad,
                    roi_pool_argmax_at(job->argmax_in, next_winners, wide));
                continue;
            }
            for (j = 0; j < lanes; ++j) {
                const int64_t g_at = j * g_strides[1], a_at = j * a_strides[1];
                if (!contiguous) {
                    bad |= PYROI_TYPED(roi_pool_add_strided)(
                        block + j, grad + g_at,
                        roi_pool_argmax_at(job->argmax_in, winners + a_at, wide), wide,
                        pooled_height, pooled_width, g_row, g_column, a_row, a_column,
                        plane_size);
                    continue;
                }
                for (e = 0; e < bins; e += ROI_POOL_ADD_CHUNK) {
                    bad |= PYROI_TYPED(roi_pool_add_run)(
                        block + j, grad + g_at + e,
                        roi_pool_argmax_at(job->argmax_in, winners + a_at + e, wide), wide,
                        bins - e < ROI_POOL_ADD_CHUNK ? bins - e : ROI_POOL_ADD_CHUNK,
                        lane_bytes, plane_size, next_grad + g_at + e,
                        roi_pool_argmax_at(job->argmax_in, next_winners + a_at + e, wide));
                }
            }
        }
        if (!job->keep_blocks && job->half_result != NULL) {
            PYROI_TYPED(lane_block_to_half_image)(block, shape[2], shape[3], n, c0, lanes,
                                                  job->half_result, job->result_strides,
                                                  block + block_elements, 0);
        } else if (!job->keep_blocks) {
            PYROI_TYPED(lane_block_to_image)(block, shape[2], shape[3], n, c0, lanes,
                                             job->result, job->result_strides, NULL);
        }
    }
    job->bad_argmax[worker] |= bad;
}

PYROI_VECTOR_TASK(PYROI_TYPED(roi_pool_backward_image_task))
{
    PYROI_TYPED(roi_pool_job) *job = (PYROI_TYPED(roi_pool_job) *)context;
    if (job->argmax_wide) {
        PYROI_TYPED(roi_pool_backward_images)(job, begin, end, worker, 1);
    } else {
        PYROI_TYPED(roi_pool_backward_images)(job, begin, end, worker, 0);
    }
}

/* Backward with job->keep_blocks, once every item's block holds its sums: work item as
 * roi_pool_backward_image_task's, whose block is written to grad_input. */
static void PYROI_TYPED(roi_pool_backward_write_task)(void *context, int64_t begin,
                                                      int64_t end, int worker)
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    const int64_t *shape = job->result_shape;
    int64_t item;
    (void)worker;
    for (item = begin; item < end; ++item) {
        int64_t c0, lanes;
        const int64_t n = PYROI_TYPED(lane_block_item)(item, shape[1], PYROI_LANES, &c0, &lanes);
        T *block = job->scratch + item * job->scratch_stride + PYROI_LANES;
        if (job->half_result != NULL) {
            PYROI_TYPED(lane_block_to_half_image)(block, shape[2], shape[3], n, c0, lanes,
                                                  job->half_result, job->result_strides,
                                                  block + shape[2] * shape[3] * PYROI_LANES,
                                                  0);
            continue;
        }
        PYROI_TYPED(lane_block_to_region)(block, shape[3], n, c0, lanes, 0, shape[2], 0,
                                          shape[3], job->result, job->result_strides);
    }
}
