/* deform_roi_pool_template.h - deformable RoI pooling's tasks, calls and entry points for one
 * dtype (docs/semantics.md §14). Included by deform_roi_pool_dtype.h after
 * deform_roi_pool_bins_template.h. Parallel work over disjoint outputs: the forward and the
 * offset backward by RoIs (each writes its own rows), the input backward by blocks of
 * channels (each zeroes its channels of grad_input and adds every RoI into them in RoI
 * order), so results are bit-identical for every thread count. A bin's sum and its scatter
 * are the sampler's (pyroi_bilinear_bin_sum / _scatter), in RoIAlign's order: with zero
 * offsets the results are aligned RoIAlign's, bit for bit. */

/* Forward for RoIs [begin, end): bin after bin, its taps once, then every channel. */
static void PYROI_TYPED(deform_forward_task)(void *context, int64_t begin, int64_t end,
                                             int worker)
{
    const PYROI_TYPED(deform_job) *job = (const PYROI_TYPED(deform_job) *)context;
    const pyroi_deform_roi_pool_params *params = job->params;
    const int64_t *shape = job->map_shape, *in = job->map_strides, *out = job->pooled_strides;
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(params->cancel, 1);
    int64_t k, ph, pw, c;
    for (k = begin; k < end; ++k) {
        const T *image = job->map + job->rois->batch_indices[k] * in[0];
        T *result = job->output + k * out[0];
        PYROI_TYPED(deform_roi) roi;
        PYROI_TYPED(deform_roi_of)(job, k, &roi);
        for (ph = 0; ph < params->pooled_height; ++ph) {
            for (pw = 0; pw < params->pooled_width; ++pw) {
                PYROI_TYPED(deform_bin) bin;
                pyroi_tap_range rr = {0, 0, 0}, cr = {0, 0, 0};
                const T mask = PYROI_TYPED(deform_mask_of)(job, k, ph, pw);
                PYROI_TYPED(deform_bin_of)(job, k, ph, pw, &roi, worker,
                                           &bin);
                rr.end = bin.rows;
                cr.end = bin.cols;
                for (c = 0; c < shape[1]; ++c) {
                    T value;
                    if (pyroi_cancel_count_work(&countdown, rr.end * cr.end + 1)) {
                        return; /* the output is unspecified once cancelled */
                    }
                    value = PYROI_TYPED(pyroi_bilinear_bin_sum)(
                                image + c * in[1], NULL, NULL, in[2], in[3], bin.row_taps,
                                rr, bin.col_taps, cr) /
                            roi.count;
                    if (job->mask != NULL) {
                        value = value * mask; /* mmcv: the pooled mean times the mask */
                    }
                    result[c * out[1] + ph * out[2] + pw * out[3]] = value;
                }
            }
        }
    }
}

/* Input backward for channel blocks [block_begin, block_end): their planes of every image
 * zeroed, then every RoI's bins added in RoI order. */
static void PYROI_TYPED(deform_backward_task)(void *context, int64_t block_begin,
                                              int64_t block_end, int worker)
{
    const PYROI_TYPED(deform_job) *job = (const PYROI_TYPED(deform_job) *)context;
    const pyroi_deform_roi_pool_params *params = job->params;
    const int64_t *shape = job->map_shape, *gi = job->map_strides, *go = job->pooled_strides;
    const int64_t c_begin = block_begin * job->channel_block;
    const int64_t c_end = block_end * job->channel_block < shape[1]
                              ? block_end * job->channel_block
                              : shape[1];
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(params->cancel, 1);
    int64_t k, ph, pw, c;
    if (pyroi_zero_channels(job->grad_map, sizeof(T), shape, gi, c_begin, c_end,
                            params->cancel)) {
        return;
    }
    for (k = 0; k < job->rois->num_rois; ++k) {
        T *image = job->grad_map + job->rois->batch_indices[k] * gi[0];
        const T *grad = job->grad + k * go[0];
        PYROI_TYPED(deform_roi) roi;
        PYROI_TYPED(deform_roi_of)(job, k, &roi);
        if (pyroi_cancel_count_work(&countdown, 1)) {
            return;
        }
        for (ph = 0; ph < params->pooled_height; ++ph) {
            for (pw = 0; pw < params->pooled_width; ++pw) {
                PYROI_TYPED(deform_bin) bin;
                pyroi_tap_range rr = {0, 0, 0}, cr = {0, 0, 0};
                const T mask = PYROI_TYPED(deform_mask_of)(job, k, ph, pw);
                PYROI_TYPED(deform_bin_of)(job, k, ph, pw, &roi, worker,
                                           &bin);
                rr.end = bin.rows;
                cr.end = bin.cols;
                if (rr.end == 0 || cr.end == 0) {
                    continue;
                }
                for (c = c_begin; c < c_end; ++c) {
                    T g = grad[c * go[1] + ph * go[2] + pw * go[3]];
                    if (pyroi_cancel_count_work(&countdown, rr.end * cr.end + 1)) {
                        return; /* grad_input is unspecified once cancelled */
                    }
                    if (job->mask != NULL) {
                        g = g * mask; /* the gradient of the pooled mean times the mask */
                    }
                    PYROI_TYPED(pyroi_bilinear_bin_scatter)(image + c * gi[1], gi[2], gi[3],
                                                            bin.row_taps, rr, bin.col_taps, cr,
                                                            g, roi.samples);
                }
            }
        }
    }
}

/* A bin's sums over one plane, as the offset backward forms them (docs/semantics.md §14.2):
 * sums[0] the slope along y of the sum of its sampled values, sums[1] along x (per sample
 * the neighbours' differences weighted by the other axis's weights, times the tap's slope:
 * 0 where the sampler clamps), sums[2] the sum itself (the forward's); in T, in sample order.
 * The lane-major task evaluates the same expressions per lane. */
static void PYROI_TYPED(deform_bin_slopes)(const T *plane, const int64_t *in,
                                           const PYROI_TYPED(deform_bin) *bin, T sums[3])
{
    T along_y = (T)0, along_x = (T)0, sum = (T)0;
    int64_t r, q;
    for (r = 0; r < bin->rows; ++r) {
        const PYROI_TYPED(deform_tap) ty = bin->row_taps[r];
        const T slope_y = PYROI_TYPED(pyroi_axis_tap_slope)(bin->row_positions[r], ty);
        const T *lo = plane + ty.lo * in[2], *hi = plane + ty.hi * in[2];
        for (q = 0; q < bin->cols; ++q) {
            const PYROI_TYPED(deform_tap) tx = bin->col_taps[q];
            const T slope_x = PYROI_TYPED(pyroi_axis_tap_slope)(bin->col_positions[q], tx);
            const int64_t left = tx.lo * in[3], right = tx.hi * in[3];
            const T v00 = lo[left], v01 = lo[right], v10 = hi[left], v11 = hi[right];
            const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
            const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
            along_y +=
                slope_y * ((tx.w_lo * v10 + tx.w_hi * v11) - (tx.w_lo * v00 + tx.w_hi * v01));
            along_x += slope_x * (ty.w_lo * (v01 - v00) + ty.w_hi * (v11 - v10));
            sum += w1 * v00 + w2 * v01 + w3 * v10 + w4 * v11;
        }
    }
    sums[0] = along_y;
    sums[1] = along_x;
    sums[2] = sum;
}

/* Offset and mask backward for RoIs [begin, end): per bin, channel by channel, its three
 * sums (deform_bin_slopes) weighted by grad_output and added in double, a lane group of
 * channels (PYROI_LANES) at a time and then the groups in order - the order of the
 * lane-major task's partial sums, so both give the same bits. */
static void PYROI_TYPED(deform_backward_offset_task)(void *context, int64_t begin, int64_t end,
                                                     int worker)
{
    const PYROI_TYPED(deform_job) *job = (const PYROI_TYPED(deform_job) *)context;
    const pyroi_deform_roi_pool_params *params = job->params;
    const int64_t *shape = job->map_shape, *in = job->map_strides, *go = job->pooled_strides;
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(params->cancel, 1);
    int64_t k, ph, pw, c;
    for (k = begin; k < end; ++k) {
        const T *image = job->map + job->rois->batch_indices[k] * in[0];
        const T *grad = job->grad + k * go[0];
        PYROI_TYPED(deform_roi) roi;
        PYROI_TYPED(deform_roi_of)(job, k, &roi);
        for (ph = 0; ph < params->pooled_height; ++ph) {
            for (pw = 0; pw < params->pooled_width; ++pw) {
                PYROI_TYPED(deform_bin) bin;
                double total[3] = {0.0, 0.0, 0.0}, group[3] = {0.0, 0.0, 0.0};
                int64_t i;
                PYROI_TYPED(deform_bin_of)(job, k, ph, pw, &roi, worker,
                                           &bin);
                for (c = 0; c < shape[1] && bin.rows > 0 && bin.cols > 0; ++c) {
                    const double g = (double)grad[c * go[1] + ph * go[2] + pw * go[3]];
                    T sums[3];
                    if (pyroi_cancel_count_work(&countdown, 2 * bin.rows * bin.cols + 1)) {
                        return; /* the gradients are unspecified once cancelled */
                    }
                    PYROI_TYPED(deform_bin_slopes)(image + c * in[1], in, &bin, sums);
                    group[0] += g * (double)sums[0];
                    group[1] += g * (double)sums[1];
                    group[2] += g * (double)(sums[2] / roi.count);
                    if ((c + 1) % PYROI_LANES == 0 || c + 1 == shape[1]) {
                        for (i = 0; i < 3; ++i) {
                            total[i] += group[i];
                            group[i] = 0.0;
                        }
                    }
                }
                PYROI_TYPED(deform_write_bin_gradients)(job, k, ph, pw, total, &roi);
            }
        }
    }
}

/* Runs task over `items` items with every worker's tap tables (2 * capacity taps, then, for
 * the offset backward's positions, 2 * capacity T per worker after all the taps) and, for
 * the lane-major tasks (job->block_elements > 0), its block and tile. */
static pyroi_status PYROI_TYPED(deform_run)(PYROI_TYPED(deform_job) *job, int64_t items,
                                            double work_per_item, pyroi_range_task task)
{
    const int workers = pyroi_parallel_workers(job->params->num_threads, items, work_per_item);
    const double bytes = 2.0 * (double)job->capacity * (double)workers *
                         ((double)sizeof(PYROI_TYPED(deform_tap)) + (double)sizeof(T));
    const double block_bytes =
        (double)job->block_elements * (double)workers * (double)sizeof(T);
    pyroi_status status;
    /* in double, against size_t too: a 32-bit target's size_t holds less than the limits */
    if (bytes > DEFORM_SCRATCH_LIMIT || bytes >= (double)SIZE_MAX ||
        block_bytes >= (double)SIZE_MAX) {
        return PYROI_E_NO_MEMORY;
    }
    job->workers = workers;
    job->scratch = (PYROI_TYPED(deform_tap) *)malloc((size_t)bytes);
    job->blocks = NULL;
    if (job->scratch != NULL && job->block_elements > 0) {
        job->blocks = (T *)pyroi_aligned_malloc((size_t)block_bytes);
    }
    if (job->scratch == NULL || (job->block_elements > 0 && job->blocks == NULL)) {
        free(job->scratch);
        return PYROI_E_NO_MEMORY;
    }
    status = pyroi_parallel_for(workers, items, work_per_item, job->params->cancel, task, job);
    pyroi_aligned_free(job->blocks);
    free(job->scratch);
    return status;
}

/* Whether a call takes the lane-major order (image blocks; the results are the same bits
 * either way): when a worker's block and tile fit DEFORM_BLOCK_BYTES and the samples are
 * worth gathering each image with RoIs once per lane group (their work, 4 taps each, at
 * least a sixteenth of the gathered pixels'). Sets job->block_elements (0: direct order). */
static int PYROI_TYPED(deform_use_blocks)(PYROI_TYPED(deform_job) *job,
                                          const int64_t map_shape[4], int64_t num_rois,
                                          double total_samples)
{
    const double pixels = (double)map_shape[2] * (double)map_shape[3];
    const double bins = (double)job->params->pooled_height * (double)job->params->pooled_width;
    const double images = (double)(map_shape[0] < num_rois ? map_shape[0] : num_rois);
    job->block_elements = 0;
    if ((pixels + bins) * (double)PYROI_LANE_BYTES > DEFORM_BLOCK_BYTES ||
        64.0 * total_samples < images * pixels) {
        return 0;
    }
    /* a line for each worker's block */
    job->block_elements = ((int64_t)(pixels + bins) * PYROI_LANES + PYROI_LANES - 1) /
                          PYROI_LANES * PYROI_LANES;
    return 1;
}

/* The call's tap table from the scan's counts (job->plan_start, plan_rows): their prefix
 * sums, then every RoI's slice filled in parallel. A table beyond DEFORM_PLAN_BYTES is not
 * made (the kernels find each bin's taps themselves, the same taps). */
static pyroi_status PYROI_TYPED(deform_plan)(PYROI_TYPED(deform_job) *job, int64_t num_rois,
                                             double work)
{
    const int64_t bins = num_rois * job->params->pooled_height * job->params->pooled_width;
    const double per_tap = (double)sizeof(PYROI_TYPED(deform_tap)) + (double)sizeof(T);
    int64_t i, taps = 0;
    for (i = 0; i < bins; ++i) { /* counts to starts (the sum fits: the scan bounded it) */
        const int64_t count = job->plan_start[i];
        job->plan_start[i] = taps;
        taps += count;
    }
    job->plan_start[bins] = taps;
    if ((double)taps * per_tap > DEFORM_PLAN_BYTES) {
        return PYROI_OK;
    }
    job->plan_taps = (PYROI_TYPED(deform_tap) *)malloc((size_t)taps * sizeof(*job->plan_taps) +
                                                       1);
    job->plan_positions = (T *)malloc((size_t)taps * sizeof(T) + 1);
    if (job->plan_taps == NULL || job->plan_positions == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    return pyroi_parallel_for(pyroi_parallel_workers(job->params->num_threads, num_rois, work),
                              num_rois, work, job->params->cancel,
                              PYROI_TYPED(deform_plan_task), job);
}

/* Frees what deform_prepare made: the offsets' copy, the tap table, the RoIs' copy. */
static void PYROI_TYPED(deform_release)(PYROI_TYPED(deform_job) *job, pyroi_rois *rois,
                                        T *shifts)
{
    free(job->plan_start);
    free(job->plan_rows);
    free(job->plan_taps);
    free(job->plan_positions);
    job->plan_start = job->plan_rows = NULL;
    job->plan_taps = NULL;
    job->plan_positions = NULL;
    free(shifts);
    pyroi_rois_free(rois);
}

/* The start of every call once its tensors are checked: the RoIs and the offsets copied,
 * every box checked and the bins scanned (job->capacity, *work per channel of the busiest
 * RoI, *total samples of all), and in a call with channels the tap table. On PYROI_OK the
 * caller calls deform_release. */
static pyroi_status PYROI_TYPED(deform_prepare)(
    PYROI_TYPED(deform_job) *job, const int64_t map_shape[4], const T *boxes, int64_t num_rois,
    int64_t box_row_stride, const int64_t *batch_indices, const T *offset,
    const int64_t offset_strides[4], const pyroi_deform_roi_pool_params *params,
    pyroi_rois *rois, T **shifts, double *work, double *total)
{
    const double bins = (double)num_rois * (double)params->pooled_height *
                        (double)params->pooled_width;
    int64_t failed_roi;
    pyroi_status status = pyroi_rois_copy(rois, boxes, sizeof(T), num_rois, box_row_stride, 4,
                                          batch_indices, map_shape[0], NULL, params->cancel);
    if (status != PYROI_OK) {
        return status;
    }
    job->params = params;
    job->rois = rois;
    job->map_shape = map_shape;
    status = PYROI_TYPED(deform_copy_offsets)(offset, offset_strides, num_rois, params,
                                              &rois->cancel, shifts);
    if (status == PYROI_OK && map_shape[1] > 0 && bins > 0.0 &&
        (bins + 1.0) * 16.0 <= DEFORM_PLAN_BYTES) { /* room for the scan's counts */
        job->plan_start = (int64_t *)malloc((size_t)(bins + 1.0) * sizeof(int64_t));
        job->plan_rows = (int64_t *)malloc((size_t)bins * sizeof(int64_t));
        if (job->plan_start == NULL || job->plan_rows == NULL) {
            status = PYROI_E_NO_MEMORY;
        }
    }
    if (status == PYROI_OK) {
        job->shifts = *shifts;
        status = PYROI_TYPED(deform_scan)(job, map_shape[2], map_shape[3], map_shape[1] > 0,
                                          &rois->cancel, &job->capacity, work, total,
                                          &failed_roi);
    }
    if (status == PYROI_OK && job->plan_start != NULL) {
        status = PYROI_TYPED(deform_plan)(job, num_rois, *work);
    }
    if (status != PYROI_OK) {
        PYROI_TYPED(deform_release)(job, rois, *shifts);
    }
    return status;
}

/* The offset backward's schedule: the lane-major passes (partial sums by image and lane
 * group, then their sum by RoI) when deform_use_blocks takes them and the partial sums fit
 * DEFORM_PARTIAL_BYTES, else the direct task; the same bits either way. */
static pyroi_status PYROI_TYPED(deform_offset_backward_run)(PYROI_TYPED(deform_job) *job,
                                                            pyroi_rois *rois,
                                                            const int64_t map_shape[4],
                                                            double work, double total)
{
    const int64_t num_rois = rois->num_rois;
    const double bins = (double)job->params->pooled_height * (double)job->params->pooled_width;
    const int64_t groups = (map_shape[1] + PYROI_LANES - 1) / PYROI_LANES;
    pyroi_status status;
    if (!PYROI_TYPED(deform_use_blocks)(job, map_shape, num_rois, total) ||
        (double)num_rois * bins * (double)groups * 24.0 > DEFORM_PARTIAL_BYTES) {
        job->block_elements = 0;
        return PYROI_TYPED(deform_run)(job, num_rois, 12.0 * work * (double)map_shape[1],
                                       PYROI_TYPED(deform_backward_offset_task));
    }
    status = pyroi_rois_group_by_image(rois);
    if (status != PYROI_OK) {
        return status;
    }
    job->lane_groups = groups;
    job->partials = (double *)malloc((size_t)((double)num_rois * bins * (double)groups * 24.0));
    if (job->partials == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    status = PYROI_TYPED(deform_run)(
        job, rois->num_groups * groups,
        ((double)map_shape[2] * (double)map_shape[3] + 12.0 * total / (double)rois->num_groups) *
            (double)PYROI_LANES,
        PYROI_TYPED(deform_offset_blocks_task));
    if (status == PYROI_OK) {
        job->block_elements = 0;
        status = PYROI_TYPED(deform_run)(job, num_rois, 3.0 * bins * (double)groups,
                                         PYROI_TYPED(deform_offset_reduce_task));
    }
    free(job->partials);
    return status;
}

/* The checks of the per-bin tensors every entry point takes: offset (K, 2, PH, PW) and mask
 * (K, 1, PH, PW), both read. */
static pyroi_status PYROI_TYPED(deform_check_offset_mask)(
    const T *offset, const int64_t offset_strides[4], const T *mask,
    const int64_t mask_strides[4], int64_t num_rois, const pyroi_deform_roi_pool_params *params)
{
    const pyroi_status status = deform_check_bins(offset, offset_strides, num_rois, 2, params,
                                                  PYROI_TENSOR_INPUT);
    if (status != PYROI_OK) {
        return status;
    }
    return deform_check_bins(mask, mask_strides, num_rois, 1, params, PYROI_TENSOR_INPUT);
}

pyroi_status PYROI_TYPED(pyroi_deform_roi_pool_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    const T *offset, const int64_t offset_strides[4], const T *mask,
    const int64_t mask_strides[4], T *output, const int64_t output_strides[4],
    const pyroi_deform_roi_pool_params *params)
{
    PYROI_TYPED(deform_job) job;
    pyroi_rois rois;
    T *shifts = NULL;
    double work, total;
    pyroi_status status = pyroi_check_deform_roi_pool_params(params);
    if (status == PYROI_OK) {
        status = pyroi_check_pooling_call(input, input_shape, input_strides, PYROI_TENSOR_INPUT,
                                          output, output_strides, PYROI_TENSOR_OUTPUT, -1,
                                          params->pooled_height, params->pooled_width, boxes,
                                          num_rois, box_row_stride, 4, batch_indices);
    }
    if (status == PYROI_OK) {
        status = PYROI_TYPED(deform_check_offset_mask)(offset, offset_strides, mask,
                                                       mask_strides, num_rois, params);
    }
    if (status != PYROI_OK) {
        return status;
    }
    memset(&job, 0, sizeof job);
    status = PYROI_TYPED(deform_prepare)(&job, input_shape, boxes, num_rois, box_row_stride,
                                         batch_indices, offset, offset_strides, params, &rois,
                                         &shifts, &work, &total);
    if (status != PYROI_OK) {
        return status;
    }
    if (num_rois > 0 && input_shape[1] > 0) {
        job.map = input;
        job.map_shape = input_shape;
        job.map_strides = input_strides;
        job.output = output;
        job.pooled_strides = output_strides;
        job.mask = mask;
        job.mask_strides = mask_strides;
        if (!PYROI_TYPED(deform_use_blocks)(&job, input_shape, num_rois, total)) {
            status = PYROI_TYPED(deform_run)(&job, num_rois, 4.0 * work * (double)input_shape[1],
                                             PYROI_TYPED(deform_forward_task));
        } else if ((status = pyroi_rois_group_by_image(&rois)) == PYROI_OK) {
            const int64_t groups = (input_shape[1] + PYROI_LANES - 1) / PYROI_LANES;
            /* an item: one image's lane group, its gather and its RoIs' samples */
            const double per_item = (double)input_shape[2] * (double)input_shape[3] +
                                    4.0 * total / (double)rois.num_groups;
            status = PYROI_TYPED(deform_run)(&job, rois.num_groups * groups,
                                             per_item * (double)PYROI_LANES,
                                             PYROI_TYPED(deform_forward_blocks_task));
        }
    }
    PYROI_TYPED(deform_release)(&job, &rois, shifts);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_deform_roi_pool_backward)(
    const T *grad_output, const int64_t grad_output_strides[4], const T *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices, const T *offset,
    const int64_t offset_strides[4], const T *mask, const int64_t mask_strides[4],
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_deform_roi_pool_params *params)
{
    PYROI_TYPED(deform_job) job;
    pyroi_rois rois;
    T *shifts = NULL;
    double work, total;
    pyroi_status status = pyroi_check_deform_roi_pool_params(params);
    if (status == PYROI_OK) {
        status = pyroi_check_pooling_call(
            grad_input, grad_input_shape, grad_input_strides, PYROI_TENSOR_OUTPUT, grad_output,
            grad_output_strides, PYROI_TENSOR_INPUT, -1, params->pooled_height,
            params->pooled_width, boxes, num_rois, box_row_stride, 4, batch_indices);
    }
    if (status == PYROI_OK) {
        status = PYROI_TYPED(deform_check_offset_mask)(offset, offset_strides, mask,
                                                       mask_strides, num_rois, params);
    }
    if (status != PYROI_OK) {
        return status;
    }
    memset(&job, 0, sizeof job);
    status = PYROI_TYPED(deform_prepare)(&job, grad_input_shape, boxes, num_rois,
                                         box_row_stride, batch_indices, offset, offset_strides,
                                         params, &rois, &shifts, &work, &total);
    if (status != PYROI_OK) {
        return status;
    }
    /* nothing to write with an empty grad_input (which may then be NULL) */
    if (!pyroi_shape_is_empty(grad_input_shape)) {
        const double plane = (double)grad_input_shape[0] * (double)grad_input_shape[2] *
                             (double)grad_input_shape[3];
        int64_t blocks;
        job.grad_map = grad_input;
        job.map_shape = grad_input_shape;
        job.map_strides = grad_input_strides;
        job.grad = grad_output;
        job.pooled_strides = grad_output_strides;
        job.mask = mask;
        job.mask_strides = mask_strides;
        if (num_rois > 0 && grad_input_shape[1] > 0 &&
            PYROI_TYPED(deform_use_blocks)(&job, grad_input_shape, num_rois, total)) {
            /* an item: a lane group of channels, every image's planes of it */
            status = pyroi_rois_group_by_image(&rois);
            blocks = (grad_input_shape[1] + PYROI_LANES - 1) / PYROI_LANES;
            if (status == PYROI_OK) {
                status = PYROI_TYPED(deform_run)(
                    &job, blocks, (2.0 * plane + 4.0 * total) * (double)PYROI_LANES,
                    PYROI_TYPED(deform_backward_blocks_task));
            }
        } else {
            /* blocks of channels share each bin's taps; a channel's sums do not depend on
             * its block */
            job.channel_block = grad_input_shape[1] >= 64 ? 8 : 1;
            blocks = (grad_input_shape[1] + job.channel_block - 1) / job.channel_block;
            status = PYROI_TYPED(deform_run)(
                &job, blocks, (plane + 4.0 * (double)num_rois * work) * (double)job.channel_block,
                PYROI_TYPED(deform_backward_task));
        }
    }
    PYROI_TYPED(deform_release)(&job, &rois, shifts);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_deform_roi_pool_backward_offset)(
    const T *grad_output, const int64_t grad_output_strides[4], const T *input,
    const int64_t input_shape[4], const int64_t input_strides[4], const T *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices, const T *offset,
    const int64_t offset_strides[4], const T *mask, const int64_t mask_strides[4],
    T *grad_offset, const int64_t grad_offset_strides[4], T *grad_mask,
    const int64_t grad_mask_strides[4], const pyroi_deform_roi_pool_params *params)
{
    PYROI_TYPED(deform_job) job;
    pyroi_rois rois;
    T *shifts = NULL;
    double work, total;
    int64_t k, ph, pw;
    pyroi_status status = pyroi_check_deform_roi_pool_params(params);
    if (status == PYROI_OK) {
        status = pyroi_check_pooling_call(input, input_shape, input_strides, PYROI_TENSOR_INPUT,
                                          grad_output, grad_output_strides, PYROI_TENSOR_INPUT,
                                          -1, params->pooled_height, params->pooled_width,
                                          boxes, num_rois, box_row_stride, 4, batch_indices);
    }
    if (status == PYROI_OK) {
        status = PYROI_TYPED(deform_check_offset_mask)(offset, offset_strides, mask,
                                                       mask_strides, num_rois, params);
    }
    if (status == PYROI_OK) {
        status = deform_check_bins(grad_offset, grad_offset_strides, num_rois, 2, params,
                                   PYROI_TENSOR_OUTPUT);
    }
    if (status == PYROI_OK) {
        status = deform_check_bins(grad_mask, grad_mask_strides, num_rois, 1, params,
                                   PYROI_TENSOR_OUTPUT);
    }
    if (status != PYROI_OK) {
        return status;
    }
    memset(&job, 0, sizeof job);
    status = PYROI_TYPED(deform_prepare)(&job, input_shape, boxes, num_rois, box_row_stride,
                                         batch_indices, offset, offset_strides, params, &rois,
                                         &shifts, &work, &total);
    if (status != PYROI_OK) {
        return status;
    }
    if (num_rois > 0 && input_shape[1] == 0) { /* no channel: nothing depends on a bin */
        for (k = 0; k < num_rois; ++k) {
            for (ph = 0; ph < params->pooled_height; ++ph) {
                for (pw = 0; pw < params->pooled_width; ++pw) {
                    if (grad_offset != NULL) {
                        const int64_t *os = grad_offset_strides;
                        grad_offset[k * os[0] + ph * os[2] + pw * os[3]] = (T)0;
                        grad_offset[k * os[0] + os[1] + ph * os[2] + pw * os[3]] = (T)0;
                    }
                    if (grad_mask != NULL) {
                        const int64_t *ms = grad_mask_strides;
                        grad_mask[k * ms[0] + ph * ms[2] + pw * ms[3]] = (T)0;
                    }
                }
            }
        }
    } else if (num_rois > 0 && (grad_offset != NULL || grad_mask != NULL)) {
        job.map = input;
        job.map_shape = input_shape;
        job.map_strides = input_strides;
        job.grad = grad_output;
        job.pooled_strides = grad_output_strides;
        job.mask = mask;
        job.mask_strides = mask_strides;
        job.grad_offset = grad_offset;
        job.grad_offset_strides = grad_offset_strides;
        job.grad_mask = grad_mask;
        job.grad_mask_strides = grad_mask_strides;
        status =
            PYROI_TYPED(deform_offset_backward_run)(&job, &rois, input_shape, work, total);
    }
    PYROI_TYPED(deform_release)(&job, &rois, shifts);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_deform_roi_pool_find_invalid_roi)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    int64_t num_images, int64_t height, int64_t width,
    const pyroi_deform_roi_pool_params *params, int64_t *failed_roi)
{
    int64_t k;
    /* the calls test every batch index before any box: report in the same order */
    const pyroi_status status = pyroi_find_invalid_batch_index(
        pyroi_check_deform_roi_pool_params(params), boxes, num_rois, box_row_stride, 4,
        batch_indices, num_images, height, width, failed_roi);
    if (status != PYROI_OK) {
        return status;
    }
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(deform_axis) rows, cols;
        T roi_h, roi_w;
        if (PYROI_TYPED(deform_axes)(boxes + k * box_row_stride, params, height, width, &rows,
                                     &cols, &roi_h, &roi_w) != PYROI_OK) {
            *failed_roi = k;
            return PYROI_E_INVALID_BOX;
        }
    }
    return PYROI_OK;
}
