/* ps_roi_f16.c - PSRoIAlign's and PSRoIPool's float16 entry points: in place
 * (ps_roi_half.h), else through the chunks of core/half_chunks.h. */
#include "core/half_chunks.h"
#include "core/validate.h"
#include "ps_roi/ps_roi_half.h"

HALF_FORWARD_BACKWARD(ps_roi_align, ps_roi_align, 4, 1)
HALF_FORWARD_BACKWARD(ps_roi_pool, ps_roi_pool, 4, 1)
