/* deform_roi_pool_blocks_template.h - deformable RoI pooling's lane-major tasks for one dtype
 * (docs/semantics.md §14): a work item gathers one image's channels of a lane group into a
 * channels-last block (lane_block_template.h) and every RoI of that image reads (forward) or
 * adds into (input backward) the block, one channel per lane. Each lane evaluates exactly the
 * scalar expression of the direct tasks (deform_roi_pool_template.h), in the same order, so
 * the two orders give the same bits. Included by deform_roi_pool_dtype.h. */

typedef PYROI_TYPED(lane_vector) PYROI_TYPED(deform_lanes);

/* The worker's block (H x W x PYROI_LANES) and bin tile (PH x PW x PYROI_LANES). */
static T *PYROI_TYPED(deform_worker_block)(const PYROI_TYPED(deform_job) *job, int worker,
                                           T **tile)
{
    T *block = job->blocks + (int64_t)worker * job->block_elements;
    *tile = block + job->map_shape[2] * job->map_shape[3] * PYROI_LANES;
    return block;
}

/* The mean (times the mask) of every bin of RoI k over a block's lanes, into tile[bin][lane]. */
PYROI_CLONE_INLINE int PYROI_TYPED(deform_forward_lanes)(const PYROI_TYPED(deform_job) *job,
                                                         int64_t k, const T *block, T *tile,
                                                         int worker,
                                                         pyroi_cancel_countdown *countdown)
{
    typedef PYROI_TYPED(deform_lanes) V;
    const pyroi_deform_roi_pool_params *params = job->params;
    const int64_t width = job->map_shape[3];
    PYROI_TYPED(deform_roi) roi;
    int64_t ph, pw, r, q, j;
    PYROI_TYPED(deform_roi_of)(job, k, &roi);
    for (ph = 0; ph < params->pooled_height; ++ph) {
        for (pw = 0; pw < params->pooled_width; ++pw) {
            PYROI_TYPED(deform_bin) bin;
            V *result = (V *)(tile + (ph * params->pooled_width + pw) * PYROI_LANES);
            const T mask = PYROI_TYPED(deform_mask_of)(job, k, ph, pw);
            V sum[PYROI_VECTORS];
            int64_t nr, nc;
            PYROI_TYPED(deform_bin_of)(job, k, ph, pw, &roi, worker, &bin);
            nr = bin.rows;
            nc = bin.cols;
            if (pyroi_cancel_count_work(countdown, nr * nc * PYROI_LANES + 1)) {
                return 1; /* the output is unspecified once cancelled */
            }
            for (j = 0; j < PYROI_VECTORS; ++j) {
                sum[j] = (V){0};
            }
            for (r = 0; r < nr; ++r) {
                const PYROI_TYPED(deform_tap) ty = bin.row_taps[r];
                const V *row_lo = (const V *)(block + ty.lo * width * PYROI_LANES);
                const V *row_hi = (const V *)(block + ty.hi * width * PYROI_LANES);
                for (q = 0; q < nc; ++q) {
                    const PYROI_TYPED(deform_tap) tx = bin.col_taps[q];
                    const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
                    const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
                    const V *p1 = row_lo + tx.lo * PYROI_VECTORS;
                    const V *p2 = row_lo + tx.hi * PYROI_VECTORS;
                    const V *p3 = row_hi + tx.lo * PYROI_VECTORS;
                    const V *p4 = row_hi + tx.hi * PYROI_VECTORS;
                    /* each lane is one channel, evaluated exactly as the direct loop */
                    for (j = 0; j < PYROI_VECTORS; ++j) {
                        sum[j] += w1 * p1[j] + w2 * p2[j] + w3 * p3[j] + w4 * p4[j];
                    }
                }
            }
            for (j = 0; j < PYROI_VECTORS; ++j) {
                result[j] = sum[j] / roi.count;
                if (job->mask != NULL) {
                    result[j] = result[j] * mask;
                }
            }
        }
    }
    return 0;
}

/* Forward for work items [begin, end), item = (image with RoIs, lane group of channels). */
PYROI_VECTOR_TASK(PYROI_TYPED(deform_forward_blocks_task))
{
    const PYROI_TYPED(deform_job) *job = (const PYROI_TYPED(deform_job) *)context;
    const pyroi_deform_roi_pool_params *params = job->params;
    const int64_t *shape = job->map_shape, *out = job->pooled_strides;
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(params->cancel, 1);
    T *tile;
    T *block = PYROI_TYPED(deform_worker_block)(job, worker, &tile);
    int64_t item, i, ph;
    for (item = begin; item < end; ++item) {
        int64_t c0, lanes;
        const int64_t group = PYROI_TYPED(lane_block_item)(item, shape[1], PYROI_LANES, &c0,
                                                           &lanes);
        const int64_t n = job->rois->group_image[group];
        if (pyroi_cancel_count_work(&countdown, shape[2] * shape[3] + 1)) {
            return;
        }
        PYROI_TYPED(lane_block_gather)(job->map, NULL, job->map_strides, shape[3], n, c0, lanes,
                                       0, shape[2], 0, shape[3], block, shape[3], PYROI_LANES,
                                       PYROI_LANES);
        for (i = job->rois->group_start[group]; i < job->rois->group_start[group + 1]; ++i) {
            const int64_t k = job->rois->order[i];
            T *result = job->output + k * out[0] + c0 * out[1];
            if (PYROI_TYPED(deform_forward_lanes)(job, k, block, tile, worker, &countdown)) {
                return;
            }
            if (out[2] == params->pooled_width * out[3]) { /* packed bins: one run */
                PYROI_TYPED(pyroi_lanes_to_channels)(
                    tile, params->pooled_height * params->pooled_width, lanes, result, out[1],
                    out[3]);
                continue;
            }
            for (ph = 0; ph < params->pooled_height; ++ph) {
                PYROI_TYPED(pyroi_lanes_to_channels)(tile + ph * params->pooled_width *
                                                                PYROI_LANES,
                                                     params->pooled_width, lanes,
                                                     result + ph * out[2], out[1], out[3]);
            }
        }
    }
}

/* Adds RoI k's input gradient for a block's lanes (channels c0, c0 + 1, ...) into the block,
 * in the direct task's order (bin, sample, tap). */
PYROI_CLONE_INLINE int PYROI_TYPED(deform_backward_lanes)(const PYROI_TYPED(deform_job) *job,
                                                          int64_t k, int64_t c0, int64_t lanes,
                                                          T *block, int worker,
                                                          pyroi_cancel_countdown *countdown)
{
    typedef PYROI_TYPED(deform_lanes) V;
    const pyroi_deform_roi_pool_params *params = job->params;
    const int64_t width = job->map_shape[3], *go = job->pooled_strides;
    const T *grad = job->grad + k * go[0] + c0 * go[1];
    PYROI_TYPED(deform_roi) roi;
    int64_t ph, pw, r, q, j, l;
    T inverse;
    PYROI_TYPED(deform_roi_of)(job, k, &roi);
    /* 0: divide (an empty grid reaches no taps) */
    inverse = PYROI_TYPED(pyroi_exact_inverse)(roi.rows.grid * roi.cols.grid);
    for (ph = 0; ph < params->pooled_height; ++ph) {
        for (pw = 0; pw < params->pooled_width; ++pw) {
            PYROI_TYPED(deform_bin) bin;
            const T mask = PYROI_TYPED(deform_mask_of)(job, k, ph, pw);
            union {
                V vectors[PYROI_VECTORS];
                T values[PYROI_LANES];
            } g;
            int64_t nr, nc;
            PYROI_TYPED(deform_bin_of)(job, k, ph, pw, &roi, worker, &bin);
            nr = bin.rows;
            nc = bin.cols;
            if (nr == 0 || nc == 0) {
                continue;
            }
            if (pyroi_cancel_count_work(countdown, nr * nc * PYROI_LANES + 1)) {
                return 1; /* grad_input is unspecified once cancelled */
            }
            for (l = 0; l < PYROI_LANES; ++l) { /* lanes past the last channel add 0 */
                g.values[l] = l < lanes ? grad[l * go[1] + ph * go[2] + pw * go[3]] : (T)0;
                if (job->mask != NULL) {
                    g.values[l] = g.values[l] * mask;
                }
            }
            for (r = 0; r < nr; ++r) {
                const PYROI_TYPED(deform_tap) ty = bin.row_taps[r];
                V *row_lo = (V *)(block + ty.lo * width * PYROI_LANES);
                V *row_hi = (V *)(block + ty.hi * width * PYROI_LANES);
                for (q = 0; q < nc; ++q) {
                    const PYROI_TYPED(deform_tap) tx = bin.col_taps[q];
                    const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
                    const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
                    V *p1 = row_lo + tx.lo * PYROI_VECTORS, *p2 = row_lo + tx.hi * PYROI_VECTORS;
                    V *p3 = row_hi + tx.lo * PYROI_VECTORS, *p4 = row_hi + tx.hi * PYROI_VECTORS;
                    /* four separate additions, in the direct order (the taps may coincide);
                     * (g * w) / samples, or times its inverse where that is exact (the same
                     * bits, see pyroi_exact_inverse) */
                    if (inverse != (T)0) {
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            p1[j] += g.vectors[j] * w1 * inverse;
                        }
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            p2[j] += g.vectors[j] * w2 * inverse;
                        }
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            p3[j] += g.vectors[j] * w3 * inverse;
                        }
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            p4[j] += g.vectors[j] * w4 * inverse;
                        }
                        continue;
                    }
                    for (j = 0; j < PYROI_VECTORS; ++j) {
                        p1[j] += g.vectors[j] * w1 / roi.samples;
                    }
                    for (j = 0; j < PYROI_VECTORS; ++j) {
                        p2[j] += g.vectors[j] * w2 / roi.samples;
                    }
                    for (j = 0; j < PYROI_VECTORS; ++j) {
                        p3[j] += g.vectors[j] * w3 / roi.samples;
                    }
                    for (j = 0; j < PYROI_VECTORS; ++j) {
                        p4[j] += g.vectors[j] * w4 / roi.samples;
                    }
                }
            }
        }
    }
    return 0;
}

/* Input backward for lane groups of channels [begin, end): per group, the planes of every
 * image without RoIs zeroed, and for each image with RoIs a zeroed block that its RoIs add
 * into in RoI order, then written to grad_input. */
PYROI_VECTOR_TASK(PYROI_TYPED(deform_backward_blocks_task))
{
    const PYROI_TYPED(deform_job) *job = (const PYROI_TYPED(deform_job) *)context;
    const int64_t *shape = job->map_shape, *gi = job->map_strides;
    const int64_t plane = shape[2] * shape[3];
    const int64_t image_shape[4] = {1, shape[1], shape[2], shape[3]};
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(job->params->cancel, 1);
    T *tile;
    T *block = PYROI_TYPED(deform_worker_block)(job, worker, &tile);
    int64_t item, n, g, i, h;
    (void)tile;
    for (item = begin; item < end; ++item) {
        const int64_t c0 = item * PYROI_LANES;
        const int64_t lanes = shape[1] - c0 < PYROI_LANES ? shape[1] - c0 : PYROI_LANES;
        for (n = 0; n < shape[0]; ++n) {
            int64_t first, last;
            pyroi_rois_of_image(job->rois, n, &first, &last);
            if (first == last && pyroi_zero_channels(job->grad_map + n * gi[0], sizeof(T),
                                                     image_shape, gi, c0, c0 + lanes,
                                                     job->params->cancel)) {
                return;
            }
        }
        for (g = 0; g < job->rois->num_groups; ++g) {
            T *image = job->grad_map + job->rois->group_image[g] * gi[0] + c0 * gi[1];
            if (pyroi_cancel_count_work(&countdown, plane + 1)) {
                return;
            }
            memset(block, 0, (size_t)(plane * PYROI_LANES) * sizeof(T));
            for (i = job->rois->group_start[g]; i < job->rois->group_start[g + 1]; ++i) {
                if (PYROI_TYPED(deform_backward_lanes)(job, job->rois->order[i], c0, lanes,
                                                       block, worker, &countdown)) {
                    return;
                }
            }
            for (h = 0; h < shape[2]; ++h) {
                PYROI_TYPED(pyroi_lanes_to_channels)(block + h * shape[3] * PYROI_LANES,
                                                     shape[3], lanes, image + h * gi[2], gi[1],
                                                     gi[3]);
            }
        }
    }
}

/* RoI k's partial offset and mask sums for a block's lanes (channels c0, c0 + 1, ...): per
 * bin, per lane, deform_bin_slopes' three sums (the same expressions in the same order),
 * then weighted by grad_output and added over the lanes in double, into
 * partials[(k * bins + bin) * job->lane_groups + c0 / PYROI_LANES]. */
PYROI_CLONE_INLINE int PYROI_TYPED(deform_offset_lanes)(const PYROI_TYPED(deform_job) *job,
                                                        int64_t k, int64_t c0, int64_t lanes,
                                                        const T *block, int worker,
                                                        pyroi_cancel_countdown *countdown)
{
    typedef PYROI_TYPED(deform_lanes) V;
    const pyroi_deform_roi_pool_params *params = job->params;
    const int64_t width = job->map_shape[3], *go = job->pooled_strides;
    const int64_t bins = params->pooled_height * params->pooled_width;
    const T *grad = job->grad + k * go[0] + c0 * go[1];
    PYROI_TYPED(deform_roi) roi;
    int64_t ph, pw, r, q, j, l;
    PYROI_TYPED(deform_roi_of)(job, k, &roi);
    for (ph = 0; ph < params->pooled_height; ++ph) {
        for (pw = 0; pw < params->pooled_width; ++pw) {
            PYROI_TYPED(deform_bin) bin;
            double *partial = job->partials + ((k * bins + ph * params->pooled_width + pw) *
                                                   job->lane_groups +
                                               c0 / PYROI_LANES) * 3;
            union {
                V vectors[PYROI_VECTORS];
                T values[PYROI_LANES];
            } along_y, along_x, sum;
            int64_t nr, nc;
            PYROI_TYPED(deform_bin_of)(job, k, ph, pw, &roi, worker, &bin);
            nr = bin.rows;
            nc = bin.cols;
            partial[0] = partial[1] = partial[2] = 0.0;
            if (nr == 0 || nc == 0) {
                continue;
            }
            if (pyroi_cancel_count_work(countdown, 2 * nr * nc * PYROI_LANES + 1)) {
                return 1; /* the gradients are unspecified once cancelled */
            }
            for (j = 0; j < PYROI_VECTORS; ++j) {
                along_y.vectors[j] = along_x.vectors[j] = sum.vectors[j] = (V){0};
            }
            for (r = 0; r < nr; ++r) {
                const PYROI_TYPED(deform_tap) ty = bin.row_taps[r];
                const T slope_y = PYROI_TYPED(pyroi_axis_tap_slope)(bin.row_positions[r], ty);
                const V *row_lo = (const V *)(block + ty.lo * width * PYROI_LANES);
                const V *row_hi = (const V *)(block + ty.hi * width * PYROI_LANES);
                for (q = 0; q < nc; ++q) {
                    const PYROI_TYPED(deform_tap) tx = bin.col_taps[q];
                    const T slope_x = PYROI_TYPED(pyroi_axis_tap_slope)(bin.col_positions[q], tx);
                    const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
                    const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
                    const V *p1 = row_lo + tx.lo * PYROI_VECTORS;
                    const V *p2 = row_lo + tx.hi * PYROI_VECTORS;
                    const V *p3 = row_hi + tx.lo * PYROI_VECTORS;
                    const V *p4 = row_hi + tx.hi * PYROI_VECTORS;
                    for (j = 0; j < PYROI_VECTORS; ++j) { /* deform_bin_slopes, per lane */
                        along_y.vectors[j] += slope_y * ((tx.w_lo * p3[j] + tx.w_hi * p4[j]) -
                                                         (tx.w_lo * p1[j] + tx.w_hi * p2[j]));
                        along_x.vectors[j] +=
                            slope_x * (ty.w_lo * (p2[j] - p1[j]) + ty.w_hi * (p4[j] - p3[j]));
                        sum.vectors[j] += w1 * p1[j] + w2 * p2[j] + w3 * p3[j] + w4 * p4[j];
                    }
                }
            }
            for (l = 0; l < lanes; ++l) { /* the direct task's group sum */
                const double g = (double)grad[l * go[1] + ph * go[2] + pw * go[3]];
                partial[0] += g * (double)along_y.values[l];
                partial[1] += g * (double)along_x.values[l];
                partial[2] += g * (double)(sum.values[l] / roi.count);
            }
        }
    }
    return 0;
}

/* Offset and mask backward, first pass: work items (image with RoIs, lane group of
 * channels), each writing its partial sums of every bin of the image's RoIs. */
PYROI_VECTOR_TASK(PYROI_TYPED(deform_offset_blocks_task))
{
    const PYROI_TYPED(deform_job) *job = (const PYROI_TYPED(deform_job) *)context;
    const int64_t *shape = job->map_shape;
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(job->params->cancel, 1);
    T *tile;
    T *block = PYROI_TYPED(deform_worker_block)(job, worker, &tile);
    int64_t item, i;
    (void)tile;
    for (item = begin; item < end; ++item) {
        int64_t c0, lanes;
        const int64_t group = PYROI_TYPED(lane_block_item)(item, shape[1], PYROI_LANES, &c0,
                                                           &lanes);
        const int64_t n = job->rois->group_image[group];
        if (pyroi_cancel_count_work(&countdown, shape[2] * shape[3] + 1)) {
            return;
        }
        PYROI_TYPED(lane_block_gather)(job->map, NULL, job->map_strides, shape[3], n, c0, lanes,
                                       0, shape[2], 0, shape[3], block, shape[3], PYROI_LANES,
                                       PYROI_LANES);
        for (i = job->rois->group_start[group]; i < job->rois->group_start[group + 1]; ++i) {
            if (PYROI_TYPED(deform_offset_lanes)(job, job->rois->order[i], c0, lanes, block,
                                                 worker, &countdown)) {
                return;
            }
        }
    }
}

/* Offset and mask backward, second pass, for RoIs [begin, end): each bin's partial sums
 * added over the lane groups in order, then written. */
static void PYROI_TYPED(deform_offset_reduce_task)(void *context, int64_t begin, int64_t end,
                                                   int worker)
{
    const PYROI_TYPED(deform_job) *job = (const PYROI_TYPED(deform_job) *)context;
    const pyroi_deform_roi_pool_params *params = job->params;
    const int64_t bins = params->pooled_height * params->pooled_width;
    int64_t k, ph, pw, g, i;
    (void)worker;
    for (k = begin; k < end; ++k) {
        PYROI_TYPED(deform_roi) roi;
        PYROI_TYPED(deform_roi_of)(job, k, &roi);
        for (ph = 0; ph < params->pooled_height; ++ph) {
            for (pw = 0; pw < params->pooled_width; ++pw) {
                const double *partial =
                    job->partials + (k * bins + ph * params->pooled_width + pw) *
                                        job->lane_groups * 3;
                double total[3] = {0.0, 0.0, 0.0};
                for (g = 0; g < job->lane_groups; ++g) {
                    for (i = 0; i < 3; ++i) {
                        total[i] += partial[3 * g + i];
                    }
                }
                PYROI_TYPED(deform_write_bin_gradients)(job, k, ph, pw, total, &roi);
            }
        }
    }
}
