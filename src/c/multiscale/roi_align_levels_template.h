/* roi_align_levels_template.h - the multi-level RoIAlign entry points, included by
 * roi_align_levels.c once per dtype with T and PYROI_TYPED(name) defined. */

/* After the checks of steps 1-2 (checked: their status, returned as it is unless OK): the
 * call's copy of the RoIs, their levels (from the copy), sorted by level, and every RoI
 * checked against its level's map (step 3), so that nothing is written when one fails. */
static pyroi_status PYROI_TYPED(roi_align_levels_prepare)(pyroi_status checked,
                                                          roi_align_levels_rois *rois,
                                                          const roi_align_levels_call *call,
                                                          const T *boxes, int64_t num_rois,
                                                          int64_t box_row_stride,
                                                          const int64_t *batch_indices)
{
    int64_t l, first, failed_roi;
    pyroi_status status =
        checked != PYROI_OK ? checked
                            : roi_align_levels_rois_copy(rois, boxes, sizeof(T), num_rois,
                                                         box_row_stride, batch_indices,
                                                         call->shapes[0][0],
                                                         call->params[0].cancel);
    if (status != PYROI_OK) {
        return status;
    }
    for (first = 0; first < num_rois && status == PYROI_OK; first += ROI_ALIGN_LEVELS_SLICE) {
        /* in slices, with a check between: a million RoIs take over 100 ms */
        const int64_t count = num_rois - first < ROI_ALIGN_LEVELS_SLICE ? num_rois - first
                                                                        : ROI_ALIGN_LEVELS_SLICE;
        status = pyroi_cancel_check(&rois->copy.cancel)
                     ? PYROI_E_CANCELLED
                     : PYROI_TYPED(pyroi_fpn_levels)((const T *)rois->copy.boxes + 4 * first,
                                                     count, 4, &call->level_params,
                                                     rois->levels + first);
    }
    if (status == PYROI_OK) {
        roi_align_levels_rois_sort(rois, call->num_levels, sizeof(T));
    }
    for (l = 0; l < call->num_levels && status == PYROI_OK; ++l) {
        status = PYROI_TYPED(pyroi_roi_align_find_invalid_roi)(
            (const T *)rois->boxes + 4 * rois->start[l], rois->start[l + 1] - rois->start[l], 4,
            rois->batch_indices + rois->start[l], call->shapes[l][0], call->shapes[l][2],
            call->shapes[l][3], &call->params[l], &failed_roi);
    }
    if (status != PYROI_OK) {
        roi_align_levels_rois_free(rois);
    }
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_levels_forward)(
    int64_t num_levels, const T *const *inputs, const int64_t *input_shapes,
    const int64_t *input_strides, const double *spatial_scales,
    const T *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    const pyroi_fpn_level_params *level_params, const pyroi_roi_align_params *params)
{
    roi_align_levels_call call;
    roi_align_levels_rois rois;
    int64_t l, i, c, ph, pw;
    pyroi_status status = roi_align_levels_check_call(
        &call, num_levels, (const void *const *)inputs, input_shapes, input_strides,
        spatial_scales, PYROI_TENSOR_INPUT, output, output_strides, PYROI_TENSOR_OUTPUT, boxes,
        num_rois, box_row_stride, batch_indices, level_params, params);
    status = PYROI_TYPED(roi_align_levels_prepare)(status, &rois, &call, boxes, num_rois,
                                                   box_row_stride, batch_indices);
    if (status != PYROI_OK) {
        return status;
    }
    /* a RoI of no level (negative area) gets zeros, as in torchvision */
    for (i = rois.start[num_levels]; i < num_rois; ++i) {
        for (c = 0; c < call.shapes[0][1]; ++c) {
            T *bins = output + rois.rows[i] * call.pooled_strides[0] +
                      c * call.pooled_strides[1];
            for (ph = 0; ph < call.params[0].pooled_height; ++ph) {
                for (pw = 0; pw < call.params[0].pooled_width; ++pw) {
                    bins[ph * call.pooled_strides[2] + pw * call.pooled_strides[3]] = (T)0;
                }
            }
        }
    }
    for (l = 0; l < num_levels && status == PYROI_OK; ++l) {
        status = PYROI_TYPED(pyroi_roi_align_forward_rows)(
            (const T *)call.maps[l], call.shapes[l], call.strides[l],
            (const T *)rois.boxes + 4 * rois.start[l], rois.start[l + 1] - rois.start[l], 4,
            rois.batch_indices + rois.start[l], rois.rows + rois.start[l], output,
            call.pooled_strides, &call.params[l]);
    }
    roi_align_levels_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_levels_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    int64_t num_levels, T *const *grad_inputs, const int64_t *grad_input_shapes,
    const int64_t *grad_input_strides, const double *spatial_scales,
    const pyroi_fpn_level_params *level_params, const pyroi_roi_align_params *params)
{
    roi_align_levels_call call;
    roi_align_levels_rois rois;
    int64_t l;
    pyroi_status status = roi_align_levels_check_call(
        &call, num_levels, (const void *const *)grad_inputs, grad_input_shapes,
        grad_input_strides, spatial_scales, PYROI_TENSOR_OUTPUT, grad_output,
        grad_output_strides, PYROI_TENSOR_INPUT, boxes, num_rois, box_row_stride,
        batch_indices, level_params, params);
    status = PYROI_TYPED(roi_align_levels_prepare)(status, &rois, &call, boxes, num_rois,
                                                   box_row_stride, batch_indices);
    if (status != PYROI_OK) {
        return status;
    }
    /* each map is overwritten: zeroed, then the RoIs of its level added in their order */
    for (l = 0; l < num_levels && status == PYROI_OK; ++l) {
        status = PYROI_TYPED(pyroi_roi_align_backward_rows)(
            grad_output, call.pooled_strides, (const T *)rois.boxes + 4 * rois.start[l],
            rois.start[l + 1] - rois.start[l], 4, rois.batch_indices + rois.start[l],
            rois.rows + rois.start[l], (T *)(uintptr_t)call.maps[l], call.shapes[l],
            call.strides[l],
            &call.params[l]);
    }
    roi_align_levels_rois_free(&rois);
    return status;
}
