/* prroi_pool_math_template.h - the PrRoIPool math for one dtype (docs/semantics.md §12): the
 * job every worker reads, the box scan, a bin's weights and the three kernels of a bin (its
 * value, its input gradient, its box gradient). Included by prroi_pool_dtype.h. A bin's
 * value is sum_i wy(i) * sum_j wx(j) * P[i, j] over the rows and columns it reaches (the
 * separable form of the integral of the zero-padded bilinear surface); the weights are
 * computed in double once per bin and read by every channel. */

#include "core/job_tensors_template.h"

typedef struct PYROI_TYPED(prroi_job) {
    /* forward: input and output; input backward: grad_output and grad_input; box backward:
     * grad_output (features) and no result */
    PYROI_TYPED(job_tensors) tensors;
    /* box backward: the forward's input, read, and the rows of box gradients, written */
    const T *map;
    const int64_t *map_shape;
    const int64_t *map_strides;
    T *grad_boxes;
    int64_t grad_box_row_stride;
    const pyroi_prroi_pool_params *params;
    /* per worker: scratch_per_worker T values (row weights, edge rows, column weights) */
    void *scratch;
    int64_t max_rows, max_cols, scratch_per_worker;
    /* the forward's tables of a RoI (0: none): weights of every row bin (row_table values)
     * and column bin (col_table values) in the T scratch, after the three rows above, and
     * per bin its first pixel, count and table offset in `meta` (3 * (PH + PW) a worker) */
    int64_t row_table, col_table;
    int64_t *meta;
    int64_t channel_block; /* input backward: channels of a work item */
} PYROI_TYPED(prroi_job);

/* RoI k's geometry, from the call's copy (validated by the scan). */
static prroi_geometry PYROI_TYPED(prroi_roi)(const PYROI_TYPED(prroi_job) *job, int64_t k)
{
    const T *box = job->tensors.boxes + k * job->tensors.box_row_stride;
    const double corners[4] = {(double)box[0], (double)box[1], (double)box[2], (double)box[3]};
    prroi_geometry geometry;
    memset(&geometry, 0, sizeof geometry);
    (void)prroi_geometry_of(corners, job->params, &geometry);
    return geometry;
}

/* Checks every box of the copy (rows of 4); *max_rows and *max_cols receive the most rows and
 * columns a bin reaches, *work the mean work of a RoI per channel (multiply-adds). On failure
 * *failed_roi is the offending RoI. */
static pyroi_status PYROI_TYPED(prroi_scan_boxes)(const T *boxes, int64_t num_rois,
                                                  const int64_t shape[4],
                                                  const pyroi_prroi_pool_params *params,
                                                  pyroi_call_cancel *cancel,
                                                  int64_t *max_rows, int64_t *max_cols,
                                                  double *work, int64_t *failed_roi)
{
    const double bins = (double)params->pooled_height * (double)params->pooled_width;
    double rows = 1.0, cols = 1.0, total = 0.0;
    int64_t k;
    *failed_roi = -1;
    for (k = 0; k < num_rois; ++k) {
        const T *box = boxes + 4 * k;
        const double corners[4] = {(double)box[0], (double)box[1], (double)box[2],
                                   (double)box[3]};
        prroi_geometry g;
        const int valid = prroi_geometry_of(corners, params, &g);
        const pyroi_status status = pyroi_box_scan_verdict(
            valid ? PYROI_OK : PYROI_E_INVALID_BOX, cancel, k, failed_roi);
        if (status != PYROI_OK) {
            return status;
        }
        if (g.bin_h > 0.0 && g.bin_w > 0.0) {
            const double r = prroi_axis_reach(g.bin_h, shape[2]);
            const double c = prroi_axis_reach(g.bin_w, shape[3]);
            rows = r > rows ? r : rows;
            cols = c > cols ? c : cols;
        }
        total += bins * prroi_bin_work(&g, shape);
    }
    *max_rows = (int64_t)rows;
    *max_cols = (int64_t)cols;
    *work = num_rois > 0 ? total / (double)num_rois : 0.0;
    return PYROI_OK;
}

/* The value of a bin of channel plane `plane` (element (0, 0) of the bin's reach): the sum
 * over its rows of wy(i) times the row's sum of wx(j) * P[i, j]. */
PYROI_CLONE_INLINE T PYROI_TYPED(prroi_bin_value)(const T *plane, const int64_t strides[4],
                                                  const prroi_bin *bin, const T *wy,
                                                  const T *wx)
{
    T sum = (T)0;
    int64_t i, j;
    if (strides[3] == 1) { /* the same sums, rows read as runs */
        for (i = 0; i < bin->rows; ++i) {
            const T *row = plane + i * strides[2];
            T line = (T)0;
            for (j = 0; j < bin->cols; ++j) {
                line += wx[j] * row[j];
            }
            sum += wy[i] * line;
        }
        return sum;
    }
    for (i = 0; i < bin->rows; ++i) {
        const T *row = plane + i * strides[2];
        T line = (T)0;
        for (j = 0; j < bin->cols; ++j) {
            line += wx[j] * row[j * strides[3]];
        }
        sum += wy[i] * line;
    }
    return sum;
}

/* prroi_bin_value of four channel planes, plane + q * channel_stride for q < 4, into
 * values[q]: the same operations per channel in the same order (bit-identical), four
 * independent chains of additions instead of one, which set the pace otherwise. */
PYROI_CLONE_INLINE void PYROI_TYPED(prroi_bin_value4)(const T *plane, int64_t channel_stride,
                                                      const int64_t strides[4],
                                                      const prroi_bin *bin, const T *wy,
                                                      const T *wx, T values[4])
{
    T s0 = (T)0, s1 = (T)0, s2 = (T)0, s3 = (T)0;
    int64_t i, j;
    for (i = 0; i < bin->rows; ++i) {
        const T *r0 = plane + i * strides[2], *r1 = r0 + channel_stride;
        const T *r2 = r1 + channel_stride, *r3 = r2 + channel_stride;
        T l0 = (T)0, l1 = (T)0, l2 = (T)0, l3 = (T)0;
        for (j = 0; j < bin->cols; ++j) {
            const int64_t at = j * strides[3];
            l0 += wx[j] * r0[at];
            l1 += wx[j] * r1[at];
            l2 += wx[j] * r2[at];
            l3 += wx[j] * r3[at];
        }
        s0 += wy[i] * l0;
        s1 += wy[i] * l1;
        s2 += wy[i] * l2;
        s3 += wy[i] * l3;
    }
    values[0] = s0;
    values[1] = s1;
    values[2] = s2;
    values[3] = s3;
}

/* Adds g * wy(i) * wx(j) to the bin's reach of plane (the adjoint of prroi_bin_value). */
PYROI_CLONE_INLINE void PYROI_TYPED(prroi_bin_scatter)(T *plane, const int64_t strides[4],
                                                       const prroi_bin *bin, const T *wy,
                                                       const T *wx, T g)
{
    int64_t i, j;
    for (i = 0; i < bin->rows; ++i) {
        T *PYROI_RESTRICT row = plane + i * strides[2];
        const T gy = g * wy[i];
        for (j = 0; j < bin->cols; ++j) {
            row[j * strides[3]] += gy * wx[j];
        }
    }
}

/* The five sums of a bin of one channel the box gradient needs: sums[0] the bin's value o,
 * sums[1] / sums[2] the means of the surface along its top (y = ya) and bottom (y = yb)
 * edges, sums[3] / sums[4] along its left and right edges. ey holds the rows' tent weights
 * of the top edge (ey[i]) and of the bottom one (ey[rows + i]); the column taps of the left
 * and right edges are bin->x_taps. */
PYROI_CLONE_INLINE void PYROI_TYPED(prroi_bin_edges)(const T *plane, const int64_t strides[4],
                                                     const prroi_bin *bin, const T *wy,
                                                     const T *wx, const T *ey, T sums[5])
{
    T o = (T)0, top = (T)0, bottom = (T)0, left = (T)0, right = (T)0;
    int64_t i, j;
    int t;
    for (i = 0; i < bin->rows; ++i) {
        const T *row = plane + i * strides[2];
        T line = (T)0, l = (T)0, r = (T)0;
        for (j = 0; j < bin->cols; ++j) {
            line += wx[j] * row[j * strides[3]];
        }
        for (t = 0; t < bin->left_taps; ++t) {
            l += (T)bin->left_weight[t] * row[bin->left_at[t] * strides[3]];
        }
        for (t = 0; t < bin->right_taps; ++t) {
            r += (T)bin->right_weight[t] * row[bin->right_at[t] * strides[3]];
        }
        o += wy[i] * line;
        top += ey[i] * line;
        bottom += ey[bin->rows + i] * line;
        left += wy[i] * l;
        right += wy[i] * r;
    }
    sums[0] = o;
    sums[1] = top;
    sums[2] = bottom;
    sums[3] = left;
    sums[4] = right;
}
