/* roi_align_rotated_template.h - rotated RoIAlign (average), forward and backward: the job,
 * the flush functions that apply a RoI's visited samples to the channels (the math, in
 * detectron2's / mmcv's order), the tasks, the box scan and the entry points. Included by
 * roi_align_rotated_dtype.h after roi_align_rotated_geometry_template.h. */

#include "job_tensors_template.h"

/* Everything a worker needs; a worker only adds its own index to pick its scratch. */
typedef struct PYROI_TYPED(rotated_job) {
    PYROI_TYPED(job_tensors) tensors;
    const pyroi_roi_align_rotated_params *params;
    PYROI_TYPED(rotated_scratch) *scratch; /* one per worker */
} PYROI_TYPED(rotated_job);

/* What a flush needs besides the samples: the job, the channel range and the RoI's divisor. */
typedef struct PYROI_TYPED(rotated_flush_context) {
    const PYROI_TYPED(rotated_job) *job;
    int64_t channel_begin;
    int64_t channel_end;
    T count;
} PYROI_TYPED(rotated_flush_context);

/* Forward flush: adds the buffered samples to each channel's bins in sample order; a bin's
 * running sum lives in its output element until its last sample, then it is divided. */
static void PYROI_TYPED(rotated_forward_flush)(void *context, int64_t k,
                                               const PYROI_TYPED(rotated_scratch) *scratch)
{
    const PYROI_TYPED(rotated_flush_context) *fc =
        (const PYROI_TYPED(rotated_flush_context) *)context;
    const PYROI_TYPED(rotated_job) *job = fc->job;
    const int64_t *in_strides = job->tensors.features_strides;
    const int64_t *out_strides = job->tensors.result_strides;
    T *PYROI_RESTRICT output = job->tensors.result;
    int64_t c, s, j;

    for (c = fc->channel_begin; c < fc->channel_end; ++c) {
        const T *plane = job->tensors.features + job->tensors.batch_indices[k] * in_strides[0] +
                         c * in_strides[1];
        T *out = output + k * out_strides[0] + c * out_strides[1];
        for (s = 0; s < scratch->segment_count; ++s) {
            const pyroi_rotated_segment *segment = &scratch->segments[s];
            T *bin = out + segment->bin_y * out_strides[2] + segment->bin_x * out_strides[3];
            T sum = segment->continued ? *bin : (T)0;
            for (j = segment->begin; j < segment->end; ++j) {
                const PYROI_TYPED(rotated_sample) *p = &scratch->samples[j];
                sum += p->weight[0] * plane[p->offset[0]] + p->weight[1] * plane[p->offset[1]] +
                       p->weight[2] * plane[p->offset[2]] + p->weight[3] * plane[p->offset[3]];
            }
            *bin = segment->complete ? sum / fc->count : sum;
        }
    }
}

/* Backward flush: scatters (g * w) / count to the four taps of each buffered sample, four
 * separate additions, for each channel of the worker's range. */
static void PYROI_TYPED(rotated_backward_flush)(void *context, int64_t k,
                                                const PYROI_TYPED(rotated_scratch) *scratch)
{
    const PYROI_TYPED(rotated_flush_context) *fc =
        (const PYROI_TYPED(rotated_flush_context) *)context;
    const PYROI_TYPED(rotated_job) *job = fc->job;
    const int64_t *grad_strides = job->tensors.features_strides;
    const int64_t *in_strides = job->tensors.result_strides;
    T *PYROI_RESTRICT grad_input = job->tensors.result;
    const T count = fc->count;
    int64_t c, s, j;

    for (c = fc->channel_begin; c < fc->channel_end; ++c) {
        T *plane =
            grad_input + job->tensors.batch_indices[k] * in_strides[0] + c * in_strides[1];
        const T *grad = job->tensors.features + k * grad_strides[0] + c * grad_strides[1];
        for (s = 0; s < scratch->segment_count; ++s) {
            const pyroi_rotated_segment *segment = &scratch->segments[s];
            const T g = grad[segment->bin_y * grad_strides[2] + segment->bin_x * grad_strides[3]];
            for (j = segment->begin; j < segment->end; ++j) {
                const PYROI_TYPED(rotated_sample) *p = &scratch->samples[j];
                plane[p->offset[0]] += g * p->weight[0] / count;
                plane[p->offset[1]] += g * p->weight[1] / count;
                plane[p->offset[2]] += g * p->weight[2] / count;
                plane[p->offset[3]] += g * p->weight[3] / count;
            }
        }
    }
}

static void PYROI_TYPED(rotated_forward_task)(void *context, int64_t begin, int64_t end,
                                              int worker)
{
    const PYROI_TYPED(rotated_job) *job = (const PYROI_TYPED(rotated_job) *)context;
    PYROI_TYPED(rotated_flush_context) fc;
    int64_t k;
    fc.job = job;
    fc.channel_begin = 0;
    fc.channel_end = job->tensors.features_shape[1];
    for (k = begin; k < end; ++k) {
        PYROI_TYPED(rotated_roi) roi;
        int64_t samples;
        if (PYROI_TYPED(rotated_roi_geometry)(
                job->tensors.boxes + k * job->tensors.box_row_stride, job->params,
                job->tensors.features_shape[2], job->tensors.features_shape[3],
                &roi) != PYROI_OK) {
            continue; /* unreachable: every box was checked before the call */
        }
        samples = roi.rows.grid * roi.cols.grid; /* < 2^62: each grid < 2^31 */
        fc.count = (T)(samples > 1 ? samples : 1); /* empty grid: output 0, not NaN */
        PYROI_TYPED(rotated_visit)(&roi, job->tensors.features_strides[2],
                                   job->tensors.features_strides[3], &job->scratch[worker],
                                   PYROI_TYPED(rotated_forward_flush), &fc, k);
    }
}

/* Backward for input channels [begin, end): zeroes those planes of every image, then adds
 * every RoI's contributions in order, so the result does not depend on the thread split. */
static void PYROI_TYPED(rotated_backward_task)(void *context, int64_t begin, int64_t end,
                                               int worker)
{
    const PYROI_TYPED(rotated_job) *job = (const PYROI_TYPED(rotated_job) *)context;
    const int64_t *shape = job->tensors.result_shape;
    const int64_t *strides = job->tensors.result_strides;
    T *PYROI_RESTRICT grad_input = job->tensors.result;
    PYROI_TYPED(rotated_flush_context) fc;
    int64_t k;

    if (pyroi_zero_channels(grad_input, sizeof(T), shape, strides, begin, end,
                            job->params->cancel)) {
        return;
    }
    fc.job = job;
    fc.channel_begin = begin;
    fc.channel_end = end;
    for (k = 0; k < job->tensors.num_rois; ++k) {
        PYROI_TYPED(rotated_roi) roi;
        if (k % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
            break; /* an item (channels) holds every RoI */
        }
        if (PYROI_TYPED(rotated_roi_geometry)(
                job->tensors.boxes + k * job->tensors.box_row_stride, job->params, shape[2],
                shape[3], &roi) != PYROI_OK) {
            continue; /* unreachable: every box was checked before the call */
        }
        /* unclamped: an empty grid has no samples, so nothing divides by it */
        fc.count = (T)(roi.rows.grid * roi.cols.grid);
        PYROI_TYPED(rotated_visit)(&roi, strides[2], strides[3], &job->scratch[worker],
                                   PYROI_TYPED(rotated_backward_flush), &fc, k);
    }
}

/* Checks every box; on failure *failed_roi is the offending RoI. *mean_work receives a rough
 * per-RoI cost (coordinate and tap work, per channel) for choosing the thread count. Batch
 * indices were checked before. */
static pyroi_status PYROI_TYPED(rotated_scan_boxes)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride, int64_t height, int64_t width,
    const pyroi_roi_align_rotated_params *params, double *mean_work, int64_t *failed_roi)
{
    /* with adaptive grids a sample covers at least about a quarter pixel, so the in-map
     * samples of a RoI are about 4 (H + 3)(W + 3) at most */
    const double map_samples = 4.0 * ((double)height + 3.0) * ((double)width + 3.0);
    double total = 0.0;
    int64_t k;
    *failed_roi = -1;
    *mean_work = 0.0;
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(rotated_roi) roi;
        double samples;
        const pyroi_status status = pyroi_box_scan_verdict(
            PYROI_TYPED(rotated_roi_geometry)(boxes + k * box_row_stride, params, height, width,
                                              &roi),
            params->cancel, k, failed_roi);
        if (status != PYROI_OK) {
            return status;
        }
        samples = (double)params->pooled_height * (double)params->pooled_width *
                  (double)roi.rows.grid * (double)roi.cols.grid;
        total += (samples < map_samples ? samples : map_samples) +
                 (double)params->pooled_height * (double)params->pooled_width;
    }
    if (num_rois > 0) {
        *mean_work = total / (double)num_rois;
    }
    return PYROI_OK;
}

/* Allocates per-worker scratch, runs task over item_count items, frees. */
static pyroi_status PYROI_TYPED(rotated_run)(PYROI_TYPED(rotated_job) *job, pyroi_range_task task,
                                             int64_t item_count, double work_per_item)
{
    PYROI_TYPED(rotated_scratch) scratch[PYROI_PARALLEL_MAX_WORKERS];
    const size_t sample_bytes = PYROI_ROTATED_CHUNK * sizeof(PYROI_TYPED(rotated_sample));
    const size_t segment_bytes = PYROI_ROTATED_SEGMENTS * sizeof(pyroi_rotated_segment);
    const int workers = pyroi_parallel_workers(job->params->num_threads, item_count,
                                               work_per_item);
    pyroi_status status;
    char *block;
    int i;

    /* one block for all workers: samples first (the stricter alignment), then segments */
    block = (char *)malloc((size_t)workers * (sample_bytes + segment_bytes));
    if (block == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    for (i = 0; i < workers; ++i) {
        scratch[i].samples = (PYROI_TYPED(rotated_sample) *)(block + (size_t)i * sample_bytes);
        scratch[i].segments = (pyroi_rotated_segment *)(block + (size_t)workers * sample_bytes +
                                                        (size_t)i * segment_bytes);
        scratch[i].sample_count = 0;
        scratch[i].segment_count = 0;
    }
    job->scratch = scratch;
    status = pyroi_parallel_for(workers, item_count, work_per_item, job->params->cancel, task,
                                job);
    free(block);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_rotated_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    const pyroi_roi_align_rotated_params *params)
{
    PYROI_TYPED(rotated_job) job;
    pyroi_rois rois;
    double mean_work;
    int64_t failed_roi;
    pyroi_status status = roi_align_rotated_check_call(
        input, input_shape, input_strides, PYROI_TENSOR_INPUT, output, output_strides,
        PYROI_TENSOR_OUTPUT, boxes, num_rois, box_row_stride, batch_indices, params, sizeof(T),
        &rois);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(rotated_scan_boxes)((const T *)rois.boxes, num_rois, 5, input_shape[2],
                                             input_shape[3], params, &mean_work, &failed_roi);
    if (status == PYROI_OK && num_rois > 0 && input_shape[1] > 0) {
        /* a map without pixels may be NULL */
        input = (const T *)pyroi_data_or_placeholder(input);
        PYROI_TYPED(job_tensors_init)(&job.tensors, input, input_shape, input_strides, &rois,
                                      output, NULL, output_strides);
        job.params = params;
        /* work per RoI: its samples' coordinates, then every channel reads their taps */
        status = PYROI_TYPED(rotated_run)(&job, PYROI_TYPED(rotated_forward_task), num_rois,
                                          ((double)input_shape[1] + 4.0) * (mean_work + 1.0));
    }
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_rotated_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_rotated_params *params)
{
    PYROI_TYPED(rotated_job) job;
    pyroi_rois rois;
    double mean_work;
    int64_t failed_roi;
    pyroi_status status = roi_align_rotated_check_call(
        grad_input, grad_input_shape, grad_input_strides, PYROI_TENSOR_OUTPUT, grad_output,
        grad_output_strides, PYROI_TENSOR_INPUT, boxes, num_rois, box_row_stride, batch_indices,
        params, sizeof(T), &rois);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(rotated_scan_boxes)((const T *)rois.boxes, num_rois, 5,
                                             grad_input_shape[2], grad_input_shape[3], params,
                                             &mean_work, &failed_roi);
    /* nothing to write with an empty grad_input (which may then be NULL) */
    if (status == PYROI_OK && !pyroi_shape_is_empty(grad_input_shape)) {
        PYROI_TYPED(job_tensors_init)(&job.tensors, grad_output, NULL, grad_output_strides,
                                      &rois, grad_input, grad_input_shape, grad_input_strides);
        job.params = params;
        /* work per channel: zero N planes, then every RoI scatters its samples (each worker
         * also recomputes the samples' coordinates) */
        status = PYROI_TYPED(rotated_run)(
            &job, PYROI_TYPED(rotated_backward_task), grad_input_shape[1],
            (double)grad_input_shape[0] * (double)grad_input_shape[2] *
                    (double)grad_input_shape[3] +
                (double)num_rois * 5.0 * (mean_work + 1.0));
    }
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_rotated_find_invalid_roi)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_roi_align_rotated_params *params, int64_t *failed_roi)
{
    double mean_work;
    const pyroi_status status = pyroi_find_invalid_batch_index(
        pyroi_check_roi_align_rotated_params(params), boxes, num_rois, box_row_stride, 5,
        batch_indices, num_images, height, width, failed_roi);
    if (status != PYROI_OK) {
        return status;
    }
    return PYROI_TYPED(rotated_scan_boxes)(boxes, num_rois, box_row_stride, height, width,
                                           params, &mean_work, failed_roi);
}
