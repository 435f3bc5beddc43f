/* roi_align_prefetch_template.h - the pixels of the next bin row brought into the L2 cache
 * while one is computed: the in-place channels-last forward reads whole pixels at a few
 * scattered places per bin, and from a map larger than the L3 cache each new pixel came from
 * memory while the kernel waited (measured on the box head, 1 thread: the first touch of the
 * pixels was 70% of the time; the same RoIs computed again took the other 30%). While bin row
 * ph of a RoI is computed, each of its bins prefetches a slice of bin row ph + 1's pixels (of
 * the next RoI's first bin row after the last): spread over the bins, the requests are taken
 * (issued together, most would be dropped), and one bin row ahead is far enough for memory to
 * answer and near enough for any L2 cache to hold (a bin row of the box head is about 110 KB
 * of pixels; a whole RoI's, up to 3 MB, would not fit).
 * Included by roi_align.c once per dtype with T and PYROI_TYPED(name) defined. */

/* Distinct pixel rows (or columns) of a bin row (or RoI) kept, at most; beyond them (a RoI
 * with hundreds of sample columns and few channels) the first ones only are prefetched. */
#define PYROI_PREFETCH_AXIS_PIXELS 256

/* Level 3 cache assumed where the CPU does not say (cpu.h). */
#define PYROI_DEFAULT_L3_BYTES ((int64_t)16 << 20)

/* The walk of one worker: where the pixels are, the RoI it computes and the next one, and the
 * pixels of the bin row being prefetched (rows x cols of an image) with the walk's position. */
typedef struct PYROI_TYPED(roi_prefetch) {
    const PYROI_TYPED(roi_align_plan) *plan;
    int64_t row_bytes, pixel_bytes, bytes; /* pitches in the image, bytes read of a pixel */
    int64_t roi, next_roi;                 /* the RoI being computed, the one after it (-1) */
    const T *roi_image, *next_image;       /* their images */
    const char *image;                     /* the image of the bin row being prefetched */
    int64_t cols_roi;                      /* the RoI whose columns cols[] holds; -1 none */
    int64_t rows[PYROI_PREFETCH_AXIS_PIXELS], cols[PYROI_PREFETCH_AXIS_PIXELS];
    int64_t num_rows, num_cols;
    int64_t row, col; /* the next pixel to prefetch */
    int64_t per_bin;  /* pixels prefetched per bin */
} PYROI_TYPED(roi_prefetch);

/* Whether a forward reading images of image_bytes should prefetch: only when an image is
 * larger than the L3 cache, so that pixels come from memory. From a map in the L3 cache the
 * prefetches cost more than they save (measured: VGG conv5, 3.9 MB, 4-7% slower). */
static int PYROI_TYPED(roi_prefetch_worth)(int64_t image_bytes)
{
    const int64_t l3 = pyroi_cpu_l3_bytes();
    return image_bytes > (l3 > 0 ? l3 : PYROI_DEFAULT_L3_BYTES);
}

/* The distinct pixels of taps[begin, end) in ascending order (a RoI's taps ascend, each
 * tap's hi at or after its lo); returns how many, at most PYROI_PREFETCH_AXIS_PIXELS. */
static int64_t PYROI_TYPED(roi_prefetch_axis)(const PYROI_TYPED(axis_tap) *taps,
                                              int64_t begin, int64_t end, int64_t *pixels)
{
    int64_t i, n = 0, last = -1;
    for (i = begin; i < end && n + 2 <= PYROI_PREFETCH_AXIS_PIXELS; ++i) {
        if (taps[i].lo > last) {
            pixels[n++] = last = taps[i].lo;
        }
        if (taps[i].hi > last) {
            pixels[n++] = last = taps[i].hi;
        }
    }
    return n;
}

/* A worker's walk through the plan's RoIs, in images whose rows are row_bytes apart and
 * pixels pixel_bytes, `bytes` read of each pixel; nothing to prefetch yet. */
static void PYROI_TYPED(roi_prefetch_init)(PYROI_TYPED(roi_prefetch) *walk,
                                           const PYROI_TYPED(roi_align_plan) *plan,
                                           int64_t row_bytes, int64_t pixel_bytes, int64_t bytes)
{
    walk->plan = plan;
    walk->row_bytes = row_bytes;
    walk->pixel_bytes = pixel_bytes;
    walk->bytes = bytes;
    walk->roi = walk->next_roi = -1;
    walk->roi_image = walk->next_image = NULL;
    walk->image = NULL;
    walk->cols_roi = -1;
    walk->num_rows = walk->num_cols = walk->row = walk->col = walk->per_bin = 0;
}

/* The RoI about to be computed and the one after it (-1: none), with their images. */
static void PYROI_TYPED(roi_prefetch_rois)(PYROI_TYPED(roi_prefetch) *walk, int64_t k,
                                           const T *image, int64_t next, const T *next_image)
{
    walk->roi = k;
    walk->roi_image = image;
    walk->next_roi = next;
    walk->next_image = next_image;
}

/* At the start of bin row ph of the RoI being computed: the walk turns to bin row ph + 1, or
 * to the next RoI's first after the last, a slice per bin of the pooled_width bins. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_prefetch_bin_row)(PYROI_TYPED(roi_prefetch) *walk,
                                                          int64_t ph, int64_t pooled_height,
                                                          int64_t pooled_width)
{
    const PYROI_TYPED(roi_align_plan) *plan = walk->plan;
    PYROI_TYPED(roi_align_tap_tables) tables;
    pyroi_tap_range range;
    int64_t k = walk->roi;
    const T *image = walk->roi_image;
    if (ph + 1 < pooled_height) {
        ph += 1;
    } else if (walk->next_roi >= 0) {
        k = walk->next_roi;
        image = walk->next_image;
        ph = 0;
    } else {
        walk->row = walk->num_rows = 0; /* the last RoI's last bin row: nothing after it */
        return;
    }
    tables = PYROI_TYPED(roi_align_tap_tables_of)(plan, k, pooled_height);
    if (walk->cols_roi != k) {
        walk->num_cols = PYROI_TYPED(roi_prefetch_axis)(tables.col_taps, 0, plan->col_taps[k],
                                                        walk->cols);
        walk->cols_roi = k;
    }
    range = tables.row_ranges[ph];
    walk->image = (const char *)image;
    walk->num_rows = PYROI_TYPED(roi_prefetch_axis)(tables.row_taps, range.begin, range.end,
                                                    walk->rows);
    walk->row = walk->num_cols > 0 ? 0 : walk->num_rows; /* no columns: nothing to walk */
    walk->col = 0;
    walk->per_bin = (walk->num_rows * walk->num_cols + pooled_width - 1) / pooled_width;
}

/* The next per_bin pixels of the walk, every line of each, into the L2 cache (a bin row's
 * pixels are more than the L1 holds; there they would evict the bin's own taps). */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_prefetch_step)(PYROI_TYPED(roi_prefetch) *walk)
{
    int64_t n, line;
    for (n = 0; n < walk->per_bin && walk->row < walk->num_rows; ++n) {
        const char *pixel = walk->image + walk->rows[walk->row] * walk->row_bytes +
                            walk->cols[walk->col] * walk->pixel_bytes;
        for (line = 0; line < walk->bytes; line += 64) {
            PYROI_PREFETCH_L2(pixel + line);
        }
        if (++walk->col == walk->num_cols) {
            walk->col = 0;
            walk->row += 1;
        }
    }
}
