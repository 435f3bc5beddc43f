/* roi_align_rows.h - RoIAlign (average mode) with the RoIs' rows of the pooled tensor named
 * by the caller (internal, not installed): the per-level calls of the multi-level entry points
 * (roi_align_levels.c) write and read each RoI's row in place in the whole call's output and
 * grad_output, in the RoIs' original order, instead of through per-level copies.
 *
 * As pyroi_roi_align_forward_* / pyroi_roi_align_backward_*, except that RoI k's row of output
 * (forward) or grad_output (backward) is rows[k] (rows NULL: row k). The caller has checked
 * the pooled tensor for every row that rows names; rows is the caller's own memory, never the
 * API caller's (it is read more than once). */
#ifndef PYROI_ROI_ALIGN_ROWS_H
#define PYROI_ROI_ALIGN_ROWS_H

#include "core/common.h"

/* The prototypes of one dtype (T, the suffix of its entry points). */
#define PYROI_ROI_ALIGN_ROWS_PROTOTYPES(T, suffix)                                                 \
    pyroi_status pyroi_roi_align_forward_rows_##suffix(                                            \
        const T *input, const int64_t input_shape[4], const int64_t input_strides[4],              \
        const T *boxes, int64_t num_rois, int64_t box_row_stride,                                  \
        const int64_t *batch_indices, const int64_t *rows,                                         \
        T *output, const int64_t output_strides[4],                                                \
        const pyroi_roi_align_params *params);                                                     \
    pyroi_status pyroi_roi_align_backward_rows_##suffix(                                           \
        const T *grad_output, const int64_t grad_output_strides[4],                                \
        const T *boxes, int64_t num_rois, int64_t box_row_stride,                                  \
        const int64_t *batch_indices, const int64_t *rows,                                         \
        T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],     \
        const pyroi_roi_align_params *params);

PYROI_ROI_ALIGN_ROWS_PROTOTYPES(float, f32)
PYROI_ROI_ALIGN_ROWS_PROTOTYPES(double, f64)

#endif /* PYROI_ROI_ALIGN_ROWS_H */
