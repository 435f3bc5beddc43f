/* ps_roi_pool_template.h - PSRoIPool (torchvision's ps_roi_pool), forward and backward: the
 * quantised bin windows, the box scan, the tasks and the entry points. Included by
 * ps_roi_dtype.h after ps_roi_job_template.h. */

/* One RoI quantised to whole pixels: where bin 0 starts and the (real) size of a bin. */
typedef struct PYROI_TYPED(ps_pool_roi) {
    int64_t start_y;
    int64_t start_x;
    T bin_h;
    T bin_w;
} PYROI_TYPED(ps_pool_roi);

/* A RoI is accepted when its corners are finite before and after scaling. */
static int PYROI_TYPED(ps_pool_box_is_valid)(const T *box,
                                             const pyroi_ps_roi_pool_params *params)
{
    const T scale_h = (T)params->spatial_scale_h, scale_w = (T)params->spatial_scale_w;
    return isfinite(box[0]) && isfinite(box[1]) && isfinite(box[2]) && isfinite(box[3]) &&
           isfinite(box[0] * scale_w) && isfinite(box[1] * scale_h) &&
           isfinite(box[2] * scale_w) && isfinite(box[3] * scale_h);
}

/* torchvision's quantisation: corners scaled in T and rounded half away from zero (in T by
 * the forward, in float by the backward), size max(end - start, 1) - no "+ 1" - and bins of
 * size / pooled bins, computed in T. */
static PYROI_TYPED(ps_pool_roi) PYROI_TYPED(ps_pool_quantise)(
    const T *box, const pyroi_ps_roi_pool_params *params, int backward)
{
    const T scale_h = (T)params->spatial_scale_h, scale_w = (T)params->spatial_scale_w;
    const T x1 = box[0] * scale_w, y1 = box[1] * scale_h;
    const T x2 = box[2] * scale_w, y2 = box[3] * scale_h;
    PYROI_TYPED(ps_pool_roi) roi;
    int64_t start_x, start_y, end_x, end_y, width, height;
    if (backward) {
        start_x = ps_pool_round_narrowed((double)x1);
        start_y = ps_pool_round_narrowed((double)y1);
        end_x = ps_pool_round_narrowed((double)x2);
        end_y = ps_pool_round_narrowed((double)y2);
    } else {
        start_x = ps_pool_saturate((double)PYROI_ROUND(x1));
        start_y = ps_pool_saturate((double)PYROI_ROUND(y1));
        end_x = ps_pool_saturate((double)PYROI_ROUND(x2));
        end_y = ps_pool_saturate((double)PYROI_ROUND(y2));
    }
    width = end_x - start_x;
    height = end_y - start_y;
    if (width < 1) {
        width = 1;
    }
    if (height < 1) {
        height = 1;
    }
    roi.start_x = start_x;
    roi.start_y = start_y;
    roi.bin_w = (T)width / (T)params->pooled_width;
    roi.bin_h = (T)height / (T)params->pooled_height;
    return roi;
}

/* Pixels [*first, *end) of bin b along one axis: floor(b * bin) ... ceil((b + 1) * bin)
 * shifted by the RoI start, each clamped to [0, limit] (limit = extent - 1 in the forward,
 * extent in the backward: torchvision's asymmetry). */
static void PYROI_TYPED(ps_pool_bin_window)(T bin_size, int64_t start, int64_t bin,
                                            int64_t limit, int64_t *first, int64_t *end)
{
    int64_t lo = (int64_t)PYROI_FLOOR((T)bin * bin_size) + start;
    int64_t hi = (int64_t)PYROI_CEIL((T)(bin + 1) * bin_size) + start;
    lo = lo < 0 ? 0 : lo;
    hi = hi < 0 ? 0 : hi;
    *first = lo > limit ? limit : lo;
    *end = hi > limit ? limit : hi;
}

/* Checks every box; *max_area estimates the largest window area of a RoI (for the thread
 * heuristic only). On failure *failed_roi is the offending RoI. */
static pyroi_status PYROI_TYPED(ps_roi_pool_scan_boxes)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride, int64_t height, int64_t width,
    const pyroi_ps_roi_pool_params *params, pyroi_call_cancel *cancel, double *max_area,
    int64_t *failed_roi)
{
    int64_t k;
    *max_area = 0.0;
    *failed_roi = -1;
    for (k = 0; k < num_rois; ++k) {
        const T *box = boxes + k * box_row_stride;
        PYROI_TYPED(ps_pool_roi) roi;
        double rows, cols;
        const pyroi_status status = pyroi_box_scan_verdict(
            PYROI_TYPED(ps_pool_box_is_valid)(box, params) ? PYROI_OK : PYROI_E_INVALID_BOX,
            cancel, k, failed_roi);
        if (status != PYROI_OK) {
            return status;
        }
        roi = PYROI_TYPED(ps_pool_quantise)(box, params, 0);
        rows = (double)roi.bin_h * (double)params->pooled_height + 1.0;
        cols = (double)roi.bin_w * (double)params->pooled_width + 1.0;
        rows = rows < (double)height ? rows : (double)height;
        cols = cols < (double)width ? cols : (double)width;
        if (rows * cols > *max_area) {
            *max_area = rows * cols;
        }
    }
    return PYROI_OK;
}

/* The sum, in row-major order (torchvision's), of pixels [h_first, h_end) x [w_first, w_end)
 * of a plane at element offset `at` of the map: T values, or (widen not NULL, T float) the
 * float16 ones of half, each widened exactly as it is read; the widening is off the
 * additions' dependency chain, which sets the loop's pace. */
PYROI_CLONE_INLINE T PYROI_TYPED(ps_pool_window_sum)(const T *map, const uint16_t *half,
                                                     pyroi_widen_fn widen, int64_t at,
                                                     const int64_t strides[4], int64_t h_first,
                                                     int64_t h_end, int64_t w_first,
                                                     int64_t w_end)
{
    T sum = (T)0;
    int64_t h, w;
    if (widen != NULL) {
        for (h = h_first; h < h_end; ++h) {
            for (w = w_first; w < w_end; ++w) {
                sum += (T)widen(half[at + h * strides[2] + w * strides[3]]);
            }
        }
        return sum;
    }
    for (h = h_first; h < h_end; ++h) {
        for (w = w_first; w < w_end; ++w) {
            sum += map[at + h * strides[2] + w * strides[3]];
        }
    }
    return sum;
}

/* Forward for RoIs [roi_begin, roi_end), of a float16 job with widen (see
 * ps_pool_window_sum) and narrow (each average rounded once to float16), else of a T one. */
PYROI_CLONE_INLINE void PYROI_TYPED(ps_roi_pool_forward_rois)(const PYROI_TYPED(ps_job) *job,
                                                              int64_t roi_begin, int64_t roi_end,
                                                              pyroi_widen_fn widen,
                                                              ps_narrow_fn narrow)
{
    const int64_t *in_shape = job->tensors.features_shape;
    const int64_t *in_strides = job->tensors.features_strides;
    const int64_t *out_strides = job->tensors.result_strides;
    const int64_t pooled_height = job->pooled_height, pooled_width = job->pooled_width;
    /* parts: a window's pixels times the output channels (parallel.h) */
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(job->pool->cancel, 1);
    int64_t k, c_out, ph, pw;

    for (k = roi_begin; k < roi_end; ++k) {
        const PYROI_TYPED(ps_pool_roi) roi =
            PYROI_TYPED(ps_pool_quantise)(job->tensors.boxes + k * job->tensors.box_row_stride,
                                          job->pool, 0);
        const int64_t image = job->tensors.batch_indices[k] * in_strides[0];
        for (ph = 0; ph < pooled_height; ++ph) {
            int64_t h_first, h_end;
            PYROI_TYPED(ps_pool_bin_window)(roi.bin_h, roi.start_y, ph, in_shape[2] - 1, &h_first,
                                            &h_end);
            for (pw = 0; pw < pooled_width; ++pw) {
                int64_t w_first, w_end;
                int empty;
                T area;
                PYROI_TYPED(ps_pool_bin_window)(roi.bin_w, roi.start_x, pw, in_shape[3] - 1,
                                                &w_first, &w_end);
                empty = h_end <= h_first || w_end <= w_first;
                if (pyroi_cancel_count_work(&countdown,
                                            (empty ? 1 : (h_end - h_first) * (w_end - w_first)) *
                                                job->channels_out)) {
                    return; /* the outputs are unspecified once cancelled */
                }
                area = empty ? (T)1 : (T)((h_end - h_first) * (w_end - w_first));
                for (c_out = 0; c_out < job->channels_out; ++c_out) {
                    const int64_t c_in = (c_out * pooled_height + ph) * pooled_width + pw;
                    const int64_t out = k * out_strides[0] + c_out * out_strides[1] +
                                        ph * out_strides[2] + pw * out_strides[3];
                    const T sum = PYROI_TYPED(ps_pool_window_sum)(
                        job->tensors.features, job->half_features, widen,
                        image + c_in * in_strides[1], in_strides, h_first, h_end, w_first,
                        w_end);
                    const T value = empty ? (T)0 : sum / area;
                    if (widen != NULL) {
                        job->half_result[out] = narrow((float)value);
                    } else {
                        job->tensors.result[out] = value;
                    }
                }
            }
        }
    }
}

static void PYROI_TYPED(ps_roi_pool_forward_task)(void *context, int64_t roi_begin,
                                                  int64_t roi_end, int worker)
{
    (void)worker;
    PYROI_TYPED(ps_roi_pool_forward_rois)((const PYROI_TYPED(ps_job) *)context, roi_begin,
                                          roi_end, NULL, NULL);
}

/* Adds the gradients of every RoI's bins of output channels [c_begin, c_end) into planes,
 * where input channel c_in of image n is at n * strides[0] + (c_in - channel0) * strides[1]
 * (rows strides[2], columns strides[3] apart): each RoI (in order) spreads grad / area evenly
 * over its bins' backward windows. The gradients are T values, or (widen not NULL, T float)
 * the float16 ones of job->half_features, widened exactly. The worker's column windows are
 * job->col_windows + worker * 2 * PW. */
PYROI_CLONE_INLINE void PYROI_TYPED(ps_roi_pool_add_grads)(const PYROI_TYPED(ps_job) *job,
                                                           int worker, int64_t c_begin,
                                                           int64_t c_end, T *planes,
                                                           int64_t channel0,
                                                           const int64_t strides[4],
                                                           pyroi_widen_fn widen)
{
    const int64_t *in_shape = job->tensors.result_shape;
    const int64_t *g_strides = job->tensors.features_strides;
    const int64_t pooled_height = job->pooled_height, pooled_width = job->pooled_width;
    int64_t *col_windows = job->col_windows + (int64_t)worker * 2 * pooled_width;
    /* parts: a window's pixels times the output channels (parallel.h) */
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(job->pool->cancel, 1);
    int64_t k, c_out, ph, pw, h, w;

    for (k = 0; k < job->tensors.num_rois; ++k) {
        const PYROI_TYPED(ps_pool_roi) roi =
            PYROI_TYPED(ps_pool_quantise)(job->tensors.boxes + k * job->tensors.box_row_stride,
                                          job->pool, 1);
        T *image = planes + job->tensors.batch_indices[k] * strides[0];
        const int64_t grad_roi = k * g_strides[0];
        if (k % 8 == 0 && pyroi_cancel_requested(job->pool->cancel)) {
            break; /* an item (channel) holds every RoI */
        }
        for (pw = 0; pw < pooled_width; ++pw) {
            PYROI_TYPED(ps_pool_bin_window)(roi.bin_w, roi.start_x, pw, in_shape[3],
                                            &col_windows[2 * pw], &col_windows[2 * pw + 1]);
        }
        for (ph = 0; ph < pooled_height; ++ph) {
            int64_t h_first, h_end;
            PYROI_TYPED(ps_pool_bin_window)(roi.bin_h, roi.start_y, ph, in_shape[2], &h_first,
                                            &h_end);
            if (h_end <= h_first) {
                continue;
            }
            for (pw = 0; pw < pooled_width; ++pw) {
                const int64_t w_first = col_windows[2 * pw], w_end = col_windows[2 * pw + 1];
                T area;
                if (w_end <= w_first) {
                    continue;
                }
                if (pyroi_cancel_count_work(&countdown, (h_end - h_first) * (w_end - w_first) *
                                                            (c_end - c_begin))) {
                    return; /* grad_input is unspecified once cancelled */
                }
                area = (T)((h_end - h_first) * (w_end - w_first));
                for (c_out = c_begin; c_out < c_end; ++c_out) {
                    const int64_t c_in = (c_out * pooled_height + ph) * pooled_width + pw;
                    const int64_t at = grad_roi + c_out * g_strides[1] + ph * g_strides[2] +
                                       pw * g_strides[3];
                    T *PYROI_RESTRICT plane = image + (c_in - channel0) * strides[1];
                    const T share = (widen != NULL ? (T)widen(job->half_features[at])
                                                   : job->tensors.features[at]) /
                                    area;
                    for (h = h_first; h < h_end; ++h) {
                        for (w = w_first; w < w_end; ++w) {
                            plane[h * strides[2] + w * strides[3]] += share;
                        }
                    }
                }
            }
        }
    }
}

/* Backward for output channels [c_begin, c_end) (ps_backward_channels). */
static void PYROI_TYPED(ps_roi_pool_backward_task)(void *context, int64_t c_begin,
                                                   int64_t c_end, int worker)
{
    PYROI_TYPED(ps_backward_channels)(context, c_begin, c_end, worker,
                                      PYROI_TYPED(ps_roi_pool_add_grads));
}

/* The forward on T tensors, or (half_input and half_output not NULL, T float) on float16
 * ones read and written in place by task (ps_roi_half.h). */
static pyroi_status PYROI_TYPED(ps_roi_pool_forward_call)(
    const T *input, const uint16_t *half_input, const int64_t input_shape[4],
    const int64_t input_strides[4], const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, T *output, uint16_t *half_output,
    const int64_t output_strides[4], const pyroi_ps_roi_pool_params *params,
    pyroi_range_task task)
{
    PYROI_TYPED(ps_job) job;
    pyroi_rois rois;
    int64_t failed_roi;
    double max_area;
    double work_per_item;
    int workers;
    pyroi_status status = pyroi_check_ps_roi_pool_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    const int half = half_output != NULL;
    status = ps_check_call(half, input, half_input, input_shape, input_strides,
                           PYROI_TENSOR_INPUT, output, half_output, output_strides,
                           PYROI_TENSOR_OUTPUT, boxes, num_rois, box_row_stride, batch_indices,
                           params->pooled_height, params->pooled_width, sizeof(T), &rois,
                           params->cancel);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(ps_roi_pool_scan_boxes)((const T *)rois.boxes, num_rois, 4,
                                                 input_shape[2], input_shape[3], params,
                                                 &rois.cancel, &max_area, &failed_roi);
    if (status == PYROI_OK && num_rois > 0 && input_shape[1] > 0) {
        /* a map without pixels may be NULL */
        PYROI_TYPED(ps_job_init)(&job, (const T *)pyroi_data_or_placeholder(input), input_shape,
                                 input_strides, &rois, output, NULL, output_strides,
                                 params->pooled_height, params->pooled_width, input_shape[1]);
        job.pool = params;
        if (half) {
            job.half_features = (const uint16_t *)pyroi_data_or_placeholder(half_input);
            job.half_result = half_output;
        }
        /* work per RoI: each output channel reads about the RoI's area (bins overlap) */
        work_per_item = (double)job.channels_out *
                        (max_area + (double)params->pooled_height * (double)params->pooled_width);
        workers = pyroi_parallel_workers(params->num_threads, num_rois, work_per_item);
        status = pyroi_parallel_for(workers, num_rois, work_per_item, params->cancel, task,
                                    &job);
    }
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_ps_roi_pool_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    const pyroi_ps_roi_pool_params *params)
{
    return PYROI_TYPED(ps_roi_pool_forward_call)(input, NULL, input_shape, input_strides, boxes,
                                                 num_rois, box_row_stride, batch_indices,
                                                 output, NULL, output_strides, params,
                                                 PYROI_TYPED(ps_roi_pool_forward_task));
}

/* The backward on T tensors, or (half_grad_output and half_grad_input not NULL, T float) on
 * float16 ones read and written in place by task, which adds into the job's float32 planes
 * (ps_roi_half.h); taken is NULL for T tensors, else receives whether the call ran. */
static pyroi_status PYROI_TYPED(ps_roi_pool_backward_call)(
    const T *grad_output, const uint16_t *half_grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    T *grad_input, uint16_t *half_grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_ps_roi_pool_params *params,
    pyroi_range_task task, int *taken)
{
    PYROI_TYPED(ps_job) job;
    pyroi_rois rois;
    int64_t failed_roi;
    double max_area, group;
    double work_per_item;
    int workers;
    const int half = half_grad_input != NULL;
    pyroi_status status = pyroi_check_ps_roi_pool_params(params);
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
    status = PYROI_TYPED(ps_roi_pool_scan_boxes)((const T *)rois.boxes, num_rois, 4,
                                                 grad_input_shape[2], grad_input_shape[3],
                                                 params, &rois.cancel, &max_area, &failed_roi);
    /* nothing to write with an empty grad_input (which may then be NULL) */
    if (status == PYROI_OK && !pyroi_shape_is_empty(grad_input_shape)) {
        PYROI_TYPED(ps_job_init)(&job, grad_output, NULL, grad_output_strides, &rois,
                                 grad_input, grad_input_shape, grad_input_strides,
                                 params->pooled_height, params->pooled_width,
                                 grad_input_shape[1]);
        job.pool = params;
        group = (double)params->pooled_height * (double)params->pooled_width;
        /* work per output channel: zero PH * PW planes of every image, then every RoI
         * writes about its area once */
        work_per_item = group * (double)grad_input_shape[0] * (double)grad_input_shape[2] *
                            (double)grad_input_shape[3] +
                        (double)num_rois * (max_area + group);
        workers = pyroi_parallel_workers(params->num_threads, job.channels_out, work_per_item);
        if (half) {
            job.half_features = half_grad_output;
            job.half_result = half_grad_input;
            *taken = PYROI_TYPED(ps_half_planes_alloc)(&job, workers);
        }
        /* PW <= C here (C is a nonzero multiple of PH * PW): no overflow */
        job.col_windows = (int64_t *)malloc((size_t)workers * 2u *
                                            (size_t)params->pooled_width * sizeof(int64_t));
        if (job.col_windows == NULL) {
            status = PYROI_E_NO_MEMORY;
        } else if (!half || *taken) {
            status = pyroi_parallel_for(workers, job.channels_out, work_per_item,
                                        params->cancel, task, &job);
        }
        free(job.col_windows);
        pyroi_aligned_free(job.half_planes);
    }
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_ps_roi_pool_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_ps_roi_pool_params *params)
{
    return PYROI_TYPED(ps_roi_pool_backward_call)(
        grad_output, NULL, grad_output_strides, boxes, num_rois, box_row_stride, batch_indices,
        grad_input, NULL, grad_input_shape, grad_input_strides, params,
        PYROI_TYPED(ps_roi_pool_backward_task), NULL);
}

pyroi_status PYROI_TYPED(pyroi_ps_roi_pool_find_invalid_roi)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images,
    const pyroi_ps_roi_pool_params *params, int64_t *failed_roi)
{
    int64_t k;
    /* the calls test every batch index before any box: report in the same order */
    const pyroi_status status = pyroi_find_invalid_batch_index(
        pyroi_check_ps_roi_pool_params(params), boxes, num_rois, box_row_stride, 4,
        batch_indices, num_images, 0, 0, failed_roi);
    if (status != PYROI_OK) {
        return status;
    }
    for (k = 0; k < num_rois; ++k) {
        if (!PYROI_TYPED(ps_pool_box_is_valid)(boxes + k * box_row_stride, params)) {
            *failed_roi = k;
            return PYROI_E_INVALID_BOX;
        }
    }
    return PYROI_OK;
}
