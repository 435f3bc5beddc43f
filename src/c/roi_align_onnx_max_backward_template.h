/* roi_align_onnx_max_backward_template.h - the gradient of ONNX RoiAlign mode="max" (pyroi.h,
 * pyroi_roi_align_onnx_max_forward_argmax_* and pyroi_roi_align_onnx_max_backward_*),
 * included by roi_align.c after roi_align_template.h once per dtype with T and
 * PYROI_TYPED(name) defined.
 *
 * The forward (roi_align_onnx_max_bin, and per lane roi_align_onnx_max_roi) records each
 * output's winning term as the code 4 * s + t: tap t of sample s of its bin. The backward sends the output gradient g to that
 * one tap, g * w_t with the weight the forward multiplied by -- the derivative of the forward
 * as computed. An out-of-map sample's term is 0 * P[0, 0] (onnxruntime's pre-computed form:
 * pixel (0, 0), weight 0), so its gradient is g * 0 at pixel (0, 0), like any weight-0 tap.
 * The plan, tap tables, validation and channel split are the max backward's
 * (roi_align_max_like_backward); only the per-bin rule is here. */

/* Channels [begin, end), one at a time (its planes of every image stay in cache): zero them,
 * then add g * w at each bin's winning tap, RoI by RoI and bin by bin in order, so every pixel
 * sees the same additions whatever the channel split. */
static void PYROI_TYPED(roi_align_onnx_max_backward_task)(void *context, int64_t begin,
                                                          int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_max_job) *max_job =
        (const PYROI_TYPED(roi_align_max_job) *)context;
    const PYROI_TYPED(roi_align_job) *job = &max_job->base;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *go_strides = job->features_strides, *gi_strides = job->result_strides;
    const int64_t *a = max_job->argmax_strides;
    const int64_t *shape = job->map_shape;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    int64_t n, k, c, h, w, ph, pw;
    (void)worker;

    for (c = begin; c < end; ++c) {
        for (n = 0; n < shape[0]; ++n) {
            T *plane = job->result + n * gi_strides[0] + c * gi_strides[1];
            for (h = 0; h < shape[2]; ++h) {
                for (w = 0; w < shape[3]; ++w) {
                    plane[h * gi_strides[2] + w * gi_strides[3]] = (T)0;
                }
            }
        }
        for (k = 0; k < plan->num_rois; ++k) {
            const PYROI_TYPED(roi_align_tap_tables) tables =
                PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
            const int64_t grid_w = max_job->grid_w[k];
            T *plane = job->result + job->batch_indices[k] * gi_strides[0] + c * gi_strides[1];
            if (grid_w <= 0) {
                continue; /* empty bins only */
            }
            for (ph = 0; ph < pooled_height; ++ph) {
                const pyroi_tap_range rr = tables.row_ranges[ph];
                for (pw = 0; pw < pooled_width; ++pw) {
                    const pyroi_tap_range cr = tables.col_ranges[pw];
                    /* read once; validated before, and re-checked below where it addresses */
                    const int64_t code =
                        max_job->argmax_const[k * a[0] + c * a[1] + ph * a[2] + pw * a[3]];
                    const T g = job->features[k * go_strides[0] + c * go_strides[1] +
                                              ph * go_strides[2] + pw * go_strides[3]];
                    int64_t iy, ix;
                    if (code < 0) {
                        continue; /* an empty bin */
                    }
                    iy = code / 4 / grid_w - rr.first_sample;
                    ix = code / 4 % grid_w - cr.first_sample;
                    if (iy < 0 || iy >= rr.end - rr.begin || ix < 0 || ix >= cr.end - cr.begin) {
                        /* an out-of-map sample won: its term is 0 * P[0, 0] */
                        plane[0] += g * (T)0;
                    } else {
                        const PYROI_TYPED(axis_tap) ty = tables.row_taps[rr.begin + iy];
                        const PYROI_TYPED(axis_tap) tx = tables.col_taps[cr.begin + ix];
                        const int64_t tap = code % 4;
                        const int64_t row = tap < 2 ? ty.lo : ty.hi;
                        const int64_t col = tap % 2 == 0 ? tx.lo : tx.hi;
                        /* the forward's weight products, w1..w4 */
                        const T weight = (tap < 2 ? ty.w_lo : ty.w_hi) *
                                         (tap % 2 == 0 ? tx.w_lo : tx.w_hi);
                        plane[row * gi_strides[2] + col * gi_strides[3]] += g * weight;
                    }
                }
            }
        }
    }
}

pyroi_status PYROI_TYPED(pyroi_roi_align_onnx_max_forward_argmax)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_align_params *params)
{
    roi_align_forward_tasks tasks;
    tasks.direct = PYROI_TYPED(roi_align_onnx_max_forward_task);
    tasks.region = PYROI_TYPED(roi_align_onnx_max_forward_region_task);
    tasks.image = PYROI_TYPED(roi_align_onnx_max_forward_image_task);
    return PYROI_TYPED(roi_align_max_like_forward)(
        input, input_shape, input_strides, boxes, num_rois, box_row_stride, batch_indices,
        output, output_strides, argmax, argmax_strides, 4, params, &tasks);
}

pyroi_status PYROI_TYPED(pyroi_roi_align_onnx_max_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params)
{
    return PYROI_TYPED(roi_align_max_like_backward)(
        grad_output, grad_output_strides, argmax, argmax_strides, 4, boxes, num_rois,
        box_row_stride, batch_indices, grad_input, grad_input_shape, grad_input_strides, params,
        PYROI_TYPED(roi_align_onnx_max_backward_task));
}
