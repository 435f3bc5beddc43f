/* roi_rows_template.h - the batch indices of RoI rows, included by roi_rows.c once per dtype
 * with T and PYROI_TYPED(name) defined. */

/* Whether an integral index lies in [0, num_images) (converted only below 2^63). */
static int PYROI_TYPED(roi_rows_index_in_range)(T index, int64_t num_images)
{
    return index >= 0 && (double)index < 9223372036854775808.0 && (int64_t)index < num_images;
}

pyroi_status PYROI_TYPED(pyroi_roi_rows_batch_indices)(const T *rows, int64_t num_rois,
                                                       int64_t row_stride,
                                                       int64_t coords_per_box,
                                                       int64_t num_images,
                                                       int64_t *batch_indices,
                                                       int64_t *failed_roi)
{
    int64_t k, j, not_integer = -1, out_of_range = -1, not_finite = -1;
    pyroi_status status = check_roi_rows_call(rows, num_rois, row_stride, coords_per_box,
                                              num_images, batch_indices, failed_roi);
    if (status != PYROI_OK) {
        return status;
    }
    /* one pass for the three checks, reported in their order (every index an integer, then
     * in range, then the coordinates), each naming its first RoI; nothing is written before
     * every row passed */
    for (k = 0; k < num_rois && not_integer < 0; ++k) {
        const T *row = rows + k * row_stride;
        const T index = row[0];
        if (!(index == floor(index))) { /* NaN too; +-inf is out of range */
            not_integer = k;
        } else if (out_of_range < 0 && !PYROI_TYPED(roi_rows_index_in_range)(index, num_images)) {
            out_of_range = k;
        }
        for (j = 1; j <= coords_per_box && not_finite < 0; ++j) {
            if (!isfinite(row[j])) {
                not_finite = k;
            }
        }
    }
    if (not_integer >= 0 || out_of_range >= 0) {
        *failed_roi = not_integer >= 0 ? not_integer : out_of_range;
        return PYROI_E_INVALID_BATCH_INDEX;
    }
    if (not_finite >= 0) {
        *failed_roi = not_finite;
        return PYROI_E_INVALID_BOX;
    }
    /* each index converted from the read that checks it: another thread may have written
     * the rows since the pass above (the result is then unspecified, never undefined) */
    for (k = 0; k < num_rois; ++k) {
        const T index = rows[k * row_stride];
        if (!(index == floor(index) && PYROI_TYPED(roi_rows_index_in_range)(index, num_images))) {
            *failed_roi = k;
            return PYROI_E_INVALID_BATCH_INDEX;
        }
        batch_indices[k] = (int64_t)index;
    }
    return PYROI_OK;
}
