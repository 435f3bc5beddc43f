/* ps_roi_half.h - PSRoIAlign's and PSRoIPool's forward and backward on float16 tensors in
 * one float32 call (internal, not installed; ps_roi_f16.c's pyroi_ps_roi_align_forward_f16 and the
 * others take them first).
 *
 * The forwards' float32 kernels read the float16 map in place, each element widened exactly
 * by F16C as it is read, sum each bin in torchvision's order in float32 and round the average
 * once into the float16 output: the chunked float32 call's bits, with no float32 copy of
 * either tensor and no float32 call per chunk (each repeated every RoI's tables and bin
 * windows). Without F16C *taken is 0, nothing is read or written, and the caller runs chunks
 * instead; with *taken 1 the status is the call's. The caller has checked the tensors; the
 * shapes are its own copies. */
pyroi_status pyroi_ps_roi_align_forward_half(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4], const pyroi_ps_roi_align_params *params,
    int *taken);

#ifndef PYROI_PS_ROI_HALF_H
#define PYROI_PS_ROI_HALF_H

#include "core/common.h"

pyroi_status pyroi_ps_roi_pool_forward_half(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4], const pyroi_ps_roi_pool_params *params,
    int *taken);

pyroi_status pyroi_ps_roi_align_backward_half(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_ps_roi_align_params *params, int *taken);

/* The backwards likewise, where F16C runs: each worker sums a pass of output channels' input
 * planes of every image (as many channels as fit its L2 cache, at least one: PH * PW * N * H
 * * W floats each) in float32 planes, adding the widened gradients in the float32 call's
 * order, and rounds them once into grad_input. Without F16C, or where one channel's planes
 * would pass 256 MiB for all workers, *taken is 0 and nothing is written. The shape is the
 * caller's copy. */
pyroi_status pyroi_ps_roi_pool_backward_half(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_ps_roi_pool_params *params, int *taken);

#endif /* PYROI_PS_ROI_HALF_H */
