/* roi_pool_half.h - RoIPool's forward on float16 tensors in one float32 call (internal, not
 * installed; half.c's pyroi_roi_pool_forward_f16 / _forward_i32_f16 take it first).
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

#include "common.h"

pyroi_status pyroi_roi_pool_forward_half(const uint16_t *input, const int64_t input_shape[4],
                                         const int64_t input_strides[4], const float *boxes,
                                         int64_t num_rois, int64_t box_row_stride,
                                         const int64_t *batch_indices, uint16_t *output,
                                         const int64_t output_strides[4], void *argmax,
                                         const int64_t argmax_strides[4], int argmax_wide,
                                         const pyroi_roi_pool_params *params, int *taken);

#endif /* PYROI_ROI_POOL_HALF_H */
