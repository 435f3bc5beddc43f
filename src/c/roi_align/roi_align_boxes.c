/* roi_align_boxes.c - the gradient of RoIAlign's average with respect to the box coordinates,
 * float32 and float64 (docs/semantics.md §3.8): the slope of the one bilinear sampler
 * (core/sampling.h) at every sample, taken to the box through the affine sample positions.
 * The kernel, written once, is roi_align_boxes_template.h, compiled per dtype through
 * core/each_dtype.h. */
#include "core/parallel.h"
#include "core/rois.h"
#include "core/sampling.h"
#include "core/validate.h"

#include <string.h>

#define PYROI_DTYPE_TEMPLATE "roi_align/roi_align_boxes_template.h"
#include "core/each_dtype.h"
