/* roi_align_geometry_template.h - a RoI's sampling grids and the check of every box, for one
 * dtype (T, PYROI_TYPED): shared by the RoIAlign plan (roi_align_plan_template.h) and the box
 * gradient (roi_align_boxes_template.h), so that both read a box exactly alike
 * (docs/semantics.md §3). */

typedef PYROI_TYPED(pyroi_sample_axis) PYROI_TYPED(sample_axis);
typedef PYROI_TYPED(pyroi_axis_tap) PYROI_TYPED(axis_tap);

/* The row and column sampling grids of one RoI (box = x1, y1, x2, y2). */
static pyroi_status PYROI_TYPED(roi_align_axes)(const T *box, const pyroi_roi_align_params *params,
                                                int64_t height, int64_t width,
                                                PYROI_TYPED(sample_axis) *rows,
                                                PYROI_TYPED(sample_axis) *cols)
{
    /* aligned: half-pixel shift; legacy: no shift but sizes forced to >= 1 */
    const T offset = params->aligned ? (T)0.5 : (T)0;
    const int min_size_one = !params->aligned;
    pyroi_status status = PYROI_TYPED(pyroi_sample_axis_from_edges)(
        box[1], box[3], params->spatial_scale_h, offset, min_size_one, params->pooled_height,
        params->sampling_ratio, height, rows);
    if (status != PYROI_OK) {
        return status;
    }
    return PYROI_TYPED(pyroi_sample_axis_from_edges)(
        box[0], box[2], params->spatial_scale_w, offset, min_size_one, params->pooled_width,
        params->sampling_ratio, width, cols);
}

/* Checks every box (finite, grid not too large). With row_taps/col_taps non-NULL also
 * records each RoI's in-map sample count per axis. On failure *failed_roi is the index of
 * the offending RoI. */
static pyroi_status PYROI_TYPED(roi_align_check_boxes)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride, int64_t height, int64_t width,
    const pyroi_roi_align_params *params, pyroi_call_cancel *cancel, int64_t *row_taps,
    int64_t *col_taps, int64_t *failed_roi)
{
    int64_t k;
    *failed_roi = -1;
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(sample_axis) rows, cols;
        const pyroi_status status = pyroi_box_scan_verdict(
            PYROI_TYPED(roi_align_axes)(boxes + k * box_row_stride, params, height, width, &rows,
                                        &cols),
            cancel, k, failed_roi);
        if (status != PYROI_OK) {
            return status;
        }
        if (row_taps != NULL) {
            row_taps[k] = PYROI_TYPED(pyroi_axis_tap_count)(&rows);
            col_taps[k] = PYROI_TYPED(pyroi_axis_tap_count)(&cols);
        }
    }
    return PYROI_OK;
}
