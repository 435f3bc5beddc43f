/* roi_align_template.h - RoIAlign (average) kernels, included by roi_align.c once per dtype
 * with T and PYROI_TYPED(name) defined. Semantics: SEMANTICS.md section 3; evaluation order
 * is torchvision's so that results match it bit for bit. */

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

/* Per-RoI scratch: the tap tables of one RoI, sized for the largest RoI of the call. */
typedef struct PYROI_TYPED(roi_tap_tables) {
    pyroi_tap_range *row_ranges;
    pyroi_tap_range *col_ranges;
    PYROI_TYPED(axis_tap) *row_taps;
    PYROI_TYPED(axis_tap) *col_taps;
    void *block;
} PYROI_TYPED(roi_tap_tables);

/* Checks every box (finite, grid not too large) and sizes the tap tables; on failure
 * *failed_roi is the index of the offending RoI. Batch indices were checked before. */
static pyroi_status PYROI_TYPED(roi_align_scan_boxes)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride, int64_t height, int64_t width,
    const pyroi_roi_align_params *params, int64_t *max_row_taps, int64_t *max_col_taps,
    int64_t *failed_roi)
{
    int64_t k;
    *max_row_taps = 0;
    *max_col_taps = 0;
    *failed_roi = -1;
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(sample_axis) rows, cols;
        int64_t n;
        pyroi_status status = PYROI_TYPED(roi_align_axes)(boxes + k * box_row_stride, params,
                                                          height, width, &rows, &cols);
        if (status != PYROI_OK) {
            *failed_roi = k;
            return status;
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

static pyroi_status PYROI_TYPED(roi_tap_tables_alloc)(PYROI_TYPED(roi_tap_tables) *tables,
                                                      int64_t pooled_height, int64_t pooled_width,
                                                      int64_t max_row_taps, int64_t max_col_taps)
{
    const size_t range_size = sizeof(pyroi_tap_range);
    const size_t tap_size = sizeof(PYROI_TYPED(axis_tap));
    /* every count is bounded by the validated output size or by the tap count; guard the
     * byte arithmetic against size_t overflow on 32-bit targets all the same */
    const uint64_t limit = (uint64_t)SIZE_MAX / 4 / (tap_size > range_size ? tap_size : range_size);
    char *block;
    if ((uint64_t)pooled_height > limit || (uint64_t)pooled_width > limit ||
        (uint64_t)max_row_taps > limit || (uint64_t)max_col_taps > limit) {
        return PYROI_E_NO_MEMORY;
    }
    block = (char *)malloc(((size_t)pooled_height + (size_t)pooled_width) * range_size +
                           ((size_t)max_row_taps + (size_t)max_col_taps) * tap_size + 1);
    if (block == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    tables->block = block;
    /* taps first: their alignment is the stricter one */
    tables->row_taps = (PYROI_TYPED(axis_tap) *)block;
    tables->col_taps = tables->row_taps + max_row_taps;
    tables->row_ranges = (pyroi_tap_range *)(tables->col_taps + max_col_taps);
    tables->col_ranges = tables->row_ranges + pooled_height;
    return PYROI_OK;
}

/* One set of tap tables per worker; on failure nothing stays allocated. */
static pyroi_status PYROI_TYPED(roi_tap_tables_alloc_workers)(
    PYROI_TYPED(roi_tap_tables) *tables, int workers, int64_t pooled_height,
    int64_t pooled_width, int64_t max_row_taps, int64_t max_col_taps)
{
    int i, j;
    for (i = 0; i < workers; ++i) {
        pyroi_status status = PYROI_TYPED(roi_tap_tables_alloc)(
            &tables[i], pooled_height, pooled_width, max_row_taps, max_col_taps);
        if (status != PYROI_OK) {
            for (j = 0; j < i; ++j) {
                free(tables[j].block);
            }
            return status;
        }
    }
    return PYROI_OK;
}

static void PYROI_TYPED(roi_tap_tables_free_workers)(PYROI_TYPED(roi_tap_tables) *tables,
                                                     int workers)
{
    int i;
    for (i = 0; i < workers; ++i) {
        free(tables[i].block);
    }
}

/* Builds the tap tables of one (already validated) RoI; returns its samples per bin. */
static int64_t PYROI_TYPED(roi_tap_tables_fill)(PYROI_TYPED(roi_tap_tables) *tables, const T *box,
                                                const pyroi_roi_align_params *params,
                                                int64_t height, int64_t width)
{
    PYROI_TYPED(sample_axis) rows, cols;
    (void)PYROI_TYPED(roi_align_axes)(box, params, height, width, &rows, &cols);
    PYROI_TYPED(pyroi_axis_tap_table)(&rows, tables->row_ranges, tables->row_taps);
    PYROI_TYPED(pyroi_axis_tap_table)(&cols, tables->col_ranges, tables->col_taps);
    return rows.grid * cols.grid;
}

/* Forward for RoIs [roi_begin, roi_end): every channel and bin of each. */
static void PYROI_TYPED(roi_align_forward_rois)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t box_row_stride, const int64_t *batch_indices,
    T *PYROI_RESTRICT output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params, PYROI_TYPED(roi_tap_tables) *tables,
    int64_t roi_begin, int64_t roi_end)
{
    const int64_t channels = input_shape[1];
    const int64_t row_stride = input_strides[2], col_stride = input_strides[3];
    int64_t k, c, ph, pw, r, q;

    for (k = roi_begin; k < roi_end; ++k) {
        const int64_t samples = PYROI_TYPED(roi_tap_tables_fill)(
            tables, boxes + k * box_row_stride, params, input_shape[2], input_shape[3]);
        const T count = (T)(samples > 1 ? samples : 1); /* empty grid: output 0, not NaN */
        for (c = 0; c < channels; ++c) {
            const T *plane = input + batch_indices[k] * input_strides[0] + c * input_strides[1];
            T *out = output + k * output_strides[0] + c * output_strides[1];
            for (ph = 0; ph < params->pooled_height; ++ph) {
                const pyroi_tap_range rr = tables->row_ranges[ph];
                for (pw = 0; pw < params->pooled_width; ++pw) {
                    const pyroi_tap_range cr = tables->col_ranges[pw];
                    T sum = (T)0;
                    for (r = rr.begin; r < rr.end; ++r) {
                        const PYROI_TYPED(axis_tap) ty = tables->row_taps[r];
                        const T *row_lo = plane + ty.lo * row_stride;
                        const T *row_hi = plane + ty.hi * row_stride;
                        for (q = cr.begin; q < cr.end; ++q) {
                            const PYROI_TYPED(axis_tap) tx = tables->col_taps[q];
                            const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
                            const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
                            sum += w1 * row_lo[tx.lo * col_stride] + w2 * row_lo[tx.hi * col_stride] +
                                   w3 * row_hi[tx.lo * col_stride] + w4 * row_hi[tx.hi * col_stride];
                        }
                    }
                    out[ph * output_strides[2] + pw * output_strides[3]] = sum / count;
                }
            }
        }
    }
}

/* Backward for input channels [channel_begin, channel_end): zeroes those planes of every
 * image, then adds each RoI's contributions in torchvision's order (RoI, bin, sample, tap),
 * so the result does not depend on how channels are split between threads. */
static void PYROI_TYPED(roi_align_backward_channels)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    T *PYROI_RESTRICT grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_align_params *params,
    PYROI_TYPED(roi_tap_tables) *tables, int64_t channel_begin, int64_t channel_end)
{
    const int64_t row_stride = grad_input_strides[2], col_stride = grad_input_strides[3];
    int64_t n, k, c, h, w, ph, pw, r, q;

    for (n = 0; n < grad_input_shape[0]; ++n) {
        for (c = channel_begin; c < channel_end; ++c) {
            T *plane = grad_input + n * grad_input_strides[0] + c * grad_input_strides[1];
            for (h = 0; h < grad_input_shape[2]; ++h) {
                for (w = 0; w < grad_input_shape[3]; ++w) {
                    plane[h * row_stride + w * col_stride] = (T)0;
                }
            }
        }
    }
    for (k = 0; k < num_rois; ++k) {
        /* unclamped: an empty grid has no taps, so nothing divides by it */
        const T count = (T)PYROI_TYPED(roi_tap_tables_fill)(
            tables, boxes + k * box_row_stride, params, grad_input_shape[2], grad_input_shape[3]);
        for (c = channel_begin; c < channel_end; ++c) {
            T *plane = grad_input + batch_indices[k] * grad_input_strides[0] +
                       c * grad_input_strides[1];
            const T *grad = grad_output + k * grad_output_strides[0] + c * grad_output_strides[1];
            for (ph = 0; ph < params->pooled_height; ++ph) {
                const pyroi_tap_range rr = tables->row_ranges[ph];
                for (pw = 0; pw < params->pooled_width; ++pw) {
                    const pyroi_tap_range cr = tables->col_ranges[pw];
                    const T g = grad[ph * grad_output_strides[2] + pw * grad_output_strides[3]];
                    for (r = rr.begin; r < rr.end; ++r) {
                        const PYROI_TYPED(axis_tap) ty = tables->row_taps[r];
                        T *row_lo = plane + ty.lo * row_stride;
                        T *row_hi = plane + ty.hi * row_stride;
                        for (q = cr.begin; q < cr.end; ++q) {
                            const PYROI_TYPED(axis_tap) tx = tables->col_taps[q];
                            const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
                            const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
                            /* (g * w) / count, four separate adds even where taps coincide */
                            row_lo[tx.lo * col_stride] += g * w1 / count;
                            row_lo[tx.hi * col_stride] += g * w2 / count;
                            row_hi[tx.lo * col_stride] += g * w3 / count;
                            row_hi[tx.hi * col_stride] += g * w4 / count;
                        }
                    }
                }
            }
        }
    }
}

/* Everything a worker needs; a worker only adds its own index to pick its tables. */
typedef struct PYROI_TYPED(roi_align_job) {
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
    const pyroi_roi_align_params *params;
    PYROI_TYPED(roi_tap_tables) *tables; /* one per worker */
} PYROI_TYPED(roi_align_job);

static void PYROI_TYPED(roi_align_forward_task)(void *context, int64_t begin, int64_t end,
                                                int worker)
{
    const PYROI_TYPED(roi_align_job) *job = (const PYROI_TYPED(roi_align_job) *)context;
    PYROI_TYPED(roi_align_forward_rois)(job->features, job->features_shape,
                                        job->features_strides, job->boxes, job->box_row_stride,
                                        job->batch_indices, job->result, job->result_strides,
                                        job->params, &job->tables[worker], begin, end);
}

static void PYROI_TYPED(roi_align_backward_task)(void *context, int64_t begin, int64_t end,
                                                 int worker)
{
    const PYROI_TYPED(roi_align_job) *job = (const PYROI_TYPED(roi_align_job) *)context;
    PYROI_TYPED(roi_align_backward_channels)(
        job->features, job->features_strides, job->boxes, job->num_rois, job->box_row_stride,
        job->batch_indices, job->result, job->result_shape, job->result_strides, job->params,
        &job->tables[worker], begin, end);
}

/* Allocates per-worker tables, runs task over item_count items, frees. */
static pyroi_status PYROI_TYPED(roi_align_run)(PYROI_TYPED(roi_align_job) *job,
                                               pyroi_range_task task, int64_t item_count,
                                               double work_per_item, int64_t max_row_taps,
                                               int64_t max_col_taps)
{
    PYROI_TYPED(roi_tap_tables) tables[PYROI_PARALLEL_MAX_WORKERS];
    const int workers = pyroi_parallel_workers(job->params->num_threads, item_count,
                                               work_per_item);
    pyroi_status status = PYROI_TYPED(roi_tap_tables_alloc_workers)(
        tables, workers, job->params->pooled_height, job->params->pooled_width, max_row_taps,
        max_col_taps);
    if (status != PYROI_OK) {
        return status;
    }
    job->tables = tables;
    pyroi_parallel_for(workers, item_count, task, job);
    PYROI_TYPED(roi_tap_tables_free_workers)(tables, workers);
    return PYROI_OK;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params)
{
    PYROI_TYPED(roi_align_job) job;
    int64_t max_row_taps, max_col_taps, failed_roi;
    pyroi_status status = roi_align_check_call(
        input, input_shape, input_strides, PYROI_TENSOR_INPUT, output, output_strides,
        PYROI_TENSOR_OUTPUT, boxes, num_rois, box_row_stride, batch_indices, params);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(roi_align_scan_boxes)(boxes, num_rois, box_row_stride, input_shape[2],
                                               input_shape[3], params, &max_row_taps,
                                               &max_col_taps, &failed_roi);
    if (status != PYROI_OK || num_rois == 0 || input_shape[1] == 0) {
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
    job.params = params;
    /* work per RoI: every channel reads every (row tap, column tap) pair of the RoI */
    return PYROI_TYPED(roi_align_run)(
        &job, PYROI_TYPED(roi_align_forward_task), num_rois,
        (double)input_shape[1] * ((double)max_row_taps * (double)max_col_taps + 1.0),
        max_row_taps, max_col_taps);
}

pyroi_status PYROI_TYPED(pyroi_roi_align_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params)
{
    PYROI_TYPED(roi_align_job) job;
    int64_t max_row_taps, max_col_taps, failed_roi;
    pyroi_status status = roi_align_check_call(
        grad_input, grad_input_shape, grad_input_strides, PYROI_TENSOR_OUTPUT, grad_output,
        grad_output_strides, PYROI_TENSOR_INPUT, boxes, num_rois, box_row_stride, batch_indices,
        params);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(roi_align_scan_boxes)(boxes, num_rois, box_row_stride,
                                               grad_input_shape[2], grad_input_shape[3], params,
                                               &max_row_taps, &max_col_taps, &failed_roi);
    if (status != PYROI_OK) {
        return status;
    }
    job.features = grad_output;
    job.features_shape = NULL;
    job.features_strides = grad_output_strides;
    job.boxes = boxes;
    job.num_rois = num_rois;
    job.box_row_stride = box_row_stride;
    job.batch_indices = batch_indices;
    job.result = grad_input;
    job.result_shape = grad_input_shape;
    job.result_strides = grad_input_strides;
    job.params = params;
    /* work per channel: zero N planes, then every RoI scatters all its tap pairs */
    return PYROI_TYPED(roi_align_run)(
        &job, PYROI_TYPED(roi_align_backward_task), grad_input_shape[1],
        (double)grad_input_shape[0] * (double)grad_input_shape[2] * (double)grad_input_shape[3] +
            (double)num_rois * ((double)max_row_taps * (double)max_col_taps + 1.0),
        max_row_taps, max_col_taps);
}

pyroi_status PYROI_TYPED(pyroi_roi_align_find_invalid_roi)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_roi_align_params *params, int64_t *failed_roi)
{
    int64_t k, max_row_taps, max_col_taps;
    pyroi_status status;
    if (failed_roi == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    *failed_roi = -1;
    status = pyroi_check_roi_align_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    if (num_images < 0 || height < 0 || width < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    /* num_images 0 makes every index invalid: check pointers and strides with a bound that
     * accepts all, then test the indices here to report the first offender */
    status = pyroi_check_rois(boxes, num_rois, box_row_stride, 4, batch_indices, INT64_MAX);
    if (status != PYROI_OK) {
        return status;
    }
    for (k = 0; k < num_rois; ++k) {
        if (batch_indices[k] < 0 || batch_indices[k] >= num_images) {
            *failed_roi = k;
            return PYROI_E_INVALID_BATCH_INDEX;
        }
    }
    return PYROI_TYPED(roi_align_scan_boxes)(boxes, num_rois, box_row_stride, height, width,
                                             params, &max_row_taps, &max_col_taps, failed_roi);
}
