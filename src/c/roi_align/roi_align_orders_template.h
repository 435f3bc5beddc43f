/* roi_align_orders_template.h - RoIAlign's lane-major loop orders: for each work item
 * (an image and a block of channels, or one RoI's region) gather the block, run the
 * reduction's per-RoI kernel on it and write the results out. The reduction is a constant of
 * each task (the avg forward's tasks are here, the max modes' next to their kernels), so every
 * task keeps its own specialised vector loop. Included by roi_align.c once per dtype with T
 * and PYROI_TYPED(name) defined. */

/* The max reductions of RoI k on a block, mmcv's (with its argmax) and ONNX's (defined with
 * their other kernels below; the job of both max reductions is defined there too). */
struct PYROI_TYPED(roi_align_max_job);
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_roi)(
    const struct PYROI_TYPED(roi_align_max_job) *max_job, int64_t k, int64_t c0, int64_t lanes,
    const T *block, T *tile);
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_onnx_max_roi)(
    const struct PYROI_TYPED(roi_align_max_job) *max_job, int64_t k, int64_t c0, int64_t lanes,
    const T *block, const T *zero, T *tile);

/* The per-lane value of an out-of-map sample in ONNX max mode, z = 0 * P[n, c, 0, 0] for the
 * block's channels (unused lanes 0); the map has pixels on the lane-major orders. */
static void PYROI_TYPED(roi_align_onnx_zero_lanes)(const PYROI_TYPED(roi_align_job) *job,
                                                   int64_t n, int64_t c0, int64_t lanes,
                                                   T *zero)
{
    const int64_t corner = n * job->features_strides[0];
    int64_t j;
    for (j = 0; j < PYROI_LANES; ++j) {
        const int64_t at = corner + (c0 + j) * job->features_strides[1];
        /* a float16 map's pixel, widened exactly */
        const T pixel = j >= lanes                     ? (T)0
                        : job->half_features != NULL ? (T)pyroi_half_to_float(
                                                           job->half_features[at])
                                                     : job->features[at];
        zero[j] = (T)0 * pixel;
    }
}

/* The avg forward of RoI k on the block(s) of `channels` channels (one block, or two when
 * they are more than PYROI_LANES) into the tile(s), from the samples whose upper row is in
 * [row_begin, row_end) of a block holding the rows from row_begin on (see
 * roi_align_forward_roi_rows: resume 0 for a whole image, 1 for row bands). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_forward_lanes)(
    const PYROI_TYPED(roi_align_job) *job, int64_t k, int64_t channels, const T *block,
    int64_t row_begin, int64_t row_end, int resume, T *tile)
{
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t tile_elements = PYROI_TYPED(roi_align_tile_elements)(job);
    if (channels > PYROI_LANES) { /* the lane group counts are constants of each copy */
        PYROI_TYPED(roi_align_forward_roi_rows)(job->plan, k, block, 2, 1, 2, job->map_shape[3],
                                                pooled_height, pooled_width, row_begin, row_end,
                                                resume, tile, tile_elements, NULL);
    } else if (job->pair == 1) {
        PYROI_TYPED(roi_align_forward_roi_rows)(job->plan, k, block, 1, 1, 1, job->map_shape[3],
                                                pooled_height, pooled_width, row_begin, row_end,
                                                resume, tile, tile_elements, NULL);
    } else { /* the last channel block alone, in a pair's layout */
        PYROI_TYPED(roi_align_forward_roi_rows)(job->plan, k, block, 1, 1, 2, job->map_shape[3],
                                                pooled_height, pooled_width, row_begin, row_end,
                                                resume, tile, tile_elements, NULL);
    }
}

/* Stores RoI k's bins of channels [c0, c0 + channels) from the tile(s) in the caller's
 * output. */
static void PYROI_TYPED(roi_align_forward_store)(const PYROI_TYPED(roi_align_job) *job,
                                                 int64_t k, int64_t c0, int64_t channels,
                                                 const T *tile, T *staging)
{
    const int64_t *out_strides = job->result_strides;
    const int64_t tile_elements = PYROI_TYPED(roi_align_tile_elements)(job);
    int64_t b;
    for (b = 0; b * PYROI_LANES < channels; ++b) {
        const int64_t c = c0 + b * PYROI_LANES;
        const int64_t lanes =
            channels - b * PYROI_LANES < PYROI_LANES ? channels - b * PYROI_LANES : PYROI_LANES;
        const int64_t offset =
            PYROI_TYPED(roi_align_row)(job, k) * out_strides[0] + c * out_strides[1];
        if (job->half_result != NULL) { /* a float16 output: its jobs always have staging */
            PYROI_TYPED(lane_block_tile_to_half_bins)(
                tile + b * tile_elements, lanes, job->params->pooled_height,
                job->params->pooled_width, job->half_result + offset, out_strides, staging);
        } else {
            PYROI_TYPED(roi_align_tile_to_bins)(tile + b * tile_elements, lanes,
                                                job->params->pooled_height,
                                                job->params->pooled_width, job->result + offset,
                                                out_strides, staging);
        }
    }
}

/* Pools RoI k from the block(s) of channels [c0, c0 + channels) of its image (one block, or two
 * when the channels are more than PYROI_LANES; the max reductions always have one) into the
 * tile(s) and stores their bins in the caller's output: the one place where the lane-major
 * forward orders apply a reduction (max_job: the job of the max reductions, NULL for avg). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_forward_block_roi)(
    const PYROI_TYPED(roi_align_job) *job, const struct PYROI_TYPED(roi_align_max_job) *max_job,
    enum roi_align_reduction reduction, int64_t k, int64_t c0, int64_t channels,
    const T *block, const T *zero, T *tile, T *staging)
{
    if (reduction == ROI_ALIGN_REDUCE_ONNX_MAX) {
        PYROI_TYPED(roi_align_onnx_max_roi)(max_job, k, c0, channels, block, zero, tile);
    } else if (reduction == ROI_ALIGN_REDUCE_MAX) {
        PYROI_TYPED(roi_align_max_roi)(max_job, k, c0, channels, block, tile);
    } else {
        PYROI_TYPED(roi_align_forward_lanes)(job, k, channels, block, 0, INT64_MAX, 0, tile);
    }
    PYROI_TYPED(roi_align_forward_store)(job, k, c0, channels, tile, staging);
}

/* Rows of a band of the avg forward's row bands (roi_align_forward_bands) of pixels of
 * pixel_bytes: as many as fill a core's L2 cache (pyroi_cpu_l2_bytes), with the spare row
 * below; at least 2. Measured on a 512 KB L2, box head, interleaved in one process: bands of
 * the whole L2 took the least time, a quarter or twice the L2 5-10% more. 0 (no bands) when
 * the L2 size is unknown or the image is not larger than a band. */
static int64_t PYROI_TYPED(roi_align_forward_band_rows)(int64_t height, int64_t width,
                                                        int64_t pixel_bytes)
{
    const double rows =
        (double)pyroi_cpu_l2_bytes() / ((double)width * (double)pixel_bytes) - 1.0;
    if (rows + 1.0 >= (double)height) {
        return 0;
    }
    return rows > 2.0 ? (int64_t)rows : 2;
}

/* The avg forward of one work item (channels [c0, c0 + channels), one block or a pair, of the
 * image of RoI group `group`) in row bands (roi_align_forward_band_rows), when the image is
 * larger than the L2 cache: each band's rows (and the row below) are gathered, then every RoI
 * of the image adds the samples whose upper row lies in the band to its bins' running sums
 * (tiles per RoI, kept from band to band; roi_align_forward_roi_rows), and a RoI whose last
 * sample row has been added is divided and written out. The bins add their samples in the
 * same order as from the whole image (bit-identical results), and the samples read pixels
 * just gathered into the L2 cache instead of a block that fell out of it (measured: see
 * docs/performance.md). 0 (nothing done) when bands do not apply: items of two blocks (the
 * maps small enough for pairs; not measured with bands), RoI sums larger than twice the L2
 * cache (see below), or the item's part of the worker's
 * scratch cannot hold a band, the tiles and the RoIs' row bounds, or a RoI's row taps descend
 * within a bin (an inverted box): the caller samples the whole image. */
PYROI_CLONE_INLINE int PYROI_TYPED(roi_align_forward_bands)(
    const PYROI_TYPED(roi_align_job) *job, int64_t group, int64_t c0, int64_t channels,
    T *block, T *staging)
{
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *shape = job->map_shape;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t pixel = job->pair * PYROI_LANES; /* elements */
    const int64_t tile_elements = PYROI_TYPED(roi_align_tile_elements)(job);
    const int64_t n = plan->rois.group_image[group];
    const int64_t first = plan->rois.group_start[group];
    const int64_t rois = plan->rois.group_start[group + 1] - first;
    const int64_t band_rows = PYROI_TYPED(roi_align_forward_band_rows)(
        shape[2], shape[3], pixel * (int64_t)sizeof(T));
    const int64_t band_elements = (band_rows + 1) * shape[3] * pixel;
    const int64_t bound_elements =
        (2 * rois * (int64_t)sizeof(int64_t) + PYROI_LANE_BYTES - 1) / PYROI_LANE_BYTES *
        PYROI_LANES;
    T *tiles = block + band_elements;
    int64_t *bounds; /* per RoI of the group: the first and last row of its samples' tap lo */
    int64_t i, row_begin;

    /* the RoIs' running sums fit in twice the L2 cache: beyond that each band's visits
     * miss on them as much as the whole block did (measured, interleaved: box head, 500
     * tiles of 3 KB per image, 10% slower in bands; mask head, 50 of 12.5 KB, 10% faster) */
    if (job->pair != 1 || band_rows == 0 ||
        (double)rois * (double)tile_elements * (double)sizeof(T) >
            2.0 * (double)pyroi_cpu_l2_bytes() ||
        (double)band_elements + (double)rois * (double)(job->pair * tile_elements) +
                (double)bound_elements >
            (double)(shape[2] * shape[3] * pixel)) {
        return 0;
    }
    bounds = (int64_t *)(void *)(tiles + rois * job->pair * tile_elements);
    for (i = 0; i < rois; ++i) {
        const int64_t k = plan->rois.order[first + i];
        const PYROI_TYPED(roi_align_tap_tables) tables =
            PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
        int64_t ph, r;
        bounds[2 * i] = INT64_MAX;
        bounds[2 * i + 1] = 0; /* a RoI without samples: zeros, written in the first band */
        for (ph = 0; plan->col_taps[k] > 0 && ph < pooled_height; ++ph) {
            for (r = tables.row_ranges[ph].begin; r < tables.row_ranges[ph].end; ++r) {
                const int64_t lo = tables.row_taps[r].lo;
                if (r > tables.row_ranges[ph].begin && lo < tables.row_taps[r - 1].lo) {
                    return 0; /* descending: the bands would add its samples out of order */
                }
                bounds[2 * i] = lo < bounds[2 * i] ? lo : bounds[2 * i];
                bounds[2 * i + 1] = lo > bounds[2 * i + 1] ? lo : bounds[2 * i + 1];
            }
        }
        bounds[2 * i] = bounds[2 * i] == INT64_MAX ? 0 : bounds[2 * i];
    }
    for (row_begin = 0; row_begin < shape[2]; row_begin += band_rows) {
        const int64_t row_end =
            shape[2] - row_begin < band_rows ? shape[2] : row_begin + band_rows;
        PYROI_TYPED(lane_block_gather)(job->features, job->half_features, job->features_strides,
                                       shape[3], n, c0, channels, row_begin,
                                       row_end < shape[2] ? row_end + 1 : row_end, 0, shape[3],
                                       block, shape[3], pixel, PYROI_LANES);
        for (i = 0; i < rois; ++i) {
            const int64_t k = plan->rois.order[first + i];
            T *tile = tiles + i * job->pair * tile_elements;
            if (i % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                return 1; /* an item can hold every RoI: the call ends at the next chunk */
            }
            if (bounds[2 * i + 1] < row_begin || bounds[2 * i] >= row_end) {
                continue;
            }
            if (bounds[2 * i] >= row_begin) { /* the RoI's first band: bin rows without */
                int64_t b, ph, e;                  /* samples average to zero */
                for (ph = 0; ph < pooled_height; ++ph) {
                    const pyroi_tap_range rr = plan->ranges[k * plan->bins + ph];
                    /* no column in the map: its rows' taps may lie in bands never visited */
                    const int empty = rr.begin == rr.end || plan->col_taps[k] == 0;
                    T *row = tile + ph * pooled_width * PYROI_LANES;
                    for (b = 0; empty && b < job->pair; ++b) {
                        for (e = 0; e < pooled_width * PYROI_LANES; ++e) {
                            row[b * tile_elements + e] = (T)0;
                        }
                    }
                }
            }
            PYROI_TYPED(roi_align_forward_lanes)(job, k, channels, block, row_begin, row_end, 1,
                                                 tile);
            if (bounds[2 * i + 1] < row_end) { /* the RoI's last band */
                PYROI_TYPED(roi_align_forward_finish)(plan, k, tile, job->pair * tile_elements);
                PYROI_TYPED(roi_align_forward_store)(job, k, c0, channels, tile, staging);
            }
        }
    }
    return 1;
}

/* The forward's lane-major work items [begin, end) of the given order (a constant of each
 * task, so only its loop remains in each copy) on the worker's scratch:
 * ROI_ALIGN_ORDER_IMAGE, item = (image, channel block or pair of blocks);
 * ROI_ALIGN_ORDER_REGION, item = RoI: each channel block of the RoI's region is gathered and
 * pooled. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_forward_items)(
    const PYROI_TYPED(roi_align_job) *job, const struct PYROI_TYPED(roi_align_max_job) *max_job,
    enum roi_align_reduction reduction, enum roi_align_order order, int64_t begin, int64_t end,
    int worker)
{
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *shape = job->map_shape;
    T *block = job->scratch + worker * job->scratch_stride;
    T *tile = PYROI_TYPED(roi_align_bin_tile)(job, block);
    T *staging = job->stream_result ? PYROI_TYPED(roi_align_staging)(job, block) : NULL;
    T zero[PYROI_LANE_BYTES / sizeof(T)];
    /* the next item's footprint is always prefetched; its whole image when it fits the L2 */
    const int prefetch_next =
        job->footprint != NULL || PYROI_TYPED(roi_align_prefetch_next_image)(job);
    int64_t item, i, k;

    for (item = begin; order == ROI_ALIGN_ORDER_IMAGE && item < end; ++item) {
        int64_t c0, lanes;
        const int64_t group = PYROI_TYPED(roi_align_image_item)(job, item, &c0, &lanes);
        const int64_t n = plan->rois.group_image[group];
        const int64_t first = plan->rois.group_start[group];
        const int64_t last = plan->rois.group_start[group + 1];
        if (reduction == ROI_ALIGN_REDUCE_AVG && job->footprint == NULL &&
            PYROI_TYPED(roi_align_forward_bands)(job, group, c0, lanes, block, staging)) {
            continue;
        }
        if (job->footprint != NULL) { /* only the pixels the image's RoIs read */
            PYROI_TYPED(lane_block_gather_runs)(
                job->features, job->half_features, job->features_strides, shape[3], n, c0,
                lanes, job->footprint->runs, job->footprint->group_first[group],
                job->footprint->group_first[group + 1], block, job->pair * PYROI_LANES);
        } else {
            PYROI_TYPED(lane_block_gather)(job->features, job->half_features,
                                           job->features_strides, shape[3], n, c0, lanes, 0,
                                           shape[2], 0, shape[3], block, shape[3],
                                           job->pair * PYROI_LANES, PYROI_LANES);
        }
        if (reduction == ROI_ALIGN_REDUCE_ONNX_MAX) {
            PYROI_TYPED(roi_align_onnx_zero_lanes)(job, n, c0, lanes, zero);
        }
        for (i = first; i < last; ++i) {
            if (i % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                break; /* an item can hold every RoI: the call ends at the next chunk */
            }
            if (prefetch_next && item + 1 < end) { /* the next input, a slice per RoI */
                PYROI_TYPED(roi_align_prefetch_block_slice)(job, item + 1, i - first,
                                                            last - first);
            }
            PYROI_TYPED(roi_align_forward_block_roi)(job, max_job, reduction,
                                                     plan->rois.order[i], c0, lanes, block,
                                                     zero, tile, staging);
        }
    }
    for (k = begin; order == ROI_ALIGN_ORDER_REGION && k < end; ++k) {
        int64_t row_begin, row_end, col_begin, col_end, c0;
        PYROI_TYPED(roi_align_roi_extent)(plan, k, &row_begin, &row_end, &col_begin, &col_end);
        for (c0 = 0; c0 < shape[1]; c0 += PYROI_LANES) {
            const int64_t lanes = shape[1] - c0 < PYROI_LANES ? shape[1] - c0 : PYROI_LANES;
            int64_t next = 0;
            /* only the rows the samples tap (measured: 64 boxes of 16-256 px at 1/4 on a
             * 200 x 272 map, 15.2 -> 12.7 ms) */
            while (PYROI_TYPED(roi_align_next_tap_rows)(plan, k, &next, &row_begin, &row_end)) {
                PYROI_TYPED(lane_block_gather)(
                    job->features, job->half_features, job->features_strides, shape[3],
                    job->batch_indices[k], c0, lanes, row_begin, row_end, col_begin, col_end,
                    block + (row_begin * shape[3] + col_begin) * PYROI_LANES, shape[3],
                    PYROI_LANES, PYROI_LANES);
            }
            if (reduction == ROI_ALIGN_REDUCE_ONNX_MAX) {
                PYROI_TYPED(roi_align_onnx_zero_lanes)(job, job->batch_indices[k], c0, lanes,
                                                       zero);
            }
            PYROI_TYPED(roi_align_forward_block_roi)(job, max_job, reduction, k, c0, lanes,
                                                     block, zero, tile, staging);
        }
    }
    pyroi_stream_fence(); /* the streamed outputs are visible to the caller */
}

PYROI_VECTOR_TASK(PYROI_TYPED(roi_align_forward_image_task))
{
    PYROI_TYPED(roi_align_forward_items)((const PYROI_TYPED(roi_align_job) *)context, NULL,
                                         ROI_ALIGN_REDUCE_AVG, ROI_ALIGN_ORDER_IMAGE, begin, end,
                                         worker);
}

PYROI_VECTOR_TASK(PYROI_TYPED(roi_align_forward_region_task))
{
    PYROI_TYPED(roi_align_forward_items)((const PYROI_TYPED(roi_align_job) *)context, NULL,
                                         ROI_ALIGN_REDUCE_AVG, ROI_ALIGN_ORDER_REGION, begin, end,
                                         worker);
}

/* The element of grad_output (job->features, or job->half_features) where the backward's
 * output gradients of RoI k from channel c0 on start (its row of grad_output). */
static inline int64_t PYROI_TYPED(roi_align_grad_bins)(const PYROI_TYPED(roi_align_job) *job,
                                                       int64_t k, int64_t c0)
{
    return PYROI_TYPED(roi_align_row)(job, k) * job->features_strides[0] +
           c0 * job->features_strides[1];
}

/* Rows of a band of the backward's image order on `pair` blocks: as many as fill a core's L2
 * cache (pyroi_cpu_l2_bytes) with their lane-major pixels, so that the taps'
 * read-modify-writes of the RoIs that follow one another find their lines there (measured on
 * a 512 KB L2, box head: a band of half the L2 took 15% longer, one of 4 times the L2 25%, the
 * whole map 60%); at least 8 rows (a sample's two rows are then rarely split between two
 * bands). The whole map when the L2 size is unknown or the map fits (the band then needs no
 * spare row). */
static int64_t PYROI_TYPED(roi_align_backward_band_rows)(int64_t height, int64_t width,
                                                         int64_t pair)
{
    const int64_t l2_bytes = pyroi_cpu_l2_bytes();
    const double rows =
        (double)l2_bytes / ((double)pair * (double)width * (double)PYROI_LANE_BYTES);
    if (l2_bytes <= 0 || width <= 0 || rows + 1.0 >= (double)height) {
        return height;
    }
    return rows > 8.0 ? (int64_t)rows : 8 < height - 1 ? 8 : height;
}

/* Scratch elements of a worker of the backward's image order beyond the block, tile and
 * staging: the row extents of the call's RoIs (two int64 each), in whole lane groups. */
static int64_t PYROI_TYPED(roi_align_backward_extent_elements)(int64_t num_rois)
{
    const int64_t bytes = 2 * num_rois * (int64_t)sizeof(int64_t);
    return (bytes + PYROI_LANE_BYTES - 1) / PYROI_LANE_BYTES * PYROI_LANES;
}

/* The bin rows [*ph_begin, *ph_end) of RoI k whose samples tap a row of [row_begin, row_end)
 * (rows: the RoI's extent, from roi_align_roi_extent); 0 when none does. */
static int PYROI_TYPED(roi_align_band_bins)(const PYROI_TYPED(roi_align_plan) *plan, int64_t k,
                                            int64_t pooled_height, const int64_t rows[2],
                                            int64_t row_begin, int64_t row_end,
                                            int64_t *ph_begin, int64_t *ph_end)
{
    const PYROI_TYPED(roi_align_tap_tables) tables =
        PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
    int64_t ph, r;
    *ph_begin = pooled_height;
    *ph_end = 0;
    if (rows[0] >= row_end || rows[1] <= row_begin) {
        return 0;
    }
    for (ph = 0; ph < pooled_height; ++ph) {
        for (r = tables.row_ranges[ph].begin; r < tables.row_ranges[ph].end; ++r) {
            if (tables.row_taps[r].lo < row_end && tables.row_taps[r].hi >= row_begin) {
                *ph_begin = ph < *ph_begin ? ph : *ph_begin;
                *ph_end = ph + 1;
                break;
            }
        }
    }
    return *ph_end > *ph_begin;
}

/* Backward, work item = (image, job->pair channel blocks), in bands of band_rows rows
 * (roi_align_backward_band_rows): for each band the blocks accumulate the band's gradient
 * from zero, adding the contributions of every RoI of the image that taps a row of it, in RoI
 * order, then write the band out. Each pixel receives the same sequence of additions as in
 * one pass (its row is in one band), while the rows in use stay in the L2 cache. The worker's
 * scratch holds, per block, the band and a spare row for the taps outside it, then the bin
 * tiles, the staging and the row extents of the call's RoIs. */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_align_backward_image_task))
{
    const PYROI_TYPED(roi_align_job) *job = (const PYROI_TYPED(roi_align_job) *)context;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *shape = job->map_shape;
    const int64_t *go_strides = job->features_strides, *gi_strides = job->result_strides;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t band_rows =
        PYROI_TYPED(roi_align_backward_band_rows)(shape[2], shape[3], job->pair);
    const int64_t band_elements = band_rows * shape[3] * PYROI_LANES;
    /* a block's band, and its spare row when banded */
    const int64_t block_step = band_rows < shape[2] ? band_elements + shape[3] * PYROI_LANES
                                                    : band_elements;
    const int64_t tile_step = PYROI_TYPED(roi_align_tile_elements)(job);
    const int packed_bins = go_strides[3] == 1 && go_strides[2] == pooled_width &&
                            go_strides[1] == pooled_height * pooled_width;
    T *block = job->scratch + worker * job->scratch_stride;
    T *sink = block + band_elements;
    T *tile = PYROI_TYPED(roi_align_bin_tile)(job, block);
    T *staging = job->stream_result ? PYROI_TYPED(roi_align_staging)(job, block) : NULL;
    int64_t *extents = (int64_t *)(void *)(PYROI_TYPED(roi_align_staging)(job, block) +
                                           PYROI_TYPED(roi_align_staging_pixels)(
                                               pooled_height * pooled_width) *
                                               PYROI_LANES);
    const int64_t *order = plan->rois.order;
    int64_t item, i, k, b, cols[2];

    for (b = 0; b < job->pair; ++b) { /* then each write-out leaves the band zero */
        for (i = 0; i < band_elements; ++i) {
            block[b * block_step + i] = (T)0;
        }
    }
    for (k = 0; k < plan->num_rois; ++k) {
        PYROI_TYPED(roi_align_roi_extent)(plan, k, &extents[2 * k], &extents[2 * k + 1],
                                          &cols[0], &cols[1]);
    }
    for (item = begin; item < end; ++item) {
        int64_t c0, channels, first, last, row_begin;
        /* the backward's items are the batch's images, each with its channel groups */
        const int64_t n = PYROI_TYPED(lane_block_item)(item, shape[1], job->pair * PYROI_LANES,
                                                       &c0, &channels);
        const int64_t pair = channels > PYROI_LANES ? 2 : 1;
        pyroi_rois_of_image(&plan->rois, n, &first, &last);
        for (row_begin = 0; row_begin < shape[2]; row_begin += band_rows) {
            const int64_t row_end =
                shape[2] - row_begin < band_rows ? shape[2] : row_begin + band_rows;
            int64_t ph_begin = 0, ph_end = 0, next_begin = 0, next_end = 0;
            /* i: the RoI to add (its bins [ph_begin, ph_end)), then the next one that taps the
             * band: its gradients load while i's are added */
            for (i = first; i < last &&
                            !PYROI_TYPED(roi_align_band_bins)(plan, order[i], pooled_height,
                                                              &extents[2 * order[i]], row_begin,
                                                              row_end, &ph_begin, &ph_end);
                 ++i) {
            }
            while (i < last) {
                int64_t next = i + 1;
                const void *next_bins = tile;
                int64_t next_bytes = 1;
                k = order[i];
                if (pyroi_cancel_requested(job->params->cancel)) {
                    break; /* the write-out below still leaves the band zero */
                }
                while (next < last && !PYROI_TYPED(roi_align_band_bins)(
                                          plan, order[next], pooled_height,
                                          &extents[2 * order[next]], row_begin, row_end,
                                          &next_begin, &next_end)) {
                    ++next;
                }
                if (next < last) { /* the next RoI's gradients: start loading */
                    const int64_t next_row = PYROI_TYPED(roi_align_row)(job, order[next]);
                    /* and spread over the sampling, in float32 or float16 */
                    const int64_t next_at = next_row * go_strides[0] + c0 * go_strides[1];
                    const int64_t element_bytes = job->half_features != NULL
                                                      ? (int64_t)sizeof(uint16_t)
                                                      : (int64_t)sizeof(T);
                    next_bins = job->half_features != NULL
                                    ? (const void *)(job->half_features + next_at)
                                    : (const void *)(job->features + next_at);
                    next_bytes = packed_bins
                                     ? channels * pooled_height * pooled_width * element_bytes
                                     : 1;
                    PYROI_TYPED(roi_align_prefetch_bins)(job->features, job->half_features,
                                                         go_strides, next_row, c0, channels);
                }
                for (b = 0; b < pair; ++b) {
                    PYROI_TYPED(roi_align_bins_to_tile)(
                        job->features, job->half_features,
                        PYROI_TYPED(roi_align_grad_bins)(job, k, c0 + b * PYROI_LANES) +
                            ph_begin * go_strides[2],
                        go_strides, channels - b * PYROI_LANES < PYROI_LANES
                                        ? channels - b * PYROI_LANES
                                        : PYROI_LANES,
                        ph_end - ph_begin, pooled_width,
                        tile + b * tile_step + ph_begin * pooled_width * PYROI_LANES);
                }
                if (pair == 2) { /* the pair a constant in each call */
                    PYROI_TYPED(roi_align_backward_roi)(
                        plan, k, block, 2, block_step, shape[3], pooled_height, pooled_width,
                        ph_begin, ph_end, row_begin, row_end, sink, tile, tile_step, next_bins,
                        next_bytes);
                } else {
                    PYROI_TYPED(roi_align_backward_roi)(
                        plan, k, block, 1, block_step, shape[3], pooled_height, pooled_width,
                        ph_begin, ph_end, row_begin, row_end, sink, tile, tile_step, next_bins,
                        next_bytes);
                }
                i = next;
                ph_begin = next_begin;
                ph_end = next_end;
            }
            /* the band's rows: an image of row_end - row_begin rows from row_begin on */
            for (b = 0; b < pair; ++b) {
                T *band = block + b * block_step;
                const int64_t lanes =
                    channels - b * PYROI_LANES < PYROI_LANES ? channels - b * PYROI_LANES
                                                             : PYROI_LANES;
                if (job->half_result != NULL) { /* rounded into a float16 grad_input */
                    PYROI_TYPED(lane_block_to_half_image)(
                        band, row_end - row_begin, shape[3], n, c0 + b * PYROI_LANES, lanes,
                        job->half_result + row_begin * gi_strides[2], gi_strides, staging,
                        job->stream_half);
                } else {
                    PYROI_TYPED(lane_block_to_image)(
                        band, row_end - row_begin, shape[3], n, c0 + b * PYROI_LANES, lanes,
                        job->result + row_begin * gi_strides[2], gi_strides, staging);
                }
            }
        }
    }
    pyroi_stream_fence(); /* the streamed gradients are visible to the caller */
}

/* Adds RoI k's contributions to channels [c0, c0 + lanes) into a block of its whole image
 * (the backward's RoI-region order), its output gradients loaded into the tile (widened
 * exactly from a float16 grad_output). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_backward_region_add)(
    const PYROI_TYPED(roi_align_job) *job, int64_t k, int64_t c0, int64_t lanes, T *block,
    T *tile)
{
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    PYROI_TYPED(roi_align_bins_to_tile)(job->features, job->half_features,
                                        PYROI_TYPED(roi_align_grad_bins)(job, k, c0),
                                        job->features_strides, lanes, pooled_height,
                                        pooled_width, tile);
    PYROI_TYPED(roi_align_backward_roi)(job->plan, k, block, 1, 0, job->map_shape[3],
                                        pooled_height, pooled_width, 0, pooled_height, 0,
                                        job->map_shape[2], block, tile, 0, tile, 1);
}

/* The region of RoI k in the backward's RoI-region order: rows [region[0], region[1]) x
 * columns [region[2], region[3]); 0 when the RoI taps no pixel (nothing to add). */
static int PYROI_TYPED(roi_align_backward_region)(const PYROI_TYPED(roi_align_plan) *plan,
                                                  int64_t k, int64_t region[4])
{
    if (plan->row_taps[k] == 0 || plan->col_taps[k] == 0) {
        return 0;
    }
    PYROI_TYPED(roi_align_roi_extent)(plan, k, &region[0], &region[1], &region[2], &region[3]);
    return 1;
}

/* The RoI-region order into a float16 grad_input (job->half_result), whose pixels cannot
 * hold running float32 sums: the item's float16 planes are zeroed, then for each image the
 * regions of its RoIs are zeroed in the block (float32), every RoI of the image adds into
 * the block in RoI order (a backward's groups keep it; each pixel's additions are those of
 * the float32 order, in its order: only the RoIs of its image touch it), and the regions are
 * rounded once into grad_input (a pixel of several regions is written as often, with the
 * same bits). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_backward_half_regions)(
    const PYROI_TYPED(roi_align_job) *job, int64_t c0, int64_t lanes, T *block, T *tile,
    T *staging)
{
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t width = job->map_shape[3];
    int64_t group, i, pass, h, e;
    if (pyroi_zero_channels(job->half_result, sizeof(uint16_t), job->map_shape,
                            job->result_strides, c0, c0 + lanes, job->params->cancel)) {
        return;
    }
    for (group = 0; group < plan->rois.num_groups; ++group) {
        const int64_t n = plan->rois.group_image[group];
        /* pass 0 zeroes the regions, 1 adds, 2 rounds them out */
        for (pass = 0; pass < 3; ++pass) {
            for (i = plan->rois.group_start[group]; i < plan->rois.group_start[group + 1];
                 ++i) {
                const int64_t k = plan->rois.order[i];
                int64_t region[4];
                if (i % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                    return;
                }
                if (!PYROI_TYPED(roi_align_backward_region)(plan, k, region)) {
                    continue;
                }
                if (pass == 1) {
                    PYROI_TYPED(roi_align_backward_region_add)(job, k, c0, lanes, block, tile);
                } else if (pass == 2) {
                    PYROI_TYPED(lane_block_to_half_region)(
                        block, width, n, c0, lanes, region[0], region[1], region[2], region[3],
                        job->half_result, job->result_strides, staging);
                }
                for (h = region[0]; pass == 0 && h < region[1]; ++h) {
                    T *row = block + (h * width + region[2]) * PYROI_LANES;
                    for (e = 0; e < (region[3] - region[2]) * PYROI_LANES; ++e) {
                        row[e] = (T)0;
                    }
                }
            }
        }
    }
}

/* Backward, work item = channel block: the caller's gradient planes are zeroed, then each
 * RoI (in order) loads its region of the current gradient into the block, adds its
 * contributions and stores the region back -- so every pixel sees the same sequence of
 * additions as in torchvision. A float16 grad_input: roi_align_backward_half_regions. */
PYROI_VECTOR_TASK(PYROI_TYPED(roi_align_backward_region_task))
{
    const PYROI_TYPED(roi_align_job) *job = (const PYROI_TYPED(roi_align_job) *)context;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *shape = job->map_shape;
    const int64_t *gi_strides = job->result_strides;
    T *block = job->scratch + worker * job->scratch_stride;
    T *tile = PYROI_TYPED(roi_align_bin_tile)(job, block);
    int64_t item, k;

    for (item = begin; item < end; ++item) {
        const int64_t c0 = item * PYROI_LANES;
        const int64_t lanes = shape[1] - c0 < PYROI_LANES ? shape[1] - c0 : PYROI_LANES;
        if (job->half_result != NULL) {
            PYROI_TYPED(roi_align_backward_half_regions)(
                job, c0, lanes, block, tile, PYROI_TYPED(roi_align_staging)(job, block));
            continue;
        }
        if (pyroi_zero_channels(job->result, sizeof(T), shape, gi_strides, c0, c0 + lanes,
                                job->params->cancel)) {
            return;
        }
        for (k = 0; k < plan->num_rois; ++k) {
            int64_t region[4];
            const int64_t n_k = job->batch_indices[k];
            if (k % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                break;
            }
            if (!PYROI_TYPED(roi_align_backward_region)(plan, k, region)) {
                continue;
            }
            PYROI_TYPED(lane_block_gather)(job->result, NULL, gi_strides, shape[3], n_k, c0,
                                           lanes, region[0], region[1], region[2], region[3],
                                           block + (region[0] * shape[3] + region[2]) *
                                                       PYROI_LANES,
                                           shape[3], PYROI_LANES, PYROI_LANES);
            PYROI_TYPED(roi_align_backward_region_add)(job, k, c0, lanes, block, tile);
            PYROI_TYPED(lane_block_to_region)(block, shape[3], n_k, c0, lanes, region[0],
                                              region[1], region[2], region[3], job->result,
                                              gi_strides);
        }
    }
}
