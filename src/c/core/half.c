/* half.c - the float16 entry points (*_f16) of every operator, through one mechanism: the
 * float32 operator runs on chunks of channels.
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
#include "core/half.h"
#include "core/cpu.h"
#include "core/parallel.h"
#include "roi_align/roi_align_half.h"
#include "rotated/roi_align_rotated_half.h"
#include "ps_roi/ps_roi_half.h"
#include "roi_pool/roi_pool_half.h"
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

/* count elements, step apart in the float16 tensor (GCC versions the loop for step 1 and
 * vectorises that version) */
PYROI_CLONE_INLINE void half_widen(const uint16_t *from, int64_t step, int64_t count,
                                   float *wide)
{
    int64_t i;
    for (i = 0; i < count; ++i) {
        wide[i] = pyroi_half_to_float(from[i * step]);
    }
}

PYROI_CLONE_INLINE void half_round(const float *wide, int64_t count, uint16_t *to, int64_t step)
{
    int64_t i;
    for (i = 0; i < count; ++i) {
        to[i * step] = pyroi_float_to_half(wide[i]);
    }
}

/* With F16C, consecutive elements convert 8 at a time in one instruction each way (VCVTPH2PS
 * is exact; VCVTPS2PH with round-to-nearest-even gives pyroi_float_to_half's bits, NaN
 * payloads included, whatever MXCSR says): about a tenth of the portable loops'
 * instructions. The portable loops do the rest of a run. */
#if defined(PYROI_HAVE_VECTOR_CLONES)
#  include <immintrin.h>
#  define HALF_HAVE_F16C 1
__attribute__((target("avx2,f16c"))) static int64_t half_widen_f16c(const uint16_t *from,
                                                                    int64_t count, float *wide)
{
    int64_t i;
    for (i = 0; i + 8 <= count; i += 8) {
        _mm256_storeu_ps(wide + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(from + i))));
    }
    return i;
}

__attribute__((target("avx2,f16c"))) static int64_t half_round_f16c(const float *wide,
                                                                    int64_t count, uint16_t *to)
{
    int64_t i;
    for (i = 0; i + 8 <= count; i += 8) {
        _mm_storeu_si128((__m128i *)(to + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(wide + i), _MM_FROUND_TO_NEAREST_INT));
    }
    return i;
}

/* The whole 64-byte lines of to (32 elements each, to at a line boundary), by streaming
 * stores; the caller fences. */
__attribute__((target("avx2,f16c"))) static void half_round_lines_f16c(const float *wide,
                                                                      int64_t lines,
                                                                      uint16_t *to)
{
    int64_t i, e;
    for (i = 0; i < lines; ++i) {
        for (e = 32 * i; e < 32 * i + 32; e += 16) {
            const __m128i low =
                _mm256_cvtps_ph(_mm256_loadu_ps(wide + e), _MM_FROUND_TO_NEAREST_INT);
            const __m128i high =
                _mm256_cvtps_ph(_mm256_loadu_ps(wide + e + 8), _MM_FROUND_TO_NEAREST_INT);
            _mm256_stream_si256((__m256i *)(void *)(to + e),
                                _mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1));
        }
    }
}
#endif

void pyroi_half_round_run(const float *wide, int64_t count, uint16_t *to, int64_t step)
{
    int64_t done = 0;
#ifdef HALF_HAVE_F16C
    if (step == 1 && pyroi_cpu_has_f16c()) {
        done = half_round_f16c(wide, count, to);
    }
#endif
    half_round(wide + done, count - done, to + done * step, step);
}

void pyroi_half_round_stream(const float *wide, int64_t count, uint16_t *to)
{
#ifdef HALF_HAVE_F16C
    /* elements before to's first line boundary */
    const int64_t head = (int64_t)((64u - ((uintptr_t)to & 63u)) & 63u) / 2;
    if (((uintptr_t)to & 1u) == 0 && count - head >= 32 && pyroi_cpu_has_f16c()) {
        const int64_t lines = (count - head) / 32;
        /* plain stores for the partial lines at both ends: a plain store into a line that a
         * streaming store holds waits for it to reach memory */
        pyroi_half_round_run(wide, head, to, 1);
        half_round_lines_f16c(wide + head, lines, to + head);
        pyroi_half_round_run(wide + head + 32 * lines, count - head - 32 * lines,
                             to + head + 32 * lines, 1);
        return;
    }
#endif
    pyroi_half_round_run(wide, count, to, 1);
}

void pyroi_half_widen_run(const uint16_t *from, int64_t step, int64_t count, float *wide)
{
    int64_t done = 0;
#ifdef HALF_HAVE_F16C
    if (step == 1 && pyroi_cpu_has_f16c()) {
        done = half_widen_f16c(from, count, wide);
    }
#endif
    half_widen(from + done * step, step, count - done, wide + done);
}

void pyroi_half_round_planes(const float *wide, int64_t count, int64_t height, int64_t width,
                             uint16_t *to, const int64_t strides[4])
{
    const int64_t pixels = height * width;
    const int rows_packed = strides[3] == 1 && strides[2] == width;
    int64_t i, h;
    if (rows_packed && strides[1] == pixels) { /* the planes one run */
        pyroi_half_round_run(wide, count * pixels, to, 1);
        return;
    }
    for (i = 0; i < count; ++i) {
        for (h = 0; h < (rows_packed ? 1 : height); ++h) {
            pyroi_half_round_run(wide + i * pixels + h * width, rows_packed ? pixels : width,
                                 to + i * strides[1] + h * strides[2], strides[3]);
        }
    }
}

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
static pyroi_status half_planes_run(const uint16_t *from, uint16_t *to, const int64_t shape[4],
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

/* ---- one float16 call of a float32 operator --------------------------------------------- */

/* A chunk's float32 tensors, as the float32 entry point takes them. */
typedef struct half_chunk {
    float *map; /* a forward's input, a backward's grad_input: (N, channels, H, W) */
    int64_t map_shape[4];
    int64_t map_strides[4];
    float *pooled; /* a forward's output, a backward's grad_output: (K, channels', PH, PW) */
    int64_t pooled_strides[4];
    void *argmax; /* the caller's, at the chunk's channels (NULL: none) */
} half_chunk;

typedef struct half_call half_call;
typedef pyroi_status (*half_chunk_run)(const half_call *call, const half_chunk *chunk);
/* The whole call at once, reading and writing the float16 tensors in place (*taken 1), or
 * nothing (*taken 0: the chunks then run). */
typedef pyroi_status (*half_whole_run)(const half_call *call, int *taken);

struct half_call {
    int backward; /* reads the pooled tensor and writes the map, else the reverse */
    /* the caller's float16 tensors (the one read is not written: const again in the run) */
    uint16_t *map;
    int64_t map_shape[4]; /* read once from the caller */
    const int64_t *map_strides;
    uint16_t *pooled;
    const int64_t *pooled_strides;
    char *argmax; /* of the pooled tensor's shape, or NULL */
    const int64_t *argmax_strides;
    int64_t argmax_bytes; /* of an entry: int64 or int32 */
    int position_sensitive; /* a pooled channel reads PH * PW map channels, else one */
    int coords_per_box;     /* 0: the call takes batch indices without boxes */
    /* the float32 entry point's other arguments */
    const float *boxes;
    int64_t num_rois, box_row_stride;
    const int64_t *batch_indices;
    const void *params;
    int64_t pooled_height, pooled_width;
    int num_threads;
    pyroi_cancel *cancel;
    half_chunk_run run;
    half_whole_run whole; /* NULL: none */
};

#define HALF_MAX_CHUNKS 8

/* Map channels a chunk holds: what fits each worker's level 2 cache (its float32 planes), at
 * least one lane block (16 channels: the float32 kernels' vector width) per worker, so that
 * the widened planes are read back from the caches and every lane of the kernels is used;
 * a multiple of group (the map channels a pooled channel reads). */
static int64_t half_chunk_channels(const int64_t map_shape[4], int64_t group, int num_threads)
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

static void half_contiguous_strides(const int64_t shape[4], int64_t strides[4])
{
    strides[3] = 1;
    strides[2] = shape[3];
    strides[1] = shape[2] * shape[3];
    strides[0] = shape[1] * shape[2] * shape[3];
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
static pyroi_status half_run(half_call *call, const int64_t *map_shape)
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
    chunk_channels = half_chunk_channels(call->map_shape, group, call->num_threads);
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
                     ? half_planes_run(pooled, NULL, pooled_chunk_shape, call->pooled_strides,
                                     pooled_chunk_shape[1], chunk.pooled, call->num_threads,
                                     call->cancel)
                     : half_planes_run(map, NULL, chunk.map_shape, call->map_strides, count,
                                     chunk.map, call->num_threads, call->cancel);
        if (status == PYROI_OK) {
            status = call->run(call, &chunk);
        }
        if (status == PYROI_OK) {
            status = call->backward
                         ? half_planes_run(NULL, map, chunk.map_shape, call->map_strides, count,
                                         chunk.map, call->num_threads, call->cancel)
                         : half_planes_run(NULL, pooled, pooled_chunk_shape,
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

/* ---- the entry points: the call's tensors and arguments, and the float32 call of a chunk ---- */

static void half_tensors(half_call *call, int backward, const uint16_t *map,
                         const int64_t map_strides[4], const uint16_t *pooled,
                         const int64_t pooled_strides[4], const void *argmax,
                         const int64_t argmax_strides[4], int64_t argmax_bytes)
{
    call->backward = backward;
    call->map = (uint16_t *)map; /* the tensor a call reads is never written */
    call->map_strides = map_strides;
    call->pooled = (uint16_t *)pooled;
    call->pooled_strides = pooled_strides;
    call->argmax = (char *)argmax;
    call->argmax_strides = argmax_strides;
    call->argmax_bytes = argmax_bytes;
    call->position_sensitive = 0;
}

static void half_rois(half_call *call, const float *boxes, int64_t num_rois,
                      int64_t box_row_stride, const int64_t *batch_indices, int coords_per_box)
{
    call->boxes = boxes;
    call->num_rois = num_rois;
    call->box_row_stride = box_row_stride;
    call->batch_indices = batch_indices;
    call->coords_per_box = coords_per_box;
}

/* The settings every params struct has, the chunk's float32 call and the whole call (NULL:
 * none; after the params' check: p is not NULL). */
#define HALF_SETTINGS(call, p, chunk_run, whole_run)                                          \
    ((call)->params = (p), (call)->pooled_height = (p)->pooled_height,                        \
     (call)->pooled_width = (p)->pooled_width, (call)->num_threads = (p)->num_threads,        \
     (call)->cancel = (p)->cancel, (call)->run = (chunk_run), (call)->whole = (whole_run))

/* The float32 entry points' arguments, from a call c and its chunk t. */
#define HALF_MAP(t) (t)->map, (t)->map_shape, (t)->map_strides
#define HALF_POOLED(t) (t)->pooled, (t)->pooled_strides
#define HALF_ARGMAX(c, t) (t)->argmax, (c)->argmax_strides
#define HALF_ROIS(c) (c)->boxes, (c)->num_rois, (c)->box_row_stride, (c)->batch_indices
#define HALF_PARAMS(family, c) ((const pyroi_##family##_params *)(c)->params)

/* The body of an entry point: the params' check, the call's tensors (... : the argmax and its
 * strides, or NULL, NULL) and RoIs, the chunks. */
#define HALF_ENTRY_BODY(family, backward, map, map_strides, pooled, pooled_strides,          \
                        position_sensitive_, coords, chunk_run, whole_run, map_shape, ...)   \
    half_call call;                                                                           \
    const pyroi_status status = pyroi_check_##family##_params(params);                       \
    if (status != PYROI_OK) {                                                                 \
        return status;                                                                        \
    }                                                                                         \
    half_tensors(&call, backward, map, map_strides, pooled, pooled_strides, __VA_ARGS__);     \
    call.position_sensitive = position_sensitive_;                                            \
    half_rois(&call, boxes, num_rois, box_row_stride, batch_indices, coords);                 \
    HALF_SETTINGS(&call, params, chunk_run, whole_run);                                       \
    return half_run(&call, map_shape);

/* The chunk call half_<name>: pyroi_<name>_f32 with <arguments> (of a call c and its chunk t). */
#define HALF_CHUNK_CALL(name, arguments)                                                      \
    static pyroi_status half_##name(const half_call *c, const half_chunk *t)                 \
    {                                                                                         \
        return pyroi_##name##_f32 arguments;                                                  \
    }

/* Defines the float16 forward pyroi_<name>_f16 (arguments as <name>_f32, float16 tensors,
 * float32 boxes) from the chunk call <arguments> of pyroi_<name>_f32, and whole_run (NULL:
 * none). */
#define HALF_FORWARD(name, family, coords, position_sensitive_, argmax_parameters,          \
                     argmax_arguments, arguments, whole_run)                                  \
    HALF_CHUNK_CALL(name, arguments)                                                          \
    pyroi_status pyroi_##name##_f16(                                                          \
        const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],  \
        const float *boxes, int64_t num_rois, int64_t box_row_stride,                         \
        const int64_t *batch_indices, uint16_t *output,                                       \
        const int64_t output_strides[4] argmax_parameters,                                    \
        const pyroi_##family##_params *params)                                                \
    {                                                                                         \
        HALF_ENTRY_BODY(family, 0, input, input_strides, output, output_strides,              \
                        position_sensitive_, coords, half_##name, whole_run, input_shape,     \
                        argmax_arguments)                                                     \
    }

/* Likewise a backward, which writes grad_input. */
#define HALF_BACKWARD(name, family, coords, position_sensitive_, argmax_parameters,         \
                      argmax_arguments, arguments, whole_run)                                 \
    HALF_CHUNK_CALL(name, arguments)                                                          \
    pyroi_status pyroi_##name##_f16(                                                          \
        const uint16_t *grad_output,                                                          \
        const int64_t grad_output_strides[4] argmax_parameters, const float *boxes,           \
        int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,               \
        uint16_t *grad_input, const int64_t grad_input_shape[4],                              \
        const int64_t grad_input_strides[4], const pyroi_##family##_params *params)           \
    {                                                                                         \
        HALF_ENTRY_BODY(family, 1, grad_input, grad_input_strides, grad_output,               \
                        grad_output_strides, position_sensitive_, coords, half_##name,        \
                        whole_run, grad_input_shape, argmax_arguments)                        \
    }

#define HALF_NO_ARGMAX_PARAMETERS
#define HALF_NO_ARGMAX_ARGUMENTS NULL, NULL, 0
#define HALF_ARGMAX_OUT_PARAMETERS , int64_t *argmax, const int64_t argmax_strides[4]
#define HALF_ARGMAX_IN_PARAMETERS , const int64_t *argmax, const int64_t argmax_strides[4]
#define HALF_ARGMAX_I32_OUT_PARAMETERS , int32_t *argmax, const int64_t argmax_strides[4]
#define HALF_ARGMAX_ARGUMENTS argmax, argmax_strides, (int64_t)sizeof *argmax

#define HALF_FORWARD_ARGS(family) \
    (HALF_MAP(t), HALF_ROIS(c), HALF_POOLED(t), HALF_PARAMS(family, c))
#define HALF_FORWARD_ARGMAX_ARGS(family) \
    (HALF_MAP(t), HALF_ROIS(c), HALF_POOLED(t), HALF_ARGMAX(c, t), HALF_PARAMS(family, c))
#define HALF_BACKWARD_ARGS(family) \
    (HALF_POOLED(t), HALF_ROIS(c), HALF_MAP(t), HALF_PARAMS(family, c))
#define HALF_BACKWARD_ARGMAX_ARGS(family) \
    (HALF_POOLED(t), HALF_ARGMAX(c, t), HALF_ROIS(c), HALF_MAP(t), HALF_PARAMS(family, c))

/* RoIAlign's avg forward and backward read and write the float16 tensors in place where
 * their lane-major orders run (roi_align_half.h). */
static pyroi_status half_roi_align_forward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_forward_half(c->map, c->map_shape, c->map_strides, HALF_ROIS(c),
                                        c->pooled, c->pooled_strides,
                                        HALF_PARAMS(roi_align, c), taken);
}

static pyroi_status half_roi_align_backward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_backward_half(c->pooled, c->pooled_strides, HALF_ROIS(c), c->map,
                                         c->map_shape, c->map_strides,
                                         HALF_PARAMS(roi_align, c), taken);
}

/* RoIAlign's max forwards (mmcv's, ONNX's) likewise. */
static pyroi_status half_roi_align_max_forward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_max_forward_half(
        0, c->map, c->map_shape, c->map_strides, HALF_ROIS(c), c->pooled, c->pooled_strides,
        (int64_t *)(void *)c->argmax, c->argmax_strides, HALF_PARAMS(roi_align, c), taken);
}

static pyroi_status half_roi_align_onnx_max_forward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_max_forward_half(
        1, c->map, c->map_shape, c->map_strides, HALF_ROIS(c), c->pooled, c->pooled_strides,
        (int64_t *)(void *)c->argmax, c->argmax_strides, HALF_PARAMS(roi_align, c), taken);
}

/* RoIAlign's max backwards (mmcv's, ONNX's) likewise, into float32 planes of one channel. */
static pyroi_status half_roi_align_max_backward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_max_backward_half(
        0, c->pooled, c->pooled_strides, (const int64_t *)(const void *)c->argmax,
        c->argmax_strides, HALF_ROIS(c), c->map, c->map_shape, c->map_strides,
        HALF_PARAMS(roi_align, c), taken);
}

static pyroi_status half_roi_align_onnx_max_backward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_max_backward_half(
        1, c->pooled, c->pooled_strides, (const int64_t *)(const void *)c->argmax,
        c->argmax_strides, HALF_ROIS(c), c->map, c->map_shape, c->map_strides,
        HALF_PARAMS(roi_align, c), taken);
}

/* Rotated RoIAlign's forward and backward likewise, within their scratch bounds
 * (roi_align_rotated_half.h). */
static pyroi_status half_roi_align_rotated_forward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_rotated_forward_half(c->map, c->map_shape, c->map_strides,
                                                HALF_ROIS(c), c->pooled, c->pooled_strides,
                                                HALF_PARAMS(roi_align_rotated, c), taken);
}

static pyroi_status half_roi_align_rotated_backward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_rotated_backward_half(c->pooled, c->pooled_strides, HALF_ROIS(c),
                                                 c->map, c->map_shape, c->map_strides,
                                                 HALF_PARAMS(roi_align_rotated, c), taken);
}

/* RoIPool's forward likewise where its lane-major orders run (roi_pool_half.h). */
static pyroi_status half_roi_pool_forward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_pool_forward_half(c->map, c->map_shape, c->map_strides, HALF_ROIS(c),
                                       c->pooled, c->pooled_strides, c->argmax,
                                       c->argmax_strides,
                                       c->argmax_bytes == (int64_t)sizeof(int64_t),
                                       HALF_PARAMS(roi_pool, c), taken);
}

/* PSRoIAlign and PSRoIPool read and write the float16 tensors in place (ps_roi_half.h). */
static pyroi_status half_ps_roi_align_forward_whole(const half_call *c, int *taken)
{
    return pyroi_ps_roi_align_forward_half(c->map, c->map_shape, c->map_strides, HALF_ROIS(c),
                                           c->pooled, c->pooled_strides,
                                           HALF_PARAMS(ps_roi_align, c), taken);
}

static pyroi_status half_ps_roi_align_backward_whole(const half_call *c, int *taken)
{
    return pyroi_ps_roi_align_backward_half(c->pooled, c->pooled_strides, HALF_ROIS(c), c->map,
                                            c->map_shape, c->map_strides,
                                            HALF_PARAMS(ps_roi_align, c), taken);
}

static pyroi_status half_ps_roi_pool_forward_whole(const half_call *c, int *taken)
{
    return pyroi_ps_roi_pool_forward_half(c->map, c->map_shape, c->map_strides, HALF_ROIS(c),
                                          c->pooled, c->pooled_strides,
                                          HALF_PARAMS(ps_roi_pool, c), taken);
}

static pyroi_status half_ps_roi_pool_backward_whole(const half_call *c, int *taken)
{
    return pyroi_ps_roi_pool_backward_half(c->pooled, c->pooled_strides, HALF_ROIS(c), c->map,
                                           c->map_shape, c->map_strides,
                                           HALF_PARAMS(ps_roi_pool, c), taken);
}

HALF_FORWARD(roi_align_forward, roi_align, 4, 0, HALF_NO_ARGMAX_PARAMETERS,
             HALF_NO_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGS(roi_align),
             half_roi_align_forward_whole)
HALF_BACKWARD(roi_align_backward, roi_align, 4, 0, HALF_NO_ARGMAX_PARAMETERS,
              HALF_NO_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGS(roi_align),
              half_roi_align_backward_whole)
HALF_FORWARD(roi_align_max_forward, roi_align, 4, 0, HALF_ARGMAX_OUT_PARAMETERS,
             HALF_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGMAX_ARGS(roi_align),
             half_roi_align_max_forward_whole)
HALF_BACKWARD(roi_align_max_backward, roi_align, 4, 0, HALF_ARGMAX_IN_PARAMETERS,
              HALF_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGMAX_ARGS(roi_align),
              half_roi_align_max_backward_whole)
HALF_FORWARD(roi_align_onnx_max_forward, roi_align, 4, 0, HALF_NO_ARGMAX_PARAMETERS,
             HALF_NO_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGS(roi_align),
             half_roi_align_onnx_max_forward_whole)
HALF_FORWARD(roi_align_onnx_max_forward_argmax, roi_align, 4, 0, HALF_ARGMAX_OUT_PARAMETERS,
             HALF_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGMAX_ARGS(roi_align),
             half_roi_align_onnx_max_forward_whole)
HALF_BACKWARD(roi_align_onnx_max_backward, roi_align, 4, 0, HALF_ARGMAX_IN_PARAMETERS,
              HALF_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGMAX_ARGS(roi_align),
              half_roi_align_onnx_max_backward_whole)
HALF_FORWARD(roi_pool_forward, roi_pool, 4, 0, HALF_ARGMAX_OUT_PARAMETERS,
             HALF_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGMAX_ARGS(roi_pool),
             half_roi_pool_forward_whole)
HALF_FORWARD(roi_pool_forward_i32, roi_pool, 4, 0, HALF_ARGMAX_I32_OUT_PARAMETERS,
             HALF_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGMAX_ARGS(roi_pool),
             half_roi_pool_forward_whole)
HALF_FORWARD(ps_roi_align_forward, ps_roi_align, 4, 1, HALF_NO_ARGMAX_PARAMETERS,
             HALF_NO_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGS(ps_roi_align),
             half_ps_roi_align_forward_whole)
HALF_BACKWARD(ps_roi_align_backward, ps_roi_align, 4, 1, HALF_NO_ARGMAX_PARAMETERS,
              HALF_NO_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGS(ps_roi_align),
              half_ps_roi_align_backward_whole)
HALF_FORWARD(ps_roi_pool_forward, ps_roi_pool, 4, 1, HALF_NO_ARGMAX_PARAMETERS,
             HALF_NO_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGS(ps_roi_pool),
             half_ps_roi_pool_forward_whole)
HALF_BACKWARD(ps_roi_pool_backward, ps_roi_pool, 4, 1, HALF_NO_ARGMAX_PARAMETERS,
              HALF_NO_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGS(ps_roi_pool),
              half_ps_roi_pool_backward_whole)
HALF_FORWARD(roi_align_rotated_forward, roi_align_rotated, 5, 0, HALF_NO_ARGMAX_PARAMETERS,
             HALF_NO_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGS(roi_align_rotated),
             half_roi_align_rotated_forward_whole)
HALF_BACKWARD(roi_align_rotated_backward, roi_align_rotated, 5, 0, HALF_NO_ARGMAX_PARAMETERS,
              HALF_NO_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGS(roi_align_rotated),
              half_roi_align_rotated_backward_whole)

/* RoIPool's backward from an argmax likewise where its image blocks run (roi_pool_half.h). */
static pyroi_status half_roi_pool_backward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_pool_backward_half(c->pooled, c->pooled_strides, c->argmax,
                                        c->argmax_strides,
                                        c->argmax_bytes == (int64_t)sizeof(int64_t),
                                        c->batch_indices, c->num_rois, c->map, c->map_shape,
                                        c->map_strides, HALF_PARAMS(roi_pool, c), taken);
}

/* RoIPool's backward reads no boxes: its RoIs are the batch indices of the argmax rows. Its
 * float16 forms, from an int64 (name roi_pool_backward) or int32 (roi_pool_backward_i32)
 * argmax of element type index. */
#define HALF_ROI_POOL_BACKWARD(name, index)                                                   \
    HALF_CHUNK_CALL(name, (HALF_POOLED(t), HALF_ARGMAX(c, t), c->batch_indices, c->num_rois,  \
                           HALF_MAP(t), HALF_PARAMS(roi_pool, c)))                            \
    pyroi_status pyroi_##name##_f16(                                                          \
        const uint16_t *grad_output, const int64_t grad_output_strides[4],                    \
        const index *argmax, const int64_t argmax_strides[4], const int64_t *batch_indices,  \
        int64_t num_rois, uint16_t *grad_input, const int64_t grad_input_shape[4],            \
        const int64_t grad_input_strides[4], const pyroi_roi_pool_params *params)             \
    {                                                                                         \
        half_call call;                                                                       \
        const pyroi_status status = pyroi_check_roi_pool_params(params);                     \
        if (status != PYROI_OK) {                                                             \
            return status;                                                                    \
        }                                                                                     \
        half_tensors(&call, 1, grad_input, grad_input_strides, grad_output,                   \
                     grad_output_strides, HALF_ARGMAX_ARGUMENTS);                             \
        half_rois(&call, NULL, num_rois, 0, batch_indices, 0);                                \
        HALF_SETTINGS(&call, params, half_##name, half_roi_pool_backward_whole);              \
        return half_run(&call, grad_input_shape);                                             \
    }

HALF_ROI_POOL_BACKWARD(roi_pool_backward, int64_t)
HALF_ROI_POOL_BACKWARD(roi_pool_backward_i32, int32_t)

/* RoIPool's backward from the input also reads the forward's float16 input: each chunk's
 * call widens the input's channels of the chunk too. Chunks run in channel order, so a
 * chunk's first channel is the count of those before it (*next_channel). */
typedef struct half_pool_from_input {
    half_call call; /* first: the chunk's run receives &call */
    const uint16_t *input;
    const int64_t *input_strides;
    int64_t *next_channel;
} half_pool_from_input;

static pyroi_status half_roi_pool_backward_from_input(const half_call *c, const half_chunk *t)
{
    const half_pool_from_input *f = (const half_pool_from_input *)(const void *)c;
    const int64_t first = *f->next_channel;
    /* the chunk's grad_input planes, whose size half_run checked */
    float *input = (float *)pyroi_aligned_malloc(
        (size_t)(t->map_shape[0] * t->map_shape[1] * t->map_shape[2] * t->map_shape[3]) *
            sizeof(float) + 64);
    pyroi_status status;
    if (input == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    status = half_planes_run(f->input + (first > 0 ? first * f->input_strides[1] : 0), NULL,
                             t->map_shape, f->input_strides, t->map_shape[1], input,
                             c->num_threads, c->cancel);
    if (status == PYROI_OK) {
        status = pyroi_roi_pool_backward_from_input_f32(
            HALF_POOLED(t), input, t->map_shape, t->map_strides, HALF_ROIS(c), t->map,
            t->map_strides, HALF_PARAMS(roi_pool, c));
    }
    *f->next_channel = first + t->map_shape[1];
    pyroi_aligned_free(input);
    return status;
}

/* The whole call in place where its image blocks run (roi_pool_half.h). */
static pyroi_status half_roi_pool_backward_from_input_whole(const half_call *c, int *taken)
{
    const half_pool_from_input *f = (const half_pool_from_input *)(const void *)c;
    return pyroi_roi_pool_backward_from_input_half(
        c->pooled, c->pooled_strides, f->input, c->map_shape, f->input_strides, HALF_ROIS(c),
        c->map, c->map_strides, HALF_PARAMS(roi_pool, c), taken);
}

pyroi_status pyroi_roi_pool_backward_from_input_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const uint16_t *input,
    const int64_t input_shape[4], const int64_t input_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params)
{
    half_pool_from_input from_input;
    int64_t shape[4], next_channel = 0; /* shape: read once, for both maps */
    pyroi_status status = pyroi_check_roi_pool_params(params);
    if (status == PYROI_OK && input_shape == NULL) {
        status = PYROI_E_NULL_POINTER;
    }
    if (status != PYROI_OK) {
        return status;
    }
    memcpy(shape, input_shape, sizeof(shape));
    status = pyroi_check_tensor4(input, shape, input_strides, PYROI_TENSOR_INPUT);
    if (status != PYROI_OK) {
        return status;
    }
    from_input.input = input;
    from_input.input_strides = input_strides;
    from_input.next_channel = &next_channel;
    half_tensors(&from_input.call, 1, grad_input, grad_input_strides, grad_output,
                 grad_output_strides, HALF_NO_ARGMAX_ARGUMENTS);
    half_rois(&from_input.call, boxes, num_rois, box_row_stride, batch_indices, 4);
    HALF_SETTINGS(&from_input.call, params, half_roi_pool_backward_from_input,
                  half_roi_pool_backward_from_input_whole);
    return half_run(&from_input.call, shape);
}

/* ---- the multi-level RoIAlign: every level's chunk, one float32 multi-level call -------- */

/* A float16 call of pyroi_roi_align_levels_forward_f32 / _backward_f32: the chunks run over
 * the channels every level shares; a chunk widens (forward) or rounds (backward) the same
 * channels of every level, sized from level 0, the largest. */
typedef struct half_levels {
    int backward;
    int64_t num_levels;
    uint16_t *maps[PYROI_MAX_FPN_LEVELS]; /* the caller's inputs or grad_inputs */
    int64_t shapes[PYROI_MAX_FPN_LEVELS][4]; /* read once from the caller */
    int64_t strides[PYROI_MAX_FPN_LEVELS][4];
    uint16_t *pooled;
    int64_t pooled_strides[4];
    const float *boxes;
    int64_t num_rois, box_row_stride;
    const int64_t *batch_indices;
    const double *spatial_scales;
    const pyroi_fpn_level_params *level_params;
    const pyroi_roi_align_params *params;
} half_levels;

/* Copies the caller's level tensors into call (each value read once) and checks them, before
 * any element is read: level 0 with the pooled tensor and RoI rows, every level's own shape
 * and strides, and the batch and channels every level shares. */
static pyroi_status half_levels_check(half_levels *call, const void *const *maps,
                                      const int64_t *shapes, const int64_t *strides,
                                      const int64_t pooled_strides[4])
{
    const pyroi_tensor_role map_role = call->backward ? PYROI_TENSOR_OUTPUT : PYROI_TENSOR_INPUT;
    pyroi_status status = pyroi_check_roi_align_params(call->params);
    int64_t l;
    if (status != PYROI_OK) {
        return status;
    }
    if (call->level_params == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    /* as the float32 entry, before any of the num_levels maps is read */
    status = pyroi_check_fpn_level_count(call->level_params, call->num_levels);
    if (status != PYROI_OK) {
        return status;
    }
    if (maps == NULL || shapes == NULL || strides == NULL || pooled_strides == NULL ||
        call->spatial_scales == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    memcpy(call->pooled_strides, pooled_strides, sizeof(call->pooled_strides));
    for (l = 0; l < call->num_levels && status == PYROI_OK; ++l) {
        call->maps[l] = (uint16_t *)(uintptr_t)maps[l]; /* an input is never written */
        memcpy(call->shapes[l], shapes + 4 * l, sizeof(call->shapes[l]));
        memcpy(call->strides[l], strides + 4 * l, sizeof(call->strides[l]));
        status = pyroi_check_tensor4(call->maps[l], call->shapes[l], call->strides[l], map_role);
        if (status == PYROI_OK && (call->shapes[l][0] != call->shapes[0][0] ||
                                   call->shapes[l][1] != call->shapes[0][1])) {
            status = PYROI_E_INVALID_SHAPE;
        }
    }
    return status != PYROI_OK
               ? status
               : pyroi_check_pooling_call(
                     call->maps[0], call->shapes[0], call->strides[0], map_role, call->pooled,
                     call->pooled_strides,
                     call->backward ? PYROI_TENSOR_INPUT : PYROI_TENSOR_OUTPUT, -1,
                     call->params->pooled_height, call->params->pooled_width, call->boxes,
                     call->num_rois, call->box_row_stride, 4, call->batch_indices);
}

/* Widens (round 0) or rounds (round 1) the chunk from channel first of every level. */
static pyroi_status half_levels_planes(const half_levels *call, int64_t first,
                                       int64_t level_shapes[][4], float *const *wide, int round)
{
    pyroi_status status = PYROI_OK;
    int64_t l;
    for (l = 0; l < call->num_levels && status == PYROI_OK; ++l) {
        uint16_t *map = call->maps[l] + (first > 0 ? first * call->strides[l][1] : 0);
        status = half_planes_run(round ? NULL : map, round ? map : NULL, level_shapes[l],
                                 call->strides[l], level_shapes[l][1], wide[l],
                                 call->params->num_threads, call->params->cancel);
    }
    return status;
}

/* Runs the checked call chunk by chunk, as half_run does for one map. */
static pyroi_status half_levels_run(const half_levels *call)
{
    const int num_threads = call->params->num_threads;
    pyroi_cancel *const cancel = call->params->cancel;
    const int64_t channels = call->shapes[0][1];
    int64_t pooled_shape[4], level_shapes[PYROI_MAX_FPN_LEVELS][4];
    int64_t level_strides[PYROI_MAX_FPN_LEVELS][4], pooled_chunk_strides[4];
    float *wide[PYROI_MAX_FPN_LEVELS], *pooled_wide, *scratch;
    pyroi_scratch_keeper keeper;
    uint64_t bytes = 0, offsets[PYROI_MAX_FPN_LEVELS + 1];
    int64_t chunk_channels = half_chunk_channels(call->shapes[0], 1, num_threads);
    int64_t l, first, count, elements;
    pyroi_status status = PYROI_OK;
    /* the scratch of the largest chunk: every level's planes, then the pooled planes, each on
     * a cache line (the checks bound every tensor's elements: no overflow) */
    pyroi_pooled_shape(call->num_rois, chunk_channels, call->params->pooled_height,
                       call->params->pooled_width, pooled_shape);
    for (l = 0; l <= call->num_levels; ++l) {
        const int64_t *shape = l < call->num_levels ? call->shapes[l] : pooled_shape;
        elements = l < call->num_levels ? shape[0] * chunk_channels : shape[0] * shape[1];
        offsets[l] = bytes;
        if (!pyroi_mul_nonneg(elements, shape[2] * shape[3], &elements) ||
            (uint64_t)elements > ((uint64_t)SIZE_MAX - bytes - 128) / 4) {
            return PYROI_E_NO_MEMORY;
        }
        bytes += ((uint64_t)elements * 4 + 63) / 64 * 64;
    }
    scratch = (float *)pyroi_aligned_malloc((size_t)bytes + 64);
    if (scratch == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    for (l = 0; l < call->num_levels; ++l) {
        wide[l] = scratch + offsets[l] / 4;
    }
    pooled_wide = scratch + offsets[call->num_levels] / 4;
    pyroi_scratch_keep_begin(&keeper); /* as in half_run */
    /* one call even without channels: its float32 call checks the boxes and parameters */
    for (first = 0; status == PYROI_OK; first += count) {
        uint16_t *pooled = call->pooled + (first > 0 ? first * call->pooled_strides[1] : 0);
        count = channels - first < chunk_channels ? channels - first : chunk_channels;
        pooled_shape[1] = count;
        half_contiguous_strides(pooled_shape, pooled_chunk_strides);
        for (l = 0; l < call->num_levels; ++l) {
            memcpy(level_shapes[l], call->shapes[l], sizeof(level_shapes[l]));
            level_shapes[l][1] = count;
            half_contiguous_strides(level_shapes[l], level_strides[l]);
        }
        status = call->backward ? half_planes_run(pooled, NULL, pooled_shape,
                                                  call->pooled_strides, count, pooled_wide,
                                                  num_threads, cancel)
                                : half_levels_planes(call, first, level_shapes, wide, 0);
        if (status == PYROI_OK) {
            status = call->backward
                         ? pyroi_roi_align_levels_backward_f32(
                               pooled_wide, pooled_chunk_strides, call->boxes, call->num_rois,
                               call->box_row_stride, call->batch_indices, call->num_levels,
                               wide, &level_shapes[0][0], &level_strides[0][0],
                               call->spatial_scales, call->level_params, call->params)
                         : pyroi_roi_align_levels_forward_f32(
                               call->num_levels, (const float *const *)wide,
                               &level_shapes[0][0], &level_strides[0][0], call->spatial_scales,
                               call->boxes, call->num_rois, call->box_row_stride,
                               call->batch_indices, pooled_wide, pooled_chunk_strides,
                               call->level_params, call->params);
        }
        if (status == PYROI_OK) {
            status = call->backward
                         ? half_levels_planes(call, first, level_shapes, wide, 1)
                         : half_planes_run(NULL, pooled, pooled_shape, call->pooled_strides,
                                           count, pooled_wide, num_threads, cancel);
        }
        if (first + count >= channels) {
            break;
        }
    }
    pyroi_scratch_keep_end(&keeper);
    pyroi_aligned_free(scratch);
    return status;
}

/* A float16 multi-level call: its tensors checked, then run (the caller's pooled tensor is
 * written by a forward, only read by a backward). */
static pyroi_status half_levels_call(int backward, int64_t num_levels,
                                     const void *const *maps, const int64_t *shapes,
                                     const int64_t *strides, const double *spatial_scales,
                                     const float *boxes, int64_t num_rois,
                                     int64_t box_row_stride, const int64_t *batch_indices,
                                     const uint16_t *pooled, const int64_t pooled_strides[4],
                                     const pyroi_fpn_level_params *level_params,
                                     const pyroi_roi_align_params *params)
{
    half_levels call;
    pyroi_status status;
    call.backward = backward;
    call.num_levels = num_levels;
    call.pooled = (uint16_t *)(uintptr_t)pooled;
    call.boxes = boxes;
    call.num_rois = num_rois;
    call.box_row_stride = box_row_stride;
    call.batch_indices = batch_indices;
    call.spatial_scales = spatial_scales;
    call.level_params = level_params;
    call.params = params;
    status = half_levels_check(&call, maps, shapes, strides, pooled_strides);
    if (status == PYROI_OK) { /* in place where every level's order allows it */
        int taken;
        status = pyroi_roi_align_levels_half(
            backward, num_levels, call.maps, &call.shapes[0][0], &call.strides[0][0],
            spatial_scales, call.pooled, call.pooled_strides, boxes, num_rois, box_row_stride,
            batch_indices, level_params, params, &taken);
        if (taken) {
            return status;
        }
    }
    return status != PYROI_OK ? status : half_levels_run(&call);
}

pyroi_status pyroi_roi_align_levels_forward_f16(
    int64_t num_levels, const uint16_t *const *inputs, const int64_t *input_shapes,
    const int64_t *input_strides, const double *spatial_scales, const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices, uint16_t *output,
    const int64_t output_strides[4], const pyroi_fpn_level_params *level_params,
    const pyroi_roi_align_params *params)
{
    return half_levels_call(0, num_levels, (const void *const *)inputs, input_shapes,
                            input_strides, spatial_scales, boxes, num_rois, box_row_stride,
                            batch_indices, output, output_strides, level_params, params);
}

pyroi_status pyroi_roi_align_levels_backward_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices, int64_t num_levels,
    uint16_t *const *grad_inputs, const int64_t *grad_input_shapes,
    const int64_t *grad_input_strides, const double *spatial_scales,
    const pyroi_fpn_level_params *level_params, const pyroi_roi_align_params *params)
{
    return half_levels_call(1, num_levels, (const void *const *)grad_inputs,
                            grad_input_shapes, grad_input_strides, spatial_scales, boxes,
                            num_rois, box_row_stride, batch_indices, grad_output,
                            grad_output_strides, level_params, params);
}

pyroi_status pyroi_scale_f32_to_f16(const float *source, int64_t count, float scale,
                                    uint16_t *target)
{
    int64_t i;
    if (count < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    if (count > 0 && (source == NULL || target == NULL)) {
        return PYROI_E_NULL_POINTER;
    }
    for (i = 0; i < count; ++i) {
        const float product = source[i] * scale; /* rounded to float32 here, as in C99 */
        target[i] = pyroi_float_to_half(product);
    }
    return PYROI_OK;
}
