/* deform_roi_pool_bins_template.h - the geometry of deformable RoI pooling for one dtype (T,
 * PYROI_TYPED; docs/semantics.md §14): a RoI's two sampling axes (aligned RoIAlign's), the
 * call's copy of the offsets, and the taps of one translated bin. Included by
 * deform_roi_pool_dtype.h before the kernels. */

typedef PYROI_TYPED(pyroi_sample_axis) PYROI_TYPED(deform_axis);
typedef PYROI_TYPED(pyroi_axis_tap) PYROI_TYPED(deform_tap);

/* What the tasks of one call share. */
typedef struct PYROI_TYPED(deform_job) {
    const pyroi_deform_roi_pool_params *params;
    const pyroi_rois *rois;   /* the call's copy of the boxes and batch indices */
    const T *shifts;          /* the call's copy of the offsets (x plane, y plane), or NULL */
    const T *mask;            /* the caller's mask (read, never sizing anything), or NULL */
    const int64_t *mask_strides;
    /* the map read (forward, offset backward) or written (input backward) */
    const T *map;
    T *grad_map;
    const int64_t *map_shape, *map_strides;
    /* the pooled tensor: output (forward) or grad_output */
    const T *grad;
    T *output;
    const int64_t *pooled_strides;
    T *grad_offset, *grad_mask; /* the offset backward's results, or NULL */
    const int64_t *grad_offset_strides, *grad_mask_strides;
    int64_t capacity;           /* taps per axis of one bin, at most */
    int64_t channel_block;      /* the input backward's channels per work item */
    PYROI_TYPED(deform_tap) *scratch; /* 2 * capacity taps per worker (deform_run) */
    int workers;
    /* the lane-major orders: per worker a channels-last block of the image (H x W x lanes)
     * and a tile of bins (PH x PW x lanes), block_elements T in all (0: direct order) */
    T *blocks;
    int64_t block_elements;
    /* the lane-major offset backward's partial sums: 3 doubles per bin of each RoI and lane
     * group of channels (lane_groups of them) */
    double *partials;
    int64_t lane_groups;
    /* the call's tap table, when it fits DEFORM_PLAN_BYTES (else NULL: every task finds a
     * bin's taps itself): bin i = k * PH * PW + ph * PW + pw has its plan_rows[i] row taps
     * and then its column taps at plan_taps + plan_start[i] (their positions alike in
     * plan_positions), up to plan_start[i + 1] */
    int64_t *plan_start, *plan_rows;
    PYROI_TYPED(deform_tap) *plan_taps;
    T *plan_positions;
} PYROI_TYPED(deform_job);

/* The row and column axes of a box (x1, y1, x2, y2), aligned RoIAlign's: the corners scaled
 * and shifted by half a pixel, no minimum size; *roi_h and *roi_w are the unclamped sizes the
 * offsets are scaled by (end - start, as mmcv forms them). */
static pyroi_status PYROI_TYPED(deform_axes)(const T *box,
                                             const pyroi_deform_roi_pool_params *params,
                                             int64_t height, int64_t width,
                                             PYROI_TYPED(deform_axis) *rows,
                                             PYROI_TYPED(deform_axis) *cols, T *roi_h, T *roi_w)
{
    const T scale_h = (T)params->spatial_scale_h, scale_w = (T)params->spatial_scale_w;
    pyroi_status status = PYROI_TYPED(pyroi_sample_axis_from_edges)(
        box[1], box[3], params->spatial_scale_h, (T)0.5, 0, params->pooled_height,
        params->sampling_ratio, height, rows);
    if (status == PYROI_OK) {
        status = PYROI_TYPED(pyroi_sample_axis_from_edges)(
            box[0], box[2], params->spatial_scale_w, (T)0.5, 0, params->pooled_width,
            params->sampling_ratio, width, cols);
    }
    *roi_h = (box[3] * scale_h - (T)0.5) - (box[1] * scale_h - (T)0.5);
    *roi_w = (box[2] * scale_w - (T)0.5) - (box[0] * scale_w - (T)0.5);
    return status;
}

/* Axis `axis` with its start moved by `shift`: the axis of one translated bin (the offset is
 * added to the RoI's start before the bin's origin is formed, as mmcv does). */
static PYROI_TYPED(deform_axis) PYROI_TYPED(deform_shifted)(const PYROI_TYPED(deform_axis) *axis,
                                                            T shift)
{
    PYROI_TYPED(deform_axis) moved = *axis;
    moved.start = axis->start + shift;
    return moved;
}

/* Offset plane a (0: x, 1: y) of bin (ph, pw) of RoI k, from the call's copy (0 without). */
static T PYROI_TYPED(deform_shift)(const PYROI_TYPED(deform_job) *job, int64_t k, int64_t ph,
                                   int64_t pw, int a)
{
    const int64_t bins = job->params->pooled_height * job->params->pooled_width;
    if (job->shifts == NULL) {
        return (T)0;
    }
    return job->shifts[(2 * k + a) * bins + ph * job->params->pooled_width + pw];
}

/* The taps of the in-map samples of bin `bin` of a (translated) axis into taps, in increasing
 * sample order; returns their count (the call's scan made capacity enough for every bin). */
static int64_t PYROI_TYPED(deform_bin_taps)(const PYROI_TYPED(deform_axis) *axis, int64_t bin,
                                            PYROI_TYPED(deform_tap) *taps, T *positions)
{
    int64_t first, end, i, n = 0;
    PYROI_TYPED(pyroi_samples_in_map)(axis, bin, &first, &end);
    for (i = first; i < end; ++i, ++n) {
        const T position = PYROI_TYPED(pyroi_sample_position)(axis, bin, i);
        taps[n] = PYROI_TYPED(pyroi_axis_tap_at)(position, axis->extent);
        if (positions != NULL) {
            positions[n] = position;
        }
    }
    return n;
}

/* The translated axes of bin (ph, pw) of RoI k. */
static void PYROI_TYPED(deform_bin_axes)(const PYROI_TYPED(deform_job) *job, int64_t k,
                                         int64_t ph, int64_t pw,
                                         const PYROI_TYPED(deform_axis) *rows,
                                         const PYROI_TYPED(deform_axis) *cols, T roi_h, T roi_w,
                                         PYROI_TYPED(deform_axis) *bin_rows,
                                         PYROI_TYPED(deform_axis) *bin_cols)
{
    const T gamma = (T)job->params->gamma;
    /* (gamma * size) * offset, in mmcv's order: plane 0 moves x, plane 1 moves y */
    *bin_rows = PYROI_TYPED(deform_shifted)(rows, gamma * roi_h *
                                                      PYROI_TYPED(deform_shift)(job, k, ph, pw, 1));
    *bin_cols = PYROI_TYPED(deform_shifted)(cols, gamma * roi_w *
                                                      PYROI_TYPED(deform_shift)(job, k, ph, pw, 0));
}

/* A RoI as the kernels read it: its axes, its sizes (for the offsets), the count a bin's sum
 * is divided by (max(grid_h * grid_w, 1): an empty grid gives 0, not NaN) and its samples
 * (grid_h * grid_w: the backward's divisor, which no empty grid reaches). */
typedef struct PYROI_TYPED(deform_roi) {
    PYROI_TYPED(deform_axis) rows, cols;
    T roi_h, roi_w, count, samples;
} PYROI_TYPED(deform_roi);

/* RoI k of the call's copy (its box checked by the scan: this cannot fail). */
static void PYROI_TYPED(deform_roi_of)(const PYROI_TYPED(deform_job) *job, int64_t k,
                                       PYROI_TYPED(deform_roi) *roi)
{
    const T *box = (const T *)job->rois->boxes + 4 * k;
    int64_t samples;
    (void)PYROI_TYPED(deform_axes)(box, job->params, job->map_shape[2], job->map_shape[3],
                                   &roi->rows, &roi->cols, &roi->roi_h, &roi->roi_w);
    samples = roi->rows.grid * roi->cols.grid;
    roi->samples = (T)samples;
    roi->count = (T)(samples > 1 ? samples : 1);
}

/* Copies the caller's offsets (num_rois x 2 x PH x PW, strides) into *copy, each read once
 * (they decide where a bin reads), and rejects one that is not finite. The copy is packed:
 * plane a of RoI k at (2 * k + a) * PH * PW. */
static pyroi_status PYROI_TYPED(deform_copy_offsets)(const T *offset, const int64_t strides[4],
                                                     int64_t num_rois,
                                                     const pyroi_deform_roi_pool_params *params,
                                                     pyroi_call_cancel *cancel, T **copy)
{
    const int64_t PH = params->pooled_height, PW = params->pooled_width;
    const double values = (double)num_rois * 2.0 * (double)PH * (double)PW;
    int64_t k, a, ph, pw, n = 0;
    T *to;
    *copy = NULL;
    if (offset == NULL || num_rois == 0) {
        return PYROI_OK;
    }
    if (values * (double)sizeof(T) > (double)(SIZE_MAX / 2)) {
        return PYROI_E_NO_MEMORY;
    }
    to = (T *)malloc((size_t)values * sizeof(T));
    if (to == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    for (k = 0; k < num_rois; ++k) {
        if (pyroi_cancel_at(cancel, k)) {
            free(to);
            return PYROI_E_CANCELLED;
        }
        for (a = 0; a < 2; ++a) {
            for (ph = 0; ph < PH; ++ph) {
                for (pw = 0; pw < PW; ++pw) {
                    const T value = offset[k * strides[0] + a * strides[1] + ph * strides[2] +
                                           pw * strides[3]];
                    if (!isfinite(value)) {
                        free(to);
                        return PYROI_E_INVALID_OFFSET;
                    }
                    to[n++] = value;
                }
            }
        }
    }
    *copy = to;
    return PYROI_OK;
}

/* Checks every box (as aligned RoIAlign does) and, with count_bins (a call with channels),
 * finds the most in-map samples a translated bin has along an axis (*capacity, at least 1),
 * the most samples of a RoI (*work, its work per channel) and of all (*total), and with
 * job->plan_start each bin's taps (plan_rows: its rows; plan_start: rows and columns): every
 * bin's samples counted by bisection, O(log grid) a bin. */
static pyroi_status PYROI_TYPED(deform_scan)(PYROI_TYPED(deform_job) *job, int64_t height,
                                             int64_t width, int count_bins,
                                             pyroi_call_cancel *cancel,
                                             int64_t *capacity, double *work, double *total,
                                             int64_t *failed_roi)
{
    const pyroi_deform_roi_pool_params *params = job->params;
    const int64_t PH = params->pooled_height, PW = params->pooled_width;
    int64_t k, ph, pw, most = 1;
    double busiest = 1.0, all = 0.0;
    *failed_roi = -1;
    for (k = 0; k < job->rois->num_rois; ++k) {
        const T *box = (const T *)job->rois->boxes + 4 * k;
        PYROI_TYPED(deform_axis) rows, cols;
        T roi_h, roi_w;
        double samples = 0.0;
        const pyroi_status status = pyroi_box_scan_verdict(
            PYROI_TYPED(deform_axes)(box, params, height, width, &rows, &cols, &roi_h, &roi_w),
            cancel, k, failed_roi);
        if (status != PYROI_OK) {
            return status;
        }
        for (ph = 0; ph < PH && count_bins; ++ph) {
            if ((double)PH * (double)PW >= PYROI_CANCEL_STRIDE && pyroi_cancel_check(cancel)) {
                return PYROI_E_CANCELLED; /* a RoI of many bins: poll by bin rows */
            }
            for (pw = 0; pw < PW; ++pw) {
                PYROI_TYPED(deform_axis) bin_rows, bin_cols;
                int64_t y_first, y_end, x_first, x_end;
                PYROI_TYPED(deform_bin_axes)(job, k, ph, pw, &rows, &cols, roi_h, roi_w,
                                             &bin_rows, &bin_cols);
                PYROI_TYPED(pyroi_samples_in_map)(&bin_rows, ph, &y_first, &y_end);
                PYROI_TYPED(pyroi_samples_in_map)(&bin_cols, pw, &x_first, &x_end);
                most = y_end - y_first > most ? y_end - y_first : most;
                most = x_end - x_first > most ? x_end - x_first : most;
                if (job->plan_start != NULL) { /* the bin's taps, for the plan */
                    job->plan_rows[k * PH * PW + ph * PW + pw] = y_end - y_first;
                    job->plan_start[k * PH * PW + ph * PW + pw] =
                        (y_end - y_first) + (x_end - x_first);
                }
                samples += (double)(y_end - y_first) * (double)(x_end - x_first) + 1.0;
            }
        }
        busiest = samples > busiest ? samples : busiest;
        all += samples;
    }
    *capacity = most;
    *work = busiest;
    *total = all;
    return PYROI_OK;
}

/* The mask of bin (ph, pw) of RoI k (1 without a mask). */
static T PYROI_TYPED(deform_mask_of)(const PYROI_TYPED(deform_job) *job, int64_t k, int64_t ph,
                                     int64_t pw)
{
    const int64_t *ms = job->mask_strides;
    return job->mask == NULL ? (T)1 : job->mask[k * ms[0] + ph * ms[2] + pw * ms[3]];
}

/* The worker's two tap tables, of job->capacity taps each. */
static PYROI_TYPED(deform_tap) *PYROI_TYPED(deform_worker_taps)(const PYROI_TYPED(deform_job) *job,
                                                                int worker)
{
    return job->scratch + (int64_t)worker * 2 * job->capacity;
}

/* The offset and mask gradients of bin (ph, pw) of RoI k from its three channel sums (in
 * double: the slopes along y and x, and grad_output times the mean, each weighted by
 * grad_output) of RoI k (roi): times the mask and d(position)/d(offset) = gamma * size /
 * count. */
static void PYROI_TYPED(deform_write_bin_gradients)(const PYROI_TYPED(deform_job) *job,
                                                    int64_t k, int64_t ph, int64_t pw,
                                                    const double sums[3],
                                                    const PYROI_TYPED(deform_roi) *roi)
{
    const int64_t *os = job->grad_offset_strides, *ms = job->grad_mask_strides;
    const double mask = (double)PYROI_TYPED(deform_mask_of)(job, k, ph, pw);
    if (job->grad_offset != NULL) {
        const T gamma = (T)job->params->gamma;
        const double per_x = (double)(gamma * roi->roi_w) / (double)roi->count;
        const double per_y = (double)(gamma * roi->roi_h) / (double)roi->count;
        T *at = job->grad_offset + k * os[0] + ph * os[2] + pw * os[3];
        at[0] = (T)(sums[1] * mask * per_x);
        at[os[1]] = (T)(sums[0] * mask * per_y);
    }
    if (job->grad_mask != NULL) {
        job->grad_mask[k * ms[0] + ph * ms[2] + pw * ms[3]] = (T)sums[2];
    }
}

/* The worker's positions of its two tap tables (capacity T each), after every worker's taps
 * (deform_run). */
static T *PYROI_TYPED(deform_worker_positions)(const PYROI_TYPED(deform_job) *job, int worker)
{
    return (T *)(job->scratch + 2 * job->capacity * job->workers) +
           (int64_t)worker * 2 * job->capacity;
}

/* The taps (and their positions) of one translated bin, as every kernel reads them. */
typedef struct PYROI_TYPED(deform_bin) {
    const PYROI_TYPED(deform_tap) *row_taps, *col_taps;
    const T *row_positions, *col_positions;
    int64_t rows, cols;
} PYROI_TYPED(deform_bin);

/* Bin (ph, pw) of RoI k (roi: deform_roi_of): from the call's plan, else found into the
 * worker's tap tables. */
static void PYROI_TYPED(deform_bin_of)(const PYROI_TYPED(deform_job) *job, int64_t k,
                                       int64_t ph, int64_t pw,
                                       const PYROI_TYPED(deform_roi) *roi, int worker,
                                       PYROI_TYPED(deform_bin) *bin)
{
    PYROI_TYPED(deform_axis) bin_rows, bin_cols;
    PYROI_TYPED(deform_tap) *taps;
    T *positions;
    if (job->plan_taps != NULL) {
        const int64_t i = (k * job->params->pooled_height + ph) * job->params->pooled_width + pw;
        const int64_t start = job->plan_start[i];
        bin->rows = job->plan_rows[i];
        bin->cols = job->plan_start[i + 1] - start - bin->rows;
        bin->row_taps = job->plan_taps + start;
        bin->col_taps = bin->row_taps + bin->rows;
        bin->row_positions = job->plan_positions + start;
        bin->col_positions = bin->row_positions + bin->rows;
        return;
    }
    taps = PYROI_TYPED(deform_worker_taps)(job, worker);
    positions = PYROI_TYPED(deform_worker_positions)(job, worker);
    PYROI_TYPED(deform_bin_axes)(job, k, ph, pw, &roi->rows, &roi->cols, roi->roi_h,
                                 roi->roi_w, &bin_rows, &bin_cols);
    bin->rows = PYROI_TYPED(deform_bin_taps)(&bin_rows, ph, taps, positions);
    bin->cols = PYROI_TYPED(deform_bin_taps)(&bin_cols, pw, taps + job->capacity,
                                             positions + job->capacity);
    bin->row_taps = taps;
    bin->col_taps = taps + job->capacity;
    bin->row_positions = positions;
    bin->col_positions = positions + job->capacity;
}

/* Fills the plan's taps of RoIs [begin, end) (each its own slice of the table). */
static void PYROI_TYPED(deform_plan_task)(void *context, int64_t begin, int64_t end, int worker)
{
    const PYROI_TYPED(deform_job) *job = (const PYROI_TYPED(deform_job) *)context;
    const pyroi_deform_roi_pool_params *params = job->params;
    const int64_t PH = params->pooled_height, PW = params->pooled_width;
    int64_t k, ph, pw;
    (void)worker;
    for (k = begin; k < end; ++k) {
        const T *box = (const T *)job->rois->boxes + 4 * k;
        PYROI_TYPED(deform_axis) rows, cols, bin_rows, bin_cols;
        T roi_h, roi_w;
        if (k % 8 == 0 && pyroi_cancel_requested(params->cancel)) {
            return;
        }
        (void)PYROI_TYPED(deform_axes)(box, params, job->map_shape[2], job->map_shape[3], &rows,
                                       &cols, &roi_h, &roi_w);
        for (ph = 0; ph < PH; ++ph) {
            for (pw = 0; pw < PW; ++pw) {
                const int64_t i = (k * PH + ph) * PW + pw, start = job->plan_start[i];
                PYROI_TYPED(deform_bin_axes)(job, k, ph, pw, &rows, &cols, roi_h, roi_w,
                                             &bin_rows, &bin_cols);
                (void)PYROI_TYPED(deform_bin_taps)(&bin_rows, ph, job->plan_taps + start,
                                                   job->plan_positions + start);
                (void)PYROI_TYPED(deform_bin_taps)(
                    &bin_cols, pw, job->plan_taps + start + job->plan_rows[i],
                    job->plan_positions + start + job->plan_rows[i]);
            }
        }
    }
}
