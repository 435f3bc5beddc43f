/* sampling_template.h - body of the bilinear sampler, included by sampling.h once per dtype
 * with T (float or double), PYROI_TYPED(name) (adds the dtype suffix) and PYROI_CEIL defined.
 * Arithmetic is written in the peers' order, one rounding per operation (the library is built
 * with -ffp-contract=off), so results match them bit for bit. */

/* One axis (rows or columns) of a RoI's regular sampling grid. */
typedef struct PYROI_TYPED(pyroi_sample_axis) {
    T start;        /* feature coordinate where bin 0 begins */
    T bin_size;     /* extent of one bin; negative for an inverted RoI in aligned mode */
    int64_t grid;   /* samples per bin along this axis; 0 means none */
    int64_t bins;   /* output bins along this axis */
    int64_t extent; /* feature map size along this axis (H or W) */
    int size_clamped; /* min_size_one raised the size to 1: the far edge moves no sample */
} PYROI_TYPED(pyroi_sample_axis);

/* Where one sample reads along one axis: pixels lo and hi with weights w_lo and w_hi. */
typedef struct PYROI_TYPED(pyroi_axis_tap) {
    int64_t lo;
    int64_t hi;
    T w_lo;
    T w_hi;
} PYROI_TYPED(pyroi_axis_tap);

/* Sampling grid along one axis from the RoI's first edge and its size, both in feature
 * coordinates: sampling_ratio > 0 fixes the samples per bin, otherwise they are
 * ceil(size / bins), and a negative adaptive count gives 0 samples. The axis is defined (no
 * samples) even on failure: PYROI_E_INVALID_BOX for non-finite values or an adaptive grid
 * above PYROI_MAX_SAMPLING_GRID. */
static inline pyroi_status PYROI_TYPED(pyroi_sample_axis_from_size)(
    T start, T size, int64_t bins, int64_t sampling_ratio, int64_t extent,
    PYROI_TYPED(pyroi_sample_axis) *axis)
{
    const T bin_size = size / (T)bins;
    axis->start = (T)0;
    axis->bin_size = (T)0;
    axis->grid = 0;
    axis->bins = bins;
    axis->extent = extent;
    axis->size_clamped = 0;
    if (!(isfinite(start) && isfinite(size) && isfinite(bin_size))) {
        return PYROI_E_INVALID_BOX;
    }
    if (sampling_ratio <= 0) {
        const T samples = PYROI_CEIL(size / (T)bins);
        if (!(samples < (T)2147483648.0)) {
            return PYROI_E_INVALID_BOX;
        }
        sampling_ratio = samples > (T)0 ? (int64_t)samples : 0;
    }
    axis->start = start;
    axis->bin_size = bin_size;
    axis->grid = sampling_ratio;
    return PYROI_OK;
}

/* Sampling grid along one axis of a box with edges edge1, edge2 (input-image pixels):
 * both are scaled, offset is subtracted (0.5 for half-pixel conventions), and min_size_one
 * forces the RoI size to >= 1 (torchvision aligned=False); then as
 * pyroi_sample_axis_from_size. */
static inline pyroi_status PYROI_TYPED(pyroi_sample_axis_from_edges)(
    T edge1, T edge2, double spatial_scale, T offset, int min_size_one, int64_t bins,
    int64_t sampling_ratio, int64_t extent, PYROI_TYPED(pyroi_sample_axis) *axis)
{
    const T scale = (T)spatial_scale;
    const T start = edge1 * scale - offset;
    const T end = edge2 * scale - offset;
    T size = end - start;
    int clamped = 0;
    pyroi_status status;
    if (min_size_one && size < (T)1) { /* std::max(size, 1): a NaN size stays NaN */
        size = (T)1;
        clamped = 1;
    }
    if (!isfinite(end)) { /* else the clamp above could hide an end at -inf */
        size = end;
    }
    status = PYROI_TYPED(pyroi_sample_axis_from_size)(start, size, bins, sampling_ratio, extent,
                                                      axis);
    axis->size_clamped = clamped;
    return status;
}

/* Feature coordinate where bin b begins (bin b = bins: where the last one ends). */
static inline T PYROI_TYPED(pyroi_bin_origin)(const PYROI_TYPED(pyroi_sample_axis) *axis,
                                              int64_t bin)
{
    return axis->start + (T)bin * axis->bin_size;
}

/* Coordinate of sample i of bin b: the centre of the i-th of grid equal parts of the bin,
 * evaluated as ((start + b*bin) + ((i + 0.5f) * bin) / grid) like the peers (the i + 0.5
 * term is formed in float, as theirs is). */
static inline T PYROI_TYPED(pyroi_sample_position)(const PYROI_TYPED(pyroi_sample_axis) *axis,
                                                   int64_t bin, int64_t i)
{
    const T bin_origin = PYROI_TYPED(pyroi_bin_origin)(axis, bin);
    const T centre = (T)((float)i + 0.5f);
    return bin_origin + centre * axis->bin_size / (T)axis->grid;
}

/* The taps of a coordinate already known to lie in [-1, extent] (extent >= 1): coordinates
 * below 0 read pixel 0 and coordinates at or past extent - 1 read the last pixel with full
 * weight. */
static inline PYROI_TYPED(pyroi_axis_tap) PYROI_TYPED(pyroi_axis_tap_at)(T coord, int64_t extent)
{
    PYROI_TYPED(pyroi_axis_tap) tap;
    T frac;
    if (coord <= (T)0) {
        coord = (T)0;
    }
    tap.lo = (int64_t)coord;
    if (tap.lo >= extent - 1) {
        tap.lo = extent - 1;
        tap.hi = tap.lo;
        coord = (T)tap.lo;
    } else {
        tap.hi = tap.lo + 1;
    }
    frac = coord - (T)tap.lo;
    tap.w_hi = frac;
    tap.w_lo = (T)(1.0 - (double)frac); /* the peers write 1. - frac (a double constant) */
    return tap;
}

/* The slope of a tap's weights along its coordinate (docs/semantics.md §3.8): w_hi rises and
 * w_lo falls by the returned value (1 or 0) per unit of coord. 0 where pyroi_axis_tap_at
 * clamps (coord < 0 reads pixel 0, coord >= extent - 1 the last pixel: the value is flat
 * there); at a whole coord the slope is that of the cell [lo, lo + 1] the tap itself uses
 * (the right-hand one). */
static inline T PYROI_TYPED(pyroi_axis_tap_slope)(T coord, PYROI_TYPED(pyroi_axis_tap) tap)
{
    return coord >= (T)0 && tap.hi != tap.lo ? (T)1 : (T)0;
}

static inline int PYROI_TYPED(pyroi_position_passes)(T coord, int64_t extent,
                                                     enum pyroi_position_test test)
{
    switch (test) {
    case PYROI_POSITION_NOT_BELOW:
        return coord >= (T)-1;
    case PYROI_POSITION_ABOVE:
        return coord > (T)extent;
    case PYROI_POSITION_NOT_ABOVE:
        return coord <= (T)extent;
    case PYROI_POSITION_BELOW:
        return coord < (T)-1;
    }
    return 0;
}

/* First sample index in [lo, hi) of bin b whose coordinate passes test, or hi; the test must
 * be false then true along the samples (sample coordinates are monotone in i). */
static inline int64_t PYROI_TYPED(pyroi_first_sample_passing)(
    const PYROI_TYPED(pyroi_sample_axis) *axis, int64_t bin, int64_t lo, int64_t hi,
    enum pyroi_position_test test)
{
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (PYROI_TYPED(pyroi_position_passes)(PYROI_TYPED(pyroi_sample_position)(axis, bin, mid),
                                               axis->extent, test)) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

/* The samples of bin b that land in [-1, extent]: indices [*first, *end). Found by bisection
 * with the exact coordinate arithmetic, so a huge box costs O(log grid), not O(grid). */
static inline void PYROI_TYPED(pyroi_samples_in_map)(const PYROI_TYPED(pyroi_sample_axis) *axis,
                                                     int64_t bin, int64_t *first, int64_t *end)
{
    if (axis->extent == 0 || axis->grid == 0) {
        *first = *end = 0;
        return;
    }
    if (axis->bin_size >= (T)0) { /* coordinates grow with i: below-map first, above-map last */
        *first = PYROI_TYPED(pyroi_first_sample_passing)(axis, bin, 0, axis->grid,
                                                         PYROI_POSITION_NOT_BELOW);
        *end = PYROI_TYPED(pyroi_first_sample_passing)(axis, bin, *first, axis->grid,
                                                       PYROI_POSITION_ABOVE);
    } else {
        *first = PYROI_TYPED(pyroi_first_sample_passing)(axis, bin, 0, axis->grid,
                                                         PYROI_POSITION_NOT_ABOVE);
        *end = PYROI_TYPED(pyroi_first_sample_passing)(axis, bin, *first, axis->grid,
                                                       PYROI_POSITION_BELOW);
    }
}

/* Number of in-map samples over all bins of the axis: the size its tap table needs. */
static inline int64_t PYROI_TYPED(pyroi_axis_tap_count)(const PYROI_TYPED(pyroi_sample_axis) *axis)
{
    int64_t bin, total = 0;
    for (bin = 0; bin < axis->bins; ++bin) {
        int64_t first, end;
        PYROI_TYPED(pyroi_samples_in_map)(axis, bin, &first, &end);
        if (!pyroi_add_nonneg(total, end - first, &total)) {
            return INT64_MAX; /* no allocation can hold it; the caller reports no memory */
        }
    }
    return total;
}

/* Fills ranges[0 .. bins) and the taps of every in-map sample, bin after bin, samples in
 * increasing i. taps must hold pyroi_axis_tap_count(axis) entries. */
static inline void PYROI_TYPED(pyroi_axis_tap_table)(const PYROI_TYPED(pyroi_sample_axis) *axis,
                                                     pyroi_tap_range *ranges,
                                                     PYROI_TYPED(pyroi_axis_tap) *taps)
{
    int64_t bin, i, n = 0;
    for (bin = 0; bin < axis->bins; ++bin) {
        int64_t first, end;
        PYROI_TYPED(pyroi_samples_in_map)(axis, bin, &first, &end);
        ranges[bin].begin = n;
        ranges[bin].first_sample = first;
        for (i = first; i < end; ++i) {
            taps[n++] = PYROI_TYPED(pyroi_axis_tap_at)(
                PYROI_TYPED(pyroi_sample_position)(axis, bin, i), axis->extent);
        }
        ranges[bin].end = n;
    }
}

/* ---- merged samples (pyroi_roi_align_params.merge_samples) ------------------------------
 * A bin's average is separable: the sum over its samples (iy, ix) of row weight times column
 * weight times pixel equals the sum over pixels (py, px) of W_row[py] * W_col[px] * pixel,
 * where W_row[py] adds up the weights of every row tap at py. So each axis's taps of a bin
 * can be replaced by one tap per pair of adjacent pixels carrying their total weights: the
 * kernels, unchanged, then read each pixel about once instead of once per sample that
 * touches it. The result is the same real number rounded differently (not bit-exact). */

/* The pairing stage of a merge: pixels arrive in increasing order with their total weights;
 * two adjacent ones become one tap, a lone one a tap of that pixel twice with its weight
 * halved (so no pixel is multiplied by a zero weight: an infinite pixel stays infinite). */
typedef struct PYROI_TYPED(pyroi_tap_merge) {
    PYROI_TYPED(pyroi_axis_tap) *out; /* where the next merged tap goes */
    int64_t pending;                  /* a pixel waiting for its right neighbour, or -1 */
    double pending_weight;
} PYROI_TYPED(pyroi_tap_merge);

static inline void PYROI_TYPED(pyroi_tap_merge_emit)(PYROI_TYPED(pyroi_tap_merge) *merge,
                                                    int64_t lo, int64_t hi, double w_lo,
                                                    double w_hi)
{
    PYROI_TYPED(pyroi_axis_tap) tap;
    tap.lo = lo;
    tap.hi = hi;
    tap.w_lo = (T)w_lo;
    tap.w_hi = (T)w_hi;
    *merge->out++ = tap;
}

static inline void PYROI_TYPED(pyroi_tap_merge_flush)(PYROI_TYPED(pyroi_tap_merge) *merge)
{
    if (merge->pending >= 0) {
        PYROI_TYPED(pyroi_tap_merge_emit)(merge, merge->pending, merge->pending,
                                          merge->pending_weight * 0.5,
                                          merge->pending_weight * 0.5);
        merge->pending = -1;
    }
}

static inline void PYROI_TYPED(pyroi_tap_merge_pixel)(PYROI_TYPED(pyroi_tap_merge) *merge,
                                                     int64_t pixel, double weight)
{
    if (weight == 0.0) {
        return; /* no sample weighs this pixel */
    }
    if (merge->pending >= 0 && pixel == merge->pending + 1) {
        PYROI_TYPED(pyroi_tap_merge_emit)(merge, merge->pending, pixel, merge->pending_weight,
                                          weight);
        merge->pending = -1;
        return;
    }
    PYROI_TYPED(pyroi_tap_merge_flush)(merge);
    merge->pending = pixel;
    merge->pending_weight = weight;
}

/* Merges one axis's tap table, bin by bin (ranges[0 .. bins) index taps), into taps of pixel
 * pairs written from out on (out <= taps; ranges then index out); returns their count. A bin
 * never gets more merged taps than it had taps (each tap weighs at most two adjacent pixels,
 * and a run of L weighed pixels becomes ceil(L / 2) taps), so the writes stay behind the
 * reads and the merge can run in place. Merged taps ascend; weights add up in double. */
static inline int64_t PYROI_TYPED(pyroi_axis_taps_merge)(pyroi_tap_range *ranges, int64_t bins,
                                                        PYROI_TYPED(pyroi_axis_tap) *taps,
                                                        PYROI_TYPED(pyroi_axis_tap) *out)
{
    PYROI_TYPED(pyroi_tap_merge) merge;
    int64_t bin, i;
    merge.out = out;
    merge.pending = -1;
    merge.pending_weight = 0.0;
    for (bin = 0; bin < bins; ++bin) {
        const int64_t begin = ranges[bin].begin, end = ranges[bin].end;
        const int64_t first = merge.out - out;
        int64_t base = -1;       /* the pixels being summed: base and base + 1 */
        double w_base = 0.0, w_next = 0.0;
        if (end - begin > 1 && taps[begin].lo > taps[end - 1].lo) { /* descending: reverse */
            for (i = 0; i < (end - begin) / 2; ++i) {
                const PYROI_TYPED(pyroi_axis_tap) swap = taps[begin + i];
                taps[begin + i] = taps[end - 1 - i];
                taps[end - 1 - i] = swap;
            }
        }
        for (i = begin; i < end; ++i) {
            const PYROI_TYPED(pyroi_axis_tap) tap = taps[i]; /* read before any write to it */
            if (base < 0) {
                base = tap.lo;
            } else if (tap.lo > base) { /* every pixel below tap.lo is complete */
                PYROI_TYPED(pyroi_tap_merge_pixel)(&merge, base, w_base);
                if (tap.lo == base + 1) {
                    w_base = w_next;
                } else {
                    PYROI_TYPED(pyroi_tap_merge_pixel)(&merge, base + 1, w_next);
                    w_base = 0.0;
                }
                w_next = 0.0;
                base = tap.lo;
            }
            w_base += (double)tap.w_lo;
            if (tap.hi == tap.lo) {
                w_base += (double)tap.w_hi; /* a tap clamped at the map's last pixel */
            } else {
                w_next += (double)tap.w_hi;
            }
        }
        if (base >= 0) {
            PYROI_TYPED(pyroi_tap_merge_pixel)(&merge, base, w_base);
            PYROI_TYPED(pyroi_tap_merge_pixel)(&merge, base + 1, w_next);
        }
        PYROI_TYPED(pyroi_tap_merge_flush)(&merge); /* a bin's taps never pair across bins */
        ranges[bin].begin = first;
        ranges[bin].end = merge.out - out;
        ranges[bin].first_sample = 0;
    }
    return merge.out - out;
}

/* 1 / count when that is exact (count a power of two up to 2^62), else 0. Then
 * (x * inverse) == (x / count) for every x: both round the same real number once, so a
 * kernel may multiply instead of divide without changing a bit. */
static inline T PYROI_TYPED(pyroi_exact_inverse)(int64_t count)
{
    if (count <= 0 || (count & (count - 1)) != 0 || count > (INT64_C(1) << 62)) {
        return (T)0;
    }
    return (T)1 / (T)count;
}

/* Sum of the bilinear values of every sample of one bin of a plane: row taps rr x column taps
 * cr of the axis tap tables, samples row by row, each value the four weighted taps added left
 * to right, weights formed as (row weight * column weight) - the peers' order. The plane holds
 * T values, or (widen not NULL, T float) the float16 ones of half_plane, each widened exactly
 * as it is read. */
PYROI_CLONE_INLINE T PYROI_TYPED(pyroi_bilinear_bin_sum)(
    const T *plane, const uint16_t *half_plane, pyroi_widen_fn widen, int64_t row_stride,
    int64_t col_stride, const PYROI_TYPED(pyroi_axis_tap) *row_taps, pyroi_tap_range rr,
    const PYROI_TYPED(pyroi_axis_tap) *col_taps, pyroi_tap_range cr)
{
    T sum = (T)0;
    int64_t r, q;
    for (r = rr.begin; r < rr.end; ++r) {
        const PYROI_TYPED(pyroi_axis_tap) ty = row_taps[r];
        const int64_t lo = ty.lo * row_stride, hi = ty.hi * row_stride;
        for (q = cr.begin; q < cr.end; ++q) {
            const PYROI_TYPED(pyroi_axis_tap) tx = col_taps[q];
            const int64_t left = tx.lo * col_stride, right = tx.hi * col_stride;
            const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
            const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
            if (widen != NULL) {
                sum += w1 * (T)widen(half_plane[lo + left]) +
                       w2 * (T)widen(half_plane[lo + right]) +
                       w3 * (T)widen(half_plane[hi + left]) +
                       w4 * (T)widen(half_plane[hi + right]);
            } else {
                sum += w1 * plane[lo + left] + w2 * plane[lo + right] + w3 * plane[hi + left] +
                       w4 * plane[hi + right];
            }
        }
    }
    return sum;
}

/* The adjoint of pyroi_bilinear_bin_sum followed by a division by count: adds
 * (grad * weight) / count to each tap of every sample of the bin, in the same sample order,
 * four separate additions per sample even where taps coincide (the peers' backward order). */
static inline void PYROI_TYPED(pyroi_bilinear_bin_scatter)(
    T *PYROI_RESTRICT plane, int64_t row_stride, int64_t col_stride,
    const PYROI_TYPED(pyroi_axis_tap) *row_taps, pyroi_tap_range rr,
    const PYROI_TYPED(pyroi_axis_tap) *col_taps, pyroi_tap_range cr, T grad, T count)
{
    int64_t r, q;
    for (r = rr.begin; r < rr.end; ++r) {
        const PYROI_TYPED(pyroi_axis_tap) ty = row_taps[r];
        T *row_lo = plane + ty.lo * row_stride;
        T *row_hi = plane + ty.hi * row_stride;
        for (q = cr.begin; q < cr.end; ++q) {
            const PYROI_TYPED(pyroi_axis_tap) tx = col_taps[q];
            const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
            const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
            row_lo[tx.lo * col_stride] += grad * w1 / count;
            row_lo[tx.hi * col_stride] += grad * w2 / count;
            row_hi[tx.lo * col_stride] += grad * w3 / count;
            row_hi[tx.hi * col_stride] += grad * w4 / count;
        }
    }
}

/* Whether a sample coordinate lies in the band [-1, extent] that the sampler reads (false for
 * NaN and on an axis without pixels). */
static inline int PYROI_TYPED(pyroi_position_in_map)(T coord, int64_t extent)
{
    return extent > 0 &&
           PYROI_TYPED(pyroi_position_passes)(coord, extent, PYROI_POSITION_NOT_BELOW) &&
           PYROI_TYPED(pyroi_position_passes)(coord, extent, PYROI_POSITION_NOT_ABOVE);
}

/* The taps of one point sample (y, x) of a height x width map, for samples that are not on a
 * separable grid (rotated RoIs). Returns 0 when the sample contributes nothing (outside
 * [-1, height] x [-1, width], or NaN); otherwise 1 with its row and column taps: its four
 * bilinear weights are row.w_lo * col.w_lo, row.w_lo * col.w_hi, row.w_hi * col.w_lo and
 * row.w_hi * col.w_hi at (row.lo, col.lo), (row.lo, col.hi), (row.hi, col.lo), (row.hi, col.hi),
 * exactly as for a separable grid. */
static inline int PYROI_TYPED(pyroi_point_taps)(T y, T x, int64_t height, int64_t width,
                                                PYROI_TYPED(pyroi_axis_tap) *row,
                                                PYROI_TYPED(pyroi_axis_tap) *col)
{
    if (!(PYROI_TYPED(pyroi_position_in_map)(y, height) &&
          PYROI_TYPED(pyroi_position_in_map)(x, width))) {
        return 0;
    }
    *row = PYROI_TYPED(pyroi_axis_tap_at)(y, height);
    *col = PYROI_TYPED(pyroi_axis_tap_at)(x, width);
    return 1;
}
