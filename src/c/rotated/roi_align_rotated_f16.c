/* roi_align_rotated_f16.c - rotated RoIAlign's float16 entry points: in place within their
 * scratch bounds (roi_align_rotated_half.h), else through the chunks of core/half_chunks.h. */
#include "core/half_chunks.h"
#include "core/validate.h"
#include "rotated/roi_align_rotated_half.h"

HALF_FORWARD_BACKWARD(roi_align_rotated, roi_align_rotated, 5, 0)
