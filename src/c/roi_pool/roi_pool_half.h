/* roi_pool_half.h - RoIPool's forward and backwards on float16 tensors in one float32 call
 * (internal, not installed; roi_pool_f16.c's pyroi_roi_pool_forward_f16 / _forward_i32_f16 /
 * _backward_f16 / _backward_i32_f16 / _backward_from_input_f16 take them first).
 *
 * The float32 lane-major orders run as in pyroi_roi_pool_forward_f32, their gathers widening
 * exactly the float16 pixels they copy into the channels-last blocks. A bin's maximum is one
 * of its (widened) pixels or -FLT_MAX or 0, so rounding it once to float16 as the tile is
 * written out gives the bits of the chunked float32 call, with no float32 copy of either
 * tensor. argmax (NULL: none) has int64 entries when argmax_wide, else int32. The direct order
 * (maps too large for the scratch) reads the map in place and is not taken: *taken 0, nothing
 * read or written, and the caller runs chunks instead. With *taken 1 the status is the
 * call's. */
#ifndef PYROI_ROI_POOL_HALF_H
#define PYROI_ROI_POOL_HALF_H

#include "core/common.h"

pyroi_status pyroi_roi_pool_forward_half(const uint16_t *input, const int64_t input_shape[4],
                                         const int64_t input_strides[4], const float *boxes,
                                         int64_t num_rois, int64_t box_row_stride,
                                         const int64_t *batch_indices, uint16_t *output,
                                         const int64_t output_strides[4], void *argmax,
                                         const int64_t argmax_strides[4], int argmax_wide,
                                         const pyroi_roi_pool_params *params, int *taken);

/* The backward from the input likewise: its image blocks widen the float16 map as they
 * gather it and each RoI's float16 gradients as they are put lane-major, and each pixel's sum
 * is rounded once as the block is written out: the float32 call's bits on the widened
 * tensors. Where the call would go through an argmax (the map too large for the scratch, or
 * few bins next to its pixels), *taken is 0 and nothing is read or written. input_shape is
 * the caller's copy (read more than once). */
pyroi_status pyroi_roi_pool_backward_from_input_half(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const uint16_t *input,
    const int64_t input_shape[4], const int64_t input_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params, int *taken);

/* The backward from an argmax (int64 entries when argmax_wide, else int32) likewise, where
 * it adds into image blocks whole runs of C-contiguous gradients and argmax: each RoI's run
 * of float16 gradients is widened before it is added, and each pixel's sum rounded once as
 * the block is written out. Elsewhere (the direct order, other strides, an empty grad_input)
 * *taken is 0 and nothing is read or written. grad_input_shape is the caller's copy. */
pyroi_status pyroi_roi_pool_backward_half(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const void *argmax,
    const int64_t argmax_strides[4], int argmax_wide, const int64_t *batch_indices,
    int64_t num_rois, uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_pool_params *params, int *taken);

#endif /* PYROI_ROI_POOL_HALF_H */
