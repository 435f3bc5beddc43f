/* The lane/channel transposes move every element to its place, on every path (AVX2 where
 * available, portable otherwise, and for every count, lane count and stride). */
#include "pyroi.h"
#include "check.h"
#include "transpose.h"

#include <string.h>

enum { MAX_COUNT = 45, LANES32 = PYROI_LANE_COUNT_F32, LANES64 = PYROI_LANE_COUNT_F64 };

static void test_f32(int64_t count, int64_t lanes, int64_t stride)
{
    static float lanes_major[MAX_COUNT * LANES32], channels[LANES32 * MAX_COUNT * 3];
    static float back[MAX_COUNT * LANES32];
    int64_t i, j;
    for (i = 0; i < count * LANES32; ++i) {
        lanes_major[i] = (float)(i + 1);
    }
    memset(channels, 0, sizeof(channels));
    /* lane stride: MAX_COUNT * stride elements per channel row fits the buffer */
    pyroi_lanes_to_channels_f32(lanes_major, count, lanes, channels, MAX_COUNT * stride, stride);
    for (j = 0; j < lanes; ++j) {
        for (i = 0; i < count; ++i) {
            CHECK(channels[j * MAX_COUNT * stride + i * stride] == lanes_major[i * LANES32 + j]);
        }
    }
    memset(back, 0xff, sizeof(back));
    pyroi_channels_to_lanes_f32(channels, MAX_COUNT * stride, stride, count, lanes, back);
    for (i = 0; i < count; ++i) {
        for (j = 0; j < LANES32; ++j) {
            CHECK(back[i * LANES32 + j] == (j < lanes ? lanes_major[i * LANES32 + j] : 0.0f));
        }
    }
}

static void test_f64(int64_t count, int64_t lanes, int64_t stride)
{
    static double lanes_major[MAX_COUNT * LANES64], channels[LANES64 * MAX_COUNT * 3];
    static double back[MAX_COUNT * LANES64];
    int64_t i, j;
    for (i = 0; i < count * LANES64; ++i) {
        lanes_major[i] = (double)(i + 1);
    }
    memset(channels, 0, sizeof(channels));
    pyroi_lanes_to_channels_f64(lanes_major, count, lanes, channels, MAX_COUNT * stride, stride);
    for (j = 0; j < lanes; ++j) {
        for (i = 0; i < count; ++i) {
            CHECK(channels[j * MAX_COUNT * stride + i * stride] == lanes_major[i * LANES64 + j]);
        }
    }
    pyroi_channels_to_lanes_f64(channels, MAX_COUNT * stride, stride, count, lanes, back);
    for (i = 0; i < count; ++i) {
        for (j = 0; j < LANES64; ++j) {
            CHECK(back[i * LANES64 + j] == (j < lanes ? lanes_major[i * LANES64 + j] : 0.0));
        }
    }
}

static void test_lanes_adjacent_f32(int64_t count, int64_t lanes, int64_t stride)
{
    static float lanes_major[MAX_COUNT * LANES32], channels[MAX_COUNT * 20 + LANES32];
    static float back[MAX_COUNT * LANES32];
    int64_t i, j;
    for (i = 0; i < count * LANES32; ++i) {
        lanes_major[i] = (float)(i + 1);
    }
    memset(channels, 0, sizeof(channels));
    pyroi_lanes_to_channels_f32(lanes_major, count, lanes, channels, 1, stride);
    for (i = 0; i < count; ++i) {
        for (j = 0; j < lanes; ++j) {
            CHECK(channels[i * stride + j] == lanes_major[i * LANES32 + j]);
        }
    }
    pyroi_channels_to_lanes_f32(channels, 1, stride, count, lanes, back);
    for (i = 0; i < count; ++i) {
        for (j = 0; j < LANES32; ++j) {
            CHECK(back[i * LANES32 + j] == (j < lanes ? lanes_major[i * LANES32 + j] : 0.0f));
        }
    }
}

int main(void)
{
    int64_t count, stride;
    for (count = 0; count <= MAX_COUNT; ++count) {
        for (stride = 1; stride <= 3; stride += 2) {
            /* channels-last rows: the lanes of an element are adjacent (lane stride 1) */
            test_lanes_adjacent_f32(count, LANES32, stride + 16);
            test_lanes_adjacent_f32(count, 7, stride + 16);
            test_f32(count, LANES32, stride);
            test_f32(count, 5, stride);
            test_f64(count, LANES64, stride);
            test_f64(count, 3, stride);
        }
    }
    return check_report("test_transpose");
}
