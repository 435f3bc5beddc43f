/* transpose.h - moves between channel rows (one row per channel, the caller's layout) and
 * lane-major rows (PYROI_LANE_COUNT_* channels interleaved per element, the layout the
 * blocked kernels vectorise over). Pure data movement: results never depend on the path.
 * x86-64 with GCC/Clang gets an AVX2 path for float, chosen at run time; everything else
 * (and every unusual stride) takes the portable loops. Internal. */
#ifndef PYROI_TRANSPOSE_H
#define PYROI_TRANSPOSE_H

#include "common.h"

/* Lanes per element: one 64-byte cache line. */
#define PYROI_LANE_COUNT_F32 16
#define PYROI_LANE_COUNT_F64 8

/* dst[j * dst_lane_stride + i * dst_stride] = src[i * L + j] for i < count, j < lanes. */
void pyroi_lanes_to_channels_f32(const float *src, int64_t count, int64_t lanes, float *dst,
                                 int64_t dst_lane_stride, int64_t dst_stride);
void pyroi_lanes_to_channels_f64(const double *src, int64_t count, int64_t lanes, double *dst,
                                 int64_t dst_lane_stride, int64_t dst_stride);

/* dst[i * L + j] = src[j * src_lane_stride + i * src_stride] for i < count, j < lanes, and
 * 0 for lanes <= j < L. */
void pyroi_channels_to_lanes_f32(const float *src, int64_t src_lane_stride, int64_t src_stride,
                                 int64_t count, int64_t lanes, float *dst);
void pyroi_channels_to_lanes_f64(const double *src, int64_t src_lane_stride, int64_t src_stride,
                                 int64_t count, int64_t lanes, double *dst);

/* dst[i] = src[i] for i < count, written around the caches where the platform allows it
 * (x86-64: non-temporal stores), for large outputs that will not be read again soon: no
 * read-for-ownership of the destination lines. Pure data movement. Before another thread
 * reads dst, the writing thread calls pyroi_stream_fence(). */
void pyroi_stream_copy_f32(float *dst, const float *src, int64_t count);
void pyroi_stream_copy_f64(double *dst, const double *src, int64_t count);
void pyroi_stream_copy_i64(int64_t *dst, const int64_t *src, int64_t count);
void pyroi_stream_fence(void);

#endif /* PYROI_TRANSPOSE_H */
