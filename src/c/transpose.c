/* transpose.c - see transpose.h. */
#include "transpose.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(PYROI_NO_CLONES)
#  define PYROI_HAVE_AVX2_TRANSPOSE 1
#  include "cpu.h"
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

/* ---- streaming stores ------------------------------------------------------------------ */

void pyroi_stream_fence(void)
{
#ifdef PYROI_HAVE_STREAM_STORES
    _mm_sfence();
#endif
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

/* The stream's state in locals (the stores below may alias *stream as far as the compiler
 * knows), and back. */
#define ROW_STREAM_LOAD(T)                                                                     \
    T *out = (T *)stream->dst;                                                                 \
    const T *in = (const T *)stream->src;                                                      \
    const int64_t total = stream->total, row_length = stream->row_length;                      \
    const int64_t src_stride = stream->src_stride;                                             \
    const int64_t end = total - stream->done < elements ? total : stream->done + elements;     \
    int64_t done = stream->done, row = stream->row, column = stream->column
#define ROW_STREAM_STORE()                                                                     \
    do {                                                                                       \
        stream->done = done;                                                                   \
        stream->row = row;                                                                     \
        stream->column = column;                                                               \
    } while (0)

#ifdef PYROI_HAVE_AVX2_TRANSPOSE
/* A packed run of count 4-byte elements (bits only) to a 32-byte aligned dst in 32-byte
 * streaming stores; returns how many it moved (count rounded down to 8). One core streamed
 * 30 MB in 1.4 ms this way against 1.8-2.0 ms in 16-byte stores (AMD EPYC, Zen 3). */
__attribute__((target("avx2"))) static int64_t stream_run_avx2(const float *src, float *dst,
                                                               int64_t count)
{
    int64_t m;
    for (m = 0; m + 8 <= count; m += 8) {
        _mm256_stream_ps(dst + m, _mm256_loadu_ps(src + m));
    }
    return m;
}

/* The packed stream (src_stride == row_length) from done on, as far as whole 32-byte
 * stores reach before end, once dst is aligned (the head with plain stores). */
#  define ROW_STREAM_PACKED_AVX2()                                                             \
    if (src_stride == row_length && end - done >= 16 && have_avx2()) {                        \
        int64_t moved;                                                                         \
        while (((uintptr_t)(out + done) & 31) != 0) {                                          \
            ROW_STREAM_STEP();                                                                 \
        }                                                                                      \
        moved = stream_run_avx2((const float *)(const void *)(in + row * src_stride + column), \
                                (float *)(void *)(out + done), end - done);                    \
        done += moved;                                                                         \
        row += (column + moved) / row_length;                                                  \
        column = (column + moved) % row_length;                                                \
    }
#else
#  define ROW_STREAM_PACKED_AVX2()
#endif

/* 4-byte elements (float, and int32 bit patterns: the vector loads and stores may alias any
 * type). */
#ifdef PYROI_HAVE_STREAM_STORES
#  define ROW_STREAM_VECTORS_4(T)                                                              \
    /* a vector spans at most two source rows once rows hold 4 elements */                     \
    if (row_length >= 4) {                                                                     \
        const __m128i lane = _mm_set_epi32(3, 2, 1, 0);                                        \
        const int64_t vector_end = end < total - 3 ? end : total - 3; /* last start + 1 */     \
        while (done < end && ((uintptr_t)(out + done) & 15) != 0) {                            \
            ROW_STREAM_STEP();                                                                 \
        }                                                                                      \
        while (done < vector_end) {                                                            \
            /* the vectors inside the current row: a plain copy loop */                        \
            const float *p = (const float *)(const void *)(in + row * src_stride + column);    \
            float *o = (float *)(void *)(out + done);                                          \
            const int64_t left = row_length - column; /* elements of this row from column */   \
            int64_t inside = left / 4, m;                                                      \
            if (inside > (vector_end - done + 3) / 4) {                                        \
                inside = (vector_end - done + 3) / 4;                                          \
            }                                                                                  \
            for (m = 0; m < inside; ++m) {                                                     \
                _mm_stream_ps(o + 4 * m, _mm_loadu_ps(p + 4 * m));                             \
            }                                                                                  \
            done += 4 * inside;                                                                \
            column += 4 * inside;                                                              \
            if (column == row_length) {                                                        \
                column = 0;                                                                    \
                ++row;                                                                         \
            } else if (done < vector_end && row_length - column < 4) {                         \
                /* the vector the row ends in: lanes >= left from the start of the next row */ \
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
#else
#  define ROW_STREAM_VECTORS_4(T)
#endif

#define ROW_STREAM_ADVANCE_4(T, SUFFIX, PACKED)                                                \
    void pyroi_row_stream_advance_##SUFFIX(pyroi_row_stream *stream, int64_t elements)        \
    {                                                                                          \
        ROW_STREAM_LOAD(T);                                                                    \
        PACKED;                                                                                \
        ROW_STREAM_VECTORS_4(T);                                                               \
        while (done < end) {                                                                   \
            ROW_STREAM_STEP();                                                                 \
        }                                                                                      \
        ROW_STREAM_STORE();                                                                    \
    }

/* The 32-byte packed stores for the float runs only: RoIPool's int32 argmax run, streamed
 * beside its values, took 2.5-3x longer with them (9.5 -> 24-31 ms, VGG conv5 with the int32
 * argmax, AMD EPYC Zen 3) in a process that had loaded onnxruntime or OpenVINO, and no longer
 * than 16-byte stores without them: not understood, so not used there. */
ROW_STREAM_ADVANCE_4(float, f32, ROW_STREAM_PACKED_AVX2())
ROW_STREAM_ADVANCE_4(int32_t, i32, (void)0)

#undef ROW_STREAM_PACKED_AVX2
#undef ROW_STREAM_VECTORS_4
#undef ROW_STREAM_ADVANCE_4

/* 8-byte elements: vectors of two, so a vector spans two rows only when it starts on a
 * row's last element. The vector steps are bit moves (the casts reinterpret). */
#define ROW_STREAM_ADVANCE_8(T, SUFFIX)                                                        \
    void pyroi_row_stream_advance_##SUFFIX(pyroi_row_stream *stream, int64_t elements)        \
    {                                                                                          \
        ROW_STREAM_LOAD(T);                                                                    \
        ROW_STREAM_VECTORS_8(T);                                                               \
        while (done < end) {                                                                   \
            ROW_STREAM_STEP();                                                                 \
        }                                                                                      \
        ROW_STREAM_STORE();                                                                    \
    }

#ifdef PYROI_HAVE_STREAM_STORES
#  define ROW_STREAM_VECTORS_8(T)                                                              \
    if (row_length >= 2) {                                                                     \
        while (done < end && ((uintptr_t)(out + done) & 15) != 0) {                            \
            ROW_STREAM_STEP();                                                                 \
        }                                                                                      \
        if (src_stride == row_length) { /* packed rows: one plain run */                       \
            const T *p = in + row * src_stride + column;                                       \
            int64_t count = (end < total - 1 ? end : total - 1) - done, m;                     \
            count = count > 0 ? (count + 1) / 2 * 2 : 0;                                      \
            for (m = 0; m < count; m += 2) {                                                   \
                _mm_stream_si128((__m128i *)(void *)(out + done + m),                          \
                                 _mm_castpd_si128(_mm_loadu_pd((const double *)(p + m))));     \
            }                                                                                  \
            done += count;                                                                     \
            row += (column + count) / row_length;                                              \
            column = (column + count) % row_length;                                            \
        }                                                                                      \
        while (done < end && done + 2 <= total) {                                              \
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
#  define ROW_STREAM_VECTORS_8(T)
#endif

ROW_STREAM_ADVANCE_8(double, f64)
ROW_STREAM_ADVANCE_8(int64_t, i64)

#undef ROW_STREAM_VECTORS_8
#undef ROW_STREAM_ADVANCE_8
#undef ROW_STREAM_STORE
#undef ROW_STREAM_LOAD
#undef ROW_STREAM_STEP
