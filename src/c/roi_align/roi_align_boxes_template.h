/* roi_align_boxes_template.h - RoIAlign's box gradient for one dtype (T, PYROI_TYPED; included
 * by roi_align_boxes.c through core/each_dtype.h): the task over RoIs and the entry point
 * (docs/semantics.md §3.8). The box geometry is the forward's (roi_align_geometry_template.h),
 * the taps and their slopes the one sampler's (core/sampling.h). */

#include "roi_align/roi_align_geometry_template.h"

typedef struct PYROI_TYPED(roi_align_boxes_job) {
    const T *input;                /* the forward's input (N, C, H, W) */
    const int64_t *shape, *strides;
    const T *grad;                 /* grad_output (K, C, PH, PW) */
    const int64_t *grad_strides;
    T *grad_boxes;
    int64_t grad_box_row_stride;
    const pyroi_rois *rois;        /* the call's copy of the boxes and batch indices */
    const pyroi_roi_align_params *params;
} PYROI_TYPED(roi_align_boxes_job);

/* d(sample position)/d(near edge) and d/d(far edge) of sample i of bin b, per unit of the
 * scaled edge: the position is start + (b + (i + 0.5) / grid) * size / bins, affine in both
 * edges; a size that min_size_one raised to 1 no longer depends on the far edge, so the near
 * edge translates the samples (share 1) and the far one moves none (share 0). */
static void PYROI_TYPED(roi_align_edge_shares)(const PYROI_TYPED(sample_axis) *axis, int64_t bin,
                                               int64_t i, double *near_share,
                                               double *far_share)
{
    const double t =
        ((double)bin + ((double)i + 0.5) / (double)axis->grid) / (double)axis->bins;
    *far_share = axis->size_clamped ? 0.0 : t;
    *near_share = 1.0 - *far_share;
}

/* RoIs [begin, end): each row of 4 gradients written by this task alone, its sums taken in a
 * fixed order (bin row, sample row, bin column, sample column, channel) in double. */
static void PYROI_TYPED(roi_align_boxes_task)(void *context, int64_t begin, int64_t end,
                                              int worker)
{
    const PYROI_TYPED(roi_align_boxes_job) *job = (const PYROI_TYPED(roi_align_boxes_job) *)context;
    const pyroi_roi_align_params *params = job->params;
    const int64_t C = job->shape[1], H = job->shape[2], W = job->shape[3];
    const int64_t *is = job->strides, *gs = job->grad_strides;
    /* the forward scales the edges by the scale as T */
    const double scale_h = (double)(T)params->spatial_scale_h;
    const double scale_w = (double)(T)params->spatial_scale_w;
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(params->cancel, 8 * C + 1);
    int64_t k, ph, pw, iy, ix, c;
    (void)worker;
    for (k = begin; k < end; ++k) {
        const T *box = (const T *)job->rois->boxes + 4 * k;
        T *row = job->grad_boxes + k * job->grad_box_row_stride;
        double d_x1 = 0.0, d_y1 = 0.0, d_x2 = 0.0, d_y2 = 0.0;
        PYROI_TYPED(sample_axis) rows, cols;
        /* checked before the tasks: the same call cannot fail here */
        (void)PYROI_TYPED(roi_align_axes)(box, params, H, W, &rows, &cols);
        for (ph = 0; ph < rows.bins && rows.grid > 0 && cols.grid > 0 && C > 0; ++ph) {
            int64_t y_first, y_end;
            PYROI_TYPED(pyroi_samples_in_map)(&rows, ph, &y_first, &y_end);
            for (iy = y_first; iy < y_end; ++iy) {
                const T y = PYROI_TYPED(pyroi_sample_position)(&rows, ph, iy);
                const PYROI_TYPED(axis_tap) ty = PYROI_TYPED(pyroi_axis_tap_at)(y, H);
                const double slope_y = (double)PYROI_TYPED(pyroi_axis_tap_slope)(y, ty);
                double near_y, far_y;
                PYROI_TYPED(roi_align_edge_shares)(&rows, ph, iy, &near_y, &far_y);
                for (pw = 0; pw < cols.bins; ++pw) {
                    int64_t x_first, x_end;
                    PYROI_TYPED(pyroi_samples_in_map)(&cols, pw, &x_first, &x_end);
                    for (ix = x_first; ix < x_end; ++ix) {
                        const T x = PYROI_TYPED(pyroi_sample_position)(&cols, pw, ix);
                        const PYROI_TYPED(axis_tap) tx = PYROI_TYPED(pyroi_axis_tap_at)(x, W);
                        const double slope_x = (double)PYROI_TYPED(pyroi_axis_tap_slope)(x, tx);
                        const T *plane = job->input + job->rois->batch_indices[k] * is[0];
                        const T *grad = job->grad + k * gs[0] + ph * gs[2] + pw * gs[3];
                        const int64_t lo = ty.lo * is[2], hi = ty.hi * is[2];
                        const int64_t left = tx.lo * is[3], right = tx.hi * is[3];
                        const double wy_lo = (double)ty.w_lo, wy_hi = (double)ty.w_hi;
                        const double wx_lo = (double)tx.w_lo, wx_hi = (double)tx.w_hi;
                        double along_y = 0.0, along_x = 0.0, near_x, far_x;
                        if (slope_y == 0.0 && slope_x == 0.0) {
                            continue; /* clamped on both axes: the value is flat here */
                        }
                        if (pyroi_cancel_count(&countdown)) {
                            return; /* grad_boxes is unspecified once cancelled */
                        }
                        for (c = 0; c < C; ++c) {
                            const T *p = plane + c * is[1];
                            const double g = (double)grad[c * gs[1]];
                            const double v00 = (double)p[lo + left], v01 = (double)p[lo + right];
                            const double v10 = (double)p[hi + left], v11 = (double)p[hi + right];
                            /* the sampler's value differentiated: the neighbours' differences
                             * weighted by the other axis's weights */
                            along_y += g * ((wx_lo * v10 + wx_hi * v11) -
                                            (wx_lo * v00 + wx_hi * v01));
                            along_x += g * (wy_lo * (v01 - v00) + wy_hi * (v11 - v10));
                        }
                        along_y *= slope_y * scale_h;
                        along_x *= slope_x * scale_w;
                        PYROI_TYPED(roi_align_edge_shares)(&cols, pw, ix, &near_x, &far_x);
                        d_y1 += along_y * near_y;
                        d_y2 += along_y * far_y;
                        d_x1 += along_x * near_x;
                        d_x2 += along_x * far_x;
                    }
                }
            }
        }
        if (rows.grid > 0 && cols.grid > 0) { /* the mean's count, as the forward's */
            const double count = (double)rows.grid * (double)cols.grid;
            d_x1 /= count;
            d_y1 /= count;
            d_x2 /= count;
            d_y2 /= count;
        }
        row[0] = (T)d_x1;
        row[1] = (T)d_y1;
        row[2] = (T)d_x2;
        row[3] = (T)d_y2;
    }
}

pyroi_status PYROI_TYPED(pyroi_roi_align_backward_boxes)(
    const T *grad_output, const int64_t grad_output_strides[4], const T *input,
    const int64_t input_shape[4], const int64_t input_strides[4], const T *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices, T *grad_boxes,
    int64_t grad_box_row_stride, const pyroi_roi_align_params *params)
{
    PYROI_TYPED(roi_align_boxes_job) job;
    pyroi_rois rois;
    int64_t failed_roi;
    pyroi_status status = pyroi_check_roi_align_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    /* the rows of gradients are checked with the tensors, before the RoIs (as PrRoIPool's) */
    status = pyroi_check_pooling_call(input, input_shape, input_strides, PYROI_TENSOR_INPUT,
                                      grad_output, grad_output_strides, PYROI_TENSOR_INPUT, -1,
                                      params->pooled_height, params->pooled_width, boxes,
                                      num_rois, box_row_stride, 4, batch_indices);
    if (status == PYROI_OK) {
        status = pyroi_check_grad_box_rows(grad_boxes, num_rois, grad_box_row_stride);
    }
    if (status == PYROI_OK) {
        status = pyroi_rois_copy(&rois, boxes, sizeof(T), num_rois, box_row_stride, 4,
                                 batch_indices, input_shape[0], NULL, params->cancel);
    }
    if (status != PYROI_OK) {
        return status;
    }
    /* every later step reads the copy only */
    status = PYROI_TYPED(roi_align_check_boxes)((const T *)rois.boxes, num_rois, 4,
                                                input_shape[2], input_shape[3], params,
                                                &rois.cancel, NULL, NULL, &failed_roi);
    if (status == PYROI_OK && num_rois > 0) {
        /* a guess of a RoI's work for the thread count: four samples a bin, 8 reads each */
        const double work = 32.0 * (double)params->pooled_height *
                            (double)params->pooled_width * ((double)input_shape[1] + 1.0);
        memset(&job, 0, sizeof job);
        job.input = input;
        job.shape = input_shape;
        job.strides = input_strides;
        job.grad = grad_output;
        job.grad_strides = grad_output_strides;
        job.grad_boxes = grad_boxes;
        job.grad_box_row_stride = grad_box_row_stride;
        job.rois = &rois;
        job.params = params;
        status = pyroi_parallel_for(pyroi_parallel_workers(params->num_threads, num_rois, work),
                                    num_rois, work, params->cancel,
                                    PYROI_TYPED(roi_align_boxes_task), &job);
    }
    pyroi_rois_free(&rois);
    return status;
}
