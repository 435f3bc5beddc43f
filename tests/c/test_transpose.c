/* The lane/channel transposes move every element to its place, on every path (AVX2 where
 * available, portable otherwise, and for every count, lane count and stride; into lane-major
 * rows of L elements a pixel or, interleaved, 2L, leaving the other half and every pixel past
 * the count alone); so do the streaming copies. */
#include "pyroi.h"
#include "check.h"
#include "transpose.h"

#include <string.h>

enum { MAX_COUNT = 45, LANES32 = PYROI_LANE_COUNT_F32, LANES64 = PYROI_LANE_COUNT_F64 };

/* An element of the lane-major buffer that no transpose wrote: all bytes still 0xff. */
static int untouched(const void *element, size_t size)
{
    const unsigned char *bytes = (const unsigned char *)element;
    size_t i;
    for (i = 0; i < size; ++i) {
        if (bytes[i] != 0xff) {
            return 0;
        }
    }
    return 1;
}

/* Lane-major -> channel rows (lane stride MAX_COUNT * stride: fits the buffer) -> lane-major
 * rows of pitch L and 2L; the second half of each 2L row must stay untouched. */
#define ROUND_TRIP_TEST(T, SUFFIX, L)                                                          \
    static void test_##SUFFIX(int64_t count, int64_t lanes, int64_t stride)                    \
    {                                                                                          \
        static T lanes_major[MAX_COUNT * (L)], channels[(L) * MAX_COUNT * 3];                  \
        static T back[MAX_COUNT * 2 * (L)];                                                    \
        int64_t i, j, pitch;                                                                   \
        for (i = 0; i < count * (L); ++i) {                                                    \
            lanes_major[i] = (T)(i + 1);                                                       \
        }                                                                                      \
        memset(channels, 0, sizeof(channels));                                                 \
        pyroi_lanes_to_channels_##SUFFIX(lanes_major, count, lanes, channels,                  \
                                         MAX_COUNT * stride, stride);                          \
        for (j = 0; j < lanes; ++j) {                                                          \
            for (i = 0; i < count; ++i) {                                                      \
                CHECK(channels[j * MAX_COUNT * stride + i * stride] ==                         \
                      lanes_major[i * (L) + j]);                                               \
            }                                                                                  \
        }                                                                                      \
        for (pitch = (L); pitch <= 2 * (L); pitch += (L)) {                                    \
            memset(back, 0xff, sizeof(back));                                                  \
            pyroi_channels_to_lanes_##SUFFIX(channels, MAX_COUNT * stride, stride, count,      \
                                             lanes, back, pitch);                              \
            for (i = 0; i < count; ++i) {                                                      \
                for (j = 0; j < pitch; ++j) {                                                  \
                    if (j >= (L)) {                                                            \
                        CHECK(untouched(&back[i * pitch + j], sizeof(T)));                     \
                    } else {                                                                   \
                        CHECK(back[i * pitch + j] ==                                           \
                              (j < lanes ? lanes_major[i * (L) + j] : (T)0));                  \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
            for (i = count * pitch; i < MAX_COUNT * 2 * (L); ++i) { /* nothing past count */   \
                CHECK(untouched(&back[i], sizeof(T)));                                         \
            }                                                                                  \
        }                                                                                      \
    }

ROUND_TRIP_TEST(float, f32, LANES32)
ROUND_TRIP_TEST(double, f64, LANES64)

static void test_lanes_adjacent_f32(int64_t count, int64_t lanes, int64_t stride)
{
    static float lanes_major[MAX_COUNT * LANES32], channels[MAX_COUNT * 20 + LANES32];
    static float back[MAX_COUNT * 2 * LANES32];
    int64_t i, j, pitch;
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
    for (pitch = LANES32; pitch <= 2 * LANES32; pitch += LANES32) {
        memset(back, 0xff, sizeof(back));
        pyroi_channels_to_lanes_f32(channels, 1, stride, count, lanes, back, pitch);
        for (i = 0; i < count; ++i) {
            for (j = 0; j < pitch; ++j) {
                if (j >= LANES32) {
                    CHECK(untouched(&back[i * pitch + j], sizeof(float)));
                } else {
                    CHECK(back[i * pitch + j] ==
                          (j < lanes ? lanes_major[i * LANES32 + j] : 0.0f));
                }
            }
        }
        for (i = count * pitch; i < MAX_COUNT * 2 * LANES32; ++i) { /* nothing past count */
            CHECK(untouched(&back[i], sizeof(float)));
        }
    }
}

/* The row streams pack every row whatever the row length, the source padding, the
 * destination's alignment and the pieces the run is written in (advance by `step`). */
enum { MAX_ROWS = 5, MAX_ROW = 21, PAD = 8, DST_SIZE = MAX_ROWS * MAX_ROW + 8 };

static void test_row_stream_f32(int64_t rows, int64_t row_length, int64_t pad, int64_t offset,
                                int64_t step)
{
    static float src[MAX_ROWS * (MAX_ROW + PAD) + 8], dst[DST_SIZE];
    const int64_t stride = row_length + pad;
    pyroi_row_stream stream;
    int64_t r, i, calls = 0;
    for (i = 0; i < (int64_t)(sizeof(src) / sizeof(src[0])); ++i) {
        src[i] = -(float)(i + 1); /* padding: must not reach dst */
    }
    for (r = 0; r < rows; ++r) {
        for (i = 0; i < row_length; ++i) {
            src[4 + r * stride + i] = (float)(r * 100 + i);
        }
    }
    memset(dst, 0, sizeof(dst));
    pyroi_row_stream_init(&stream, dst + offset, src + 4, rows, row_length, stride);
    while (stream.done < stream.total && calls++ < 1000) {
        const int64_t before = stream.done;
        pyroi_row_stream_advance_f32(&stream, step);
        CHECK(stream.done >= before + step || stream.done == stream.total);
    }
    pyroi_row_stream_advance_f32(&stream, 5); /* nothing left: no effect */
    pyroi_stream_fence();
    CHECK(stream.done == rows * row_length);
    for (i = 0; i < DST_SIZE; ++i) {
        const int64_t e = i - offset;
        CHECK(dst[i] == (e >= 0 && e < rows * row_length
                             ? (float)((e / row_length) * 100 + e % row_length)
                             : 0.0f));
    }
}

/* The 8-byte streams (double, int64), as the float one above. */
#define DEFINE_ROW_STREAM_TEST_8(T, SUFFIX)                                                     \
    static void test_row_stream_##SUFFIX(int64_t rows, int64_t row_length, int64_t pad,       \
                                         int64_t offset, int64_t step)                        \
    {                                                                                          \
        static T src[MAX_ROWS * (MAX_ROW + PAD) + 8], dst[DST_SIZE];                           \
        const int64_t stride = row_length + pad;                                               \
        pyroi_row_stream stream;                                                               \
        int64_t r, i, calls = 0;                                                               \
        for (i = 0; i < (int64_t)(sizeof(src) / sizeof(src[0])); ++i) {                       \
            src[i] = -(T)(i + 1);                                                              \
        }                                                                                      \
        for (r = 0; r < rows; ++r) {                                                           \
            for (i = 0; i < row_length; ++i) {                                                 \
                src[4 + r * stride + i] = (T)(r * 100 + i);                                    \
            }                                                                                  \
        }                                                                                      \
        memset(dst, 0, sizeof(dst));                                                           \
        pyroi_row_stream_init(&stream, dst + offset, src + 4, rows, row_length, stride);       \
        while (stream.done < stream.total && calls++ < 1000) {                                 \
            const int64_t before = stream.done;                                                \
            pyroi_row_stream_advance_##SUFFIX(&stream, step);                                  \
            CHECK(stream.done >= before + step || stream.done == stream.total);                \
        }                                                                                      \
        pyroi_stream_fence();                                                                  \
        CHECK(stream.done == rows * row_length);                                               \
        for (i = 0; i < DST_SIZE; ++i) {                                                       \
            const int64_t e = i - offset;                                                      \
            CHECK(dst[i] == (e >= 0 && e < rows * row_length                                   \
                                 ? (T)((e / row_length) * 100 + e % row_length)                \
                                 : (T)0));                                                     \
        }                                                                                      \
    }

DEFINE_ROW_STREAM_TEST_8(double, f64)
DEFINE_ROW_STREAM_TEST_8(int64_t, i64)

int main(void)
{
    int64_t count, stride, rows, row_length, offset, step;
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
    for (rows = 0; rows <= MAX_ROWS; ++rows) {
        for (row_length = 1; row_length <= MAX_ROW; ++row_length) {
            for (offset = 0; offset < 4; ++offset) {
                for (step = 1; step <= 9; step += 4) {
                    test_row_stream_f32(rows, row_length, 0, offset, step);
                    test_row_stream_f32(rows, row_length, 3, offset, step);
                    test_row_stream_f32(rows, row_length, PAD, offset, step);
                    test_row_stream_f64(rows, row_length, 0, offset, step);
                    test_row_stream_f64(rows, row_length, 1, offset, step);
                    test_row_stream_f64(rows, row_length, PAD, offset, step);
                    test_row_stream_i64(rows, row_length, 0, offset, step);
                    test_row_stream_i64(rows, row_length, 1, offset, step);
                }
                test_row_stream_f32(rows, row_length, 3, offset, INT64_MAX);
                test_row_stream_f64(rows, row_length, 1, offset, INT64_MAX);
                test_row_stream_i64(rows, row_length, 0, offset, INT64_MAX);
            }
            /* packed float runs in pieces of 16 and more: 32-byte stores after a head that
             * aligns dst (offsets 0-7 elements: every 4-byte alignment modulo 32 bytes) */
            for (offset = 0; offset < 8; ++offset) {
                test_row_stream_f32(rows, row_length, 0, offset, 16);
                test_row_stream_f32(rows, row_length, 0, offset, 21);
                test_row_stream_f32(rows, row_length, 0, offset, INT64_MAX);
            }
        }
    }
    return check_report("test_transpose");
}
