/* roi_align_rotated_f16.c - rotated RoIAlign's float16 entry points: in place within their
 * scratch bounds (roi_align_rotated_half.h), else through the chunks of core/half_chunks.h. */
#include "core/half_chunks.h"
#include "core/validate.h"
#include "rotated/roi_align_rotated_half.h"

#include <string.h>

/* Rotated RoIAlign's forward and backward likewise, within their scratch bounds
 * (roi_align_rotated_half.h). */
static pyroi_status half_roi_align_rotated_forward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_rotated_forward_half(c->map, c->map_shape, c->map_strides,
                                                HALF_ROIS(c), c->pooled, c->pooled_strides,
                                                HALF_PARAMS(roi_align_rotated, c), taken);
}

static pyroi_status half_roi_align_rotated_backward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_rotated_backward_half(c->pooled, c->pooled_strides, HALF_ROIS(c),
                                                 c->map, c->map_shape, c->map_strides,
                                                 HALF_PARAMS(roi_align_rotated, c), taken);
}

HALF_FORWARD(roi_align_rotated_forward, roi_align_rotated, 5, 0, HALF_NO_ARGMAX_PARAMETERS,
             HALF_NO_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGS(roi_align_rotated),
             half_roi_align_rotated_forward_whole)
HALF_BACKWARD(roi_align_rotated_backward, roi_align_rotated, 5, 0, HALF_NO_ARGMAX_PARAMETERS,
              HALF_NO_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGS(roi_align_rotated),
              half_roi_align_rotated_backward_whole)
