/* roi_align_onnx_max_template.h - RoIAlign mode="max" as onnxruntime defines it (the largest
 * weighted tap, docs/semantics.md §4.1), forward with or without winners and its gradient;
 * the call path is the max reductions' (roi_align_max_template.h). Included by roi_align.c
 * once per dtype with T and PYROI_TYPED(name) defined. */

/* ---- ONNX max mode (onnxruntime's definition, docs/semantics.md §4.1) -------------------- */
/* Each sample is reduced to the largest of its four weighted taps t_k = w_k * P[tap_k] (the
 * interpolated sum is never formed), with M(a, b) = a < b ? b : a applied left to right, and
 * the bin to M over its samples in row-major order, starting from the first sample. An
 * out-of-map sample has all weights 0 at pixel (0, 0) (onnxruntime's pre-computed form), so
 * its value is z = 0 * P[0, 0]: +-0 or NaN. A fold with M keeps the first sample unless a
 * later one is strictly larger, so among the (identical) out-of-map values only the first in
 * sample order can matter: it stands for all of them, and a huge grid costs only its in-map
 * samples. No division; an empty bin gives 0. */

static inline T PYROI_TYPED(roi_align_onnx_max_of)(T a, T b)
{
    return a < b ? b : a; /* std::max: NaN in a propagates, NaN in b is skipped */
}

/* *winner receives the code of the term the bin's value came from, 4 * s + t: tap t (0..3 =
 * (lo, lo), (lo, hi), (hi, lo), (hi, hi)) of sample s = iy * grid_w + ix, an out-of-map
 * sample's term being tap 0 (its four are alike); -1 for an empty bin. The gradient follows
 * it (the gradient, below). */
static T PYROI_TYPED(roi_align_onnx_max_bin)(const T *plane, int64_t row_stride,
                                             int64_t col_stride, int64_t map_pixels,
                                             const PYROI_TYPED(axis_tap) *row_taps,
                                             pyroi_tap_range rr,
                                             const PYROI_TYPED(axis_tap) *col_taps,
                                             pyroi_tap_range cr, int64_t grid_h, int64_t grid_w,
                                             int64_t *winner)
{
    const int64_t outside = grid_h * grid_w > 0
                                ? PYROI_TYPED(roi_align_first_outside)(rr, cr, grid_h, grid_w)
                                : -1;
    /* z: the value of every out-of-map sample (a map without pixels has nothing to read) */
    const T zero_tap = map_pixels > 0 ? (T)0 * plane[0] : (T)0;
    T best = (T)0;
    int have = 0, zero_offered = outside < 0;
    int64_t r, q;
    *winner = -1;
    if (grid_h * grid_w <= 0) {
        return (T)0;
    }
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
            const T taps[4] = {w1 * row_lo[tx.lo * col_stride], w2 * row_lo[tx.hi * col_stride],
                               w3 * row_hi[tx.lo * col_stride], w4 * row_hi[tx.hi * col_stride]};
            T value = taps[0];
            int64_t t, tap = 0;
            for (t = 1; t < 4; ++t) { /* value = M(value, taps[t]), remembering which won */
                if (value < taps[t]) {
                    value = taps[t];
                    tap = t;
                }
            }
            if (!zero_offered && outside < index) {
                if (!have || best < zero_tap) { /* M(best, z) */
                    best = zero_tap;
                    *winner = 4 * outside;
                }
                have = 1;
                zero_offered = 1;
            }
            if (!have || best < value) { /* M(best, value) */
                best = value;
                *winner = 4 * index + tap;
            }
            have = 1;
        }
    }
    if (!zero_offered && (!have || best < zero_tap)) {
        best = zero_tap;
        *winner = 4 * outside;
    }
    return best;
}

/* Max forward in the direct order, RoIs [begin, end): every channel and bin of each, reduced
 * as mmcv's max (with argmax, when asked) or onnxruntime's max. */
static void PYROI_TYPED(roi_align_max_forward_direct_items)(
    const PYROI_TYPED(roi_align_max_job) *max_job, enum roi_align_reduction reduction,
    int64_t begin, int64_t end)
{
    const PYROI_TYPED(roi_align_job) *job = &max_job->base;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *in_strides = job->features_strides, *out_strides = job->result_strides;
    const int64_t *a = max_job->argmax_strides;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t map_pixels = job->map_shape[2] * job->map_shape[3];
    int64_t k, c, ph, pw;

    for (k = begin; k < end; ++k) {
        const PYROI_TYPED(roi_align_tap_tables) tables =
            PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
        const int64_t grid_w = max_job->grid_w[k];
        const int64_t grid_h = grid_w > 0 ? plan->samples[k] / grid_w : 0;
        pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(tables.cancel,
                                                                     plan->samples[k]);
        for (c = 0; c < job->map_shape[1]; ++c) {
            const T *plane = job->features + job->batch_indices[k] * in_strides[0] +
                             c * in_strides[1];
            T *out = job->result + k * out_strides[0] + c * out_strides[1];
            for (ph = 0; ph < pooled_height; ++ph) {
                for (pw = 0; pw < pooled_width; ++pw) {
                    T *result = out + ph * out_strides[2] + pw * out_strides[3];
                    int64_t winner;
                    if (pyroi_cancel_count(&countdown)) {
                        return; /* the outputs are unspecified once cancelled */
                    }
                    if (reduction == ROI_ALIGN_REDUCE_ONNX_MAX) {
                        *result = PYROI_TYPED(roi_align_onnx_max_bin)(
                            plane, in_strides[2], in_strides[3], map_pixels, tables.row_taps,
                            tables.row_ranges[ph], tables.col_taps, tables.col_ranges[pw],
                            grid_h, grid_w, &winner);
                    } else {
                        *result = PYROI_TYPED(roi_align_max_bin)(
                            plane, in_strides[2], in_strides[3], tables.row_taps,
                            tables.row_ranges[ph], tables.col_taps, tables.col_ranges[pw],
                            grid_h, grid_w, &winner);
                    }
                    if (max_job->argmax != NULL) {
                        max_job->argmax[k * a[0] + c * a[1] + ph * a[2] + pw * a[3]] = winner;
                    }
                }
            }
        }
    }
}

static void PYROI_TYPED(roi_align_max_forward_task)(void *context, int64_t begin, int64_t end,
                                                    int worker)
{
    (void)worker;
    PYROI_TYPED(roi_align_max_forward_direct_items)(
        (const PYROI_TYPED(roi_align_max_job) *)context, ROI_ALIGN_REDUCE_MAX, begin, end);
}

static void PYROI_TYPED(roi_align_onnx_max_forward_task)(void *context, int64_t begin,
                                                         int64_t end, int worker)
{
    (void)worker;
    PYROI_TYPED(roi_align_max_forward_direct_items)(
        (const PYROI_TYPED(roi_align_max_job) *)context, ROI_ALIGN_REDUCE_ONNX_MAX, begin,
        end);
}

/* One sample of an ONNX max bin on a block, per lane: the four weighted taps (pixels p1..p4
 * of the block, weights from the row tap ty and the column tap tx) reduced with M left to
 * right, then either starting the fold (first) or folded into best with M; with track (a
 * constant at each call, so the plain forward keeps its loop) the winner follows the term
 * kept, as roi_align_onnx_max_bin's code 4 * index + tap: in winner (int64), or with narrow
 * (a constant too; the codes of the RoI fit roi_align_index) in narrow_winner, whose
 * updates are compare-and-blends of whole vectors (as mmcv max's, roi_align_max_take). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_onnx_max_sample)(
    T *PYROI_RESTRICT best, int64_t *PYROI_RESTRICT winner,
    PYROI_TYPED(roi_align_index) *PYROI_RESTRICT narrow_winner, const T *block, int64_t width,
    PYROI_TYPED(axis_tap) ty, PYROI_TYPED(axis_tap) tx, int64_t index, int first, int track,
    int narrow)
{
    const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
    const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
    const T *p1 = block + (ty.lo * width + tx.lo) * PYROI_LANES;
    const T *p2 = block + (ty.lo * width + tx.hi) * PYROI_LANES;
    const T *p3 = block + (ty.hi * width + tx.lo) * PYROI_LANES;
    const T *p4 = block + (ty.hi * width + tx.hi) * PYROI_LANES;
    const int64_t code = 4 * index;
    int64_t j;
#ifdef PYROI_HAVE_VECTOR_TYPES
    if (track && narrow) {
        typedef PYROI_TYPED(roi_align_lanes) V;
        typedef PYROI_TYPED(roi_align_index_lanes) I;
        const I code0 = (I){0} + (PYROI_TYPED(roi_align_index))code;
        for (j = 0; j < PYROI_LANES; j += PYROI_LANES / PYROI_VECTORS) {
            /* each lane is one channel, evaluated exactly as the scalar loop */
            const V t2 = w2 * *(const V *)(p2 + j), t3 = w3 * *(const V *)(p3 + j);
            const V t4 = w4 * *(const V *)(p4 + j);
            V v = w1 * *(const V *)(p1 + j);
            I tap = code0, up = (I)(v < t2);
            v = (V)(((I)t2 & up) | ((I)v & ~up));
            tap = ((code0 + 1) & up) | (tap & ~up);
            up = (I)(v < t3);
            v = (V)(((I)t3 & up) | ((I)v & ~up));
            tap = ((code0 + 2) & up) | (tap & ~up);
            up = (I)(v < t4);
            v = (V)(((I)t4 & up) | ((I)v & ~up));
            tap = ((code0 + 3) & up) | (tap & ~up);
            up = (I)(*(const V *)(best + j) < v) |
                 ((I){0} - (PYROI_TYPED(roi_align_index))(first != 0)); /* first: all */
            *(I *)(void *)(best + j) = ((I)v & up) | (*(const I *)(const void *)(best + j) & ~up);
            *(I *)(narrow_winner + j) = (tap & up) | (*(const I *)(narrow_winner + j) & ~up);
        }
        return;
    }
#endif
    /* each lane is one channel, evaluated exactly as the scalar loop */
    for (j = 0; j < PYROI_LANES; ++j) {
        const T t2 = w2 * p2[j], t3 = w3 * p3[j], t4 = w4 * p4[j];
        T v = w1 * p1[j];
        int64_t tap = code;
        int up = v < t2;
        v = up ? t2 : v;
        tap = up ? code + 1 : tap;
        up = v < t3;
        v = up ? t3 : v;
        tap = up ? code + 2 : tap;
        up = v < t4;
        v = up ? t4 : v;
        tap = up ? code + 3 : tap;
        up = first || best[j] < v;
        best[j] = up ? v : best[j];
        if (track && narrow) {
            narrow_winner[j] = up ? (PYROI_TYPED(roi_align_index))tap : narrow_winner[j];
        } else if (track) {
            winner[j] = up ? tap : winner[j];
        }
    }
}

/* z offered to an ONNX max fold (first: z starts it), per lane; with track, code is its
 * winner code (in narrow_winner with narrow). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_onnx_max_zero)(
    T *PYROI_RESTRICT best, int64_t *PYROI_RESTRICT winner,
    PYROI_TYPED(roi_align_index) *PYROI_RESTRICT narrow_winner, const T *zero, int64_t code,
    int first, int track, int narrow)
{
    int64_t j;
    for (j = 0; j < PYROI_LANES; ++j) {
        const int take = first || best[j] < zero[j];
        best[j] = take ? zero[j] : best[j];
        if (track && narrow) {
            narrow_winner[j] = take ? (PYROI_TYPED(roi_align_index))code : narrow_winner[j];
        } else if (track) {
            winner[j] = take ? code : winner[j];
        }
    }
}

/* ONNX max of RoI k on a block of channels [c0, c0 + lanes): tile[ph][pw][lane] and, unless
 * the call has no argmax, the winner codes are what roi_align_onnx_max_bin gives for the
 * lane's channel, zero[lane] being its z. Each lane evaluates the same expression in the
 * same order: the fold starts from the first sample in row-major order (z if that one is out
 * of the map) and z is offered once, at its place among the in-map samples. That place is
 * always a row boundary of the bin's in-map samples: roi_align_first_outside names the first
 * sample (before every row), the column after row 0's in-map samples (after one row) or the
 * row after the in-map rows (after all). M is a per-lane select, so NaNs and signed zeros
 * behave exactly as in the scalar kernel. The fold runs in the tile itself. track: whether
 * the call records winners (max_job->argmax), a constant of each inlined copy. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_onnx_max_roi_fold)(
    const struct PYROI_TYPED(roi_align_max_job) *max_job, int64_t k, int64_t c0, int64_t lanes,
    const T *block, const T *zero, T *tile, int track, int narrow)
{
    const PYROI_TYPED(roi_align_plan) *plan = max_job->base.plan;
    const int64_t width = max_job->base.map_shape[3];
    const int64_t pooled_height = max_job->base.params->pooled_height;
    const int64_t pooled_width = max_job->base.params->pooled_width;
    const int64_t grid_w = max_job->grid_w[k];
    const PYROI_TYPED(roi_align_tap_tables) tables =
        PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
    const int64_t grid_h = grid_w > 0 ? plan->samples[k] / grid_w : 0;
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
            if (grid_h * grid_w <= 0) { /* empty bin */
                for (j = 0; j < PYROI_LANES; ++j) {
                    best[j] = (T)0;
                    winner[j] = -1;
                    narrow_winner[j] = -1;
                }
            } else {
                /* z after zero_rows rows of in-map samples; -1: no sample is outside */
                outside = PYROI_TYPED(roi_align_first_outside)(rr, cr, grid_h, grid_w);
                zero_rows = outside < 0 ? -1 : outside == 0 ? 0 : outside < grid_w ? 1 : rows;
                for (r = rr.begin; r < rr.end; ++r) {
                    const PYROI_TYPED(axis_tap) ty = tables.row_taps[r];
                    const int64_t row_index = (rr.first_sample + (r - rr.begin)) * grid_w +
                                              cr.first_sample - cr.begin;
                    if (zero_rows >= 0 && r - rr.begin == zero_rows) {
                        PYROI_TYPED(roi_align_onnx_max_zero)(best, winner, narrow_winner, zero,
                                                             4 * outside, zero_rows == 0, track,
                                                             narrow);
                    }
                    q = cr.begin;
                    if (r == rr.begin && zero_rows != 0) { /* the first sample starts the fold */
                        PYROI_TYPED(roi_align_onnx_max_sample)(
                            best, winner, narrow_winner, block, width, ty, tables.col_taps[q],
                            row_index + q, 1, track, narrow);
                        ++q;
                    }
                    for (; q < cr.end; ++q) {
                        PYROI_TYPED(roi_align_onnx_max_sample)(
                            best, winner, narrow_winner, block, width, ty, tables.col_taps[q],
                            row_index + q, 0, track, narrow);
                    }
                }
                if (zero_rows >= 0 && zero_rows == rows) { /* z after every in-map sample */
                    PYROI_TYPED(roi_align_onnx_max_zero)(best, winner, narrow_winner, zero,
                                                         4 * outside, rows == 0, track, narrow);
                }
            }
            if (track) {
                int64_t *out = max_job->argmax + k * a[0] + c0 * a[1] + ph * a[2] + pw * a[3];
                for (j = 0; j < lanes; ++j) {
                    out[j * a[1]] = narrow ? narrow_winner[j] : winner[j];
                }
            }
        }
    }
}

PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_onnx_max_roi)(
    const struct PYROI_TYPED(roi_align_max_job) *max_job, int64_t k, int64_t c0, int64_t lanes,
    const T *block, const T *zero, T *tile)
{
    /* winner codes 4 * sample + tap of the value's width where the RoI's all fit (every RoI
     * of fewer than 2^29 samples for float32) */
    const int narrow = sizeof(PYROI_TYPED(roi_align_index)) == sizeof(int64_t) ||
                       max_job->base.plan->samples[k] <= (INT32_MAX - 3) / 4;
    if (max_job->argmax == NULL) {
        PYROI_TYPED(roi_align_onnx_max_roi_fold)(max_job, k, c0, lanes, block, zero, tile, 0, 0);
    } else if (narrow) {
        PYROI_TYPED(roi_align_onnx_max_roi_fold)(max_job, k, c0, lanes, block, zero, tile, 1, 1);
    } else {
        PYROI_TYPED(roi_align_onnx_max_roi_fold)(max_job, k, c0, lanes, block, zero, tile, 1, 0);
    }
}

/* ONNX max forward, work item = (image, channel block). */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_align_onnx_max_forward_image_task))
{
    const PYROI_TYPED(roi_align_max_job) *max_job =
        (const PYROI_TYPED(roi_align_max_job) *)context;
    PYROI_TYPED(roi_align_forward_items)(&max_job->base, max_job, ROI_ALIGN_REDUCE_ONNX_MAX,
                                         ROI_ALIGN_ORDER_IMAGE, begin, end, worker);
}

/* ONNX max forward, work item = RoI. */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_align_onnx_max_forward_region_task))
{
    const PYROI_TYPED(roi_align_max_job) *max_job =
        (const PYROI_TYPED(roi_align_max_job) *)context;
    PYROI_TYPED(roi_align_forward_items)(&max_job->base, max_job, ROI_ALIGN_REDUCE_ONNX_MAX,
                                         ROI_ALIGN_ORDER_REGION, begin, end, worker);
}

pyroi_status PYROI_TYPED(pyroi_roi_align_onnx_max_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params)
{
    /* the forward without winners (below) */
    return PYROI_TYPED(pyroi_roi_align_onnx_max_forward_argmax)(
        input, input_shape, input_strides, boxes, num_rois, box_row_stride, batch_indices,
        output, output_strides, NULL, NULL, params);
}

/* ---- the gradient -------------------------------------------------------------------- */
/* The forward (roi_align_onnx_max_bin, and per lane roi_align_onnx_max_roi) records each
 * output's winning term as the code 4 * s + t: tap t of sample s of its bin. The backward
 * sends the output gradient g to that one tap, g * w_t with the weight the forward multiplied
 * by -- the derivative of the forward as computed. An out-of-map sample's term is 0 * P[0, 0]
 * (onnxruntime's pre-computed form: pixel (0, 0), weight 0), so its gradient is g * 0 at pixel
 * (0, 0), like any weight-0 tap. The plan, tap tables, validation and channel split are the
 * max backward's (roi_align_max_like_backward); only the per-bin rule is here. */

/* The gradient of an ONNX max bin whose winner is tap `tap` of a sample with row tap ty and
 * column tap tx: g times the weight the forward multiplied that tap by (its w1..w4), at that
 * tap's pixel. An out-of-map sample (ty and tx NULL) won with 0 * P[0, 0]: g * 0 at (0, 0).
 * The loop around it is the max reductions' (roi_align_max_like_backward_channels). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_onnx_max_bin_gradient)(
    T *plane, int64_t row_stride, int64_t col_stride, const PYROI_TYPED(axis_tap) *ty,
    const PYROI_TYPED(axis_tap) *tx, int64_t tap, T g)
{
    if (ty == NULL) {
        plane[0] += g * (T)0;
    } else {
        const int64_t row = tap < 2 ? ty->lo : ty->hi;
        const int64_t col = tap % 2 == 0 ? tx->lo : tx->hi;
        const T weight = (tap < 2 ? ty->w_lo : ty->w_hi) * (tap % 2 == 0 ? tx->w_lo : tx->w_hi);
        plane[row * row_stride + col * col_stride] += g * weight;
    }
}

/* ONNX max's tasks (none samples channels-last features in place). */
static roi_align_forward_tasks PYROI_TYPED(roi_align_onnx_max_tasks)(void)
{
    roi_align_forward_tasks tasks;
    tasks.direct = PYROI_TYPED(roi_align_onnx_max_forward_task);
    tasks.region = PYROI_TYPED(roi_align_onnx_max_forward_region_task);
    tasks.image = PYROI_TYPED(roi_align_onnx_max_forward_image_task);
    tasks.channels_last = NULL;
    return tasks;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_onnx_max_forward_argmax)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_align_params *params)
{
    const roi_align_forward_tasks tasks = PYROI_TYPED(roi_align_onnx_max_tasks)();
    return PYROI_TYPED(roi_align_max_like_forward)(
        input, input_shape, input_strides, boxes, num_rois, box_row_stride, batch_indices,
        output, output_strides, argmax, argmax_strides, 4, params, &tasks, NULL);
}

pyroi_status PYROI_TYPED(pyroi_roi_align_onnx_max_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params)
{
    return PYROI_TYPED(roi_align_max_like_backward)(
        grad_output, grad_output_strides, argmax, argmax_strides, 4, boxes, num_rois,
        box_row_stride, batch_indices, grad_input, grad_input_shape, grad_input_strides, params,
        PYROI_TYPED(roi_align_onnx_max_backward_task), NULL);
}
