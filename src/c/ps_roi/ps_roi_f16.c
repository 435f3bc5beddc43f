/* ps_roi_f16.c - PSRoIAlign's and PSRoIPool's float16 entry points: in place
 * (ps_roi_half.h), else through the chunks of core/half_chunks.h. */
#include "core/half_chunks.h"
#include "core/validate.h"
#include "ps_roi/ps_roi_half.h"

#include <string.h>

/* PSRoIAlign and PSRoIPool read and write the float16 tensors in place (ps_roi_half.h). */
static pyroi_status half_ps_roi_align_forward_whole(const half_call *c, int *taken)
{
    return pyroi_ps_roi_align_forward_half(c->map, c->map_shape, c->map_strides, HALF_ROIS(c),
                                           c->pooled, c->pooled_strides,
                                           HALF_PARAMS(ps_roi_align, c), taken);
}

static pyroi_status half_ps_roi_align_backward_whole(const half_call *c, int *taken)
{
    return pyroi_ps_roi_align_backward_half(c->pooled, c->pooled_strides, HALF_ROIS(c), c->map,
                                            c->map_shape, c->map_strides,
                                            HALF_PARAMS(ps_roi_align, c), taken);
}

static pyroi_status half_ps_roi_pool_forward_whole(const half_call *c, int *taken)
{
    return pyroi_ps_roi_pool_forward_half(c->map, c->map_shape, c->map_strides, HALF_ROIS(c),
                                          c->pooled, c->pooled_strides,
                                          HALF_PARAMS(ps_roi_pool, c), taken);
}

static pyroi_status half_ps_roi_pool_backward_whole(const half_call *c, int *taken)
{
    return pyroi_ps_roi_pool_backward_half(c->pooled, c->pooled_strides, HALF_ROIS(c), c->map,
                                           c->map_shape, c->map_strides,
                                           HALF_PARAMS(ps_roi_pool, c), taken);
}

HALF_FORWARD(ps_roi_align_forward, ps_roi_align, 4, 1, HALF_NO_ARGMAX_PARAMETERS,
             HALF_NO_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGS(ps_roi_align),
             half_ps_roi_align_forward_whole)
HALF_BACKWARD(ps_roi_align_backward, ps_roi_align, 4, 1, HALF_NO_ARGMAX_PARAMETERS,
              HALF_NO_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGS(ps_roi_align),
              half_ps_roi_align_backward_whole)
HALF_FORWARD(ps_roi_pool_forward, ps_roi_pool, 4, 1, HALF_NO_ARGMAX_PARAMETERS,
             HALF_NO_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGS(ps_roi_pool),
             half_ps_roi_pool_forward_whole)
HALF_BACKWARD(ps_roi_pool_backward, ps_roi_pool, 4, 1, HALF_NO_ARGMAX_PARAMETERS,
              HALF_NO_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGS(ps_roi_pool),
              half_ps_roi_pool_backward_whole)
