/* roi_align_explain_template.h - the RoIAlign explain functions (pyroi.h, "Explaining one
 * RoI"), included by roi_align.c after the other RoIAlign templates once per dtype with T and
 * PYROI_TYPED(name) defined. The grid comes from roi_align_axes and every sample from the
 * shared sampler (pyroi_sample_position, pyroi_position_in_map, pyroi_axis_tap_at): the very
 * code the kernels run, so nothing here restates the sampling rule. */

/* Validation and the two axes of one box, shared by both entry points. */
static pyroi_status PYROI_TYPED(roi_align_explain_axes)(const T *box, int64_t height,
                                                        int64_t width,
                                                        const pyroi_roi_align_params *params,
                                                        PYROI_TYPED(sample_axis) *rows,
                                                        PYROI_TYPED(sample_axis) *cols)
{
    pyroi_status status = pyroi_check_roi_align_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    if (height < 0 || width < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    if (box == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    return PYROI_TYPED(roi_align_axes)(box, params, height, width, rows, cols);
}

/* Whether samples can receive the bins * grid entries of axis. */
static pyroi_status PYROI_TYPED(roi_align_explain_check_samples)(
    const PYROI_TYPED(pyroi_roi_align_axis_samples) *samples,
    const PYROI_TYPED(sample_axis) *axis)
{
    int64_t count;
    if (samples == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    if (!pyroi_mul_nonneg(axis->bins, axis->grid, &count) || samples->capacity < count) {
        return PYROI_E_INVALID_SHAPE;
    }
    if (count > 0 && (samples->coords == NULL || samples->taps == NULL ||
                      samples->weights == NULL || samples->in_map == NULL)) {
        return PYROI_E_NULL_POINTER;
    }
    return PYROI_OK;
}

static void PYROI_TYPED(roi_align_explain_fill)(const PYROI_TYPED(sample_axis) *axis,
                                                PYROI_TYPED(pyroi_roi_align_axis_samples) *out)
{
    int64_t bin, i, n = 0;
    if (out->edges != NULL) {
        for (bin = 0; bin <= axis->bins; ++bin) {
            out->edges[bin] = PYROI_TYPED(pyroi_bin_origin)(axis, bin);
        }
    }
    for (bin = 0; bin < axis->bins; ++bin) {
        for (i = 0; i < axis->grid; ++i, ++n) {
            const T coord = PYROI_TYPED(pyroi_sample_position)(axis, bin, i);
            out->coords[n] = coord;
            if (PYROI_TYPED(pyroi_position_in_map)(coord, axis->extent)) {
                const PYROI_TYPED(axis_tap) tap = PYROI_TYPED(pyroi_axis_tap_at)(coord,
                                                                                 axis->extent);
                out->taps[2 * n] = tap.lo;
                out->taps[2 * n + 1] = tap.hi;
                out->weights[2 * n] = tap.w_lo;
                out->weights[2 * n + 1] = tap.w_hi;
                out->in_map[n] = 1;
            } else {
                out->taps[2 * n] = out->taps[2 * n + 1] = -1;
                out->weights[2 * n] = out->weights[2 * n + 1] = (T)0;
                out->in_map[n] = 0;
            }
        }
    }
}

pyroi_status PYROI_TYPED(pyroi_roi_align_sample_grid)(const T box[4], int64_t height,
                                                      int64_t width,
                                                      const pyroi_roi_align_params *params,
                                                      int64_t grid[2])
{
    PYROI_TYPED(sample_axis) rows, cols;
    pyroi_status status = PYROI_TYPED(roi_align_explain_axes)(box, height, width, params,
                                                              &rows, &cols);
    if (status != PYROI_OK) {
        return status;
    }
    if (grid == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    grid[0] = rows.grid;
    grid[1] = cols.grid;
    return PYROI_OK;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_sample_axes)(
    const T box[4], int64_t height, int64_t width, const pyroi_roi_align_params *params,
    PYROI_TYPED(pyroi_roi_align_axis_samples) *rows_out,
    PYROI_TYPED(pyroi_roi_align_axis_samples) *cols_out)
{
    PYROI_TYPED(sample_axis) rows, cols;
    pyroi_status status = PYROI_TYPED(roi_align_explain_axes)(box, height, width, params,
                                                              &rows, &cols);
    if (status == PYROI_OK) {
        status = PYROI_TYPED(roi_align_explain_check_samples)(rows_out, &rows);
    }
    if (status == PYROI_OK) {
        status = PYROI_TYPED(roi_align_explain_check_samples)(cols_out, &cols);
    }
    if (status != PYROI_OK) {
        return status;
    }
    PYROI_TYPED(roi_align_explain_fill)(&rows, rows_out);
    PYROI_TYPED(roi_align_explain_fill)(&cols, cols_out);
    return PYROI_OK;
}
