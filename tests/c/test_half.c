/* The float16 entry points of every operator: each equals its float32 entry point on the
 * widened tensors, rounded once, with the same argmax; on maps large enough to be run in
 * several channel chunks (128 x 128 planes, 64 KB in float32: 16 channels a worker with a
 * 1 MB level 2 cache, 32 with 2 MB: of 40 channels, 2 or 3 chunks), with channels-last
 * strides, for 1 and 2 threads; statuses; and the branch-free conversions: every float16
 * value widened, NaN payloads rounded (round trips and ties: test_frontends.c), also as the
 * lane-major gathers widen (F16C and portable), the forward's store rounds and the backward's
 * write-out streams. */
#include "check.h"
#include "core/common.h"
#include "core/half.h"
#include "layout/transpose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 2, C = 40, H = 128, W = 128, K = 7, PH = 2, PW = 2, COUT = C / (PH * PW) };
#define MAP_COUNT ((size_t)N * C * H * W)
#define POOLED_COUNT ((size_t)K * C * PH * PW)

typedef struct arrays {
    uint16_t *map16, *pooled16;
    float *map32, *pooled32;
    int64_t *argmax16, *argmax32;
} arrays;

static const int64_t map_shape[4] = {N, C, H, W};
static const int64_t nchw_strides[4] = {(int64_t)C * H * W, (int64_t)H * W, W, 1};
static const int64_t nhwc_strides[4] = {(int64_t)C * H * W, 1, (int64_t)W * C, C};
static const int64_t pooled_strides[4] = {C * PH * PW, PH * PW, PW, 1};
static const int64_t ps_pooled_strides[4] = {COUT * PH * PW, PH * PW, PW, 1};
static const int64_t batch[K] = {0, 1, 1, 0, 1, 0, 0};
static const float boxes[K * 5] = {
    3, 4, 200, 180, 10,  -20, 0, 60, 300, -30, 100, 100, 101, 102, 0,  255, 255, 0, 0, 45,
    7, 9, 250, 17, 90,   30, 40, 31, 41, 5,     0, 0, 256, 256, 0};

/* every map and pooled element: float16 data (and its exact float32 widening), with subnormals,
 * large values and a few infinities */
static void fill(arrays *a, int backward, unsigned long long seed)
{
    size_t i;
    const size_t count = backward ? POOLED_COUNT : MAP_COUNT;
    uint16_t *halves = backward ? a->pooled16 : a->map16;
    float *wide = backward ? a->pooled32 : a->map32;
    for (i = 0; i < count; ++i) {
        const double r = check_random(&seed) - 0.5;
        const double magnitude = ldexp(1.0, (int)(check_random(&seed) * 40.0) - 26);
        halves[i] = pyroi_float_to_half((float)(r * magnitude));
        if (i % 9973 == 0) {
            halves[i] = (uint16_t)(i % 2 ? 0x7c00u : 0xfc00u);
        }
        wide[i] = pyroi_half_to_float(halves[i]);
    }
}

/* float16 result == float32 result rounded once (count elements, the same element order) */
static int same_rounded(const uint16_t *halves, const float *wide, size_t count)
{
    size_t i;
    for (i = 0; i < count; ++i) {
        if (halves[i] != pyroi_float_to_half(wide[i])) {
            return 0;
        }
    }
    return 1;
}

#define ROIS4(stride) boxes, K, stride, batch

/* Every operator's parameters: 2 x 2 bins, spatial scales and sampling of several kinds. */
typedef struct params {
    pyroi_roi_align_params align;
    pyroi_roi_pool_params pool;
    pyroi_ps_roi_align_params ps_align;
    pyroi_ps_roi_pool_params ps_pool;
    pyroi_roi_align_rotated_params rotated;
} params;

static void params_init(params *p, int threads)
{
    pyroi_roi_align_params_init(&p->align);
    pyroi_roi_pool_params_init(&p->pool);
    pyroi_ps_roi_align_params_init(&p->ps_align);
    pyroi_ps_roi_pool_params_init(&p->ps_pool);
    pyroi_roi_align_rotated_params_init(&p->rotated);
    p->align.pooled_height = p->pool.pooled_height = p->ps_align.pooled_height = PH;
    p->ps_pool.pooled_height = p->rotated.pooled_height = PH;
    p->align.pooled_width = p->pool.pooled_width = p->ps_align.pooled_width = PW;
    p->ps_pool.pooled_width = p->rotated.pooled_width = PW;
    p->align.spatial_scale_h = p->align.spatial_scale_w = 0.75;
    p->pool.spatial_scale_h = p->pool.spatial_scale_w = 0.5;
    p->align.sampling_ratio = p->rotated.sampling_ratio = 2;
    p->ps_align.sampling_ratio = -1; /* adaptive */
    p->rotated.angle_in_degrees = 1;
    p->align.num_threads = p->pool.num_threads = p->ps_align.num_threads = threads;
    p->ps_pool.num_threads = p->rotated.num_threads = threads;
}

/* Both calls succeed and the float16 result (of the arrays a) is the float32 one rounded. */
#define SAME_FORWARD(call16, call32, count)                                             \
    CHECK_STATUS(call16, PYROI_OK);                                                      \
    CHECK_STATUS(call32, PYROI_OK);                                                      \
    CHECK(same_rounded(a->pooled16, a->pooled32, count))
#define SAME_BACKWARD(call16, call32)                                                  \
    CHECK_STATUS(call16, PYROI_OK);                                                     \
    CHECK_STATUS(call32, PYROI_OK);                                                     \
    CHECK(same_rounded(a->map16, a->map32, MAP_COUNT))

static void test_forwards(arrays *a, const int64_t strides[4], int threads)
{
    params p;
    params_init(&p, threads);
    fill(a, 0, 11);
    SAME_FORWARD(pyroi_roi_align_forward_f16(a->map16, map_shape, strides, ROIS4(5), a->pooled16,
                                             pooled_strides, &p.align),
                 pyroi_roi_align_forward_f32(a->map32, map_shape, strides, ROIS4(5), a->pooled32,
                                             pooled_strides, &p.align),
                 POOLED_COUNT);
    SAME_FORWARD(pyroi_roi_align_max_forward_f16(a->map16, map_shape, strides, ROIS4(5),
                                                 a->pooled16, pooled_strides, a->argmax16,
                                                 pooled_strides, &p.align),
                 pyroi_roi_align_max_forward_f32(a->map32, map_shape, strides, ROIS4(5),
                                                 a->pooled32, pooled_strides, a->argmax32,
                                                 pooled_strides, &p.align),
                 POOLED_COUNT);
    CHECK(memcmp(a->argmax16, a->argmax32, POOLED_COUNT * sizeof(int64_t)) == 0);
    SAME_FORWARD(pyroi_roi_align_onnx_max_forward_f16(a->map16, map_shape, strides, ROIS4(5),
                                                      a->pooled16, pooled_strides, &p.align),
                 pyroi_roi_align_onnx_max_forward_f32(a->map32, map_shape, strides, ROIS4(5),
                                                      a->pooled32, pooled_strides, &p.align),
                 POOLED_COUNT);
    SAME_FORWARD(pyroi_roi_align_onnx_max_forward_argmax_f16(
                     a->map16, map_shape, strides, ROIS4(5), a->pooled16, pooled_strides,
                     a->argmax16, pooled_strides, &p.align),
                 pyroi_roi_align_onnx_max_forward_argmax_f32(
                     a->map32, map_shape, strides, ROIS4(5), a->pooled32, pooled_strides,
                     a->argmax32, pooled_strides, &p.align),
                 POOLED_COUNT);
    CHECK(memcmp(a->argmax16, a->argmax32, POOLED_COUNT * sizeof(int64_t)) == 0);

    SAME_FORWARD(pyroi_roi_pool_forward_f16(a->map16, map_shape, strides, ROIS4(5), a->pooled16,
                                            pooled_strides, a->argmax16, pooled_strides, &p.pool),
                 pyroi_roi_pool_forward_f32(a->map32, map_shape, strides, ROIS4(5), a->pooled32,
                                            pooled_strides, a->argmax32, pooled_strides, &p.pool),
                 POOLED_COUNT);
    CHECK(memcmp(a->argmax16, a->argmax32, POOLED_COUNT * sizeof(int64_t)) == 0);

    SAME_FORWARD(pyroi_ps_roi_align_forward_f16(a->map16, map_shape, strides, ROIS4(5),
                                                a->pooled16, ps_pooled_strides, &p.ps_align),
                 pyroi_ps_roi_align_forward_f32(a->map32, map_shape, strides, ROIS4(5),
                                                a->pooled32, ps_pooled_strides, &p.ps_align),
                 (size_t)K * COUT * PH * PW);
    SAME_FORWARD(pyroi_ps_roi_pool_forward_f16(a->map16, map_shape, strides, ROIS4(5),
                                               a->pooled16, ps_pooled_strides, &p.ps_pool),
                 pyroi_ps_roi_pool_forward_f32(a->map32, map_shape, strides, ROIS4(5),
                                               a->pooled32, ps_pooled_strides, &p.ps_pool),
                 (size_t)K * COUT * PH * PW);

    SAME_FORWARD(pyroi_roi_align_rotated_forward_f16(a->map16, map_shape, strides, ROIS4(5),
                                                     a->pooled16, pooled_strides, &p.rotated),
                 pyroi_roi_align_rotated_forward_f32(a->map32, map_shape, strides, ROIS4(5),
                                                     a->pooled32, pooled_strides, &p.rotated),
                 POOLED_COUNT);
}

/* The backwards, writing grad_input with strides (the map's element order of the reference:
 * both are compared element by element in memory). */
static void test_backwards(arrays *a, const int64_t strides[4], int threads)
{
    params p;
    params_init(&p, threads);
    fill(a, 0, 5);
    fill(a, 1, 7);
    SAME_BACKWARD(pyroi_roi_align_backward_f16(a->pooled16, pooled_strides, ROIS4(5), a->map16,
                                               map_shape, strides, &p.align),
                  pyroi_roi_align_backward_f32(a->pooled32, pooled_strides, ROIS4(5), a->map32,
                                               map_shape, strides, &p.align));
    /* the winners of a max forward (float32: the same as float16's, tested above) */
    CHECK_STATUS(pyroi_roi_align_max_forward_f32(a->map32, map_shape, strides, ROIS4(5),
                                                 a->pooled32 + POOLED_COUNT, pooled_strides,
                                                 a->argmax32, pooled_strides, &p.align), PYROI_OK);
    SAME_BACKWARD(pyroi_roi_align_max_backward_f16(a->pooled16, pooled_strides, a->argmax32,
                                                   pooled_strides, ROIS4(5), a->map16, map_shape,
                                                   strides, &p.align),
                  pyroi_roi_align_max_backward_f32(a->pooled32, pooled_strides, a->argmax32,
                                                   pooled_strides, ROIS4(5), a->map32, map_shape,
                                                   strides, &p.align));
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_argmax_f32(
                     a->map32, map_shape, strides, ROIS4(5), a->pooled32 + POOLED_COUNT,
                     pooled_strides, a->argmax32, pooled_strides, &p.align), PYROI_OK);
    SAME_BACKWARD(pyroi_roi_align_onnx_max_backward_f16(a->pooled16, pooled_strides,
                                                        a->argmax32, pooled_strides, ROIS4(5),
                                                        a->map16, map_shape, strides, &p.align),
                  pyroi_roi_align_onnx_max_backward_f32(a->pooled32, pooled_strides,
                                                        a->argmax32, pooled_strides, ROIS4(5),
                                                        a->map32, map_shape, strides, &p.align));

    CHECK_STATUS(pyroi_roi_pool_forward_f32(a->map32, map_shape, strides, ROIS4(5),
                                            a->pooled32 + POOLED_COUNT, pooled_strides,
                                            a->argmax32, pooled_strides, &p.pool), PYROI_OK);
    SAME_BACKWARD(pyroi_roi_pool_backward_f16(a->pooled16, pooled_strides, a->argmax32,
                                              pooled_strides, batch, K, a->map16, map_shape,
                                              strides, &p.pool),
                  pyroi_roi_pool_backward_f32(a->pooled32, pooled_strides, a->argmax32,
                                              pooled_strides, batch, K, a->map32, map_shape,
                                              strides, &p.pool));
    /* a bad argmax entry in the last chunk: the status of the float32 call */
    a->argmax32[POOLED_COUNT - 1] = (int64_t)H * W;
    CHECK_STATUS(pyroi_roi_pool_backward_f16(a->pooled16, pooled_strides, a->argmax32,
                                             pooled_strides, batch, K, a->map16, map_shape,
                                             strides, &p.pool), PYROI_E_INVALID_ARGMAX);

    SAME_BACKWARD(pyroi_ps_roi_align_backward_f16(a->pooled16, ps_pooled_strides, ROIS4(5),
                                                  a->map16, map_shape, strides, &p.ps_align),
                  pyroi_ps_roi_align_backward_f32(a->pooled32, ps_pooled_strides, ROIS4(5),
                                                  a->map32, map_shape, strides, &p.ps_align));
    SAME_BACKWARD(pyroi_ps_roi_pool_backward_f16(a->pooled16, ps_pooled_strides, ROIS4(5),
                                                 a->map16, map_shape, strides, &p.ps_pool),
                  pyroi_ps_roi_pool_backward_f32(a->pooled32, ps_pooled_strides, ROIS4(5),
                                                 a->map32, map_shape, strides, &p.ps_pool));

    SAME_BACKWARD(pyroi_roi_align_rotated_backward_f16(a->pooled16, pooled_strides, ROIS4(5),
                                                       a->map16, map_shape, strides, &p.rotated),
                  pyroi_roi_align_rotated_backward_f32(a->pooled32, pooled_strides, ROIS4(5),
                                                       a->map32, map_shape, strides, &p.rotated));
}

/* Failures found before the caller's tensors are written: boxes, batch indices, shapes. */
/* RoIPool with an int32 argmax (torchvision's width): the float16 forms equal the float32 ones
 * rounded once with the same argmax, and the backward finds each chunk's entries (4 bytes
 * apart) and checks them. */
static void test_roi_pool_int32(arrays *a, const int64_t strides[4], int threads)
{
    params p;
    int32_t *winners16 = (int32_t *)(void *)a->argmax16;
    int32_t *winners32 = (int32_t *)(void *)a->argmax32;
    params_init(&p, threads);
    fill(a, 0, 13);
    SAME_FORWARD(pyroi_roi_pool_forward_i32_f16(a->map16, map_shape, strides, ROIS4(5),
                                                a->pooled16, pooled_strides, winners16,
                                                pooled_strides, &p.pool),
                 pyroi_roi_pool_forward_i32_f32(a->map32, map_shape, strides, ROIS4(5),
                                                a->pooled32, pooled_strides, winners32,
                                                pooled_strides, &p.pool),
                 POOLED_COUNT);
    CHECK(memcmp(winners16, winners32, POOLED_COUNT * sizeof(int32_t)) == 0);
    fill(a, 1, 17);
    SAME_BACKWARD(pyroi_roi_pool_backward_i32_f16(a->pooled16, pooled_strides, winners32,
                                                  pooled_strides, batch, K, a->map16,
                                                  map_shape, strides, &p.pool),
                  pyroi_roi_pool_backward_i32_f32(a->pooled32, pooled_strides, winners32,
                                                  pooled_strides, batch, K, a->map32,
                                                  map_shape, strides, &p.pool));
    winners32[POOLED_COUNT - 1] = (int32_t)(H * W); /* in the last chunk */
    CHECK_STATUS(pyroi_roi_pool_backward_i32_f16(a->pooled16, pooled_strides, winners32,
                                                 pooled_strides, batch, K, a->map16, map_shape,
                                                 strides, &p.pool), PYROI_E_INVALID_ARGMAX);
}

/* The multi-level RoIAlign: level 0 the map, level 1 every other pixel of it (a strided
 * view; a backward's own 64 x 64 maps); both equal the float32 levels calls rounded once. */
enum { H1 = H / 2, W1 = W / 2 };
#define LEVEL1_COUNT ((size_t)N * C * H1 * W1)

static void test_levels(arrays *a, int threads)
{
    static const double scales[2] = {0.75, 0.375};
    static const int64_t shapes[8] = {N, C, H, W, N, C, H1, W1};
    static const int64_t view_strides[8] = {(int64_t)C * H * W, (int64_t)H * W, W, 1,
                                            (int64_t)C * H * W, (int64_t)H * W, 2 * W, 2};
    static const int64_t own_strides[8] = {(int64_t)C * H * W, (int64_t)H * W, W, 1,
                                           (int64_t)C * H1 * W1, (int64_t)H1 * W1, W1, 1};
    uint16_t *level16 = malloc(LEVEL1_COUNT * sizeof(uint16_t));
    float *level32 = malloc(LEVEL1_COUNT * sizeof(float));
    pyroi_fpn_level_params levels;
    params p;
    params_init(&p, threads);
    pyroi_fpn_level_params_init(&levels);
    levels.min_level = 2;
    levels.max_level = 3;
    levels.canonical_scale = 100.0; /* the boxes above fall on both levels */
    CHECK(level16 != NULL && level32 != NULL);
    if (level16 == NULL || level32 == NULL) {
        free(level16);
        free(level32);
        return;
    }
    fill(a, 0, 71);
    {
        const uint16_t *maps16[2] = {a->map16, a->map16};
        const float *maps32[2] = {a->map32, a->map32};
        SAME_FORWARD(pyroi_roi_align_levels_forward_f16(2, maps16, shapes, view_strides, scales,
                                                        ROIS4(5), a->pooled16, pooled_strides,
                                                        &levels, &p.align),
                     pyroi_roi_align_levels_forward_f32(2, maps32, shapes, view_strides, scales,
                                                        ROIS4(5), a->pooled32, pooled_strides,
                                                        &levels, &p.align),
                     POOLED_COUNT);
        CHECK_STATUS(pyroi_roi_align_levels_forward_f16(2, maps16, NULL, view_strides, scales,
                                                        ROIS4(5), a->pooled16, pooled_strides,
                                                        &levels, &p.align),
                     PYROI_E_NULL_POINTER);
        CHECK_STATUS(pyroi_roi_align_levels_forward_f16(3, maps16, shapes, view_strides, scales,
                                                        ROIS4(5), a->pooled16, pooled_strides,
                                                        &levels, &p.align),
                     PYROI_E_INVALID_SHAPE);
    }
    fill(a, 1, 72);
    {
        uint16_t *maps16[2] = {a->map16, level16};
        float *maps32[2] = {a->map32, level32};
        size_t i;
        int same = 1;
        CHECK_STATUS(pyroi_roi_align_levels_backward_f16(a->pooled16, pooled_strides, ROIS4(5),
                                                         2, maps16, shapes, own_strides, scales,
                                                         &levels, &p.align),
                     PYROI_OK);
        CHECK_STATUS(pyroi_roi_align_levels_backward_f32(a->pooled32, pooled_strides, ROIS4(5),
                                                         2, maps32, shapes, own_strides, scales,
                                                         &levels, &p.align),
                     PYROI_OK);
        CHECK(same_rounded(a->map16, a->map32, MAP_COUNT));
        CHECK(same_rounded(level16, level32, LEVEL1_COUNT));
        for (i = 0; i < LEVEL1_COUNT; ++i) {
            same &= level16[i] == 0; /* not a map of zeros: the test compares something */
        }
        CHECK(!same);
    }
    free(level16);
    free(level32);
}

/* The scratch keeper the chunks run under (common.h): a mapped block freed while it is open
 * comes back for the next block that fits, the larger of two freed is kept, a nested begin
 * does nothing, small blocks are never kept, and its end gives the block back. */
static void test_scratch_keeper(void)
{
#if defined(PYROI_THREAD_LOCAL) && defined(__unix__)
    const size_t mib = (size_t)1 << 20;
    pyroi_scratch_keeper keeper, nested;
    unsigned char *first, *again, *larger, *small;
    pyroi_scratch_keep_begin(&keeper);
    CHECK(keeper.opened && keeper.kept == NULL);
    first = (unsigned char *)pyroi_aligned_malloc(2 * mib);
    CHECK(first != NULL);
    if (first == NULL) {
        return;
    }
    memset(first, 0xab, 2 * mib);
    pyroi_aligned_free(first);
    CHECK(keeper.kept != NULL);
    again = (unsigned char *)pyroi_aligned_malloc(mib + mib / 2); /* fits: the same pages */
    CHECK(again == first && keeper.kept == NULL);
    if (again != NULL) {
        again[mib + mib / 2 - 1] = 1; /* writable to its end */
    }
    larger = (unsigned char *)pyroi_aligned_malloc(4 * mib);
    CHECK(larger != NULL && larger != again);
    pyroi_aligned_free(again);
    pyroi_aligned_free(larger); /* the larger stays, the other is unmapped */
    pyroi_scratch_keep_begin(&nested);
    CHECK(!nested.opened);
    pyroi_scratch_keep_end(&nested); /* not the open one: nothing */
    again = (unsigned char *)pyroi_aligned_malloc(3 * mib);
    CHECK(again == larger);
    small = (unsigned char *)pyroi_aligned_malloc(4096);
    pyroi_aligned_free(small);
    CHECK(keeper.kept == NULL); /* a malloc'd block is freed, not kept */
    pyroi_aligned_free(again);
    CHECK(keeper.kept != NULL);
    pyroi_scratch_keep_end(&keeper);
    CHECK(!keeper.opened && keeper.kept == NULL);
    first = (unsigned char *)pyroi_aligned_malloc(2 * mib); /* closed: nothing is kept */
    pyroi_aligned_free(first);
    CHECK(keeper.kept == NULL);
#endif
}

/* The spare scratch block kept between calls (pyroi.h): a mapped block freed outside a
 * keeper stays mapped within the limit and comes back for the next block that fits; a block
 * above the limit is unmapped; a limit of 0 unmaps the spare. */
static void test_scratch_cache(void)
{
#if defined(__unix__) && !defined(PYROI_NO_THREADS)
    const size_t mib = (size_t)1 << 20;
    const size_t previous = pyroi_set_scratch_cache_limit(0); /* empties the cache */
    unsigned char *block, *again;
    CHECK(pyroi_scratch_cache_bytes() == 0);
    CHECK(pyroi_set_scratch_cache_limit(8 * mib) == 0 && pyroi_scratch_cache_limit() == 8 * mib);
    block = (unsigned char *)pyroi_aligned_malloc(2 * mib);
    CHECK(block != NULL);
    if (block == NULL) {
        return;
    }
    memset(block, 0xab, 2 * mib);
    pyroi_aligned_free(block);
    CHECK(pyroi_scratch_cache_bytes() >= 2 * mib && pyroi_scratch_cache_bytes() < 3 * mib);
    again = (unsigned char *)pyroi_aligned_malloc(mib + mib / 2); /* fits: the same pages */
    CHECK(again == block && pyroi_scratch_cache_bytes() == 0);
    pyroi_aligned_free(again);
    block = (unsigned char *)pyroi_aligned_malloc(16 * mib); /* above the limit */
    CHECK(block != NULL && block != again);
    pyroi_aligned_free(block);
    CHECK(pyroi_scratch_cache_bytes() >= 2 * mib && pyroi_scratch_cache_bytes() < 3 * mib);
    CHECK(pyroi_set_scratch_cache_limit(0) == 8 * mib);
    CHECK(pyroi_scratch_cache_bytes() == 0);
    block = (unsigned char *)pyroi_aligned_malloc(2 * mib);
    pyroi_aligned_free(block);
    CHECK(pyroi_scratch_cache_bytes() == 0); /* limit 0: nothing kept */
    pyroi_set_scratch_cache_limit(previous);
#endif
}

static void test_statuses(arrays *a)
{
    static const int64_t bad_batch[K] = {0, 1, 2, 0, 1, 0, 0};
    static const int64_t odd_shape[4] = {N, C - 1, H, W};
    float bad_boxes[K * 5];
    params p;
    size_t i;
    int untouched = 1;
    params_init(&p, 0);
    memcpy(bad_boxes, boxes, sizeof(bad_boxes));
    bad_boxes[5 * 6 + 2] = NAN;
    memset(a->pooled16, 0, POOLED_COUNT * sizeof(uint16_t));
    CHECK_STATUS(pyroi_roi_pool_forward_f16(a->map16, map_shape, nchw_strides, boxes, K, 5,
                                            bad_batch, a->pooled16, pooled_strides, NULL, NULL,
                                            &p.pool), PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(pyroi_roi_pool_forward_f16(a->map16, map_shape, nchw_strides, bad_boxes, K, 5,
                                            batch, a->pooled16, pooled_strides, NULL, NULL,
                                            &p.pool), PYROI_E_INVALID_BOX);
    for (i = 0; i < POOLED_COUNT; ++i) {
        untouched &= a->pooled16[i] == 0;
    }
    CHECK(untouched);
    CHECK_STATUS(pyroi_roi_pool_forward_f16(a->map16, NULL, nchw_strides, boxes, K, 5, batch,
                                            a->pooled16, pooled_strides, NULL, NULL, &p.pool),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_forward_f16(a->map16, map_shape, nchw_strides, boxes, K, 5,
                                            batch, a->pooled16, pooled_strides, NULL, NULL,
                                            NULL), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_ps_roi_pool_forward_f16(a->map16, odd_shape, nchw_strides, boxes, K, 5,
                                               batch, a->pooled16, ps_pooled_strides, &p.ps_pool),
                 PYROI_E_INVALID_SHAPE);
    /* no channels: still one float32 call, which checks the boxes */
    {
        const int64_t empty[4] = {N, 0, H, W};
        CHECK_STATUS(pyroi_roi_pool_forward_f16(a->map16, empty, nchw_strides, bad_boxes, K, 5,
                                                batch, a->pooled16, pooled_strides, NULL, NULL,
                                                &p.pool), PYROI_E_INVALID_BOX);
        CHECK_STATUS(pyroi_roi_pool_forward_f16(a->map16, empty, nchw_strides, boxes, K, 5,
                                                batch, a->pooled16, pooled_strides, NULL, NULL,
                                                &p.pool), PYROI_OK);
    }
}

/* The branch-free conversions against their definitions: every float16 value widened
 * (value = mantissa * 2^(exponent - 25) scaled as binary16 says), and NaN payloads. */
static void test_conversions(void)
{
    uint32_t h;
    int exact = 1;
    for (h = 0; h < 0x10000u; ++h) {
        const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
        const float value = pyroi_half_to_float((uint16_t)h);
        double expected;
        if (e == 0x1fu) {
            exact &= m == 0 ? isinf(value) && (signbit(value) != 0) == ((h & 0x8000u) != 0)
                            : isnan(value) && (pyroi_float_to_bits(value) & 0x7fffffu) == m << 13;
            continue;
        }
        expected = e == 0 ? ldexp((double)m, -24) : ldexp(1.0 + m / 1024.0, (int)e - 15);
        exact &= (double)value == ((h & 0x8000u) ? -expected : expected) &&
                 (signbit(value) != 0) == ((h & 0x8000u) != 0);
    }
    CHECK(exact);
    /* NaN: quiet, payload's top bits kept, sign kept */
    CHECK(pyroi_float_to_half(pyroi_bits_to_float(0x7f800001u)) == 0x7e00u);
    CHECK(pyroi_float_to_half(pyroi_bits_to_float(0xffa00000u)) == 0xff00u);
    CHECK(pyroi_float_to_half(pyroi_bits_to_float(0x7fc02000u)) == 0x7e01u);
}

/* A widened element equals pyroi_half_to_float's: the same bits, or for a NaN a NaN of the
 * same sign (VCVTPH2PS quiets a signalling one). */
static int same_widened(float widened, uint16_t half)
{
    const float expected = pyroi_half_to_float(half);
    if (isnan(expected)) {
        return isnan(widened) && (signbit(widened) != 0) == (signbit(expected) != 0);
    }
    return pyroi_float_to_bits(widened) == pyroi_float_to_bits(expected);
}

/* pyroi_half_channels_to_lanes_f32 (the gathers of a float16 map) over every float16 value,
 * channel rows (the 8 x 8 F16C tiles and their tails) and channels-last pixels, full and
 * partial lane groups, into pair-interleaved blocks; pyroi_half_round_run against
 * pyroi_float_to_half, packed and strided. */
static void test_lane_conversions(void)
{
    enum { ROWS = 16, ROW = 96, PITCH = 32 };
    static const int64_t counts[] = {0, 1, 7, 8, 9, 15, 16, 17, 70, 96};
    uint16_t *src = malloc(ROWS * ROW * sizeof(uint16_t));
    uint16_t *rounded = malloc(3 * 64 * sizeof(uint16_t));
    float *dst = malloc(ROW * PITCH * sizeof(float));
    float values[64];
    unsigned long long seed = 7;
    uint32_t first;
    int64_t c, layout, lanes, i, j;
    int exact = 1;
    if (src == NULL || dst == NULL || rounded == NULL) {
        CHECK(0);
        free(src);
        free(dst);
        free(rounded);
        return;
    }
    for (first = 0; first < 0x10000u; first += ROWS * ROW) {
        for (i = 0; i < ROWS * ROW; ++i) {
            src[i] = (uint16_t)((first + (uint32_t)i) & 0xffffu);
        }
        for (layout = 0; layout < 2; ++layout) { /* channel rows, channels-last pixels */
            const int64_t lane_stride = layout == 0 ? ROW : 1;
            const int64_t stride = layout == 0 ? 1 : ROWS;
            for (lanes = 5; lanes <= 16; lanes += 11) {
                for (c = 0; c < (int64_t)(sizeof counts / sizeof counts[0]); ++c) {
                    for (i = 0; i < ROW * PITCH; ++i) {
                        dst[i] = -1.0f;
                    }
                    pyroi_half_channels_to_lanes_f32(src, lane_stride, stride, counts[c], lanes,
                                                     dst, PITCH);
                    for (i = 0; i < counts[c]; ++i) {
                        for (j = 0; j < 16; ++j) {
                            const float got = dst[i * PITCH + j];
                            exact &= j < lanes ? same_widened(got, src[j * lane_stride +
                                                                       i * stride])
                                               : pyroi_float_to_bits(got) == 0;
                        }
                        exact &= dst[i * PITCH + 16] == -1.0f; /* the pair's other group */
                    }
                }
            }
        }
    }
    CHECK(exact);
    for (i = 0; i < 64; ++i) { /* random bits, ties, overflow, subnormals, NaN */
        values[i] = pyroi_bits_to_float((uint32_t)(check_random(&seed) * 4294967296.0));
    }
    values[0] = 65520.0f;
    values[1] = 2049.0f;
    values[2] = 2051.0f;
    values[3] = 1e-7f;
    values[4] = pyroi_bits_to_float(0x7fc02000u);
    for (c = 0; c <= 40; c += 13) {
        for (j = 1; j <= 3; j += 2) {
            for (i = 0; i < 3 * 64; ++i) {
                rounded[i] = 0x1234u;
            }
            pyroi_half_round_run(values + c % 7, c, rounded, j);
            for (i = 0; i < c; ++i) {
                exact &= rounded[i * j] == pyroi_float_to_half(values[c % 7 + i]);
            }
            exact &= rounded[c * j] == 0x1234u;
        }
    }
    CHECK(exact);
    free(src);
    free(dst);
    free(rounded);
}

/* pyroi_half_round_stream against pyroi_float_to_half at every element offset from a 64-byte
 * line (the whole lines streamed, the partial ones at both ends plain), runs within a line,
 * across one boundary and over several lines; nothing written past either end. */
static void test_round_stream(void)
{
    enum { SPAN = 256 };
    static const int64_t counts[] = {0, 1, 5, 31, 32, 33, 63, 64, 65, 96, 127, 200};
    uint16_t *line_aligned = pyroi_aligned_malloc((SPAN + 64) * sizeof(uint16_t));
    float values[SPAN];
    unsigned long long seed = 11;
    int64_t offset, c, i;
    int exact = 1;
    if (line_aligned == NULL) {
        CHECK(0);
        return;
    }
    for (i = 0; i < SPAN; ++i) { /* random bits: ties, overflow, subnormals, NaN */
        values[i] = pyroi_bits_to_float((uint32_t)(check_random(&seed) * 4294967296.0));
    }
    values[3] = 65520.0f;
    values[40] = 2049.0f;
    for (offset = 0; offset < 34; ++offset) {
        for (c = 0; c < (int64_t)(sizeof counts / sizeof counts[0]); ++c) {
            uint16_t *to = line_aligned + 1 + offset; /* a guard element before */
            for (i = 0; i < SPAN + 64; ++i) {
                line_aligned[i] = 0x1234u;
            }
            pyroi_half_round_stream(values + offset % 5, counts[c], to);
            pyroi_stream_fence();
            for (i = 0; i < counts[c]; ++i) {
                exact &= to[i] == pyroi_float_to_half(values[offset % 5 + i]);
            }
            exact &= to[-1] == 0x1234u && to[counts[c]] == 0x1234u;
        }
    }
    CHECK(exact);
    pyroi_aligned_free(line_aligned);
}

int main(void)
{
    arrays a;
    int threads;
    a.map16 = malloc(MAP_COUNT * sizeof(uint16_t));
    a.pooled16 = malloc(POOLED_COUNT * sizeof(uint16_t));
    a.map32 = malloc(MAP_COUNT * sizeof(float));
    a.pooled32 = malloc(2 * POOLED_COUNT * sizeof(float));
    a.argmax16 = malloc(POOLED_COUNT * sizeof(int64_t));
    a.argmax32 = malloc(POOLED_COUNT * sizeof(int64_t));
    if (!a.map16 || !a.pooled16 || !a.map32 || !a.pooled32 || !a.argmax16 || !a.argmax32) {
        return 2;
    }
    test_conversions();
    test_lane_conversions();
    test_round_stream();
    test_scratch_keeper();
    test_scratch_cache();
    for (threads = 1; threads <= 2; ++threads) {
        test_forwards(&a, nchw_strides, threads);
        test_forwards(&a, nhwc_strides, threads);
        test_backwards(&a, nchw_strides, threads);
        test_backwards(&a, nhwc_strides, threads);
        test_roi_pool_int32(&a, nchw_strides, threads);
        test_roi_pool_int32(&a, nhwc_strides, threads);
        test_levels(&a, threads);
    }
    test_statuses(&a);
    free(a.map16);
    free(a.pooled16);
    free(a.map32);
    free(a.pooled32);
    free(a.argmax16);
    free(a.argmax32);
    return check_report("test_half");
}
