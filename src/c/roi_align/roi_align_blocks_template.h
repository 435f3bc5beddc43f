/* roi_align_blocks_template.h - RoIAlign's part of the lane-major block machinery (the shared
 * part, the gather and the write-out of a block, is lane_block_template.h): the lanes as the
 * kernels see them, the worker's scratch (block, bin tiles, staging), the (streamed) write-out
 * of a RoI's bin tiles, and the prefetches. No reduction lives here: the kernels
 * (roi_align_avg_template.h and the max modes) read the block, the loops
 * (roi_align_orders_template.h) drive it. Included by roi_align.c once per dtype with T and
 * PYROI_TYPED(name) defined. */

/* The lanes of one pixel as the kernels see them (lane_block_template.h). */
typedef PYROI_TYPED(lane_vector) PYROI_TYPED(roi_align_lanes);

/* ---- lane-major loop orders ------------------------------------------------------------ */
/* The worker's scratch is a channels-last copy of (part of) one image for PYROI_LANES channels,
 * block[h][w][lane], plus one bin tile tile[ph][pw][lane]; with job->pair = 2, the lane groups
 * of two consecutive channel blocks side by side per pixel, block[h][w][2][lane], then their
 * two tiles. Lanes are the vector axis; each lane evaluates exactly the scalar expression of
 * its channel. Two ways to fill the block:
 *  - image blocks: work item = (image, channel block or pair of blocks); the whole image is
 *    gathered once and every RoI of that image reads it (many or large RoIs);
 *  - RoI regions: work item = RoI (forward) or channel block (backward); only the pixels a RoI
 *    touches are gathered, RoI by RoI (few, small RoIs on a large map). */

/* Elements of one bin tile. */
static int64_t PYROI_TYPED(roi_align_tile_elements)(const PYROI_TYPED(roi_align_job) *job)
{
    return job->params->pooled_height * job->params->pooled_width * PYROI_LANES;
}

static T *PYROI_TYPED(roi_align_bin_tile)(const PYROI_TYPED(roi_align_job) *job, T *block)
{
    return block + job->map_shape[2] * job->map_shape[3] * job->pair * PYROI_LANES;
}

/* Pixels of lanes a worker's staging area holds: a tile, or a run of a streamed image
 * (PYROI_STAGING_RUN, lane_block_template.h). */
static int64_t PYROI_TYPED(roi_align_staging_pixels)(int64_t tile_pixels)
{
    return tile_pixels > PYROI_STAGING_RUN ? tile_pixels : PYROI_STAGING_RUN;
}

/* Where a worker transposes lanes before streaming them out (see roi_align_tile_to_bins and
 * lane_block_to_image). */
static T *PYROI_TYPED(roi_align_staging)(const PYROI_TYPED(roi_align_job) *job, T *block)
{
    return PYROI_TYPED(roi_align_bin_tile)(job, block) +
           job->pair * PYROI_TYPED(roi_align_tile_elements)(job);
}

/* Moves a RoI's bins between the tile's lane-major layout and the caller's (K, C, PH, PW)
 * layout (channel j of the block at base + j * strides[1]), in one run when the bins are
 * evenly spaced, else row by row. When the block's channels are packed (the common dense
 * output) and staging is given, the bins are transposed there and streamed out: the output
 * is written once and never read back, so its lines need not be fetched first. Given
 * staging, channels-last bins of a whole lane group are streamed from the tile as they are. */
static void PYROI_TYPED(roi_align_tile_to_bins)(const T *tile, int64_t lanes,
                                                int64_t pooled_height, int64_t pooled_width,
                                                T *base, const int64_t strides[4], T *staging)
{
    const int64_t bins = pooled_height * pooled_width;
    int64_t ph;
    if (staging != NULL && PYROI_TYPED(lane_block_bins_are_lines)(base, lanes, strides)) {
        for (ph = 0; ph < pooled_height; ++ph) { /* a row of bins: one line per bin */
            pyroi_lines_stream(tile + ph * pooled_width * PYROI_LANES, pooled_width,
                               base + ph * strides[2], strides[3] * (int64_t)sizeof(T));
        }
        return;
    }
    if (staging != NULL && strides[3] == 1 && strides[2] == pooled_width &&
        (strides[1] == bins || lanes == 1)) {
        pyroi_row_stream run;
        PYROI_TYPED(pyroi_lanes_to_channels)(tile, bins, lanes, staging, bins, 1);
        pyroi_row_stream_init(&run, base, staging, 1, lanes * bins, lanes * bins);
        PYROI_TYPED(pyroi_row_stream_advance)(&run, INT64_MAX);
        return;
    }
    if (strides[2] == pooled_width * strides[3]) {
        PYROI_TYPED(pyroi_lanes_to_channels)(tile, pooled_height * pooled_width, lanes, base,
                                             strides[1], strides[3]);
        return;
    }
    for (ph = 0; ph < pooled_height; ++ph) {
        PYROI_TYPED(pyroi_lanes_to_channels)(tile + ph * pooled_width * PYROI_LANES,
                                             pooled_width, lanes, base + ph * strides[2],
                                             strides[1], strides[3]);
    }
}

/* The bins from element `at` of a (K, C, PH, PW) tensor of bins, or of half's float16 one
 * when half is not NULL (widened exactly), into a tile: the reverse of roi_align_tile_to_bins. */
static void PYROI_TYPED(roi_align_bins_to_tile)(const T *bins, const uint16_t *half, int64_t at,
                                                const int64_t strides[4], int64_t lanes,
                                                int64_t pooled_height, int64_t pooled_width,
                                                T *tile)
{
    int64_t ph;
    if (strides[2] == pooled_width * strides[3]) {
        PYROI_TYPED(lane_block_to_lanes)(bins, half, at, strides[1], strides[3],
                                         pooled_height * pooled_width, lanes, tile, PYROI_LANES);
        return;
    }
    for (ph = 0; ph < pooled_height; ++ph) {
        PYROI_TYPED(lane_block_to_lanes)(bins, half, at + ph * strides[2], strides[1],
                                         strides[3], pooled_width, lanes,
                                         tile + ph * pooled_width * PYROI_LANES, PYROI_LANES);
    }
}

/* Prefetches the channel rows [c0, c0 + lanes) of RoI k's bins in a (K, C, PH, PW) tensor
 * of bins, or of half's float16 one when half is not NULL. */
static void PYROI_TYPED(roi_align_prefetch_bins)(const T *bins, const uint16_t *half,
                                                 const int64_t strides[4], int64_t k,
                                                 int64_t c0, int64_t lanes)
{
    const int64_t roi = k * strides[0] + c0 * strides[1];
    int64_t j;
    for (j = 0; j < lanes; ++j) {
        PYROI_TYPED(lane_block_prefetch_element)(bins, half, roi + j * strides[1]);
    }
}

/* The group of RoIs and the channels [*c0, *c0 + *channels) of work item `item` of the
 * forward's image order: a channel block, or a pair of them (job->pair). */
static int64_t PYROI_TYPED(roi_align_image_item)(const PYROI_TYPED(roi_align_job) *job,
                                                 int64_t item, int64_t *c0, int64_t *channels)
{
    return PYROI_TYPED(lane_block_item)(item, job->map_shape[1], job->pair * PYROI_LANES, c0,
                                        channels);
}

/* Whether the forward's image order starts loading the next work item's whole image while
 * it samples the current block (roi_align_prefetch_block_slice): only when the block and the
 * next item's input fit in a core's L2 cache together (pyroi_cpu_l2_bytes; also when its size
 * is unknown). A larger block is read back from L3 by the RoIs, and the prefetched input
 * evicts the block's lines before they are used, while the next gather's lines no longer stay
 * in L2 either (measured on a 512 KB L2, box head: 10-12 % less CPU time without it). */
static int PYROI_TYPED(roi_align_prefetch_next_image)(const PYROI_TYPED(roi_align_job) *job)
{
    const int64_t l2_bytes = pyroi_cpu_l2_bytes();
    const double block_bytes = (double)job->map_shape[2] * (double)job->map_shape[3] *
                               (double)job->pair * (double)PYROI_LANE_BYTES;
    return l2_bytes <= 0 || 2.0 * block_bytes <= (double)l2_bytes;
}

/* Starts loading slice `part` of `parts` of the input of work item `item` (image, channel
 * block or pair) while the current block is sampled, so that its gather finds the data in the
 * cache instead of waiting on memory. Only for packed planes; no effect on results. */
static void PYROI_TYPED(roi_align_prefetch_block_slice)(const PYROI_TYPED(roi_align_job) *job,
                                                        int64_t item, int64_t part,
                                                        int64_t parts)
{
    const int64_t *shape = job->map_shape, *strides = job->features_strides;
    int64_t c0, lanes;
    const int64_t n =
        job->plan->rois.group_image[PYROI_TYPED(roi_align_image_item)(job, item, &c0, &lanes)];
    const int64_t pixels = shape[2] * shape[3];
    const int64_t first = pixels * part / parts, last = pixels * (part + 1) / parts;
    const int64_t step = PYROI_LANE_BYTES / (int64_t)(job->half_features != NULL
                                                           ? sizeof(uint16_t)
                                                           : sizeof(T));
    int64_t c, p;
    if (job->footprint != NULL) { /* the slice of the image's runs */
        const PYROI_TYPED(roi_align_footprint) *footprint = job->footprint;
        const int64_t group = PYROI_TYPED(roi_align_image_item)(job, item, &c0, &lanes);
        const int64_t begin = footprint->group_first[group];
        const int64_t runs = footprint->group_first[group + 1] - begin;
        for (p = begin + runs * part / parts; p < begin + runs * (part + 1) / parts; ++p) {
            const int64_t *run = footprint->runs + 4 * p;
            PYROI_TYPED(lane_block_prefetch)(job->features, job->half_features, strides, n, c0,
                                             lanes, run[0], run[1], run[2], run[3]);
        }
        return;
    }
    if (strides[3] != 1 || strides[2] != shape[3]) {
        return;
    }
    for (c = c0; c < c0 + lanes; ++c) {
        const int64_t plane = n * strides[0] + c * strides[1];
        for (p = first - first % step; p < last; p += step) {
            PYROI_TYPED(lane_block_prefetch_element)(job->features, job->half_features,
                                                     plane + p);
        }
    }
}
