/* pyroi_roi_pool_forward_half (roi_pool_half.h), the float16 RoIPool forward in place: it
 * takes the calls of the lane-major orders and equals the float32 call on the widened map,
 * rounded once, argmax included (int64 and int32); a map whose planes are too large for a
 * block per worker is not taken and nothing is written; a box that is not finite once scaled
 * is the float32 call's status. */
#include "check.h"
#include "core/half.h"
#include "roi_pool/roi_pool_half.h"

#include <stdlib.h>
#include <string.h>

enum { C = 19, H = 23, W = 29, K = 5, PH = 3, PW = 4 };
#define MAP_COUNT ((size_t)C * H * W)
#define POOLED_COUNT ((size_t)K * C * PH * PW)

static const int64_t pooled_strides[4] = {C * PH * PW, PH * PW, PW, 1};
static const int64_t batch[K] = {0, 0, 0, 0, 0};
/* inside, partly off the map, entirely off it, inverted, one pixel */
static const float boxes[K * 4] = {1, 2, 40, 30, -10, -5, 20, 50, 100, 100, 140, 120,
                                   30, 20, 3, 4, 8, 8, 8, 8};

static void test_equals_float32(const int64_t strides[4], int wide, int threads)
{
    static const int64_t shape[4] = {1, C, H, W};
    uint16_t *map16 = malloc(MAP_COUNT * sizeof(uint16_t));
    float *map32 = malloc(MAP_COUNT * sizeof(float));
    uint16_t *out16 = malloc(POOLED_COUNT * sizeof(uint16_t));
    float *out32 = malloc(POOLED_COUNT * sizeof(float));
    int64_t *argmax16 = malloc(POOLED_COUNT * sizeof(int64_t));
    int64_t *argmax32 = malloc(POOLED_COUNT * sizeof(int64_t));
    unsigned long long seed = 5;
    pyroi_roi_pool_params params;
    size_t i;
    int taken = 0;
    if (!map16 || !map32 || !out16 || !out32 || !argmax16 || !argmax32) {
        CHECK(0);
        return;
    }
    for (i = 0; i < MAP_COUNT; ++i) { /* few values: ties; signed zeros, NaN, infinities */
        const int pick = (int)(check_random(&seed) * 12.0);
        map16[i] = pick == 0 ? 0x8000u : pick == 1 ? 0x7e00u : pick == 2 ? 0xfc00u
                                                  : pyroi_float_to_half((float)(pick - 7));
        map32[i] = pyroi_half_to_float(map16[i]);
    }
    pyroi_roi_pool_params_init(&params);
    params.pooled_height = PH;
    params.pooled_width = PW;
    params.spatial_scale_h = params.spatial_scale_w = 0.75;
    params.num_threads = threads;
    CHECK_STATUS(pyroi_roi_pool_forward_half(map16, shape, strides, boxes, K, 4, batch, out16,
                                             pooled_strides, argmax16, pooled_strides, wide,
                                             &params, &taken),
                 PYROI_OK);
    CHECK(taken == 1);
    if (wide) {
        CHECK_STATUS(pyroi_roi_pool_forward_f32(map32, shape, strides, boxes, K, 4, batch, out32,
                                                pooled_strides, argmax32, pooled_strides,
                                                &params),
                     PYROI_OK);
    } else {
        CHECK_STATUS(pyroi_roi_pool_forward_i32_f32(map32, shape, strides, boxes, K, 4, batch,
                                                    out32, pooled_strides,
                                                    (int32_t *)(void *)argmax32, pooled_strides,
                                                    &params),
                     PYROI_OK);
    }
    for (i = 0; i < POOLED_COUNT; ++i) {
        CHECK(out16[i] == pyroi_float_to_half(out32[i]));
    }
    CHECK(memcmp(argmax16, argmax32, POOLED_COUNT * (wide ? 8 : 4)) == 0);
    free(map16);
    free(map32);
    free(out16);
    free(out32);
    free(argmax16);
    free(argmax32);
}

static void test_not_taken_and_statuses(void)
{
    /* one 1024 x 1024 channel: beyond the lane-major scratch (a block of 32 channels) */
    static const int64_t big_shape[4] = {1, 1, 1024, 1024};
    static const int64_t big_strides[4] = {1024 * 1024, 1024 * 1024, 1024, 1};
    static const int64_t out_strides[4] = {PH * PW, PH * PW, PW, 1};
    static const int64_t small_shape[4] = {1, 1, 8, 8};
    static const int64_t small_strides[4] = {64, 64, 8, 1};
    static const float bad_box[4] = {0, 0, 1e30f, 1}; /* finite, but not once scaled */
    uint16_t *map = calloc((size_t)1024 * 1024, sizeof(uint16_t));
    uint16_t out[PH * PW];
    pyroi_roi_pool_params params;
    size_t i;
    int taken = 1;
    if (map == NULL) {
        CHECK(0);
        return;
    }
    pyroi_roi_pool_params_init(&params);
    params.pooled_height = PH;
    params.pooled_width = PW;
    memset(out, 0xab, sizeof(out));
    CHECK_STATUS(pyroi_roi_pool_forward_half(map, big_shape, big_strides, boxes, 1, 4, batch,
                                             out, out_strides, NULL, NULL, 1, &params, &taken),
                 PYROI_OK);
    CHECK(taken == 0);
    for (i = 0; i < PH * PW; ++i) {
        CHECK(out[i] == 0xabab); /* nothing written */
    }
    params.spatial_scale_h = params.spatial_scale_w = 1e10;
    CHECK_STATUS(pyroi_roi_pool_forward_half(map, small_shape, small_strides, bad_box, 1, 4,
                                             batch, out, out_strides, NULL, NULL, 1, &params,
                                             &taken),
                 PYROI_E_INVALID_BOX);
    CHECK(taken == 1);
    free(map);
}

int main(void)
{
    static const int64_t nchw[4] = {(int64_t)C * H * W, (int64_t)H * W, W, 1};
    static const int64_t nhwc[4] = {(int64_t)C * H * W, 1, (int64_t)W * C, C};
    int threads, wide;
    for (threads = 1; threads <= 2; ++threads) {
        for (wide = 0; wide <= 1; ++wide) {
            test_equals_float32(nchw, wide, threads);
            test_equals_float32(nhwc, wide, threads);
        }
    }
    test_not_taken_and_statuses();
    return check_report("test_pool_half");
}
