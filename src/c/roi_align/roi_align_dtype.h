/* roi_align_dtype.h - RoIAlign for one dtype: included by roi_align.c once per dtype with T
 * and PYROI_TYPED(name) defined. The templates, in include order (each uses what the ones
 * before it define):
 *   lane_block_template.h          (shared with RoIPool) lane layout, gather, block write-out
 *   roi_align_plan_template.h      geometry of a RoI (roi_align_geometry_template.h), the call's
 *                                  plan (RoI copy, tap tables), job
 *   roi_align_prefetch_template.h  the next bin row's pixels into L2 while one is computed
 *   roi_align_blocks_template.h    the kernels' lanes, scratch, streamed write-out of bin tiles
 *   roi_align_avg_template.h       the avg reduction: direct and lane-major kernels
 *   roi_align_orders_template.h    the image-block and RoI-region loops and their tasks
 *   roi_align_tiles_template.h     the avg forward's RoI-tile order (few RoIs on a large map)
 *   roi_align_channels_last_template.h  the avg forward sampling channels-last input in place
 *   roi_align_driver_template.h    the schedule (loop order, workers, scratch), avg entry points
 *   roi_align_max_template.h       the max reductions' call path and mmcv's reduction
 *   roi_align_onnx_max_template.h  onnxruntime's max reduction, forward and gradient
 *   roi_align_explain_template.h   the explain functions (the kernels' own grid and sampler)
 * The lane layout macros end here: the next dtype defines them anew. */
#include "layout/lane_block_template.h"
#include "roi_align/roi_align_plan_template.h"
#include "roi_align/roi_align_prefetch_template.h"
#include "roi_align/roi_align_blocks_template.h"
#include "roi_align/roi_align_avg_template.h"
#include "roi_align/roi_align_orders_template.h"
#include "roi_align/roi_align_tiles_template.h"
#include "roi_align/roi_align_channels_last_template.h"
#include "roi_align/roi_align_driver_template.h"
#include "roi_align/roi_align_max_template.h"
#include "roi_align/roi_align_onnx_max_template.h"
#include "roi_align/roi_align_explain_template.h"
#undef PYROI_VECTORS
#undef PYROI_STAGING_RUN
#undef PYROI_LANES
#undef PYROI_LANE_BYTES
