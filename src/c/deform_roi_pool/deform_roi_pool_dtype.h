/* deform_roi_pool_dtype.h - deformable RoI pooling for one dtype: included by
 * deform_roi_pool.c once per dtype (core/each_dtype.h) with T and PYROI_TYPED(name) defined.
 * The templates, in include order:
 *   lane_block_template.h            (shared) lane layout, the channels-last gather
 *   deform_roi_pool_bins_template.h  the job, a RoI's axes, the offsets' copy, a bin's taps
 *   deform_roi_pool_blocks_template.h  the lane-major tasks (image blocks)
 *   deform_roi_pool_template.h       the direct tasks, the calls and the entry points
 * The lane layout macros end here: the next dtype defines them anew. */
#include "layout/lane_block_template.h"
#include "deform_roi_pool/deform_roi_pool_bins_template.h"
#include "deform_roi_pool/deform_roi_pool_blocks_template.h"
#include "deform_roi_pool/deform_roi_pool_template.h"
#undef PYROI_VECTORS
#undef PYROI_STAGING_RUN
#undef PYROI_LANES
#undef PYROI_LANE_BYTES
