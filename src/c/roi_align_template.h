/* roi_align_template.h - RoIAlign (average) kernels, included by roi_align.c once per dtype
 * with T and PYROI_TYPED(name) defined. Semantics: docs/semantics.md §3; every output (and
 * every input-gradient pixel) is accumulated in torchvision's order, so results match it bit
 * for bit whichever loop order or thread count computes them.
 *
 * A call first builds a plan: the per-axis tap tables of every RoI (sampling.h), built once
 * and shared read-only by the workers. Two loop orders then consume it:
 *  - direct: RoI by RoI reading the input planes in place; best when the RoIs touch little
 *    of the feature map (few or small boxes);
 *  - blocked: for each (image, block of channels) the block is first copied channels-last
 *    into a small scratch map (lanes of one cache line), then every RoI of that image is
 *    sampled from it with the channel lanes as the vector axis. The input is read from
 *    memory once instead of once per RoI, and the inner loop is unit-stride and branch-free.
 * The max reductions (mmcv's and ONNX's, at the end of this file) use the same plan, schedule
 * and block loops (roi_align_forward_image_items / _region_items) with their own per-RoI
 * kernel; the reduction is a constant of each task, so every task keeps its own vector loop.
 */

typedef PYROI_TYPED(pyroi_sample_axis) PYROI_TYPED(sample_axis);
typedef PYROI_TYPED(pyroi_axis_tap) PYROI_TYPED(axis_tap);

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

/* The row and column sampling grids of one RoI (box = x1, y1, x2, y2). */
static pyroi_status PYROI_TYPED(roi_align_axes)(const T *box, const pyroi_roi_align_params *params,
                                                int64_t height, int64_t width,
                                                PYROI_TYPED(sample_axis) *rows,
                                                PYROI_TYPED(sample_axis) *cols)
{
    /* aligned: half-pixel shift; legacy: no shift but sizes forced to >= 1 */
    const T offset = params->aligned ? (T)0.5 : (T)0;
    const int min_size_one = !params->aligned;
    pyroi_status status = PYROI_TYPED(pyroi_sample_axis_from_edges)(
        box[1], box[3], params->spatial_scale_h, offset, min_size_one, params->pooled_height,
        params->sampling_ratio, height, rows);
    if (status != PYROI_OK) {
        return status;
    }
    return PYROI_TYPED(pyroi_sample_axis_from_edges)(
        box[0], box[2], params->spatial_scale_w, offset, min_size_one, params->pooled_width,
        params->sampling_ratio, width, cols);
}

/* Checks every box (finite, grid not too large). With row_taps/col_taps non-NULL also
 * records each RoI's in-map sample count per axis. On failure *failed_roi is the index of
 * the offending RoI. */
static pyroi_status PYROI_TYPED(roi_align_check_boxes)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride, int64_t height, int64_t width,
    const pyroi_roi_align_params *params, int64_t *row_taps, int64_t *col_taps,
    int64_t *failed_roi)
{
    int64_t k;
    *failed_roi = -1;
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(sample_axis) rows, cols;
        pyroi_status status = PYROI_TYPED(roi_align_axes)(boxes + k * box_row_stride, params,
                                                          height, width, &rows, &cols);
        if (pyroi_cancel_at(params->cancel, k)) {
            return PYROI_E_CANCELLED;
        }
        if (status != PYROI_OK) {
            *failed_roi = k;
            return status;
        }
        if (row_taps != NULL) {
            row_taps[k] = PYROI_TYPED(pyroi_axis_tap_count)(&rows);
            col_taps[k] = PYROI_TYPED(pyroi_axis_tap_count)(&cols);
        }
    }
    return PYROI_OK;
}

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
    return tables;
}

/* Validates the boxes of the plan's copy of the RoIs (plan->rois, batch indices checked) and
 * builds the rest of the plan from that copy; its memory comes from arena (a caller's
 * workspace) or, when arena is NULL, from malloc. */
static pyroi_status PYROI_TYPED(roi_align_plan_build_in)(
    PYROI_TYPED(roi_align_plan) *plan, int64_t height, int64_t width,
    const pyroi_roi_align_params *params, roi_align_arena *arena)
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
                                                params, plan->row_taps, plan->col_taps,
                                                &failed_roi);
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
        if (pyroi_cancel_at(params->cancel, k)) {
            PYROI_TYPED(roi_align_plan_free)(plan);
            return PYROI_E_CANCELLED;
        }
        (void)PYROI_TYPED(roi_align_axes)(boxes + k * box_row_stride, params, height, width,
                                          &rows, &cols);
        PYROI_TYPED(pyroi_axis_tap_table)(&rows, ranges, taps);
        PYROI_TYPED(pyroi_axis_tap_table)(&cols, ranges + params->pooled_height,
                                          taps + plan->row_taps[k]);
        plan->samples[k] = rows.grid * cols.grid;
    }
    plan->region_pixels = 0;
    for (k = 0; k < num_rois; ++k) {
        plan->region_pixels += PYROI_TYPED(roi_align_region_pixels)(plan, k);
        if (pyroi_cancel_at(params->cancel, k)) {
            PYROI_TYPED(roi_align_plan_free)(plan);
            return PYROI_E_CANCELLED;
        }
    }
    status = pyroi_rois_group_by_image(&plan->rois, params->cancel);
    if (status != PYROI_OK) {
        PYROI_TYPED(roi_align_plan_free)(plan);
    }
    return status;
}

/* Forward only: within each image, the RoIs in the order of their first sampled row, so
 * that consecutive RoIs of the image-block loop read nearby rows of the block (which is larger
 * than the L2 cache; measured on the box head: 7% faster). Every output is computed on its
 * own, so the order changes no result; the backward keeps RoI order, which is the order of
 * its additions. Left unsorted when the keys' memory cannot be had. PYROI_OK, or
 * PYROI_E_CANCELLED by the call's token (the plan is then freed). */
static pyroi_status PYROI_TYPED(roi_align_plan_order_by_rows)(PYROI_TYPED(roi_align_plan) *plan,
                                                               pyroi_cancel *cancel)
{
    int64_t *first_rows, k;
    pyroi_status status;
    if (plan->num_rois < 2 || (uint64_t)plan->num_rois > SIZE_MAX / sizeof(int64_t)) {
        return PYROI_OK;
    }
    first_rows = (int64_t *)malloc((size_t)plan->num_rois * sizeof(int64_t));
    if (first_rows == NULL) {
        return PYROI_OK;
    }
    for (k = 0; k < plan->num_rois; ++k) {
        first_rows[k] = plan->row_taps[k] > 0 ? plan->taps[plan->first_tap[k]].lo : 0;
    }
    status = pyroi_rois_sort_groups(&plan->rois, first_rows, cancel);
    free(first_rows);
    if (status != PYROI_OK) {
        PYROI_TYPED(roi_align_plan_free)(plan);
    }
    return status;
}

/* Everything a worker needs. */
typedef struct PYROI_TYPED(roi_align_job) {
    const T *features; /* input (forward) or grad_output (backward) */
    const int64_t *features_strides;
    const int64_t *batch_indices;
    T *result; /* output (forward) or grad_input (backward) */
    const int64_t *result_strides;
    const int64_t *map_shape; /* N, C, H, W of the input */
    const pyroi_roi_align_params *params;
    const PYROI_TYPED(roi_align_plan) *plan;
    T *scratch; /* blocked path: one channels-last block map per worker */
    int64_t pair; /* channel blocks per work item of the image order, their lane groups
                   * interleaved per pixel: 1, or 2 (the avg forward) */
    int stream_result; /* forward: write the output with streaming stores */
    int64_t scratch_stride; /* elements per worker */
    roi_align_arena *arena; /* caller's workspace for the scratch, or NULL: malloc */
} PYROI_TYPED(roi_align_job);

/* The plan of a call, built in arena (NULL: malloc): the copy of the RoIs (their batch
 * indices checked), then the tap tables. A call that writes nothing (writes_nothing: a forward
 * without RoIs or channels, a backward into an empty grad_input) only checks the batch
 * indices and boxes (each read once, deciding nothing but the status) and leaves *planned 0.
 * On success with *planned 1 the caller frees the plan. */
static pyroi_status PYROI_TYPED(roi_align_call_plan)(
    PYROI_TYPED(roi_align_plan) *plan, int writes_nothing, const T *boxes, int64_t num_rois,
    int64_t box_row_stride, const int64_t *batch_indices, const int64_t map_shape[4],
    const pyroi_roi_align_params *params, roi_align_arena *arena, int *planned)
{
    void *copy = NULL; /* NULL: the copy mallocs its own memory */
    pyroi_status status;
    *planned = 0;
    if (writes_nothing) {
        int64_t failed_roi;
        status = pyroi_check_rois(boxes, num_rois, box_row_stride, 4, batch_indices,
                                  map_shape[0]);
        return status != PYROI_OK ? status
                                  : PYROI_TYPED(roi_align_check_boxes)(
                                        boxes, num_rois, box_row_stride, map_shape[2],
                                        map_shape[3], params, NULL, NULL, &failed_roi);
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
                                                  arena);
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
    const PYROI_TYPED(roi_align_plan) *plan, roi_align_arena *arena)
{
    job->features = features;
    job->features_strides = features_strides;
    job->batch_indices = plan->rois.batch_indices;
    job->result = result;
    job->result_strides = result_strides;
    job->map_shape = map_shape;
    job->params = params;
    job->plan = plan;
    job->arena = arena;
}

/* ---- direct loop order ------------------------------------------------------------------ */

/* Forward for RoIs [begin, end): every channel and bin of each, reading the input in place. */
static void PYROI_TYPED(roi_align_forward_direct_task)(void *context, int64_t begin,
                                                       int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_job) *job = (const PYROI_TYPED(roi_align_job) *)context;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *in_strides = job->features_strides, *out_strides = job->result_strides;
    const int64_t row_stride = in_strides[2], col_stride = in_strides[3];
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    int64_t k, c, ph, pw;
    (void)worker;

    for (k = begin; k < end; ++k) {
        const PYROI_TYPED(roi_align_tap_tables) tables =
            PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
        /* empty grid: output 0, not NaN */
        const T count = (T)(plan->samples[k] > 1 ? plan->samples[k] : 1);
        for (c = 0; c < job->map_shape[1]; ++c) {
            const T *plane = job->features + job->batch_indices[k] * in_strides[0] +
                             c * in_strides[1];
            T *out = job->result + k * out_strides[0] + c * out_strides[1];
            for (ph = 0; ph < pooled_height; ++ph) {
                for (pw = 0; pw < pooled_width; ++pw) {
                    const T sum = PYROI_TYPED(pyroi_bilinear_bin_sum)(
                        plane, row_stride, col_stride, tables.row_taps, tables.row_ranges[ph],
                        tables.col_taps, tables.col_ranges[pw]);
                    out[ph * out_strides[2] + pw * out_strides[3]] = sum / count;
                }
            }
        }
    }
}

/* Backward for input channels [begin, end): zeroes those planes of every image, then adds
 * each RoI's contributions in torchvision's order (RoI, bin, sample, tap). */
static void PYROI_TYPED(roi_align_backward_direct_task)(void *context, int64_t begin,
                                                        int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_job) *job = (const PYROI_TYPED(roi_align_job) *)context;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *go_strides = job->features_strides, *gi_strides = job->result_strides;
    const int64_t *shape = job->map_shape;
    const int64_t row_stride = gi_strides[2], col_stride = gi_strides[3];
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    int64_t n, k, c, h, w, ph, pw;
    (void)worker;

    for (n = 0; n < shape[0]; ++n) {
        for (c = begin; c < end; ++c) {
            T *plane = job->result + n * gi_strides[0] + c * gi_strides[1];
            for (h = 0; h < shape[2]; ++h) {
                for (w = 0; w < shape[3]; ++w) {
                    plane[h * row_stride + w * col_stride] = (T)0;
                }
            }
        }
    }
    for (k = 0; k < plan->num_rois; ++k) {
        const PYROI_TYPED(roi_align_tap_tables) tables =
            PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
        /* unclamped: an empty grid has no taps, so nothing divides by it */
        const T count = (T)plan->samples[k];
        if (k % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
            break; /* an item (channel) holds every RoI */
        }
        for (c = begin; c < end; ++c) {
            T *plane = job->result + job->batch_indices[k] * gi_strides[0] + c * gi_strides[1];
            const T *grad = job->features + k * go_strides[0] + c * go_strides[1];
            for (ph = 0; ph < pooled_height; ++ph) {
                for (pw = 0; pw < pooled_width; ++pw) {
                    PYROI_TYPED(pyroi_bilinear_bin_scatter)(
                        plane, row_stride, col_stride, tables.row_taps, tables.row_ranges[ph],
                        tables.col_taps, tables.col_ranges[pw],
                        grad[ph * go_strides[2] + pw * go_strides[3]], count);
                }
            }
        }
    }
}

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

/* Forward of RoI k on the first `pair` (1 or 2, a constant at each call) lane groups of a
 * block holding `groups` (>= pair) lane groups per pixel, interleaved: tile[ph][pw][lane] =
 * the bin averages, the second lane group's tile tile_elements after the first. A pair shares
 * each sample's taps and weights between 32 float channels: more arithmetic per tap load and
 * weight product (measured: 15% fewer cycles per sample), and a pixel's two lines are
 * neighbours. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_forward_roi)(
    const PYROI_TYPED(roi_align_plan) *plan, int64_t k, const T *block, int64_t pair,
    int64_t groups, int64_t width, int64_t pooled_height, int64_t pooled_width, T *tile,
    int64_t tile_elements)
{
    typedef PYROI_TYPED(roi_align_lanes) V;
    const PYROI_TYPED(roi_align_tap_tables) tables =
        PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
    const int64_t samples = plan->samples[k] > 1 ? plan->samples[k] : 1; /* empty: 0, not NaN */
    const T count = (T)samples;
    const T inverse = PYROI_TYPED(pyroi_exact_inverse)(samples);
    const V *lanes = (const V *)block;
    /* in vectors: a pixel's lane groups, and the tiles (whole lane groups apart) */
    const int64_t pixel = groups * PYROI_VECTORS;
    const int64_t next_tile = tile_elements / (PYROI_LANES / PYROI_VECTORS);
    V *result_lanes = (V *)tile;
    int64_t ph, pw, r, q, b, j;

    for (ph = 0; ph < pooled_height; ++ph) {
        const pyroi_tap_range rr = tables.row_ranges[ph];
        for (pw = 0; pw < pooled_width; ++pw) {
            const pyroi_tap_range cr = tables.col_ranges[pw];
            V sum[2][PYROI_VECTORS];
            V *result = result_lanes + (ph * pooled_width + pw) * PYROI_VECTORS;
            for (b = 0; b < pair; ++b) {
                for (j = 0; j < PYROI_VECTORS; ++j) {
                    sum[b][j] = (V){0};
                }
            }
            for (r = rr.begin; r < rr.end; ++r) {
                const PYROI_TYPED(axis_tap) ty = tables.row_taps[r];
                const V *row_lo = lanes + ty.lo * width * pixel;
                const V *row_hi = lanes + ty.hi * width * pixel;
                for (q = cr.begin; q < cr.end; ++q) {
                    const PYROI_TYPED(axis_tap) tx = tables.col_taps[q];
                    const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
                    const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
                    for (b = 0; b < pair; ++b) {
                        const V *p1 = row_lo + tx.lo * pixel + b * PYROI_VECTORS;
                        const V *p2 = row_lo + tx.hi * pixel + b * PYROI_VECTORS;
                        const V *p3 = row_hi + tx.lo * pixel + b * PYROI_VECTORS;
                        const V *p4 = row_hi + tx.hi * pixel + b * PYROI_VECTORS;
                        /* each lane is one channel, evaluated exactly as the scalar loop */
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            sum[b][j] += w1 * p1[j] + w2 * p2[j] + w3 * p3[j] + w4 * p4[j];
                        }
                    }
                }
            }
            for (b = 0; b < pair; ++b) {
                if (inverse != (T)0) { /* exact: see pyroi_exact_inverse */
                    for (j = 0; j < PYROI_VECTORS; ++j) {
                        result[b * next_tile + j] = sum[b][j] * inverse;
                    }
                } else {
                    for (j = 0; j < PYROI_VECTORS; ++j) {
                        result[b * next_tile + j] = sum[b][j] / count;
                    }
                }
            }
        }
    }
}

/* Backward of RoI k on a block: adds the contributions of the output gradients in
 * tile[ph][pw][lane] to the block, in torchvision's order (bin, sample, tap). Each bin also
 * prefetches a cache line of next[0, next_elements): the next RoI's gradients when they are
 * packed (a block's bins then span at most one line per bin). Spread over the bins, the
 * prefetches take effect; issued together before the RoI, most were dropped and its gather
 * waited on memory (measured: box head backward 34 -> 28 ms). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_backward_roi)(const PYROI_TYPED(roi_align_plan) *plan,
                                                       int64_t k, T *block, int64_t width,
                                                       int64_t pooled_height,
                                                       int64_t pooled_width, const T *tile,
                                                       const T *next, int64_t next_elements)
{
    const PYROI_TYPED(roi_align_tap_tables) tables =
        PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
    const T count = (T)plan->samples[k]; /* unclamped: an empty grid has no taps */
    const T inverse = PYROI_TYPED(pyroi_exact_inverse)(plan->samples[k]);
    typedef PYROI_TYPED(roi_align_lanes) V;
    V *lanes = (V *)block;
    const V *grad_lanes = (const V *)tile;
    int64_t ph, pw, r, q, j;

    for (ph = 0; ph < pooled_height; ++ph) {
        const pyroi_tap_range rr = tables.row_ranges[ph];
        for (pw = 0; pw < pooled_width; ++pw) {
            const pyroi_tap_range cr = tables.col_ranges[pw];
            /* a local copy: the compiler can see the block writes do not alter it */
            V g[PYROI_VECTORS];
            for (j = 0; j < PYROI_VECTORS; ++j) {
                g[j] = grad_lanes[(ph * pooled_width + pw) * PYROI_VECTORS + j];
            }
            {
                const int64_t line = (ph * pooled_width + pw) * PYROI_LANES;
                PYROI_PREFETCH(next + (line < next_elements ? line : 0));
            }
            for (r = rr.begin; r < rr.end; ++r) {
                const PYROI_TYPED(axis_tap) ty = tables.row_taps[r];
                V *row_lo = lanes + ty.lo * width * PYROI_VECTORS;
                V *row_hi = lanes + ty.hi * width * PYROI_VECTORS;
                for (q = cr.begin; q < cr.end; ++q) {
                    const PYROI_TYPED(axis_tap) tx = tables.col_taps[q];
                    const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
                    const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
                    V *p1 = row_lo + tx.lo * PYROI_VECTORS;
                    V *p2 = row_lo + tx.hi * PYROI_VECTORS;
                    V *p3 = row_hi + tx.lo * PYROI_VECTORS;
                    V *p4 = row_hi + tx.hi * PYROI_VECTORS;
                    /* four separate passes: the taps may coincide at the border, and
                     * torchvision adds them one after the other, (g * w) / count each */
                    if (inverse != (T)0) { /* exact: see pyroi_exact_inverse */
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            p1[j] += g[j] * w1 * inverse;
                        }
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            p2[j] += g[j] * w2 * inverse;
                        }
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            p3[j] += g[j] * w3 * inverse;
                        }
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            p4[j] += g[j] * w4 * inverse;
                        }
                    } else {
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            p1[j] += g[j] * w1 / count;
                        }
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            p2[j] += g[j] * w2 / count;
                        }
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            p3[j] += g[j] * w3 / count;
                        }
                        for (j = 0; j < PYROI_VECTORS; ++j) {
                            p4[j] += g[j] * w4 / count;
                        }
                    }
                }
            }
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
    const T *corner = job->features + n * job->features_strides[0];
    int64_t j;
    for (j = 0; j < PYROI_LANES; ++j) {
        zero[j] = j < lanes ? (T)0 * corner[(c0 + j) * job->features_strides[1]] : (T)0;
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
    const int64_t *out_strides = job->result_strides;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t tile_elements = PYROI_TYPED(roi_align_tile_elements)(job);
    int64_t b;
    if (reduction == ROI_ALIGN_REDUCE_ONNX_MAX) {
        PYROI_TYPED(roi_align_onnx_max_roi)(max_job, k, c0, channels, block, zero, tile);
    } else if (reduction == ROI_ALIGN_REDUCE_MAX) {
        PYROI_TYPED(roi_align_max_roi)(max_job, k, c0, channels, block, tile);
    } else if (channels > PYROI_LANES) { /* the lane group counts are constants of each copy */
        PYROI_TYPED(roi_align_forward_roi)(job->plan, k, block, 2, 2, job->map_shape[3],
                                           pooled_height, pooled_width, tile, tile_elements);
    } else if (job->pair == 1) {
        PYROI_TYPED(roi_align_forward_roi)(job->plan, k, block, 1, 1, job->map_shape[3],
                                           pooled_height, pooled_width, tile, tile_elements);
    } else { /* the last channel block alone, in a pair's layout */
        PYROI_TYPED(roi_align_forward_roi)(job->plan, k, block, 1, 2, job->map_shape[3],
                                           pooled_height, pooled_width, tile, tile_elements);
    }
    for (b = 0; b * PYROI_LANES < channels; ++b) {
        const int64_t c = c0 + b * PYROI_LANES;
        PYROI_TYPED(roi_align_tile_to_bins)(
            tile + b * tile_elements, channels - b * PYROI_LANES < PYROI_LANES
                                          ? channels - b * PYROI_LANES
                                          : PYROI_LANES,
            pooled_height, pooled_width, job->result + k * out_strides[0] + c * out_strides[1],
            out_strides, staging);
    }
}

/* Forward, work item = (image, channel block or pair of blocks). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_forward_image_items)(
    const PYROI_TYPED(roi_align_job) *job, const struct PYROI_TYPED(roi_align_max_job) *max_job,
    enum roi_align_reduction reduction, int64_t begin, int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *shape = job->map_shape;
    T *block = job->scratch + worker * job->scratch_stride;
    T *tile = PYROI_TYPED(roi_align_bin_tile)(job, block);
    T *staging = job->stream_result ? PYROI_TYPED(roi_align_staging)(job, block) : NULL;
    T zero[PYROI_LANE_BYTES / sizeof(T)];
    int64_t item, i;

    for (item = begin; item < end; ++item) {
        int64_t c0, lanes;
        const int64_t group = PYROI_TYPED(roi_align_image_item)(job, item, &c0, &lanes);
        const int64_t n = plan->rois.group_image[group];
        const int64_t first = plan->rois.group_start[group];
        const int64_t last = plan->rois.group_start[group + 1];
        PYROI_TYPED(roi_align_region_to_block)(job->features, job->features_strides,
                                               shape[3], n, c0, lanes, 0, shape[2], 0,
                                               shape[3], block, job->pair * PYROI_LANES);
        if (reduction == ROI_ALIGN_REDUCE_ONNX_MAX) {
            PYROI_TYPED(roi_align_onnx_zero_lanes)(job, n, c0, lanes, zero);
        }
        for (i = first; i < last; ++i) {
            if (i % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                break; /* an item can hold every RoI: the call ends at the next chunk */
            }
            if (item + 1 < end) { /* the next block's input, a slice per RoI */
                PYROI_TYPED(roi_align_prefetch_block_slice)(job, item + 1, i - first,
                                                            last - first);
            }
            PYROI_TYPED(roi_align_forward_block_roi)(job, max_job, reduction,
                                                     plan->rois.order[i], c0, lanes, block,
                                                     zero, tile, staging);
        }
    }
    pyroi_stream_fence(); /* the streamed outputs are visible to the caller */
}

/* Forward, work item = RoI: each channel block of the RoI's region is gathered and pooled. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_forward_region_items)(
    const PYROI_TYPED(roi_align_job) *job, const struct PYROI_TYPED(roi_align_max_job) *max_job,
    enum roi_align_reduction reduction, int64_t begin, int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *shape = job->map_shape;
    T *block = job->scratch + worker * job->scratch_stride;
    T *tile = PYROI_TYPED(roi_align_bin_tile)(job, block);
    T *staging = job->stream_result ? PYROI_TYPED(roi_align_staging)(job, block) : NULL;
    T zero[PYROI_LANE_BYTES / sizeof(T)];
    int64_t k, c0;

    for (k = begin; k < end; ++k) {
        int64_t row_begin, row_end, col_begin, col_end;
        PYROI_TYPED(roi_align_roi_extent)(plan, k, &row_begin, &row_end, &col_begin, &col_end);
        for (c0 = 0; c0 < shape[1]; c0 += PYROI_LANES) {
            const int64_t lanes = shape[1] - c0 < PYROI_LANES ? shape[1] - c0 : PYROI_LANES;
            int64_t next = 0;
            /* only the rows the samples tap (measured: 64 boxes of 16-256 px at 1/4 on a
             * 200 x 272 map, 15.2 -> 12.7 ms) */
            while (PYROI_TYPED(roi_align_next_tap_rows)(plan, k, &next, &row_begin, &row_end)) {
                PYROI_TYPED(roi_align_region_to_block)(job->features, job->features_strides,
                                                       shape[3], job->batch_indices[k], c0,
                                                       lanes, row_begin, row_end, col_begin,
                                                       col_end, block, PYROI_LANES);
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

PYROI_VECTOR_CLONES
static void PYROI_TYPED(roi_align_forward_image_task)(void *context, int64_t begin,
                                                      int64_t end, int worker)
{
    PYROI_TYPED(roi_align_forward_image_items)((const PYROI_TYPED(roi_align_job) *)context, NULL,
                                               ROI_ALIGN_REDUCE_AVG, begin, end, worker);
}

PYROI_VECTOR_CLONES
static void PYROI_TYPED(roi_align_forward_region_task)(void *context, int64_t begin,
                                                       int64_t end, int worker)
{
    PYROI_TYPED(roi_align_forward_region_items)((const PYROI_TYPED(roi_align_job) *)context,
                                                NULL, ROI_ALIGN_REDUCE_AVG, begin, end, worker);
}

/* Backward, work item = (image, channel block): the block accumulates the image's
 * gradient from zero, then is written out whole. */
PYROI_VECTOR_CLONES
static void PYROI_TYPED(roi_align_backward_image_task)(void *context, int64_t begin,
                                                       int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_job) *job = (const PYROI_TYPED(roi_align_job) *)context;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *shape = job->map_shape;
    const int64_t *go_strides = job->features_strides;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t blocks = (shape[1] + PYROI_LANES - 1) / PYROI_LANES;
    const int64_t block_elements = shape[2] * shape[3] * PYROI_LANES;
    const int packed_bins = go_strides[3] == 1 && go_strides[2] == pooled_width &&
                            go_strides[1] == pooled_height * pooled_width;
    T *block = job->scratch + worker * job->scratch_stride;
    T *tile = PYROI_TYPED(roi_align_bin_tile)(job, block);
    T *staging = job->stream_result ? PYROI_TYPED(roi_align_staging)(job, block) : NULL;
    int64_t item, i;

    for (i = 0; i < block_elements; ++i) { /* then each item's write-out leaves it zero */
        block[i] = (T)0;
    }
    for (item = begin; item < end; ++item) {
        const int64_t n = item / blocks;
        const int64_t c0 = (item % blocks) * PYROI_LANES;
        const int64_t lanes = shape[1] - c0 < PYROI_LANES ? shape[1] - c0 : PYROI_LANES;
        const int64_t *order = plan->rois.order;
        int64_t first, last;
        pyroi_rois_of_image(&plan->rois, n, &first, &last);
        for (i = first; i < last; ++i) {
            const int64_t k = order[i];
            const T *next = tile;
            int64_t next_elements = 1;
            if (i % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                break; /* the write-out below still leaves the block zero */
            }
            if (i + 1 < last) { /* the next RoI's gradients: start loading */
                next = job->features + order[i + 1] * go_strides[0] + c0 * go_strides[1];
                next_elements = packed_bins ? lanes * pooled_height * pooled_width : 1;
                PYROI_TYPED(roi_align_prefetch_bins)(job->features, go_strides, order[i + 1],
                                                     c0, lanes);
            }
            if (plan->row_taps[k] == 0 || plan->col_taps[k] == 0) {
                continue; /* no sample of this RoI lands in the map */
            }
            PYROI_TYPED(roi_align_bins_to_tile)(job->features + k * go_strides[0] +
                                                    c0 * go_strides[1],
                                                go_strides, lanes, pooled_height, pooled_width,
                                                tile);
            PYROI_TYPED(roi_align_backward_roi)(plan, k, block, shape[3], pooled_height,
                                                pooled_width, tile, next, next_elements);
        }
        PYROI_TYPED(roi_align_block_to_image)(block, shape[2], shape[3], n, c0, lanes,
                                              job->result, job->result_strides, staging);
    }
    pyroi_stream_fence(); /* the streamed gradients are visible to the caller */
}

/* Backward, work item = channel block: the caller's gradient planes are zeroed, then each
 * RoI (in order) loads its region of the current gradient into the block, adds its
 * contributions and stores the region back -- so every pixel sees the same sequence of
 * additions as in torchvision. */
PYROI_VECTOR_CLONES
static void PYROI_TYPED(roi_align_backward_region_task)(void *context, int64_t begin,
                                                        int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_job) *job = (const PYROI_TYPED(roi_align_job) *)context;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *shape = job->map_shape;
    const int64_t *go_strides = job->features_strides, *gi_strides = job->result_strides;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    T *block = job->scratch + worker * job->scratch_stride;
    T *tile = PYROI_TYPED(roi_align_bin_tile)(job, block);
    int64_t item, k, n, c, h, w;

    for (item = begin; item < end; ++item) {
        const int64_t c0 = item * PYROI_LANES;
        const int64_t lanes = shape[1] - c0 < PYROI_LANES ? shape[1] - c0 : PYROI_LANES;
        for (n = 0; n < shape[0]; ++n) {
            for (c = c0; c < c0 + lanes; ++c) {
                T *plane = job->result + n * gi_strides[0] + c * gi_strides[1];
                for (h = 0; h < shape[2]; ++h) {
                    for (w = 0; w < shape[3]; ++w) {
                        plane[h * gi_strides[2] + w * gi_strides[3]] = (T)0;
                    }
                }
            }
        }
        for (k = 0; k < plan->num_rois; ++k) {
            int64_t row_begin, row_end, col_begin, col_end;
            const int64_t n_k = job->batch_indices[k];
            if (k % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                break;
            }
            if (plan->row_taps[k] == 0 || plan->col_taps[k] == 0) {
                continue;
            }
            PYROI_TYPED(roi_align_roi_extent)(plan, k, &row_begin, &row_end, &col_begin,
                                              &col_end);
            PYROI_TYPED(roi_align_region_to_block)(job->result, gi_strides, shape[3], n_k, c0,
                                                   lanes, row_begin, row_end, col_begin,
                                                   col_end, block, PYROI_LANES);
            PYROI_TYPED(roi_align_bins_to_tile)(job->features + k * go_strides[0] +
                                                    c0 * go_strides[1],
                                                go_strides, lanes, pooled_height, pooled_width,
                                                tile);
            PYROI_TYPED(roi_align_backward_roi)(plan, k, block, shape[3], pooled_height,
                                                pooled_width, tile, tile, 1);
            PYROI_TYPED(roi_align_block_to_region)(block, shape[3], n_k, c0, lanes, row_begin,
                                                   row_end, col_begin, col_end, job->result,
                                                   gi_strides);
        }
    }
}

/* ---- driver ----------------------------------------------------------------------------- */

/* Forward outputs from this size on bypass the caches. */
#define PYROI_STREAM_BYTES (8.0 * 1024.0 * 1024.0)

/* Largest lane-major block per worker; bigger feature maps take the direct loop order. */
#define PYROI_BLOCK_SCRATCH_BYTES ((size_t)64 << 20)

/* The avg forward's image order takes channel blocks two at a time, interleaved per pixel
 * (roi_align_forward_roi), when one block is at most this large: the pair then stays near an
 * L2 cache. Measured, 1 thread, against single blocks: adaptive sampling on a 100 x 136 map
 * (870 KB blocks) 16% faster, VGG conv5 (38 x 50) 6% faster; on the 200 x 272 maps of the box
 * and mask heads (3.5 MB blocks) pairs gained nothing or lost up to 7%. */
#define PYROI_PAIR_BLOCK_BYTES ((double)(1 << 20))


/* The loop order of a call: the task, its work items and workers, and the scratch elements
 * per worker (0 for the direct orders). allow_lane_major = 0 forces a direct order. Depends
 * only on the shapes, the params and the plan's num_rois, sampled_taps and region_pixels. */
typedef struct PYROI_TYPED(roi_align_schedule) {
    pyroi_range_task task;
    int64_t items;
    int workers;
    double work_per_item; /* elementary operations per item, an estimate */
    int64_t scratch_stride;
    int64_t pair; /* channel blocks per work item of the image order */
    enum roi_align_order order;
} PYROI_TYPED(roi_align_schedule);

/* allow_pair: the avg forward (the one reduction with a two-block kernel). */
static PYROI_TYPED(roi_align_schedule) PYROI_TYPED(roi_align_plan_schedule)(
    const int64_t shape[4], const pyroi_roi_align_params *params,
    const PYROI_TYPED(roi_align_plan) *plan, int backward, int allow_lane_major,
    int allow_pair)
{
    const int64_t map_pixels = shape[2] * shape[3];
    const int64_t tile_pixels = params->pooled_height * params->pooled_width;
    const int64_t blocks = (shape[1] + PYROI_LANES - 1) / PYROI_LANES;
    /* the images a whole-image order visits: the backward writes every image, the forward
     * gathers only those with RoIs (however large a broadcast batch is) */
    const int64_t images = backward ? shape[0] : plan->rois.num_groups;
    const double map_elements = (double)images * (double)shape[1] * (double)map_pixels;
    const double sampled = plan->sampled_taps * (double)shape[1];
    /* lane-major orders need a block of the whole map per worker */
    const int lane_major = allow_lane_major && map_pixels > 0 && blocks > 0 &&
                           ((double)map_pixels + (double)tile_pixels +
                            (double)PYROI_TYPED(roi_align_staging_pixels)(tile_pixels)) * 64.0 <=
                               (double)PYROI_BLOCK_SCRATCH_BYTES;
    /* gathering whole images pays once the RoIs sample about a quarter of the map's elements,
     * or, forward, once the rows their samples tap hold a quarter of the map's pixels: short
     * row runs from 16 planes gather about 4.6 times slower per pixel than whole images
     * (measured: 64 boxes of 16-256 px at 1/4 on 2 x 200 x 272 maps take 11.1 ms by region,
     * 7.7 by image; 32 boxes 5.1 and 6.7) */
    const int whole_images =
        sampled * 4.0 >= map_elements ||
        (!backward && plan->region_pixels * 4.0 >= (double)images * (double)map_pixels);
    PYROI_TYPED(roi_align_schedule) schedule;
    double work_per_item;

    schedule.scratch_stride = 0;
    schedule.pair = 1;
    if (lane_major && whole_images) {
        if (allow_pair && !backward && blocks > 1 &&
            (double)map_pixels * (double)PYROI_LANE_BYTES <= PYROI_PAIR_BLOCK_BYTES) {
            schedule.pair = 2;
        }
        schedule.items = images * ((blocks + schedule.pair - 1) / schedule.pair);
        work_per_item = (double)PYROI_LANES * (plan->sampled_taps / (double)images +
                                               (double)map_pixels);
        schedule.task = backward ? PYROI_TYPED(roi_align_backward_image_task)
                                 : PYROI_TYPED(roi_align_forward_image_task);
        schedule.order = ROI_ALIGN_ORDER_IMAGE;
    } else if (lane_major && backward) {
        schedule.items = blocks;
        work_per_item = (double)PYROI_LANES * ((double)shape[0] * (double)map_pixels +
                                               plan->sampled_taps);
        schedule.task = PYROI_TYPED(roi_align_backward_region_task);
        schedule.order = ROI_ALIGN_ORDER_REGION;
    } else if (lane_major) {
        schedule.items = plan->num_rois;
        work_per_item = sampled / (double)(plan->num_rois > 0 ? plan->num_rois : 1);
        schedule.task = PYROI_TYPED(roi_align_forward_region_task);
        schedule.order = ROI_ALIGN_ORDER_REGION;
    } else if (backward) {
        schedule.items = shape[1];
        work_per_item = (double)shape[0] * (double)map_pixels + plan->sampled_taps;
        schedule.task = PYROI_TYPED(roi_align_backward_direct_task);
        schedule.order = ROI_ALIGN_ORDER_DIRECT;
    } else {
        schedule.items = plan->num_rois;
        work_per_item = sampled / (double)(plan->num_rois > 0 ? plan->num_rois : 1);
        schedule.task = PYROI_TYPED(roi_align_forward_direct_task);
        schedule.order = ROI_ALIGN_ORDER_DIRECT;
    }
    schedule.workers = pyroi_parallel_workers(params->num_threads, schedule.items,
                                              work_per_item);
    schedule.work_per_item = work_per_item;
    if (lane_major) {
        schedule.scratch_stride =
            (schedule.pair * (map_pixels + tile_pixels) +
             PYROI_TYPED(roi_align_staging_pixels)(tile_pixels)) *
            PYROI_LANES;
    }
    return schedule;
}

/* The schedule of a call whose forward reduction has the given tasks (NULL: avg's). */
static PYROI_TYPED(roi_align_schedule) PYROI_TYPED(roi_align_tasks_schedule)(
    const PYROI_TYPED(roi_align_job) *job, int backward, int allow_lane_major,
    const roi_align_forward_tasks *tasks)
{
    PYROI_TYPED(roi_align_schedule) schedule = PYROI_TYPED(roi_align_plan_schedule)(
        job->map_shape, job->params, job->plan, backward,
        allow_lane_major && (tasks == NULL || tasks->image != NULL), tasks == NULL);
    if (tasks != NULL) {
        schedule.task = schedule.order == ROI_ALIGN_ORDER_IMAGE    ? tasks->image
                        : schedule.order == ROI_ALIGN_ORDER_REGION ? tasks->region
                                                                   : tasks->direct;
    }
    return schedule;
}

/* Runs the forward (backward = 0) or backward over the plan, choosing the loop order; a
 * forward with tasks (non-NULL) runs that reduction's task of the chosen order, with context
 * (a struct that begins with job) as its argument. With a caller's workspace (job->arena), the
 * scratch comes from what is left of it: fewer workers when it holds fewer blocks, the direct
 * order when it holds none (same results). */
static pyroi_status PYROI_TYPED(roi_align_execute_tasks)(PYROI_TYPED(roi_align_job) *job,
                                                         int backward, void *context,
                                                         const roi_align_forward_tasks *tasks)
{
    PYROI_TYPED(roi_align_schedule) schedule =
        PYROI_TYPED(roi_align_tasks_schedule)(job, backward, 1, tasks);
    pyroi_status status;

    job->scratch = NULL;
    job->scratch_stride = schedule.scratch_stride;
    job->pair = schedule.pair;
    /* results larger than the caches are streamed out where a task writes them once */
    job->stream_result =
        (backward ? (double)job->map_shape[0] * (double)job->map_shape[2] *
                        (double)job->map_shape[3]
                  : (double)job->plan->num_rois * (double)job->params->pooled_height *
                        (double)job->params->pooled_width) *
            (double)job->map_shape[1] * (double)sizeof(T) >=
        PYROI_STREAM_BYTES;
    if (schedule.scratch_stride > 0 && job->arena != NULL) {
        const size_t block_bytes = (size_t)schedule.scratch_stride * sizeof(T);
        const size_t fit = roi_align_arena_available(job->arena) / block_bytes;
        if (fit == 0) {
            schedule = PYROI_TYPED(roi_align_tasks_schedule)(job, backward, 0, tasks);
            job->scratch_stride = 0;
            job->pair = schedule.pair;
        } else {
            if ((size_t)schedule.workers > fit) {
                schedule.workers = (int)fit;
            }
            job->scratch = (T *)roi_align_arena_alloc(job->arena,
                                                      (size_t)schedule.workers * block_bytes);
        }
    } else if (schedule.scratch_stride > 0) {
        job->scratch = (T *)pyroi_aligned_malloc((size_t)schedule.workers *
                                                 (size_t)schedule.scratch_stride * sizeof(T));
        if (job->scratch == NULL) {
            return PYROI_E_NO_MEMORY;
        }
    }
    status = pyroi_parallel_for(schedule.workers, schedule.items, schedule.work_per_item,
                                job->params->cancel, schedule.task, context);
    if (job->arena == NULL) {
        pyroi_aligned_free(job->scratch);
    }
    return status;
}

static pyroi_status PYROI_TYPED(roi_align_execute)(PYROI_TYPED(roi_align_job) *job, int backward)
{
    return PYROI_TYPED(roi_align_execute_tasks)(job, backward, job, NULL);
}

pyroi_status PYROI_TYPED(pyroi_roi_align_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params)
{
    PYROI_TYPED(roi_align_job) job;
    PYROI_TYPED(roi_align_plan) plan;
    int planned;
    pyroi_status status = roi_align_check_call(
        input, input_shape, input_strides, PYROI_TENSOR_INPUT, output, output_strides,
        PYROI_TENSOR_OUTPUT, boxes, num_rois, box_row_stride, batch_indices, params);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(roi_align_call_plan)(&plan, num_rois == 0 || input_shape[1] == 0,
                                              boxes, num_rois, box_row_stride, batch_indices,
                                              input_shape, params, NULL, &planned);
    if (!planned) {
        return status;
    }
    status = PYROI_TYPED(roi_align_plan_order_by_rows)(&plan, params->cancel);
    if (status != PYROI_OK) {
        return status;
    }
    input = (const T *)pyroi_data_or_placeholder(input); /* a map without pixels may be NULL */
    PYROI_TYPED(roi_align_job_init)(&job, input, input_strides, output, output_strides,
                                    input_shape, params, &plan, NULL);
    status = PYROI_TYPED(roi_align_execute)(&job, 0);
    PYROI_TYPED(roi_align_plan_free)(&plan);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params)
{
    PYROI_TYPED(roi_align_job) job;
    PYROI_TYPED(roi_align_plan) plan;
    int planned;
    pyroi_status status = roi_align_check_call(
        grad_input, grad_input_shape, grad_input_strides, PYROI_TENSOR_OUTPUT, grad_output,
        grad_output_strides, PYROI_TENSOR_INPUT, boxes, num_rois, box_row_stride, batch_indices,
        params);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(roi_align_call_plan)(&plan, pyroi_shape_is_empty(grad_input_shape),
                                              boxes, num_rois, box_row_stride, batch_indices,
                                              grad_input_shape, params, NULL, &planned);
    if (!planned) {
        return status;
    }
    PYROI_TYPED(roi_align_job_init)(&job, grad_output, grad_output_strides, grad_input,
                                    grad_input_strides, grad_input_shape, params, &plan, NULL);
    status = PYROI_TYPED(roi_align_execute)(&job, 1);
    PYROI_TYPED(roi_align_plan_free)(&plan);
    return status;
}

/* ---- max mode (mmcv's definition) ------------------------------------------------------ */
/* A bin is the largest of its interpolated samples (each formed exactly as in avg mode),
 * visited in row-major sample order: the first largest wins ties and the first NaN wins
 * (NaN propagates). A sample outside the map has the value 0 and no taps, as in mmcv; among
 * those only the first in sample order can ever win, so it stands for all of them. The
 * winner's index iy * grid_w + ix is the bin's argmax; an empty bin gives 0 and argmax -1. */

/* Sample index of the first out-of-map sample of a bin in row-major order, or -1. */
static int64_t PYROI_TYPED(roi_align_first_outside)(pyroi_tap_range rr, pyroi_tap_range cr,
                                                    int64_t grid_h, int64_t grid_w)
{
    const int64_t rows = rr.end - rr.begin, cols = cr.end - cr.begin;
    if (rows == 0 || cols == 0 || rr.first_sample > 0 || cr.first_sample > 0) {
        return 0;
    }
    if (cols < grid_w) {
        return cols; /* row 0, first column past the map */
    }
    if (rows < grid_h) {
        return rows * grid_w; /* first row past the map, column 0 */
    }
    return -1;
}

typedef struct PYROI_TYPED(roi_align_max_state) {
    T best;
    int64_t winner;
} PYROI_TYPED(roi_align_max_state);

static inline void PYROI_TYPED(roi_align_max_offer)(PYROI_TYPED(roi_align_max_state) *state,
                                                    T value, int64_t index)
{
    if (state->winner < 0 || value > state->best ||
        (value != value && state->best == state->best)) {
        state->best = value;
        state->winner = index;
    }
}

static T PYROI_TYPED(roi_align_max_bin)(const T *plane, int64_t row_stride, int64_t col_stride,
                                        const PYROI_TYPED(axis_tap) *row_taps,
                                        pyroi_tap_range rr,
                                        const PYROI_TYPED(axis_tap) *col_taps,
                                        pyroi_tap_range cr, int64_t grid_h, int64_t grid_w,
                                        int64_t *argmax)
{
    const int64_t outside = grid_h * grid_w > 0
                                ? PYROI_TYPED(roi_align_first_outside)(rr, cr, grid_h, grid_w)
                                : -1;
    PYROI_TYPED(roi_align_max_state) state;
    int64_t r, q;
    int zero_offered = outside < 0;
    state.best = (T)0;
    state.winner = -1;
    for (r = rr.begin; r < rr.end; ++r) {
        const PYROI_TYPED(axis_tap) ty = row_taps[r];
        const T *row_lo = plane + ty.lo * row_stride;
        const T *row_hi = plane + ty.hi * row_stride;
        const int64_t iy = rr.first_sample + (r - rr.begin);
        for (q = cr.begin; q < cr.end; ++q) {
            const PYROI_TYPED(axis_tap) tx = col_taps[q];
            const int64_t index = iy * grid_w + cr.first_sample + (q - cr.begin);
            const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
            const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
            const T value = w1 * row_lo[tx.lo * col_stride] + w2 * row_lo[tx.hi * col_stride] +
                            w3 * row_hi[tx.lo * col_stride] + w4 * row_hi[tx.hi * col_stride];
            if (!zero_offered && outside < index) {
                PYROI_TYPED(roi_align_max_offer)(&state, (T)0, outside);
                zero_offered = 1;
            }
            PYROI_TYPED(roi_align_max_offer)(&state, value, index);
        }
    }
    if (!zero_offered) {
        PYROI_TYPED(roi_align_max_offer)(&state, (T)0, outside);
    }
    *argmax = state.winner;
    return state.winner < 0 ? (T)0 : state.best;
}

/* Everything the max-mode workers need besides the avg job. */
typedef struct PYROI_TYPED(roi_align_max_job) {
    PYROI_TYPED(roi_align_job) base;
    int64_t *argmax;                /* forward: may be NULL */
    const int64_t *argmax_const;    /* backward */
    const int64_t *argmax_strides;
    const int64_t *grid_w;          /* per RoI: samples per bin along x */
} PYROI_TYPED(roi_align_max_job);

/* Max forward in the direct order (below, one loop with the ONNX max's). */
static void PYROI_TYPED(roi_align_max_forward_task)(void *context, int64_t begin, int64_t end,
                                                    int worker);

/* Channels [begin, end): zero, then add g * w to the four taps of each bin's winner, RoI by
 * RoI (mmcv's order; no division). */
static void PYROI_TYPED(roi_align_max_backward_task)(void *context, int64_t begin, int64_t end,
                                                     int worker)
{
    const PYROI_TYPED(roi_align_max_job) *max_job =
        (const PYROI_TYPED(roi_align_max_job) *)context;
    const PYROI_TYPED(roi_align_job) *job = &max_job->base;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *go_strides = job->features_strides, *gi_strides = job->result_strides;
    const int64_t *a = max_job->argmax_strides;
    const int64_t *shape = job->map_shape;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    int64_t n, k, c, h, w, ph, pw;
    (void)worker;

    for (n = 0; n < shape[0]; ++n) {
        for (c = begin; c < end; ++c) {
            T *plane = job->result + n * gi_strides[0] + c * gi_strides[1];
            for (h = 0; h < shape[2]; ++h) {
                for (w = 0; w < shape[3]; ++w) {
                    plane[h * gi_strides[2] + w * gi_strides[3]] = (T)0;
                }
            }
        }
    }
    for (k = 0; k < plan->num_rois; ++k) {
        const PYROI_TYPED(roi_align_tap_tables) tables =
            PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
        const int64_t grid_w = max_job->grid_w[k];
        if (k % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
            break; /* an item (channel) holds every RoI */
        }
        for (c = begin; c < end; ++c) {
            T *plane = job->result + job->batch_indices[k] * gi_strides[0] + c * gi_strides[1];
            for (ph = 0; ph < pooled_height; ++ph) {
                const pyroi_tap_range rr = tables.row_ranges[ph];
                for (pw = 0; pw < pooled_width; ++pw) {
                    const pyroi_tap_range cr = tables.col_ranges[pw];
                    const int64_t winner =
                        max_job->argmax_const[k * a[0] + c * a[1] + ph * a[2] + pw * a[3]];
                    int64_t iy, ix;
                    T g;
                    /* checked before the call, and again here: the caller may have written
                     * argmax since (grid_w > 0 whenever samples[k] > 0) */
                    if (winner < 0 || winner >= plan->samples[k]) {
                        continue;
                    }
                    iy = winner / grid_w - rr.first_sample;
                    ix = winner % grid_w - cr.first_sample;
                    if (iy < 0 || iy >= rr.end - rr.begin || ix < 0 || ix >= cr.end - cr.begin) {
                        continue; /* an out-of-map sample won: it has no taps */
                    }
                    g = job->features[k * go_strides[0] + c * go_strides[1] + ph * go_strides[2] +
                                      pw * go_strides[3]];
                    {
                        const PYROI_TYPED(axis_tap) ty = tables.row_taps[rr.begin + iy];
                        const PYROI_TYPED(axis_tap) tx = tables.col_taps[cr.begin + ix];
                        T *row_lo = plane + ty.lo * gi_strides[2];
                        T *row_hi = plane + ty.hi * gi_strides[2];
                        row_lo[tx.lo * gi_strides[3]] += g * (ty.w_lo * tx.w_lo);
                        row_lo[tx.hi * gi_strides[3]] += g * (ty.w_lo * tx.w_hi);
                        row_hi[tx.lo * gi_strides[3]] += g * (ty.w_hi * tx.w_lo);
                        row_hi[tx.hi * gi_strides[3]] += g * (ty.w_hi * tx.w_hi);
                    }
                }
            }
        }
    }
}

/* One offer to an mmcv max bin on a block, per lane: the interpolated value of a sample (the
 * four weighted taps added left to right, as in avg mode; pixels p1..p4 of the block, weights
 * from the row tap ty and the column tap tx) with sample index `index`. It wins if it is the
 * first offer, is larger, or is the first NaN (roi_align_max_offer's rule, as a select). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_sample)(
    T *PYROI_RESTRICT best, int64_t *PYROI_RESTRICT winner, const T *block, int64_t width,
    PYROI_TYPED(axis_tap) ty, PYROI_TYPED(axis_tap) tx, int64_t index, int first)
{
    const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
    const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
    const T *p1 = block + (ty.lo * width + tx.lo) * PYROI_LANES;
    const T *p2 = block + (ty.lo * width + tx.hi) * PYROI_LANES;
    const T *p3 = block + (ty.hi * width + tx.lo) * PYROI_LANES;
    const T *p4 = block + (ty.hi * width + tx.hi) * PYROI_LANES;
    int64_t j;
    for (j = 0; j < PYROI_LANES; ++j) {
        /* each lane is one channel, evaluated exactly as the scalar loop */
        const T value = w1 * p1[j] + w2 * p2[j] + w3 * p3[j] + w4 * p4[j];
        const int take = first || value > best[j] || (value != value && best[j] == best[j]);
        best[j] = take ? value : best[j];
        winner[j] = take ? index : winner[j];
    }
}

/* The out-of-map value 0, with sample index `index`, offered to an mmcv max bin per lane. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_zero)(T *PYROI_RESTRICT best,
                                                                    int64_t *PYROI_RESTRICT
                                                                        winner,
                                                                    int64_t index, int first)
{
    int64_t j;
    for (j = 0; j < PYROI_LANES; ++j) {
        const int take = first || (T)0 > best[j];
        best[j] = take ? (T)0 : best[j];
        winner[j] = take ? index : winner[j];
    }
}

/* mmcv max of RoI k on a block of channels [c0, c0 + lanes): tile[ph][pw][lane] and, unless
 * the call has no argmax, the argmax of each bin are what roi_align_max_bin gives for the
 * lane's channel: the offers come in the same order (in-map samples row-major, the out-of-map
 * 0 once at its place, which is a row boundary of the in-map samples as in ONNX max mode) and
 * each lane applies the scalar rule. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_max_roi)(
    const struct PYROI_TYPED(roi_align_max_job) *max_job, int64_t k, int64_t c0, int64_t lanes,
    const T *block, T *tile)
{
    const PYROI_TYPED(roi_align_plan) *plan = max_job->base.plan;
    const int64_t width = max_job->base.map_shape[3];
    const int64_t pooled_height = max_job->base.params->pooled_height;
    const int64_t pooled_width = max_job->base.params->pooled_width;
    const int64_t grid_w = max_job->grid_w[k];
    const int64_t grid_h = grid_w > 0 ? plan->samples[k] / grid_w : 0;
    const PYROI_TYPED(roi_align_tap_tables) tables =
        PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
    const int64_t *a = max_job->argmax_strides;
    int64_t ph, pw, r, q, j;

    for (ph = 0; ph < pooled_height; ++ph) {
        const pyroi_tap_range rr = tables.row_ranges[ph];
        const int64_t rows = rr.end - rr.begin;
        for (pw = 0; pw < pooled_width; ++pw) {
            const pyroi_tap_range cr = tables.col_ranges[pw];
            T *best = tile + (ph * pooled_width + pw) * PYROI_LANES;
            int64_t winner[PYROI_LANE_BYTES / sizeof(T)];
            int64_t outside, zero_rows;
            if (grid_h * grid_w <= 0) { /* empty bin: 0, argmax -1 */
                for (j = 0; j < PYROI_LANES; ++j) {
                    best[j] = (T)0;
                    winner[j] = -1;
                }
            } else {
                /* the 0 after zero_rows rows of in-map samples; -1: no sample is outside */
                outside = PYROI_TYPED(roi_align_first_outside)(rr, cr, grid_h, grid_w);
                zero_rows = outside < 0 ? -1 : outside == 0 ? 0 : outside < grid_w ? 1 : rows;
                if (zero_rows == 0) {
                    PYROI_TYPED(roi_align_max_zero)(best, winner, outside, 1);
                }
                for (r = rr.begin; r < rr.end; ++r) {
                    const PYROI_TYPED(axis_tap) ty = tables.row_taps[r];
                    const int64_t row_index = (rr.first_sample + (r - rr.begin)) * grid_w +
                                              cr.first_sample - cr.begin;
                    if (zero_rows > 0 && r - rr.begin == zero_rows) {
                        PYROI_TYPED(roi_align_max_zero)(best, winner, outside, 0);
                    }
                    q = cr.begin;
                    if (r == rr.begin && zero_rows != 0) { /* the first offer */
                        PYROI_TYPED(roi_align_max_sample)(best, winner, block, width, ty,
                                                          tables.col_taps[q], row_index + q, 1);
                        ++q;
                    }
                    for (; q < cr.end; ++q) {
                        PYROI_TYPED(roi_align_max_sample)(best, winner, block, width, ty,
                                                          tables.col_taps[q], row_index + q, 0);
                    }
                }
                if (zero_rows > 0 && zero_rows == rows) { /* after every in-map sample */
                    PYROI_TYPED(roi_align_max_zero)(best, winner, outside, 0);
                }
            }
            if (max_job->argmax != NULL) {
                int64_t *out = max_job->argmax + k * a[0] + c0 * a[1] + ph * a[2] + pw * a[3];
                for (j = 0; j < lanes; ++j) {
                    out[j * a[1]] = winner[j];
                }
            }
        }
    }
}

/* mmcv max forward, work item = (image, channel block). */
PYROI_VECTOR_CLONES
static void PYROI_TYPED(roi_align_max_forward_image_task)(void *context, int64_t begin,
                                                          int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_max_job) *max_job =
        (const PYROI_TYPED(roi_align_max_job) *)context;
    PYROI_TYPED(roi_align_forward_image_items)(&max_job->base, max_job, ROI_ALIGN_REDUCE_MAX,
                                               begin, end, worker);
}

/* mmcv max forward, work item = RoI. */
PYROI_VECTOR_CLONES
static void PYROI_TYPED(roi_align_max_forward_region_task)(void *context, int64_t begin,
                                                           int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_max_job) *max_job =
        (const PYROI_TYPED(roi_align_max_job) *)context;
    PYROI_TYPED(roi_align_forward_region_items)(&max_job->base, max_job, ROI_ALIGN_REDUCE_MAX,
                                                begin, end, worker);
}

/* Samples per bin along x of every RoI of the plan (which keeps only products). */
static pyroi_status PYROI_TYPED(roi_align_grid_widths)(const PYROI_TYPED(roi_align_plan) *plan,
                                                       int64_t height, int64_t width,
                                                       const pyroi_roi_align_params *params,
                                                       int64_t **grid_w)
{
    const int64_t num_rois = plan->num_rois;
    const T *boxes = (const T *)plan->rois.boxes;
    const int64_t box_row_stride = plan->rois.coords;
    int64_t k;
    *grid_w = (int64_t *)malloc((size_t)(num_rois > 0 ? num_rois : 1) * sizeof(int64_t));
    if (*grid_w == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(sample_axis) rows, cols;
        cols.grid = 0; /* validated boxes always set it; this keeps -Wmaybe-uninitialized quiet */
        if (pyroi_cancel_at(params->cancel, k)) {
            return PYROI_E_CANCELLED; /* the caller frees *grid_w */
        }
        (void)PYROI_TYPED(roi_align_axes)(boxes + k * box_row_stride, params, height, width,
                                          &rows, &cols);
        (*grid_w)[k] = cols.grid;
    }
    return PYROI_OK;
}

/* The forward of both max reductions (mmcv's over samples; ONNX's over weighted taps): one
 * validation, plan and schedule; tasks are the reduction's (lane-major ones optional). argmax
 * may be NULL; its codes number codes_per_sample per sample (mmcv 1, ONNX 4: the taps), so a
 * RoI with more samples per bin than codes can count (ONNX: 2^61) is PYROI_E_INVALID_BOX. */
static pyroi_status PYROI_TYPED(roi_align_max_like_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4], int64_t codes_per_sample,
    const pyroi_roi_align_params *params, const roi_align_forward_tasks *tasks)
{
    PYROI_TYPED(roi_align_max_job) job;
    PYROI_TYPED(roi_align_plan) plan;
    int64_t *grid_w = NULL;
    int64_t k;
    int planned;
    pyroi_status status = roi_align_check_call(
        input, input_shape, input_strides, PYROI_TENSOR_INPUT, output, output_strides,
        PYROI_TENSOR_OUTPUT, boxes, num_rois, box_row_stride, batch_indices, params);
    if (status == PYROI_OK && argmax != NULL) {
        const int64_t argmax_shape[4] = {num_rois, input_shape[1], params->pooled_height,
                                         params->pooled_width};
        status = pyroi_check_tensor4(argmax, argmax_shape, argmax_strides, PYROI_TENSOR_OUTPUT);
    }
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(roi_align_call_plan)(&plan, num_rois == 0 || input_shape[1] == 0,
                                              boxes, num_rois, box_row_stride, batch_indices,
                                              input_shape, params, NULL, &planned);
    if (!planned) {
        return status;
    }
    for (k = 0; argmax != NULL && k < num_rois; ++k) {
        if (plan.samples[k] > (INT64_MAX - codes_per_sample) / codes_per_sample) {
            PYROI_TYPED(roi_align_plan_free)(&plan);
            return PYROI_E_INVALID_BOX;
        }
    }
    status = PYROI_TYPED(roi_align_plan_order_by_rows)(&plan, params->cancel);
    if (status != PYROI_OK) {
        return status;
    }
    input = (const T *)pyroi_data_or_placeholder(input); /* a map without pixels may be NULL */
    status = PYROI_TYPED(roi_align_grid_widths)(&plan, input_shape[2], input_shape[3], params,
                                                &grid_w);
    if (status == PYROI_OK) {
        PYROI_TYPED(roi_align_job_init)(&job.base, input, input_strides, output,
                                        output_strides, input_shape, params, &plan, NULL);
        job.argmax = argmax;
        job.argmax_const = NULL;
        job.argmax_strides = argmax_strides;
        job.grid_w = grid_w;
        status = PYROI_TYPED(roi_align_execute_tasks)(&job.base, 0, &job, tasks);
    }
    free(grid_w);
    PYROI_TYPED(roi_align_plan_free)(&plan);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_max_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_align_params *params)
{
    roi_align_forward_tasks tasks;
    tasks.direct = PYROI_TYPED(roi_align_max_forward_task);
    tasks.region = PYROI_TYPED(roi_align_max_forward_region_task);
    tasks.image = PYROI_TYPED(roi_align_max_forward_image_task);
    return PYROI_TYPED(roi_align_max_like_forward)(
        input, input_shape, input_strides, boxes, num_rois, box_row_stride, batch_indices,
        output, output_strides, argmax, argmax_strides, 1, params, &tasks);
}

/* The backward of both max reductions: validation (each argmax -1 or one of the
 * codes_per_sample * samples codes of its bin, as the forward wrote them), plan, then task
 * over the channels (the reduction's: mmcv's below, ONNX's in
 * roi_align_onnx_max_backward_template.h). */
static pyroi_status PYROI_TYPED(roi_align_max_like_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4], int64_t codes_per_sample,
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params, pyroi_range_task task)
{
    PYROI_TYPED(roi_align_max_job) job;
    PYROI_TYPED(roi_align_plan) plan;
    int64_t *grid_w = NULL;
    int64_t k, c, ph, pw;
    int workers, planned;
    pyroi_status status = roi_align_check_call(
        grad_input, grad_input_shape, grad_input_strides, PYROI_TENSOR_OUTPUT, grad_output,
        grad_output_strides, PYROI_TENSOR_INPUT, boxes, num_rois, box_row_stride, batch_indices,
        params);
    if (status == PYROI_OK) {
        const int64_t argmax_shape[4] = {num_rois, grad_input_shape[1], params->pooled_height,
                                         params->pooled_width};
        status = pyroi_check_tensor4(argmax, argmax_shape, argmax_strides, PYROI_TENSOR_INPUT);
    }
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(roi_align_call_plan)(&plan, pyroi_shape_is_empty(grad_input_shape),
                                              boxes, num_rois, box_row_stride, batch_indices,
                                              grad_input_shape, params, NULL, &planned);
    if (!planned) {
        return status;
    }
    /* every argmax must name a sample of its bin (or be -1) before anything is written */
    for (k = 0; k < num_rois && status == PYROI_OK; ++k) {
        for (c = 0; c < grad_input_shape[1] && status == PYROI_OK; ++c) {
            for (ph = 0; ph < params->pooled_height; ++ph) {
                for (pw = 0; pw < params->pooled_width; ++pw) {
                    const int64_t winner = argmax[k * argmax_strides[0] + c * argmax_strides[1] +
                                                  ph * argmax_strides[2] + pw * argmax_strides[3]];
                    if (winner < -1 ||
                        (winner >= 0 && winner / codes_per_sample >= plan.samples[k])) {
                        status = PYROI_E_INVALID_ARGMAX;
                    }
                }
            }
        }
    }
    if (status == PYROI_OK) {
        status = PYROI_TYPED(roi_align_grid_widths)(&plan, grad_input_shape[2],
                                                    grad_input_shape[3], params, &grid_w);
    }
    if (status == PYROI_OK) {
        PYROI_TYPED(roi_align_job_init)(&job.base, grad_output, grad_output_strides,
                                        grad_input, grad_input_strides, grad_input_shape, params,
                                        &plan, NULL);
        job.argmax = NULL;
        job.argmax_const = argmax;
        job.argmax_strides = argmax_strides;
        job.grid_w = grid_w;
        const double work_per_channel =
            (double)grad_input_shape[0] * (double)grad_input_shape[2] * (double)grad_input_shape[3] +
            (double)num_rois * (double)params->pooled_height * (double)params->pooled_width;
        workers = pyroi_parallel_workers(params->num_threads, grad_input_shape[1],
                                         work_per_channel);
        status = pyroi_parallel_for(workers, grad_input_shape[1], work_per_channel,
                                    params->cancel, task, &job);
    }
    free(grid_w);
    PYROI_TYPED(roi_align_plan_free)(&plan);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_max_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params)
{
    return PYROI_TYPED(roi_align_max_like_backward)(
        grad_output, grad_output_strides, argmax, argmax_strides, 1, boxes, num_rois,
        box_row_stride, batch_indices, grad_input, grad_input_shape, grad_input_strides, params,
        PYROI_TYPED(roi_align_max_backward_task));
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
    return PYROI_TYPED(roi_align_check_boxes)(boxes, num_rois, box_row_stride, height, width,
                                              params, NULL, NULL, failed_roi);
}

/* ---- ONNX max mode (onnxruntime's definition, docs/semantics.md §4.1) -------------------- */
/* Each sample is reduced to the largest of its four weighted taps t_k = w_k * P[tap_k] (the
 * interpolated sum is never formed), with M(a, b) = a < b ? b : a applied left to right, and
 * the bin to M over its samples in row-major order, starting from the first sample. An
 * out-of-map sample has all weights 0 at pixel (0, 0) (onnxruntime's pre-computed form), so
 * its value is z = 0 * P[0, 0]: +-0 or NaN. A fold with M keeps the first sample unless a
 * later one is strictly larger, so among the (identical) out-of-map values only the first in
 * sample order can matter: it stands for all of them, and a huge grid costs only its in-map
 * samples. No division; an empty bin gives 0. */

static inline T PYROI_TYPED(roi_align_onnx_max_of)(T a, T b)
{
    return a < b ? b : a; /* std::max: NaN in a propagates, NaN in b is skipped */
}

/* *winner receives the code of the term the bin's value came from, 4 * s + t: tap t (0..3 =
 * (lo, lo), (lo, hi), (hi, lo), (hi, hi)) of sample s = iy * grid_w + ix, an out-of-map
 * sample's term being tap 0 (its four are alike); -1 for an empty bin. The gradient follows
 * it (roi_align_onnx_max_backward_template.h). */
static T PYROI_TYPED(roi_align_onnx_max_bin)(const T *plane, int64_t row_stride,
                                             int64_t col_stride, int64_t map_pixels,
                                             const PYROI_TYPED(axis_tap) *row_taps,
                                             pyroi_tap_range rr,
                                             const PYROI_TYPED(axis_tap) *col_taps,
                                             pyroi_tap_range cr, int64_t grid_h, int64_t grid_w,
                                             int64_t *winner)
{
    const int64_t outside = grid_h * grid_w > 0
                                ? PYROI_TYPED(roi_align_first_outside)(rr, cr, grid_h, grid_w)
                                : -1;
    /* z: the value of every out-of-map sample (a map without pixels has nothing to read) */
    const T zero_tap = map_pixels > 0 ? (T)0 * plane[0] : (T)0;
    T best = (T)0;
    int have = 0, zero_offered = outside < 0;
    int64_t r, q;
    *winner = -1;
    if (grid_h * grid_w <= 0) {
        return (T)0;
    }
    for (r = rr.begin; r < rr.end; ++r) {
        const PYROI_TYPED(axis_tap) ty = row_taps[r];
        const T *row_lo = plane + ty.lo * row_stride;
        const T *row_hi = plane + ty.hi * row_stride;
        const int64_t iy = rr.first_sample + (r - rr.begin);
        for (q = cr.begin; q < cr.end; ++q) {
            const PYROI_TYPED(axis_tap) tx = col_taps[q];
            const int64_t index = iy * grid_w + cr.first_sample + (q - cr.begin);
            const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
            const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
            const T taps[4] = {w1 * row_lo[tx.lo * col_stride], w2 * row_lo[tx.hi * col_stride],
                               w3 * row_hi[tx.lo * col_stride], w4 * row_hi[tx.hi * col_stride]};
            T value = taps[0];
            int64_t t, tap = 0;
            for (t = 1; t < 4; ++t) { /* value = M(value, taps[t]), remembering which won */
                if (value < taps[t]) {
                    value = taps[t];
                    tap = t;
                }
            }
            if (!zero_offered && outside < index) {
                if (!have || best < zero_tap) { /* M(best, z) */
                    best = zero_tap;
                    *winner = 4 * outside;
                }
                have = 1;
                zero_offered = 1;
            }
            if (!have || best < value) { /* M(best, value) */
                best = value;
                *winner = 4 * index + tap;
            }
            have = 1;
        }
    }
    if (!zero_offered && (!have || best < zero_tap)) {
        best = zero_tap;
        *winner = 4 * outside;
    }
    return best;
}

/* Max forward in the direct order, RoIs [begin, end): every channel and bin of each, reduced
 * as mmcv's max (with argmax, when asked) or onnxruntime's max. */
static void PYROI_TYPED(roi_align_max_forward_direct_items)(
    const PYROI_TYPED(roi_align_max_job) *max_job, enum roi_align_reduction reduction,
    int64_t begin, int64_t end)
{
    const PYROI_TYPED(roi_align_job) *job = &max_job->base;
    const PYROI_TYPED(roi_align_plan) *plan = job->plan;
    const int64_t *in_strides = job->features_strides, *out_strides = job->result_strides;
    const int64_t *a = max_job->argmax_strides;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t map_pixels = job->map_shape[2] * job->map_shape[3];
    int64_t k, c, ph, pw;

    for (k = begin; k < end; ++k) {
        const PYROI_TYPED(roi_align_tap_tables) tables =
            PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
        const int64_t grid_w = max_job->grid_w[k];
        const int64_t grid_h = grid_w > 0 ? plan->samples[k] / grid_w : 0;
        for (c = 0; c < job->map_shape[1]; ++c) {
            const T *plane = job->features + job->batch_indices[k] * in_strides[0] +
                             c * in_strides[1];
            T *out = job->result + k * out_strides[0] + c * out_strides[1];
            for (ph = 0; ph < pooled_height; ++ph) {
                for (pw = 0; pw < pooled_width; ++pw) {
                    T *result = out + ph * out_strides[2] + pw * out_strides[3];
                    int64_t winner;
                    if (reduction == ROI_ALIGN_REDUCE_ONNX_MAX) {
                        *result = PYROI_TYPED(roi_align_onnx_max_bin)(
                            plane, in_strides[2], in_strides[3], map_pixels, tables.row_taps,
                            tables.row_ranges[ph], tables.col_taps, tables.col_ranges[pw],
                            grid_h, grid_w, &winner);
                    } else {
                        *result = PYROI_TYPED(roi_align_max_bin)(
                            plane, in_strides[2], in_strides[3], tables.row_taps,
                            tables.row_ranges[ph], tables.col_taps, tables.col_ranges[pw],
                            grid_h, grid_w, &winner);
                    }
                    if (max_job->argmax != NULL) {
                        max_job->argmax[k * a[0] + c * a[1] + ph * a[2] + pw * a[3]] = winner;
                    }
                }
            }
        }
    }
}

static void PYROI_TYPED(roi_align_max_forward_task)(void *context, int64_t begin, int64_t end,
                                                    int worker)
{
    (void)worker;
    PYROI_TYPED(roi_align_max_forward_direct_items)(
        (const PYROI_TYPED(roi_align_max_job) *)context, ROI_ALIGN_REDUCE_MAX, begin, end);
}

static void PYROI_TYPED(roi_align_onnx_max_forward_task)(void *context, int64_t begin,
                                                         int64_t end, int worker)
{
    (void)worker;
    PYROI_TYPED(roi_align_max_forward_direct_items)(
        (const PYROI_TYPED(roi_align_max_job) *)context, ROI_ALIGN_REDUCE_ONNX_MAX, begin,
        end);
}

/* One sample of an ONNX max bin on a block, per lane: the four weighted taps (pixels p1..p4
 * of the block, weights from the row tap ty and the column tap tx) reduced with M left to
 * right, then either starting the fold (first) or folded into best with M; with track (a
 * constant at each call, so the plain forward keeps its loop) winner follows the term kept,
 * as roi_align_onnx_max_bin's code 4 * index + tap. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_onnx_max_sample)(
    T *PYROI_RESTRICT best, int64_t *PYROI_RESTRICT winner, const T *block, int64_t width,
    PYROI_TYPED(axis_tap) ty, PYROI_TYPED(axis_tap) tx, int64_t index, int first, int track)
{
    const T w1 = ty.w_lo * tx.w_lo, w2 = ty.w_lo * tx.w_hi;
    const T w3 = ty.w_hi * tx.w_lo, w4 = ty.w_hi * tx.w_hi;
    const T *p1 = block + (ty.lo * width + tx.lo) * PYROI_LANES;
    const T *p2 = block + (ty.lo * width + tx.hi) * PYROI_LANES;
    const T *p3 = block + (ty.hi * width + tx.lo) * PYROI_LANES;
    const T *p4 = block + (ty.hi * width + tx.hi) * PYROI_LANES;
    const int64_t code = 4 * index;
    int64_t j;
    /* each lane is one channel, evaluated exactly as the scalar loop */
    for (j = 0; j < PYROI_LANES; ++j) {
        const T t2 = w2 * p2[j], t3 = w3 * p3[j], t4 = w4 * p4[j];
        T v = w1 * p1[j];
        int64_t tap = code;
        int up = v < t2;
        v = up ? t2 : v;
        tap = up ? code + 1 : tap;
        up = v < t3;
        v = up ? t3 : v;
        tap = up ? code + 2 : tap;
        up = v < t4;
        v = up ? t4 : v;
        tap = up ? code + 3 : tap;
        up = first || best[j] < v;
        best[j] = up ? v : best[j];
        if (track) {
            winner[j] = up ? tap : winner[j];
        }
    }
}

/* z offered to an ONNX max fold (first: z starts it), per lane; with track, code is its
 * winner code. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_onnx_max_zero)(T *PYROI_RESTRICT best,
                                                             int64_t *PYROI_RESTRICT winner,
                                                             const T *zero, int64_t code,
                                                             int first, int track)
{
    int64_t j;
    for (j = 0; j < PYROI_LANES; ++j) {
        const int take = first || best[j] < zero[j];
        best[j] = take ? zero[j] : best[j];
        if (track) {
            winner[j] = take ? code : winner[j];
        }
    }
}

/* ONNX max of RoI k on a block of channels [c0, c0 + lanes): tile[ph][pw][lane] and, unless
 * the call has no argmax, the winner codes are what roi_align_onnx_max_bin gives for the
 * lane's channel, zero[lane] being its z. Each lane evaluates the same expression in the
 * same order: the fold starts from the first sample in row-major order (z if that one is out
 * of the map) and z is offered once, at its place among the in-map samples. That place is
 * always a row boundary of the bin's in-map samples: roi_align_first_outside names the first
 * sample (before every row), the column after row 0's in-map samples (after one row) or the
 * row after the in-map rows (after all). M is a per-lane select, so NaNs and signed zeros
 * behave exactly as in the scalar kernel. The fold runs in the tile itself. track: whether
 * the call records winners (max_job->argmax), a constant of each inlined copy. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_onnx_max_roi_fold)(
    const struct PYROI_TYPED(roi_align_max_job) *max_job, int64_t k, int64_t c0, int64_t lanes,
    const T *block, const T *zero, T *tile, int track)
{
    const PYROI_TYPED(roi_align_plan) *plan = max_job->base.plan;
    const int64_t width = max_job->base.map_shape[3];
    const int64_t pooled_height = max_job->base.params->pooled_height;
    const int64_t pooled_width = max_job->base.params->pooled_width;
    const int64_t grid_w = max_job->grid_w[k];
    const PYROI_TYPED(roi_align_tap_tables) tables =
        PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
    const int64_t grid_h = grid_w > 0 ? plan->samples[k] / grid_w : 0;
    const int64_t *a = max_job->argmax_strides;
    int64_t ph, pw, r, q, j;

    for (ph = 0; ph < pooled_height; ++ph) {
        const pyroi_tap_range rr = tables.row_ranges[ph];
        const int64_t rows = rr.end - rr.begin;
        for (pw = 0; pw < pooled_width; ++pw) {
            const pyroi_tap_range cr = tables.col_ranges[pw];
            T *best = tile + (ph * pooled_width + pw) * PYROI_LANES;
            int64_t winner[PYROI_LANE_BYTES / sizeof(T)];
            int64_t outside, zero_rows;
            if (grid_h * grid_w <= 0) { /* empty bin */
                for (j = 0; j < PYROI_LANES; ++j) {
                    best[j] = (T)0;
                    winner[j] = -1;
                }
            } else {
                /* z after zero_rows rows of in-map samples; -1: no sample is outside */
                outside = PYROI_TYPED(roi_align_first_outside)(rr, cr, grid_h, grid_w);
                zero_rows = outside < 0 ? -1 : outside == 0 ? 0 : outside < grid_w ? 1 : rows;
                for (r = rr.begin; r < rr.end; ++r) {
                    const PYROI_TYPED(axis_tap) ty = tables.row_taps[r];
                    const int64_t row_index = (rr.first_sample + (r - rr.begin)) * grid_w +
                                              cr.first_sample - cr.begin;
                    if (zero_rows >= 0 && r - rr.begin == zero_rows) {
                        PYROI_TYPED(roi_align_onnx_max_zero)(best, winner, zero, 4 * outside,
                                                             zero_rows == 0, track);
                    }
                    q = cr.begin;
                    if (r == rr.begin && zero_rows != 0) { /* the first sample starts the fold */
                        PYROI_TYPED(roi_align_onnx_max_sample)(best, winner, block, width, ty,
                                                               tables.col_taps[q],
                                                               row_index + q, 1, track);
                        ++q;
                    }
                    for (; q < cr.end; ++q) {
                        PYROI_TYPED(roi_align_onnx_max_sample)(best, winner, block, width, ty,
                                                               tables.col_taps[q],
                                                               row_index + q, 0, track);
                    }
                }
                if (zero_rows >= 0 && zero_rows == rows) { /* z after every in-map sample */
                    PYROI_TYPED(roi_align_onnx_max_zero)(best, winner, zero, 4 * outside,
                                                         rows == 0, track);
                }
            }
            if (track) {
                int64_t *out = max_job->argmax + k * a[0] + c0 * a[1] + ph * a[2] + pw * a[3];
                for (j = 0; j < lanes; ++j) {
                    out[j * a[1]] = winner[j];
                }
            }
        }
    }
}

PYROI_CLONE_INLINE void PYROI_TYPED(roi_align_onnx_max_roi)(
    const struct PYROI_TYPED(roi_align_max_job) *max_job, int64_t k, int64_t c0, int64_t lanes,
    const T *block, const T *zero, T *tile)
{
    if (max_job->argmax != NULL) {
        PYROI_TYPED(roi_align_onnx_max_roi_fold)(max_job, k, c0, lanes, block, zero, tile, 1);
    } else {
        PYROI_TYPED(roi_align_onnx_max_roi_fold)(max_job, k, c0, lanes, block, zero, tile, 0);
    }
}

/* ONNX max forward, work item = (image, channel block). */
PYROI_VECTOR_CLONES
static void PYROI_TYPED(roi_align_onnx_max_forward_image_task)(void *context, int64_t begin,
                                                               int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_max_job) *max_job =
        (const PYROI_TYPED(roi_align_max_job) *)context;
    PYROI_TYPED(roi_align_forward_image_items)(&max_job->base, max_job,
                                               ROI_ALIGN_REDUCE_ONNX_MAX, begin, end, worker);
}

/* ONNX max forward, work item = RoI. */
PYROI_VECTOR_CLONES
static void PYROI_TYPED(roi_align_onnx_max_forward_region_task)(void *context, int64_t begin,
                                                                int64_t end, int worker)
{
    const PYROI_TYPED(roi_align_max_job) *max_job =
        (const PYROI_TYPED(roi_align_max_job) *)context;
    PYROI_TYPED(roi_align_forward_region_items)(&max_job->base, max_job,
                                                ROI_ALIGN_REDUCE_ONNX_MAX, begin, end, worker);
}

pyroi_status PYROI_TYPED(pyroi_roi_align_onnx_max_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    const pyroi_roi_align_params *params)
{
    /* the forward without winners (roi_align_onnx_max_backward_template.h) */
    return PYROI_TYPED(pyroi_roi_align_onnx_max_forward_argmax)(
        input, input_shape, input_strides, boxes, num_rois, box_row_stride, batch_indices,
        output, output_strides, NULL, NULL, params);
}

/* ---- backward with a caller's workspace (aclnn two-phase shape) ------------------------- */

pyroi_status PYROI_TYPED(pyroi_roi_align_backward_workspace_size)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, const int64_t grad_input_shape[4],
    const pyroi_roi_align_params *params, size_t *workspace_size)
{
    static const int64_t broadcast[4] = {0, 0, 0, 0};
    static const unsigned char dummy = 0;
    PYROI_TYPED(roi_align_plan) counts; /* only num_rois, sampled_taps, region_pixels */
    PYROI_TYPED(roi_align_schedule) schedule;
    int64_t k, total_taps = 0, per_roi_words, words;
    size_t total = 0;
    pyroi_status status;
    if (workspace_size == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    *workspace_size = 0;
    status = pyroi_check_roi_align_params(params);
    if (status != PYROI_OK) {
        return status;
    }
    if (num_rois < 0 || grad_input_shape == NULL) {
        return num_rois < 0 ? PYROI_E_INVALID_SHAPE : PYROI_E_NULL_POINTER;
    }
    /* the shape alone (no data yet): element count within int64 */
    status = pyroi_check_tensor4(&dummy, grad_input_shape, broadcast, PYROI_TENSOR_INPUT);
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_check_rois(boxes, num_rois, box_row_stride, 4, batch_indices,
                              grad_input_shape[0]);
    if (status != PYROI_OK) {
        return status;
    }
    counts.num_rois = num_rois;
    counts.sampled_taps = 0;
    counts.region_pixels = 0; /* the forward's criterion; this is a backward */
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(sample_axis) rows, cols;
        int64_t row_taps, col_taps;
        status = PYROI_TYPED(roi_align_axes)(boxes + k * box_row_stride, params,
                                             grad_input_shape[2], grad_input_shape[3], &rows,
                                             &cols);
        if (status != PYROI_OK) {
            return status;
        }
        row_taps = PYROI_TYPED(pyroi_axis_tap_count)(&rows);
        col_taps = PYROI_TYPED(pyroi_axis_tap_count)(&cols);
        if (!pyroi_add_nonneg(total_taps, row_taps, &total_taps) ||
            !pyroi_add_nonneg(total_taps, col_taps, &total_taps)) {
            return PYROI_E_NO_MEMORY;
        }
        counts.sampled_taps += (double)row_taps * (double)col_taps;
    }
    if (grad_input_shape[0] == 0 || grad_input_shape[1] == 0 || grad_input_shape[2] == 0 ||
        grad_input_shape[3] == 0) {
        return PYROI_OK; /* the call writes nothing and needs no memory */
    }
    /* the copy of the RoIs and the plan, exactly as roi_align_call_plan sizes them */
    per_roi_words = ROI_ALIGN_PLAN_WORDS + (int64_t)(sizeof(pyroi_tap_range) / sizeof(int64_t)) *
                                               (params->pooled_height + params->pooled_width);
    if ((uint64_t)num_rois > (uint64_t)(SIZE_MAX / 16) / (uint64_t)per_roi_words ||
        (uint64_t)total_taps > (uint64_t)SIZE_MAX / sizeof(PYROI_TYPED(axis_tap)) ||
        pyroi_rois_bytes(num_rois, 4, sizeof(T)) == 0) {
        return PYROI_E_NO_MEMORY;
    }
    words = num_rois * per_roi_words + 1;
    if (!roi_align_workspace_add(&total, pyroi_rois_bytes(num_rois, 4, sizeof(T))) ||
        !roi_align_workspace_add(&total, (size_t)words * sizeof(int64_t)) ||
        !roi_align_workspace_add(&total, (size_t)(total_taps > 0 ? total_taps : 1) *
                                             sizeof(PYROI_TYPED(axis_tap)))) {
        return PYROI_E_NO_MEMORY;
    }
    /* the scratch blocks of the loop order the call will choose */
    schedule = PYROI_TYPED(roi_align_plan_schedule)(grad_input_shape, params, &counts, 1, 1, 0);
    if (schedule.scratch_stride > 0) {
        const size_t block_bytes = (size_t)schedule.scratch_stride * sizeof(T);
        if ((size_t)schedule.workers > SIZE_MAX / 4 / block_bytes ||
            !roi_align_workspace_add(&total, (size_t)schedule.workers * block_bytes)) {
            return PYROI_E_NO_MEMORY;
        }
    }
    *workspace_size = total;
    return PYROI_OK;
}

pyroi_status PYROI_TYPED(pyroi_roi_align_backward_with_workspace)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_align_params *params, void *workspace, size_t workspace_size)
{
    PYROI_TYPED(roi_align_job) job;
    PYROI_TYPED(roi_align_plan) plan;
    roi_align_arena arena;
    int planned;
    pyroi_status status;
    if (workspace == NULL && workspace_size > 0) {
        return PYROI_E_NULL_POINTER;
    }
    status = roi_align_check_call(
        grad_input, grad_input_shape, grad_input_strides, PYROI_TENSOR_OUTPUT, grad_output,
        grad_output_strides, PYROI_TENSOR_INPUT, boxes, num_rois, box_row_stride, batch_indices,
        params);
    if (status != PYROI_OK) {
        return status;
    }
    arena.base = (unsigned char *)workspace;
    arena.size = workspace == NULL ? 0 : workspace_size;
    arena.used = 0;
    status = PYROI_TYPED(roi_align_call_plan)(&plan, pyroi_shape_is_empty(grad_input_shape),
                                              boxes, num_rois, box_row_stride, batch_indices,
                                              grad_input_shape, params, &arena, &planned);
    if (!planned) {
        return status;
    }
    PYROI_TYPED(roi_align_job_init)(&job, grad_output, grad_output_strides, grad_input,
                                    grad_input_strides, grad_input_shape, params, &plan, &arena);
    status = PYROI_TYPED(roi_align_execute)(&job, 1);
    PYROI_TYPED(roi_align_plan_free)(&plan);
    return status;
}

#undef PYROI_VECTORS
#undef PYROI_STAGING_RUN
#undef PYROI_LANES
#undef PYROI_LANE_BYTES
