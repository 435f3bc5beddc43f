/* test_concurrent_writes.c - a caller's thread writes the boxes, batch indices and argmax
 * while the calls that read them run: the results are then unspecified, but no call may read
 * or write outside its buffers (run under AddressSanitizer in CI). Each operator, forward and
 * backward (multi-scale RoIAlign too), runs repeatedly for a while against a writer thread
 * that keeps switching the RoIs between small boxes, boxes covering the map, and hostile
 * values (NaN, infinities, huge and negative coordinates, batch indices and argmax out of
 * range). Before every value that sizes
 * or indexes memory was read once, the check saw small boxes, the tap tables were sized for
 * them and then filled for large ones (heap overflow). */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "pyroi.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 2
#define C 8 /* a multiple of PH * PW for the position-sensitive operators */
#define H 24
#define W 24
#define K 16
#define PH 2
#define PW 2
#define COORDS 5 /* rows hold up to 5 values: rotated boxes, or [index, x1, y1, x2, y2] */

/* What the writer writes, and what the calls read. */
static float boxes32[K * COORDS];
static double boxes64[K * COORDS];
static int64_t batch[K];
static int64_t argmax[K * C * PH * PW];
static volatile int stop;

/* Scribbles a pattern into the shared inputs; the patterns change from one sweep to the next
 * so that a call sees different values in each pass over them. */
static void scribble(unsigned pattern)
{
    static const double hostile[] = {NAN, INFINITY, -INFINITY, 1e30, -1e30, 3.4e38, -5.0,
                                     1e6};
    static const int64_t bad_index[] = {-1, N, INT64_MAX, INT64_MIN, -(INT64_C(1) << 40)};
    static const int64_t bad_argmax[] = {-2, H * W, H * W * 4, INT64_MAX, INT64_MIN, 1 << 20};
    int i;
    for (i = 0; i < K * COORDS; ++i) {
        double value;
        switch (pattern % 4) {
        case 0: /* small boxes: one sample per bin */
            value = (double)(i % COORDS) * 0.5 + 1.0;
            break;
        case 1: /* boxes over the whole map: many samples per bin */
            value = i % 2 == 0 ? -4.0 : 4.0 * W;
            break;
        case 2:
            value = hostile[(unsigned)i % (sizeof(hostile) / sizeof(hostile[0]))];
            break;
        default: /* valid indices in the first column of (K, 5) rows, large boxes */
            value = i % COORDS == 0 ? (double)(i % N) : (double)(i % 7) * 9.0;
            break;
        }
        boxes32[i] = (float)value;
        boxes64[i] = value;
    }
    for (i = 0; i < K; ++i) {
        batch[i] = pattern % 3 == 2 ? bad_index[(unsigned)i % 5] : (int64_t)(i % N);
    }
    for (i = 0; i < K * C * PH * PW; ++i) {
        argmax[i] = pattern % 3 == 1 ? bad_argmax[(unsigned)i % 6] : (int64_t)(i % 5) - 1;
    }
}

static void *writer(void *unused)
{
    unsigned pattern = 0;
    (void)unused;
    while (!stop) {
        scribble(pattern++);
    }
    return NULL;
}

static double seconds_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* Buffers every call reads or writes besides the shared ones. */
static float input32[N * C * H * W], grad_input32[N * C * H * W];
static double input64[N * C * H * W], grad_input64[N * C * H * W];
static float pooled32[K * C * PH * PW];
static double pooled64[K * C * PH * PW];
static int64_t argmax_out[K * C * PH * PW], levels[K], row_indices[K];
/* a pyramid of two levels for the multi-scale calls: the map above and one of half its size */
static float half32[N * C * (H / 2) * (W / 2)], grad_half32[N * C * (H / 2) * (W / 2)];
static const int64_t pyramid_shapes[8] = {N, C, H, W, N, C, H / 2, W / 2};
static const int64_t pyramid_strides[8] = {C * H * W, H * W, W, 1,
                                           C * (H / 2) * (W / 2), (H / 2) * (W / 2), W / 2, 1};
static const double pyramid_scales[2] = {0.5, 0.25};
static unsigned char workspace[1 << 20];

static const int64_t map_shape[4] = {N, C, H, W};
static const int64_t map_strides[4] = {C * H * W, H * W, W, 1};
static const int64_t pooled_strides[4] = {C * PH * PW, PH * PW, PW, 1};
static const int64_t ps_pooled_strides[4] = {C / (PH * PW) * PH * PW, PH * PW, PW, 1};

/* One call of an operator reading the shared inputs; which = the operator's index. Returns 0
 * past the last one. */
static int call_operator(int which)
{
    pyroi_roi_align_params align;
    pyroi_roi_pool_params pool;
    pyroi_ps_roi_align_params ps_align;
    pyroi_ps_roi_pool_params ps_pool;
    pyroi_roi_align_rotated_params rotated;
    pyroi_fpn_level_params fpn;
    int64_t failed;
    size_t bytes;
    pyroi_roi_align_params_init(&align);
    align.pooled_height = PH;
    align.pooled_width = PW;
    align.spatial_scale_h = align.spatial_scale_w = 0.5;
    pyroi_roi_pool_params_init(&pool);
    pool.pooled_height = PH;
    pool.pooled_width = PW;
    pyroi_ps_roi_align_params_init(&ps_align);
    ps_align.pooled_height = PH;
    ps_align.pooled_width = PW;
    pyroi_ps_roi_pool_params_init(&ps_pool);
    ps_pool.pooled_height = PH;
    ps_pool.pooled_width = PW;
    pyroi_roi_align_rotated_params_init(&rotated);
    rotated.pooled_height = PH;
    rotated.pooled_width = PW;
    pyroi_fpn_level_params_init(&fpn);
    fpn.min_level = 2; /* for the multi-scale calls: boxes of 4 px or more on the second map */
    fpn.max_level = 3;
    fpn.canonical_scale = 4.0;
    fpn.canonical_level = 3.0;
    /* the statuses are whatever the values seen give; only memory safety is tested */
    switch (which) {
    case 0:
        (void)pyroi_roi_align_forward_f32(input32, map_shape, map_strides, boxes32, K, 4, batch,
                                          pooled32, pooled_strides, &align);
        return 1;
    case 1:
        (void)pyroi_roi_align_backward_f32(pooled32, pooled_strides, boxes32, K, 4, batch,
                                           grad_input32, map_shape, map_strides, &align);
        return 1;
    case 2:
        (void)pyroi_roi_align_forward_f64(input64, map_shape, map_strides, boxes64 + 1, K,
                                          COORDS, batch, pooled64, pooled_strides, &align);
        return 1;
    case 3:
        (void)pyroi_roi_align_backward_f64(pooled64, pooled_strides, boxes64 + 1, K, COORDS,
                                           batch, grad_input64, map_shape, map_strides, &align);
        return 1;
    case 4:
        (void)pyroi_roi_align_max_forward_f32(input32, map_shape, map_strides, boxes32, K, 4,
                                              batch, pooled32, pooled_strides, argmax_out,
                                              pooled_strides, &align);
        return 1;
    case 5:
        (void)pyroi_roi_align_max_backward_f32(pooled32, pooled_strides, argmax, pooled_strides,
                                               boxes32, K, 4, batch, grad_input32, map_shape,
                                               map_strides, &align);
        return 1;
    case 6:
        (void)pyroi_roi_align_onnx_max_forward_f32(input32, map_shape, map_strides, boxes32, K,
                                                   4, batch, pooled32, pooled_strides, &align);
        return 1;
    case 7:
        if (pyroi_roi_align_backward_workspace_size_f32(boxes32, K, 4, batch, map_shape, &align,
                                                        &bytes) == PYROI_OK &&
            bytes <= sizeof(workspace)) {
            (void)pyroi_roi_align_backward_with_workspace_f32(
                pooled32, pooled_strides, boxes32, K, 4, batch, grad_input32, map_shape,
                map_strides, &align, workspace, bytes);
        }
        return 1;
    case 8:
        (void)pyroi_ps_roi_align_forward_f32(input32, map_shape, map_strides, boxes32, K, 4,
                                             batch, pooled32, ps_pooled_strides, &ps_align);
        return 1;
    case 9:
        (void)pyroi_ps_roi_align_backward_f32(pooled32, ps_pooled_strides, boxes32, K, 4, batch,
                                              grad_input32, map_shape, map_strides, &ps_align);
        return 1;
    case 10:
        (void)pyroi_ps_roi_pool_forward_f32(input32, map_shape, map_strides, boxes32, K, 4,
                                            batch, pooled32, ps_pooled_strides, &ps_pool);
        return 1;
    case 11:
        (void)pyroi_ps_roi_pool_backward_f32(pooled32, ps_pooled_strides, boxes32, K, 4, batch,
                                             grad_input32, map_shape, map_strides, &ps_pool);
        return 1;
    case 12:
        (void)pyroi_roi_align_rotated_forward_f32(input32, map_shape, map_strides, boxes32, K,
                                                  COORDS, batch, pooled32, pooled_strides,
                                                  &rotated);
        return 1;
    case 13:
        (void)pyroi_roi_align_rotated_backward_f32(pooled32, pooled_strides, boxes32, K, COORDS,
                                                   batch, grad_input32, map_shape, map_strides,
                                                   &rotated);
        return 1;
    case 14:
        (void)pyroi_roi_pool_forward_f32(input32, map_shape, map_strides, boxes32, K, 4, batch,
                                         pooled32, pooled_strides, argmax_out, pooled_strides,
                                         &pool);
        return 1;
    case 15:
        (void)pyroi_roi_pool_backward_f32(pooled32, pooled_strides, argmax, pooled_strides,
                                          batch, K, grad_input32, map_shape, map_strides, &pool);
        return 1;
    case 16:
        (void)pyroi_roi_pool_backward_f64(pooled64, pooled_strides, argmax, pooled_strides,
                                          batch, K, grad_input64, map_shape, map_strides, &pool);
        return 1;
    case 17:
        (void)pyroi_fpn_levels_f32(boxes32, K, 4, &fpn, levels);
        return 1;
    case 18: /* (K, 5) rows: the indices as the operators take them, then a call with them */
        if (pyroi_roi_rows_batch_indices_f32(boxes32, K, COORDS, 4, N, row_indices, &failed) ==
            PYROI_OK) {
            (void)pyroi_roi_align_forward_f32(input32, map_shape, map_strides, boxes32 + 1, K,
                                              COORDS, row_indices, pooled32, pooled_strides,
                                              &align);
        }
        return 1;
    case 19: {
        const float *maps[2] = {input32, half32};
        (void)pyroi_roi_align_levels_forward_f32(2, maps, pyramid_shapes, pyramid_strides,
                                                 pyramid_scales, boxes32, K, 4, batch, pooled32,
                                                 pooled_strides, &fpn, &align);
        return 1;
    }
    case 20: {
        float *const maps[2] = {grad_input32, grad_half32};
        (void)pyroi_roi_align_levels_backward_f32(pooled32, pooled_strides, boxes32, K, 4, batch,
                                                  2, maps, pyramid_shapes, pyramid_strides,
                                                  pyramid_scales, &fpn, &align);
        return 1;
    }
    default:
        return 0;
    }
}

int main(void)
{
    const char *budget_text = getenv("PYROI_CONCURRENT_SECONDS");
    const double budget = budget_text != NULL ? atof(budget_text) : 0.25; /* per operator */
    const char *only_text = getenv("PYROI_CONCURRENT_ONLY"); /* one operator (by hand) */
    const int only = only_text != NULL ? atoi(only_text) : -1;
    pthread_t thread;
    int which, i;
    for (i = 0; i < N * C * H * W; ++i) {
        input32[i] = (float)(i % 17) - 8.0f;
        input64[i] = (double)(i % 13) - 6.0;
    }
    for (i = 0; i < N * C * (H / 2) * (W / 2); ++i) {
        half32[i] = (float)(i % 11) - 5.0f;
    }
    scribble(0);
    CHECK(pthread_create(&thread, NULL, writer, NULL) == 0);
    for (which = 0;; ++which) {
        const double end = seconds_now() + budget;
        long calls = 0;
        while (seconds_now() < end || calls < 20) {
            if (only >= 0 && which != only) {
                ++calls;
                break;
            }
            if (!call_operator(which)) {
                break;
            }
            ++calls;
        }
        if (calls == 0) {
            break;
        }
    }
    stop = 1;
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(which == 21); /* every operator ran (or was skipped) */
    return check_report("test_concurrent_writes");
}
