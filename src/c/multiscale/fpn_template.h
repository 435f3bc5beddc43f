/* fpn_template.h - FPN level assignment, included by fpn.c once per dtype with T,
 * PYROI_TYPED(name), PYROI_FLOOR, PYROI_SQRT and PYROI_LOG2 defined. Arithmetic in T in
 * torchvision's order: area, sqrt, divide by the canonical scale, log2, add the canonical
 * level, add eps, floor, clamp. */

pyroi_status PYROI_TYPED(pyroi_fpn_levels)(const T *boxes, int64_t num_rois,
                                           int64_t box_row_stride,
                                           const pyroi_fpn_level_params *params,
                                           int64_t *levels)
{
    int64_t k;
    pyroi_status status = check_fpn_call(boxes, num_rois, box_row_stride, params, levels);
    if (status != PYROI_OK) {
        return status;
    }
    for (k = 0; k < num_rois; ++k) {
        const T *box = boxes + k * box_row_stride;
        if (!(isfinite(box[0]) && isfinite(box[1]) && isfinite(box[2]) && isfinite(box[3]))) {
            return PYROI_E_INVALID_BOX;
        }
    }
    for (k = 0; k < num_rois; ++k) {
        const T *box = boxes + k * box_row_stride;
        const T area = (box[2] - box[0]) * (box[3] - box[1]);
        const T side = PYROI_SQRT(area);
        const T level = PYROI_FLOOR((T)params->canonical_level +
                                    PYROI_LOG2(side / (T)params->canonical_scale) +
                                    (T)params->eps);
        if (level != level) { /* negative area: no level */
            levels[k] = -1;
        } else if (level <= (T)params->min_level) { /* also -inf: zero area */
            levels[k] = 0;
        } else if (level >= (T)params->max_level) {
            levels[k] = params->max_level - params->min_level;
        } else {
            levels[k] = (int64_t)level - params->min_level;
        }
    }
    return PYROI_OK;
}
