/* roi_align_rotated_dtype.h - rotated RoIAlign for one dtype: included by roi_align_rotated.c
 * once per dtype (each_dtype.h) with T and PYROI_TYPED(name) defined. The templates, in
 * include order:
 *   roi_align_rotated_geometry_template.h  where a RoI samples, and the visit of its samples
 *   roi_align_rotated_template.h           the job, the math (flushes), tasks, entry points */
#include "rotated/roi_align_rotated_geometry_template.h"
#include "rotated/roi_align_rotated_template.h"
