/* roi_align_half.h - RoIAlign's avg forward and backward, and its max forwards, on float16
 * tensors in one float32 call (internal, not installed; roi_align_f16.c's
 * pyroi_roi_align_forward_f16 / _backward_f16 / _max_forward_f16 /
 * _onnx_max_forward(_argmax)_f16 take them first).
 *
 * The float32 kernels of the lane-major orders run as in pyroi_roi_align_forward_f32 /
 * _backward_f32: the forward's gathers (image blocks, row bands, footprints, RoI regions and
 * tiles) widen exactly the float16 pixels they copy into lane-major blocks and its store
 * rounds each bin once; the backward's image order widens each RoI's output gradients as it
 * loads them and rounds each pixel of grad_input once as it writes the band out, and its RoI
 * regions are summed per image in the float32 block and rounded once. So the results are the
 * float32 call's on the widened tensor, rounded once, with no float32 copy of either tensor.
 * The other orders (direct, channels-last in place), which read the map where it lies, are
 * not taken: *taken 0, nothing read or written, and the caller runs chunks instead (one
 * decision for every reduction and direction: roi_align_half_in_place). With *taken 1 the
 * status is the call's. The caller has checked the tensors; the shape is the caller's own
 * copy (read more than once). */
#ifndef PYROI_ROI_ALIGN_HALF_H
#define PYROI_ROI_ALIGN_HALF_H

#include "core/common.h"

/* The avg call on the RoIs' rows of the pooled tensor (rows[i]: RoI i's, NULL: i), the
 * multi-level RoIAlign's per-level call; with dry_run only *taken is found (nothing read or
 * written past the checks). pyroi_roi_align_forward_half / _backward_half are this call with
 * rows NULL. */
pyroi_status pyroi_roi_align_rows_half(int backward, int dry_run, uint16_t *map,
                                       const int64_t map_shape[4], const int64_t map_strides[4],
                                       uint16_t *pooled, const int64_t pooled_strides[4],
                                       const float *boxes, int64_t num_rois,
                                       int64_t box_row_stride, const int64_t *batch_indices,
                                       const int64_t *rows,
                                       const pyroi_roi_align_params *params, int *taken);

pyroi_status pyroi_roi_align_forward_half(
    const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const float *boxes, int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *output, const int64_t output_strides[4], const pyroi_roi_align_params *params,
    int *taken);

pyroi_status pyroi_roi_align_backward_half(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_align_params *params, int *taken);

/* The max forwards likewise (onnx: ONNX's max over weighted taps, else mmcv's over samples;
 * argmax, int64, may be NULL and is written as the float32 call writes it): the lane-major
 * orders widen the pixels they gather, and each bin, a maximum of float32 values, is rounded
 * once as it is stored. Where the direct order would run, *taken is 0. */
pyroi_status pyroi_roi_align_max_forward_half(
    int onnx, const uint16_t *input, const int64_t input_shape[4],
    const int64_t input_strides[4], const float *boxes, int64_t num_rois,
    int64_t box_row_stride, const int64_t *batch_indices, uint16_t *output,
    const int64_t output_strides[4], int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_align_params *params, int *taken);

/* The max backwards likewise (onnx: ONNX's, else mmcv's; argmax int64 as the forward wrote
 * it): one channel at a time, each worker's float32 planes of that channel (every image's)
 * receive the widened gradients and are rounded once into grad_input. Where the planes cannot
 * be had, *taken is 0 and nothing was written. */
pyroi_status pyroi_roi_align_max_backward_half(
    int onnx, const uint16_t *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_align_params *params, int *taken);

/* The multi-level RoIAlign (roi_align_levels.c) likewise, level by level: each level's RoIs
 * run as pyroi_roi_align_rows_half, the maps and the pooled tensor float16 in place. Every
 * level's order is found before anything is written: when one level would take an order
 * that does not run in place, *taken is 0 and nothing is written (the chunks run the whole
 * call). The backward zeroes a level without RoIs. shapes, strides: the caller's copies. */
pyroi_status pyroi_roi_align_levels_half(
    int backward, int64_t num_levels, uint16_t *const *maps, const int64_t *shapes,
    const int64_t *strides, const double *spatial_scales, uint16_t *pooled,
    const int64_t pooled_strides[4], const float *boxes, int64_t num_rois,
    int64_t box_row_stride, const int64_t *batch_indices,
    const pyroi_fpn_level_params *level_params, const pyroi_roi_align_params *params,
    int *taken);

#endif /* PYROI_ROI_ALIGN_HALF_H */
