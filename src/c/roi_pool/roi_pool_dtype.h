/* roi_pool_dtype.h - RoIPool for one dtype: included by roi_pool.c once per dtype with T,
 * PYROI_TYPED(name), ROI_POOL_ROUND, ROI_POOL_FLOOR and ROI_POOL_CEIL defined. The
 * templates, in include order (each uses what the ones before it define):
 *   lane_block_template.h        (shared with RoIAlign) lane layout, gather, block write-out
 *   roi_pool_math_template.h     bin windows, direct kernels, the per-lane max of a bin
 *   roi_pool_plan_template.h     the job, the bin windows of the lane-major orders
 *   roi_pool_blocks_template.h   scratch, channels-last gather, (streamed) write-out of tiles
 *   roi_pool_orders_template.h   the direct and lane-major tasks
 *   roi_pool_driver_template.h   the loop order of a call, the entry points
 *   roi_pool_from_input_template.h  the backward from the input (winners found again)
 *   roi_pool_explain_template.h  the explain function (the forward's own quantisation)
 * The lane layout macros end here: the next dtype defines them anew. */
#include "layout/lane_block_template.h"
#include "roi_pool/roi_pool_math_template.h"
#include "roi_pool/roi_pool_plan_template.h"
#include "roi_pool/roi_pool_blocks_template.h"
#include "roi_pool/roi_pool_orders_template.h"
#include "roi_pool/roi_pool_driver_template.h"
#include "roi_pool/roi_pool_from_input_template.h"
#include "roi_pool/roi_pool_explain_template.h"
#undef ROI_POOL_GROUP_LANES
#undef PYROI_VECTORS
#undef PYROI_STAGING_RUN
#undef PYROI_LANES
#undef PYROI_LANE_BYTES
