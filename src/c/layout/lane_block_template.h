/* lane_block_template.h - the lane-major block machinery that every blocked kernel shares
 * (RoIAlign's reductions and RoIPool): the lane layout of a block, the channels-last gather of
 * a region of an image into it, the write-out of a block to the caller's planes (streamed past
 * the caches when the caller gives staging), and the image and channels of a work item of an
 * image-block order. The tiles and kernels of each operator stay with it. Included by
 * roi_align.c and roi_pool.c once per dtype with T and PYROI_TYPED(name) defined, before their
 * templates (which #undef the macros below after their last one).
 *
 * A block is a channels-last copy of (part of) one image: block[h][w][lane], one lane per
 * channel, PYROI_LANES channels (one 64-byte cache line, the layout of transpose.h) per lane
 * group. The kernels take the lanes as their vector axis; each lane evaluates exactly the
 * scalar expression of its channel, so the blocked orders give the direct order's results. */

/* Channel lanes of a lane group: one 64-byte cache line (16 float, 8 double). */
#define PYROI_LANE_BYTES 64
#define PYROI_LANES ((int64_t)(PYROI_LANE_BYTES / sizeof(T)))

/* The lanes of one pixel as the kernels see them: PYROI_VECTORS GCC/Clang vectors (see
 * PYROI_VECTOR_BYTES), else PYROI_LANES scalars (a plain loop the auto-vectoriser may take).
 * Either way each lane evaluates exactly the scalar expression of its channel. */
#ifdef PYROI_HAVE_VECTOR_TYPES
typedef T PYROI_TYPED(lane_vector)
    __attribute__((vector_size(PYROI_VECTOR_BYTES), aligned(sizeof(T)), may_alias));
#  define PYROI_VECTORS ((int64_t)(PYROI_LANE_BYTES / PYROI_VECTOR_BYTES))
#else
typedef T PYROI_TYPED(lane_vector);
#  define PYROI_VECTORS PYROI_LANES
#endif

/* Pixels of lanes transposed at a time by the streamed write-out of a block. */
#define PYROI_STAGING_RUN 256

/* The group of RoIs (one image with RoIs, see rois.h) and the channels
 * [*c0, *c0 + *channels) of work item `item` of an image-block order whose items hold
 * item_channels of the map's channels each. The items follow the images that have RoIs, not
 * the batch (which may be broadcast). */
static inline int64_t PYROI_TYPED(lane_block_item)(int64_t item, int64_t map_channels,
                                                   int64_t item_channels, int64_t *c0,
                                                   int64_t *channels)
{
    const int64_t groups = (map_channels + item_channels - 1) / item_channels;
    *c0 = (item % groups) * item_channels;
    *channels = map_channels - *c0 < item_channels ? map_channels - *c0 : item_channels;
    return item / groups;
}

/* Starts loading element `at` of map, or of half's float16 map when half is not NULL. */
static inline void PYROI_TYPED(lane_block_prefetch_element)(const T *map, const uint16_t *half,
                                                            int64_t at)
{
    if (half != NULL) {
        PYROI_PREFETCH(half + at);
    } else {
        PYROI_PREFETCH(map + at);
    }
}

/* Moves count pixels of `lanes` channels (see pyroi_channels_to_lanes) from element `at` of a
 * map: of map, or, when half is not NULL, of half's float16 map, each element widened exactly
 * to T as it is read (T float: the float32 kernels on a float16 map, see *_f16.c). */
static inline void PYROI_TYPED(lane_block_to_lanes)(const T *map, const uint16_t *half,
                                                    int64_t at, int64_t lane_stride,
                                                    int64_t stride, int64_t count,
                                                    int64_t lanes, T *dst, int64_t pitch)
{
    if (half != NULL) {
        PYROI_TYPED(pyroi_half_channels_to_lanes)(half + at, lane_stride, stride, count, lanes,
                                                  dst, pitch);
    } else {
        PYROI_TYPED(pyroi_channels_to_lanes)(map + at, lane_stride, stride, count, lanes, dst,
                                             pitch);
    }
}

/* Copies rows [row_begin, row_end) x columns [col_begin, col_end) of channels
 * [c0, c0 + channels) of image n (caller's layout, rows of width pixels) into a block: pixel
 * (h, w) of lane group g (channels from c0 + g * PYROI_LANES) goes to
 *     block + ((h - row_begin) * row_pixels + w - col_begin) * pitch + g * group_stride,
 * lanes past the last channel 0. The lane groups of a pixel are interleaved (group_stride
 * PYROI_LANES, pitch a multiple of it: RoIAlign's pairs) or in separate sub-blocks (pitch
 * PYROI_LANES, group_stride a sub-block: RoIPool's groups). The map is map's, or half's
 * float16 one when half is not NULL (lane_block_to_lanes). */
static inline void PYROI_TYPED(lane_block_gather)(const T *map, const uint16_t *half,
                                                  const int64_t strides[4], int64_t width,
                                                  int64_t n, int64_t c0, int64_t channels,
                                                  int64_t row_begin, int64_t row_end,
                                                  int64_t col_begin, int64_t col_end, T *block,
                                                  int64_t row_pixels, int64_t pitch,
                                                  int64_t group_stride)
{
    int64_t c, h;
    for (c = 0; c < channels; c += PYROI_LANES) {
        const int64_t image = n * strides[0] + (c0 + c) * strides[1] + col_begin * strides[3];
        const int64_t lanes = channels - c < PYROI_LANES ? channels - c : PYROI_LANES;
        T *group = block + c / PYROI_LANES * group_stride;
        if (col_begin == 0 && col_end == width && row_pixels == width &&
            strides[2] == width * strides[3]) {
            /* whole rows of packed planes: one run (long runs are prefetched ahead) */
            PYROI_TYPED(lane_block_to_lanes)(map, half, image + row_begin * strides[2],
                                             strides[1], strides[3],
                                             (row_end - row_begin) * width, lanes, group, pitch);
            continue;
        }
        for (h = row_begin; h < row_end; ++h) {
            PYROI_TYPED(lane_block_to_lanes)(map, half, image + h * strides[2], strides[1],
                                             strides[3], col_end - col_begin, lanes,
                                             group + (h - row_begin) * row_pixels * pitch,
                                             pitch);
        }
    }
}

/* Starts loading rows [row_begin, row_end) x columns [col_begin, col_end) of channels
 * [c0, c0 + channels) of image n of map, or of half's float16 map (see lane_block_gather), a
 * line at a time (rows of packed pixels only). */
static inline void PYROI_TYPED(lane_block_prefetch)(const T *map, const uint16_t *half,
                                                    const int64_t strides[4], int64_t n,
                                                    int64_t c0, int64_t channels,
                                                    int64_t row_begin, int64_t row_end,
                                                    int64_t col_begin, int64_t col_end)
{
    const int64_t step =
        PYROI_LANE_BYTES / (int64_t)(half != NULL ? sizeof(uint16_t) : sizeof(T));
    int64_t c, h, w;
    if (strides[3] != 1 || col_end <= col_begin) {
        return;
    }
    for (c = c0; c < c0 + channels; ++c) {
        for (h = row_begin; h < row_end; ++h) {
            const int64_t row = n * strides[0] + c * strides[1] + h * strides[2];
            for (w = col_begin; w < col_end; w += step) {
                PYROI_TYPED(lane_block_prefetch_element)(map, half, row + w);
            }
            PYROI_TYPED(lane_block_prefetch_element)(map, half, row + col_end - 1);
        }
    }
}

/* Row segments of runs ahead of the one being gathered whose loads lane_block_gather_runs
 * has started. */
#ifndef PYROI_RUNS_AHEAD
#  define PYROI_RUNS_AHEAD 2
#endif

/* Moves (*i, *h) to the next row segment of runs [.., last): the next row of run *i, or the
 * first of the next run; whole rows (columns [0, width)) are one segment. 0 past the last. */
static inline int PYROI_TYPED(lane_block_next_segment)(const int64_t *runs, int64_t last,
                                                       int64_t width, int64_t *i, int64_t *h)
{
    const int64_t *run = runs + 4 * *i;
    *h = run[2] == 0 && run[3] == width ? run[1] : *h + 1;
    if (*h >= run[1] && ++*i < last) {
        *h = runs[4 * *i];
    }
    return *i < last;
}

/* Gathers runs [first, last) (4 int64 each: rows [runs[0], runs[1]) x columns
 * [runs[2], runs[3])) of channels [c0, c0 + channels) of image n into a block of whole rows
 * of width pixels, pixel (h, w) at block + (h * width + w) * pitch, as lane_block_gather
 * does (lane groups group_stride PYROI_LANES apart; map or half as there), one row segment
 * at a time (whole rows: one segment). Short runs from 16 planes are too short for the
 * prefetchers: the loads of the segments PYROI_RUNS_AHEAD ahead are started while one is
 * gathered. */
static inline void PYROI_TYPED(lane_block_gather_runs)(const T *map,
                                                       const uint16_t *half,
                                                       const int64_t strides[4], int64_t width,
                                                       int64_t n, int64_t c0, int64_t channels,
                                                       const int64_t *runs, int64_t first,
                                                       int64_t last, T *block, int64_t pitch)
{
    int64_t i = first, h = first < last ? runs[4 * first] : 0, ahead_i = i, ahead_h = h, a;
    int more = i < last;
    for (a = 0; more && a < PYROI_RUNS_AHEAD; ++a) {
        const int64_t *run = runs + 4 * ahead_i;
        PYROI_TYPED(lane_block_prefetch)(map, half, strides, n, c0, channels, ahead_h,
                                         ahead_h + 1, run[2], run[3]);
        more = PYROI_TYPED(lane_block_next_segment)(runs, last, width, &ahead_i, &ahead_h);
    }
    while (i < last) {
        const int64_t *run = runs + 4 * i;
        const int whole_rows = run[2] == 0 && run[3] == width;
        if (more) {
            const int64_t *ahead = runs + 4 * ahead_i;
            PYROI_TYPED(lane_block_prefetch)(map, half, strides, n, c0, channels, ahead_h,
                                             ahead_h + 1, ahead[2], ahead[3]);
            more = PYROI_TYPED(lane_block_next_segment)(runs, last, width, &ahead_i, &ahead_h);
        }
        PYROI_TYPED(lane_block_gather)(map, half, strides, width, n, c0, channels, h,
                                       whole_rows ? run[1] : h + 1, run[2], run[3],
                                       block + (h * width + run[2]) * pitch, width, pitch,
                                       PYROI_LANES);
        (void)PYROI_TYPED(lane_block_next_segment)(runs, last, width, &i, &h);
    }
}

/* Whether the bins of a full lane group of a (K, C, PH, PW) output at base (strides in
 * elements) are whole 64-byte lines: channels adjacent in memory (channels-last bins) and
 * every bin on a line boundary. Then each row of a tile (tile[bin][lane]) is the output's
 * bytes as they are, streamed out without a transposition (pyroi_lines_stream). */
static inline int PYROI_TYPED(lane_block_bins_are_lines)(const T *base, int64_t lanes,
                                                         const int64_t strides[4])
{
    const int64_t line = PYROI_LANE_BYTES, size = (int64_t)sizeof(T);
    return lanes == PYROI_LANES && strides[1] == 1 && (uintptr_t)base % (uintptr_t)line == 0 &&
           strides[2] * size % line == 0 && strides[3] * size % line == 0;
}

/* A tile of bins (tile[bin][lane], bins row-major) into a float16 output (T float: the
 * forward of a float16 call, see *_f16.c): the bins transposed into staging (room for a tile),
 * then each channel's rounded once into its (PH, PW) plane at base + j * strides[1] (the
 * lanes' planes in one run where they follow each other: a 7 x 7 plane alone would leave a
 * vector's tail to the portable conversion in every call). */
static inline void PYROI_TYPED(lane_block_tile_to_half_bins)(const T *tile, int64_t lanes,
                                                             int64_t pooled_height,
                                                             int64_t pooled_width, uint16_t *base,
                                                             const int64_t strides[4], T *staging)
{
    const int64_t bins = pooled_height * pooled_width;
    if (sizeof(T) != sizeof(float)) {
        return; /* never: only float32 jobs have a float16 output */
    }
    PYROI_TYPED(pyroi_lanes_to_channels)(tile, bins, lanes, staging, bins, 1);
    pyroi_half_round_planes((const float *)(const void *)staging, lanes, pooled_height,
                            pooled_width, base, strides);
}

/* Writes rows [row_begin, row_end) x columns [col_begin, col_end) of a block of one lane group
 * (pixel (h, w) at block + (h * width + w) * PYROI_LANES) back to channels [c0, c0 + lanes)
 * of image n in the caller's layout. */
static inline void PYROI_TYPED(lane_block_to_region)(const T *block, int64_t width, int64_t n,
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
static inline void PYROI_TYPED(lane_block_to_image)(T *block, int64_t height, int64_t width,
                                                    int64_t n, int64_t c0, int64_t lanes, T *map,
                                                    const int64_t strides[4], T *staging)
{
    const int64_t pixels = height * width;
    T *image = map + n * strides[0] + c0 * strides[1];
    int64_t first, i, j;
    if (staging == NULL || strides[3] != 1 || strides[2] != width) {
        PYROI_TYPED(lane_block_to_region)(block, width, n, c0, lanes, 0, height, 0, width, map,
                                          strides);
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

/* Rounds rows [0, rows) x columns [0, cols) of a block of one lane group (pixel (h, w) at
 * block + (h * pitch + w) * PYROI_LANES) once into a float16 map (T float: the backward of a
 * float16 call, see *_f16.c), pixel (h, w) of channel c0 + j at
 * half + j * strides[1] + h * strides[2] + w * strides[3]: runs of PYROI_STAGING_RUN pixels
 * of a row transposed into staging (room for PYROI_STAGING_RUN lane lines), then each
 * channel's run rounded once into its plane. zero: each run is zeroed in the block while in
 * L1; stream: packed runs are streamed past the caches (pyroi_half_round_stream; the caller
 * fences). */
static inline void PYROI_TYPED(lane_block_rows_to_half)(T *block, int64_t pitch, int64_t rows,
                                                        int64_t cols, int zero, int stream,
                                                        int64_t lanes, uint16_t *half,
                                                        const int64_t strides[4], T *staging)
{
    const int64_t line = PYROI_LANE_BYTES / (int64_t)sizeof(uint16_t); /* elements */
    int64_t h, first, i, j, run;
    T *lines;
    if (sizeof(T) != sizeof(float)) {
        return; /* never: only float32 jobs have a float16 output */
    }
    for (h = 0; h < rows; ++h) {
        /* streamed, the runs after the first start on a line of channel c0's plane (of every
         * channel's when the planes are whole lines apart): then only the row's two ends
         * take plain stores into partial lines, each waiting for a read of its line
         * (measured, the small call's backward, 1 thread: 13-15 ms with runs across lines,
         * 11-12 ms on lines, as float32) */
        const uintptr_t start = (uintptr_t)(half + h * strides[2]);
        const uintptr_t line_bytes = (uintptr_t)PYROI_LANE_BYTES;
        const int64_t lead =
            stream ? (int64_t)((line_bytes - start % line_bytes) % line_bytes) / 2 : 0;
        for (first = 0; first < cols; first += run) {
            run = first == 0 && lead > 0 ? PYROI_STAGING_RUN - line + lead : PYROI_STAGING_RUN;
            run = cols - first < run ? cols - first : run;
            lines = block + (h * pitch + first) * PYROI_LANES;
            PYROI_TYPED(pyroi_lanes_to_channels)(lines, run, lanes, staging, run, 1);
            for (i = 0; zero && i < run * PYROI_LANES; ++i) {
                lines[i] = (T)0;
            }
            for (j = 0; j < lanes; ++j) {
                const float *values = (const float *)(const void *)(staging + j * run);
                uint16_t *to = half + j * strides[1] + h * strides[2] + first * strides[3];
                if (stream && strides[3] == 1) {
                    pyroi_half_round_stream(values, run, to);
                } else {
                    pyroi_half_round_run(values, run, to, strides[3]);
                }
            }
        }
    }
}

/* lane_block_to_image into a float16 map (lane_block_rows_to_half: the whole block one run
 * when the planes are packed, else row by row), the block left zero. stream: the rows are
 * streamed past the caches (the caller fences, as after lane_block_to_image with staging). */
static inline void PYROI_TYPED(lane_block_to_half_image)(T *block, int64_t height, int64_t width,
                                                         int64_t n, int64_t c0, int64_t lanes,
                                                         uint16_t *half, const int64_t strides[4],
                                                         T *staging, int stream)
{
    const int packed = strides[3] == 1 && strides[2] == width;
    PYROI_TYPED(lane_block_rows_to_half)(block, width, packed ? 1 : height,
                                         packed ? height * width : width, 1, stream, lanes,
                                         half + n * strides[0] + c0 * strides[1], strides,
                                         staging);
}

/* lane_block_to_region into a float16 map, each pixel rounded once (lane_block_rows_to_half;
 * the block is left as it is). */
static inline void PYROI_TYPED(lane_block_to_half_region)(
    T *block, int64_t width, int64_t n, int64_t c0, int64_t lanes, int64_t row_begin,
    int64_t row_end, int64_t col_begin, int64_t col_end, uint16_t *half,
    const int64_t strides[4], T *staging)
{
    PYROI_TYPED(lane_block_rows_to_half)(
        block + (row_begin * width + col_begin) * PYROI_LANES, width, row_end - row_begin,
        col_end - col_begin, 0, 0, lanes,
        half + n * strides[0] + c0 * strides[1] + row_begin * strides[2] +
            col_begin * strides[3],
        strides, staging);
}
