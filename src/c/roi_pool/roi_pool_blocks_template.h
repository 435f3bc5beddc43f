/* roi_pool_blocks_template.h - RoIPool's lane-major block machinery: the worker's scratch, the
 * channels-last gather of a region or a whole image into the block, and the write-out of the
 * bin tiles (streamed for large outputs). Included by roi_pool.c once per dtype with T,
 * PYROI_TYPED(name), ROI_POOL_ROUND, ROI_POOL_FLOOR and ROI_POOL_CEIL defined. */

/* ---- lane-major loop orders ------------------------------------------------------------ */
/* The direct order (roi_pool_orders_template.h) is torchvision's: RoI by RoI, each channel
 * plane read in place, so a plane is read again from memory for every RoI, one scalar
 * comparison at a time. The
 * lane-major orders instead copy a group of channels channels-last into a per-worker block
 * and pool every RoI from it with the channels as the vector axis. A group is
 * ROI_POOL_GROUP sub-blocks of PYROI_LANES channels (one 64-byte line, the layout of
 * transpose.h): block[s][h][w][lane] is channel c0 + s * PYROI_LANES + lane. Two ways to
 * fill the block:
 *  - image blocks: work item = (image, channel group); the whole image is gathered once and
 *    every RoI of that image reads it (many or large RoIs);
 *  - RoI regions: work item = RoI; for each channel group only the pixels the RoI's bins
 *    cover are gathered (few RoIs on a large map).
 * Each lane performs exactly the scalar kernel's comparisons in the same order (strict >,
 * first maximum wins, NaN never wins, start at -FLT_MAX), so results are identical. The
 * backward's image blocks (one sub-block) add each RoI's gradients in torchvision's order. */

/* Channels of the group at c0 that sub-block s holds (0 when it is past the last channel). */
static int64_t PYROI_TYPED(roi_pool_sub_lanes)(int64_t channels, int64_t c0, int64_t s)
{
    const int64_t first = c0 + s * PYROI_LANES;
    return channels <= first ? 0
                             : (channels - first < PYROI_LANES ? channels - first
                                                               : PYROI_LANES);
}

/* Copies rows [region[0], region[1]) x columns [region[2], region[3]) of the channel group
 * at c0 of image n into the block (lane_block_gather), packed with region[3] - region[2]
 * pixels per row, sub-block s at block + s * sub_stride; a sub-block past the last channel is
 * 0 (the bin kernels read both). The map is map's, or half's float16 one when half is not
 * NULL (widened exactly as it is read). */
static void PYROI_TYPED(roi_pool_region_to_block)(const T *map, const uint16_t *half,
                                                  const int64_t shape[4],
                                                  const int64_t strides[4], int64_t n,
                                                  int64_t c0, const int64_t region[4],
                                                  T *block, int64_t sub_stride)
{
    const int64_t pitch = region[3] - region[2];
    const int64_t channels =
        shape[1] - c0 < ROI_POOL_GROUP_LANES ? shape[1] - c0 : ROI_POOL_GROUP_LANES;
    int64_t s;
    PYROI_TYPED(lane_block_gather)(map, half, strides, shape[3], n, c0, channels, region[0],
                                   region[1], region[2], region[3], block, pitch, PYROI_LANES,
                                   sub_stride);
    for (s = (channels + PYROI_LANES - 1) / PYROI_LANES; s < ROI_POOL_GROUP; ++s) {
        memset(block + s * sub_stride, 0,
               (size_t)((region[1] - region[0]) * pitch * PYROI_LANES) * sizeof(T));
    }
}

/* A streamed channels-last output whose bins are whole 64-byte lines
 * (lane_block_bins_are_lines): roi_pool_roi_lanes streams each row of bins of the first subs
 * sub-blocks of a tile as soon as it is pooled, so that the stores drain while the next row
 * is pooled (a whole tile at once filled the store queue: 0.1-0.2 ms of 3 for VGG conv5). */
typedef struct PYROI_TYPED(roi_pool_lines) {
    T *base;                /* output of the RoI's channel c0 */
    int64_t subs;           /* sub-blocks streamed: those with every lane a channel */
    const int64_t *strides; /* the output's, in elements */
} PYROI_TYPED(roi_pool_lines);

/* The lines of RoI k's channel group at c0 in lines, or NULL when the output takes
 * roi_pool_tiles_to_bins's paths (not streamed, float16, packed, not on lines). */
static PYROI_TYPED(roi_pool_lines) *PYROI_TYPED(roi_pool_lines_of)(
    const PYROI_TYPED(roi_pool_job) *job, int64_t k, int64_t c0,
    PYROI_TYPED(roi_pool_lines) *lines)
{
    const int64_t *strides = job->result_strides;
    const int64_t full = (job->features_shape[1] - c0) / PYROI_LANES;
    if (!job->stream || job->half_result != NULL || full == 0) {
        return NULL;
    }
    lines->base = job->result + k * strides[0] + c0 * strides[1];
    if (!PYROI_TYPED(lane_block_bins_are_lines)(lines->base, PYROI_LANES, strides)) {
        return NULL;
    }
    lines->subs = full < ROI_POOL_GROUP ? full : ROI_POOL_GROUP;
    lines->strides = strides;
    return lines;
}

/* The output runs of a worker, streamed out behind the pooling of the next tile. */
typedef struct PYROI_TYPED(roi_pool_writer) {
    pyroi_row_stream run;       /* the outputs being written (finished: done == total) */
    pyroi_row_stream index_run; /* and the argmax */
    int index_wide;             /* its entries are int64, else int32 */
    int64_t per_row;            /* elements of each to write per row of bins pooled */
} PYROI_TYPED(roi_pool_writer);

/* A worker's part of the lane-major scratch; every part starts on a 64-byte boundary. */
typedef struct PYROI_TYPED(roi_pool_scratch) {
    T *block;               /* block[s][pixel][lane], sub-blocks sub_stride apart */
    int64_t sub_stride;
    T *values;              /* values[s][bin][lane] */
    PYROI_TYPED(roi_pool_index) *winners; /* winners[s][bin][lane]; NULL: no argmax */
    T *staging;             /* staging[channel][bin], packed */
    int64_t *staging_index; /* staging_index[channel][bin], packed */
} PYROI_TYPED(roi_pool_scratch);

/* Scratch elements (of T) per worker for blocks of block_pixels and tiles of bins bins: the
 * block, the value and index tiles, and the staging of a group's run, packed channel after
 * channel (one plain run to stream out), with its int64 index staging. */
static int64_t PYROI_TYPED(roi_pool_scratch_elements)(int64_t block_pixels, int64_t bins)
{
    return ROI_POOL_GROUP_LANES *
           (block_pixels + 3 * bins + bins * (int64_t)(sizeof(int64_t) / sizeof(T)));
}

/* Whether the lane-major scratch of blocks of block_pixels and tiles of bins bins is within
 * the limit (at most 5 * bins + 16 lane lines besides the block). */
static int PYROI_TYPED(roi_pool_scratch_fits)(int64_t block_pixels, int64_t bins)
{
    return (double)block_pixels > 0.0 &&
           ((double)block_pixels + 5.0 * (double)bins + 16.0) * ROI_POOL_GROUP *
                   (double)PYROI_LANE_BYTES <=
               (double)ROI_POOL_SCRATCH_BYTES;
}

static PYROI_TYPED(roi_pool_scratch) PYROI_TYPED(roi_pool_scratch_of)(
    const PYROI_TYPED(roi_pool_job) *job, int worker, int64_t block_pixels)
{
    PYROI_TYPED(roi_pool_scratch) scratch;
    const int64_t bins = job->params->pooled_height * job->params->pooled_width;
    scratch.block = job->scratch + worker * job->scratch_stride;
    scratch.sub_stride = block_pixels * PYROI_LANES;
    scratch.values = scratch.block + ROI_POOL_GROUP * scratch.sub_stride;
    /* the index tile has the width of T: it takes the place of one tile of T */
    scratch.winners = job->argmax_out == NULL
                          ? NULL
                          : (PYROI_TYPED(roi_pool_index) *)(void *)(scratch.values +
                                                                    ROI_POOL_GROUP_LANES * bins);
    scratch.staging = scratch.values + 2 * ROI_POOL_GROUP_LANES * bins;
    scratch.staging_index =
        (int64_t *)(void *)(scratch.staging + ROI_POOL_GROUP_LANES * bins);
    return scratch;
}

/* Whether one channel's bins of a RoI form one run of memory (rows of bins back to back). */
static int PYROI_TYPED(roi_pool_channel_bins_one_run)(const int64_t strides[4],
                                                      int64_t pooled_width)
{
    return strides[3] == 1 && strides[2] == pooled_width;
}

/* Whether the bins of consecutive channels of a RoI form one run of memory, channel after
 * channel (the C-contiguous layout), so that a group's outputs can be streamed as one. */
static int PYROI_TYPED(roi_pool_bins_contiguous)(const int64_t strides[4],
                                                 int64_t pooled_height, int64_t pooled_width)
{
    return PYROI_TYPED(roi_pool_channel_bins_one_run)(strides, pooled_width) &&
           strides[1] == pooled_height * pooled_width;
}

/* The task's writer when outputs are streamed (large outputs and argmax, both
 * C-contiguous), else NULL. */
static PYROI_TYPED(roi_pool_writer) *PYROI_TYPED(roi_pool_writer_of)(
    const PYROI_TYPED(roi_pool_job) *job, PYROI_TYPED(roi_pool_writer) *writer)
{
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    if (!job->stream ||
        !PYROI_TYPED(roi_pool_bins_contiguous)(job->result_strides, pooled_height,
                                               pooled_width) ||
        (job->argmax_out != NULL &&
         !PYROI_TYPED(roi_pool_bins_contiguous)(job->argmax_strides, pooled_height,
                                                pooled_width))) {
        return NULL;
    }
    pyroi_row_stream_init(&writer->run, NULL, NULL, 0, 0, 0);
    pyroi_row_stream_init(&writer->index_run, NULL, NULL, 0, 0, 0);
    writer->index_wide = job->argmax_wide;
    writer->per_row = 0;
    return writer;
}

/* Writes at least `elements` more of the writer's argmax run. */
static void PYROI_TYPED(roi_pool_writer_advance_index)(PYROI_TYPED(roi_pool_writer) *writer,
                                                       int64_t elements)
{
    if (writer->index_wide) {
        pyroi_row_stream_advance_i64(&writer->index_run, elements);
    } else {
        pyroi_row_stream_advance_i32(&writer->index_run, elements);
    }
}

/* Finishes the writer's last runs and makes the task's streamed stores visible to the
 * thread that joins it. */
static void PYROI_TYPED(roi_pool_writer_finish)(PYROI_TYPED(roi_pool_writer) *writer)
{
    if (writer != NULL) {
        PYROI_TYPED(pyroi_row_stream_advance)(&writer->run, INT64_MAX);
        PYROI_TYPED(roi_pool_writer_advance_index)(writer, INT64_MAX);
    }
    pyroi_stream_fence();
}

/* The int32 winner tiles (float32 maps) of RoI k for the group_lanes channels at c0 into an
 * int32 argmax, transposed a lane line at a time: streamed through the writer when there is
 * one, else stored in place. */
static void PYROI_TYPED(roi_pool_int32_tiles_to_bins)(const PYROI_TYPED(roi_pool_job) *job,
                                                      int64_t k, int64_t c0, int64_t group_lanes,
                                                      const PYROI_TYPED(roi_pool_scratch) *scratch,
                                                      PYROI_TYPED(roi_pool_writer) *writer)
{
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t bins = job->params->pooled_height * pooled_width;
    const int64_t *a_strides = job->argmax_strides;
    const int32_t *winners = (const int32_t *)(const void *)scratch->winners;
    int32_t *first = (int32_t *)job->argmax_out + k * a_strides[0] + c0 * a_strides[1];
    /* packed in the staging of the int64 argmax (half its bytes) */
    int32_t *staging = (int32_t *)(void *)scratch->staging_index;
    int64_t s, ph;
    if (writer != NULL) {
        pyroi_row_stream_advance_i32(&writer->index_run, INT64_MAX); /* the previous run */
    }
    for (s = 0; s * PYROI_LANES < group_lanes; ++s) {
        const int64_t lanes = PYROI_TYPED(roi_pool_sub_lanes)(job->features_shape[1], c0, s);
        const int32_t *tile = winners + s * bins * PYROI_LANES;
        int32_t *base = first + s * PYROI_LANES * a_strides[1];
        if (writer != NULL) {
            pyroi_lanes_to_channels_i32(tile, bins, lanes, staging + s * PYROI_LANES * bins,
                                        bins, 1);
        } else if (a_strides[2] == pooled_width * a_strides[3]) {
            pyroi_lanes_to_channels_i32(tile, bins, lanes, base, a_strides[1], a_strides[3]);
        } else {
            for (ph = 0; ph < job->params->pooled_height; ++ph) {
                pyroi_lanes_to_channels_i32(tile + ph * pooled_width * PYROI_LANES,
                                            pooled_width, lanes, base + ph * a_strides[2],
                                            a_strides[1], a_strides[3]);
            }
        }
    }
    if (writer != NULL) {
        pyroi_row_stream_init(&writer->index_run, first, staging, 1, group_lanes * bins,
                              group_lanes * bins);
    }
}

/* Writes the tiles of RoI k for the channel group at c0 to output and (if any) argmax;
 * through the writer when there is one. The first streamed_subs sub-blocks' values are out
 * already (roi_pool_lines). */
static void PYROI_TYPED(roi_pool_tiles_to_bins)(const PYROI_TYPED(roi_pool_job) *job, int64_t k,
                                                int64_t c0,
                                                const PYROI_TYPED(roi_pool_scratch) *scratch,
                                                PYROI_TYPED(roi_pool_writer) *writer,
                                                int64_t streamed_subs)
{
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t bins = pooled_height * pooled_width;
    const int64_t channels = job->features_shape[1];
    const int64_t *strides = job->result_strides, *a_strides = job->argmax_strides;
    const int64_t group_lanes =
        channels - c0 < ROI_POOL_GROUP_LANES ? channels - c0 : ROI_POOL_GROUP_LANES;
    int64_t s, ph, pw, j, i;
    if (job->half_result != NULL &&
        PYROI_TYPED(roi_pool_bins_contiguous)(strides, pooled_height, pooled_width)) {
        /* a float16 output whose group is one run: transposed, then rounded in one piece
         * (per channel, the 49 bins of 7 x 7 ended in a slow scalar tail) */
        for (s = 0; s * PYROI_LANES < group_lanes; ++s) {
            PYROI_TYPED(pyroi_lanes_to_channels)(
                scratch->values + s * bins * PYROI_LANES, bins,
                PYROI_TYPED(roi_pool_sub_lanes)(channels, c0, s),
                scratch->staging + s * PYROI_LANES * bins, bins, 1);
        }
        if (sizeof(T) == sizeof(float)) { /* always: only float32 jobs have a float16 output */
            const float *wide = (const float *)(const void *)scratch->staging;
            uint16_t *to = job->half_result + k * strides[0] + c0 * strides[1];
            if (writer != NULL) { /* large outputs: past the caches, as float32's */
                pyroi_half_round_stream(wide, group_lanes * bins, to);
                /* the argmax run (if any) goes out a share per row of the next tile's bins */
                writer->per_row = (group_lanes * bins + pooled_height - 1) / pooled_height;
            } else {
                pyroi_half_round_run(wide, group_lanes * bins, to, 1);
            }
        }
    } else if (job->half_result != NULL) { /* any other layout, never streamed */
        for (s = 0; s * PYROI_LANES < group_lanes; ++s) {
            PYROI_TYPED(lane_block_tile_to_half_bins)(
                scratch->values + s * bins * PYROI_LANES,
                PYROI_TYPED(roi_pool_sub_lanes)(channels, c0, s), pooled_height, pooled_width,
                job->half_result + k * strides[0] + (c0 + s * PYROI_LANES) * strides[1],
                strides, scratch->staging);
        }
    } else if (writer != NULL) {
        /* large outputs: lay the group's run out in the scratch and stream it out past the
         * caches while the next tile is pooled (roi_pool_roi_lanes advances it) */
        PYROI_TYPED(pyroi_row_stream_advance)(&writer->run, INT64_MAX); /* the previous run */
        for (s = 0; s * PYROI_LANES < group_lanes; ++s) {
            PYROI_TYPED(pyroi_lanes_to_channels)(
                scratch->values + s * bins * PYROI_LANES, bins,
                PYROI_TYPED(roi_pool_sub_lanes)(channels, c0, s),
                scratch->staging + s * PYROI_LANES * bins,
                bins, 1);
        }
        pyroi_row_stream_init(&writer->run, job->result + k * strides[0] + c0 * strides[1],
                              scratch->staging, 1, group_lanes * bins, group_lanes * bins);
        writer->per_row = (group_lanes * bins + pooled_height - 1) / pooled_height;
    } else {
        for (s = streamed_subs; s * PYROI_LANES < group_lanes; ++s) {
            const int64_t lanes = PYROI_TYPED(roi_pool_sub_lanes)(channels, c0, s);
            const T *values = scratch->values + s * bins * PYROI_LANES;
            T *base = job->result + k * strides[0] + (c0 + s * PYROI_LANES) * strides[1];
            if (strides[2] == pooled_width * strides[3]) { /* a channel's bins evenly spaced */
                PYROI_TYPED(pyroi_lanes_to_channels)(values, bins, lanes, base, strides[1],
                                                     strides[3]);
                continue;
            }
            for (ph = 0; ph < pooled_height; ++ph) {
                PYROI_TYPED(pyroi_lanes_to_channels)(values + ph * pooled_width * PYROI_LANES,
                                                     pooled_width, lanes,
                                                     base + ph * strides[2], strides[1],
                                                     strides[3]);
            }
        }
    }
    if (scratch->winners == NULL) {
        return;
    }
    if (!job->argmax_wide && sizeof(PYROI_TYPED(roi_pool_index)) == sizeof(int32_t)) {
        /* float32 maps: the int32 winners go to an int32 argmax as the values go out */
        PYROI_TYPED(roi_pool_int32_tiles_to_bins)(job, k, c0, group_lanes, scratch, writer);
        return;
    }
    if (writer != NULL && job->argmax_wide) { /* the same for an int64 argmax */
        pyroi_row_stream_advance_i64(&writer->index_run, INT64_MAX);
        for (j = 0; j < group_lanes; ++j) {
            const PYROI_TYPED(roi_pool_index) *winners =
                scratch->winners + (j / PYROI_LANES) * bins * PYROI_LANES +
                j % PYROI_LANES;
            for (i = 0; i < bins; ++i) {
                scratch->staging_index[j * bins + i] = winners[i * PYROI_LANES];
            }
        }
        pyroi_row_stream_init(&writer->index_run,
                              (int64_t *)job->argmax_out + k * a_strides[0] + c0 * a_strides[1],
                              scratch->staging_index, group_lanes, bins, bins);
        return;
    }
    for (j = 0; j < group_lanes; ++j) {
        const PYROI_TYPED(roi_pool_index) *winners =
            scratch->winners + (j / PYROI_LANES) * bins * PYROI_LANES + j % PYROI_LANES;
        const int64_t out = k * a_strides[0] + (c0 + j) * a_strides[1];
        for (ph = 0; ph < pooled_height; ++ph) {
            for (pw = 0; pw < pooled_width; ++pw) {
                roi_pool_argmax_set(job->argmax_out, out + ph * a_strides[2] + pw * a_strides[3],
                                    job->argmax_wide,
                                    winners[(ph * pooled_width + pw) * PYROI_LANES]);
            }
        }
    }
}
