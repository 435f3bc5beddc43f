/* roi_align_rotated.c - rotated RoIAlign (average), forward and backward, float32 and float64
 * (detectron2 ROIAlignRotated, mmcv roi_align_rotated), and the float16 call in place
 * (roi_align_rotated_half.h). The kernel bodies are written once, in the templates
 * roi_align_rotated_dtype.h lists; the bilinear sampling is the shared one of sampling.h. */
#include "core/half.h"
#include "core/cpu.h"
#include "core/parallel.h"
#include "rotated/roi_align_rotated_half.h"
#include "core/rois.h"
#include "core/sampling.h"
#include "core/validate.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* pi as a double constant (M_PI is not C99); rounds to the same double as M_PI, so degrees
 * convert exactly as the peers' angle * M_PI / 180.0. */
#define PYROI_ROTATED_PI 3.14159265358979323846

/* In-map samples buffered per worker before they are applied to every channel. The buffer
 * holds the taps of whole bins when they fit; a larger bin is split over several flushes,
 * its running sum kept in the output element (exact: it is a T like the sum). */
#define PYROI_ROTATED_CHUNK 512
/* Most bytes of a float16 forward's float32 tile per worker (one RoI's bins of every channel),
 * of a float16 backward's record of samples, and of its float32 planes for all workers (one
 * image's plane of one channel each); beyond, the float16 call runs in chunks. */
#define PYROI_ROTATED_HALF_TILE_BYTES ((double)(64 << 20))
#define PYROI_ROTATED_HALF_TABLE_BYTES ((double)(64 << 20))
#define PYROI_ROTATED_HALF_PLANES_BYTES ((double)(256 << 20))
/* Bins (or parts of bins) per flush. */
#define PYROI_ROTATED_SEGMENTS 256
/* Along a row (or over the rows of a bin) with at most this many samples, every sample is
 * visited and tested; longer ones are narrowed to the in-map ones by bisection first. */
#define PYROI_ROTATED_BISECT_MIN 8

/* The four monotone tests of a sample against the band [-1, H] x [-1, W] the sampler reads,
 * and two more for whole rows of a bin: the row's local y lies in the RoI's row band (the local
 * y range of the map, widened by a bound on rounding; see rotated_row_band). */
enum pyroi_rotated_bound {
    PYROI_ROTATED_Y_NOT_BELOW, /* from 0: the narrowing to in-map samples loops over them */
    PYROI_ROTATED_Y_NOT_ABOVE,
    PYROI_ROTATED_X_NOT_BELOW,
    PYROI_ROTATED_X_NOT_ABOVE,
    PYROI_ROTATED_ROW_NOT_BELOW_BAND,
    PYROI_ROTATED_ROW_NOT_ABOVE_BAND,
    PYROI_ROTATED_BOUNDS /* their count */
};

void pyroi_roi_align_rotated_params_init(pyroi_roi_align_rotated_params *params)
{
    /* the fields not named are 0 (num_threads: all cores) or NULL */
    static const pyroi_roi_align_rotated_params defaults = {
        .pooled_height = 1, .pooled_width = 1, .spatial_scale_h = 1.0, .spatial_scale_w = 1.0,
        .aligned = 1, .angle_in_degrees = 1};
    if (params != NULL) {
        *params = defaults;
    }
}

/* Validation shared by forward and backward once the dtype no longer matters; then the copy
 * of the RoIs (value_bytes a coordinate) that the call reads from then on and frees. */
static pyroi_status roi_align_rotated_check_call(
    const void *features, const int64_t features_shape[4], const int64_t features_strides[4],
    pyroi_tensor_role features_role, const void *pooled, const int64_t pooled_strides[4],
    pyroi_tensor_role pooled_role, const void *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, const pyroi_roi_align_rotated_params *params,
    size_t value_bytes, pyroi_rois *rois)
{
    pyroi_status status = pyroi_check_roi_align_rotated_params(params);
    if (status == PYROI_OK) { /* the pooling checks need valid params */
        status = pyroi_check_pooling_call(features, features_shape, features_strides,
                                          features_role, pooled, pooled_strides, pooled_role, -1,
                                          params->pooled_height, params->pooled_width, boxes,
                                          num_rois, box_row_stride, 5, batch_indices);
    }
    return status != PYROI_OK ? status
                              : pyroi_rois_copy(rois, boxes, value_bytes, num_rois,
                                                box_row_stride, 5, batch_indices,
                                                features_shape[0], NULL, params->cancel);
}

/* One bin, or the part of a bin, whose samples are entries [begin, end) of a flush buffer. */
typedef struct pyroi_rotated_segment {
    int64_t bin_y;
    int64_t bin_x;
    int64_t begin;
    int64_t end;
    int continued; /* earlier samples of this bin were flushed before */
    int complete;  /* the bin's last samples are in this flush */
} pyroi_rotated_segment;

#define PYROI_DTYPE_TEMPLATE "rotated/roi_align_rotated_dtype.h"
#include "core/each_dtype.h"

/* ---- the float16 call in place (roi_align_rotated_half.h) -------------------------------- */

#if defined(PYROI_HAVE_VECTOR_CLONES)
#  include <immintrin.h>
/* A float16 forward's flush: each channel's bins of RoI k from the float16 input, every tap
 * widened exactly by one VCVTPH2PS (as pyroi_half_to_float), into the worker's float32 tile
 * (rounded once by the forward task). */
__attribute__((target("avx2,f16c"))) static inline float rotated_widen_f16c(uint16_t half)
{
    return _cvtsh_ss(half);
}

__attribute__((target("avx2,f16c"))) static int rotated_half_forward_flush(
    void *context, int64_t k, const rotated_scratch_f32 *scratch)
{
    const rotated_flush_context_f32 *fc = (const rotated_flush_context_f32 *)context;
    const rotated_job_f32 *job = fc->job;
    const int64_t *in_strides = job->tensors.features_strides;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t bins = job->params->pooled_height * pooled_width;
    const uint16_t *image = job->half_input + job->tensors.batch_indices[k] * in_strides[0];
    int64_t c;
    for (c = fc->channel_begin; c < fc->channel_end; ++c) {
        if (pyroi_cancel_requested(job->params->cancel)) {
            return 1; /* the outputs are unspecified once cancelled */
        }
        rotated_forward_bins_f32(scratch, NULL, image + c * in_strides[1], 1,
                                 rotated_widen_f16c, fc->tile + c * bins, pooled_width, 1,
                                 fc->count);
    }
    return 0;
}
#endif

/* In place only where F16C runs: the portable conversion of every tap (a dozen integer
 * operations each) made the small call's forward 2.0x the float32 call's, against 1.4x in
 * chunks, whose widening of whole runs the compiler vectorises. */
pyroi_status pyroi_roi_align_rotated_forward_half(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    const pyroi_roi_align_rotated_params *params, int *taken)
{
#if defined(PYROI_HAVE_VECTOR_CLONES)
    if (pyroi_cpu_has_f16c()) {
        return rotated_forward_call_f32(NULL, input, input_shape, input_strides, boxes,
                                        num_rois, box_row_stride, batch_indices, NULL, output,
                                        output_strides, params, rotated_half_forward_flush,
                                        taken);
    }
#else
    (void)input, (void)input_shape, (void)input_strides, (void)boxes, (void)num_rois;
    (void)box_row_stride, (void)batch_indices, (void)output, (void)output_strides, (void)params;
#endif
    *taken = 0;
    return PYROI_OK;
}

/* A float16 backward's record of every RoI's in-map samples, their tap offsets in a contiguous
 * H x W plane, made once and replayed for every channel (the float32 backward visits them
 * again for each worker and adds to every channel of its range at once). */
typedef struct rotated_half_table {
    rotated_sample_f32 *samples;
    pyroi_rotated_segment *segments; /* begin, end: indices into samples; none empty */
    int64_t sample_count, sample_capacity;
    int64_t segment_count, segment_capacity;
    int64_t *roi_segments; /* RoI k's segments: [roi_segments[k], roi_segments[k + 1]) */
    float *counts;         /* RoI k's divisor */
    int over; /* the record would pass PYROI_ROTATED_HALF_TABLE_BYTES, or memory ran out */
    /* the call's token and poll clock (in its copy of the RoIs): the record runs on the
     * calling thread, and polls */
    pyroi_call_cancel *cancel;
} rotated_half_table;

/* Makes room for needed elements of element_bytes in *array (capacity doubled); 0 when the
 * record would pass its bound (counting the other array's used_bytes) or memory runs out. */
static int rotated_half_room(void **array, int64_t *capacity, int64_t needed,
                             size_t element_bytes, double used_bytes)
{
    int64_t grown = *capacity > 0 ? *capacity : 1024;
    void *moved;
    if (needed <= *capacity) {
        return 1;
    }
    if ((double)needed * (double)element_bytes + used_bytes > PYROI_ROTATED_HALF_TABLE_BYTES) {
        return 0;
    }
    while (grown < needed) {
        grown *= 2;
    }
    if ((double)grown * (double)element_bytes + used_bytes > PYROI_ROTATED_HALF_TABLE_BYTES) {
        grown = needed;
    }
    moved = realloc(*array, (size_t)grown * element_bytes);
    if (moved == NULL) {
        return 0;
    }
    *array = moved;
    *capacity = grown;
    return 1;
}

/* The recording flush: appends the buffered samples and their bins' segments to the table. */
static int rotated_half_record(void *context, int64_t k, const rotated_scratch_f32 *scratch)
{
    rotated_half_table *table = (rotated_half_table *)context;
    int64_t s;
    (void)k;
    if (table->over ||
        !rotated_half_room((void **)&table->samples, &table->sample_capacity,
                           table->sample_count + scratch->sample_count,
                           sizeof(rotated_sample_f32),
                           (double)table->segment_capacity * sizeof(pyroi_rotated_segment)) ||
        !rotated_half_room((void **)&table->segments, &table->segment_capacity,
                           table->segment_count + scratch->segment_count,
                           sizeof(pyroi_rotated_segment),
                           (double)table->sample_capacity * sizeof(rotated_sample_f32))) {
        table->over = 1;
        return 1; /* no room: the visit ends, the call takes the chunks */
    }
    memcpy(table->samples + table->sample_count, scratch->samples,
           (size_t)scratch->sample_count * sizeof(rotated_sample_f32));
    for (s = 0; s < scratch->segment_count; ++s) {
        pyroi_rotated_segment segment = scratch->segments[s];
        if (segment.begin == segment.end) {
            continue; /* a bin without in-map samples adds nothing */
        }
        segment.begin += table->sample_count;
        segment.end += table->sample_count;
        table->segments[table->segment_count++] = segment;
    }
    table->sample_count += scratch->sample_count;
    return pyroi_cancel_check(table->cancel); /* a chunk of samples: about 10 us */
}

static void rotated_half_table_free(rotated_half_table *table)
{
    free(table->samples);
    free(table->segments);
    free(table->roi_segments);
    free(table->counts);
}

/* Records every RoI's samples (the RoIs as checked by the scan; their copy's clock advances
 * with the polls). PYROI_OK with table->over set: the record would pass its bound. */
static pyroi_status rotated_half_table_make(rotated_half_table *table, pyroi_rois *rois,
                                            int64_t height, int64_t width,
                                            const pyroi_roi_align_rotated_params *params)
{
    const int64_t num_rois = rois->num_rois;
    rotated_scratch_f32 scratch;
    int64_t k;
    memset(table, 0, sizeof(*table));
    table->cancel = &rois->cancel;
    scratch.samples = (rotated_sample_f32 *)malloc(PYROI_ROTATED_CHUNK *
                                                   sizeof(rotated_sample_f32));
    scratch.segments = (pyroi_rotated_segment *)malloc(PYROI_ROTATED_SEGMENTS *
                                                       sizeof(pyroi_rotated_segment));
    table->roi_segments = (int64_t *)malloc((size_t)(num_rois + 1) * sizeof(int64_t));
    table->counts = (float *)malloc((size_t)(num_rois > 0 ? num_rois : 1) * sizeof(float));
    if (scratch.samples == NULL || scratch.segments == NULL || table->roi_segments == NULL ||
        table->counts == NULL) {
        free(scratch.samples);
        free(scratch.segments);
        return PYROI_E_NO_MEMORY;
    }
    for (k = 0; k < num_rois && !table->over; ++k) {
        rotated_roi_f32 roi;
        if (pyroi_cancel_requested(params->cancel)) {
            break; /* also after a RoI whose visit a poll ended */
        }
        table->roi_segments[k] = table->segment_count;
        table->counts[k] = 1.0f;
        if (rotated_roi_geometry_f32((const float *)rois->boxes + k * 5, params, height, width,
                                     &roi) != PYROI_OK) {
            continue; /* unreachable: every box was checked before the call */
        }
        /* as the float32 backward: unclamped (an empty grid has no samples) */
        table->counts[k] = (float)(roi.rows.grid * roi.cols.grid);
        rotated_visit_f32(&roi, width, 1, &scratch, rotated_half_record, table, k);
    }
    table->roi_segments[k] = table->segment_count;
    free(scratch.samples);
    free(scratch.segments);
    return pyroi_cancel_requested(params->cancel) && !table->over ? PYROI_E_CANCELLED
                                                                   : PYROI_OK;
}

/* The replay of a float16 backward: the record, the RoIs of each image in order, the float16
 * tensors and each worker's float32 plane. */
typedef struct rotated_half_backward {
    const rotated_half_table *table;
    const int64_t *order;       /* RoI indices, image by image, each image's in order */
    const int64_t *image_first; /* image n's: order[image_first[n] .. image_first[n + 1]) */
    const uint16_t *grad_output;
    const int64_t *grad_output_strides;
    uint16_t *grad_input;
    const int64_t *shape; /* grad_input's */
    const int64_t *strides;
    float *planes; /* worker w's at planes + w * H * W */
    pyroi_cancel *cancel;
} rotated_half_backward;

/* Channels [begin, end): for each image, its RoIs' gradients added into the worker's float32
 * plane (from +0.0, in the float32 backward's order of RoIs, bins, samples and taps: every
 * pixel's sum is the float32 call's), rounded once into grad_input. */
static void rotated_half_backward_task(void *context, int64_t begin, int64_t end, int worker)
{
    const rotated_half_backward *job = (const rotated_half_backward *)context;
    const rotated_half_table *table = job->table;
    const int64_t *go = job->grad_output_strides;
    const int64_t pixels = job->shape[2] * job->shape[3];
    float *plane = job->planes + worker * pixels;
    int64_t c, n, i;
    for (c = begin; c < end; ++c) {
        for (n = 0; n < job->shape[0]; ++n) {
            if (pyroi_cancel_requested(job->cancel)) {
                return;
            }
            memset(plane, 0, (size_t)pixels * sizeof(float));
            for (i = job->image_first[n]; i < job->image_first[n + 1]; ++i) {
                const int64_t k = job->order[i];
                const int64_t first = table->roi_segments[k];
                rotated_backward_segments_f32(plane, NULL, job->grad_output + k * go[0] +
                                                               c * go[1],
                                              go[2], go[3], table->segments + first,
                                              table->roi_segments[k + 1] - first,
                                              table->samples, table->counts[k]);
            }
            pyroi_half_round_planes(plane, 1, job->shape[2], job->shape[3],
                                    job->grad_input + n * job->strides[0] + c * job->strides[1],
                                    job->strides);
        }
    }
}

/* The replay over the channels: the RoIs put in image order (a counting sort, stable), the
 * planes allocated (within their bound, else *taken 0), the task run. */
static pyroi_status rotated_half_backward_run(rotated_half_backward *job,
                                              const pyroi_rois *rois, int num_threads,
                                              int *taken)
{
    const int64_t num_rois = rois->num_rois, images = job->shape[0];
    const double pixels = (double)job->shape[2] * (double)job->shape[3];
    const double work_per_channel =
        (double)images * pixels * 2.0 + 4.0 * (double)job->table->sample_count;
    const int workers = pyroi_parallel_workers(num_threads, job->shape[1], work_per_channel);
    int64_t *order = (int64_t *)malloc((size_t)(num_rois > 0 ? num_rois : 1) * sizeof(int64_t));
    int64_t *image_first = (int64_t *)calloc((size_t)images + 1, sizeof(int64_t));
    pyroi_status status = PYROI_E_NO_MEMORY;
    int64_t k, n;
    *taken = pixels * (double)workers * sizeof(float) <= PYROI_ROTATED_HALF_PLANES_BYTES;
    job->planes = *taken ? (float *)pyroi_aligned_malloc((size_t)pixels * (size_t)workers *
                                                          sizeof(float))
                         : NULL;
    if (*taken && order != NULL && image_first != NULL && job->planes != NULL) {
        for (k = 0; k < num_rois; ++k) {
            ++image_first[rois->batch_indices[k] + 1];
        }
        for (n = 0; n < images; ++n) {
            image_first[n + 1] += image_first[n];
        }
        for (k = 0; k < num_rois; ++k) { /* image_first[n] advances past image n's RoIs */
            order[image_first[rois->batch_indices[k]]++] = k;
        }
        for (n = images; n > 0; --n) {
            image_first[n] = image_first[n - 1];
        }
        image_first[0] = 0;
        job->order = order;
        job->image_first = image_first;
        status = pyroi_parallel_for(workers, job->shape[1], work_per_channel, job->cancel,
                                    rotated_half_backward_task, job);
    } else if (!*taken) {
        status = PYROI_OK;
    }
    pyroi_aligned_free(job->planes);
    free(image_first);
    free(order);
    return status;
}

pyroi_status pyroi_roi_align_rotated_backward_half(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_align_rotated_params *params,
    int *taken)
{
    rotated_half_backward job;
    rotated_half_table table;
    pyroi_rois rois;
    double mean_work;
    int64_t failed_roi;
    pyroi_status status = roi_align_rotated_check_call(
        grad_input, grad_input_shape, grad_input_strides, PYROI_TENSOR_OUTPUT, grad_output,
        grad_output_strides, PYROI_TENSOR_INPUT, boxes, num_rois, box_row_stride, batch_indices,
        params, sizeof(float), &rois);
    *taken = 1;
    if (status != PYROI_OK) {
        return status;
    }
    status = rotated_scan_boxes_f32((const float *)rois.boxes, num_rois, 5, grad_input_shape[2],
                                    grad_input_shape[3], params, &rois.cancel, &mean_work,
                                    &failed_roi);
    /* nothing to write with an empty grad_input (which may then be NULL) */
    if (status == PYROI_OK && !pyroi_shape_is_empty(grad_input_shape)) {
        status = rotated_half_table_make(&table, &rois, grad_input_shape[2],
                                         grad_input_shape[3], params);
        *taken = !table.over;
        if (status == PYROI_OK && *taken) {
            job.table = &table;
            job.grad_output = grad_output;
            job.grad_output_strides = grad_output_strides;
            job.grad_input = grad_input;
            job.shape = grad_input_shape;
            job.strides = grad_input_strides;
            job.cancel = params->cancel;
            status = rotated_half_backward_run(&job, &rois, params->num_threads, taken);
        }
        rotated_half_table_free(&table);
    }
    pyroi_rois_free(&rois);
    return status;
}
