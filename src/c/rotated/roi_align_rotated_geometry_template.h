/* roi_align_rotated_geometry_template.h - where a rotated RoI samples: its grids in the
 * box's own frame, the rows that can reach the map, the in-map samples of each row found by
 * bisection, and the visit of a RoI's samples in (bin, sample) order, buffered and handed to a
 * flush function. Included by roi_align_rotated_dtype.h. Semantics: docs/semantics.md §7 and
 * the block comment in pyroi.h; the evaluation order is detectron2's / mmcv's so that every
 * sample coordinate and weight is theirs. */

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

/* Applies the buffered samples of RoI k (to every channel of the caller's range); returns
 * nonzero to end the visit (the call was cancelled, or the flush can take no more). A flush
 * is at most PYROI_ROTATED_CHUNK samples a channel: the flushes read the cancel token
 * between channels, so a RoI of any size stops within a chunk's work of a request. */
typedef int (*PYROI_TYPED(rotated_flush))(void *context, int64_t k,
                                          const PYROI_TYPED(rotated_scratch) *scratch);

static int PYROI_TYPED(rotated_visit_flush)(PYROI_TYPED(rotated_scratch) *scratch,
                                            PYROI_TYPED(rotated_flush) flush, void *context,
                                            int64_t k)
{
    const int stop = flush(context, k, scratch);
    scratch->sample_count = 0;
    scratch->segment_count = 0;
    return stop;
}

/* Visits every in-map sample of RoI k, until a flush ends the visit; row_stride and
 * col_stride are the element strides of the planes the flush function addresses. */
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

            if (scratch->segment_count == PYROI_ROTATED_SEGMENTS &&
                PYROI_TYPED(rotated_visit_flush)(scratch, flush, context, k)) {
                return;
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
                            if (PYROI_TYPED(rotated_visit_flush)(scratch, flush, context, k)) {
                                return;
                            }
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
        (void)PYROI_TYPED(rotated_visit_flush)(scratch, flush, context, k);
    }
}
