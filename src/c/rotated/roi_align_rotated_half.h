/* roi_align_rotated_half.h - rotated RoIAlign's forward and backward on float16 tensors in
 * one float32 call (internal, not installed; roi_align_rotated_f16.c's
 * pyroi_roi_align_rotated_forward_f16 / _backward_f16 take them first).
 *
 * The forward runs the float32 kernel's flushes on the float16 map in place, each tap widened
 * exactly by F16C as it is read, and sums each RoI's bins into a float32 tile that is rounded
 * once into the float16 output; without F16C it is not taken. The backward records every RoI's in-map
 * samples once, then for each channel and image adds the widened output gradients into a
 * float32 plane in the float32 call's order and rounds each pixel once into grad_input. So the
 * results are the float32 call's on the widened tensors, rounded once, bit for bit, with no
 * float32 copy of either tensor. Where the tiles, the record of samples or the planes would
 * pass their bounds (roi_align_rotated.c), *taken is 0, nothing is written, and the caller
 * runs chunks instead. With *taken 1 the status is the call's. The caller has checked the
 * tensors; the shapes are the caller's own copies (read more than once). */
#ifndef PYROI_ROI_ALIGN_ROTATED_HALF_H
#define PYROI_ROI_ALIGN_ROTATED_HALF_H

#include "core/common.h"

pyroi_status pyroi_roi_align_rotated_forward_half(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4],
    const pyroi_roi_align_rotated_params *params, int *taken);

pyroi_status pyroi_roi_align_rotated_backward_half(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_align_rotated_params *params,
    int *taken);

#endif /* PYROI_ROI_ALIGN_ROTATED_HALF_H */
