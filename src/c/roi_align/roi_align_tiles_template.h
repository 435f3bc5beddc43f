/* roi_align_tiles_template.h - the avg forward's RoI-tile order, for calls whose RoIs read a
 * small part of a large map: work item = RoI; for each channel block (or pair of blocks) the
 * pixels the RoI's samples tap (its tapped rows, across its columns) are gathered into a
 * lane-major tile of the worker's, pooled from there by the image order's kernel
 * (roi_align_forward_block_roi) and written out. The tile holds one RoI (a few KB to a few
 * hundred: it stays near the core, and no image-sized scratch is faulted in at every call);
 * the kernel finds its pixels through a copy of the plan whose taps are in tile coordinates
 * (rows numbered over the RoI's tapped rows, columns from its first), so the arithmetic, and
 * every bit of the result, is the other orders'. Included by roi_align.c once per dtype with T
 * and PYROI_TYPED(name) defined. */

/* The tiles of a call's RoIs: where each RoI's tile comes from in the map, and the plan the
 * kernel reads it with. */
struct PYROI_TYPED(roi_align_tiles) {
    PYROI_TYPED(roi_align_plan) plan; /* the call's plan, its taps in tile coordinates */
    int64_t *row_first;               /* RoI k's tapped map rows: rows[row_first[k] ..
                                       * row_first[k + 1]), ascending (tile row i = rows[..+i]) */
    int64_t *rows;
    int64_t *col_begin; /* per RoI: the map column of tile column 0 */
    int64_t *cols;      /* per RoI: tile width */
    int64_t max_pixels; /* the largest tile */
};
typedef struct PYROI_TYPED(roi_align_tiles) PYROI_TYPED(roi_align_tiles);

static void PYROI_TYPED(roi_align_tiles_free)(PYROI_TYPED(roi_align_tiles) *tiles)
{
    free(tiles->row_first);
    free(tiles->rows);
    free(tiles->plan.taps);
    tiles->row_first = tiles->rows = NULL;
    tiles->plan.taps = NULL;
}

/* Builds the tiles of the plan's RoIs. 0 (and nothing to free) when memory runs out or the
 * call is cancelled: the call then takes the region order. */
static int PYROI_TYPED(roi_align_tiles_build)(const PYROI_TYPED(roi_align_plan) *plan,
                                              PYROI_TYPED(roi_align_tiles) *tiles,
                                              pyroi_call_cancel *cancel)
{
    const int64_t num_rois = plan->num_rois;
    const int64_t total_taps =
        num_rois > 0 ? plan->first_tap[num_rois - 1] + plan->row_taps[num_rois - 1] +
                           plan->col_taps[num_rois - 1]
                     : 0;
    int64_t *tile_row, k, r, i;
    tiles->plan = *plan;
    tiles->rows = NULL;
    tiles->max_pixels = 0;
    /* per RoI: first row, column, width (+1 row_first); the rows: at most two per row tap */
    if ((uint64_t)num_rois > SIZE_MAX / 4 / sizeof(int64_t) - 1 ||
        (uint64_t)total_taps > SIZE_MAX / 2 / sizeof(int64_t) ||
        (uint64_t)plan->height > SIZE_MAX / sizeof(int64_t)) {
        tiles->row_first = NULL;
        tiles->plan.taps = NULL;
        return 0;
    }
    tiles->row_first = (int64_t *)malloc((size_t)(3 * num_rois + 1) * sizeof(int64_t));
    tiles->rows = (int64_t *)malloc((size_t)(2 * total_taps + 1) * sizeof(int64_t));
    tiles->plan.taps = (PYROI_TYPED(axis_tap) *)malloc(
        (size_t)(total_taps > 0 ? total_taps : 1) * sizeof(PYROI_TYPED(axis_tap)));
    tile_row = (int64_t *)malloc((size_t)(plan->height > 0 ? plan->height : 1) *
                                 sizeof(int64_t)); /* per map row: its tile row, or -1 */
    if (tiles->row_first == NULL || tiles->rows == NULL || tiles->plan.taps == NULL ||
        tile_row == NULL) {
        free(tile_row);
        PYROI_TYPED(roi_align_tiles_free)(tiles);
        return 0;
    }
    tiles->col_begin = tiles->row_first + num_rois + 1;
    tiles->cols = tiles->col_begin + num_rois;
    for (r = 0; r < plan->height; ++r) {
        tile_row[r] = -1;
    }
    tiles->row_first[0] = 0;
    for (k = 0; k < num_rois; ++k) {
        const PYROI_TYPED(axis_tap) *taps = plan->taps + plan->first_tap[k];
        PYROI_TYPED(axis_tap) *tile_taps = tiles->plan.taps + plan->first_tap[k];
        int64_t *rows = tiles->rows + tiles->row_first[k], count = 0;
        int64_t row_begin, row_end, col_begin, col_end;
        if (pyroi_cancel_at(cancel, k)) {
            free(tile_row);
            PYROI_TYPED(roi_align_tiles_free)(tiles);
            return 0;
        }
        PYROI_TYPED(roi_align_roi_extent)(plan, k, &row_begin, &row_end, &col_begin, &col_end);
        if (col_end <= col_begin) { /* no sample in the map: an empty tile */
            row_begin = row_end = col_begin = col_end = 0;
        }
        for (i = 0; i < plan->row_taps[k] && col_end > col_begin; ++i) {
            tile_row[taps[i].lo] = tile_row[taps[i].hi] = 0; /* tapped */
        }
        for (r = row_begin; r < row_end; ++r) { /* the tapped rows in map order */
            if (tile_row[r] >= 0) {
                tile_row[r] = count;
                rows[count++] = r;
            }
        }
        for (i = 0; i < plan->row_taps[k] + plan->col_taps[k]; ++i) {
            tile_taps[i] = taps[i];
            if (i < plan->row_taps[k]) {
                tile_taps[i].lo = tile_row[taps[i].lo];
                tile_taps[i].hi = tile_row[taps[i].hi];
            } else {
                tile_taps[i].lo -= col_begin;
                tile_taps[i].hi -= col_begin;
            }
        }
        for (i = 0; i < count; ++i) {
            tile_row[rows[i]] = -1;
        }
        tiles->row_first[k + 1] = tiles->row_first[k] + count;
        tiles->col_begin[k] = col_begin;
        tiles->cols[k] = col_end - col_begin;
        if (count * tiles->cols[k] > tiles->max_pixels) {
            tiles->max_pixels = count * tiles->cols[k];
        }
    }
    free(tile_row);
    return 1;
}

/* Elements of a worker's scratch in the tile order: the largest tile, the bin tiles and the
 * staging, for `pair` lane groups per pixel. */
static int64_t PYROI_TYPED(roi_align_tiles_scratch)(const PYROI_TYPED(roi_align_tiles) *tiles,
                                                    int64_t tile_pixels, int64_t pair)
{
    return (pair * (tiles->max_pixels + tile_pixels) +
            PYROI_TYPED(roi_align_staging_pixels)(tile_pixels)) *
           PYROI_LANES;
}

/* A row segment of the tile order's gathers: tile row `row` of RoI k, channels from c0. */
typedef struct PYROI_TYPED(roi_align_tile_segment) {
    int64_t k, c0, row;
} PYROI_TYPED(roi_align_tile_segment);

/* Whether RoI k has a segment to gather (a sample in the map). */
static inline int PYROI_TYPED(roi_align_tile_has_pixels)(const PYROI_TYPED(roi_align_tiles) *tiles,
                                                         int64_t k)
{
    return tiles->cols[k] > 0 && tiles->row_first[k + 1] > tiles->row_first[k];
}

/* Bytes that a segment of RoI k over `channels` planes loads: its lines, plus one for a row
 * that does not start on a line. */
static inline double PYROI_TYPED(roi_align_tile_segment_bytes)(
    const PYROI_TYPED(roi_align_tiles) *tiles, int64_t k, int64_t channels)
{
    return (double)channels * (double)((tiles->cols[k] + PYROI_LANES - 1) / PYROI_LANES + 1) *
           (double)PYROI_LANE_BYTES;
}

/* Moves *s to the next segment of RoIs [.., end) (channels item_channels at a time), or with
 * first set to the first segment of RoIs [s->k, end); 0 past the last. */
static inline int PYROI_TYPED(roi_align_tile_next)(const PYROI_TYPED(roi_align_tiles) *tiles,
                                                   int64_t channels, int64_t item_channels,
                                                   int64_t end, int first,
                                                   PYROI_TYPED(roi_align_tile_segment) *s)
{
    if (first) {
        s->c0 = s->row = 0;
    } else if (++s->row < tiles->row_first[s->k + 1] - tiles->row_first[s->k]) {
        return 1;
    } else {
        s->row = 0;
        s->c0 += item_channels;
        if (s->c0 < channels) {
            return 1;
        }
        s->c0 = 0;
        ++s->k;
    }
    while (s->k < end && !PYROI_TYPED(roi_align_tile_has_pixels)(tiles, s->k)) {
        ++s->k;
    }
    return s->k < end;
}

/* Avg forward, work items = RoIs [begin, end), on the call's tiles (job->tiles). Each tile row
 * is a row segment of 16 or 32 channel planes, too short for the hardware prefetchers: the
 * loads of the segments ahead are started (in the order they are gathered, across RoIs)
 * until half the L1d cache is on its way. */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_align_forward_tile_task))
{
    const PYROI_TYPED(roi_align_job) *job = (const PYROI_TYPED(roi_align_job) *)context;
    const PYROI_TYPED(roi_align_tiles) *tiles = job->tiles;
    const int64_t *shape = job->map_shape, *strides = job->features_strides;
    const int64_t item_channels = job->pair * PYROI_LANES;
    const int64_t tile_elements = PYROI_TYPED(roi_align_tile_elements)(job);
    const double budget = pyroi_cpu_l1d_bytes() > 0 ? (double)pyroi_cpu_l1d_bytes() / 2.0
                                                     : 16384.0;
    T *block = job->scratch + worker * job->scratch_stride;
    T *tile = block + tiles->max_pixels * item_channels;
    T *staging = job->stream_result ? tile + job->pair * tile_elements : NULL;
    /* the kernel's view: the tile plan, a map as wide as the tile */
    PYROI_TYPED(roi_align_job) view = *job;
    int64_t view_shape[4];
    PYROI_TYPED(roi_align_tile_segment) ahead;
    double ahead_bytes = 0.0; /* started and not gathered yet */
    int more;
    int64_t k, c0, i;

    view_shape[0] = shape[0];
    view_shape[1] = shape[1];
    view_shape[2] = shape[2];
    view.plan = &tiles->plan;
    view.map_shape = view_shape;
    ahead.k = begin;
    more = PYROI_TYPED(roi_align_tile_next)(tiles, shape[1], item_channels, end, 1, &ahead);
    for (k = begin; k < end; ++k) {
        const int64_t n = job->batch_indices[k];
        const int64_t *rows = tiles->rows + tiles->row_first[k];
        const int64_t count = tiles->row_first[k + 1] - tiles->row_first[k];
        const int64_t col_begin = tiles->col_begin[k], cols = tiles->cols[k];
        if (k % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
            break;
        }
        view_shape[3] = cols;
        for (c0 = 0; c0 < shape[1]; c0 += item_channels) {
            const int64_t channels =
                shape[1] - c0 < item_channels ? shape[1] - c0 : item_channels;
            for (i = 0; i < count && cols > 0; ++i) { /* the tile's rows */
                while (more && ahead_bytes < budget) {
                    const int64_t ahead_n = job->batch_indices[ahead.k];
                    const int64_t ahead_row =
                        tiles->rows[tiles->row_first[ahead.k] + ahead.row];
                    const int64_t ahead_channels = shape[1] - ahead.c0 < item_channels
                                                       ? shape[1] - ahead.c0
                                                       : item_channels;
                    PYROI_TYPED(lane_block_prefetch)(
                        job->features, job->half_features, strides, ahead_n, ahead.c0,
                        ahead_channels, ahead_row, ahead_row + 1, tiles->col_begin[ahead.k],
                        tiles->col_begin[ahead.k] + tiles->cols[ahead.k]);
                    ahead_bytes += PYROI_TYPED(roi_align_tile_segment_bytes)(tiles, ahead.k,
                                                                             ahead_channels);
                    more = PYROI_TYPED(roi_align_tile_next)(tiles, shape[1], item_channels, end,
                                                            0, &ahead);
                }
                PYROI_TYPED(lane_block_gather)(job->features, job->half_features, strides,
                                               shape[3], n, c0, channels, rows[i],
                                               rows[i] + 1, col_begin, col_begin + cols,
                                               block + i * cols * item_channels, cols,
                                               item_channels, PYROI_LANES);
                ahead_bytes -= PYROI_TYPED(roi_align_tile_segment_bytes)(tiles, k, channels);
            }
            PYROI_TYPED(roi_align_forward_block_roi)(&view, NULL, ROI_ALIGN_REDUCE_AVG, k, c0,
                                                     channels, block, NULL, tile, staging);
        }
    }
    pyroi_stream_fence(); /* the streamed outputs are visible to the caller */
}
