/* roi_align_rotated_template.h - rotated RoIAlign (average), forward and backward: the job,
 * the flush functions that apply a RoI's visited samples to the channels (the math, in
 * detectron2's / mmcv's order), the tasks, the box scan and the entry points. Included by
 * roi_align_rotated_dtype.h after roi_align_rotated_geometry_template.h. */

#include "core/job_tensors_template.h"

/* Everything a worker needs; a worker only adds its own index to pick its scratch. */
typedef struct PYROI_TYPED(rotated_job) {
    PYROI_TYPED(job_tensors) tensors;
    const pyroi_roi_align_rotated_params *params;
    PYROI_TYPED(rotated_scratch) *scratch; /* one per worker */
    /* the forward's flush; a float16 forward's (T float, roi_align_rotated_half.h) reads the
     * float16 input half_input and sums each RoI's bins into the worker's tile of tiles
     * (C x PH x PW), rounded once into the float16 output half_output */
    PYROI_TYPED(rotated_flush) forward_flush;
    const uint16_t *half_input;
    uint16_t *half_output;
    T *tiles;
} PYROI_TYPED(rotated_job);

/* What a flush needs besides the samples: the job, the channel range, the RoI's divisor and
 * (a float16 forward) the worker's tile. */
typedef struct PYROI_TYPED(rotated_flush_context) {
    const PYROI_TYPED(rotated_job) *job;
    int64_t channel_begin;
    int64_t channel_end;
    T count;
    T *tile;
} PYROI_TYPED(rotated_flush_context);

/* The forward's sums of the buffered samples, one channel: plane (or, with half, the float16
 * plane half_plane, each tap widened exactly by widen) into the bins of out (row and column
 * strides out_rs, out_cs), in sample order; a bin's running sum lives in its element until its
 * last sample, then it is divided. Written once for the float32 and float16 flushes (half and
 * widen, the shared pyroi_widen_fn of sampling.h, are constants of each caller, so each
 * inlines its own loop). */
PYROI_CLONE_INLINE void PYROI_TYPED(rotated_forward_bins)(
    const PYROI_TYPED(rotated_scratch) *scratch, const T *plane, const uint16_t *half_plane,
    int half, pyroi_widen_fn widen, T *PYROI_RESTRICT out, int64_t out_rs,
    int64_t out_cs, T count)
{
    int64_t s, j;
    for (s = 0; s < scratch->segment_count; ++s) {
        const pyroi_rotated_segment *segment = &scratch->segments[s];
        T *bin = out + segment->bin_y * out_rs + segment->bin_x * out_cs;
        T sum = segment->continued ? *bin : (T)0;
        for (j = segment->begin; j < segment->end; ++j) {
            const PYROI_TYPED(rotated_sample) *p = &scratch->samples[j];
            if (half) {
                sum += p->weight[0] * (T)widen(half_plane[p->offset[0]]) +
                       p->weight[1] * (T)widen(half_plane[p->offset[1]]) +
                       p->weight[2] * (T)widen(half_plane[p->offset[2]]) +
                       p->weight[3] * (T)widen(half_plane[p->offset[3]]);
            } else {
                sum += p->weight[0] * plane[p->offset[0]] + p->weight[1] * plane[p->offset[1]] +
                       p->weight[2] * plane[p->offset[2]] + p->weight[3] * plane[p->offset[3]];
            }
        }
        *bin = segment->complete ? sum / count : sum;
    }
}

/* Forward flush: the buffered samples' sums for each channel of the range. */
static int PYROI_TYPED(rotated_forward_flush)(void *context, int64_t k,
                                              const PYROI_TYPED(rotated_scratch) *scratch)
{
    const PYROI_TYPED(rotated_flush_context) *fc =
        (const PYROI_TYPED(rotated_flush_context) *)context;
    const PYROI_TYPED(rotated_job) *job = fc->job;
    const int64_t *in_strides = job->tensors.features_strides;
    const int64_t *out_strides = job->tensors.result_strides;
    int64_t c;

    for (c = fc->channel_begin; c < fc->channel_end; ++c) {
        if (pyroi_cancel_requested(job->params->cancel)) {
            return 1; /* the outputs are unspecified once cancelled */
        }
        PYROI_TYPED(rotated_forward_bins)(
            scratch,
            job->tensors.features + job->tensors.batch_indices[k] * in_strides[0] +
                c * in_strides[1],
            NULL, 0, NULL, job->tensors.result + k * out_strides[0] + c * out_strides[1],
            out_strides[2], out_strides[3], fc->count);
    }
    return 0;
}

/* The backward's scatter of one channel: for each segment's bin, its gradient g (of grad, or
 * with half_grad the float16 gradients widened exactly; element strides grad_rs, grad_cs),
 * (g * w) / count to the four taps of each sample, four separate additions into plane. */
PYROI_CLONE_INLINE void PYROI_TYPED(rotated_backward_segments)(
    T *PYROI_RESTRICT plane, const T *grad, const uint16_t *half_grad, int64_t grad_rs,
    int64_t grad_cs, const pyroi_rotated_segment *segments, int64_t segment_count,
    const PYROI_TYPED(rotated_sample) *samples, T count)
{
    int64_t s, j;
    for (s = 0; s < segment_count; ++s) {
        const pyroi_rotated_segment *segment = &segments[s];
        const int64_t at = segment->bin_y * grad_rs + segment->bin_x * grad_cs;
        const T g = half_grad != NULL ? (T)pyroi_half_to_float(half_grad[at]) : grad[at];
        for (j = segment->begin; j < segment->end; ++j) {
            const PYROI_TYPED(rotated_sample) *p = &samples[j];
            plane[p->offset[0]] += g * p->weight[0] / count;
            plane[p->offset[1]] += g * p->weight[1] / count;
            plane[p->offset[2]] += g * p->weight[2] / count;
            plane[p->offset[3]] += g * p->weight[3] / count;
        }
    }
}

/* Backward flush: the scatter for each channel of the worker's range. */
static int PYROI_TYPED(rotated_backward_flush)(void *context, int64_t k,
                                               const PYROI_TYPED(rotated_scratch) *scratch)
{
    const PYROI_TYPED(rotated_flush_context) *fc =
        (const PYROI_TYPED(rotated_flush_context) *)context;
    const PYROI_TYPED(rotated_job) *job = fc->job;
    const int64_t *grad_strides = job->tensors.features_strides;
    const int64_t *in_strides = job->tensors.result_strides;
    int64_t c;

    for (c = fc->channel_begin; c < fc->channel_end; ++c) {
        if (pyroi_cancel_requested(job->params->cancel)) {
            return 1; /* grad_input is unspecified once cancelled */
        }
        PYROI_TYPED(rotated_backward_segments)(
            job->tensors.result + job->tensors.batch_indices[k] * in_strides[0] +
                c * in_strides[1],
            job->tensors.features + k * grad_strides[0] + c * grad_strides[1], NULL,
            grad_strides[2], grad_strides[3], scratch->segments, scratch->segment_count,
            scratch->samples, fc->count);
    }
    return 0;
}

static void PYROI_TYPED(rotated_forward_task)(void *context, int64_t begin, int64_t end,
                                              int worker)
{
    const PYROI_TYPED(rotated_job) *job = (const PYROI_TYPED(rotated_job) *)context;
    const int64_t bins = job->params->pooled_height * job->params->pooled_width;
    const int64_t *out_strides = job->tensors.result_strides;
    PYROI_TYPED(rotated_flush_context) fc;
    int64_t k;
    fc.job = job;
    fc.channel_begin = 0;
    fc.channel_end = job->tensors.features_shape[1];
    fc.tile = job->half_output != NULL ? job->tiles + worker * fc.channel_end * bins : NULL;
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
                                   job->forward_flush, &fc, k);
        if (fc.tile != NULL && sizeof(T) == sizeof(float)) { /* each bin rounded once */
            pyroi_half_round_planes((const float *)(const void *)fc.tile, fc.channel_end,
                                    job->params->pooled_height, job->params->pooled_width,
                                    job->half_output + k * out_strides[0], out_strides);
        }
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

/* A bin's extent along an axis, for the samples per pixel (at least 2^-30 pixel). */
static double PYROI_TYPED(rotated_bin_extent)(const PYROI_TYPED(rotated_axis) *axis)
{
    const double extent = fabs((double)axis->bin_size);
    return extent > 0x1p-30 ? extent : 0x1p-30;
}

/* Checks every box; on failure *failed_roi is the offending RoI. *mean_work receives a rough
 * per-RoI cost (coordinate and tap work, per channel) for choosing the thread count. Batch
 * indices were checked before. */
static pyroi_status PYROI_TYPED(rotated_scan_boxes)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride, int64_t height, int64_t width,
    const pyroi_roi_align_rotated_params *params, pyroi_call_cancel *cancel, double *mean_work,
    int64_t *failed_roi)
{
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
            cancel, k, failed_roi);
        if (status != PYROI_OK) {
            return status;
        }
        samples = (double)params->pooled_height * (double)params->pooled_width *
                  (double)roi.rows.grid * (double)roi.cols.grid;
        /* only in-map samples cost work: at most the sampled region's area ([-1, H] x
         * [-1, W]) times the samples per pixel of the two axes, plus its border's and one
         * bin's (an adaptive grid takes 1-4 a pixel; a fixed one up to 1024 a bin, however
         * small the bin: then the RoI's own count is the bound) */
        const double per_y = (double)roi.rows.grid / PYROI_TYPED(rotated_bin_extent)(&roi.rows);
        const double per_x = (double)roi.cols.grid / PYROI_TYPED(rotated_bin_extent)(&roi.cols);
        const double area = ((double)height + 3.0) * ((double)width + 3.0);
        const double in_map = area * per_y * per_x +
                              ((double)height + (double)width + 6.0) * (per_y + per_x) +
                              (double)roi.rows.grid * (double)roi.cols.grid;
        total += (samples < in_map ? samples : in_map) +
                 (double)params->pooled_height * (double)params->pooled_width;
    }
    if (num_rois > 0) {
        *mean_work = total / (double)num_rois;
    }
    return PYROI_OK;
}

/* Allocates per-worker scratch (with tile_bytes of tiles each, job->tiles), runs task over
 * item_count items, frees. */
static pyroi_status PYROI_TYPED(rotated_run)(PYROI_TYPED(rotated_job) *job, pyroi_range_task task,
                                             int64_t item_count, double work_per_item,
                                             size_t tile_bytes)
{
    PYROI_TYPED(rotated_scratch) scratch[PYROI_PARALLEL_MAX_WORKERS];
    const size_t sample_bytes = PYROI_ROTATED_CHUNK * sizeof(PYROI_TYPED(rotated_sample));
    const size_t segment_bytes = PYROI_ROTATED_SEGMENTS * sizeof(pyroi_rotated_segment);
    const int workers = pyroi_parallel_workers(job->params->num_threads, item_count,
                                               work_per_item);
    pyroi_status status;
    char *block;
    int i;

    /* one block for all workers: samples first (the stricter alignment), then segments, then
     * tiles (the caller bounds tile_bytes) */
    block = (char *)malloc((size_t)workers * (sample_bytes + segment_bytes + tile_bytes));
    if (block == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    job->tiles = (T *)(void *)(block + (size_t)workers * (sample_bytes + segment_bytes));
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

/* The forward on T tensors, or (half_input and half_output not NULL, T float) on float16
 * ones read and written in place with the float16 flush; *taken (may be NULL for T tensors)
 * is 0 where a float16 call's tiles would pass PYROI_ROTATED_HALF_TILE_BYTES a worker,
 * nothing then read or written. */
static pyroi_status PYROI_TYPED(rotated_forward_call)(
    const T *input, const uint16_t *half_input, const int64_t input_shape[4],
    const int64_t input_strides[4], const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, T *output, uint16_t *half_output,
    const int64_t output_strides[4], const pyroi_roi_align_rotated_params *params,
    PYROI_TYPED(rotated_flush) flush, int *taken)
{
    PYROI_TYPED(rotated_job) job;
    pyroi_rois rois;
    double mean_work;
    int64_t failed_roi;
    size_t tile_bytes = 0;
    pyroi_status status = roi_align_rotated_check_call(
        half_input != NULL ? (const void *)half_input : (const void *)input, input_shape,
        input_strides, PYROI_TENSOR_INPUT,
        half_output != NULL ? (const void *)half_output : (const void *)output, output_strides,
        PYROI_TENSOR_OUTPUT, boxes, num_rois, box_row_stride, batch_indices, params, sizeof(T),
        &rois);
    if (taken != NULL) {
        *taken = 1;
    }
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(rotated_scan_boxes)((const T *)rois.boxes, num_rois, 5, input_shape[2],
                                             input_shape[3], params, &rois.cancel, &mean_work,
                                             &failed_roi);
    if (status == PYROI_OK && half_output != NULL && num_rois > 0 && input_shape[1] > 0) {
        /* one RoI's bins of every channel (the checks bound them: no overflow) */
        const double bytes = (double)input_shape[1] * (double)params->pooled_height *
                             (double)params->pooled_width * (double)sizeof(T);
        *taken = bytes <= PYROI_ROTATED_HALF_TILE_BYTES;
        tile_bytes = *taken ? (size_t)bytes : 0;
    }
    if (status == PYROI_OK && num_rois > 0 && input_shape[1] > 0 &&
        (taken == NULL || *taken)) {
        /* a map without pixels may be NULL */
        PYROI_TYPED(job_tensors_init)(&job.tensors,
                                      (const T *)pyroi_data_or_placeholder(input), input_shape,
                                      input_strides, &rois, output, NULL, output_strides);
        job.params = params;
        job.forward_flush = flush;
        job.half_input = half_output != NULL
                             ? (const uint16_t *)pyroi_data_or_placeholder(half_input)
                             : NULL;
        job.half_output = half_output;
        /* work per RoI: its samples' coordinates, then every channel reads their taps */
        status = PYROI_TYPED(rotated_run)(&job, PYROI_TYPED(rotated_forward_task), num_rois,
                                          ((double)input_shape[1] + 4.0) * (mean_work + 1.0),
                                          tile_bytes);
    }
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_rotated_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    const pyroi_roi_align_rotated_params *params)
{
    return PYROI_TYPED(rotated_forward_call)(input, NULL, input_shape, input_strides, boxes,
                                             num_rois, box_row_stride, batch_indices, output,
                                             NULL, output_strides, params,
                                             PYROI_TYPED(rotated_forward_flush), NULL);
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
                                             &rois.cancel, &mean_work, &failed_roi);
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
                (double)num_rois * 5.0 * (mean_work + 1.0),
            0);
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
    pyroi_call_cancel cancel = pyroi_call_cancel_of(params->cancel); /* params checked */
    return PYROI_TYPED(rotated_scan_boxes)(boxes, num_rois, box_row_stride, height, width,
                                           params, &cancel, &mean_work, failed_roi);
}
