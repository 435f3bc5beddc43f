/* roi_align_f16.c - RoIAlign's float16 entry points (avg, mmcv's and ONNX's max): in place
 * where the float32 orders allow it (roi_align_half.h), else through the chunks of
 * core/half_chunks.h. */
#include "core/half_chunks.h"
#include "core/validate.h"
#include "roi_align/roi_align_half.h"

/* avg, forward and backward */
HALF_FORWARD_BACKWARD(roi_align, roi_align, 4, 0)

/* The max modes' whole calls, mmcv's (onnx 0) or ONNX's (1): the forward in place, the
 * backward into float32 planes of one channel (roi_align_half.h). */
#define HALF_ROI_ALIGN_MAX_WHOLE(name, onnx)                                                  \
    static pyroi_status half_##name##_forward_whole(const half_call *c, int *taken)           \
    {                                                                                         \
        return pyroi_roi_align_max_forward_half(                                              \
            onnx, c->map, c->map_shape, c->map_strides, HALF_ROIS(c), c->pooled,              \
            c->pooled_strides, (int64_t *)(void *)c->argmax, c->argmax_strides,               \
            HALF_PARAMS(roi_align, c), taken);                                                \
    }                                                                                         \
    static pyroi_status half_##name##_backward_whole(const half_call *c, int *taken)          \
    {                                                                                         \
        return pyroi_roi_align_max_backward_half(                                             \
            onnx, c->pooled, c->pooled_strides, (const int64_t *)(const void *)c->argmax,     \
            c->argmax_strides, HALF_ROIS(c), c->map, c->map_shape, c->map_strides,            \
            HALF_PARAMS(roi_align, c), taken);                                                \
    }

HALF_ROI_ALIGN_MAX_WHOLE(roi_align_max, 0)
HALF_ROI_ALIGN_MAX_WHOLE(roi_align_onnx_max, 1)

HALF_FORWARD_ARGMAX(roi_align_max_forward, roi_align, OUT, half_roi_align_max_forward_whole)
HALF_BACKWARD_ARGMAX(roi_align_max_backward, roi_align, half_roi_align_max_backward_whole)
HALF_FORWARD_NO_ARGMAX(roi_align_onnx_max_forward, roi_align, half_roi_align_onnx_max_forward_whole)
HALF_FORWARD_ARGMAX(roi_align_onnx_max_forward_argmax, roi_align, OUT,
                    half_roi_align_onnx_max_forward_whole)
HALF_BACKWARD_ARGMAX(roi_align_onnx_max_backward, roi_align, half_roi_align_onnx_max_backward_whole)
