/* roi_pool_explain_template.h - the RoIPool explain function (pyroi.h, "Explaining one RoI"),
 * included by roi_pool.c after the other RoIPool templates once per dtype with T and
 * PYROI_TYPED(name) defined. The bins come from roi_pool_axes and roi_pool_bin_window, the
 * forward's own quantisation, so nothing here restates it. */

pyroi_status PYROI_TYPED(pyroi_roi_pool_bin_edges)(const T box[4], int64_t height, int64_t width,
                                                   const pyroi_roi_pool_params *params,
                                                   int64_t roi_pixels[4], int64_t *row_edges,
                                                   int64_t *col_edges)
{
    PYROI_TYPED(roi_pool_axis) rows, cols;
    int64_t b;
    pyroi_status status = pyroi_check_roi_pool_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    if (height < 0 || width < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    if (box == NULL || row_edges == NULL || col_edges == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    status = PYROI_TYPED(roi_pool_axes)(box, params, height, width, &rows, &cols);
    if (status != PYROI_OK) {
        return status;
    }
    for (b = 0; b < rows.bins; ++b) {
        const roi_pool_window window = PYROI_TYPED(roi_pool_bin_window)(&rows, b);
        row_edges[2 * b] = window.begin;
        row_edges[2 * b + 1] = window.end;
    }
    for (b = 0; b < cols.bins; ++b) {
        const roi_pool_window window = PYROI_TYPED(roi_pool_bin_window)(&cols, b);
        col_edges[2 * b] = window.begin;
        col_edges[2 * b + 1] = window.end;
    }
    if (roi_pixels != NULL) {
        /* start + size stays in int64: start is clamped to +-2^53 and size to 2^54 + 1 */
        roi_pixels[0] = rows.start;
        roi_pixels[1] = rows.start + rows.size;
        roi_pixels[2] = cols.start;
        roi_pixels[3] = cols.start + cols.size;
    }
    return PYROI_OK;
}
