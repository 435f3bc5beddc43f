/* ps_roi_align_template.h - PSRoIAlign (torchvision's ps_roi_align), forward and backward:
 * a RoI's sampling grids and tap tables (the one sampler of sampling_template.h), the box
 * scan, the tasks and the entry points. Included by ps_roi_dtype.h after
 * ps_roi_job_template.h. */

/* The row and column sampling grids of one RoI (box = x1, y1, x2, y2): torchvision's
 * ps_roi_align always shifts by half a pixel and never enlarges small RoIs. */
static pyroi_status PYROI_TYPED(ps_roi_align_axes)(const T *box,
                                                   const pyroi_ps_roi_align_params *params,
                                                   int64_t height, int64_t width,
                                                   PYROI_TYPED(ps_sample_axis) *rows,
                                                   PYROI_TYPED(ps_sample_axis) *cols)
{
    pyroi_status status = PYROI_TYPED(pyroi_sample_axis_from_edges)(
        box[1], box[3], params->spatial_scale_h, (T)0.5, 0, params->pooled_height,
        params->sampling_ratio, height, rows);
    if (status != PYROI_OK) {
        return status;
    }
    return PYROI_TYPED(pyroi_sample_axis_from_edges)(
        box[0], box[2], params->spatial_scale_w, (T)0.5, 0, params->pooled_width,
        params->sampling_ratio, width, cols);
}

/* Checks every box (finite, grid not too large) and, if size_tables, sizes the tap tables
 * (a walk over every bin: skipped when nothing will be computed, so that an empty output
 * with a huge output size costs nothing); on failure *failed_roi is the offending RoI.
 * Batch indices are checked by the caller. */
static pyroi_status PYROI_TYPED(ps_roi_align_scan_boxes)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride, int64_t height, int64_t width,
    const pyroi_ps_roi_align_params *params, pyroi_call_cancel *cancel, int size_tables,
    int64_t *max_row_taps, int64_t *max_col_taps, int64_t *failed_roi)
{
    int64_t k;
    *max_row_taps = 0;
    *max_col_taps = 0;
    *failed_roi = -1;
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(ps_sample_axis) rows, cols;
        int64_t n;
        const pyroi_status status = pyroi_box_scan_verdict(
            PYROI_TYPED(ps_roi_align_axes)(boxes + k * box_row_stride, params, height, width,
                                           &rows, &cols),
            cancel, k, failed_roi);
        if (status != PYROI_OK) {
            return status;
        }
        if (!size_tables) {
            continue;
        }
        n = PYROI_TYPED(pyroi_axis_tap_count)(&rows);
        if (n > *max_row_taps) {
            *max_row_taps = n;
        }
        n = PYROI_TYPED(pyroi_axis_tap_count)(&cols);
        if (n > *max_col_taps) {
            *max_col_taps = n;
        }
    }
    return PYROI_OK;
}

/* One block holding a set of tap tables per worker; *block is what to free. */
static pyroi_status PYROI_TYPED(ps_tap_tables_alloc)(PYROI_TYPED(ps_tap_tables) *tables,
                                                     int workers, int64_t pooled_height,
                                                     int64_t pooled_width, int64_t max_row_taps,
                                                     int64_t max_col_taps, void **block)
{
    const size_t range_size = sizeof(pyroi_tap_range);
    const size_t tap_size = sizeof(PYROI_TYPED(ps_axis_tap));
    /* bounds every count so that the byte sizes below cannot overflow size_t */
    const uint64_t limit = (uint64_t)SIZE_MAX / 8 / PYROI_PARALLEL_MAX_WORKERS /
                           (tap_size > range_size ? tap_size : range_size);
    size_t per_worker;
    char *bytes;
    int i;
    if ((uint64_t)pooled_height > limit || (uint64_t)pooled_width > limit ||
        (uint64_t)max_row_taps > limit || (uint64_t)max_col_taps > limit) {
        return PYROI_E_NO_MEMORY;
    }
    /* taps first in each worker's part: theirs is the stricter alignment, and both sizes
     * are multiples of 8, so every part starts aligned */
    per_worker = ((size_t)max_row_taps + (size_t)max_col_taps) * tap_size +
                 ((size_t)pooled_height + (size_t)pooled_width) * range_size;
    bytes = (char *)malloc(per_worker * (size_t)workers + 1);
    if (bytes == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    *block = bytes;
    for (i = 0; i < workers; ++i) {
        char *part = bytes + per_worker * (size_t)i;
        tables[i].row_taps = (PYROI_TYPED(ps_axis_tap) *)part;
        tables[i].col_taps = tables[i].row_taps + max_row_taps;
        tables[i].row_ranges = (pyroi_tap_range *)(tables[i].col_taps + max_col_taps);
        tables[i].col_ranges = tables[i].row_ranges + pooled_height;
    }
    return PYROI_OK;
}

/* Builds the tap tables of one (already validated) RoI; returns its samples per bin,
 * grid_h * grid_w, 0 when an axis has none. */
static int64_t PYROI_TYPED(ps_tap_tables_fill)(PYROI_TYPED(ps_tap_tables) *tables, const T *box,
                                               const pyroi_ps_roi_align_params *params,
                                               int64_t height, int64_t width)
{
    PYROI_TYPED(ps_sample_axis) rows, cols;
    (void)PYROI_TYPED(ps_roi_align_axes)(box, params, height, width, &rows, &cols);
    PYROI_TYPED(pyroi_axis_tap_table)(&rows, tables->row_ranges, tables->row_taps);
    PYROI_TYPED(pyroi_axis_tap_table)(&cols, tables->col_ranges, tables->col_taps);
    return rows.grid * cols.grid;
}

/* Forward for RoIs [roi_begin, roi_end): every output channel and bin of each, of a float16
 * job with widen (see pyroi_bilinear_bin_sum) and narrow (each average rounded once to
 * float16), else of a T one. */
PYROI_CLONE_INLINE void PYROI_TYPED(ps_roi_align_forward_rois)(const PYROI_TYPED(ps_job) *job,
                                                               int64_t roi_begin,
                                                               int64_t roi_end, int worker,
                                                               pyroi_widen_fn widen,
                                                               ps_narrow_fn narrow)
{
    PYROI_TYPED(ps_tap_tables) *tables = &job->tables[worker];
    const int64_t *in_shape = job->tensors.features_shape;
    const int64_t *in_strides = job->tensors.features_strides;
    const int64_t *out_strides = job->tensors.result_strides;
    const int64_t pooled_height = job->pooled_height, pooled_width = job->pooled_width;
    int64_t k, c_out, ph, pw;

    for (k = roi_begin; k < roi_end; ++k) {
        const int64_t samples = PYROI_TYPED(ps_tap_tables_fill)(
            tables, job->tensors.boxes + k * job->tensors.box_row_stride, job->align,
            in_shape[2], in_shape[3]);
        /* no samples: the sum is 0 and so is the output (torchvision: 0/0 = NaN, or -0.0
         * for the negative count of a box inverted on one axis) */
        const T count = (T)(samples > 0 ? samples : 1);
        const int64_t image = job->tensors.batch_indices[k] * in_strides[0];
        pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(job->align->cancel,
                                                                     samples);
        for (c_out = 0; c_out < job->channels_out; ++c_out) {
            for (ph = 0; ph < pooled_height; ++ph) {
                const pyroi_tap_range rr = tables->row_ranges[ph];
                for (pw = 0; pw < pooled_width; ++pw) {
                    const int64_t c_in = (c_out * pooled_height + ph) * pooled_width + pw;
                    const int64_t plane = image + c_in * in_strides[1];
                    if (pyroi_cancel_count(&countdown)) {
                        return; /* the outputs are unspecified once cancelled */
                    }
                    const int64_t out = k * out_strides[0] + c_out * out_strides[1] +
                                        ph * out_strides[2] + pw * out_strides[3];
                    const T sum = PYROI_TYPED(pyroi_bilinear_bin_sum)(
                        widen != NULL ? NULL : job->tensors.features + plane,
                        widen != NULL ? job->half_features + plane : NULL, widen,
                        in_strides[2], in_strides[3], tables->row_taps, rr, tables->col_taps,
                        tables->col_ranges[pw]);
                    if (widen != NULL) {
                        job->half_result[out] = narrow((float)(sum / count));
                    } else {
                        job->tensors.result[out] = sum / count;
                    }
                }
            }
        }
    }
}

static void PYROI_TYPED(ps_roi_align_forward_task)(void *context, int64_t roi_begin,
                                                   int64_t roi_end, int worker)
{
    PYROI_TYPED(ps_roi_align_forward_rois)((const PYROI_TYPED(ps_job) *)context, roi_begin,
                                           roi_end, worker, NULL, NULL);
}

/* Adds the gradients of every RoI's bins of output channels [c_begin, c_end) into planes,
 * where input channel c_in of image n is at n * strides[0] + (c_in - channel0) * strides[1]
 * (rows strides[2], columns strides[3] apart), in RoI order, as torchvision does, whatever the
 * split between threads. The gradients are T values, or (widen not NULL, T float) the float16
 * ones of job->half_features, widened exactly. */
PYROI_CLONE_INLINE void PYROI_TYPED(ps_roi_align_add_grads)(const PYROI_TYPED(ps_job) *job,
                                                            int worker, int64_t c_begin,
                                                            int64_t c_end, T *planes,
                                                            int64_t channel0,
                                                            const int64_t strides[4],
                                                            pyroi_widen_fn widen)
{
    PYROI_TYPED(ps_tap_tables) *tables = &job->tables[worker];
    const int64_t *in_shape = job->tensors.result_shape;
    const int64_t *g_strides = job->tensors.features_strides;
    const int64_t pooled_height = job->pooled_height, pooled_width = job->pooled_width;
    int64_t k, c_out, ph, pw;

    for (k = 0; k < job->tensors.num_rois; ++k) {
        if (k % 8 == 0 && pyroi_cancel_requested(job->align->cancel)) {
            break; /* an item (channel) holds every RoI */
        }
        /* unclamped: a RoI without samples has no taps, so nothing divides by it */
        const T count = (T)PYROI_TYPED(ps_tap_tables_fill)(
            tables, job->tensors.boxes + k * job->tensors.box_row_stride, job->align,
            in_shape[2], in_shape[3]);
        T *image = planes + job->tensors.batch_indices[k] * strides[0];
        const int64_t grad_roi = k * g_strides[0];
        pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(job->align->cancel,
                                                                     (int64_t)count);
        for (c_out = c_begin; c_out < c_end; ++c_out) {
            for (ph = 0; ph < pooled_height; ++ph) {
                const pyroi_tap_range rr = tables->row_ranges[ph];
                for (pw = 0; pw < pooled_width; ++pw) {
                    const int64_t c_in = (c_out * pooled_height + ph) * pooled_width + pw;
                    if (pyroi_cancel_count(&countdown)) {
                        return; /* grad_input is unspecified once cancelled */
                    }
                    const int64_t at = grad_roi + c_out * g_strides[1] + ph * g_strides[2] +
                                       pw * g_strides[3];
                    const T g = widen != NULL ? (T)widen(job->half_features[at])
                                              : job->tensors.features[at];
                    PYROI_TYPED(pyroi_bilinear_bin_scatter)(
                        image + (c_in - channel0) * strides[1], strides[2], strides[3],
                        tables->row_taps, rr, tables->col_taps, tables->col_ranges[pw], g, count);
                }
            }
        }
    }
}

/* Backward for output channels [c_begin, c_end) (ps_backward_channels). */
static void PYROI_TYPED(ps_roi_align_backward_task)(void *context, int64_t c_begin,
                                                    int64_t c_end, int worker)
{
    PYROI_TYPED(ps_backward_channels)(context, c_begin, c_end, worker,
                                      PYROI_TYPED(ps_roi_align_add_grads));
}

/* Allocates per-worker tap tables (and, when taken is not NULL, a float16 backward's planes:
 * *taken receives whether they could be had; if not, nothing runs), runs task over
 * item_count items, frees. */
static pyroi_status PYROI_TYPED(ps_roi_align_run)(PYROI_TYPED(ps_job) *job, pyroi_range_task task,
                                                  int64_t item_count, double work_per_item,
                                                  int64_t max_row_taps, int64_t max_col_taps,
                                                  int *taken)
{
    PYROI_TYPED(ps_tap_tables) tables[PYROI_PARALLEL_MAX_WORKERS];
    void *block = NULL;
    const int workers = pyroi_parallel_workers(job->align->num_threads, item_count,
                                               work_per_item);
    pyroi_status status = PYROI_TYPED(ps_tap_tables_alloc)(
        tables, workers, job->pooled_height, job->pooled_width, max_row_taps, max_col_taps,
        &block);
    if (status != PYROI_OK) {
        return status;
    }
    job->tables = tables;
    if (taken != NULL) {
        *taken = PYROI_TYPED(ps_half_planes_alloc)(job, workers);
    }
    if (taken == NULL || *taken) {
        status = pyroi_parallel_for(workers, item_count, work_per_item, job->align->cancel,
                                    task, job);
    }
    pyroi_aligned_free(job->half_planes);
    free(block);
    return status;
}

/* The forward on T tensors, or (half_input and half_output not NULL, T float) on float16
 * ones read and written in place by task (ps_roi_half.h). */
static pyroi_status PYROI_TYPED(ps_roi_align_forward_call)(
    const T *input, const uint16_t *half_input, const int64_t input_shape[4],
    const int64_t input_strides[4], const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, T *output, uint16_t *half_output,
    const int64_t output_strides[4], const pyroi_ps_roi_align_params *params,
    pyroi_range_task task)
{
    PYROI_TYPED(ps_job) job;
    pyroi_rois rois;
    int64_t max_row_taps, max_col_taps, failed_roi;
    const int half = half_output != NULL;
    pyroi_status status = pyroi_check_ps_roi_align_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    status = ps_check_call(half, input, half_input, input_shape, input_strides,
                           PYROI_TENSOR_INPUT, output, half_output, output_strides,
                           PYROI_TENSOR_OUTPUT, boxes, num_rois, box_row_stride, batch_indices,
                           params->pooled_height, params->pooled_width, sizeof(T), &rois,
                           params->cancel);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(ps_roi_align_scan_boxes)((const T *)rois.boxes, num_rois, 4,
                                                  input_shape[2], input_shape[3], params,
                                                  &rois.cancel, input_shape[1] != 0, &max_row_taps,
                                                  &max_col_taps, &failed_roi);
    if (status == PYROI_OK && num_rois > 0 && input_shape[1] > 0) {
        /* a map without pixels may be NULL */
        PYROI_TYPED(ps_job_init)(&job, (const T *)pyroi_data_or_placeholder(input), input_shape,
                                 input_strides, &rois, output, NULL, output_strides,
                                 params->pooled_height, params->pooled_width, input_shape[1]);
        job.align = params;
        if (half) {
            job.half_features = (const uint16_t *)pyroi_data_or_placeholder(half_input);
            job.half_result = half_output;
        }
        /* work per RoI: each output channel reads every (row tap, column tap) pair once, a
         * sample of four taps (operations as parallel.c counts them: a tap of a channel) */
        status = PYROI_TYPED(ps_roi_align_run)(
            &job, task, num_rois,
            (double)job.channels_out *
                (4.0 * (double)max_row_taps * (double)max_col_taps +
                 (double)params->pooled_height * (double)params->pooled_width),
            max_row_taps, max_col_taps, NULL);
    }
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_ps_roi_align_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    const pyroi_ps_roi_align_params *params)
{
    return PYROI_TYPED(ps_roi_align_forward_call)(input, NULL, input_shape, input_strides,
                                                  boxes, num_rois, box_row_stride,
                                                  batch_indices, output, NULL, output_strides,
                                                  params, PYROI_TYPED(ps_roi_align_forward_task));
}

/* The backward on T tensors, or (half_grad_output and half_grad_input not NULL, T float) on
 * float16 ones read and written in place by task, which adds into the job's float32 planes
 * (ps_roi_half.h); taken is NULL for T tensors, else receives whether the call ran. */
static pyroi_status PYROI_TYPED(ps_roi_align_backward_call)(
    const T *grad_output, const uint16_t *half_grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    T *grad_input, uint16_t *half_grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_ps_roi_align_params *params,
    pyroi_range_task task, int *taken)
{
    PYROI_TYPED(ps_job) job;
    pyroi_rois rois;
    int64_t max_row_taps, max_col_taps, failed_roi;
    double group;
    const int half = half_grad_input != NULL;
    pyroi_status status = pyroi_check_ps_roi_align_params(params);
    if (taken != NULL) {
        *taken = 1;
    }
    if (status != PYROI_OK) {
        return status;
    }
    status = ps_check_call(half, grad_input, half_grad_input, grad_input_shape,
                           grad_input_strides, PYROI_TENSOR_OUTPUT, grad_output,
                           half_grad_output, grad_output_strides, PYROI_TENSOR_INPUT, boxes,
                           num_rois, box_row_stride, batch_indices, params->pooled_height,
                           params->pooled_width, sizeof(T), &rois, params->cancel);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(ps_roi_align_scan_boxes)((const T *)rois.boxes, num_rois, 4,
                                                  grad_input_shape[2], grad_input_shape[3],
                                                  params, &rois.cancel, grad_input_shape[1] != 0,
                                                  &max_row_taps, &max_col_taps, &failed_roi);
    /* nothing to write with an empty grad_input (which may then be NULL) */
    if (status == PYROI_OK && !pyroi_shape_is_empty(grad_input_shape)) {
        PYROI_TYPED(ps_job_init)(&job, grad_output, NULL, grad_output_strides, &rois,
                                 grad_input, grad_input_shape, grad_input_strides,
                                 params->pooled_height, params->pooled_width,
                                 grad_input_shape[1]);
        job.align = params;
        if (half) {
            job.half_features = half_grad_output;
            job.half_result = half_grad_input;
        }
        group = (double)params->pooled_height * (double)params->pooled_width;
        /* work per output channel: zero PH * PW planes of every image, then every RoI
         * scatters all its tap pairs once, four taps each */
        status = PYROI_TYPED(ps_roi_align_run)(
            &job, task, job.channels_out,
            group * (double)grad_input_shape[0] * (double)grad_input_shape[2] *
                    (double)grad_input_shape[3] +
                (double)num_rois * (4.0 * (double)max_row_taps * (double)max_col_taps + group),
            max_row_taps, max_col_taps, half ? taken : NULL);
    }
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_ps_roi_align_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_ps_roi_align_params *params)
{
    return PYROI_TYPED(ps_roi_align_backward_call)(
        grad_output, NULL, grad_output_strides, boxes, num_rois, box_row_stride, batch_indices,
        grad_input, NULL, grad_input_shape, grad_input_strides, params,
        PYROI_TYPED(ps_roi_align_backward_task), NULL);
}

pyroi_status PYROI_TYPED(pyroi_ps_roi_align_find_invalid_roi)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_ps_roi_align_params *params, int64_t *failed_roi)
{
    int64_t max_row_taps, max_col_taps;
    const pyroi_status status = pyroi_find_invalid_batch_index(
        pyroi_check_ps_roi_align_params(params), boxes, num_rois, box_row_stride, 4,
        batch_indices, num_images, height, width, failed_roi);
    if (status != PYROI_OK) {
        return status;
    }
    pyroi_call_cancel cancel = pyroi_call_cancel_of(params->cancel); /* params checked */
    return PYROI_TYPED(ps_roi_align_scan_boxes)(boxes, num_rois, box_row_stride, height, width,
                                                params, &cancel, 0, &max_row_taps,
                                                &max_col_taps, failed_roi);
}
