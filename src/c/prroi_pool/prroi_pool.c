/* prroi_pool.c - Precise RoI Pooling (PrRoIPool, IoU-Net), forward, input backward and box
 * backward, float32 and float64 (docs/semantics.md §12). The dtype-free parts are here: the
 * parameter init, the call checks, a box's geometry and the per-axis integrals of a bin, in
 * double; the tasks and entry points are written once, in the templates prroi_pool_dtype.h
 * lists. */
#include "core/parallel.h"
#include "core/rois.h"
#include "core/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pyroi_prroi_pool_params_init(pyroi_prroi_pool_params *params)
{
    /* the fields not named are 0 (num_threads: all cores) or NULL */
    static const pyroi_prroi_pool_params defaults = {
        .pooled_height = 1, .pooled_width = 1, .spatial_scale_h = 1.0, .spatial_scale_w = 1.0};
    if (params != NULL) {
        *params = defaults;
    }
}

/* One RoI in feature-map coordinates: its first corner, the size of a bin along each axis
 * (0 when the box is empty or inverted on that axis: the size is clamped, as mmcv's). */
typedef struct prroi_geometry {
    double x1, y1;
    double bin_w, bin_h;
} prroi_geometry;

/* The geometry of a box (x1, y1, x2, y2 as doubles); 0 when a coordinate, a scaled
 * coordinate or a scaled size is not finite (the box is then PYROI_E_INVALID_BOX). */
static int prroi_geometry_of(const double box[4], const pyroi_prroi_pool_params *params,
                             prroi_geometry *geometry)
{
    const double x1 = box[0] * params->spatial_scale_w, y1 = box[1] * params->spatial_scale_h;
    const double x2 = box[2] * params->spatial_scale_w, y2 = box[3] * params->spatial_scale_h;
    const double width = x2 - x1, height = y2 - y1;
    if (!(isfinite(box[0]) && isfinite(box[1]) && isfinite(box[2]) && isfinite(box[3]) &&
          isfinite(width) && isfinite(height))) {
        return 0; /* a non-finite scaled corner makes its size non-finite too */
    }
    geometry->x1 = x1;
    geometry->y1 = y1;
    geometry->bin_w = width > 0.0 ? width / (double)params->pooled_width : 0.0;
    geometry->bin_h = height > 0.0 ? height / (double)params->pooled_height : 0.0;
    return 1;
}

/* The most rows (or columns) a bin of size `size` reaches on an axis of `extent` pixels: the
 * integer positions i with tent(u - i) > 0 for some u in the bin, at most ceil(size) + 2,
 * plus one for the rounding of the bin's edges, and never more than the axis. */
static double prroi_axis_reach(double size, int64_t extent)
{
    const double reach = ceil(size) + 3.0;
    return reach < (double)extent ? reach : (double)extent;
}

/* The pixels of an axis of `extent` pixels that a bin [a, b] reaches (tent(u - i) > 0 for
 * some u in it): [*first, *first + count), count <= capacity returned (0: the bin misses the
 * map, or has no size). */
static int64_t prroi_axis_range(double a, double b, double size, int64_t extent,
                                int64_t capacity, int64_t *first)
{
    double lo = floor(a), hi = ceil(b);
    int64_t count;
    lo = lo < 0.0 ? 0.0 : lo;
    hi = hi > (double)extent - 1.0 ? (double)extent - 1.0 : hi;
    if (!(hi >= lo) || !(size > 0.0)) {
        return 0;
    }
    count = (int64_t)(hi - lo) + 1;
    *first = (int64_t)lo;
    return count < capacity ? count : capacity;
}

/* (1 / size) * the integral over the bin [a, b] (b - a = size) of tent(u - i) du, for pixel
 * i: split at the tent's kinks into linear pieces, whose integral is their length times the
 * tent at their midpoint, so that there is no cancellation (exact for tiny bins and for bins
 * far larger than the map). */
static double prroi_axis_weight(double a, double b, double size, double i)
{
    double sum = 0.0;
    double p = a > i - 1.0 ? a : i - 1.0; /* the rising piece [i - 1, i] */
    double q = b < i ? b : i;
    if (q > p) {
        sum += (q - p) * (0.5 * (p + q) - (i - 1.0));
    }
    p = a > i ? a : i; /* the falling piece [i, i + 1] */
    q = b < i + 1.0 ? b : i + 1.0;
    if (q > p) {
        sum += (q - p) * ((i + 1.0) - 0.5 * (p + q));
    }
    return sum / size;
}

/* The taps of the zero-padded surface at position e on an axis, restricted to the pixels
 * [first, first + count) a bin reads (pixels outside it are off the map, or have weight 0):
 * up to two (position relative to first, tent(e - i)) pairs; returns how many. */
static int prroi_edge_taps(double e, int64_t first, int64_t count, int64_t at[2],
                           double weight[2])
{
    const double base = floor(e), frac = e - base;
    int taps = 0, t;
    for (t = 0; t < 2; ++t) {
        const double i = base + (double)t - (double)first; /* relative, as a double */
        if (i >= 0.0 && i < (double)count) {
            at[taps] = (int64_t)i;
            weight[taps] = t == 0 ? 1.0 - frac : frac;
            ++taps;
        }
    }
    return taps;
}

/* One bin's reach on both axes: the rows [row0, row0 + rows) and the columns [col0, col0 +
 * cols) of the map it reads (rows or cols 0: the bin misses the map), and for the box
 * gradient the column taps of its left (x = xa) and right (x = xb) edges, relative to col0. */
typedef struct prroi_bin {
    int64_t row0, rows, col0, cols;
    int left_taps, right_taps;
    int64_t left_at[2], right_at[2];
    double left_weight[2], right_weight[2];
} prroi_bin;

/* The checks every entry point shares once the parameters are valid: the feature tensor
 * (input or grad_input) and the pooled tensor (output or grad_output) of shape (num_rois, C,
 * PH, PW), and the box rows; then the RoIs copied into *rois (value_bytes a coordinate),
 * which the call reads from then on and frees. */
static pyroi_status prroi_check_call(const void *features, const int64_t features_shape[4],
                                     const int64_t features_strides[4],
                                     pyroi_tensor_role features_role, const void *pooled,
                                     const int64_t pooled_strides[4],
                                     pyroi_tensor_role pooled_role, const void *boxes,
                                     int64_t num_rois, int64_t box_row_stride,
                                     const int64_t *batch_indices,
                                     const pyroi_prroi_pool_params *params, size_t value_bytes,
                                     pyroi_rois *rois)
{
    const pyroi_status status = pyroi_check_pooling_call(
        features, features_shape, features_strides, features_role, pooled, pooled_strides,
        pooled_role, -1, params->pooled_height, params->pooled_width, boxes, num_rois,
        box_row_stride, 4, batch_indices);
    if (status != PYROI_OK) {
        return status;
    }
    return pyroi_rois_copy(rois, boxes, value_bytes, num_rois, box_row_stride, 4, batch_indices,
                           features_shape[0], NULL, params->cancel);
}

/* Work of a bin at most, in multiply-adds per channel (the thread and cancel estimates). */
static double prroi_bin_work(const prroi_geometry *g, const int64_t shape[4])
{
    if (g->bin_w <= 0.0 || g->bin_h <= 0.0) {
        return 1.0;
    }
    return prroi_axis_reach(g->bin_h, shape[2]) * prroi_axis_reach(g->bin_w, shape[3]) + 1.0;
}

/* A call's scratch, for the most rows and columns a bin reaches (per worker: row weights,
 * column weights and the box backward's two rows of edge weights), at most this. */
#define PRROI_SCRATCH_LIMIT 17179869184.0 /* 16 GiB: more is PYROI_E_NO_MEMORY */

#define PRROI_MIN(a, b) ((a) < (b) ? (a) : (b))
/* A table size beyond any memory (the scratch check then fails), within int64. */
#define PRROI_TABLE_LIMIT 1e18

#define PYROI_DTYPE_TEMPLATE "prroi_pool/prroi_pool_dtype.h"
#include "core/each_dtype.h"
