/* ps_roi_dtype.h - the position-sensitive operators for one dtype: included by ps_roi.c once
 * per dtype (each_dtype.h) with T and PYROI_TYPED(name) defined. The templates, in include
 * order:
 *   ps_roi_job_template.h    the job both operators' workers read (tensors, RoIs, bins)
 *   ps_roi_align_template.h  PSRoIAlign: sampling grids, tasks, entry points
 *   ps_roi_pool_template.h   PSRoIPool: quantised bins, tasks, entry points */
#include "ps_roi/ps_roi_job_template.h"
#include "ps_roi/ps_roi_align_template.h"
#include "ps_roi/ps_roi_pool_template.h"
