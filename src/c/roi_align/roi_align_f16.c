/* roi_align_f16.c - RoIAlign's float16 entry points (avg, mmcv's and ONNX's max): in place
 * where the float32 orders allow it (roi_align_half.h), else through the chunks of
 * core/half_chunks.h. */
#include "core/half_chunks.h"
#include "core/validate.h"
#include "roi_align/roi_align_half.h"

#include <string.h>

/* RoIAlign's avg forward and backward read and write the float16 tensors in place where
 * their lane-major orders run (roi_align_half.h). */
static pyroi_status half_roi_align_forward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_forward_half(c->map, c->map_shape, c->map_strides, HALF_ROIS(c),
                                        c->pooled, c->pooled_strides,
                                        HALF_PARAMS(roi_align, c), taken);
}

static pyroi_status half_roi_align_backward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_backward_half(c->pooled, c->pooled_strides, HALF_ROIS(c), c->map,
                                         c->map_shape, c->map_strides,
                                         HALF_PARAMS(roi_align, c), taken);
}

/* RoIAlign's max forwards (mmcv's, ONNX's) likewise. */
static pyroi_status half_roi_align_max_forward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_max_forward_half(
        0, c->map, c->map_shape, c->map_strides, HALF_ROIS(c), c->pooled, c->pooled_strides,
        (int64_t *)(void *)c->argmax, c->argmax_strides, HALF_PARAMS(roi_align, c), taken);
}

static pyroi_status half_roi_align_onnx_max_forward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_max_forward_half(
        1, c->map, c->map_shape, c->map_strides, HALF_ROIS(c), c->pooled, c->pooled_strides,
        (int64_t *)(void *)c->argmax, c->argmax_strides, HALF_PARAMS(roi_align, c), taken);
}

/* RoIAlign's max backwards (mmcv's, ONNX's) likewise, into float32 planes of one channel. */
static pyroi_status half_roi_align_max_backward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_max_backward_half(
        0, c->pooled, c->pooled_strides, (const int64_t *)(const void *)c->argmax,
        c->argmax_strides, HALF_ROIS(c), c->map, c->map_shape, c->map_strides,
        HALF_PARAMS(roi_align, c), taken);
}

static pyroi_status half_roi_align_onnx_max_backward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_align_max_backward_half(
        1, c->pooled, c->pooled_strides, (const int64_t *)(const void *)c->argmax,
        c->argmax_strides, HALF_ROIS(c), c->map, c->map_shape, c->map_strides,
        HALF_PARAMS(roi_align, c), taken);
}

HALF_FORWARD(roi_align_forward, roi_align, 4, 0, HALF_NO_ARGMAX_PARAMETERS,
             HALF_NO_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGS(roi_align),
             half_roi_align_forward_whole)
HALF_BACKWARD(roi_align_backward, roi_align, 4, 0, HALF_NO_ARGMAX_PARAMETERS,
              HALF_NO_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGS(roi_align),
              half_roi_align_backward_whole)
HALF_FORWARD(roi_align_max_forward, roi_align, 4, 0, HALF_ARGMAX_OUT_PARAMETERS,
             HALF_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGMAX_ARGS(roi_align),
             half_roi_align_max_forward_whole)
HALF_BACKWARD(roi_align_max_backward, roi_align, 4, 0, HALF_ARGMAX_IN_PARAMETERS,
              HALF_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGMAX_ARGS(roi_align),
              half_roi_align_max_backward_whole)
HALF_FORWARD(roi_align_onnx_max_forward, roi_align, 4, 0, HALF_NO_ARGMAX_PARAMETERS,
             HALF_NO_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGS(roi_align),
             half_roi_align_onnx_max_forward_whole)
HALF_FORWARD(roi_align_onnx_max_forward_argmax, roi_align, 4, 0, HALF_ARGMAX_OUT_PARAMETERS,
             HALF_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGMAX_ARGS(roi_align),
             half_roi_align_onnx_max_forward_whole)
HALF_BACKWARD(roi_align_onnx_max_backward, roi_align, 4, 0, HALF_ARGMAX_IN_PARAMETERS,
              HALF_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGMAX_ARGS(roi_align),
              half_roi_align_onnx_max_backward_whole)
