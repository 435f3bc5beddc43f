/* roi_align_half.h - RoIAlign's avg forward on a float16 map into a float16 output in one
 * float32 call (internal, not installed; half.c's pyroi_roi_align_forward_f16 takes it first).
 *
 * The float32 kernels of the lane-major orders (image blocks, RoI regions and tiles, row
 * bands) run as in pyroi_roi_align_forward_f32: their gathers widen exactly the float16
 * pixels they copy into lane-major blocks, and their store rounds each bin once to float16.
 * So the results are the float32 call's on the widened map, rounded once, with no float32
 * copy of the map or the output. The orders that read the map in place (direct, channels-last)
 * are not taken: *taken 0, nothing read or written, and the caller widens chunks instead.
 * With *taken 1 the status is the call's. The caller has checked the tensors; map_shape is
 * the caller's own copy (read more than once). */
#ifndef PYROI_ROI_ALIGN_HALF_H
#define PYROI_ROI_ALIGN_HALF_H

#include "common.h"

pyroi_status pyroi_roi_align_forward_half(const uint16_t *input, const int64_t input_shape[4],
                                          const int64_t input_strides[4], const float *boxes,
                                          int64_t num_rois, int64_t box_row_stride,
                                          const int64_t *batch_indices, uint16_t *output,
                                          const int64_t output_strides[4],
                                          const pyroi_roi_align_params *params, int *taken);

#endif /* PYROI_ROI_ALIGN_HALF_H */
