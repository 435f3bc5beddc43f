/* roi_align_avg_template.h - the math of RoIAlign's avg reduction (torchvision's), forward
 * and backward, in both loop shapes: RoI by RoI on the caller's planes (direct order) and RoI
 * by RoI on a lane-major block (one channel per lane). Every output (and every input-gradient
 * pixel) is accumulated in torchvision's order, so results match it bit for bit whichever loop
 * order or thread count computes them. Semantics: docs/semantics.md §3. Included by
 * roi_align.c once per dtype with T and PYROI_TYPED(name) defined. */

/* ---- direct loop order ------------------------------------------------------------------ */

/* Forward for RoIs [begin, end): every channel and bin of each, reading the input in place. */
static void PYROI_TYPED(roi_align_forward_direct_task)(void *context, int64_t begin,
                                                       int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_job) *job = (const PYROI_TYPED(roi_align_job) *)context;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *in_strides = job->features_strides, *out_strides = job->result_strides;
    const int64_t row_stride = in_strides[2], col_stride = in_strides[3];
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    int64_t k, c, ph, pw;
    (void)worker;

    for (k = begin; k < end; ++k) {
        const PYROI_TYPED(roi_align_tap_tables) tables =
            PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
        /* empty grid: output 0, not NaN */
        const T count = (T)(plan->samples[k] > 1 ? plan->samples[k] : 1);
        pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(plan->cancel,
                                                                     plan->samples[k]);
        for (c = 0; c < job->map_shape[1]; ++c) {
            const T *plane = job->features + job->batch_indices[k] * in_strides[0] +
                             c * in_strides[1];
            T *out = job->result + PYROI_TYPED(roi_align_row)(job, k) * out_strides[0] +
                     c * out_strides[1];
            for (ph = 0; ph < pooled_height; ++ph) {
                for (pw = 0; pw < pooled_width; ++pw) {
                    if (pyroi_cancel_count(&countdown)) {
                        return; /* the outputs are unspecified once cancelled */
                    }
                    const T sum = PYROI_TYPED(pyroi_bilinear_bin_sum)(
                        plane, NULL, NULL, row_stride, col_stride, tables.row_taps,
                        tables.row_ranges[ph], tables.col_taps, tables.col_ranges[pw]);
                    out[ph * out_strides[2] + pw * out_strides[3]] = sum / count;
                }
            }
        }
    }
}

/* Backward for input channels [begin, end): zeroes those planes of every image, then adds
 * each RoI's contributions in torchvision's order (RoI, bin, sample, tap). */
static void PYROI_TYPED(roi_align_backward_direct_task)(void *context, int64_t begin,
                                                        int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_job) *job = (const PYROI_TYPED(roi_align_job) *)context;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *go_strides = job->features_strides, *gi_strides = job->result_strides;
    const int64_t *shape = job->map_shape;
    const int64_t row_stride = gi_strides[2], col_stride = gi_strides[3];
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    int64_t k, c, ph, pw;
    (void)worker;

    if (pyroi_zero_channels(job->result, sizeof(T), shape, gi_strides, begin, end,
                            job->params->cancel)) {
        return;
    }
    for (k = 0; k < plan->num_rois; ++k) {
        const PYROI_TYPED(roi_align_tap_tables) tables =
            PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
        /* unclamped: an empty grid has no taps, so nothing divides by it */
        const T count = (T)plan->samples[k];
        if (k % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
            break; /* an item (channel) holds every RoI */
        }
        pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(plan->cancel,
                                                                     plan->samples[k]);
        for (c = begin; c < end; ++c) {
            T *plane = job->result + job->batch_indices[k] * gi_strides[0] + c * gi_strides[1];
            const T *grad = job->features + PYROI_TYPED(roi_align_row)(job, k) * go_strides[0] +
                            c * go_strides[1];
            for (ph = 0; ph < pooled_height; ++ph) {
                for (pw = 0; pw < pooled_width; ++pw) {
                    if (pyroi_cancel_count(&countdown)) {
                        return;
                    }
                    PYROI_TYPED(pyroi_bilinear_bin_scatter)(
                        plane, row_stride, col_stride, tables.row_taps, tables.row_ranges[ph],
                        tables.col_taps, tables.col_ranges[pw],
                        grad[ph * go_strides[2] + pw * go_strides[3]], count);
                }
            }
        }
    }
}

/* Forward of RoI k on `chunks` x `pair` lane groups of a block (see roi_align_forward_roi),
 * from the samples whose upper row (tap lo) is in [row_begin, row_end): the block holds the
 * map's rows from row_begin on (and the row after row_end - 1, the lower row of its
 * samples). resume 0: the sums start from zero and the tile receives the averages (one band:
 * row_begin 0, row_end past the map). resume 1: each bin's sum goes on from the raw sum in
 * the tile (from zero in the band of its first sample) and is stored back raw, bin rows
 * without a sample in the band untouched (the caller zeroes those without samples): band
 * after band (rows ascending; the RoI's row taps ascend within each bin row), every bin adds
 * its samples in torchvision's order, and roi_align_forward_finish divides. Unless
 * `prefetch` is NULL (then resume is 0, on channels-last features read in place), each bin
 * row turns it to the next bin row and each bin takes a step of it
 * (roi_align_prefetch_template.h). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_forward_roi_rows)(
    const PYROI_TYPED(roi_align_plan) *plan, int64_t k, const T *block, int64_t pair,
    int64_t chunks, int64_t groups, int64_t width, int64_t pooled_height,
    int64_t pooled_width, int64_t row_begin, int64_t row_end, int resume, T *tile,
    int64_t tile_elements, PYROI_TYPED(roi_prefetch) *prefetch)
{
    typedef PYROI_TYPED(roi_align_lanes) V;
    const PYROI_TYPED(roi_align_tap_tables) tables =
        PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
    const int64_t samples = plan->samples[k] > 1 ? plan->samples[k] : 1; /* empty: 0, not NaN */
    const T count = (T)samples;
    const T inverse = PYROI_TYPED(pyroi_exact_inverse)(samples);
    /* in vectors: a pixel's lane groups, and the tiles (whole lane groups apart) */
    const int64_t pixel = groups * PYROI_VECTORS;
    const int64_t next_tile = tile_elements / (PYROI_LANES / PYROI_VECTORS);
    /* a part: one bin of a chunk's pair of lane groups */
    pyroi_cancel_countdown countdown =
        pyroi_cancel_countdown_of(plan->cancel, pyroi_cancel_work_of(samples, pair * PYROI_LANES));
    int64_t ph, pw, chunk, r, q, b, j;

    for (ph = 0; ph < pooled_height; ++ph) {
        const pyroi_tap_range rr = tables.row_ranges[ph];
        if (resume && (rr.begin == rr.end || tables.row_taps[rr.end - 1].lo < row_begin ||
                       tables.row_taps[rr.begin].lo >= row_end)) {
            continue; /* no sample of this bin row in the band: its sums stay as they are */
        }
        /* a bin row's first band starts its sums from zero */
        const int carry = resume && tables.row_taps[rr.begin].lo < row_begin;
        if (prefetch != NULL) {
            PYROI_TYPED(roi_prefetch_bin_row)(prefetch, ph, pooled_height, pooled_width);
        }
        for (pw = 0; pw < pooled_width; ++pw) {
            const pyroi_tap_range cr = tables.col_ranges[pw];
            if (prefetch != NULL) {
                PYROI_TYPED(roi_prefetch_step)(prefetch);
            }
            for (chunk = 0; chunk < chunks; ++chunk) {
                const V *lanes = (const V *)block + chunk * pair * PYROI_VECTORS;
                V *result = (V *)tile + chunk * pair * next_tile +
                            (ph * pooled_width + pw) * PYROI_VECTORS;
                V sum[2][PYROI_VECTORS];
                if (pyroi_cancel_count(&countdown)) {
                    return; /* the tile is unspecified once cancelled */
                }
                for (b = 0; b < pair; ++b) {
                    for (j = 0; j < PYROI_VECTORS; ++j) {
                        sum[b][j] = carry ? result[b * next_tile + j] : (V){0};
                    }
                }
                for (r = rr.begin; r < rr.end; ++r) {
                    const PYROI_TYPED(axis_tap) ty = tables.row_taps[r];
                    const V *row_lo, *row_hi;
                    if (ty.lo < row_begin || ty.lo >= row_end) {
                        continue; /* the sample's row pair is in another band */
                    }
                    row_lo = lanes + (ty.lo - row_begin) * width * pixel;
                    row_hi = lanes + (ty.hi - row_begin) * width * pixel;
                    for (q = cr.begin; q < cr.end; ++q) {
                        const PYROI_TYPED(axis_tap) tx = tables.col_taps[q];
                        const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
                        const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
                        for (b = 0; b < pair; ++b) {
                            const V *p1 = row_lo + tx.lo * pixel + b * PYROI_VECTORS;
                            const V *p2 = row_lo + tx.hi * pixel + b * PYROI_VECTORS;
                            const V *p3 = row_hi + tx.lo * pixel + b * PYROI_VECTORS;
                            const V *p4 = row_hi + tx.hi * pixel + b * PYROI_VECTORS;
                            /* each lane is one channel, evaluated exactly as the scalar loop */
                            for (j = 0; j < PYROI_VECTORS; ++j) {
                                sum[b][j] += w1 * p1[j] + w2 * p2[j] + w3 * p3[j] + w4 * p4[j];
                            }
                        }
                    }
                }
                for (b = 0; b < pair && resume; ++b) {
                    for (j = 0; j < PYROI_VECTORS; ++j) {
                        result[b * next_tile + j] = sum[b][j];
                    }
                }
                for (b = 0; b < pair && !resume; ++b) {
                    if (inverse != (T)0) { /* exact: see pyroi_exact_inverse */
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            result[b * next_tile + j] = sum[b][j] * inverse;
                        }
                    } else {
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            result[b * next_tile + j] = sum[b][j] / count;
                        }
                    }
                }
            }
        }
    }
}

/* Forward of RoI k on `chunks` x `pair` (pair 1 or 2, both constants at each call) lane
 * groups of a block holding `groups` (>= chunks * pair) lane groups per pixel, interleaved:
 * tile[ph][pw][lane] = the bin averages, lane group g's tile g * tile_elements after the
 * first. A pair shares each sample's taps and weights between 32 float channels: more
 * arithmetic per tap load and weight product (measured: 15% fewer cycles per sample), and a
 * pixel's two lines are neighbours. Each bin takes its chunks (pairs of lane groups) one after
 * the other, so that channels-last pixels read in place are read whole while the bin's taps
 * are in the L1 cache (roi_align_channels_last_template.h). `prefetch` as in
 * roi_align_forward_roi_rows. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_forward_roi)(
    const PYROI_TYPED(roi_align_plan) *plan, int64_t k, const T *block, int64_t pair,
    int64_t chunks, int64_t groups, int64_t width, int64_t pooled_height,
    int64_t pooled_width, T *tile, int64_t tile_elements, PYROI_TYPED(roi_prefetch) *prefetch)
{
    PYROI_TYPED(roi_align_forward_roi_rows)(plan, k, block, pair, chunks, groups, width,
                                            pooled_height, pooled_width, 0, INT64_MAX, 0, tile,
                                            tile_elements, prefetch);
}

/* The bin averages of a tile of raw sums (roi_align_forward_roi_rows resumed band after
 * band), RoI k's divisions done as roi_align_forward_roi_rows does them. */
static void PYROI_TYPED(roi_align_forward_finish)(const PYROI_TYPED(roi_align_plan) *plan,
                                                  int64_t k, T *tile, int64_t tile_elements)
{
    const int64_t samples = plan->samples[k] > 1 ? plan->samples[k] : 1; /* empty: 0, not NaN */
    const T count = (T)samples;
    const T inverse = PYROI_TYPED(pyroi_exact_inverse)(samples);
    int64_t e;
    for (e = 0; e < tile_elements; ++e) {
        tile[e] = inverse != (T)0 ? tile[e] * inverse : tile[e] / count;
    }
}

/* Backward of RoI k's bin rows [ph_begin, ph_end) on a band of `pair` (1 or 2, a constant at
 * each call) blocks, block_step elements apart: adds the contributions of the output
 * gradients in tile[ph][pw][lane] (block b's tile tile_step elements after block 0's) to the
 * pixels of rows [row_begin, row_end), in torchvision's order (bin, sample, tap). Each block
 * holds those rows (row row_begin first); a tap on a row outside them lands in sink (block
 * b's: sink + b * block_step), a spare row of the block's width that is never read (its row
 * belongs to another band, whose pass adds it in the same order). A pair shares each sample's
 * tap addresses and weights between 32 float channels: the scalar work per sample is about as
 * large as the vector work, and the pair halves it per channel. Each bin also prefetches a
 * cache line of the bytes next[0, next_bytes) per block: the next RoI's gradients when they
 * are packed (a block's bins then span at most one line per bin; float32 or float16, whose
 * lines the first bins cover). Spread over the bins, the
 * prefetches take effect; issued together before the RoI, most were dropped and its gather
 * waited on memory (measured: box head backward 34 -> 28 ms). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_backward_roi_scaled)(
    const PYROI_TYPED(roi_align_plan) *plan, int64_t k, T *block, int64_t pair,
    int64_t block_step, int64_t width, int64_t pooled_height, int64_t pooled_width,
    int64_t ph_begin, int64_t ph_end, int64_t row_begin, int64_t row_end, T *sink,
    const T *tile, int64_t tile_step, const void *next, int64_t next_bytes, T scale,
    int by_inverse)
{
    const PYROI_TYPED(roi_align_tap_tables) tables =
        PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
    typedef PYROI_TYPED(roi_align_lanes) V;
    /* in vectors: from a block's pixel (and tile) to the next block's */
    const int64_t next_block = block_step / (PYROI_LANES / PYROI_VECTORS);
    const int64_t next_tile = tile_step / (PYROI_LANES / PYROI_VECTORS);
    V *lanes = (V *)block;
    V *spare = (V *)sink;
    const V *grad_lanes = (const V *)tile;
    /* a part: one bin of the pair of blocks */
    pyroi_cancel_countdown countdown =
        pyroi_cancel_countdown_of(
            plan->cancel, pyroi_cancel_work_of(plan->samples[k], pair * PYROI_LANES));
    int64_t ph, pw, r, q, b, j;

    for (ph = ph_begin; ph < ph_end; ++ph) {
        const pyroi_tap_range rr = tables.row_ranges[ph];
        for (pw = 0; pw < pooled_width; ++pw) {
            const pyroi_tap_range cr = tables.col_ranges[pw];
            const int64_t bin = ph * pooled_width + pw;
            /* a local copy: the compiler can see the block writes do not alter it */
            V g[2][PYROI_VECTORS];
            if (pyroi_cancel_count(&countdown)) {
                return; /* grad_input is unspecified once cancelled */
            }
            for (b = 0; b < pair; ++b) {
                const int64_t line = (b * pooled_height * pooled_width + bin) * PYROI_LANES *
                                     (int64_t)sizeof(T); /* in bytes: a cache line per bin */
                for (j = 0; j < PYROI_VECTORS; ++j) {
                    g[b][j] = grad_lanes[b * next_tile + bin * PYROI_VECTORS + j];
                }
                PYROI_PREFETCH((const char *)next + (line < next_bytes ? line : 0));
            }
            for (r = rr.begin; r < rr.end; ++r) {
                const PYROI_TYPED(axis_tap) ty = tables.row_taps[r];
                const int lo_in = ty.lo >= row_begin && ty.lo < row_end;
                const int hi_in = ty.hi >= row_begin && ty.hi < row_end;
                V *row_lo = lo_in ? lanes + (ty.lo - row_begin) * width * PYROI_VECTORS : spare;
                V *row_hi = hi_in ? lanes + (ty.hi - row_begin) * width * PYROI_VECTORS : spare;
                if (!lo_in && !hi_in) {
                    continue;
                }
                for (q = cr.begin; q < cr.end; ++q) {
                    const PYROI_TYPED(axis_tap) tx = tables.col_taps[q];
                    const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
                    const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
                    for (b = 0; b < pair; ++b) {
                        V *p1 = row_lo + tx.lo * PYROI_VECTORS + b * next_block;
                        V *p2 = row_lo + tx.hi * PYROI_VECTORS + b * next_block;
                        V *p3 = row_hi + tx.lo * PYROI_VECTORS + b * next_block;
                        V *p4 = row_hi + tx.hi * PYROI_VECTORS + b * next_block;
                        /* four separate passes: the taps may coincide at the border, and
                         * torchvision adds them one after the other, (g * w) / count each */
                        if (by_inverse) {
                            for (j = 0; j < PYROI_VECTORS; ++j) {
                                p1[j] += g[b][j] * w1 * scale;
                            }
                            for (j = 0; j < PYROI_VECTORS; ++j) {
                                p2[j] += g[b][j] * w2 * scale;
                            }
                            for (j = 0; j < PYROI_VECTORS; ++j) {
                                p3[j] += g[b][j] * w3 * scale;
                            }
                            for (j = 0; j < PYROI_VECTORS; ++j) {
                                p4[j] += g[b][j] * w4 * scale;
                            }
                        } else {
                            for (j = 0; j < PYROI_VECTORS; ++j) {
                                p1[j] += g[b][j] * w1 / scale;
                            }
                            for (j = 0; j < PYROI_VECTORS; ++j) {
                                p2[j] += g[b][j] * w2 / scale;
                            }
                            for (j = 0; j < PYROI_VECTORS; ++j) {
                                p3[j] += g[b][j] * w3 / scale;
                            }
                            for (j = 0; j < PYROI_VECTORS; ++j) {
                                p4[j] += g[b][j] * w4 / scale;
                            }
                        }
                    }
                }
            }
        }
    }
}

PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_backward_roi)(
    const PYROI_TYPED(roi_align_plan) *plan, int64_t k, T *block, int64_t pair,
    int64_t block_step, int64_t width, int64_t pooled_height, int64_t pooled_width,
    int64_t ph_begin, int64_t ph_end, int64_t row_begin, int64_t row_end, T *sink,
    const T *tile, int64_t tile_step, const void *next, int64_t next_bytes)
{
    const T inverse = PYROI_TYPED(pyroi_exact_inverse)(plan->samples[k]);
    if (inverse != (T)0) { /* exact: see pyroi_exact_inverse */
        PYROI_TYPED(roi_align_backward_roi_scaled)(
            plan, k, block, pair, block_step, width, pooled_height, pooled_width, ph_begin,
            ph_end, row_begin, row_end, sink, tile, tile_step, next, next_bytes, inverse, 1);
    } else { /* unclamped: an empty grid has no taps */
        PYROI_TYPED(roi_align_backward_roi_scaled)(
            plan, k, block, pair, block_step, width, pooled_height, pooled_width, ph_begin,
            ph_end, row_begin, row_end, sink, tile, tile_step, next, next_bytes,
            (T)plan->samples[k], 0);
    }
}
