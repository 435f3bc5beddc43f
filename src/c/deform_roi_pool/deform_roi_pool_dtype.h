/* deform_roi_pool_dtype.h - deformable RoI pooling for one dtype: included by
 * deform_roi_pool.c once per dtype (core/each_dtype.h) with T and PYROI_TYPED(name) defined.
 * The templates, in include order:
 *   deform_roi_pool_bins_template.h  the job, a RoI's axes, the offsets' copy, a bin's taps
 *   deform_roi_pool_template.h       the tasks, the calls and the entry points */
#include "deform_roi_pool/deform_roi_pool_bins_template.h"
#include "deform_roi_pool/deform_roi_pool_template.h"
