/* roi_align_plan_template.h - RoIAlign's geometry and plan, shared by every RoIAlign reduction
 * (avg, mmcv max, ONNX max) and loop order; included by roi_align.c once per dtype with T and
 * PYROI_TYPED(name) defined. Semantics: docs/semantics.md §3.
 *
 * A call first builds a plan: the call's one copy of the boxes and batch indices (rois.h),
 * validated, then the per-axis tap tables of every RoI (sampling.h), built once and shared
 * read-only by the workers. The job is what every worker of a call reads. */

#include "roi_align/roi_align_geometry_template.h"

/* The call's copy of the RoIs (grouped by image) and the tap tables of every RoI. */
typedef struct PYROI_TYPED(roi_align_plan) {
    pyroi_rois rois;            /* the only place the call reads boxes and batch indices */
    int64_t num_rois;
    int64_t bins;               /* pooled_height + pooled_width: ranges per RoI */
    pyroi_tap_range *ranges;    /* RoI k: ranges[k*bins ..]: rows, then columns */
    PYROI_TYPED(axis_tap) *taps; /* RoI k: row taps from taps + first_tap[k], then columns */
    int64_t *first_tap;         /* per RoI */
    int64_t *row_taps;          /* per RoI: in-map samples along y (over all bins) */
    int64_t *col_taps;          /* per RoI: in-map samples along x */
    int64_t *samples;           /* per RoI: grid_h * grid_w (the averaging count) */
    double sampled_taps;        /* sum over RoIs of row_taps * col_taps: work per channel */
    double region_pixels;       /* sum over RoIs of their tap rows' pixels in their columns */
    int64_t height, width;      /* of the map */
    const pyroi_cancel *cancel; /* the call's token: the kernels read it between bins */
    void *allocation;
    int borrowed;               /* memory from a caller's workspace: not freed */
} PYROI_TYPED(roi_align_plan);

static void PYROI_TYPED(roi_align_plan_free)(PYROI_TYPED(roi_align_plan) *plan)
{
    if (!plan->borrowed) {
        free(plan->allocation);
        free(plan->taps);
    }
    plan->allocation = NULL;
    plan->taps = NULL;
    pyroi_rois_free(&plan->rois);
}

/* The map pixels RoI k reads: rows [*row_begin, *row_end), columns [*col_begin, *col_end);
 * empty when no sample lands in the map. */
static void PYROI_TYPED(roi_align_roi_extent)(const PYROI_TYPED(roi_align_plan) *plan,
                                              int64_t k, int64_t *row_begin, int64_t *row_end,
                                              int64_t *col_begin, int64_t *col_end)
{
    const PYROI_TYPED(axis_tap) *taps = plan->taps + plan->first_tap[k];
    int64_t i;
    *row_begin = *col_begin = INT64_MAX;
    *row_end = *col_end = 0;
    if (plan->row_taps[k] == 0 || plan->col_taps[k] == 0) {
        *row_begin = *col_begin = 0;
        return;
    }
    for (i = 0; i < plan->row_taps[k]; ++i) { /* lo <= hi for every tap */
        *row_begin = taps[i].lo < *row_begin ? taps[i].lo : *row_begin;
        *row_end = taps[i].hi + 1 > *row_end ? taps[i].hi + 1 : *row_end;
    }
    taps += plan->row_taps[k];
    for (i = 0; i < plan->col_taps[k]; ++i) {
        *col_begin = taps[i].lo < *col_begin ? taps[i].lo : *col_begin;
        *col_end = taps[i].hi + 1 > *col_end ? taps[i].hi + 1 : *col_end;
    }
}

/* The next run of touching rows that RoI k's samples tap, from row tap *next on:
 * [*run_begin, *run_end); 0 when no tap is left. A large RoI's samples tap a few rows of the
 * many it spans. */
static int PYROI_TYPED(roi_align_next_tap_rows)(const PYROI_TYPED(roi_align_plan) *plan,
                                                int64_t k, int64_t *next, int64_t *run_begin,
                                                int64_t *run_end)
{
    const PYROI_TYPED(axis_tap) *taps = plan->taps + plan->first_tap[k];
    int64_t i = *next;
    if (i >= plan->row_taps[k]) {
        return 0;
    }
    *run_begin = taps[i].lo;
    *run_end = taps[i].hi + 1; /* lo <= hi for every tap */
    for (++i; i < plan->row_taps[k] && taps[i].lo <= *run_end && taps[i].hi + 1 >= *run_begin;
         ++i) {
        *run_begin = taps[i].lo < *run_begin ? taps[i].lo : *run_begin;
        *run_end = taps[i].hi + 1 > *run_end ? taps[i].hi + 1 : *run_end;
    }
    *next = i;
    return 1;
}

/* The pixels the region order gathers for RoI k: its tap rows, across its columns. */
static double PYROI_TYPED(roi_align_region_pixels)(const PYROI_TYPED(roi_align_plan) *plan,
                                                   int64_t k)
{
    int64_t row_begin, row_end, col_begin, col_end, next = 0;
    double rows = 0.0;
    PYROI_TYPED(roi_align_roi_extent)(plan, k, &row_begin, &row_end, &col_begin, &col_end);
    if (col_end <= col_begin) {
        return 0.0;
    }
    while (PYROI_TYPED(roi_align_next_tap_rows)(plan, k, &next, &row_begin, &row_end)) {
        rows += (double)(row_end - row_begin);
    }
    return rows * (double)(col_end - col_begin);
}

/* Where RoI k's tap tables are in the plan: its bin ranges along each axis (indices into its
 * taps) and its row and column taps. */
typedef struct PYROI_TYPED(roi_align_tap_tables) {
    const pyroi_tap_range *row_ranges; /* pooled_height of them */
    const pyroi_tap_range *col_ranges; /* pooled_width */
    const PYROI_TYPED(axis_tap) *row_taps;
    const PYROI_TYPED(axis_tap) *col_taps;
    const pyroi_cancel *cancel; /* the call's token, read between bins (parallel.h) */
} PYROI_TYPED(roi_align_tap_tables);

static inline PYROI_TYPED(roi_align_tap_tables)
    PYROI_TYPED(roi_align_tap_tables_of)(const PYROI_TYPED(roi_align_plan) *plan, int64_t k,
                                         int64_t pooled_height)
{
    PYROI_TYPED(roi_align_tap_tables) tables;
    tables.row_ranges = plan->ranges + k * plan->bins;
    tables.col_ranges = tables.row_ranges + pooled_height;
    tables.row_taps = plan->taps + plan->first_tap[k];
    tables.col_taps = tables.row_taps + plan->row_taps[k];
    tables.cancel = plan->cancel;
    return tables;
}

/* An average's plan with params->merge_samples: RoI k's row taps, then its column taps, each
 * bin's merged into taps of pixel pairs (pyroi_axis_taps_merge), the columns moved down to
 * follow the fewer rows; the RoI's block of taps keeps its place (its tail unused). */
static void PYROI_TYPED(roi_align_plan_merge_samples)(PYROI_TYPED(roi_align_plan) *plan,
                                                      int64_t k, int64_t pooled_height)
{
    PYROI_TYPED(axis_tap) *taps = plan->taps + plan->first_tap[k];
    pyroi_tap_range *ranges = plan->ranges + k * plan->bins;
    const int64_t rows = PYROI_TYPED(pyroi_axis_taps_merge)(ranges, pooled_height, taps, taps);
    plan->col_taps[k] = PYROI_TYPED(pyroi_axis_taps_merge)(
        ranges + pooled_height, plan->bins - pooled_height, taps + plan->row_taps[k],
        taps + rows);
    plan->row_taps[k] = rows;
}

/* Validates the boxes of the plan's copy of the RoIs (plan->rois, batch indices checked) and
 * builds the rest of the plan from that copy; its memory comes from arena (a caller's
 * workspace) or, when arena is NULL, from malloc. merge_samples: an average's plan with
 * params->merge_samples set (roi_align_plan_merge_samples). */
static pyroi_status PYROI_TYPED(roi_align_plan_build_in)(
    PYROI_TYPED(roi_align_plan) *plan, int64_t height, int64_t width,
    const pyroi_roi_align_params *params, int merge_samples, roi_align_arena *arena)
{
    const int64_t num_rois = plan->rois.num_rois;
    const T *boxes = (const T *)plan->rois.boxes;
    const int64_t box_row_stride = plan->rois.coords;
    /* ranges per RoI; none without RoIs (a backward with K = 0 only zeroes grad_input, and
     * its output size may then be as large as int64 allows) */
    const int64_t bins = num_rois > 0 && params->pooled_height <= INT64_MAX / 4 &&
                                 params->pooled_width <= INT64_MAX / 4
                             ? params->pooled_height + params->pooled_width
                             : 0;
    int64_t k, failed_roi, total_taps = 0, per_roi_words, words;
    pyroi_status status;

    if (num_rois > 0 && bins == 0) {
        return PYROI_E_NO_MEMORY; /* more than 2^61 ranges per RoI */
    }
    plan->num_rois = num_rois;
    plan->bins = bins;
    plan->height = height;
    plan->width = width;
    plan->cancel = params->cancel;
    plan->allocation = NULL;
    plan->taps = NULL;
    plan->borrowed = arena != NULL;
    /* one allocation for everything sized by the RoI count: 4 int64 per RoI and the ranges
     * (the validated output size bounds every product below) */
    per_roi_words =
        ROI_ALIGN_PLAN_WORDS + (int64_t)(sizeof(pyroi_tap_range) / sizeof(int64_t)) * bins;
    if ((uint64_t)num_rois > (uint64_t)(SIZE_MAX / 16) / (uint64_t)per_roi_words) {
        return PYROI_E_NO_MEMORY;
    }
    words = num_rois * per_roi_words + 1;
    plan->allocation = roi_align_arena_alloc(arena, (size_t)words * sizeof(int64_t));
    if (plan->allocation == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    plan->first_tap = (int64_t *)plan->allocation;
    plan->row_taps = plan->first_tap + num_rois;
    plan->col_taps = plan->row_taps + num_rois;
    plan->samples = plan->col_taps + num_rois;
    plan->ranges = (pyroi_tap_range *)(plan->samples + num_rois);

    status = PYROI_TYPED(roi_align_check_boxes)(boxes, num_rois, box_row_stride, height, width,
                                                params, &plan->rois.cancel, plan->row_taps,
                                                plan->col_taps, &failed_roi);
    if (status != PYROI_OK) {
        PYROI_TYPED(roi_align_plan_free)(plan);
        return status;
    }
    plan->sampled_taps = 0;
    for (k = 0; k < num_rois; ++k) {
        plan->first_tap[k] = total_taps;
        if (!pyroi_add_nonneg(total_taps, plan->row_taps[k], &total_taps) ||
            !pyroi_add_nonneg(total_taps, plan->col_taps[k], &total_taps)) {
            PYROI_TYPED(roi_align_plan_free)(plan);
            return PYROI_E_NO_MEMORY;
        }
        plan->sampled_taps += (double)plan->row_taps[k] * (double)plan->col_taps[k];
    }
    if ((uint64_t)total_taps > (uint64_t)SIZE_MAX / sizeof(PYROI_TYPED(axis_tap))) {
        PYROI_TYPED(roi_align_plan_free)(plan);
        return PYROI_E_NO_MEMORY;
    }
    plan->taps = (PYROI_TYPED(axis_tap) *)roi_align_arena_alloc(
        arena, (size_t)(total_taps > 0 ? total_taps : 1) * sizeof(PYROI_TYPED(axis_tap)));
    if (plan->taps == NULL) {
        PYROI_TYPED(roi_align_plan_free)(plan);
        return PYROI_E_NO_MEMORY;
    }
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(sample_axis) rows, cols;
        PYROI_TYPED(axis_tap) *taps = plan->taps + plan->first_tap[k];
        pyroi_tap_range *ranges = plan->ranges + k * bins;
        if (pyroi_cancel_at(&plan->rois.cancel, k)) {
            PYROI_TYPED(roi_align_plan_free)(plan);
            return PYROI_E_CANCELLED;
        }
        (void)PYROI_TYPED(roi_align_axes)(boxes + k * box_row_stride, params, height, width,
                                          &rows, &cols);
        PYROI_TYPED(pyroi_axis_tap_table)(&rows, ranges, taps);
        PYROI_TYPED(pyroi_axis_tap_table)(&cols, ranges + params->pooled_height,
                                          taps + plan->row_taps[k]);
        plan->samples[k] = rows.grid * cols.grid;
        if (merge_samples) {
            PYROI_TYPED(roi_align_plan_merge_samples)(plan, k, params->pooled_height);
        }
    }
    if (merge_samples) { /* fewer taps: less work per channel */
        plan->sampled_taps = 0;
        for (k = 0; k < num_rois; ++k) {
            plan->sampled_taps += (double)plan->row_taps[k] * (double)plan->col_taps[k];
        }
    }
    plan->region_pixels = 0;
    for (k = 0; k < num_rois; ++k) {
        plan->region_pixels += PYROI_TYPED(roi_align_region_pixels)(plan, k);
        if (pyroi_cancel_at(&plan->rois.cancel, k)) {
            PYROI_TYPED(roi_align_plan_free)(plan);
            return PYROI_E_CANCELLED;
        }
    }
    status = pyroi_rois_group_by_image(&plan->rois);
    if (status != PYROI_OK) {
        PYROI_TYPED(roi_align_plan_free)(plan);
    }
    return status;
}

/* The columns of one band of the forward's RoI order (roi_align_plan_order_by_rows): a
 * band, as tall as the RoIs' mean extent in rows and widened by their mean extent in columns,
 * fills at most half of a core's L2 cache with lane-major block pixels of pixel_bytes each.
 * The whole width (one band) when the L2 size is unknown or the band would span the map. */
static int64_t PYROI_TYPED(roi_align_band_columns)(const PYROI_TYPED(roi_align_plan) *plan,
                                                   int64_t width, double pixel_bytes,
                                                   int64_t l2_bytes)
{
    double rows = 0.0, cols = 0.0, band;
    int64_t k, row_begin, row_end, col_begin, col_end;
    for (k = 0; k < plan->num_rois; ++k) {
        PYROI_TYPED(roi_align_roi_extent)(plan, k, &row_begin, &row_end, &col_begin, &col_end);
        rows += (double)(row_end - row_begin);
        cols += (double)(col_end - col_begin);
    }
    rows = rows / (double)plan->num_rois + 1.0;
    cols = cols / (double)plan->num_rois;
    band = (double)l2_bytes / 2.0 / (pixel_bytes * rows) - cols;
    if (l2_bytes <= 0 || band >= (double)width) {
        return width > 0 ? width : 1;
    }
    return band > cols && band > 8.0 ? (int64_t)band : (int64_t)(cols > 8.0 ? cols : 8.0);
}

/* Forward only: within each image, the RoIs in bands of columns (roi_align_band_columns,
 * sized from this CPU's L2 cache), band after band, and within a band in the order of their
 * first sampled row (downwards in even bands, upwards in odd ones, so that the next band starts
 * where the last one ended). Consecutive RoIs of the image-block loop then read nearby pixels
 * of the block, which is larger than the L2 cache: the pixels in use stay in it (measured on
 * the box head, against rows alone: see docs/performance-history.md). Every output is computed on its
 * own, so the order changes no result; the backward keeps RoI order, which is the order of its
 * additions. Left unsorted when the keys' memory cannot be had. PYROI_OK, or
 * PYROI_E_CANCELLED by the call's token (the plan is then freed). */
static pyroi_status PYROI_TYPED(roi_align_plan_order_by_rows)(
    PYROI_TYPED(roi_align_plan) *plan)
{
    int64_t *keys, k, band_columns;
    pyroi_status status;
    if (plan->num_rois < 2 || (uint64_t)plan->num_rois > SIZE_MAX / sizeof(int64_t)) {
        return PYROI_OK;
    }
    keys = (int64_t *)malloc((size_t)plan->num_rois * sizeof(int64_t));
    if (keys == NULL) {
        return PYROI_OK;
    }
    band_columns = PYROI_TYPED(roi_align_band_columns)(plan, plan->width,
                                                       (double)PYROI_LANE_BYTES,
                                                       pyroi_cpu_l2_bytes());
    for (k = 0; k < plan->num_rois; ++k) {
        const PYROI_TYPED(axis_tap) *taps = plan->taps + plan->first_tap[k];
        const int64_t first_row = plan->row_taps[k] > 0 ? taps[0].lo : 0;
        const int64_t first_col =
            plan->col_taps[k] > 0 && plan->row_taps[k] > 0 ? taps[plan->row_taps[k]].lo : 0;
        const int64_t band = first_col / band_columns;
        keys[k] = band * (plan->height + 1) +
                  (band % 2 == 0 ? first_row : plan->height - first_row);
    }
    status = pyroi_rois_sort_groups(&plan->rois, keys);
    free(keys);
    if (status != PYROI_OK) {
        PYROI_TYPED(roi_align_plan_free)(plan);
    }
    return status;
}

/* The pixels the forward's image order gathers when its RoIs read a part of their image
 * (roi_align_footprint_build): per image with RoIs, rectangles of rows x columns, run after
 * run in row order. */
typedef struct PYROI_TYPED(roi_align_footprint) {
    int64_t *runs;        /* 4 per run: row_begin, row_end, col_begin, col_end */
    int64_t *group_first; /* group g (plan->rois): runs [group_first[g], group_first[g + 1]) */
    int64_t count;        /* runs */
    double lines;         /* 64-byte lines of one channel plane the runs touch */
} PYROI_TYPED(roi_align_footprint);

static void PYROI_TYPED(roi_align_footprint_free)(PYROI_TYPED(roi_align_footprint) *footprint)
{
    free(footprint->runs);
    free(footprint->group_first);
    footprint->runs = footprint->group_first = NULL;
}

/* Appends the run rows [row, row + 1) x columns [begin, end) to the footprint, or extends the
 * last run down by a row when it ends above this row and spans the same columns (whole rows
 * then gather in one long run). 0 when memory ran out. */
static int PYROI_TYPED(roi_align_footprint_add)(PYROI_TYPED(roi_align_footprint) *footprint,
                                                int64_t *capacity, int64_t row, int64_t begin,
                                                int64_t end, int64_t width)
{
    const int64_t line = PYROI_LANES; /* elements of a 64-byte line */
    int64_t *run;
    footprint->lines += (double)((row * width + end - 1) / line - (row * width + begin) / line + 1);
    if (footprint->count > 0) {
        run = footprint->runs + 4 * (footprint->count - 1);
        if (run[1] == row && run[2] == begin && run[3] == end) {
            run[1] = row + 1;
            return 1;
        }
    }
    if (footprint->count == *capacity) {
        const int64_t more = *capacity > 0 ? 2 * *capacity : 256;
        int64_t *runs;
        if ((uint64_t)more > SIZE_MAX / 4 / sizeof(int64_t)) {
            return 0;
        }
        runs = (int64_t *)realloc(footprint->runs, (size_t)more * 4 * sizeof(int64_t));
        if (runs == NULL) {
            return 0;
        }
        footprint->runs = runs;
        *capacity = more;
    }
    run = footprint->runs + 4 * footprint->count++;
    run[0] = row;
    run[1] = row + 1;
    run[2] = begin;
    run[3] = end;
    return 1;
}

/* Builds the footprint of the plan's RoIs: in each row of an image, the union of the column
 * extents of the image's RoIs that tap that row (roi_align_next_tap_rows), gaps narrower than
 * a line bridged (they cost no more lines and save a run). Every pixel a sample of the RoIs
 * taps is in it. 0 (and nothing to free) when memory runs out or the call is cancelled: the
 * image order then gathers whole images. */
static int PYROI_TYPED(roi_align_footprint_build)(const PYROI_TYPED(roi_align_plan) *plan,
                                                  PYROI_TYPED(roi_align_footprint) *footprint,
                                                  pyroi_cancel *cancel)
{
    const int64_t height = plan->height, width = plan->width, groups = plan->rois.num_groups;
    const int64_t gap = PYROI_LANES;
    int64_t *cover, capacity = 0, g, i, h, w;
    footprint->runs = NULL;
    footprint->count = 0;
    footprint->lines = 0.0;
    if ((uint64_t)height > SIZE_MAX / sizeof(int64_t) / (uint64_t)(width + 1) ||
        (uint64_t)groups > SIZE_MAX / sizeof(int64_t) - 1) {
        return 0;
    }
    /* per row, the change of the number of RoIs covering each column */
    cover = (int64_t *)calloc((size_t)(height * (width + 1)), sizeof(int64_t));
    footprint->group_first = (int64_t *)malloc((size_t)(groups + 1) * sizeof(int64_t));
    if (cover == NULL || footprint->group_first == NULL) {
        free(cover);
        PYROI_TYPED(roi_align_footprint_free)(footprint);
        return 0;
    }
    for (g = 0; g < groups; ++g) {
        footprint->group_first[g] = footprint->count;
        if (pyroi_cancel_requested(cancel)) {
            break;
        }
        for (i = plan->rois.group_start[g]; i < plan->rois.group_start[g + 1]; ++i) {
            const int64_t k = plan->rois.order[i];
            int64_t row_begin, row_end, col_begin, col_end, next = 0;
            PYROI_TYPED(roi_align_roi_extent)(plan, k, &row_begin, &row_end, &col_begin,
                                              &col_end);
            while (col_end > col_begin &&
                   PYROI_TYPED(roi_align_next_tap_rows)(plan, k, &next, &row_begin, &row_end)) {
                for (h = row_begin; h < row_end; ++h) {
                    ++cover[h * (width + 1) + col_begin];
                    --cover[h * (width + 1) + col_end];
                }
            }
        }
        for (h = 0; h < height; ++h) {
            int64_t *row = cover + h * (width + 1);
            int64_t depth = 0, begin = -1, end = -1;
            for (w = 0; w <= width; ++w) {
                const int64_t change = row[w];
                row[w] = 0; /* left zero for the next image */
                if (change == 0) {
                    continue;
                }
                if (depth == 0 && depth + change > 0) { /* a covered span starts */
                    if (begin >= 0 && w - end >= gap) {
                        if (!PYROI_TYPED(roi_align_footprint_add)(footprint, &capacity, h, begin,
                                                                  end, width)) {
                            free(cover);
                            PYROI_TYPED(roi_align_footprint_free)(footprint);
                            return 0;
                        }
                        begin = -1;
                    }
                    begin = begin < 0 ? w : begin;
                }
                depth += change;
                if (depth == 0) {
                    end = w;
                }
            }
            if (begin >= 0 && !PYROI_TYPED(roi_align_footprint_add)(footprint, &capacity, h,
                                                                    begin, end, width)) {
                free(cover);
                PYROI_TYPED(roi_align_footprint_free)(footprint);
                return 0;
            }
        }
    }
    free(cover);
    if (g < groups) { /* cancelled */
        PYROI_TYPED(roi_align_footprint_free)(footprint);
        return 0;
    }
    footprint->group_first[groups] = footprint->count;
    return 1;
}

/* Everything a worker needs. */
typedef struct PYROI_TYPED(roi_align_job) {
    const T *features; /* input (forward) or grad_output (backward) */
    /* the forward of a float16 call (roi_align_f16.c): its float16 input, read instead of features
     * (the lane-major orders' gathers widen it), and output, written instead of result (the
     * bin tiles' store rounds into it); NULL otherwise */
    const uint16_t *half_features;
    uint16_t *half_result;
    const int64_t *features_strides;
    const int64_t *batch_indices;
    T *result; /* output (forward) or grad_input (backward) */
    const int64_t *result_strides;
    const int64_t *map_shape; /* N, C, H, W of the input */
    const pyroi_roi_align_params *params;
    const PYROI_TYPED(roi_align_plan) *plan;
    pyroi_call_cancel *poll; /* the plan's copy's clock: the calling thread's stages poll it */
    T *scratch; /* blocked path: one channels-last block map per worker */
    int64_t pair; /* channel blocks per work item of the image order, their lane groups
                   * interleaved per pixel: 1, or 2 (the avg forward) */
    int stream_result; /* forward: write the output with streaming stores */
    int stream_half; /* backward: round a float16 grad_input out with streaming stores */
    int64_t scratch_stride; /* elements per worker */
    roi_align_arena *arena; /* caller's workspace for the scratch, or NULL: malloc */
    const int64_t *rows; /* avg mode: the output (forward) or grad_output (backward) row of
                          * RoI k is rows[k]; NULL: row k (roi_align_rows.h) */
    /* the forward's image order: the pixels each item gathers; NULL: whole images */
    const PYROI_TYPED(roi_align_footprint) *footprint;
    /* the avg forward's tile order: the RoIs' tiles (roi_align_tiles_template.h) */
    const struct PYROI_TYPED(roi_align_tiles) *tiles;
} PYROI_TYPED(roi_align_job);

/* The output (forward) or grad_output (backward) row of RoI k. */
static inline int64_t PYROI_TYPED(roi_align_row)(const PYROI_TYPED(roi_align_job) *job, int64_t k)
{
    return job->rows != NULL ? job->rows[k] : k;
}

/* The plan of a call, built in arena (NULL: malloc): the copy of the RoIs (their batch
 * indices checked), then the tap tables (an average's merged when average and
 * params->merge_samples: max modes take one sample's value, nothing to merge). A call that
 * writes nothing (writes_nothing: a forward without RoIs or channels, a backward into an empty
 * grad_input) only checks the batch indices and boxes (each read once, deciding nothing but
 * the status) and leaves *planned 0. On success with *planned 1 the caller frees the plan. */
static pyroi_status PYROI_TYPED(roi_align_call_plan)(
    PYROI_TYPED(roi_align_plan) *plan, int writes_nothing, const T *boxes, int64_t num_rois,
    int64_t box_row_stride, const int64_t *batch_indices, const int64_t map_shape[4],
    const pyroi_roi_align_params *params, int average, roi_align_arena *arena, int *planned)
{
    void *copy = NULL; /* NULL: the copy mallocs its own memory */
    pyroi_status status;
    *planned = 0;
    if (writes_nothing) {
        pyroi_call_cancel cancel = pyroi_call_cancel_of(params->cancel);
        int64_t failed_roi;
        status = pyroi_check_rois(boxes, num_rois, box_row_stride, 4, batch_indices,
                                  map_shape[0]);
        return status != PYROI_OK ? status
                                  : PYROI_TYPED(roi_align_check_boxes)(
                                        boxes, num_rois, box_row_stride, map_shape[2],
                                        map_shape[3], params, &cancel, NULL, NULL,
                                        &failed_roi);
    }
    if (arena != NULL) {
        const size_t copy_bytes = pyroi_rois_bytes(num_rois, 4, sizeof(T));
        copy = copy_bytes > 0 ? roi_align_arena_alloc(arena, copy_bytes) : NULL;
        if (copy == NULL) {
            return PYROI_E_NO_MEMORY;
        }
    }
    status = pyroi_rois_copy(&plan->rois, boxes, sizeof(T), num_rois, box_row_stride, 4,
                             batch_indices, map_shape[0], copy, params->cancel);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(roi_align_plan_build_in)(plan, map_shape[2], map_shape[3], params,
                                                  average && params->merge_samples, arena);
    *planned = status == PYROI_OK;
    if (!*planned) {
        pyroi_rois_free(&plan->rois);
    }
    return status;
}

/* A job of a call that reads features and writes result over the map of map_shape (see the
 * fields); the loop order's fields are set by roi_align_execute. */
static void PYROI_TYPED(roi_align_job_init)(
    PYROI_TYPED(roi_align_job) *job, const T *features, const int64_t features_strides[4],
    T *result, const int64_t result_strides[4],
    const int64_t map_shape[4], const pyroi_roi_align_params *params,
    PYROI_TYPED(roi_align_plan) *plan, roi_align_arena *arena)
{
    job->features = features;
    job->half_features = NULL;
    job->half_result = NULL;
    job->features_strides = features_strides;
    job->batch_indices = plan->rois.batch_indices;
    job->result = result;
    job->result_strides = result_strides;
    job->map_shape = map_shape;
    job->params = params;
    job->plan = plan;
    job->poll = &plan->rois.cancel;
    job->arena = arena;
    job->rows = NULL;
    job->footprint = NULL;
    job->tiles = NULL;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_find_invalid_roi)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
    const pyroi_roi_align_params *params, int64_t *failed_roi)
{
    const pyroi_status status = pyroi_find_invalid_batch_index(
        pyroi_check_roi_align_params(params), boxes, num_rois, box_row_stride, 4, batch_indices,
        num_images, height, width, failed_roi);
    if (status != PYROI_OK) {
        return status;
    }
    pyroi_call_cancel cancel = pyroi_call_cancel_of(params->cancel); /* params checked */
    return PYROI_TYPED(roi_align_check_boxes)(boxes, num_rois, box_row_stride, height, width,
                                              params, &cancel, NULL, NULL, failed_roi);
}
