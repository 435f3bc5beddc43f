/* transpose.c - see transpose.h. */
#include "layout/transpose.h"
#include "core/cpu.h"
#include "core/half.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(PYROI_NO_CLONES)
#  define PYROI_HAVE_AVX2_TRANSPOSE 1
#  include "core/cpu.h"
#  include <immintrin.h>
#endif

/* Non-temporal stores: SSE2, part of every x86-64 CPU. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(PYROI_NO_CLONES)
#  define PYROI_HAVE_STREAM_STORES 1
#  include <emmintrin.h>
#endif

#include <string.h>

#define PORTABLE_TRANSPOSES(T, L, SUFFIX)                                                      \
    static void lanes_to_channels_portable_##SUFFIX(const T *src, int64_t count, int64_t lanes, \
                                                    T *dst, int64_t dst_lane_stride,           \
                                                    int64_t dst_stride)                        \
    {                                                                                          \
        int64_t i, j;                                                                          \
        for (j = 0; j < lanes; ++j) {                                                          \
            T *row = dst + j * dst_lane_stride;                                                \
            for (i = 0; i < count; ++i) {                                                      \
                row[i * dst_stride] = src[i * (L) + j];                                        \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static void channels_to_lanes_portable_##SUFFIX(const T *src, int64_t src_lane_stride,      \
                                                    int64_t src_stride, int64_t count,         \
                                                    int64_t lanes, T *dst, int64_t dst_pitch)  \
    {                                                                                          \
        int64_t i, j;                                                                          \
        for (i = 0; i < count; ++i) {                                                          \
            const T *element = src + i * src_stride;                                           \
            T *out = dst + i * dst_pitch;                                                      \
            for (j = 0; j < (L); ++j) {                                                        \
                out[j] = j < lanes ? element[j * src_lane_stride] : (T)0;                      \
            }                                                                                  \
        }                                                                                      \
    }

PORTABLE_TRANSPOSES(float, PYROI_LANE_COUNT_F32, f32)
PORTABLE_TRANSPOSES(double, PYROI_LANE_COUNT_F64, f64)

/* Gathering 16 channel rows at once is 16 concurrent streams through memory, more than the
 * hardware prefetchers follow: long rows are prefetched this many elements ahead (measured on
 * 2 x 256 x 200 x 272 float32 maps: the gather from memory 25% faster at 64-96, less at 32 or
 * 256; the box-head forward 7% faster). */
#define CHANNELS_TO_LANES_AHEAD 64
#ifdef PYROI_HAVE_AVX2_TRANSPOSE
/* In-register transpose of the 8 x 8 floats in r[0..8). */
__attribute__((target("avx2"), always_inline)) static inline void transpose8x8(__m256 r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* Full 16-lane blocks, unit element stride: the 8 x 8 tiles; returns how many elements they
 * moved (count rounded down to 8). Bits only: the loads and stores may alias any 4-byte
 * type. */
__attribute__((target("avx2"), always_inline)) static inline int64_t lanes_to_channels_tiles(
    const float *src, int64_t count, float *dst, int64_t dst_lane_stride)
{
    const int64_t full = count - count % 8;
    int64_t i, half, r;
    for (i = 0; i < full; i += 8) {
        for (half = 0; half < 16; half += 8) {
            __m256 rows[8];
            for (r = 0; r < 8; ++r) {
                rows[r] = _mm256_loadu_ps(src + (i + r) * 16 + half);
            }
            transpose8x8(rows);
            for (r = 0; r < 8; ++r) {
                _mm256_storeu_ps(dst + (half + r) * dst_lane_stride + i, rows[r]);
            }
        }
    }
    return full;
}

/* Then the portable loop for the last count % 8 elements. */
__attribute__((target("avx2"))) static void lanes_to_channels_avx2(const float *src,
                                                                   int64_t count, float *dst,
                                                                   int64_t dst_lane_stride)
{
    const int64_t full = lanes_to_channels_tiles(src, count, dst, dst_lane_stride);
    lanes_to_channels_portable_f32(src + full * 16, count - full, 16, dst + full,
                                   dst_lane_stride, 1);
}

/* int32 lanes (their bits): the tiles, then the last count % 8 elements as int32. */
__attribute__((target("avx2"))) static void lanes_to_channels_avx2_i32(const int32_t *src,
                                                                       int64_t count,
                                                                       int32_t *dst,
                                                                       int64_t dst_lane_stride)
{
    const int64_t full = lanes_to_channels_tiles((const float *)(const void *)src, count,
                                                 (float *)(void *)dst, dst_lane_stride);
    int64_t i, j;
    for (j = 0; j < 16; ++j) {
        for (i = full; i < count; ++i) {
            dst[j * dst_lane_stride + i] = src[i * 16 + j];
        }
    }
}

/* Pixels [i, i + 8) of 16 channel rows into lanes. */
__attribute__((target("avx2"))) static inline void channels_to_lanes_window_avx2(
    const float *src, int64_t src_lane_stride, int64_t i, float *dst, int64_t dst_pitch)
{
    int64_t half, r;
    for (half = 0; half < 16; half += 8) {
        __m256 rows[8];
        for (r = 0; r < 8; ++r) {
            rows[r] = _mm256_loadu_ps(src + (half + r) * src_lane_stride + i);
        }
        transpose8x8(rows);
        for (r = 0; r < 8; ++r) {
            _mm256_storeu_ps(dst + (i + r) * dst_pitch + half, rows[r]);
        }
    }
}

__attribute__((target("avx2"))) static void channels_to_lanes_avx2(const float *src,
                                                                   int64_t src_lane_stride,
                                                                   int64_t count, float *dst,
                                                                   int64_t dst_pitch)
{
    const int64_t full = count - count % 8;
    const int long_rows = count >= 4 * CHANNELS_TO_LANES_AHEAD;
    int64_t i, r;
    for (i = 0; i < full; i += 8) {
        if (long_rows && (i & 15) == 0 && i + CHANNELS_TO_LANES_AHEAD < count) {
            for (r = 0; r < 16; ++r) {
                PYROI_PREFETCH(src + r * src_lane_stride + i + CHANNELS_TO_LANES_AHEAD);
            }
        }
        channels_to_lanes_window_avx2(src, src_lane_stride, i, dst, dst_pitch);
    }
    if (full < count && full > 0) {
        /* the last 8 pixels, overlapping the window before: no scalar end (short row
         * segments of the sparse gathers end in one) */
        channels_to_lanes_window_avx2(src, src_lane_stride, count - 8, dst, dst_pitch);
    } else if (full < count) {
        channels_to_lanes_portable_f32(src, src_lane_stride, 1, count, 16, dst, dst_pitch);
    }
}

static int have_avx2(void)
{
    return pyroi_cpu_vector_level() >= PYROI_CPU_AVX2;
}
#endif

/* Channels-last (NHWC) data: the lanes of one element are already contiguous. A full lane
 * group is copied with a constant size, which the compiler turns into a few vector moves:
 * a memcpy call of a variable size per pixel took a third of a box-head forward from NHWC
 * features. Gathered, a pixel's lanes are one line of a long strided walk (one line per
 * pixel, C elements apart) that waited on memory at every pixel: the line this many pixels
 * ahead is prefetched (box head from NHWC, 1 thread: about 2x -> 1.3-1.5x the NCHW time). */
#define CONTIGUOUS_LANES_AHEAD 16
#define CONTIGUOUS_LANE_COPIES(T, L)                                                           \
    static void lanes_to_contiguous_lanes_##T(const T *src, int64_t count, int64_t lanes,      \
                                              T *dst, int64_t dst_stride)                      \
    {                                                                                          \
        int64_t i;                                                                             \
        if (lanes == (L)) {                                                                    \
            for (i = 0; i < count; ++i) {                                                      \
                memcpy(dst + i * dst_stride, src + i * (L), (L) * sizeof(T));                  \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        for (i = 0; i < count; ++i) {                                                          \
            memcpy(dst + i * dst_stride, src + i * (L), (size_t)lanes * sizeof(T));            \
        }                                                                                      \
    }                                                                                          \
    static void contiguous_lanes_to_lanes_##T(const T *src, int64_t src_stride, int64_t count, \
                                              int64_t lanes, T *dst, int64_t dst_pitch)        \
    {                                                                                          \
        int64_t i, j;                                                                          \
        if (lanes == (L)) {                                                                    \
            for (i = 0; i < count; ++i) {                                                      \
                if (i + CONTIGUOUS_LANES_AHEAD < count) {                                      \
                    PYROI_PREFETCH(src + (i + CONTIGUOUS_LANES_AHEAD) * src_stride);           \
                }                                                                              \
                memcpy(dst + i * dst_pitch, src + i * src_stride, (L) * sizeof(T));            \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        for (i = 0; i < count; ++i) {                                                          \
            memcpy(dst + i * dst_pitch, src + i * src_stride, (size_t)lanes * sizeof(T));      \
            for (j = lanes; j < (L); ++j) {                                                    \
                dst[i * dst_pitch + j] = (T)0;                                                 \
            }                                                                                  \
        }                                                                                      \
    }

CONTIGUOUS_LANE_COPIES(float, PYROI_LANE_COUNT_F32)
CONTIGUOUS_LANE_COPIES(double, PYROI_LANE_COUNT_F64)

void pyroi_lanes_to_channels_f32(const float *src, int64_t count, int64_t lanes, float *dst,
                                 int64_t dst_lane_stride, int64_t dst_stride)
{
    if (dst_lane_stride == 1) {
        lanes_to_contiguous_lanes_float(src, count, lanes, dst, dst_stride);
        return;
    }
#ifdef PYROI_HAVE_AVX2_TRANSPOSE
    if (lanes == 16 && dst_stride == 1 && have_avx2()) {
        lanes_to_channels_avx2(src, count, dst, dst_lane_stride);
        return;
    }
#endif
    lanes_to_channels_portable_f32(src, count, lanes, dst, dst_lane_stride, dst_stride);
}

void pyroi_lanes_to_channels_i32(const int32_t *src, int64_t count, int64_t lanes,
                                 int32_t *dst, int64_t dst_lane_stride, int64_t dst_stride)
{
    int64_t i, j;
#ifdef PYROI_HAVE_AVX2_TRANSPOSE
    if (lanes == 16 && dst_stride == 1 && have_avx2()) {
        lanes_to_channels_avx2_i32(src, count, dst, dst_lane_stride);
        return;
    }
#endif
    for (j = 0; j < lanes; ++j) {
        for (i = 0; i < count; ++i) {
            dst[j * dst_lane_stride + i * dst_stride] = src[i * PYROI_LANE_COUNT_F32 + j];
        }
    }
}

void pyroi_lanes_to_channels_f64(const double *src, int64_t count, int64_t lanes, double *dst,
                                 int64_t dst_lane_stride, int64_t dst_stride)
{
    if (dst_lane_stride == 1) {
        lanes_to_contiguous_lanes_double(src, count, lanes, dst, dst_stride);
        return;
    }
    lanes_to_channels_portable_f64(src, count, lanes, dst, dst_lane_stride, dst_stride);
}

void pyroi_channels_to_lanes_f32(const float *src, int64_t src_lane_stride, int64_t src_stride,
                                 int64_t count, int64_t lanes, float *dst, int64_t dst_pitch)
{
    if (src_lane_stride == 1) {
        contiguous_lanes_to_lanes_float(src, src_stride, count, lanes, dst, dst_pitch);
        return;
    }
#ifdef PYROI_HAVE_AVX2_TRANSPOSE
    if (lanes == 16 && src_stride == 1 && have_avx2()) {
        channels_to_lanes_avx2(src, src_lane_stride, count, dst, dst_pitch);
        return;
    }
#endif
    channels_to_lanes_portable_f32(src, src_lane_stride, src_stride, count, lanes, dst,
                                   dst_pitch);
}

void pyroi_channels_to_lanes_f64(const double *src, int64_t src_lane_stride, int64_t src_stride,
                                 int64_t count, int64_t lanes, double *dst, int64_t dst_pitch)
{
    if (src_lane_stride == 1) {
        contiguous_lanes_to_lanes_double(src, src_stride, count, lanes, dst, dst_pitch);
        return;
    }
    channels_to_lanes_portable_f64(src, src_lane_stride, src_stride, count, lanes, dst,
                                   dst_pitch);
}

/* ---- float16 sources: the same moves, widening exactly as they read --------------------- */

#ifdef PYROI_HAVE_AVX2_TRANSPOSE
/* channels_to_lanes_avx2 from float16 rows: 8 elements of a row widened by one VCVTPH2PS
 * (exact), then the same 8 x 8 transposes; the prefetches as far ahead in bytes, one per
 * line (a line holds 32 float16 elements). */
__attribute__((target("avx2,f16c"))) static void half_channels_to_lanes_avx2(
    const uint16_t *src, int64_t src_lane_stride, int64_t count, float *dst, int64_t dst_pitch)
{
    const int64_t full = count - count % 8;
    const int long_rows = count >= 4 * CHANNELS_TO_LANES_AHEAD;
    int64_t i, half, r, j;
    for (i = 0; i < full; i += 8) {
        for (half = 0; half < 16; half += 8) {
            __m256 rows[8];
            for (r = 0; r < 8; ++r) {
                rows[r] = _mm256_cvtph_ps(_mm_loadu_si128(
                    (const __m128i *)(const void *)(src + (half + r) * src_lane_stride + i)));
            }
            if (long_rows && (i & 31) == 0 && i + 2 * CHANNELS_TO_LANES_AHEAD < count) {
                for (r = 0; r < 8; ++r) {
                    PYROI_PREFETCH(src + (half + r) * src_lane_stride + i +
                                   2 * CHANNELS_TO_LANES_AHEAD);
                }
            }
            transpose8x8(rows);
            for (r = 0; r < 8; ++r) {
                _mm256_storeu_ps(dst + (i + r) * dst_pitch + half, rows[r]);
            }
        }
    }
    for (i = full; i < count; ++i) {
        for (j = 0; j < 16; ++j) {
            dst[i * dst_pitch + j] = pyroi_half_to_float(src[j * src_lane_stride + i]);
        }
    }
}

/* Channels-last float16 pixels of 16 packed lanes: two VCVTPH2PS per pixel. */
__attribute__((target("avx2,f16c"))) static void half_contiguous_lanes_to_lanes_avx2(
    const uint16_t *src, int64_t src_stride, int64_t count, float *dst, int64_t dst_pitch)
{
    int64_t i;
    for (i = 0; i < count; ++i) {
        const uint16_t *pixel = src + i * src_stride;
        if (i + CONTIGUOUS_LANES_AHEAD < count) {
            PYROI_PREFETCH(src + (i + CONTIGUOUS_LANES_AHEAD) * src_stride);
        }
        _mm256_storeu_ps(dst + i * dst_pitch,
                         _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)pixel)));
        _mm256_storeu_ps(dst + i * dst_pitch + 8, _mm256_cvtph_ps(_mm_loadu_si128(
                                                      (const __m128i *)(const void *)(pixel + 8))));
    }
}

static int have_f16c(void)
{
    return have_avx2() && pyroi_cpu_has_f16c();
}
#endif

#define HALF_CHANNELS_TO_LANES(T, L, SUFFIX)                                                   \
    void pyroi_half_channels_to_lanes_##SUFFIX(const uint16_t *src, int64_t src_lane_stride,   \
                                               int64_t src_stride, int64_t count,             \
                                               int64_t lanes, T *dst, int64_t dst_pitch)      \
    {                                                                                          \
        int64_t i, j;                                                                          \
        HALF_CHANNELS_TO_LANES_FAST_##SUFFIX                                                   \
        for (i = 0; i < count; ++i) {                                                          \
            const uint16_t *element = src + i * src_stride;                                    \
            T *out = dst + i * dst_pitch;                                                      \
            for (j = 0; j < (L); ++j) {                                                        \
                out[j] = j < lanes ? (T)pyroi_half_to_float(element[j * src_lane_stride])      \
                                   : (T)0;                                                     \
            }                                                                                  \
        }                                                                                      \
    }

#ifdef PYROI_HAVE_AVX2_TRANSPOSE
#  define HALF_CHANNELS_TO_LANES_FAST_f32                                                      \
    if (lanes == 16 && have_f16c()) {                                                          \
        if (src_stride == 1) {                                                                 \
            half_channels_to_lanes_avx2(src, src_lane_stride, count, dst, dst_pitch);          \
            return;                                                                            \
        }                                                                                      \
        if (src_lane_stride == 1) {                                                            \
            half_contiguous_lanes_to_lanes_avx2(src, src_stride, count, dst, dst_pitch);       \
            return;                                                                            \
        }                                                                                      \
    }
#else
#  define HALF_CHANNELS_TO_LANES_FAST_f32
#endif
#define HALF_CHANNELS_TO_LANES_FAST_f64

HALF_CHANNELS_TO_LANES(float, PYROI_LANE_COUNT_F32, f32)
HALF_CHANNELS_TO_LANES(double, PYROI_LANE_COUNT_F64, f64)

/* ---- streaming stores ------------------------------------------------------------------ */

void pyroi_stream_fence(void)
{
#ifdef PYROI_HAVE_STREAM_STORES
    _mm_sfence();
#endif
}

double pyroi_stream_bytes(void)
{
    const double l2 = (double)pyroi_cpu_l2_bytes();
    return l2 > (double)(1 << 20) ? l2 : (double)(1 << 20);
}

void pyroi_row_stream_init(pyroi_row_stream *stream, void *dst, const void *src, int64_t rows,
                           int64_t row_length, int64_t src_stride)
{
    stream->dst = dst;
    stream->src = src;
    stream->total = rows * row_length;
    stream->done = 0;
    stream->row = 0;
    stream->column = 0;
    stream->row_length = row_length;
    stream->src_stride = src_stride;
#ifdef PYROI_HAVE_AVX2_TRANSPOSE
    stream->wide_stores = have_avx2();
#else
    stream->wide_stores = 0;
#endif
}


/* Streaming stores write only whole 64-byte lines of dst: the partial lines at the two ends
 * of a run take plain stores, and every piece of a run (pyroi_row_stream_advance_*) ends on
 * a line boundary of dst or at the run's end, so the next piece goes on in whole lines. A
 * plain store into a line that streaming stores have partly written and will write again
 * waits for the line to reach memory (about half a microsecond on the AMD EPYC, Zen 3, this
 * was measured on): RoIPool's 30 MB output written in pieces of 896 bytes, each begun with
 * plain stores up to a 32-byte boundary, took 23 ms instead of 5 whenever the output array
 * did not start on a 32-byte boundary, which depends on where the allocator put it. */
#define ROW_STREAM_LINE 64

/* A piece of a stream whose dst is out (elements of `size` bytes) from element done on, at
 * least `elements` long: it ends at *end, the first line boundary at or after done +
 * elements (at most total), and [*line_begin, *line_end) are its whole lines (empty when out
 * is not aligned to its elements). */
static void row_stream_piece(const void *out, int64_t size, int64_t done, int64_t total,
                             int64_t elements, int64_t *end, int64_t *line_begin,
                             int64_t *line_end)
{
    const int64_t per_line = ROW_STREAM_LINE / size;
    const uintptr_t address = (uintptr_t)out + (uintptr_t)(done * size);
    int64_t first; /* the first line boundary at or after done */
    *end = total - done < elements ? total : done + elements;
    if ((uintptr_t)out % (uintptr_t)size != 0) {
        *line_begin = *line_end = *end;
        return;
    }
    first = done + (int64_t)(((uintptr_t)0 - address) % ROW_STREAM_LINE) / size;
    if (*end < total) {
        const int64_t lines = *end <= first ? 0 : (*end - first + per_line - 1) / per_line;
        *end = total - first < lines * per_line ? total : first + lines * per_line;
    }
    *line_begin = first < *end ? first : *end;
    *line_end = *line_begin + (*end - *line_begin) / per_line * per_line;
}

/* One element with a plain store; moves the source position on. */
#define ROW_STREAM_STEP()                                                                      \
    do {                                                                                       \
        out[done++] = in[row * src_stride + column];                                           \
        if (++column == row_length) {                                                          \
            column = 0;                                                                        \
            ++row;                                                                             \
        }                                                                                      \
    } while (0)

/* The stream moves on to element `to` of a packed source. */
#define ROW_STREAM_MOVE_TO(to)                                                                 \
    do {                                                                                       \
        const int64_t moved_ = (to) - done;                                                    \
        done += moved_;                                                                        \
        row += (column + moved_) / row_length;                                                 \
        column = (column + moved_) % row_length;                                               \
    } while (0)

/* A pyroi_row_stream_advance_* function: the head of the piece up to its first whole line
 * and its tail after the last with plain stores, the whole lines between with VECTORS(T),
 * which writes all of [done, line_end) with streaming stores, or nothing. The stream's state
 * is kept in locals (the stores may alias *stream as far as the compiler knows). */
#define ROW_STREAM_ADVANCE(T, SUFFIX, VECTORS)                                                 \
    void pyroi_row_stream_advance_##SUFFIX(pyroi_row_stream *stream, int64_t elements)         \
    {                                                                                          \
        T *out = (T *)stream->dst;                                                             \
        const T *in = (const T *)stream->src;                                                  \
        const int64_t total = stream->total, row_length = stream->row_length;                  \
        const int64_t src_stride = stream->src_stride;                                         \
        const int wide_stores = stream->wide_stores;                                           \
        int64_t done = stream->done, row = stream->row, column = stream->column;               \
        int64_t end, line_begin, line_end;                                                     \
        (void)wide_stores; /* without streaming stores, unused */                              \
        row_stream_piece(out, (int64_t)sizeof(T), done, total, elements, &end, &line_begin,    \
                         &line_end);                                                           \
        while (done < line_begin) {                                                            \
            ROW_STREAM_STEP();                                                                 \
        }                                                                                      \
        if (done < line_end) {                                                                 \
            VECTORS(T);                                                                        \
        }                                                                                      \
        while (done < end) {                                                                   \
            ROW_STREAM_STEP();                                                                 \
        }                                                                                      \
        stream->done = done;                                                                   \
        stream->row = row;                                                                     \
        stream->column = column;                                                               \
    }

#ifdef PYROI_HAVE_AVX2_TRANSPOSE
/* A packed run of count 4-byte elements (bits only; count a multiple of 8) to a 32-byte
 * aligned dst in 32-byte streaming stores. One core streamed 30 MB in 1.4 ms this way
 * against 1.8-2.0 ms in 16-byte stores (AMD EPYC, Zen 3). */
__attribute__((target("avx2"))) static void stream_run_avx2(const float *src, float *dst,
                                                            int64_t count)
{
    int64_t m;
    for (m = 0; m < count; m += 8) {
        _mm256_stream_ps(dst + m, _mm256_loadu_ps(src + m));
    }
}
#else
#  define stream_run_avx2(src, dst, count) ((void)0)
#endif

#ifdef PYROI_HAVE_AVX2_TRANSPOSE
__attribute__((target("avx2"))) static void lines_stream_avx2(const char *src, int64_t count,
                                                              char *dst, int64_t dst_stride)
{
    int64_t i;
    for (i = 0; i < count; ++i) {
        const float *line = (const float *)(const void *)(src + 64 * i);
        float *to = (float *)(void *)(dst + i * dst_stride);
        _mm256_stream_ps(to, _mm256_loadu_ps(line));
        _mm256_stream_ps(to + 8, _mm256_loadu_ps(line + 8));
    }
}
#endif

void pyroi_lines_stream(const void *src, int64_t count, void *dst, int64_t dst_stride)
{
    const char *in = (const char *)src;
    char *out = (char *)dst;
    int64_t i;
#ifdef PYROI_HAVE_AVX2_TRANSPOSE
    if (have_avx2()) {
        lines_stream_avx2(in, count, out, dst_stride);
        return;
    }
#endif
    for (i = 0; i < count; ++i) {
#ifdef PYROI_HAVE_STREAM_STORES
        const float *line = (const float *)(const void *)(in + 64 * i);
        float *to = (float *)(void *)(out + i * dst_stride);
        int m;
        for (m = 0; m < 16; m += 4) {
            _mm_stream_ps(to + m, _mm_loadu_ps(line + m));
        }
#else
        memcpy(out + i * dst_stride, in + 64 * i, 64);
#endif
    }
}

#ifdef PYROI_HAVE_STREAM_STORES
/* A packed source (src_stride == row_length): [done, line_end) is one plain run of bytes. */
#  define ROW_STREAM_PACKED(T)                                                                 \
    do {                                                                                       \
        const float *p = (const float *)(const void *)(in + row * src_stride + column);        \
        float *o = (float *)(void *)(out + done);                                              \
        const int64_t floats = (line_end - done) * (int64_t)(sizeof(T) / sizeof(float));       \
        int64_t m;                                                                             \
        if (wide_stores) {                                                                     \
            stream_run_avx2(p, o, floats);                                                     \
        } else {                                                                               \
            for (m = 0; m < floats; m += 4) {                                                  \
                _mm_stream_ps(o + m, _mm_loadu_ps(p + m));                                     \
            }                                                                                  \
        }                                                                                      \
        ROW_STREAM_MOVE_TO(line_end);                                                          \
    } while (0)

/* 4-byte elements (float, and int32 bit patterns: the vector loads and stores may alias any
 * type), vectors of four: once rows hold 4 elements a vector spans at most two rows. */
#  define ROW_STREAM_VECTORS_4(T)                                                              \
    if (src_stride == row_length) {                                                            \
        ROW_STREAM_PACKED(T);                                                                  \
    } else if (row_length >= 4) {                                                              \
        const __m128i lane = _mm_set_epi32(3, 2, 1, 0);                                        \
        while (done < line_end) {                                                              \
            /* the vectors inside the current row: a plain copy loop */                        \
            const float *p = (const float *)(const void *)(in + row * src_stride + column);    \
            float *o = (float *)(void *)(out + done);                                          \
            int64_t inside = (row_length - column) / 4, m;                                     \
            if (inside > (line_end - done) / 4) {                                              \
                inside = (line_end - done) / 4;                                                \
            }                                                                                  \
            for (m = 0; m < inside; ++m) {                                                     \
                _mm_stream_ps(o + 4 * m, _mm_loadu_ps(p + 4 * m));                             \
            }                                                                                  \
            done += 4 * inside;                                                                \
            column += 4 * inside;                                                              \
            if (column == row_length) {                                                        \
                column = 0;                                                                    \
                ++row;                                                                         \
            } else if (done < line_end && row_length - column < 4) {                           \
                /* the vector the row ends in: lanes >= rest from the start of the next row */ \
                const int64_t rest = row_length - column;                                      \
                const __m128 from_next = _mm_castsi128_ps(                                     \
                    _mm_cmpgt_epi32(lane, _mm_set1_epi32((int)rest - 1)));                     \
                p = (const float *)(const void *)(in + row * src_stride + column);             \
                _mm_stream_ps((float *)(void *)(out + done),                                   \
                              _mm_or_ps(_mm_and_ps(from_next,                                  \
                                                   _mm_loadu_ps(p + src_stride - row_length)), \
                                        _mm_andnot_ps(from_next, _mm_loadu_ps(p))));           \
                done += 4;                                                                     \
                ++row;                                                                         \
                column = 4 - rest;                                                             \
            }                                                                                  \
        }                                                                                      \
    }

/* 8-byte elements, vectors of two: a vector spans two rows only when it starts on a row's
 * last element. The vector steps are bit moves (the casts reinterpret). */
#  define ROW_STREAM_VECTORS_8(T)                                                              \
    if (src_stride == row_length) {                                                            \
        ROW_STREAM_PACKED(T);                                                                  \
    } else if (row_length >= 2) {                                                              \
        while (done < line_end) {                                                              \
            const void *p = in + row * src_stride + column;                                    \
            __m128d v = _mm_loadu_pd((const double *)p);                                       \
            if (column + 1 == row_length) { /* lane 1: the start of the next row */            \
                v = _mm_move_sd(                                                               \
                    _mm_loadu_pd((const double *)p + src_stride - row_length), v);             \
                ++row;                                                                         \
                column = 1;                                                                    \
            } else if ((column += 2) == row_length) {                                          \
                column = 0;                                                                    \
                ++row;                                                                         \
            }                                                                                  \
            _mm_stream_si128((__m128i *)(void *)(out + done), _mm_castpd_si128(v));            \
            done += 2;                                                                         \
        }                                                                                      \
    }
#else
#  define ROW_STREAM_VECTORS_4(T)
#  define ROW_STREAM_VECTORS_8(T)
#endif

ROW_STREAM_ADVANCE(float, f32, ROW_STREAM_VECTORS_4)
ROW_STREAM_ADVANCE(int32_t, i32, ROW_STREAM_VECTORS_4)
ROW_STREAM_ADVANCE(double, f64, ROW_STREAM_VECTORS_8)
ROW_STREAM_ADVANCE(int64_t, i64, ROW_STREAM_VECTORS_8)

#undef ROW_STREAM_VECTORS_8
#undef ROW_STREAM_VECTORS_4
#undef ROW_STREAM_PACKED
#undef ROW_STREAM_ADVANCE
#undef ROW_STREAM_MOVE_TO
#undef ROW_STREAM_STEP
