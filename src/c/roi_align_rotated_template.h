/* roi_align_rotated_template.h - rotated RoIAlign (average) kernels, included by
 * roi_align_rotated.c once per dtype with T and PYROI_TYPED(name) defined. Semantics:
 * docs/semantics.md §7 and the block comment in pyroi.h; the evaluation order is
 * detectron2's / mmcv's so that every sample coordinate and weight is theirs. */

#include "job_tensors_template.h"

typedef PYROI_TYPED(pyroi_sample_axis) PYROI_TYPED(rotated_axis);
typedef PYROI_TYPED(pyroi_axis_tap) PYROI_TYPED(rotated_tap);

/* One rotated RoI in feature-map coordinates. rows / cols are the sampling grids along the
 * RoI's own y and x axes, in a frame centred on the box (their extent field is unused: the
 * map's size is height x width). */
typedef struct PYROI_TYPED(rotated_roi) {
    PYROI_TYPED(rotated_axis) rows;
    PYROI_TYPED(rotated_axis) cols;
    T center_y;
    T center_x;
    T cos_theta;
    T sin_theta;
    int64_t height;
    int64_t width;
    double band_low;  /* rows whose local y is outside [band_low, band_high] miss the map */
    double band_high;
} PYROI_TYPED(rotated_roi);

/* An in-map sample ready to apply to any channel: its four taps as element offsets within a
 * plane and their bilinear weights. */
typedef struct PYROI_TYPED(rotated_sample) {
    int64_t offset[4];
    T weight[4];
} PYROI_TYPED(rotated_sample);

/* Map coordinates of the point (yy, xx) of the RoI's frame: (yy*c - xx*s) + cy', and
 * (yy*s + xx*c) + cx', in the peers' order. */
static void PYROI_TYPED(rotated_point)(const PYROI_TYPED(rotated_roi) *roi, T yy, T xx, T *y,
                                       T *x)
{
    *y = yy * roi->cos_theta - xx * roi->sin_theta + roi->center_y;
    *x = yy * roi->sin_theta + xx * roi->cos_theta + roi->center_x;
}

/* Whether every sample position along an axis is finite. Positions are monotone in the bin
 * and in the sample index, so the first and last ones bound all the others. */
static int PYROI_TYPED(rotated_positions_finite)(const PYROI_TYPED(rotated_axis) *axis)
{
    if (axis->grid == 0) {
        return 1;
    }
    return isfinite(PYROI_TYPED(pyroi_sample_position)(axis, 0, 0)) &&
           isfinite(PYROI_TYPED(pyroi_sample_position)(axis, axis->bins - 1, axis->grid - 1));
}

/* Largest |position| along an axis (positions are monotone: the first or the last one). */
static double PYROI_TYPED(rotated_axis_reach)(const PYROI_TYPED(rotated_axis) *axis)
{
    double first, last;
    if (axis->grid == 0) {
        return 0.0;
    }
    first = fabs((double)PYROI_TYPED(pyroi_sample_position)(axis, 0, 0));
    last = fabs((double)PYROI_TYPED(pyroi_sample_position)(axis, axis->bins - 1, axis->grid - 1));
    return first > last ? first : last;
}

/* The local y range [band_low, band_high] outside which no row of samples can reach the map,
 * so that a huge turned RoI costs about the rows near the map instead of all its rows (the
 * four per-row end tests cannot skip a row whose ends straddle the map's bounding lines).
 * A sample (yy, xx) lands at y = fl(fl(fl(yy c) - fl(xx s)) + cy'), x likewise: within
 * delta <= 4u (|yy| + |xx| + |cy'| + |cx'|) of the exact rotation (u: unit roundoff of T). If it
 * is in [-1, H] x [-1, W], the exact point is in that band widened by delta, and
 * yy = ((Y - cy') c + (X - cx') s) / (c^2 + s^2) exactly, a linear function whose extremes
 * over the widened band are at its corners. Both widenings use a margin of 64u times every
 * magnitude involved, far above delta and the double rounding of this bound, so no row with an
 * in-map sample is ever excluded (each visited sample is still tested by the sampler). */
static void PYROI_TYPED(rotated_row_band)(PYROI_TYPED(rotated_roi) *roi)
{
    const double unit = sizeof(T) == sizeof(float) ? FLT_EPSILON / 2.0 : DBL_EPSILON / 2.0;
    const double c = (double)roi->cos_theta, s = (double)roi->sin_theta;
    const double rho = c * c + s * s;
    const double cy = (double)roi->center_y, cx = (double)roi->center_x;
    const double magnitude = PYROI_TYPED(rotated_axis_reach)(&roi->rows) +
                             PYROI_TYPED(rotated_axis_reach)(&roi->cols) + fabs(cy) + fabs(cx) +
                             (double)roi->height + (double)roi->width + 2.0;
    const double margin = 64.0 * unit * magnitude + 1e-30;
    const double ys[2] = {-1.0 - margin, (double)roi->height + margin};
    const double xs[2] = {-1.0 - margin, (double)roi->width + margin};
    double low = HUGE_VAL, high = -HUGE_VAL;
    int i, j;
    for (i = 0; i < 2; ++i) {
        for (j = 0; j < 2; ++j) {
            const double local_y = ((ys[i] - cy) * c + (xs[j] - cx) * s) / rho;
            low = local_y < low ? local_y : low;
            high = local_y > high ? local_y : high;
        }
    }
    roi->band_low = low - margin;
    roi->band_high = high + margin;
}

/* The geometry of one RoI (box = cx, cy, w, h, angle) on a height x width map. Fails with
 * PYROI_E_INVALID_BOX when a value is not finite (box, scaled box, angle in radians), an
 * adaptive grid is too large, or sample positions overflow T. Since the positions are then
 * finite and |cos|, |sin| <= 1, no rotated coordinate is NaN: they stay monotone along rows and
 * columns, which the bisections below rely on. */
static pyroi_status PYROI_TYPED(rotated_roi_geometry)(const T *box,
                                                      const pyroi_roi_align_rotated_params *params,
                                                      int64_t height, int64_t width,
                                                      PYROI_TYPED(rotated_roi) *roi)
{
    const T scale_h = (T)params->spatial_scale_h;
    const T scale_w = (T)params->spatial_scale_w;
    const T offset = params->aligned ? (T)0.5 : (T)0;
    T roi_w, roi_h, theta;
    pyroi_status status;

    if (!(isfinite(box[0]) && isfinite(box[1]) && isfinite(box[2]) && isfinite(box[3]) &&
          isfinite(box[4]))) {
        return PYROI_E_INVALID_BOX;
    }
    roi->center_x = box[0] * scale_w - offset;
    roi->center_y = box[1] * scale_h - offset;
    roi_w = box[2] * scale_w;
    roi_h = box[3] * scale_h;
    if (!params->aligned) { /* mmcv legacy mode: std::max(size, 1) */
        if (roi_w < (T)1) {
            roi_w = (T)1;
        }
        if (roi_h < (T)1) {
            roi_h = (T)1;
        }
    }
    /* detectron2: angle * M_PI / 180.0 evaluated in double, then narrowed to T */
    theta = params->angle_in_degrees ? (T)((double)box[4] * PYROI_ROTATED_PI / 180.0) : box[4];
    if (params->clockwise) {
        theta = -theta;
    }
    if (!(isfinite(roi->center_x) && isfinite(roi->center_y) && isfinite(theta))) {
        return PYROI_E_INVALID_BOX;
    }
    /* the frame starts at -size / 2.0 (a double division, narrowed: exact but for subnormals) */
    status = PYROI_TYPED(pyroi_sample_axis_from_size)((T)(-(double)roi_h / 2.0), roi_h,
                                                      params->pooled_height,
                                                      params->sampling_ratio, 0, &roi->rows);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(pyroi_sample_axis_from_size)((T)(-(double)roi_w / 2.0), roi_w,
                                                      params->pooled_width,
                                                      params->sampling_ratio, 0, &roi->cols);
    if (status != PYROI_OK) {
        return status;
    }
    if (!(PYROI_TYPED(rotated_positions_finite)(&roi->rows) &&
          PYROI_TYPED(rotated_positions_finite)(&roi->cols))) {
        return PYROI_E_INVALID_BOX;
    }
    /* cos and sin in double, narrowed to T (docs/semantics.md §7.2: the peers' float32 choice
     * between cosf and (float)cos is unverified; they can differ in the last ulp) */
    roi->cos_theta = (T)cos((double)theta);
    roi->sin_theta = (T)sin((double)theta);
    roi->height = height;
    roi->width = width;
    PYROI_TYPED(rotated_row_band)(roi);
    return PYROI_OK;
}

/* ------------------------------------------------------------------------------------------
 * Finding the in-map samples of a bin by bisection.
 *
 * Along a row of a bin (fixed iy, ix increasing) xx is monotone in ix (a rounded affine
 * function), so y = (yy*c - xx*s) + cy' and x = (yy*s + xx*c) + cx' are monotone too (every
 * rounding step is monotone): each of the four tests y >= -1, y <= H, x >= -1, x <= W is
 * false-then-true or true-then-false along the row, and the in-map samples of the row form
 * one interval. Over the rows of a bin (iy increasing) the coordinates of the row's first and
 * last sample are monotone in the same way, so "some end of the row passes the test" is
 * monotone too: rows failing one of these tests have every sample outside (a row's samples
 * lie between its ends) and are skipped as a block. The sampler's own test is applied again
 * to every visited sample, so the bisection only ever skips work.
 * ---------------------------------------------------------------------------------------- */

typedef struct PYROI_TYPED(rotated_probe) {
    const PYROI_TYPED(rotated_roi) *roi;
    int64_t bin_y;
    int64_t bin_x;
    int along_rows; /* nonzero: the index is iy and both ends of the row are tested */
    T yy;           /* along a row: the row's local y */
    T xx_first;     /* over rows: local x of the bin's first and last columns */
    T xx_last;
} PYROI_TYPED(rotated_probe);

static int PYROI_TYPED(rotated_point_passes)(const PYROI_TYPED(rotated_roi) *roi, T yy, T xx,
                                             int bound)
{
    T y, x;
    PYROI_TYPED(rotated_point)(roi, yy, xx, &y, &x);
    switch (bound) {
    case PYROI_ROTATED_Y_NOT_BELOW:
        return PYROI_TYPED(pyroi_position_passes)(y, roi->height, PYROI_POSITION_NOT_BELOW);
    case PYROI_ROTATED_Y_NOT_ABOVE:
        return PYROI_TYPED(pyroi_position_passes)(y, roi->height, PYROI_POSITION_NOT_ABOVE);
    case PYROI_ROTATED_X_NOT_BELOW:
        return PYROI_TYPED(pyroi_position_passes)(x, roi->width, PYROI_POSITION_NOT_BELOW);
    default:
        return PYROI_TYPED(pyroi_position_passes)(x, roi->width, PYROI_POSITION_NOT_ABOVE);
    }
}

static int PYROI_TYPED(rotated_probe_passes)(const PYROI_TYPED(rotated_probe) *probe,
                                             int64_t index, int bound)
{
    if (probe->along_rows) {
        const T yy = PYROI_TYPED(pyroi_sample_position)(&probe->roi->rows, probe->bin_y, index);
        if (bound == PYROI_ROTATED_ROW_NOT_BELOW_BAND) {
            return (double)yy >= probe->roi->band_low;
        }
        if (bound == PYROI_ROTATED_ROW_NOT_ABOVE_BAND) {
            return (double)yy <= probe->roi->band_high;
        }
        return PYROI_TYPED(rotated_point_passes)(probe->roi, yy, probe->xx_first, bound) ||
               PYROI_TYPED(rotated_point_passes)(probe->roi, yy, probe->xx_last, bound);
    }
    if (bound >= PYROI_ROTATED_ROW_NOT_BELOW_BAND) {
        return 1; /* tests of whole rows: along a row every sample passes them alike */
    }
    return PYROI_TYPED(rotated_point_passes)(
        probe->roi, probe->yy,
        PYROI_TYPED(pyroi_sample_position)(&probe->roi->cols, probe->bin_x, index), bound);
}

/* Narrows [*begin, *end) to the indices that pass a test that is monotone over the range (a
 * prefix or a suffix passes). */
static void PYROI_TYPED(rotated_narrow)(const PYROI_TYPED(rotated_probe) *probe, int bound,
                                        int64_t *begin, int64_t *end)
{
    int first_passes, last_passes;
    int64_t lo, hi;
    if (*begin >= *end) {
        return;
    }
    first_passes = PYROI_TYPED(rotated_probe_passes)(probe, *begin, bound);
    last_passes = PYROI_TYPED(rotated_probe_passes)(probe, *end - 1, bound);
    if (first_passes == last_passes) { /* all pass or none does */
        if (!first_passes) {
            *end = *begin;
        }
        return;
    }
    /* the first index whose result equals the last one's lies in (begin, end - 1] */
    lo = *begin + 1;
    hi = *end - 1;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (PYROI_TYPED(rotated_probe_passes)(probe, mid, bound) == last_passes) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    if (last_passes) {
        *begin = lo;
    } else {
        *end = lo;
    }
}

/* The indices in [0, count) that may hold in-map samples: all of them for short ranges,
 * otherwise the intersection of the four monotone tests. */
static void PYROI_TYPED(rotated_candidates)(const PYROI_TYPED(rotated_probe) *probe,
                                            int64_t count, int64_t *begin, int64_t *end)
{
    int bound;
    *begin = 0;
    *end = count;
    if (count <= PYROI_ROTATED_BISECT_MIN) {
        return;
    }
    for (bound = 0; bound < PYROI_ROTATED_BOUNDS && *begin < *end; ++bound) {
        PYROI_TYPED(rotated_narrow)(probe, bound, begin, end);
    }
}

/* ------------------------------------------------------------------------------------------
 * Visiting the samples of a RoI: bins in (ph, pw) order, samples in (iy, ix) order, buffered
 * and handed to a flush function that applies them to channels.
 * ---------------------------------------------------------------------------------------- */

/* Per-worker scratch: a buffer of samples and the bins they belong to. */
typedef struct PYROI_TYPED(rotated_scratch) {
    PYROI_TYPED(rotated_sample) *samples;
    pyroi_rotated_segment *segments;
    int64_t sample_count;
    int64_t segment_count;
} PYROI_TYPED(rotated_scratch);

/* Applies the buffered samples of RoI k (to every channel of the caller's range). */
typedef void (*PYROI_TYPED(rotated_flush))(void *context, int64_t k,
                                           const PYROI_TYPED(rotated_scratch) *scratch);

static void PYROI_TYPED(rotated_visit_flush)(PYROI_TYPED(rotated_scratch) *scratch,
                                             PYROI_TYPED(rotated_flush) flush, void *context,
                                             int64_t k)
{
    flush(context, k, scratch);
    scratch->sample_count = 0;
    scratch->segment_count = 0;
}

/* Visits every in-map sample of RoI k; row_stride and col_stride are the element strides of
 * the planes the flush function addresses. */
static void PYROI_TYPED(rotated_visit)(const PYROI_TYPED(rotated_roi) *roi, int64_t row_stride,
                                       int64_t col_stride, PYROI_TYPED(rotated_scratch) *scratch,
                                       PYROI_TYPED(rotated_flush) flush, void *context, int64_t k)
{
    const int has_samples = roi->rows.grid > 0 && roi->cols.grid > 0 && roi->height > 0 &&
                            roi->width > 0;
    int64_t ph, pw, iy, ix;

    scratch->sample_count = 0;
    scratch->segment_count = 0;
    for (ph = 0; ph < roi->rows.bins; ++ph) {
        for (pw = 0; pw < roi->cols.bins; ++pw) {
            pyroi_rotated_segment *segment;
            PYROI_TYPED(rotated_probe) probe;
            int64_t row_begin, row_end;

            if (scratch->segment_count == PYROI_ROTATED_SEGMENTS) {
                PYROI_TYPED(rotated_visit_flush)(scratch, flush, context, k);
            }
            segment = &scratch->segments[scratch->segment_count++];
            segment->bin_y = ph;
            segment->bin_x = pw;
            segment->begin = scratch->sample_count;
            segment->continued = 0;
            if (has_samples) {
                probe.roi = roi;
                probe.bin_y = ph;
                probe.bin_x = pw;
                probe.along_rows = 1;
                probe.yy = (T)0;
                probe.xx_first = PYROI_TYPED(pyroi_sample_position)(&roi->cols, pw, 0);
                probe.xx_last = PYROI_TYPED(pyroi_sample_position)(&roi->cols, pw,
                                                                   roi->cols.grid - 1);
                PYROI_TYPED(rotated_candidates)(&probe, roi->rows.grid, &row_begin, &row_end);
                probe.along_rows = 0;
                for (iy = row_begin; iy < row_end; ++iy) {
                    int64_t col_begin, col_end;
                    probe.yy = PYROI_TYPED(pyroi_sample_position)(&roi->rows, ph, iy);
                    PYROI_TYPED(rotated_candidates)(&probe, roi->cols.grid, &col_begin, &col_end);
                    for (ix = col_begin; ix < col_end; ++ix) {
                        const T xx = PYROI_TYPED(pyroi_sample_position)(&roi->cols, pw, ix);
                        PYROI_TYPED(rotated_tap) ty, tx;
                        PYROI_TYPED(rotated_sample) *sample;
                        T y, x;
                        PYROI_TYPED(rotated_point)(roi, probe.yy, xx, &y, &x);
                        if (!PYROI_TYPED(pyroi_point_taps)(y, x, roi->height, roi->width, &ty,
                                                           &tx)) {
                            continue;
                        }
                        if (scratch->sample_count == PYROI_ROTATED_CHUNK) {
                            /* the buffer is full mid-bin: flush what this bin has so far */
                            segment->end = scratch->sample_count;
                            segment->complete = 0;
                            PYROI_TYPED(rotated_visit_flush)(scratch, flush, context, k);
                            segment = &scratch->segments[scratch->segment_count++];
                            segment->bin_y = ph;
                            segment->bin_x = pw;
                            segment->begin = 0;
                            segment->continued = 1;
                        }
                        sample = &scratch->samples[scratch->sample_count++];
                        sample->offset[0] = ty.lo * row_stride + tx.lo * col_stride;
                        sample->offset[1] = ty.lo * row_stride + tx.hi * col_stride;
                        sample->offset[2] = ty.hi * row_stride + tx.lo * col_stride;
                        sample->offset[3] = ty.hi * row_stride + tx.hi * col_stride;
                        sample->weight[0] = ty.w_lo * tx.w_lo;
                        sample->weight[1] = ty.w_lo * tx.w_hi;
                        sample->weight[2] = ty.w_hi * tx.w_lo;
                        sample->weight[3] = ty.w_hi * tx.w_hi;
                    }
                }
            }
            segment->end = scratch->sample_count;
            segment->complete = 1;
        }
    }
    if (scratch->segment_count > 0) {
        PYROI_TYPED(rotated_visit_flush)(scratch, flush, context, k);
    }
}

/* ------------------------------------------------------------------------------------------
 * Forward and backward.
 * ---------------------------------------------------------------------------------------- */

/* Everything a worker needs; a worker only adds its own index to pick its scratch. */
typedef struct PYROI_TYPED(rotated_job) {
    PYROI_TYPED(job_tensors) tensors;
    const pyroi_roi_align_rotated_params *params;
    PYROI_TYPED(rotated_scratch) *scratch; /* one per worker */
} PYROI_TYPED(rotated_job);

/* What a flush needs besides the samples: the job, the channel range and the RoI's divisor. */
typedef struct PYROI_TYPED(rotated_flush_context) {
    const PYROI_TYPED(rotated_job) *job;
    int64_t channel_begin;
    int64_t channel_end;
    T count;
} PYROI_TYPED(rotated_flush_context);

/* Forward flush: adds the buffered samples to each channel's bins in sample order; a bin's
 * running sum lives in its output element until its last sample, then it is divided. */
static void PYROI_TYPED(rotated_forward_flush)(void *context, int64_t k,
                                               const PYROI_TYPED(rotated_scratch) *scratch)
{
    const PYROI_TYPED(rotated_flush_context) *fc =
        (const PYROI_TYPED(rotated_flush_context) *)context;
    const PYROI_TYPED(rotated_job) *job = fc->job;
    const int64_t *in_strides = job->tensors.features_strides;
    const int64_t *out_strides = job->tensors.result_strides;
    T *PYROI_RESTRICT output = job->tensors.result;
    int64_t c, s, j;

    for (c = fc->channel_begin; c < fc->channel_end; ++c) {
        const T *plane = job->tensors.features + job->tensors.batch_indices[k] * in_strides[0] +
                         c * in_strides[1];
        T *out = output + k * out_strides[0] + c * out_strides[1];
        for (s = 0; s < scratch->segment_count; ++s) {
            const pyroi_rotated_segment *segment = &scratch->segments[s];
            T *bin = out + segment->bin_y * out_strides[2] + segment->bin_x * out_strides[3];
            T sum = segment->continued ? *bin : (T)0;
            for (j = segment->begin; j < segment->end; ++j) {
                const PYROI_TYPED(rotated_sample) *p = &scratch->samples[j];
                sum += p->weight[0] * plane[p->offset[0]] + p->weight[1] * plane[p->offset[1]] +
                       p->weight[2] * plane[p->offset[2]] + p->weight[3] * plane[p->offset[3]];
            }
            *bin = segment->complete ? sum / fc->count : sum;
        }
    }
}

/* Backward flush: scatters (g * w) / count to the four taps of each buffered sample, four
 * separate additions, for each channel of the worker's range. */
static void PYROI_TYPED(rotated_backward_flush)(void *context, int64_t k,
                                                const PYROI_TYPED(rotated_scratch) *scratch)
{
    const PYROI_TYPED(rotated_flush_context) *fc =
        (const PYROI_TYPED(rotated_flush_context) *)context;
    const PYROI_TYPED(rotated_job) *job = fc->job;
    const int64_t *grad_strides = job->tensors.features_strides;
    const int64_t *in_strides = job->tensors.result_strides;
    T *PYROI_RESTRICT grad_input = job->tensors.result;
    const T count = fc->count;
    int64_t c, s, j;

    for (c = fc->channel_begin; c < fc->channel_end; ++c) {
        T *plane =
            grad_input + job->tensors.batch_indices[k] * in_strides[0] + c * in_strides[1];
        const T *grad = job->tensors.features + k * grad_strides[0] + c * grad_strides[1];
        for (s = 0; s < scratch->segment_count; ++s) {
            const pyroi_rotated_segment *segment = &scratch->segments[s];
            const T g = grad[segment->bin_y * grad_strides[2] + segment->bin_x * grad_strides[3]];
            for (j = segment->begin; j < segment->end; ++j) {
                const PYROI_TYPED(rotated_sample) *p = &scratch->samples[j];
                plane[p->offset[0]] += g * p->weight[0] / count;
                plane[p->offset[1]] += g * p->weight[1] / count;
                plane[p->offset[2]] += g * p->weight[2] / count;
                plane[p->offset[3]] += g * p->weight[3] / count;
            }
        }
    }
}

static void PYROI_TYPED(rotated_forward_task)(void *context, int64_t begin, int64_t end,
                                              int worker)
{
    const PYROI_TYPED(rotated_job) *job = (const PYROI_TYPED(rotated_job) *)context;
    PYROI_TYPED(rotated_flush_context) fc;
    int64_t k;
    fc.job = job;
    fc.channel_begin = 0;
    fc.channel_end = job->tensors.features_shape[1];
    for (k = begin; k < end; ++k) {
        PYROI_TYPED(rotated_roi) roi;
        int64_t samples;
        if (PYROI_TYPED(rotated_roi_geometry)(
                job->tensors.boxes + k * job->tensors.box_row_stride, job->params,
                job->tensors.features_shape[2], job->tensors.features_shape[3],
                &roi) != PYROI_OK) {
            continue; /* unreachable: every box was checked before the call */
        }
        samples = roi.rows.grid * roi.cols.grid; /* < 2^62: each grid < 2^31 */
        fc.count = (T)(samples > 1 ? samples : 1); /* empty grid: output 0, not NaN */
        PYROI_TYPED(rotated_visit)(&roi, job->tensors.features_strides[2],
                                   job->tensors.features_strides[3], &job->scratch[worker],
                                   PYROI_TYPED(rotated_forward_flush), &fc, k);
    }
}

/* Backward for input channels [begin, end): zeroes those planes of every image, then adds
 * every RoI's contributions in order, so the result does not depend on the thread split. */
static void PYROI_TYPED(rotated_backward_task)(void *context, int64_t begin, int64_t end,
                                               int worker)
{
    const PYROI_TYPED(rotated_job) *job = (const PYROI_TYPED(rotated_job) *)context;
    const int64_t *shape = job->tensors.result_shape;
    const int64_t *strides = job->tensors.result_strides;
    T *PYROI_RESTRICT grad_input = job->tensors.result;
    PYROI_TYPED(rotated_flush_context) fc;
    int64_t k;

    if (pyroi_zero_channels(grad_input, sizeof(T), shape, strides, begin, end,
                            job->params->cancel)) {
        return;
    }
    fc.job = job;
    fc.channel_begin = begin;
    fc.channel_end = end;
    for (k = 0; k < job->tensors.num_rois; ++k) {
        PYROI_TYPED(rotated_roi) roi;
        if (k % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
            break; /* an item (channels) holds every RoI */
        }
        if (PYROI_TYPED(rotated_roi_geometry)(
                job->tensors.boxes + k * job->tensors.box_row_stride, job->params, shape[2],
                shape[3], &roi) != PYROI_OK) {
            continue; /* unreachable: every box was checked before the call */
        }
        /* unclamped: an empty grid has no samples, so nothing divides by it */
        fc.count = (T)(roi.rows.grid * roi.cols.grid);
        PYROI_TYPED(rotated_visit)(&roi, strides[2], strides[3], &job->scratch[worker],
                                   PYROI_TYPED(rotated_backward_flush), &fc, k);
    }
}

/* Checks every box; on failure *failed_roi is the offending RoI. *mean_work receives a rough
 * per-RoI cost (coordinate and tap work, per channel) for choosing the thread count. Batch
 * indices were checked before. */
static pyroi_status PYROI_TYPED(rotated_scan_boxes)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride, int64_t height, int64_t width,
    const pyroi_roi_align_rotated_params *params, double *mean_work, int64_t *failed_roi)
{
    /* with adaptive grids a sample covers at least about a quarter pixel, so the in-map
     * samples of a RoI are about 4 (H + 3)(W + 3) at most */
    const double map_samples = 4.0 * ((double)height + 3.0) * ((double)width + 3.0);
    double total = 0.0;
    int64_t k;
    *failed_roi = -1;
    *mean_work = 0.0;
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(rotated_roi) roi;
        double samples;
        const pyroi_status status = pyroi_box_scan_verdict(
            PYROI_TYPED(rotated_roi_geometry)(boxes + k * box_row_stride, params, height, width,
                                              &roi),
            params->cancel, k, failed_roi);
        if (status != PYROI_OK) {
            return status;
        }
        samples = (double)params->pooled_height * (double)params->pooled_width *
                  (double)roi.rows.grid * (double)roi.cols.grid;
        total += (samples < map_samples ? samples : map_samples) +
                 (double)params->pooled_height * (double)params->pooled_width;
    }
    if (num_rois > 0) {
        *mean_work = total / (double)num_rois;
    }
    return PYROI_OK;
}

/* Allocates per-worker scratch, runs task over item_count items, frees. */
static pyroi_status PYROI_TYPED(rotated_run)(PYROI_TYPED(rotated_job) *job, pyroi_range_task task,
                                             int64_t item_count, double work_per_item)
{
    PYROI_TYPED(rotated_scratch) scratch[PYROI_PARALLEL_MAX_WORKERS];
    const size_t sample_bytes = PYROI_ROTATED_CHUNK * sizeof(PYROI_TYPED(rotated_sample));
    const size_t segment_bytes = PYROI_ROTATED_SEGMENTS * sizeof(pyroi_rotated_segment);
    const int workers = pyroi_parallel_workers(job->params->num_threads, item_count,
                                               work_per_item);
    pyroi_status status;
    char *block;
    int i;

    /* one block for all workers: samples first (the stricter alignment), then segments */
    block = (char *)malloc((size_t)workers * (sample_bytes + segment_bytes));
    if (block == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    for (i = 0; i < workers; ++i) {
        scratch[i].samples = (PYROI_TYPED(rotated_sample) *)(block + (size_t)i * sample_bytes);
        scratch[i].segments = (pyroi_rotated_segment *)(block + (size_t)workers * sample_bytes +
                                                        (size_t)i * segment_bytes);
        scratch[i].sample_count = 0;
        scratch[i].segment_count = 0;
    }
    job->scratch = scratch;
    status = pyroi_parallel_for(workers, item_count, work_per_item, job->params->cancel, task,
                                job);
    free(block);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_rotated_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    const pyroi_roi_align_rotated_params *params)
{
    PYROI_TYPED(rotated_job) job;
    pyroi_rois rois;
    double mean_work;
    int64_t failed_roi;
    pyroi_status status = roi_align_rotated_check_call(
        input, input_shape, input_strides, PYROI_TENSOR_INPUT, output, output_strides,
        PYROI_TENSOR_OUTPUT, boxes, num_rois, box_row_stride, batch_indices, params, sizeof(T),
        &rois);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(rotated_scan_boxes)((const T *)rois.boxes, num_rois, 5, input_shape[2],
                                             input_shape[3], params, &mean_work, &failed_roi);
    if (status == PYROI_OK && num_rois > 0 && input_shape[1] > 0) {
        /* a map without pixels may be NULL */
        input = (const T *)pyroi_data_or_placeholder(input);
        PYROI_TYPED(job_tensors_init)(&job.tensors, input, input_shape, input_strides, &rois,
                                      output, NULL, output_strides);
        job.params = params;
        /* work per RoI: its samples' coordinates, then every channel reads their taps */
        status = PYROI_TYPED(rotated_run)(&job, PYROI_TYPED(rotated_forward_task), num_rois,
                                          ((double)input_shape[1] + 4.0) * (mean_work + 1.0));
    }
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_rotated_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_rotated_params *params)
{
    PYROI_TYPED(rotated_job) job;
    pyroi_rois rois;
    double mean_work;
    int64_t failed_roi;
    pyroi_status status = roi_align_rotated_check_call(
        grad_input, grad_input_shape, grad_input_strides, PYROI_TENSOR_OUTPUT, grad_output,
        grad_output_strides, PYROI_TENSOR_INPUT, boxes, num_rois, box_row_stride, batch_indices,
        params, sizeof(T), &rois);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(rotated_scan_boxes)((const T *)rois.boxes, num_rois, 5,
                                             grad_input_shape[2], grad_input_shape[3], params,
                                             &mean_work, &failed_roi);
    /* nothing to write with an empty grad_input (which may then be NULL) */
    if (status == PYROI_OK && !pyroi_shape_is_empty(grad_input_shape)) {
        PYROI_TYPED(job_tensors_init)(&job.tensors, grad_output, NULL, grad_output_strides,
                                      &rois, grad_input, grad_input_shape, grad_input_strides);
        job.params = params;
        /* work per channel: zero N planes, then every RoI scatters its samples (each worker
         * also recomputes the samples' coordinates) */
        status = PYROI_TYPED(rotated_run)(
            &job, PYROI_TYPED(rotated_backward_task), grad_input_shape[1],
            (double)grad_input_shape[0] * (double)grad_input_shape[2] *
                    (double)grad_input_shape[3] +
                (double)num_rois * 5.0 * (mean_work + 1.0));
    }
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_rotated_find_invalid_roi)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_roi_align_rotated_params *params, int64_t *failed_roi)
{
    double mean_work;
    const pyroi_status status = pyroi_find_invalid_batch_index(
        pyroi_check_roi_align_rotated_params(params), boxes, num_rois, box_row_stride, 5,
        batch_indices, num_images, height, width, failed_roi);
    if (status != PYROI_OK) {
        return status;
    }
    return PYROI_TYPED(rotated_scan_boxes)(boxes, num_rois, box_row_stride, height, width,
                                           params, &mean_work, failed_roi);
}
