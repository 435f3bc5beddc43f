/* roi_pool_template.h - RoIPool kernels, included by roi_pool.c once per dtype with T,
 * PYROI_TYPED(name), ROI_POOL_ROUND, ROI_POOL_FLOOR and ROI_POOL_CEIL defined. Semantics:
 * SEMANTICS.md section 5.1; the arithmetic is torchvision's (one rounding per operation, in
 * T) so that windows, maxima and argmax match it exactly. */

/* One axis (rows or columns) of a RoI's quantised bin grid. */
typedef struct PYROI_TYPED(roi_pool_axis) {
    int64_t start;  /* first pixel of the RoI: the rounded, scaled first edge */
    int64_t size;   /* pixels the RoI spans, end pixel included; >= 1 */
    T bin_size;     /* size / bins, in T */
    int64_t bins;   /* output bins along this axis */
    int64_t extent; /* feature map size along this axis (H or W) */
} PYROI_TYPED(roi_pool_axis);

/* A scaled coordinate rounded half away from zero (2.5 -> 3, -0.5 -> -1) to a pixel,
 * clamped in T first so that the conversion is defined for every finite value. */
static int64_t PYROI_TYPED(roi_pool_quantise)(T scaled)
{
    T rounded = ROI_POOL_ROUND(scaled);
    if (rounded < (T)-ROI_POOL_COORD_LIMIT) {
        rounded = (T)-ROI_POOL_COORD_LIMIT;
    } else if (rounded > (T)ROI_POOL_COORD_LIMIT) {
        rounded = (T)ROI_POOL_COORD_LIMIT;
    }
    return (int64_t)rounded;
}

/* The bin grid along one axis of a box with edges edge1, edge2 (input-image pixels).
 * Fails with PYROI_E_INVALID_BOX when an edge, or its product with the scale, is not
 * finite. */
static pyroi_status PYROI_TYPED(roi_pool_axis_from_edges)(T edge1, T edge2,
                                                          double spatial_scale, int64_t bins,
                                                          int64_t extent,
                                                          PYROI_TYPED(roi_pool_axis) *axis)
{
    const T scale = (T)spatial_scale;
    const T scaled1 = edge1 * scale;
    const T scaled2 = edge2 * scale;
    int64_t end;
    if (!(isfinite(edge1) && isfinite(edge2) && isfinite(scaled1) && isfinite(scaled2))) {
        return PYROI_E_INVALID_BOX;
    }
    axis->start = PYROI_TYPED(roi_pool_quantise)(scaled1);
    end = PYROI_TYPED(roi_pool_quantise)(scaled2);
    /* malformed (inverted) RoIs span one pixel, as torchvision's std::max(size, 1) */
    axis->size = end - axis->start + 1;
    if (axis->size < 1) {
        axis->size = 1;
    }
    axis->bin_size = (T)axis->size / (T)bins;
    axis->bins = bins;
    axis->extent = extent;
    return PYROI_OK;
}

/* The pixels of bin b: [floor(b * bin), ceil((b + 1) * bin)) from the RoI start, clipped to
 * [0, extent]. Both products are at most about size, so the conversions stay in range. */
static roi_pool_window PYROI_TYPED(roi_pool_bin_window)(const PYROI_TYPED(roi_pool_axis) *axis,
                                                        int64_t bin)
{
    roi_pool_window window;
    const int64_t begin = (int64_t)ROI_POOL_FLOOR((T)bin * axis->bin_size);
    const int64_t end = (int64_t)ROI_POOL_CEIL((T)(bin + 1) * axis->bin_size);
    window.begin = roi_pool_clamp(begin + axis->start, axis->extent);
    window.end = roi_pool_clamp(end + axis->start, axis->extent);
    return window;
}

/* The row and column bin grids of one RoI (box = x1, y1, x2, y2). */
static pyroi_status PYROI_TYPED(roi_pool_axes)(const T *box, const pyroi_roi_pool_params *params,
                                               int64_t height, int64_t width,
                                               PYROI_TYPED(roi_pool_axis) *rows,
                                               PYROI_TYPED(roi_pool_axis) *cols)
{
    pyroi_status status = PYROI_TYPED(roi_pool_axis_from_edges)(
        box[1], box[3], params->spatial_scale_h, params->pooled_height, height, rows);
    if (status != PYROI_OK) {
        return status;
    }
    return PYROI_TYPED(roi_pool_axis_from_edges)(box[0], box[2], params->spatial_scale_w,
                                                 params->pooled_width, width, cols);
}

/* Checks every box; on failure *failed_roi is the offending RoI. *max_area receives the
 * largest number of map pixels a RoI covers (an estimate of the work per RoI and channel). */
static pyroi_status PYROI_TYPED(roi_pool_scan_boxes)(const T *boxes, int64_t num_rois,
                                                     int64_t box_row_stride, int64_t height,
                                                     int64_t width,
                                                     const pyroi_roi_pool_params *params,
                                                     double *max_area, int64_t *failed_roi)
{
    int64_t k;
    *max_area = 0.0;
    *failed_roi = -1;
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(roi_pool_axis) rows, cols;
        double area;
        pyroi_status status = PYROI_TYPED(roi_pool_axes)(boxes + k * box_row_stride, params,
                                                         height, width, &rows, &cols);
        if (status != PYROI_OK) {
            *failed_roi = k;
            return status;
        }
        area = (double)(rows.size < height ? rows.size : height) *
               (double)(cols.size < width ? cols.size : width);
        if (area > *max_area) {
            *max_area = area;
        }
    }
    return PYROI_OK;
}

/* Forward for RoIs [roi_begin, roi_end): every channel and bin of each. windows holds
 * pooled_height + pooled_width entries. */
static void PYROI_TYPED(roi_pool_forward_rois)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t box_row_stride, const int64_t *batch_indices,
    T *PYROI_RESTRICT output, const int64_t output_strides[4],
    int64_t *PYROI_RESTRICT argmax, const int64_t argmax_strides[4],
    const pyroi_roi_pool_params *params, roi_pool_window *windows,
    int64_t roi_begin, int64_t roi_end)
{
    const int64_t channels = input_shape[1], width = input_shape[3];
    /* the running pixel pointer steps once past each row's last pixel: with one column the
     * caller's stride is arbitrary (never applied), so step by 0 there */
    const int64_t row_stride = input_strides[2], col_stride = width > 1 ? input_strides[3] : 0;
    const int64_t pooled_height = params->pooled_height, pooled_width = params->pooled_width;
    roi_pool_window *row_windows = windows;
    roi_pool_window *col_windows = windows + pooled_height;
    int64_t k, c, ph, pw, h;

    for (k = roi_begin; k < roi_end; ++k) {
        PYROI_TYPED(roi_pool_axis) rows, cols;
        /* validated before any worker started */
        (void)PYROI_TYPED(roi_pool_axes)(boxes + k * box_row_stride, params, input_shape[2],
                                         width, &rows, &cols);
        for (ph = 0; ph < pooled_height; ++ph) {
            row_windows[ph] = PYROI_TYPED(roi_pool_bin_window)(&rows, ph);
        }
        for (pw = 0; pw < pooled_width; ++pw) {
            col_windows[pw] = PYROI_TYPED(roi_pool_bin_window)(&cols, pw);
        }
        for (c = 0; c < channels; ++c) {
            const T *plane = input + batch_indices[k] * input_strides[0] + c * input_strides[1];
            T *out = output + k * output_strides[0] + c * output_strides[1];
            int64_t *winners = argmax == NULL
                                   ? NULL
                                   : argmax + k * argmax_strides[0] + c * argmax_strides[1];
            for (ph = 0; ph < pooled_height; ++ph) {
                const roi_pool_window rw = row_windows[ph];
                for (pw = 0; pw < pooled_width; ++pw) {
                    const roi_pool_window cw = col_windows[pw];
                    /* an empty bin is 0; otherwise the running maximum starts at -FLT_MAX
                     * (also for double, as torchvision) and only a strictly larger pixel
                     * replaces it: ties keep the first in row-major order, NaN never wins */
                    T best = (T)0;
                    int64_t best_index = -1;
                    if (rw.end > rw.begin && cw.end > cw.begin) {
                        best = (T)-FLT_MAX;
                        for (h = rw.begin; h < rw.end; ++h) {
                            /* a running pointer and in-plane index keep the loop simple
                             * enough for the compiler to make it branch-free */
                            const T *pixel = plane + h * row_stride + cw.begin * col_stride;
                            const int64_t row_end = h * width + cw.end;
                            int64_t index;
                            for (index = h * width + cw.begin; index < row_end; ++index) {
                                const T value = *pixel;
                                if (value > best) {
                                    best = value;
                                    best_index = index;
                                }
                                pixel += col_stride;
                            }
                        }
                    }
                    out[ph * output_strides[2] + pw * output_strides[3]] = best;
                    if (winners != NULL) {
                        winners[ph * argmax_strides[2] + pw * argmax_strides[3]] = best_index;
                    }
                }
            }
        }
    }
}

/* Backward for input channels [channel_begin, channel_end): zeroes those planes of every
 * image, then adds each RoI's gradient at its argmax pixels in torchvision's order (RoI, bin
 * row, bin column), so the result does not depend on how channels are split. */
static void PYROI_TYPED(roi_pool_backward_channels)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const int64_t *batch_indices, int64_t num_rois,
    T *PYROI_RESTRICT grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_pool_params *params,
    int64_t channel_begin, int64_t channel_end)
{
    const int64_t width = grad_input_shape[3];
    const int64_t row_stride = grad_input_strides[2], col_stride = grad_input_strides[3];
    int64_t n, k, c, h, w, ph, pw;

    for (n = 0; n < grad_input_shape[0]; ++n) {
        for (c = channel_begin; c < channel_end; ++c) {
            T *plane = grad_input + n * grad_input_strides[0] + c * grad_input_strides[1];
            for (h = 0; h < grad_input_shape[2]; ++h) {
                for (w = 0; w < width; ++w) {
                    plane[h * row_stride + w * col_stride] = (T)0;
                }
            }
        }
    }
    for (k = 0; k < num_rois; ++k) {
        for (c = channel_begin; c < channel_end; ++c) {
            T *plane = grad_input + batch_indices[k] * grad_input_strides[0] +
                       c * grad_input_strides[1];
            const T *grad = grad_output + k * grad_output_strides[0] + c * grad_output_strides[1];
            const int64_t *winners = argmax + k * argmax_strides[0] + c * argmax_strides[1];
            for (ph = 0; ph < params->pooled_height; ++ph) {
                for (pw = 0; pw < params->pooled_width; ++pw) {
                    const int64_t a = winners[ph * argmax_strides[2] + pw * argmax_strides[3]];
                    if (a >= 0) { /* validated: -1 or a pixel of the plane */
                        plane[(a / width) * row_stride + (a % width) * col_stride] +=
                            grad[ph * grad_output_strides[2] + pw * grad_output_strides[3]];
                    }
                }
            }
        }
    }
}

/* Everything a worker needs; a worker only adds its own index to pick its scratch. */
typedef struct PYROI_TYPED(roi_pool_job) {
    const T *features; /* input (forward) or grad_output (backward) */
    const int64_t *features_shape;
    const int64_t *features_strides;
    const T *boxes;
    int64_t num_rois;
    int64_t box_row_stride;
    const int64_t *batch_indices;
    T *result; /* output (forward) or grad_input (backward) */
    const int64_t *result_shape;
    const int64_t *result_strides;
    int64_t *argmax_out;      /* forward */
    const int64_t *argmax_in; /* backward */
    const int64_t *argmax_strides;
    const pyroi_roi_pool_params *params;
    roi_pool_window *windows; /* forward: pooled_height + pooled_width per worker */
} PYROI_TYPED(roi_pool_job);

static void PYROI_TYPED(roi_pool_forward_task)(void *context, int64_t begin, int64_t end,
                                               int worker)
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    const int64_t per_worker = job->params->pooled_height + job->params->pooled_width;
    PYROI_TYPED(roi_pool_forward_rois)(job->features, job->features_shape, job->features_strides,
                                       job->boxes, job->box_row_stride, job->batch_indices,
                                       job->result, job->result_strides, job->argmax_out,
                                       job->argmax_strides, job->params,
                                       job->windows + (int64_t)worker * per_worker, begin, end);
}

static void PYROI_TYPED(roi_pool_backward_task)(void *context, int64_t begin, int64_t end,
                                                int worker)
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    (void)worker;
    PYROI_TYPED(roi_pool_backward_channels)(
        job->features, job->features_strides, job->argmax_in, job->argmax_strides,
        job->batch_indices, job->num_rois, job->result, job->result_shape,
        job->result_strides, job->params, begin, end);
}

pyroi_status PYROI_TYPED(pyroi_roi_pool_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_pool_params *params)
{
    PYROI_TYPED(roi_pool_job) job;
    double max_area;
    int64_t failed_roi;
    int workers;
    pyroi_status status = roi_pool_check_forward(input, input_shape, input_strides, boxes,
                                                 num_rois, box_row_stride, batch_indices,
                                                 output, output_strides, argmax,
                                                 argmax_strides, params);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(roi_pool_scan_boxes)(boxes, num_rois, box_row_stride, input_shape[2],
                                              input_shape[3], params, &max_area, &failed_roi);
    if (status != PYROI_OK || num_rois == 0 || input_shape[1] == 0) {
        return status;
    }
    input = (const T *)pyroi_data_or_placeholder(input); /* a map without pixels may be NULL */
    /* work per RoI: every channel reads the pixels of every bin (bins overlap little) */
    workers = pyroi_parallel_workers(
        params->num_threads, num_rois,
        (double)input_shape[1] *
            ((double)params->pooled_height * (double)params->pooled_width + max_area));
    status = roi_pool_windows_alloc(&job.windows, workers, params->pooled_height,
                                    params->pooled_width);
    if (status != PYROI_OK) {
        return status;
    }
    job.features = input;
    job.features_shape = input_shape;
    job.features_strides = input_strides;
    job.boxes = boxes;
    job.num_rois = num_rois;
    job.box_row_stride = box_row_stride;
    job.batch_indices = batch_indices;
    job.result = output;
    job.result_shape = NULL;
    job.result_strides = output_strides;
    job.argmax_out = argmax;
    job.argmax_in = NULL;
    job.argmax_strides = argmax_strides;
    job.params = params;
    pyroi_parallel_for(workers, num_rois, PYROI_TYPED(roi_pool_forward_task), &job);
    free(job.windows);
    return PYROI_OK;
}

pyroi_status PYROI_TYPED(pyroi_roi_pool_find_invalid_roi)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images,
    const pyroi_roi_pool_params *params, int64_t *failed_roi)
{
    double max_area;
    int64_t k;
    pyroi_status status;
    if (failed_roi == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    *failed_roi = -1;
    status = pyroi_check_roi_pool_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    if (num_images < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    /* check pointers and strides (not the index values), then test the
     * indices here to report the first offender */
    status = pyroi_check_roi_rows(boxes, num_rois, box_row_stride, 4, batch_indices);
    if (status != PYROI_OK) {
        return status;
    }
    for (k = 0; k < num_rois; ++k) {
        if (batch_indices[k] < 0 || batch_indices[k] >= num_images) {
            *failed_roi = k;
            return PYROI_E_INVALID_BATCH_INDEX;
        }
    }
    /* the map size only matters for the work estimate */
    return PYROI_TYPED(roi_pool_scan_boxes)(boxes, num_rois, box_row_stride, 0, 0, params,
                                            &max_area, failed_roi);
}

pyroi_status PYROI_TYPED(pyroi_roi_pool_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const int64_t *batch_indices, int64_t num_rois,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params)
{
    PYROI_TYPED(roi_pool_job) job;
    int workers;
    pyroi_status status = roi_pool_check_backward(
        grad_output, grad_output_strides, argmax, argmax_strides, batch_indices, num_rois,
        grad_input, grad_input_shape, grad_input_strides, params);
    if (status != PYROI_OK) {
        return status;
    }
    if (grad_input_shape[0] == 0 || grad_input_shape[1] == 0 || grad_input_shape[2] == 0 ||
        grad_input_shape[3] == 0) {
        return PYROI_OK; /* nothing to write (grad_input may then be NULL) */
    }
    job.features = grad_output;
    job.features_shape = NULL;
    job.features_strides = grad_output_strides;
    job.boxes = NULL;
    job.num_rois = num_rois;
    job.box_row_stride = 0;
    job.batch_indices = batch_indices;
    job.result = grad_input;
    job.result_shape = grad_input_shape;
    job.result_strides = grad_input_strides;
    job.argmax_out = NULL;
    job.argmax_in = argmax;
    job.argmax_strides = argmax_strides;
    job.params = params;
    job.windows = NULL;
    /* work per channel: zero N planes, then one add per bin of every RoI */
    workers = pyroi_parallel_workers(
        params->num_threads, grad_input_shape[1],
        (double)grad_input_shape[0] * (double)grad_input_shape[2] * (double)grad_input_shape[3] +
            (double)num_rois * (double)params->pooled_height * (double)params->pooled_width);
    pyroi_parallel_for(workers, grad_input_shape[1], PYROI_TYPED(roi_pool_backward_task), &job);
    return PYROI_OK;
}
