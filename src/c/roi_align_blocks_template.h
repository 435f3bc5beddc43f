/* roi_align_blocks_template.h - RoIAlign's lane-major block machinery: the lane layout, the
 * worker's scratch (block, bin tiles, staging), the channels-last gather of a region or a whole
 * image into the block, and the (streamed) write-out of tiles and blocks to the caller's
 * layout. No reduction lives here: the kernels (roi_align_avg_template.h and the max modes)
 * read the block, the loops (roi_align_orders_template.h) drive it. Included by roi_align.c
 * once per dtype with T and PYROI_TYPED(name) defined. */

/* Channel lanes of a block: one 64-byte cache line (16 float, 8 double). */
#define PYROI_LANE_BYTES 64
#define PYROI_LANES ((int64_t)(PYROI_LANE_BYTES / sizeof(T)))

/* The lanes of one pixel as the kernels see them: PYROI_VECTORS GCC/Clang vectors (see
 * PYROI_VECTOR_BYTES), else PYROI_LANES scalars (a plain loop the auto-vectoriser may take).
 * Either way each lane evaluates exactly the scalar expression of its channel. */
#ifdef PYROI_HAVE_VECTOR_TYPES
typedef T PYROI_TYPED(roi_align_lanes)
    __attribute__((vector_size(PYROI_VECTOR_BYTES), aligned(sizeof(T)), may_alias));
#  define PYROI_VECTORS ((int64_t)(PYROI_LANE_BYTES / PYROI_VECTOR_BYTES))
#else
typedef T PYROI_TYPED(roi_align_lanes);
#  define PYROI_VECTORS PYROI_LANES
#endif

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

/* Pixels of lanes a worker's staging area holds: a tile, or a run of a streamed image. */
#define PYROI_STAGING_RUN 256
static int64_t PYROI_TYPED(roi_align_staging_pixels)(int64_t tile_pixels)
{
    return tile_pixels > PYROI_STAGING_RUN ? tile_pixels : PYROI_STAGING_RUN;
}

/* Where a worker transposes lanes before streaming them out (see roi_align_tile_to_bins and
 * roi_align_block_to_image). */
static T *PYROI_TYPED(roi_align_staging)(const PYROI_TYPED(roi_align_job) *job, T *block)
{
    return PYROI_TYPED(roi_align_bin_tile)(job, block) +
           job->pair * PYROI_TYPED(roi_align_tile_elements)(job);
}

/* Moves a RoI's bins between the tile's lane-major layout and the caller's (K, C, PH, PW)
 * layout (channel j of the block at base + j * strides[1]), in one run when the bins are
 * evenly spaced, else row by row. When the block's channels are packed (the common dense
 * output) and staging is given, the bins are transposed there and streamed out: the output
 * is written once and never read back, so its lines need not be fetched first. */
static void PYROI_TYPED(roi_align_tile_to_bins)(const T *tile, int64_t lanes,
                                                int64_t pooled_height, int64_t pooled_width,
                                                T *base, const int64_t strides[4], T *staging)
{
    const int64_t bins = pooled_height * pooled_width;
    int64_t ph;
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

static void PYROI_TYPED(roi_align_bins_to_tile)(const T *base, const int64_t strides[4],
                                                int64_t lanes, int64_t pooled_height,
                                                int64_t pooled_width, T *tile)
{
    int64_t ph;
    if (strides[2] == pooled_width * strides[3]) {
        PYROI_TYPED(pyroi_channels_to_lanes)(base, strides[1], strides[3],
                                             pooled_height * pooled_width, lanes, tile,
                                             PYROI_LANES);
        return;
    }
    for (ph = 0; ph < pooled_height; ++ph) {
        PYROI_TYPED(pyroi_channels_to_lanes)(base + ph * strides[2], strides[1], strides[3],
                                             pooled_width, lanes,
                                             tile + ph * pooled_width * PYROI_LANES,
                                             PYROI_LANES);
    }
}

/* Copies rows [row_begin, row_end) x columns [col_begin, col_end) of channels
 * [c0, c0 + channels) of image n from the caller's layout to the block, whose pixels are
 * pitch elements apart: PYROI_LANES, or pair * PYROI_LANES for the interleaved lane groups of
 * a pair of channel blocks (channels <= pitch; unused lanes 0). */
static void PYROI_TYPED(roi_align_region_to_block)(const T *map, const int64_t strides[4],
                                                   int64_t width, int64_t n, int64_t c0,
                                                   int64_t channels, int64_t row_begin,
                                                   int64_t row_end, int64_t col_begin,
                                                   int64_t col_end, T *block, int64_t pitch)
{
    int64_t c, h;
    for (c = 0; c < channels; c += PYROI_LANES) {
        const T *image =
            map + n * strides[0] + (c0 + c) * strides[1] + col_begin * strides[3];
        const int64_t lanes = channels - c < PYROI_LANES ? channels - c : PYROI_LANES;
        if (col_begin == 0 && col_end == width && strides[2] == width * strides[3]) {
            /* whole rows of packed planes: one run (long runs are prefetched ahead) */
            PYROI_TYPED(pyroi_channels_to_lanes)(image + row_begin * strides[2], strides[1],
                                                 strides[3], (row_end - row_begin) * width,
                                                 lanes, block + row_begin * width * pitch + c,
                                                 pitch);
            continue;
        }
        for (h = row_begin; h < row_end; ++h) {
            PYROI_TYPED(pyroi_channels_to_lanes)(image + h * strides[2], strides[1],
                                                 strides[3], col_end - col_begin, lanes,
                                                 block + (h * width + col_begin) * pitch + c,
                                                 pitch);
        }
    }
}

static void PYROI_TYPED(roi_align_block_to_region)(const T *block, int64_t width, int64_t n,
                                                   int64_t c0, int64_t lanes,
                                                   int64_t row_begin, int64_t row_end,
                                                   int64_t col_begin, int64_t col_end, T *map,
                                                   const int64_t strides[4])
{
    T *image = map + n * strides[0] + c0 * strides[1] + col_begin * strides[3];
    int64_t h;
    for (h = row_begin; h < row_end; ++h) {
        PYROI_TYPED(pyroi_lanes_to_channels)(block + (h * width + col_begin) * PYROI_LANES,
                                             col_end - col_begin, lanes, image + h * strides[2],
                                             strides[1], strides[3]);
    }
}

/* Writes the whole block back to image n and leaves the block zero, ready for the next
 * work item: for packed planes, PYROI_STAGING_RUN pixels at a time are transposed into
 * staging, zeroed while they are in L1 (measured: faster than a separate pass over the block
 * before each item) and streamed to each channel's plane (the gradient is written once and
 * not read back here); otherwise row by row in place. */
static void PYROI_TYPED(roi_align_block_to_image)(T *block, int64_t height, int64_t width,
                                                  int64_t n, int64_t c0, int64_t lanes,
                                                  T *map, const int64_t strides[4], T *staging)
{
    const int64_t pixels = height * width;
    T *image = map + n * strides[0] + c0 * strides[1];
    int64_t first, i, j;
    if (staging == NULL || strides[3] != 1 || strides[2] != width) {
        PYROI_TYPED(roi_align_block_to_region)(block, width, n, c0, lanes, 0, height, 0, width,
                                               map, strides);
        for (i = 0; i < pixels * PYROI_LANES; ++i) {
            block[i] = (T)0;
        }
        return;
    }
    for (first = 0; first < pixels; first += PYROI_STAGING_RUN) {
        const int64_t run = pixels - first < PYROI_STAGING_RUN ? pixels - first
                                                                : PYROI_STAGING_RUN;
        T *lines = block + first * PYROI_LANES;
        PYROI_TYPED(pyroi_lanes_to_channels)(lines, run, lanes, staging, run, 1);
        for (i = 0; i < run * PYROI_LANES; ++i) {
            lines[i] = (T)0;
        }
        for (j = 0; j < lanes; ++j) {
            pyroi_row_stream stream;
            pyroi_row_stream_init(&stream, image + j * strides[1] + first, staging + j * run, 1,
                                  run, run);
            PYROI_TYPED(pyroi_row_stream_advance)(&stream, INT64_MAX);
        }
    }
}

/* Prefetches the channel rows [c0, c0 + lanes) of RoI k's bins in a (K, C, PH, PW) tensor. */
static void PYROI_TYPED(roi_align_prefetch_bins)(const T *base, const int64_t strides[4],
                                                 int64_t k, int64_t c0, int64_t lanes)
{
    const T *roi = base + k * strides[0] + c0 * strides[1];
    int64_t j;
    for (j = 0; j < lanes; ++j) {
        PYROI_PREFETCH(roi + j * strides[1]);
    }
}

/* The group of RoIs (one image with RoIs, see rois.h) and the channels
 * [*c0, *c0 + *channels) of work item `item` of the forward's image order: a channel block, or
 * a pair of them (job->pair). The items follow the images that have RoIs, not the batch. */
static int64_t PYROI_TYPED(roi_align_image_item)(const PYROI_TYPED(roi_align_job) *job,
                                                 int64_t item, int64_t *c0, int64_t *channels)
{
    const int64_t item_channels = job->pair * PYROI_LANES;
    const int64_t groups = (job->map_shape[1] + item_channels - 1) / item_channels;
    *c0 = (item % groups) * item_channels;
    *channels = job->map_shape[1] - *c0 < item_channels ? job->map_shape[1] - *c0
                                                        : item_channels;
    return item / groups;
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
    const int64_t step = PYROI_LANE_BYTES / (int64_t)sizeof(T);
    int64_t c, p;
    if (strides[3] != 1 || strides[2] != shape[3]) {
        return;
    }
    for (c = c0; c < c0 + lanes; ++c) {
        const T *plane = job->features + n * strides[0] + c * strides[1];
        for (p = first - first % step; p < last; p += step) {
            PYROI_PREFETCH(plane + p);
        }
    }
}
