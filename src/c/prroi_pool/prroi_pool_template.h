/* prroi_pool_template.h - PrRoIPool's tasks, calls and entry points for one dtype (docs/
 * semantics.md §12). Included by prroi_pool_dtype.h after prroi_pool_math_template.h.
 * Parallel work over disjoint outputs: the forward and the box backward by RoIs (each writes
 * its own output rows), the input backward by blocks of channels (each zeroes its channels of
 * grad_input and adds every RoI into them in RoI order), so results are bit-identical for
 * every thread count. */

/* Fills w[0 .. count) with the weights of the pixels [*first, *first + count) that the bin
 * [a, b] of size `size` reaches on an axis of `extent` pixels; returns count. */
static int64_t PYROI_TYPED(prroi_axis_fill)(double a, double b, double size, int64_t extent,
                                            int64_t capacity, int64_t *first, T *w)
{
    const int64_t count = prroi_axis_range(a, b, size, extent, capacity, first);
    int64_t k;
    for (k = 0; k < count; ++k) {
        w[k] = (T)prroi_axis_weight(a, b, size, (double)(*first + k));
    }
    return count;
}

/* The worker's scratch: row weights wy (max_rows), the rows' edge weights ey (2 * max_rows)
 * and column weights wx (max_cols). */
static T *PYROI_TYPED(prroi_scratch)(const PYROI_TYPED(prroi_job) *job, int worker, T **wy,
                                     T **ey, T **wx)
{
    T *base = (T *)job->scratch + (int64_t)worker * job->scratch_per_worker;
    *wy = base;
    *ey = base + job->max_rows;
    *wx = base + 3 * job->max_rows;
    return base;
}

/* The rows of bin ph of RoI g: bin->row0, bin->rows and the weights wy. */
static void PYROI_TYPED(prroi_rows_of)(const PYROI_TYPED(prroi_job) *job,
                                       const prroi_geometry *g, int64_t ph,
                                       const int64_t shape[4], prroi_bin *bin, T *wy)
{
    const double ya = g->y1 + (double)ph * g->bin_h, yb = g->y1 + (double)(ph + 1) * g->bin_h;
    bin->row0 = 0;
    bin->rows = PYROI_TYPED(prroi_axis_fill)(ya, yb, g->bin_h, shape[2], job->max_rows,
                                             &bin->row0, wy);
}

/* The columns of bin pw of RoI g: bin->col0, bin->cols and the weights wx. */
static void PYROI_TYPED(prroi_cols_of)(const PYROI_TYPED(prroi_job) *job,
                                       const prroi_geometry *g, int64_t pw,
                                       const int64_t shape[4], prroi_bin *bin, T *wx)
{
    const double xa = g->x1 + (double)pw * g->bin_w, xb = g->x1 + (double)(pw + 1) * g->bin_w;
    bin->col0 = 0;
    bin->cols = PYROI_TYPED(prroi_axis_fill)(xa, xb, g->bin_w, shape[3], job->max_cols,
                                             &bin->col0, wx);
}

/* The weights of every bin of one axis of RoI g (rows: ya = y1' + b * bh, else columns),
 * into w (capacity values) with bin b's first pixel, count and offset in first[b],
 * count[b], at[b]. */
static void PYROI_TYPED(prroi_axis_table)(const PYROI_TYPED(prroi_job) *job,
                                          const prroi_geometry *g, int rows, int64_t bins,
                                          int64_t extent, int64_t capacity, int64_t *first,
                                          int64_t *count, int64_t *at, T *w)
{
    const double start = rows ? g->y1 : g->x1, size = rows ? g->bin_h : g->bin_w;
    const int64_t per_bin = rows ? job->max_rows : job->max_cols;
    int64_t b, used = 0;
    for (b = 0; b < bins; ++b) {
        const double a = start + (double)b * size, e = start + (double)(b + 1) * size;
        const int64_t room = capacity - used < per_bin ? capacity - used : per_bin;
        first[b] = 0;
        at[b] = used;
        count[b] = PYROI_TYPED(prroi_axis_fill)(a, e, size, extent, room, &first[b], w + used);
        used += count[b];
    }
}

/* Forward for RoIs [roi_begin, roi_end): per RoI the weights of all its bins, then channel by
 * channel every bin, so that a channel's window of the RoI stays in the L1 cache across the
 * bins (docs/semantics.md §12.1). */
static void PYROI_TYPED(prroi_forward_task)(void *context, int64_t roi_begin, int64_t roi_end,
                                            int worker)
{
    const PYROI_TYPED(prroi_job) *job = (const PYROI_TYPED(prroi_job) *)context;
    const int64_t *shape = job->tensors.features_shape, *in = job->tensors.features_strides;
    const int64_t *out = job->tensors.result_strides;
    const int64_t channels = shape[1];
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    /* parts: a RoI's pixels read for one channel (parallel.h) */
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(job->params->cancel, 1);
    int64_t *row_first = job->meta + (int64_t)worker * 3 * (pooled_height + pooled_width);
    int64_t *row_count = row_first + pooled_height, *row_at = row_count + pooled_height;
    int64_t *col_first = row_at + pooled_height, *col_count = col_first + pooled_width;
    int64_t *col_at = col_count + pooled_width;
    T *wy, *ey, *wx, *row_w, *col_w;
    int64_t k, ph, pw, c;
    (void)PYROI_TYPED(prroi_scratch)(job, worker, &wy, &ey, &wx);
    row_w = wx + job->max_cols;
    col_w = row_w + job->row_table;
    for (k = roi_begin; k < roi_end; ++k) {
        const prroi_geometry g = PYROI_TYPED(prroi_roi)(job, k);
        const T *image = job->tensors.features + job->tensors.batch_indices[k] * in[0];
        T *result = job->tensors.result + k * out[0];
        int64_t pixels = 0;
        PYROI_TYPED(prroi_axis_table)(job, &g, 1, pooled_height, shape[2], job->row_table,
                                      row_first, row_count, row_at, row_w);
        PYROI_TYPED(prroi_axis_table)(job, &g, 0, pooled_width, shape[3], job->col_table,
                                      col_first, col_count, col_at, col_w);
        for (ph = 0; ph < pooled_height; ++ph) {
            for (pw = 0; pw < pooled_width; ++pw) {
                pixels += row_count[ph] * col_count[pw] + 1;
            }
        }
        for (c = 0; c + 4 <= channels; c += 4) { /* four channels at a time */
            const T *plane = image + c * in[1];
            T *at = result + c * out[1];
            if (pyroi_cancel_count_work(&countdown, 4 * pixels)) {
                return; /* the output is unspecified once cancelled */
            }
            for (ph = 0; ph < pooled_height; ++ph) {
                prroi_bin bin;
                bin.row0 = row_first[ph];
                bin.rows = row_count[ph];
                for (pw = 0; pw < pooled_width; ++pw) {
                    T values[4] = {(T)0, (T)0, (T)0, (T)0};
                    T *to = at + ph * out[2] + pw * out[3];
                    bin.col0 = col_first[pw];
                    bin.cols = col_count[pw];
                    if (bin.rows > 0 && bin.cols > 0) {
                        PYROI_TYPED(prroi_bin_value4)(
                            plane + bin.row0 * in[2] + bin.col0 * in[3], in[1], in, &bin,
                            row_w + row_at[ph], col_w + col_at[pw], values);
                    }
                    to[0] = values[0];
                    to[out[1]] = values[1];
                    to[2 * out[1]] = values[2];
                    to[3 * out[1]] = values[3];
                }
            }
        }
        for (; c < channels; ++c) { /* the last channels, one at a time */
            const T *plane = image + c * in[1];
            T *at = result + c * out[1];
            if (pyroi_cancel_count_work(&countdown, pixels)) {
                return; /* the output is unspecified once cancelled */
            }
            for (ph = 0; ph < pooled_height; ++ph) {
                prroi_bin bin;
                bin.row0 = row_first[ph];
                bin.rows = row_count[ph];
                for (pw = 0; pw < pooled_width; ++pw) {
                    bin.col0 = col_first[pw];
                    bin.cols = col_count[pw];
                    at[ph * out[2] + pw * out[3]] =
                        bin.rows == 0 || bin.cols == 0
                            ? (T)0 /* off the map, or no area */
                            : PYROI_TYPED(prroi_bin_value)(
                                  plane + bin.row0 * in[2] + bin.col0 * in[3], in, &bin,
                                  row_w + row_at[ph], col_w + col_at[pw]);
                }
            }
        }
    }
}

/* Input backward for channel blocks [block_begin, block_end): their planes of every image
 * zeroed, then every RoI's bins added in RoI order. */
static void PYROI_TYPED(prroi_backward_task)(void *context, int64_t block_begin,
                                             int64_t block_end, int worker)
{
    const PYROI_TYPED(prroi_job) *job = (const PYROI_TYPED(prroi_job) *)context;
    const int64_t *shape = job->tensors.result_shape, *gi = job->tensors.result_strides;
    const int64_t *go = job->tensors.features_strides;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t c_begin = block_begin * job->channel_block;
    const int64_t c_end = block_end * job->channel_block < shape[1]
                              ? block_end * job->channel_block
                              : shape[1];
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(job->params->cancel, 1);
    T *wy, *ey, *wx;
    int64_t k, ph, pw, c;
    (void)PYROI_TYPED(prroi_scratch)(job, worker, &wy, &ey, &wx);
    if (pyroi_zero_channels(job->tensors.result, sizeof(T), shape, gi, c_begin, c_end,
                            job->params->cancel)) {
        return;
    }
    for (k = 0; k < job->tensors.num_rois; ++k) {
        const prroi_geometry g = PYROI_TYPED(prroi_roi)(job, k);
        T *image = job->tensors.result + job->tensors.batch_indices[k] * gi[0];
        const T *grad = job->tensors.features + k * go[0];
        if (pyroi_cancel_count_work(&countdown, 1)) {
            return;
        }
        for (ph = 0; ph < pooled_height; ++ph) {
            prroi_bin bin;
            PYROI_TYPED(prroi_rows_of)(job, &g, ph, shape, &bin, wy);
            if (bin.rows == 0) {
                continue;
            }
            for (pw = 0; pw < pooled_width; ++pw) {
                PYROI_TYPED(prroi_cols_of)(job, &g, pw, shape, &bin, wx);
                if (bin.cols == 0) {
                    continue;
                }
                if (pyroi_cancel_count_work(&countdown, bin.rows * bin.cols * (c_end - c_begin))) {
                    return; /* grad_input is unspecified once cancelled */
                }
                for (c = c_begin; c < c_end; ++c) {
                    T *plane = image + c * gi[1] + bin.row0 * gi[2] + bin.col0 * gi[3];
                    PYROI_TYPED(prroi_bin_scatter)(plane, gi, &bin, wy, wx,
                                                   grad[c * go[1] + ph * go[2] + pw * go[3]]);
                }
            }
        }
    }
}

/* The rows' tent weights of the edges y = ya (ey[i]) and y = yb (ey[rows + i]) of bin ph. */
static void PYROI_TYPED(prroi_edge_rows)(const prroi_geometry *g, int64_t ph,
                                         const prroi_bin *bin, T *ey)
{
    const double edges[2] = {g->y1 + (double)ph * g->bin_h, g->y1 + (double)(ph + 1) * g->bin_h};
    int64_t at[2], i;
    double weight[2];
    int e, t, taps;
    for (i = 0; i < 2 * bin->rows; ++i) {
        ey[i] = (T)0;
    }
    for (e = 0; e < 2; ++e) {
        taps = prroi_edge_taps(edges[e], bin->row0, bin->rows, at, weight);
        for (t = 0; t < taps; ++t) {
            ey[e * bin->rows + at[t]] = (T)weight[t];
        }
    }
}

/* Box backward for RoIs [roi_begin, roi_end): each RoI's row of 4 gradients. */
static void PYROI_TYPED(prroi_backward_boxes_task)(void *context, int64_t roi_begin,
                                                   int64_t roi_end, int worker)
{
    const PYROI_TYPED(prroi_job) *job = (const PYROI_TYPED(prroi_job) *)context;
    const int64_t *shape = job->map_shape, *in = job->map_strides;
    const int64_t *go = job->tensors.features_strides;
    const int64_t channels = shape[1];
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(job->params->cancel, 1);
    T *wy, *ey, *wx;
    int64_t k, ph, pw, c;
    (void)PYROI_TYPED(prroi_scratch)(job, worker, &wy, &ey, &wx);
    for (k = roi_begin; k < roi_end; ++k) {
        const prroi_geometry g = PYROI_TYPED(prroi_roi)(job, k);
        const T *image = job->map + job->tensors.batch_indices[k] * in[0];
        const T *grad = job->tensors.features + k * go[0];
        T *row = job->grad_boxes + k * job->grad_box_row_stride;
        double d_x1 = 0.0, d_y1 = 0.0, d_x2 = 0.0, d_y2 = 0.0;
        for (ph = 0; ph < pooled_height && g.bin_h > 0.0 && g.bin_w > 0.0; ++ph) {
            /* the edges' shares of y1' and y2' (ya = y1' + ph * bh, yb = ya + bh) */
            const double top1 = 1.0 - (double)ph / (double)pooled_height;
            const double bottom1 = 1.0 - (double)(ph + 1) / (double)pooled_height;
            prroi_bin bin;
            PYROI_TYPED(prroi_rows_of)(job, &g, ph, shape, &bin, wy);
            if (bin.rows == 0) {
                continue;
            }
            PYROI_TYPED(prroi_edge_rows)(&g, ph, &bin, ey);
            for (pw = 0; pw < pooled_width; ++pw) {
                const double xa = g.x1 + (double)pw * g.bin_w;
                const double xb = g.x1 + (double)(pw + 1) * g.bin_w;
                const double left1 = 1.0 - (double)pw / (double)pooled_width;
                const double right1 = 1.0 - (double)(pw + 1) / (double)pooled_width;
                double d_ya = 0.0, d_yb = 0.0, d_xa = 0.0, d_xb = 0.0;
                PYROI_TYPED(prroi_cols_of)(job, &g, pw, shape, &bin, wx);
                if (bin.cols == 0) {
                    continue;
                }
                bin.left_taps = prroi_edge_taps(xa, bin.col0, bin.cols, bin.left_at,
                                                bin.left_weight);
                bin.right_taps = prroi_edge_taps(xb, bin.col0, bin.cols, bin.right_at,
                                                 bin.right_weight);
                if (pyroi_cancel_count_work(&countdown, bin.rows * (bin.cols + 4) * channels)) {
                    return; /* grad_boxes is unspecified once cancelled */
                }
                for (c = 0; c < channels; ++c) {
                    const T *plane = image + c * in[1] + bin.row0 * in[2] + bin.col0 * in[3];
                    const double gc = (double)grad[c * go[1] + ph * go[2] + pw * go[3]];
                    T sums[5];
                    PYROI_TYPED(prroi_bin_edges)(plane, in, &bin, wy, wx, ey, sums);
                    d_ya += gc * ((double)sums[0] - (double)sums[1]);
                    d_yb += gc * ((double)sums[2] - (double)sums[0]);
                    d_xa += gc * ((double)sums[0] - (double)sums[3]);
                    d_xb += gc * ((double)sums[4] - (double)sums[0]);
                }
                d_ya /= g.bin_h;
                d_yb /= g.bin_h;
                d_xa /= g.bin_w;
                d_xb /= g.bin_w;
                d_y1 += d_ya * top1 + d_yb * bottom1;
                d_y2 += d_ya * (1.0 - top1) + d_yb * (1.0 - bottom1);
                d_x1 += d_xa * left1 + d_xb * right1;
                d_x2 += d_xa * (1.0 - left1) + d_xb * (1.0 - right1);
            }
        }
        row[0] = (T)(d_x1 * job->params->spatial_scale_w);
        row[1] = (T)(d_y1 * job->params->spatial_scale_h);
        row[2] = (T)(d_x2 * job->params->spatial_scale_w);
        row[3] = (T)(d_y2 * job->params->spatial_scale_h);
    }
}

/* Runs task over `items` items of work_per_item each with the workers' scratch (the job's
 * max_rows and max_cols set); PYROI_E_NO_MEMORY when the scratch cannot be had. */
static pyroi_status PYROI_TYPED(prroi_run)(PYROI_TYPED(prroi_job) *job, int64_t items,
                                           double work_per_item, pyroi_range_task task)
{
    const int workers = pyroi_parallel_workers(job->params->num_threads, items, work_per_item);
    const double per_worker = (double)(3 * job->max_rows + job->max_cols) +
                              (double)job->row_table + (double)job->col_table + 8.0;
    const double meta = job->row_table > 0 ? 3.0 * ((double)job->params->pooled_height +
                                                    (double)job->params->pooled_width)
                                           : 0.0;
    pyroi_status status;
    if ((per_worker * (double)sizeof(T) + meta * 8.0) * (double)workers > PRROI_SCRATCH_LIMIT) {
        return PYROI_E_NO_MEMORY;
    }
    job->meta = NULL;
    if (meta > 0.0) {
        job->meta = (int64_t *)malloc((size_t)meta * (size_t)workers * sizeof(int64_t));
        if (job->meta == NULL) {
            return PYROI_E_NO_MEMORY;
        }
    }
    job->scratch_per_worker = ((int64_t)per_worker + 7) / 8 * 8; /* a line for each worker */
    job->scratch = pyroi_aligned_malloc((size_t)job->scratch_per_worker *
                                                  (size_t)workers * sizeof(T));
    if (job->scratch == NULL) {
        free(job->meta);
        return PYROI_E_NO_MEMORY;
    }
    status = pyroi_parallel_for(workers, items, work_per_item, job->params->cancel, task, job);
    pyroi_aligned_free(job->scratch);
    free(job->meta);
    return status;
}

/* The start of every call: the parameters, the tensors, the RoI copy, the box scan and the
 * job (its tensors and geometry bounds). On PYROI_OK the caller frees *rois. */
static pyroi_status PYROI_TYPED(prroi_prepare)(
    PYROI_TYPED(prroi_job) *job, const T *features, const int64_t features_shape[4],
    const int64_t features_strides[4], pyroi_tensor_role features_role, const T *pooled,
    const int64_t pooled_strides[4], pyroi_tensor_role pooled_role, const T *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    const pyroi_prroi_pool_params *params, pyroi_rois *rois, double *work)
{
    int64_t failed_roi;
    pyroi_status status = pyroi_check_prroi_pool_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    status = prroi_check_call(features, features_shape, features_strides, features_role,
                              pooled, pooled_strides, pooled_role, boxes, num_rois,
                              box_row_stride, batch_indices, params, sizeof(T), rois);
    if (status != PYROI_OK) {
        return status;
    }
    memset(job, 0, sizeof(*job));
    job->params = params;
    status = PYROI_TYPED(prroi_scan_boxes)((const T *)rois->boxes, num_rois, features_shape,
                                           params, &rois->cancel, &job->max_rows,
                                           &job->max_cols, work, &failed_roi);
    if (status != PYROI_OK) {
        pyroi_rois_free(rois);
    }
    return status;
}

pyroi_status PYROI_TYPED(pyroi_prroi_pool_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    T *output, const int64_t output_strides[4], const pyroi_prroi_pool_params *params)
{
    PYROI_TYPED(prroi_job) job;
    pyroi_rois rois;
    double work;
    pyroi_status status = PYROI_TYPED(prroi_prepare)(
        &job, input, input_shape, input_strides, PYROI_TENSOR_INPUT, output, output_strides,
        PYROI_TENSOR_OUTPUT, boxes, num_rois, box_row_stride, batch_indices, params, &rois,
        &work);
    if (status != PYROI_OK) {
        return status;
    }
    if (num_rois > 0 && input_shape[1] > 0) { /* a map without pixels may be NULL */
        PYROI_TYPED(job_tensors_init)(&job.tensors,
                                      (const T *)pyroi_data_or_placeholder(input), input_shape,
                                      input_strides, &rois, output, NULL, output_strides);
        /* a RoI's bins reach at most the axis plus the two pixels each shares with its
         * neighbours, and each at most max_rows (max_cols) */
        job.row_table = (int64_t)PRROI_MIN(
            PRROI_MIN((double)params->pooled_height * (double)job.max_rows,
                      (double)input_shape[2] + 3.0 * (double)params->pooled_height),
            PRROI_TABLE_LIMIT);
        job.col_table = (int64_t)PRROI_MIN(
            PRROI_MIN((double)params->pooled_width * (double)job.max_cols,
                      (double)input_shape[3] + 3.0 * (double)params->pooled_width),
            PRROI_TABLE_LIMIT);
        status = PYROI_TYPED(prroi_run)(&job, num_rois, work * (double)input_shape[1],
                                        PYROI_TYPED(prroi_forward_task));
    }
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_prroi_pool_backward)(
    const T *grad_output, const int64_t grad_output_strides[4], const T *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices, T *grad_input,
    const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_prroi_pool_params *params)
{
    PYROI_TYPED(prroi_job) job;
    pyroi_rois rois;
    double work, plane, per_channel;
    int64_t blocks;
    pyroi_status status = PYROI_TYPED(prroi_prepare)(
        &job, grad_input, grad_input_shape, grad_input_strides, PYROI_TENSOR_OUTPUT,
        grad_output, grad_output_strides, PYROI_TENSOR_INPUT, boxes, num_rois, box_row_stride,
        batch_indices, params, &rois, &work);
    if (status != PYROI_OK) {
        return status;
    }
    /* nothing to write with an empty grad_input (which may then be NULL) */
    if (!pyroi_shape_is_empty(grad_input_shape)) {
        PYROI_TYPED(job_tensors_init)(&job.tensors, grad_output, NULL, grad_output_strides,
                                      &rois, grad_input, grad_input_shape, grad_input_strides);
        /* work per channel: zero its planes of every image, then every RoI's bins */
        plane = (double)grad_input_shape[0] * (double)grad_input_shape[2] *
                (double)grad_input_shape[3];
        per_channel = plane + (double)num_rois * work;
        /* blocks of channels share each bin's weights; the sums of a channel do not depend
         * on the block it is in */
        job.channel_block = grad_input_shape[1] >= 64 ? 8 : 1;
        blocks = (grad_input_shape[1] + job.channel_block - 1) / job.channel_block;
        status = PYROI_TYPED(prroi_run)(&job, blocks, per_channel * (double)job.channel_block,
                                        PYROI_TYPED(prroi_backward_task));
    }
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_prroi_pool_backward_boxes)(
    const T *grad_output, const int64_t grad_output_strides[4], const T *input,
    const int64_t input_shape[4], const int64_t input_strides[4], const T *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices, T *grad_boxes,
    int64_t grad_box_row_stride, const pyroi_prroi_pool_params *params)
{
    PYROI_TYPED(prroi_job) job;
    pyroi_rois rois;
    double work;
    int64_t k;
    pyroi_status status = pyroi_check_prroi_pool_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    /* the rows of gradients are checked with the tensors, before the RoIs */
    status = pyroi_check_pooling_call(input, input_shape, input_strides, PYROI_TENSOR_INPUT,
                                      grad_output, grad_output_strides, PYROI_TENSOR_INPUT, -1,
                                      params->pooled_height, params->pooled_width, boxes,
                                      num_rois, box_row_stride, 4, batch_indices);
    if (status == PYROI_OK) {
        status = pyroi_check_grad_box_rows(grad_boxes, num_rois, grad_box_row_stride);
    }
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(prroi_prepare)(
        &job, input, input_shape, input_strides, PYROI_TENSOR_INPUT, grad_output,
        grad_output_strides, PYROI_TENSOR_INPUT, boxes, num_rois, box_row_stride, batch_indices,
        params, &rois, &work);
    if (status != PYROI_OK) {
        return status;
    }
    if (num_rois > 0 && (input_shape[1] == 0 || pyroi_shape_is_empty(input_shape))) {
        for (k = 0; k < num_rois; ++k) { /* no channel or no pixel: nothing depends on a box */
            T *row = grad_boxes + k * grad_box_row_stride;
            row[0] = row[1] = row[2] = row[3] = (T)0;
        }
    } else if (num_rois > 0) {
        PYROI_TYPED(job_tensors_init)(&job.tensors, grad_output, NULL, grad_output_strides,
                                      &rois, NULL, NULL, NULL);
        job.map = input;
        job.map_shape = input_shape;
        job.map_strides = input_strides;
        job.grad_boxes = grad_boxes;
        job.grad_box_row_stride = grad_box_row_stride;
        status = PYROI_TYPED(prroi_run)(&job, num_rois, 2.0 * work * (double)input_shape[1],
                                        PYROI_TYPED(prroi_backward_boxes_task));
    }
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_prroi_pool_find_invalid_roi)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    int64_t num_images, const pyroi_prroi_pool_params *params, int64_t *failed_roi)
{
    int64_t k;
    /* the calls test every batch index before any box: report in the same order */
    const pyroi_status status = pyroi_find_invalid_batch_index(
        pyroi_check_prroi_pool_params(params), boxes, num_rois, box_row_stride, 4,
        batch_indices, num_images, 0, 0, failed_roi);
    if (status != PYROI_OK) {
        return status;
    }
    for (k = 0; k < num_rois; ++k) {
        const T *box = boxes + k * box_row_stride;
        const double corners[4] = {(double)box[0], (double)box[1], (double)box[2],
                                   (double)box[3]};
        prroi_geometry g;
        if (!prroi_geometry_of(corners, params, &g)) {
            *failed_roi = k;
            return PYROI_E_INVALID_BOX;
        }
    }
    return PYROI_OK;
}
