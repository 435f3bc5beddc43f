/* The lane/channel transposes move every element to its place, on every path (AVX2 where
 * available, portable otherwise, and for every count, lane count and stride; into lane-major
 * rows of L elements a pixel or, interleaved, 2L, leaving the other half and every pixel past
 * the count alone); so do the streaming copies. */
#include "pyroi.h"
#include "check.h"
#include "layout/transpose.h"

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
 * destination's alignment and the pieces the run is written in (advance by `step`); every
 * piece ends on a 64-byte line boundary of dst or at the run's end (streaming stores write
 * whole lines only, and a line they write partly must not be finished by plain stores). */
enum { MAX_ROWS = 5, MAX_ROW = 21, PAD = 8, LINE = 64 };
enum { DST_SIZE = MAX_ROWS * MAX_ROW + LINE, SRC_SIZE = MAX_ROWS * (MAX_ROW + PAD) + 8 };

#define DEFINE_ROW_STREAM_TEST(T, SUFFIX)                                                      \
    static void test_row_stream_##SUFFIX(int64_t rows, int64_t row_length, int64_t pad,       \
                                         int64_t offset, int64_t step)                        \
    {                                                                                          \
        static T src[SRC_SIZE], buffer[DST_SIZE + LINE];                                       \
        /* dst + offset: offset elements past a line boundary */                               \
        T *dst = (T *)(void *)((char *)buffer + (LINE - (uintptr_t)buffer % LINE) % LINE);     \
        const int64_t stride = row_length + pad;                                               \
        pyroi_row_stream stream;                                                               \
        int64_t r, i, calls = 0;                                                               \
        for (i = 0; i < SRC_SIZE; ++i) {                                                       \
            src[i] = -(T)(i + 1); /* padding: must not reach dst */                            \
        }                                                                                      \
        for (r = 0; r < rows; ++r) {                                                           \
            for (i = 0; i < row_length; ++i) {                                                 \
                src[4 + r * stride + i] = (T)(r * 100 + i);                                    \
            }                                                                                  \
        }                                                                                      \
        memset(dst, 0, DST_SIZE * sizeof(T));                                                  \
        pyroi_row_stream_init(&stream, dst + offset, src + 4, rows, row_length, stride);       \
        while (stream.done < stream.total && calls++ < 1000) {                                 \
            const int64_t before = stream.done;                                                \
            pyroi_row_stream_advance_##SUFFIX(&stream, step);                                  \
            CHECK(stream.done >= before + step || stream.done == stream.total);                \
            CHECK(stream.done == stream.total ||                                               \
                  (uintptr_t)(dst + offset + stream.done) % LINE == 0);                        \
        }                                                                                      \
        pyroi_row_stream_advance_##SUFFIX(&stream, 5); /* nothing left: no effect */           \
        pyroi_stream_fence();                                                                  \
        CHECK(stream.done == rows * row_length);                                               \
        for (i = 0; i < DST_SIZE; ++i) {                                                       \
            const int64_t e = i - offset;                                                      \
            CHECK(dst[i] == (e >= 0 && e < rows * row_length                                   \
                                 ? (T)((e / row_length) * 100 + e % row_length)                \
                                 : (T)0));                                                     \
        }                                                                                      \
    }

DEFINE_ROW_STREAM_TEST(float, f32)
DEFINE_ROW_STREAM_TEST(int32_t, i32)
DEFINE_ROW_STREAM_TEST(double, f64)
DEFINE_ROW_STREAM_TEST(int64_t, i64)

/* Every stream at every offset from a line boundary (offset elements of `size` bytes), in
 * pieces of 1, 5, 9, 16 and 21 elements and all at once, from packed and padded sources. */
static void test_row_streams(int64_t rows, int64_t row_length, int64_t offset, int64_t size)
{
    static const int64_t steps[] = {1, 5, 9, 16, 21, INT64_MAX};
    size_t s;
    for (s = 0; s < sizeof(steps) / sizeof(steps[0]); ++s) {
        if (size == 4) {
            test_row_stream_f32(rows, row_length, 0, offset, steps[s]);
            test_row_stream_f32(rows, row_length, 3, offset, steps[s]);
            test_row_stream_f32(rows, row_length, PAD, offset, steps[s]);
            test_row_stream_i32(rows, row_length, 0, offset, steps[s]);
            test_row_stream_i32(rows, row_length, 3, offset, steps[s]);
        } else {
            test_row_stream_f64(rows, row_length, 0, offset, steps[s]);
            test_row_stream_f64(rows, row_length, 1, offset, steps[s]);
            test_row_stream_f64(rows, row_length, PAD, offset, steps[s]);
            test_row_stream_i64(rows, row_length, 0, offset, steps[s]);
            test_row_stream_i64(rows, row_length, 1, offset, steps[s]);
        }
    }
}

/* Lines streamed to every stride of 1-3 lines: each lands whole, the lines between stay
 * untouched, and a count of 0 writes nothing. */
static void test_lines_stream(void)
{
    enum { MAX_LINES = 9, MAX_STRIDE = 3 };
    static unsigned char src[MAX_LINES * LINE], buffer[(MAX_LINES * MAX_STRIDE + 1) * LINE];
    unsigned char *dst = buffer + (LINE - (uintptr_t)buffer % LINE) % LINE;
    int64_t count, stride, line, i;
    for (i = 0; i < MAX_LINES * LINE; ++i) {
        src[i] = (unsigned char)(i * 7 + 1);
    }
    for (count = 0; count <= MAX_LINES; ++count) {
        for (stride = 1; stride <= MAX_STRIDE; ++stride) {
            memset(buffer, 0xff, sizeof(buffer));
            pyroi_lines_stream(src, count, dst, stride * LINE);
            pyroi_stream_fence();
            for (line = 0; line < MAX_LINES * MAX_STRIDE; ++line) {
                const unsigned char *at = dst + line * LINE;
                if (line % stride == 0 && line / stride < count) {
                    CHECK(memcmp(at, src + line / stride * LINE, LINE) == 0);
                } else {
                    CHECK(untouched(at, LINE));
                }
            }
        }
    }
}

int main(void)
{
    int64_t count, stride, rows, row_length, offset;
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
            for (offset = 0; offset < LINE / 4; ++offset) {
                test_row_streams(rows, row_length, offset, 4);
            }
            for (offset = 0; offset < LINE / 8; ++offset) {
                test_row_streams(rows, row_length, offset, 8);
            }
        }
    }
    test_lines_stream();
    return check_report("test_transpose");
}
