/* transpose.h - moves between channel rows (one row per channel, the caller's layout) and
 * lane-major rows (PYROI_LANE_COUNT_* channels interleaved per element, the layout the
 * blocked kernels vectorise over). Pure data movement: results never depend on the path.
 * x86-64 with GCC/Clang gets an AVX2 path for float, chosen at run time; everything else
 * (and every unusual stride) takes the portable loops. Also: streaming (cache-bypassing)
 * copies of large outputs. Internal. */
#ifndef PYROI_TRANSPOSE_H
#define PYROI_TRANSPOSE_H

#include "core/common.h"

/* Lanes per element: one 64-byte cache line. */
#define PYROI_LANE_COUNT_F32 16
#define PYROI_LANE_COUNT_F64 8

/* dst[j * dst_lane_stride + i * dst_stride] = src[i * L + j] for i < count, j < lanes. */
void pyroi_lanes_to_channels_f32(const float *src, int64_t count, int64_t lanes, float *dst,
                                 int64_t dst_lane_stride, int64_t dst_stride);
void pyroi_lanes_to_channels_f64(const double *src, int64_t count, int64_t lanes, double *dst,
                                 int64_t dst_lane_stride, int64_t dst_stride);
/* The same for int32 lane rows of float32's width (RoIPool's argmax tiles). */
void pyroi_lanes_to_channels_i32(const int32_t *src, int64_t count, int64_t lanes,
                                 int32_t *dst, int64_t dst_lane_stride, int64_t dst_stride);

/* dst[i * dst_pitch + j] = src[j * src_lane_stride + i * src_stride] for i < count,
 * j < lanes, and 0 for lanes <= j < L; dst_pitch >= L (L: the usual lane-major rows; a
 * multiple of L: the lane groups of several channel blocks interleaved per element). */
void pyroi_channels_to_lanes_f32(const float *src, int64_t src_lane_stride, int64_t src_stride,
                                 int64_t count, int64_t lanes, float *dst, int64_t dst_pitch);
void pyroi_channels_to_lanes_f64(const double *src, int64_t src_lane_stride, int64_t src_stride,
                                 int64_t count, int64_t lanes, double *dst, int64_t dst_pitch);

/* The same from float16 (binary16 bits), each element widened exactly to T as it is read:
 * the blocked kernels gather float16 maps without a float32 copy of them. */
void pyroi_half_channels_to_lanes_f32(const uint16_t *src, int64_t src_lane_stride,
                                      int64_t src_stride, int64_t count, int64_t lanes,
                                      float *dst, int64_t dst_pitch);
void pyroi_half_channels_to_lanes_f64(const uint16_t *src, int64_t src_lane_stride,
                                      int64_t src_stride, int64_t count, int64_t lanes,
                                      double *dst, int64_t dst_pitch);

/* ---- streaming stores ------------------------------------------------------------------ */
/* Large outputs that will not be read again soon are written around the caches where the
 * platform allows it (x86-64: non-temporal stores), which saves reading every destination
 * line first. Pure data movement. Before another thread reads what a thread streamed, that
 * thread calls pyroi_stream_fence(). */

void pyroi_stream_fence(void);

/* Outputs of at least this many bytes are streamed: more than a core's L2 cache holds (they
 * leave it before anything reads them back), and at least 1 MB (the L2 size assumed where
 * the CPU does not say). Measured on a 1 MB-L2 Zen 4, the 64-RoI small call (a 3.2 MB output)
 * from channels-last features: 1.90 -> 1.73 ms against a fixed 8 MB threshold. */
double pyroi_stream_bytes(void);

/* Streams `count` lines of 64 bytes: line i from src + 64 i to dst + i * dst_stride bytes
 * (dst and dst_stride multiples of 64, so each store covers a whole line). Plain copies where
 * the platform has no streaming stores. Bits only: any element type. Channels-last output
 * bins of a 64-byte lane group are such lines, written straight from the lane-major tile
 * with no transposition. */
void pyroi_lines_stream(const void *src, int64_t count, void *dst, int64_t dst_stride);

/* A packed run being streamed a piece at a time, so that the stores overlap other work
 * instead of stalling it: dst[r * row_length + i] = src[r * src_stride + i] for r < rows,
 * i < row_length. When src_stride != row_length the source needs room around each row:
 * src_stride >= row_length + 3 (float, int32) or + 1 (double, int64), rows * src_stride readable
 * elements; elements just past a row's end and just before a later row's start are read
 * but not used. dst and src must stay valid until the run is finished. */
typedef struct pyroi_row_stream {
    void *dst;
    const void *src;
    int64_t total;      /* elements of the run */
    int64_t done;       /* elements written so far */
    int64_t row;        /* source row and column of element `done` */
    int64_t column;
    int64_t row_length;
    int64_t src_stride;
    int wide_stores;    /* the CPU streams 32 bytes at a time (read once per run) */
} pyroi_row_stream;

void pyroi_row_stream_init(pyroi_row_stream *stream, void *dst, const void *src, int64_t rows,
                           int64_t row_length, int64_t src_stride);
/* Writes at least `elements` more elements of the run (all that remain if fewer), up to a
 * 64-byte line boundary of dst or the run's end: streaming stores write whole lines only,
 * plain stores the partial lines at the run's two ends. */
void pyroi_row_stream_advance_f32(pyroi_row_stream *stream, int64_t elements);
void pyroi_row_stream_advance_i32(pyroi_row_stream *stream, int64_t elements);
void pyroi_row_stream_advance_f64(pyroi_row_stream *stream, int64_t elements);
void pyroi_row_stream_advance_i64(pyroi_row_stream *stream, int64_t elements);

#endif /* PYROI_TRANSPOSE_H */
