/* half_chunks.c - the one mechanism behind every operator's float16 entry points (*_f16,
 * defined in each family's <family>_f16.c): the float32 operator runs on chunks of channels.
 *
 * Every operator's outputs are separable over channels: output channel c reads input channel
 * c only (RoIAlign, RoIPool, rotated), or output channel c of a position-sensitive operator
 * reads the PH * PW input channels from c * PH * PW on; a backward writes the map's channels
 * from the same pooled channels. So a float16 call widens the channels of one chunk
 * (exactly) into float32 scratch, runs the float32 entry point on that chunk with its result
 * in float32 scratch too - every sum accumulated in float32, in the float32 kernels' order -
 * and rounds the result once into the caller's float16 tensor; then the next chunk. The
 * extra memory is the chunks' scratch, not a float32 copy of the tensors, and the float32
 * kernels stay the only kernels. An argmax (the operators' winners, channel-independent
 * values) is written or read by the chunk's call in place, at the chunk's channels. The
 * multi-level RoIAlign's chunks hold the same channels of every level of its pyramid.
 *
 * Validation: the caller's tensors (shapes read once, strides, overlaps) are checked here
 * before any element is read; the parameters, boxes and batch indices by the float32 call of
 * the first chunk, before anything is written to the caller's memory. Only what a later
 * chunk's call alone sees - an argmax entry it reads, cancellation - can fail after earlier
 * chunks were written. */
#include "core/half_chunks.h"
#include "core/cpu.h"
#include "core/half.h"
#include "core/parallel.h"
#include "core/validate.h"

#include <string.h>

/* ---- rows of a tensor widened into, or rounded from, contiguous float32 -------------------- */

/* The planes (n, c) of a chunk of shape (N, channels, H, W): the caller's float16 tensor at
 * the chunk's first channel, with its strides, and the contiguous float32 scratch. */
typedef struct half_planes {
    const uint16_t *from; /* widened from, or */
    uint16_t *to;         /* rounded into */
    const int64_t *strides;
    float *wide;
    int64_t channels, height, width;
    int64_t merged_strides[4];
} half_planes;

/* the conversions dispatch on the CPU themselves (pyroi_half_widen_run, _round_run) */
static void half_planes_task(void *context, int64_t begin, int64_t end, int worker)
{
    const half_planes *planes = (const half_planes *)context;
    const int64_t *strides = planes->strides;
    const int64_t height = planes->height, width = planes->width;
    /* a plane whose rows follow each other is one run (the pooled tensors' 7 x 7 planes
     * would be rows of 7 elements otherwise) */
    const int whole = strides[3] == 1 && strides[2] == width;
    const int64_t rows = whole ? 1 : height, run = whole ? height * width : width;
    int64_t plane, h;
    (void)worker;
    for (plane = begin; plane < end; ++plane) {
        const int64_t offset = plane / planes->channels * strides[0] +
                               plane % planes->channels * strides[1];
        float *wide = planes->wide + plane * height * width;
        for (h = 0; h < rows; ++h) {
            const int64_t at = offset + h * strides[2];
            if (planes->from != NULL) {
                pyroi_half_widen_run(planes->from + at, strides[3], run, wide + h * width);
            } else {
                pyroi_half_round_run(wide + h * width, run, planes->to + at, strides[3]);
            }
        }
    }
}

/* Widens (from) or rounds (to) the planes of a (shape[0], channels, shape[2], shape[3])
 * chunk, with the call's threads. */
pyroi_status pyroi_half_planes_run(const uint16_t *from, uint16_t *to, const int64_t shape[4],
                                    const int64_t strides[4], int64_t channels, float *wide,
                                    int num_threads, pyroi_cancel *cancel)
{
    half_planes planes;
    int64_t count = shape[0] * channels;
    double work_per_plane = 2.0 * (double)shape[2] * (double)shape[3];
    if (count == 0 || shape[2] == 0 || shape[3] == 0) {
        return PYROI_OK;
    }
    planes.from = from;
    planes.to = to;
    planes.strides = strides;
    planes.wide = wide;
    planes.channels = channels;
    planes.height = shape[2];
    planes.width = shape[3];
    if (shape[2] * shape[3] < 256 && strides[3] == 1 && strides[2] == shape[3] &&
        strides[1] == shape[2] * shape[3]) {
        /* small consecutive planes (the pooled tensors' 7 x 7): one run per image or RoI */
        static const int64_t run_strides[4] = {0, 0, 0, 1};
        planes.merged_strides[0] = strides[0];
        memcpy(planes.merged_strides + 1, run_strides + 1, 3 * sizeof(int64_t));
        planes.strides = planes.merged_strides;
        planes.channels = 1;
        planes.height = 1;
        planes.width = channels * shape[2] * shape[3];
        count = shape[0];
        work_per_plane *= (double)channels;
    }
    return pyroi_parallel_for(pyroi_parallel_workers(num_threads, count, work_per_plane), count,
                              work_per_plane, cancel, half_planes_task, &planes);
}

#define HALF_MAX_CHUNKS 8

/* Map channels a chunk holds: what fits each worker's level 2 cache (its float32 planes), at
 * least one lane block (16 channels: the float32 kernels' vector width) per worker, so that
 * the widened planes are read back from the caches and every lane of the kernels is used;
 * a multiple of group (the map channels a pooled channel reads). */
int64_t pyroi_half_chunk_channels(const int64_t map_shape[4], int64_t group, int num_threads)
{
    const int64_t lanes = 16;
    const int64_t l2 = pyroi_cpu_l2_bytes() > 0 ? pyroi_cpu_l2_bytes() : ((int64_t)256 << 10);
    const int workers = pyroi_parallel_workers(num_threads, map_shape[1], 1e9);
    int64_t plane_bytes = 4, per_worker, channels;
    if (!pyroi_mul_nonneg(plane_bytes, map_shape[0], &plane_bytes) ||
        !pyroi_mul_nonneg(plane_bytes, map_shape[2], &plane_bytes) ||
        !pyroi_mul_nonneg(plane_bytes, map_shape[3], &plane_bytes)) {
        plane_bytes = INT64_MAX;
    }
    per_worker = l2 / (plane_bytes > 0 ? plane_bytes : 1) / lanes * lanes;
    channels = (per_worker > lanes ? per_worker : lanes) * workers;
    /* each chunk's float32 call repeats its per-call work (RoI tables, scratch): at most
     * HALF_MAX_CHUNKS calls (box head, one thread: 16 -> 8 calls, 15% fewer instructions) */
    if (channels < (map_shape[1] + HALF_MAX_CHUNKS - 1) / HALF_MAX_CHUNKS) {
        channels = ((map_shape[1] + HALF_MAX_CHUNKS - 1) / HALF_MAX_CHUNKS + lanes - 1) /
                   lanes * lanes;
    }
    if (channels >= map_shape[1]) {
        return map_shape[1];
    }
    channels += (group - channels % group) % group; /* below map_shape[1]: no overflow */
    return channels < map_shape[1] ? channels : map_shape[1];
}

/* The checks of the caller's tensors, before any element is read; *group receives the map
 * channels per pooled channel and pooled_shape the pooled tensor's shape. */
static pyroi_status half_check(const half_call *call, int64_t *group, int64_t pooled_shape[4])
{
    const pyroi_tensor_role map_role = call->backward ? PYROI_TENSOR_OUTPUT : PYROI_TENSOR_INPUT;
    const pyroi_tensor_role pooled_role =
        call->backward ? PYROI_TENSOR_INPUT : PYROI_TENSOR_OUTPUT;
    pyroi_status status;
    *group = 1;
    if (call->position_sensitive &&
        (!pyroi_mul_nonneg(call->pooled_height, call->pooled_width, group) ||
         (call->map_shape[1] >= 0 && call->map_shape[1] % *group != 0))) {
        return PYROI_E_INVALID_SHAPE; /* overflow: more bins than any (nonzero) C */
    }
    if (call->coords_per_box > 0) {
        status = pyroi_check_pooling_call(call->map, call->map_shape, call->map_strides,
                                          map_role, call->pooled, call->pooled_strides,
                                          pooled_role,
                                          call->map_shape[1] >= 0 ? call->map_shape[1] / *group
                                                                  : -1,
                                          call->pooled_height, call->pooled_width, call->boxes,
                                          call->num_rois, call->box_row_stride,
                                          call->coords_per_box, call->batch_indices);
    } else { /* the rows of the pooled tensor are the RoIs of its batch indices */
        status = call->num_rois < 0 ? PYROI_E_INVALID_SHAPE
                 : call->num_rois > 0 && call->batch_indices == NULL ? PYROI_E_NULL_POINTER
                 : pyroi_check_tensor4(call->map, call->map_shape, call->map_strides, map_role);
        if (status == PYROI_OK) {
            pyroi_pooled_shape(call->num_rois, call->map_shape[1], call->pooled_height,
                               call->pooled_width, pooled_shape);
            status = pyroi_check_tensor4(call->pooled, pooled_shape, call->pooled_strides,
                                         pooled_role);
        }
    }
    if (status != PYROI_OK) {
        return status;
    }
    pyroi_pooled_shape(call->num_rois, call->map_shape[1] / *group, call->pooled_height,
                       call->pooled_width, pooled_shape);
    if (call->argmax != NULL) { /* a required one that is NULL: the float32 call says so */
        if (call->argmax_strides == NULL) {
            return PYROI_E_NULL_POINTER;
        }
        status = pyroi_check_tensor4(call->argmax, pooled_shape, call->argmax_strides,
                                     call->backward ? PYROI_TENSOR_INPUT : PYROI_TENSOR_OUTPUT);
    }
    return status;
}

/* Runs call chunk by chunk (see the top of the file). */
pyroi_status pyroi_half_run(half_call *call, const int64_t *map_shape)
{
    int64_t group, pooled_shape[4], pooled_chunk_shape[4], chunk_channels, first, count;
    int64_t map_bytes = 4, pooled_bytes = 4;
    half_chunk chunk;
    pyroi_scratch_keeper keeper;
    float *scratch;
    pyroi_status status;
    if (map_shape == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    memcpy(call->map_shape, map_shape, sizeof(call->map_shape));
    status = half_check(call, &group, pooled_shape);
    if (status != PYROI_OK) {
        return status;
    }
    if (call->whole != NULL) {
        int taken;
        status = call->whole(call, &taken);
        if (taken) {
            return status;
        }
    }
    /* the scratch of the largest chunk: its map planes, then its pooled planes */
    chunk_channels = pyroi_half_chunk_channels(call->map_shape, group, call->num_threads);
    memcpy(chunk.map_shape, call->map_shape, sizeof(chunk.map_shape));
    chunk.map_shape[1] = chunk_channels;
    pyroi_pooled_shape(call->num_rois, chunk_channels / group, call->pooled_height,
                       call->pooled_width, pooled_chunk_shape);
    if (!pyroi_mul_nonneg(map_bytes, chunk.map_shape[0] * chunk_channels, &map_bytes) ||
        !pyroi_mul_nonneg(map_bytes, chunk.map_shape[2] * chunk.map_shape[3], &map_bytes) ||
        !pyroi_mul_nonneg(pooled_bytes, pooled_chunk_shape[0] * pooled_chunk_shape[1],
                          &pooled_bytes) ||
        !pyroi_mul_nonneg(pooled_bytes, pooled_chunk_shape[2] * pooled_chunk_shape[3],
                          &pooled_bytes) ||
        (uint64_t)map_bytes + (uint64_t)pooled_bytes + 64u > (uint64_t)SIZE_MAX) {
        return PYROI_E_NO_MEMORY;
    }
    map_bytes = (map_bytes + 63) / 64 * 64; /* the pooled planes start on a cache line */
    scratch = (float *)pyroi_aligned_malloc((size_t)(map_bytes + pooled_bytes + 64));
    if (scratch == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    chunk.map = scratch;
    chunk.pooled = scratch + map_bytes / 4;
    pyroi_scratch_keep_begin(&keeper); /* each chunk's float32 call reuses the last's pages */
    /* one call even without channels: its float32 call checks the boxes and parameters */
    for (first = 0; status == PYROI_OK; first += count) {
        const int64_t pooled_first = first / group;
        uint16_t *map = first > 0 ? call->map + first * call->map_strides[1] : call->map;
        uint16_t *pooled = first > 0 ? call->pooled + pooled_first * call->pooled_strides[1]
                                     : call->pooled;
        count = call->map_shape[1] - first < chunk_channels ? call->map_shape[1] - first
                                                            : chunk_channels;
        chunk.map_shape[1] = count;
        pooled_chunk_shape[1] = count / group;
        half_contiguous_strides(chunk.map_shape, chunk.map_strides);
        half_contiguous_strides(pooled_chunk_shape, chunk.pooled_strides);
        chunk.argmax = first > 0 && call->argmax != NULL
                           ? call->argmax + pooled_first * call->argmax_strides[1] *
                                                 call->argmax_bytes
                           : call->argmax;
        status = call->backward
                     ? pyroi_half_planes_run(pooled, NULL, pooled_chunk_shape,
                                             call->pooled_strides, pooled_chunk_shape[1],
                                             chunk.pooled, call->num_threads, call->cancel)
                     : pyroi_half_planes_run(map, NULL, chunk.map_shape, call->map_strides,
                                             count, chunk.map, call->num_threads, call->cancel);
        if (status == PYROI_OK) {
            status = call->run(call, &chunk);
        }
        if (status == PYROI_OK) {
            status = call->backward
                         ? pyroi_half_planes_run(NULL, map, chunk.map_shape,
                                                 call->map_strides, count, chunk.map,
                                                 call->num_threads, call->cancel)
                         : pyroi_half_planes_run(NULL, pooled, pooled_chunk_shape,
                                                 call->pooled_strides, pooled_chunk_shape[1],
                                                 chunk.pooled, call->num_threads, call->cancel);
        }
        if (first + count >= call->map_shape[1]) {
            break;
        }
    }
    pyroi_scratch_keep_end(&keeper);
    pyroi_aligned_free(scratch);
    return status;
}
