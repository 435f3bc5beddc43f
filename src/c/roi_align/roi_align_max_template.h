/* roi_align_max_template.h - RoIAlign's max reductions: the call path both share (validation,
 * plan, the argmax check, the channel-split backward) and mmcv's reduction (the largest
 * interpolated sample, docs/semantics.md §4.2); ONNX's reduction (§4.1) is in
 * roi_align_onnx_max_template.h. Included by
 * roi_align.c once per dtype with T and PYROI_TYPED(name) defined. */

/* ---- max mode (mmcv's definition) ------------------------------------------------------ */
/* A bin is the largest of its interpolated samples (each formed exactly as in avg mode),
 * visited in row-major sample order: the first largest wins ties and the first NaN wins
 * (NaN propagates). A sample outside the map has the value 0 and no taps, as in mmcv; among
 * those only the first in sample order can ever win, so it stands for all of them. The
 * winner's index iy * grid_w + ix is the bin's argmax; an empty bin gives 0 and argmax -1. */

/* Sample index of the first out-of-map sample of a bin in row-major order, or -1. */
static int64_t PYROI_TYPED(roi_align_first_outside)(pyroi_tap_range rr, pyroi_tap_range cr,
                                                    int64_t grid_h, int64_t grid_w)
{
    const int64_t rows = rr.end - rr.begin, cols = cr.end - cr.begin;
    if (rows == 0 || cols == 0 || rr.first_sample > 0 || cr.first_sample > 0) {
        return 0;
    }
    if (cols < grid_w) {
        return cols; /* row 0, first column past the map */
    }
    if (rows < grid_h) {
        return rows * grid_w; /* first row past the map, column 0 */
    }
    return -1;
}

typedef struct PYROI_TYPED(roi_align_max_state) {
    T best;
    int64_t winner;
} PYROI_TYPED(roi_align_max_state);

static inline void PYROI_TYPED(roi_align_max_offer)(PYROI_TYPED(roi_align_max_state) *state,
                                                    T value, int64_t index)
{
    if (state->winner < 0 || value > state->best ||
        (value != value && state->best == state->best)) {
        state->best = value;
        state->winner = index;
    }
}

static T PYROI_TYPED(roi_align_max_bin)(const T *plane, int64_t row_stride, int64_t col_stride,
                                        const PYROI_TYPED(axis_tap) *row_taps,
                                        pyroi_tap_range rr,
                                        const PYROI_TYPED(axis_tap) *col_taps,
                                        pyroi_tap_range cr, int64_t grid_h, int64_t grid_w,
                                        int64_t *argmax)
{
    const int64_t outside = grid_h * grid_w > 0
                                ? PYROI_TYPED(roi_align_first_outside)(rr, cr, grid_h, grid_w)
                                : -1;
    PYROI_TYPED(roi_align_max_state) state;
    int64_t r, q;
    int zero_offered = outside < 0;
    state.best = (T)0;
    state.winner = -1;
    for (r = rr.begin; r < rr.end; ++r) {
        const PYROI_TYPED(axis_tap) ty = row_taps[r];
        const T *row_lo = plane + ty.lo * row_stride;
        const T *row_hi = plane + ty.hi * row_stride;
        const int64_t iy = rr.first_sample + (r - rr.begin);
        for (q = cr.begin; q < cr.end; ++q) {
            const PYROI_TYPED(axis_tap) tx = col_taps[q];
            const int64_t index = iy * grid_w + cr.first_sample + (q - cr.begin);
            const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
            const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
            const T value = w1 * row_lo[tx.lo * col_stride] + w2 * row_lo[tx.hi * col_stride] +
                            w3 * row_hi[tx.lo * col_stride] + w4 * row_hi[tx.hi * col_stride];
            if (!zero_offered && outside < index) {
                PYROI_TYPED(roi_align_max_offer)(&state, (T)0, outside);
                zero_offered = 1;
            }
            PYROI_TYPED(roi_align_max_offer)(&state, value, index);
        }
    }
    if (!zero_offered) {
        PYROI_TYPED(roi_align_max_offer)(&state, (T)0, outside);
    }
    *argmax = state.winner;
    return state.winner < 0 ? (T)0 : state.best;
}

/* Everything the max-mode workers need besides the avg job. */
typedef struct PYROI_TYPED(roi_align_max_job) {
    PYROI_TYPED(roi_align_job) base;
    int64_t *argmax;                /* forward: may be NULL */
    const int64_t *argmax_const;    /* backward */
    const int64_t *argmax_strides;
    const int64_t *grid_w;          /* per RoI: samples per bin along x */
} PYROI_TYPED(roi_align_max_job);

/* Max forward in the direct order (below, one loop with the ONNX max's). */
static void PYROI_TYPED(roi_align_max_forward_task)(void *context, int64_t begin, int64_t end,
                                                    int worker);

/* The gradient of an mmcv max bin whose winner is an in-map sample with row tap ty and column
 * tap tx: g * w to each of its four taps (mmcv's order; no division). An out-of-map sample
 * (ty and tx NULL) has no taps. tap: unused (mmcv's codes number samples). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_bin_gradient)(
    T *plane, int64_t row_stride, int64_t col_stride, const PYROI_TYPED(axis_tap) *ty,
    const PYROI_TYPED(axis_tap) *tx, int64_t tap, T g)
{
    (void)tap;
    if (ty != NULL) {
        T *row_lo = plane + ty->lo * row_stride;
        T *row_hi = plane + ty->hi * row_stride;
        row_lo[tx->lo * col_stride] += g * (ty->w_lo * tx->w_lo);
        row_lo[tx->hi * col_stride] += g * (ty->w_lo * tx->w_hi);
        row_hi[tx->lo * col_stride] += g * (ty->w_hi * tx->w_lo);
        row_hi[tx->hi * col_stride] += g * (ty->w_hi * tx->w_hi);
    }
}

/* ONNX's rule (roi_align_onnx_max_template.h): g * w_t to tap t of the winning sample. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_onnx_max_bin_gradient)(
    T *plane, int64_t row_stride, int64_t col_stride, const PYROI_TYPED(axis_tap) *ty,
    const PYROI_TYPED(axis_tap) *tx, int64_t tap, T g);

/* How many RoIs ahead the max backward prefetches a channel's codes and gradients. */
#ifndef ROI_ALIGN_MAX_PREFETCH_AHEAD
#define ROI_ALIGN_MAX_PREFETCH_AHEAD 2
#endif

/* Prefetches channel c's bins of RoI k (if any) in the argmax and the output gradient: one
 * channel's bins of consecutive RoIs lie a whole RoI apart (C bins), so each RoI's short runs
 * would otherwise wait on memory in turn. */
static inline void PYROI_TYPED(roi_align_max_prefetch_bins)(
    const PYROI_TYPED(roi_align_max_job) *max_job, int64_t k, int64_t c)
{
    const PYROI_TYPED(roi_align_job) *job = &max_job->base;
    const int64_t *a = max_job->argmax_strides, *g = job->features_strides;
    const int64_t last_pw = job->params->pooled_width - 1;
    int64_t ph;
    if (k >= job->plan->num_rois) {
        return;
    }
    for (ph = 0; ph < job->params->pooled_height; ++ph) {
        const int64_t *codes = max_job->argmax_const + k * a[0] + c * a[1] + ph * a[2];
        const int64_t grad = k * g[0] + c * g[1] + ph * g[2];
        PYROI_PREFETCH(codes);
        PYROI_PREFETCH(codes + last_pw * a[3]);
        if (job->half_features != NULL) {
            PYROI_PREFETCH(job->half_features + grad);
            PYROI_PREFETCH(job->half_features + grad + last_pw * g[3]);
        } else {
            PYROI_PREFETCH(job->features + grad);
            PYROI_PREFETCH(job->features + grad + last_pw * g[3]);
        }
    }
}

/* The backward of both max reductions, channels [begin, end), one at a time (its planes of
 * every image stay in cache): zero them, then send each bin's gradient where its winner says,
 * RoI by RoI and bin by bin in order, so every pixel sees the same additions whatever the
 * channel split. The reduction (a constant of each task) says how a winner code names a
 * sample (mmcv: the sample; ONNX: 4 * sample + tap) and which rule sends the gradient. A
 * float16 call (job half_features, half_result; widen not NULL) widens each gradient as it
 * is read and adds into the worker's float32 planes (scratch: every image's plane of the
 * channel), rounded once into grad_input when the channel is done. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_like_backward_channels)(
    const PYROI_TYPED(roi_align_max_job) *max_job, enum roi_align_reduction reduction,
    int64_t begin, int64_t end, int worker, pyroi_widen_fn widen)
{
    const int64_t codes = reduction == ROI_ALIGN_REDUCE_ONNX_MAX ? 4 : 1; /* per sample */
    const PYROI_TYPED(roi_align_job) *job = &max_job->base;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *go_strides = job->features_strides, *gi_strides = job->result_strides;
    const int64_t *a = max_job->argmax_strides;
    const int64_t *shape = job->map_shape;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    /* a float16 call's float32 planes: image n's plane of the channel at n * H * W */
    T *planes = job->half_result != NULL ? job->scratch + worker * job->scratch_stride : NULL;
    const int64_t plane_pixels = shape[2] * shape[3];
    const int64_t plane_strides[4] = {plane_pixels, 0, shape[3], 1};
    const int64_t *to_strides = planes != NULL ? plane_strides : gi_strides;
    int64_t k, c, ph, pw, n;

    for (c = begin; c < end; ++c) {
        if (planes != NULL) {
            memset(planes, 0, (size_t)(shape[0] * plane_pixels) * sizeof(T));
        } else if (pyroi_zero_channels(job->result, sizeof(T), shape, gi_strides, c, c + 1,
                                       job->params->cancel)) {
            return;
        }
        for (k = 0; k < plan->num_rois; ++k) {
            const PYROI_TYPED(roi_align_tap_tables) tables =
                PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
            const int64_t grid_w = max_job->grid_w[k];
            const double inverse_grid_w = 1.0 / (double)grid_w;
            T *plane = planes != NULL
                           ? planes + job->batch_indices[k] * plane_pixels
                           : job->result + job->batch_indices[k] * gi_strides[0] +
                                 c * gi_strides[1];
            if (k % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                break; /* the channel's planes are zero; the call ends at the next chunk */
            }
            if (grid_w <= 0) {
                continue; /* empty bins only */
            }
            PYROI_TYPED(roi_align_max_prefetch_bins)(max_job, k + ROI_ALIGN_MAX_PREFETCH_AHEAD,
                                                     c);
            for (ph = 0; ph < pooled_height; ++ph) {
                const pyroi_tap_range rr = tables.row_ranges[ph];
                for (pw = 0; pw < pooled_width; ++pw) {
                    const pyroi_tap_range cr = tables.col_ranges[pw];
                    /* read once; checked before the call, and again here where it addresses
                     * (the caller may have written argmax since) */
                    const int64_t code = pyroi_read_once_i64(
                        max_job->argmax_const + k * a[0] + c * a[1] + ph * a[2] + pw * a[3]);
                    const PYROI_TYPED(axis_tap) *ty = NULL, *tx = NULL;
                    int64_t iy, ix, at;
                    T g;
                    if (code < 0 || code / codes >= plan->samples[k]) {
                        continue; /* -1: an empty bin */
                    }
                    at = k * go_strides[0] + c * go_strides[1] + ph * go_strides[2] +
                         pw * go_strides[3];
                    g = widen != NULL ? (T)widen(job->half_features[at]) : job->features[at];
                    iy = code / codes;
                    ix = pyroi_divide_index(iy, grid_w, inverse_grid_w, &iy);
                    iy -= rr.first_sample;
                    ix -= cr.first_sample;
                    if (iy >= 0 && iy < rr.end - rr.begin && ix >= 0 && ix < cr.end - cr.begin) {
                        ty = tables.row_taps + rr.begin + iy;
                        tx = tables.col_taps + cr.begin + ix;
                    } /* else an out-of-map sample won: NULL taps */
                    if (reduction == ROI_ALIGN_REDUCE_ONNX_MAX) {
                        PYROI_TYPED(roi_align_onnx_max_bin_gradient)(
                            plane, to_strides[2], to_strides[3], ty, tx, code % codes, g);
                    } else {
                        PYROI_TYPED(roi_align_max_bin_gradient)(plane, to_strides[2],
                                                                to_strides[3], ty, tx,
                                                                code % codes, g);
                    }
                }
            }
        }
        for (n = 0; planes != NULL && sizeof(T) == sizeof(float) && n < shape[0]; ++n) {
            /* each sum rounded once (only float32 jobs have float16 tensors) */
            pyroi_half_round_planes((const float *)(const void *)(planes + n * plane_pixels), 1,
                                    shape[2], shape[3],
                                    job->half_result + n * gi_strides[0] + c * gi_strides[1],
                                    gi_strides);
        }
    }
}

static void PYROI_TYPED(roi_align_max_backward_task)(void *context, int64_t begin, int64_t end,
                                                     int worker)
{
    PYROI_TYPED(roi_align_max_like_backward_channels)(
        (const PYROI_TYPED(roi_align_max_job) *)context, ROI_ALIGN_REDUCE_MAX, begin, end,
        worker, NULL);
}

static void PYROI_TYPED(roi_align_onnx_max_backward_task)(void *context, int64_t begin,
                                                          int64_t end, int worker)
{
    PYROI_TYPED(roi_align_max_like_backward_channels)(
        (const PYROI_TYPED(roi_align_max_job) *)context, ROI_ALIGN_REDUCE_ONNX_MAX, begin,
        end, worker, NULL);
}

#ifdef PYROI_HAVE_VECTOR_TYPES
/* Winners as vectors of the values' width: a comparison of two value vectors gives the mask
 * that selects both (scalar lanes compiled to masked stores of each lane, 4.5x the time of
 * the forward without argmax on the box head). */
typedef PYROI_TYPED(roi_align_index) PYROI_TYPED(roi_align_index_lanes)
    __attribute__((vector_size(PYROI_VECTOR_BYTES), aligned(sizeof(T)), may_alias));

/* The offer of value (found at index) to the running best and winner of one vector of
 * lanes: it wins where take is set. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_take)(
    T *PYROI_RESTRICT best, PYROI_TYPED(roi_align_index) *PYROI_RESTRICT winner,
    PYROI_TYPED(roi_align_lanes) value, PYROI_TYPED(roi_align_index_lanes) take,
    PYROI_TYPED(roi_align_index) index)
{
    typedef PYROI_TYPED(roi_align_index_lanes) I;
    const I old = *(const I *)(const void *)best, won = *(const I *)winner;
    *(I *)(void *)best = ((I)value & take) | (old & ~take);
    *(I *)winner = (((I){0} + index) & take) | (won & ~take);
}
#endif

/* One offer to an mmcv max bin on a block, per lane: the interpolated value of a sample (the
 * four weighted taps added left to right, as in avg mode; pixels p1..p4 of the block, weights
 * from the row tap ty and the column tap tx) with sample index `index`. It wins if it is the
 * first offer, is larger, or is the first NaN (roi_align_max_offer's rule, as a select), and
 * the winner follows: in winner (int64), or with narrow (a constant at each call; every
 * sample index of the RoI fits roi_align_index) in narrow_winner, by whole vectors. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_sample)(
    T *PYROI_RESTRICT best, int64_t *PYROI_RESTRICT winner,
    PYROI_TYPED(roi_align_index) *PYROI_RESTRICT narrow_winner, const T *block, int64_t width,
    PYROI_TYPED(axis_tap) ty, PYROI_TYPED(axis_tap) tx, int64_t index, int first, int narrow)
{
    const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
    const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
    const T *p1 = block + (ty.lo * width + tx.lo) * PYROI_LANES;
    const T *p2 = block + (ty.lo * width + tx.hi) * PYROI_LANES;
    const T *p3 = block + (ty.hi * width + tx.lo) * PYROI_LANES;
    const T *p4 = block + (ty.hi * width + tx.hi) * PYROI_LANES;
    int64_t j;
#ifdef PYROI_HAVE_VECTOR_TYPES
    if (narrow) {
        typedef PYROI_TYPED(roi_align_lanes) V;
        typedef PYROI_TYPED(roi_align_index_lanes) I;
        for (j = 0; j < PYROI_LANES; j += PYROI_LANES / PYROI_VECTORS) {
            /* each lane is one channel, evaluated exactly as the scalar loop */
            const V value = w1 * *(const V *)(p1 + j) + w2 * *(const V *)(p2 + j) +
                            w3 * *(const V *)(p3 + j) + w4 * *(const V *)(p4 + j);
            const V old = *(const V *)(best + j);
            const I take = (I)(value > old) | ((I)(value != value) & (I)(old == old)) |
                           ((I){0} - (PYROI_TYPED(roi_align_index))(first != 0)); /* first: all */
            PYROI_TYPED(roi_align_max_take)(best + j, narrow_winner + j, value, take,
                                            (PYROI_TYPED(roi_align_index))index);
        }
        return;
    }
#endif
    for (j = 0; j < PYROI_LANES; ++j) {
        /* each lane is one channel, evaluated exactly as the scalar loop */
        const T value = w1 * p1[j] + w2 * p2[j] + w3 * p3[j] + w4 * p4[j];
        const int take = first || value > best[j] || (value != value && best[j] == best[j]);
        best[j] = take ? value : best[j];
        if (narrow) {
            narrow_winner[j] = take ? (PYROI_TYPED(roi_align_index))index : narrow_winner[j];
        } else {
            winner[j] = take ? index : winner[j];
        }
    }
}

/* The out-of-map value 0, with sample index `index`, offered to an mmcv max bin per lane. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_zero)(
    T *PYROI_RESTRICT best, int64_t *PYROI_RESTRICT winner,
    PYROI_TYPED(roi_align_index) *PYROI_RESTRICT narrow_winner, int64_t index, int first,
    int narrow)
{
    int64_t j;
#ifdef PYROI_HAVE_VECTOR_TYPES
    if (narrow) {
        typedef PYROI_TYPED(roi_align_lanes) V;
        typedef PYROI_TYPED(roi_align_index_lanes) I;
        for (j = 0; j < PYROI_LANES; j += PYROI_LANES / PYROI_VECTORS) {
            const V zero = (V){0};
            const I take = (I)(zero > *(const V *)(best + j)) |
                           ((I){0} - (PYROI_TYPED(roi_align_index))(first != 0)); /* first: all */
            PYROI_TYPED(roi_align_max_take)(best + j, narrow_winner + j, zero, take,
                                            (PYROI_TYPED(roi_align_index))index);
        }
        return;
    }
#endif
    for (j = 0; j < PYROI_LANES; ++j) {
        const int take = first || (T)0 > best[j];
        best[j] = take ? (T)0 : best[j];
        if (narrow) {
            narrow_winner[j] = take ? (PYROI_TYPED(roi_align_index))index : narrow_winner[j];
        } else {
            winner[j] = take ? index : winner[j];
        }
    }
}

/* best = value > best ? value : best in every lane: the rule of a later offer that is not
 * NaN (a larger value wins, a tie keeps the earlier one, signed zeros included); a NaN value
 * keeps best. One x86 max instruction (GCC and Clang compile the loop to it). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_lanes_max)(PYROI_TYPED(roi_align_lanes) *best,
                                                         const PYROI_TYPED(roi_align_lanes) *value)
{
    /* copies: the compiler then sees one vector select (lanes read through best, it compared
     * and stored lane by lane) */
    const PYROI_TYPED(roi_align_lanes) old = *best, offer = *value;
#ifdef PYROI_HAVE_VECTOR_TYPES
    PYROI_TYPED(roi_align_lanes) larger = old;
    int64_t i;
    for (i = 0; i < (int64_t)(PYROI_VECTOR_BYTES / sizeof(T)); ++i) {
        larger[i] = offer[i] > old[i] ? offer[i] : old[i];
    }
    *best = larger;
#else
    *best = offer > old ? offer : old;
#endif
}

/* mmcv max of RoI k when no argmax is asked for, on `chunks` x `pair` (pair 1 or 2, both
 * constants at each call) lane groups of pixels holding `groups` lane groups each, rows of
 * `width` pixels (a block: pair, chunks and groups 1; channels-last features read in place:
 * the pixels' pitch), laid out as roi_align_forward_roi's: tile[ph][pw][lane] as
 * roi_align_max_roi gives it, lane group g's tile g * tile_elements after the first. One
 * vector max per sample (roi_align_lanes_max), unless a lane met a NaN. The 0 of the
 * out-of-map samples is offered at the same place (it decides between +0 and -0), and
 * starting each bin from -inf gives what its first offer would: a value that is not NaN beats
 * -inf or ties it with itself. NaN is noticed in a per-lane sum of the bin's values, one add
 * per sample: NaN if a value was (or, without NaN, if values of both infinite signs met; then
 * the redo finds the same bits). Returns 0 when that sum was NaN: the tile is then not the
 * RoI's (the caller redoes it with winners, NaN being rare). A bin's state is vectors, so it
 * stays in registers: as arrays of lanes it went through memory at every row, and its zero
 * offers and store ran lane by lane (docs/performance-history.md, max mode's value-only
 * kernel). A pair shares each sample's weights and tap addresses between 32 float channels;
 * each bin takes its chunks one after the other, so that pixels read in place are read whole
 * while the bin's taps are in the L1 cache (roi_align_channels_last_template.h). The RoI's
 * tap tables and grid are roi_align_max_roi's; `prefetch` (NULL on a block) as in
 * roi_align_forward_roi_rows. */
PYROI_CLONE_INLINE int PYROI_TYPED(roi_align_max_roi_values)(
    const PYROI_TYPED(roi_align_tap_tables) *tables_of_roi, int64_t grid_h, int64_t grid_w,
    const T *block, int64_t pair, int64_t chunks, int64_t groups, int64_t width,
    int64_t pooled_height, int64_t pooled_width, T *tile, int64_t tile_elements,
    PYROI_TYPED(roi_prefetch) *prefetch)
{
    typedef PYROI_TYPED(roi_align_lanes) V;
    const PYROI_TYPED(roi_align_tap_tables) tables = *tables_of_roi;
    /* in vectors: a pixel's lane groups, and the tiles (whole lane groups apart) */
    const int64_t pixel = groups * PYROI_VECTORS;
    const int64_t next_tile = tile_elements / (PYROI_LANES / PYROI_VECTORS);
    const V zero = (V){0};
    V start = zero; /* empty bin: 0 (no offer); else -inf, which the first offer replaces */
    V sums[2][PYROI_VECTORS];
    /* a part: one bin of a chunk's pair of lane groups */
    pyroi_cancel_countdown countdown =
        pyroi_cancel_countdown_of(tables.cancel,
                                  pyroi_cancel_work_of(grid_h * grid_w, pair * PYROI_LANES));
    int64_t ph, pw, chunk, r, q, b, j;
    int clean = 1;

    if (grid_h * grid_w > 0) {
        start = start - (T)INFINITY;
    }
    for (b = 0; b < pair; ++b) {
        for (j = 0; j < PYROI_VECTORS; ++j) {
            sums[b][j] = zero;
        }
    }
    for (ph = 0; ph < pooled_height; ++ph) {
        const pyroi_tap_range rr = tables.row_ranges[ph];
        const int64_t rows = rr.end - rr.begin;
        if (prefetch != NULL) {
            PYROI_TYPED(roi_prefetch_bin_row)(prefetch, ph, pooled_height, pooled_width);
        }
        for (pw = 0; pw < pooled_width; ++pw) {
            const pyroi_tap_range cr = tables.col_ranges[pw];
            if (prefetch != NULL) {
                PYROI_TYPED(roi_prefetch_step)(prefetch);
            }
            /* the 0 after zero_rows rows of in-map samples; -1: no sample is outside */
            const int64_t outside =
                grid_h * grid_w > 0
                    ? PYROI_TYPED(roi_align_first_outside)(rr, cr, grid_h, grid_w)
                    : -1;
            const int64_t zero_rows = outside < 0    ? -1
                                      : outside == 0 ? 0
                                      : outside < grid_w ? 1
                                                         : rows;
            for (chunk = 0; chunk < chunks; ++chunk) {
                const V *lanes = (const V *)block + chunk * pair * PYROI_VECTORS;
                V *bins = (V *)tile + chunk * pair * next_tile +
                          (ph * pooled_width + pw) * PYROI_VECTORS;
                V best[2][PYROI_VECTORS], sum[2][PYROI_VECTORS];
                if (pyroi_cancel_count(&countdown)) {
                    return 1; /* cancelled: the tile is unspecified, nothing to redo */
                }
                for (b = 0; b < pair; ++b) {
                    for (j = 0; j < PYROI_VECTORS; ++j) {
                        best[b][j] = start;
                        sum[b][j] = zero;
                    }
                }
                for (r = rr.begin; r < rr.end; ++r) {
                    const PYROI_TYPED(axis_tap) ty = tables.row_taps[r];
                    const V *row_lo = lanes + ty.lo * width * pixel;
                    const V *row_hi = lanes + ty.hi * width * pixel;
                    if (r - rr.begin == zero_rows) {
                        for (b = 0; b < pair; ++b) {
                            for (j = 0; j < PYROI_VECTORS; ++j) {
                                PYROI_TYPED(roi_align_lanes_max)(&best[b][j], &zero);
                            }
                        }
                    }
                    for (q = cr.begin; q < cr.end; ++q) {
                        const PYROI_TYPED(axis_tap) tx = tables.col_taps[q];
                        const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
                        const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
                        /* the taps' first elements, then each vector a constant offset
                         * from them: GCC then addresses a block's pixel (pair 1) with one
                         * index register per tap, as before pairs (4 address instructions
                         * per sample fewer than indexing vectors by tx.lo * pixel + j) */
                        const T *p1 = (const T *)(row_lo + tx.lo * pixel);
                        const T *p2 = (const T *)(row_lo + tx.hi * pixel);
                        const T *p3 = (const T *)(row_hi + tx.lo * pixel);
                        const T *p4 = (const T *)(row_hi + tx.hi * pixel);
                        for (b = 0; b < pair; ++b) {
                            for (j = 0; j < PYROI_VECTORS; ++j) {
                                /* each lane is one channel, evaluated exactly as the scalar
                                 * loop */
                                const int64_t at =
                                    (b * PYROI_VECTORS + j) * (PYROI_LANES / PYROI_VECTORS);
                                const V value = w1 * *(const V *)(p1 + at) +
                                                w2 * *(const V *)(p2 + at) +
                                                w3 * *(const V *)(p3 + at) +
                                                w4 * *(const V *)(p4 + at);
                                PYROI_TYPED(roi_align_lanes_max)(&best[b][j], &value);
                                sum[b][j] += value;
                            }
                        }
                    }
                }
                for (b = 0; b < pair; ++b) {
                    for (j = 0; j < PYROI_VECTORS; ++j) {
                        if (zero_rows == rows) { /* after every in-map sample (or the only
                                                  * offer) */
                            PYROI_TYPED(roi_align_lanes_max)(&best[b][j], &zero);
                        }
                        bins[b * next_tile + j] = best[b][j];
                        sums[b][j] += sum[b][j];
                    }
                }
            }
        }
    }
    for (b = 0; b < pair; ++b) {
        for (j = 0; j < PYROI_LANES; ++j) {
            const T lane = ((const T *)sums[b])[j];
            clean &= lane == lane;
        }
    }
    return clean;
}

/* mmcv max of RoI k on a block of channels [c0, c0 + lanes): tile[ph][pw][lane] and, unless
 * the call has no argmax, the argmax of each bin are what roi_align_max_bin gives for the
 * lane's channel: the offers come in the same order (in-map samples row-major, the out-of-map
 * 0 once at its place, which is a row boundary of the in-map samples as in ONNX max mode) and
 * each lane applies the scalar rule. narrow: the winners are kept as roi_align_index (see
 * roi_align_max_sample). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_roi_winners)(
    const struct PYROI_TYPED(roi_align_max_job) *max_job, int64_t k, int64_t c0, int64_t lanes,
    const T *block, T *tile, int narrow)
{
    const PYROI_TYPED(roi_align_plan) *plan = max_job->base.plan;
    const int64_t width = max_job->base.map_shape[3];
    const int64_t pooled_height = max_job->base.params->pooled_height;
    const int64_t pooled_width = max_job->base.params->pooled_width;
    const int64_t grid_w = max_job->grid_w[k];
    const int64_t grid_h = grid_w > 0 ? plan->samples[k] / grid_w : 0;
    const PYROI_TYPED(roi_align_tap_tables) tables =
        PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
    const int64_t *a = max_job->argmax_strides;
    pyroi_cancel_countdown countdown =
        pyroi_cancel_countdown_of(tables.cancel,
                                  pyroi_cancel_work_of(plan->samples[k], PYROI_LANES));
    int64_t ph, pw, r, q, j;

    for (ph = 0; ph < pooled_height; ++ph) {
        const pyroi_tap_range rr = tables.row_ranges[ph];
        const int64_t rows = rr.end - rr.begin;
        for (pw = 0; pw < pooled_width; ++pw) {
            const pyroi_tap_range cr = tables.col_ranges[pw];
            T *best = tile + (ph * pooled_width + pw) * PYROI_LANES;
            int64_t winner[PYROI_LANE_BYTES / sizeof(T)];
            PYROI_TYPED(roi_align_index) narrow_winner[PYROI_LANE_BYTES / sizeof(T)];
            int64_t outside, zero_rows;
            if (pyroi_cancel_count(&countdown)) {
                return; /* cancelled: tile and argmax unspecified */
            }
            if (grid_h * grid_w <= 0) { /* empty bin: 0, argmax -1 */
                for (j = 0; j < PYROI_LANES; ++j) {
                    best[j] = (T)0;
                    winner[j] = -1;
                    narrow_winner[j] = -1;
                }
            } else {
                /* the 0 after zero_rows rows of in-map samples; -1: no sample is outside */
                outside = PYROI_TYPED(roi_align_first_outside)(rr, cr, grid_h, grid_w);
                zero_rows = outside < 0 ? -1 : outside == 0 ? 0 : outside < grid_w ? 1 : rows;
                if (zero_rows == 0) {
                    PYROI_TYPED(roi_align_max_zero)(best, winner, narrow_winner, outside, 1,
                                                    narrow);
                }
                for (r = rr.begin; r < rr.end; ++r) {
                    const PYROI_TYPED(axis_tap) ty = tables.row_taps[r];
                    const int64_t row_index = (rr.first_sample + (r - rr.begin)) * grid_w +
                                              cr.first_sample - cr.begin;
                    if (zero_rows > 0 && r - rr.begin == zero_rows) {
                        PYROI_TYPED(roi_align_max_zero)(best, winner, narrow_winner, outside, 0,
                                                    narrow);
                    }
                    q = cr.begin;
                    if (r == rr.begin && zero_rows != 0) { /* the first offer */
                        PYROI_TYPED(roi_align_max_sample)(best, winner, narrow_winner, block,
                                                          width, ty, tables.col_taps[q],
                                                          row_index + q, 1, narrow);
                        ++q;
                    }
                    for (; q < cr.end; ++q) {
                        PYROI_TYPED(roi_align_max_sample)(best, winner, narrow_winner, block,
                                                          width, ty, tables.col_taps[q],
                                                          row_index + q, 0, narrow);
                    }
                }
                if (zero_rows > 0 && zero_rows == rows) { /* after every in-map sample */
                    PYROI_TYPED(roi_align_max_zero)(best, winner, narrow_winner, outside, 0,
                                                    narrow);
                }
            }
            if (max_job->argmax != NULL) {
                int64_t *out = max_job->argmax + k * a[0] + c0 * a[1] + ph * a[2] + pw * a[3];
                for (j = 0; j < lanes; ++j) {
                    out[j * a[1]] = narrow ? narrow_winner[j] : winner[j];
                }
            }
        }
    }
}

/* mmcv max of RoI k on a block of channels [c0, c0 + lanes): the values alone where the call
 * has no argmax and no lane met a NaN (roi_align_max_roi_values), else with winners. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_roi)(
    const struct PYROI_TYPED(roi_align_max_job) *max_job, int64_t k, int64_t c0, int64_t lanes,
    const T *block, T *tile)
{
    const PYROI_TYPED(roi_align_plan) *plan = max_job->base.plan;
    const int64_t grid_w = max_job->grid_w[k];
    const int64_t grid_h = grid_w > 0 ? plan->samples[k] / grid_w : 0;
    if (max_job->argmax == NULL) {
        const PYROI_TYPED(roi_align_tap_tables) tables = PYROI_TYPED(roi_align_tap_tables_of)(
            plan, k, max_job->base.params->pooled_height);
        if (PYROI_TYPED(roi_align_max_roi_values)(
                &tables, grid_h, grid_w, block, 1, 1, 1, max_job->base.map_shape[3],
                max_job->base.params->pooled_height, max_job->base.params->pooled_width, tile,
                max_job->base.params->pooled_height * max_job->base.params->pooled_width *
                    PYROI_LANES,
                NULL)) {
            return; /* no winners to keep, no NaN met */
        }
    }
    /* The int64 lane loop for every RoI. The narrow vector winners (narrow 1) measured
     * 1.7-2.5x faster, but the manylinux2014 wheel's compiler built the region and image
     * copies of them so that a NaN sample's sign differed between the two orders (float64,
     * test_region_and_image_orders_agree): off until that is understood. */
    PYROI_TYPED(roi_align_max_roi_winners)(max_job, k, c0, lanes, block, tile, 0);
}

/* mmcv max of RoI k without argmax on channels-last features read in place (image: its
 * image's first pixel; channel_groups lane groups of channels, pixels `groups` lane groups
 * and rows row_pixels pixels apart, see roi_align_channels_last_template.h): every channel
 * into the worker's tiles, lane group g's tile g * tile_elements after the first, pairs of
 * lane groups bin by bin (the last single group on its own). A RoI whose values met a NaN is
 * redone channel by channel with the scalar rule (roi_align_max_bin) on the caller's pixels:
 * the lanes of the other orders apply that rule, so the bits are theirs. `prefetch` (or
 * NULL) walks the next bin rows' pixels (roi_align_prefetch_template.h). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_roi_in_place)(
    const struct PYROI_TYPED(roi_align_max_job) *max_job, int64_t k, const T *image,
    int64_t channel_groups, int64_t groups, int64_t row_pixels, T *tile,
    int64_t tile_elements, PYROI_TYPED(roi_prefetch) *prefetch)
{
    const PYROI_TYPED(roi_align_plan) *plan = max_job->base.plan;
    const int64_t *in_strides = max_job->base.features_strides;
    const int64_t pooled_height = max_job->base.params->pooled_height;
    const int64_t pooled_width = max_job->base.params->pooled_width;
    const int64_t grid_w = max_job->grid_w[k];
    const int64_t grid_h = grid_w > 0 ? plan->samples[k] / grid_w : 0;
    const PYROI_TYPED(roi_align_tap_tables) tables =
        PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
    int64_t c, ph, pw, winner;
    int clean = 1;

    if (channel_groups >= 2) { /* the lane group counts are constants of each copy */
        clean &= PYROI_TYPED(roi_align_max_roi_values)(
            &tables, grid_h, grid_w, image, 2, channel_groups / 2, groups, row_pixels,
            pooled_height, pooled_width, tile, tile_elements, prefetch);
    }
    if (channel_groups % 2 != 0) {
        clean &= PYROI_TYPED(roi_align_max_roi_values)(
            &tables, grid_h, grid_w, image + (channel_groups - 1) * PYROI_LANES, 1, 1, groups,
            row_pixels, pooled_height, pooled_width,
            tile + (channel_groups - 1) * tile_elements, tile_elements,
            channel_groups == 1 ? prefetch : NULL);
    }
    if (clean) {
        return;
    }
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(tables.cancel,
                                                                 plan->samples[k]);
    for (c = 0; c < channel_groups * PYROI_LANES; ++c) {
        T *lanes = tile + c / PYROI_LANES * tile_elements + c % PYROI_LANES;
        for (ph = 0; ph < pooled_height; ++ph) {
            for (pw = 0; pw < pooled_width; ++pw) {
                if (pyroi_cancel_count(&countdown)) {
                    return;
                }
                lanes[(ph * pooled_width + pw) * PYROI_LANES] = PYROI_TYPED(roi_align_max_bin)(
                    image + c, in_strides[2], in_strides[3], tables.row_taps,
                    tables.row_ranges[ph], tables.col_taps, tables.col_ranges[pw], grid_h,
                    grid_w, &winner);
            }
        }
    }
}

/* mmcv max forward without argmax on channels-last features read in place, work item = RoI
 * (roi_align_channels_last_template.h). */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_align_max_forward_channels_last_task))
{
    const PYROI_TYPED(roi_align_max_job) *max_job =
        (const PYROI_TYPED(roi_align_max_job) *)context;
    PYROI_TYPED(roi_align_forward_channels_last_items)(&max_job->base, max_job, begin, end,
                                                       worker);
}

/* mmcv max forward, work item = (image, channel block). */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_align_max_forward_image_task))
{
    const PYROI_TYPED(roi_align_max_job) *max_job =
        (const PYROI_TYPED(roi_align_max_job) *)context;
    PYROI_TYPED(roi_align_forward_items)(&max_job->base, max_job, ROI_ALIGN_REDUCE_MAX,
                                         ROI_ALIGN_ORDER_IMAGE, begin, end, worker);
}

/* mmcv max forward, work item = RoI. */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_align_max_forward_region_task))
{
    const PYROI_TYPED(roi_align_max_job) *max_job =
        (const PYROI_TYPED(roi_align_max_job) *)context;
    PYROI_TYPED(roi_align_forward_items)(&max_job->base, max_job, ROI_ALIGN_REDUCE_MAX,
                                         ROI_ALIGN_ORDER_REGION, begin, end, worker);
}

/* Samples per bin along x of every RoI of the plan (which keeps only products). */
static pyroi_status PYROI_TYPED(roi_align_grid_widths)(const PYROI_TYPED(roi_align_plan) *plan,
                                                       int64_t height, int64_t width,
                                                       const pyroi_roi_align_params *params,
                                                       pyroi_call_cancel *cancel,
                                                       int64_t **grid_w)
{
    const int64_t num_rois = plan->num_rois;
    const T *boxes = (const T *)plan->rois.boxes;
    const int64_t box_row_stride = plan->rois.coords;
    int64_t k;
    *grid_w = (int64_t *)malloc((size_t)(num_rois > 0 ? num_rois : 1) * sizeof(int64_t));
    if (*grid_w == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(sample_axis) rows, cols;
        cols.grid = 0; /* validated boxes always set it; this keeps -Wmaybe-uninitialized quiet */
        if (pyroi_cancel_at(cancel, k)) {
            return PYROI_E_CANCELLED; /* the caller frees *grid_w */
        }
        (void)PYROI_TYPED(roi_align_axes)(boxes + k * box_row_stride, params, height, width,
                                          &rows, &cols);
        (*grid_w)[k] = cols.grid;
    }
    return PYROI_OK;
}

/* A float16 call of a max forward read and written in place (T float; see
 * roi_align_half.h): its input and output, and where it says whether it ran. */
typedef struct PYROI_TYPED(roi_align_half_forward) {
    const uint16_t *input;
    uint16_t *output;
    int *taken; /* 1: the call ran (or failed its checks); 0: nothing done, the chunks run */
} PYROI_TYPED(roi_align_half_forward);

/* The forward of both max reductions (mmcv's over samples; ONNX's over weighted taps): one
 * validation, plan and schedule; tasks are the reduction's (lane-major ones optional). argmax
 * may be NULL; its codes number codes_per_sample per sample (mmcv 1, ONNX 4: the taps), so a
 * RoI with more samples per bin than codes can count (ONNX: 2^61) is PYROI_E_INVALID_BOX.
 * With half (else NULL), the float16 tensors are read and written in place by the lane-major
 * orders, which widen what they gather and round each bin once as they store it; where the
 * direct order would run (it reads the map where it lies) nothing is done. */
static pyroi_status PYROI_TYPED(roi_align_max_like_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4], int64_t codes_per_sample,
    const pyroi_roi_align_params *params, const roi_align_forward_tasks *tasks,
    const PYROI_TYPED(roi_align_half_forward) *half)
{
    PYROI_TYPED(roi_align_max_job) job;
    PYROI_TYPED(roi_align_plan) plan;
    int64_t *grid_w = NULL;
    int64_t k;
    int planned;
    pyroi_status status = PYROI_TYPED(roi_align_check_and_plan)(
        &plan, 0, half != NULL ? (const void *)half->input : (const void *)input, input_shape,
        input_strides, half != NULL ? (const void *)half->output : (const void *)output,
        output_strides, argmax, argmax_strides, argmax != NULL, boxes, num_rois,
        box_row_stride, batch_indices, params, 0, NULL, &planned);
    if (half != NULL) {
        *half->taken = 1;
    }
    if (!planned) {
        return status;
    }
    for (k = 0; argmax != NULL && k < num_rois; ++k) {
        if (plan.samples[k] > (INT64_MAX - codes_per_sample) / codes_per_sample) {
            PYROI_TYPED(roi_align_plan_free)(&plan);
            return PYROI_E_INVALID_BOX;
        }
    }
    status = PYROI_TYPED(roi_align_plan_order_by_rows)(&plan);
    if (status != PYROI_OK) {
        return status;
    }
    input = (const T *)pyroi_data_or_placeholder(input); /* a map without pixels may be NULL */
    status = PYROI_TYPED(roi_align_grid_widths)(&plan, input_shape[2], input_shape[3], params,
                                                &plan.rois.cancel, &grid_w);
    if (status == PYROI_OK) {
        PYROI_TYPED(roi_align_job_init)(&job.base, input, input_strides, output,
                                        output_strides, input_shape, params, &plan, NULL);
        job.argmax = argmax;
        job.argmax_const = NULL;
        job.argmax_strides = argmax_strides;
        job.grid_w = grid_w;
        if (half != NULL) {
            *half->taken = PYROI_TYPED(roi_align_half_in_place)(&job.base, 0, half->input,
                                                                half->output, tasks);
        }
        if (half == NULL || *half->taken) {
            status = PYROI_TYPED(roi_align_execute_tasks)(&job.base, 0, &job, tasks);
        }
    }
    free(grid_w);
    PYROI_TYPED(roi_align_plan_free)(&plan);
    return status;
}

/* mmcv max's tasks; the channels-last one (in place from channels-last features) makes values
 * only (winners take the blocks). */
static roi_align_forward_tasks PYROI_TYPED(roi_align_max_tasks)(int with_argmax)
{
    roi_align_forward_tasks tasks;
    tasks.direct = PYROI_TYPED(roi_align_max_forward_task);
    tasks.region = PYROI_TYPED(roi_align_max_forward_region_task);
    tasks.image = PYROI_TYPED(roi_align_max_forward_image_task);
    tasks.channels_last =
        with_argmax ? NULL : PYROI_TYPED(roi_align_max_forward_channels_last_task);
    return tasks;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_max_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_align_params *params)
{
    const roi_align_forward_tasks tasks = PYROI_TYPED(roi_align_max_tasks)(argmax != NULL);
    return PYROI_TYPED(roi_align_max_like_forward)(
        input, input_shape, input_strides, boxes, num_rois, box_row_stride, batch_indices,
        output, output_strides, argmax, argmax_strides, 1, params, &tasks, NULL);
}

/* The float16 tensors of a max backward run in place (pyroi_roi_align_max_backward_half): *taken
 * 0 where the float32 planes cannot be had (the caller then runs chunks), else 1. */
typedef struct PYROI_TYPED(roi_align_half_backward) {
    const uint16_t *grad_output;
    uint16_t *grad_input;
    int *taken;
} PYROI_TYPED(roi_align_half_backward);

/* Most bytes of float32 planes a float16 max backward maps for its workers (one channel of
 * every image each; more and it runs in chunks). */
#ifndef ROI_ALIGN_MAX_HALF_PLANES_BYTES
#define ROI_ALIGN_MAX_HALF_PLANES_BYTES ((double)(256 << 20))
#endif

/* The backward of both max reductions: validation (each argmax -1 or one of the
 * codes_per_sample * samples codes of its bin, as the forward wrote them), plan, then task
 * over the channels (the reduction's: mmcv's below, ONNX's in
 * roi_align_onnx_max_template.h). */
static pyroi_status PYROI_TYPED(roi_align_max_like_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4], int64_t codes_per_sample,
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params, pyroi_range_task task,
    const PYROI_TYPED(roi_align_half_backward) *half)
{
    PYROI_TYPED(roi_align_max_job) job;
    PYROI_TYPED(roi_align_plan) plan;
    int64_t *grid_w = NULL;
    T *planes = NULL;
    int64_t k, c, ph, pw;
    int workers, planned;
    pyroi_status status = PYROI_TYPED(roi_align_check_and_plan)(
        &plan, 1, half != NULL ? (const void *)half->grad_input : (const void *)grad_input,
        grad_input_shape, grad_input_strides,
        half != NULL ? (const void *)half->grad_output : (const void *)grad_output,
        grad_output_strides, argmax, argmax_strides, 1, boxes, num_rois, box_row_stride,
        batch_indices, params, 0, NULL, &planned);
    if (half != NULL) {
        *half->taken = 1;
    }
    if (!planned) {
        return status;
    }
    /* every argmax must name a sample of its bin (or be -1) before anything is written: one
     * comparison with the RoI's number of codes (no division: this pass reads every entry) */
    for (k = 0; k < num_rois && status == PYROI_OK; ++k) {
        const int64_t codes = codes_per_sample * plan.samples[k]; /* below 2^33 */
        for (c = 0; c < grad_input_shape[1] && status == PYROI_OK; ++c) {
            for (ph = 0; ph < params->pooled_height; ++ph) {
                for (pw = 0; pw < params->pooled_width; ++pw) {
                    const int64_t winner = argmax[k * argmax_strides[0] + c * argmax_strides[1] +
                                                  ph * argmax_strides[2] + pw * argmax_strides[3]];
                    if (winner < -1 || winner >= codes) {
                        status = PYROI_E_INVALID_ARGMAX;
                    }
                }
            }
        }
    }
    if (status == PYROI_OK) {
        status = PYROI_TYPED(roi_align_grid_widths)(&plan, grad_input_shape[2],
                                                    grad_input_shape[3], params,
                                                    &plan.rois.cancel, &grid_w);
    }
    if (status == PYROI_OK) {
        PYROI_TYPED(roi_align_job_init)(&job.base, grad_output, grad_output_strides,
                                        grad_input, grad_input_strides, grad_input_shape, params,
                                        &plan, NULL);
        job.argmax = NULL;
        job.argmax_const = argmax;
        job.argmax_strides = argmax_strides;
        job.grid_w = grid_w;
        const double work_per_channel =
            (double)grad_input_shape[0] * (double)grad_input_shape[2] * (double)grad_input_shape[3] +
            (double)num_rois * (double)params->pooled_height * (double)params->pooled_width;
        workers = pyroi_parallel_workers(params->num_threads, grad_input_shape[1],
                                         work_per_channel);
        if (half != NULL) {
            /* each worker's float32 planes of one channel: the chunks where they cannot be
             * had (nothing read or written yet) */
            const double plane_elements = (double)grad_input_shape[0] *
                                          (double)grad_input_shape[2] *
                                          (double)grad_input_shape[3];
            job.base.half_features = half->grad_output;
            job.base.half_result = half->grad_input;
            job.base.scratch_stride = (int64_t)plane_elements;
            planes = plane_elements * (double)workers * sizeof(T) <=
                             (double)ROI_ALIGN_MAX_HALF_PLANES_BYTES
                         ? (T *)pyroi_aligned_malloc((size_t)plane_elements *
                                                     (size_t)workers * sizeof(T))
                         : NULL;
            job.base.scratch = planes;
            *half->taken = planes != NULL;
        }
        if (half == NULL || *half->taken) {
            status = pyroi_parallel_for(workers, grad_input_shape[1], work_per_channel,
                                        params->cancel, task, &job);
        }
    }
    pyroi_aligned_free(planes);
    free(grid_w);
    PYROI_TYPED(roi_align_plan_free)(&plan);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_max_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params)
{
    return PYROI_TYPED(roi_align_max_like_backward)(
        grad_output, grad_output_strides, argmax, argmax_strides, 1, boxes, num_rois,
        box_row_stride, batch_indices, grad_input, grad_input_shape, grad_input_strides, params,
        PYROI_TYPED(roi_align_max_backward_task), NULL);
}
