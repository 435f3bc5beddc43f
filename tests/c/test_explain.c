/* The explain API (pyroi.h, "Explaining one RoI"): known answers for RoIAlign sample axes and
 * RoIPool bin edges, agreement with the forward kernels on random maps, and every status. */
#include "pyroi.h"
#include "check.h"

#include <math.h>
#include <string.h>

#define MAX_SAMPLES 64

typedef struct axis_buffers {
    double coords[MAX_SAMPLES];
    int64_t taps[2 * MAX_SAMPLES];
    double weights[2 * MAX_SAMPLES];
    int8_t in_map[MAX_SAMPLES];
    double edges[MAX_SAMPLES + 1];
} axis_buffers;

static pyroi_roi_align_axis_samples_f64 samples_of(axis_buffers *b)
{
    pyroi_roi_align_axis_samples_f64 s;
    s.capacity = MAX_SAMPLES;
    s.coords = b->coords;
    s.taps = b->taps;
    s.weights = b->weights;
    s.in_map = b->in_map;
    s.edges = b->edges;
    return s;
}

static void align_params(pyroi_roi_align_params *p, int64_t pooled, int64_t ratio, int aligned)
{
    pyroi_roi_align_params_init(p);
    p->pooled_height = p->pooled_width = pooled;
    p->sampling_ratio = ratio;
    p->aligned = aligned;
}

/* Legacy mode, box 0..4 on a 6 x 6 map, 2 bins of 2 samples: samples at 0.5, 1.5, 2.5, 3.5,
 * each halfway between two pixels. */
static void test_align_known_answers(void)
{
    const double box[4] = {0, 0, 4, 4};
    pyroi_roi_align_params p;
    axis_buffers rb, cb;
    pyroi_roi_align_axis_samples_f64 rows = samples_of(&rb), cols = samples_of(&cb);
    int64_t grid[2] = {-7, -7};
    int i;

    align_params(&p, 2, 2, 0);
    CHECK_STATUS(pyroi_roi_align_sample_grid_f64(box, 6, 6, &p, grid), PYROI_OK);
    CHECK(grid[0] == 2 && grid[1] == 2);
    CHECK_STATUS(pyroi_roi_align_sample_axes_f64(box, 6, 6, &p, &rows, &cols), PYROI_OK);
    for (i = 0; i < 4; ++i) {
        CHECK(rb.coords[i] == 0.5 + i && cb.coords[i] == 0.5 + i);
        CHECK(rb.in_map[i] == 1);
        CHECK(rb.taps[2 * i] == i && rb.taps[2 * i + 1] == i + 1);
        CHECK(rb.weights[2 * i] == 0.5 && rb.weights[2 * i + 1] == 0.5);
    }
    CHECK(rb.edges[0] == 0.0 && rb.edges[1] == 2.0 && rb.edges[2] == 4.0);
    /* edges are optional */
    rows.edges = NULL;
    CHECK_STATUS(pyroi_roi_align_sample_axes_f64(box, 6, 6, &p, &rows, &cols), PYROI_OK);
    rows.edges = rb.edges;

    /* aligned: the -0.5 shift puts the samples on pixels 0, 1, 2, 3 (weight 1 on lo) */
    align_params(&p, 2, 2, 1);
    CHECK_STATUS(pyroi_roi_align_sample_axes_f64(box, 6, 6, &p, &rows, &cols), PYROI_OK);
    for (i = 0; i < 4; ++i) {
        CHECK(cb.coords[i] == (double)i);
        CHECK(cb.taps[2 * i] == i && cb.weights[2 * i] == 1.0 && cb.weights[2 * i + 1] == 0.0);
    }
    CHECK(cb.edges[0] == -0.5 && cb.edges[1] == 1.5 && cb.edges[2] == 3.5);

    /* adaptive: a 5-pixel RoI in 2 bins has ceil(2.5) = 3 samples per bin; the box hangs
     * over the bottom border (rows 3..8 of a 6-row map), columns far left of the map */
    {
        const double edge_box[4] = {-20, 3, -15, 8};
        align_params(&p, 2, 0, 0);
        CHECK_STATUS(pyroi_roi_align_sample_grid_f64(edge_box, 6, 6, &p, grid), PYROI_OK);
        CHECK(grid[0] == 3 && grid[1] == 3);
        CHECK_STATUS(pyroi_roi_align_sample_axes_f64(edge_box, 6, 6, &p, &rows, &cols),
                     PYROI_OK);
        /* row samples 3 + (i + 0.5) * 5 / 6 */
        CHECK_CLOSE(rb.coords[0], 3.0 + 0.5 * 5.0 / 6.0, 1e-15);
        CHECK(rb.in_map[0] == 1 && rb.taps[0] == 3 && rb.taps[1] == 4);
        /* 3 + 2.5 * 5/6 = 5.083: past H - 1 = 5, so both taps are the last row */
        CHECK(rb.in_map[2] == 1 && rb.taps[4] == 5 && rb.taps[5] == 5);
        CHECK(rb.weights[4] == 1.0 && rb.weights[5] == 0.0);
        /* 3 + 5.5 * 5/6 = 7.58 > H = 6: not read */
        CHECK(rb.in_map[5] == 0 && rb.taps[10] == -1 && rb.taps[11] == -1);
        CHECK(rb.weights[10] == 0.0 && rb.weights[11] == 0.0);
        for (i = 0; i < 6; ++i) {
            CHECK(cb.in_map[i] == 0 && cb.coords[i] < -1.0);
        }
    }

    /* an aligned box inverted on one axis with adaptive sampling has no samples there: a
     * capacity of 0 and NULL arrays are then fine */
    {
        const double inverted[4] = {1, 4, 3, 2};
        pyroi_roi_align_axis_samples_f64 none;
        memset(&none, 0, sizeof(none));
        align_params(&p, 2, 0, 1);
        CHECK_STATUS(pyroi_roi_align_sample_grid_f64(inverted, 6, 6, &p, grid), PYROI_OK);
        CHECK(grid[0] == 0 && grid[1] == 1);
        CHECK_STATUS(pyroi_roi_align_sample_axes_f64(inverted, 6, 6, &p, &none, &cols),
                     PYROI_OK);
    }

    /* float32 follows the same rule in float */
    {
        const float box32[4] = {0, 0, 4, 4};
        float coords[4], weights[8];
        int64_t taps[8];
        int8_t in_map[4];
        pyroi_roi_align_axis_samples_f32 s32;
        s32.capacity = 4;
        s32.coords = coords;
        s32.taps = taps;
        s32.weights = weights;
        s32.in_map = in_map;
        s32.edges = NULL;
        align_params(&p, 2, 2, 0);
        CHECK_STATUS(pyroi_roi_align_sample_axes_f32(box32, 6, 6, &p, &s32, &s32), PYROI_OK);
        CHECK(coords[3] == 3.5f && taps[6] == 3 && taps[7] == 4 && weights[7] == 0.5f);
    }
}

/* A box (x1, y1, x2, y2) over and around a map of about 7 x 9 pixels, sometimes inverted. */
static void random_box(double box[4], unsigned long long *state)
{
    box[0] = check_random(state) * 14.0 - 3.0;
    box[1] = check_random(state) * 12.0 - 3.0;
    box[2] = box[0] + check_random(state) * 8.0 - 1.0;
    box[3] = box[1] + check_random(state) * 8.0 - 1.0;
}

/* One image of one channel, h x w (at most PLANE_MAX) values uniform in [-1, 1) drawn from
 * `seed`, contiguous, with a contiguous ph x pw output: the maps whose forward the explain
 * output must reproduce. `state` continues the draws (the boxes). */
enum { PLANE_MAX = 64 };
typedef struct {
    int64_t shape[4], strides[4], out_strides[4], batch[1];
    double x[PLANE_MAX], y[PLANE_MAX];
    unsigned long long state;
} plane;

static void random_plane(plane *m, int64_t h, int64_t w, int64_t ph, int64_t pw,
                         unsigned long long seed)
{
    m->shape[0] = m->shape[1] = 1;
    m->shape[2] = h;
    m->shape[3] = w;
    m->strides[0] = m->strides[1] = h * w;
    m->strides[2] = w;
    m->strides[3] = 1;
    m->out_strides[0] = m->out_strides[1] = ph * pw;
    m->out_strides[2] = pw;
    m->out_strides[3] = 1;
    m->batch[0] = 0;
    m->state = seed;
    check_random_fill(m->x, (long)(h * w), -1.0, 1.0, &m->state);
}

/* The bins rebuilt from the explain output equal the forward kernels on random maps. */
static void test_align_reproduces_forward(void)
{
    enum { H = 7, W = 9 };
    plane m;
    int trial;

    random_plane(&m, H, W, 2, 2, 12345);
    for (trial = 0; trial < 200; ++trial) {
        pyroi_roi_align_params p;
        axis_buffers rb, cb;
        pyroi_roi_align_axis_samples_f64 rows = samples_of(&rb), cols = samples_of(&cb);
        int64_t grid[2];
        double box[4];
        int ph, pw;
        random_box(box, &m.state);
        align_params(&p, 2, (int64_t)(trial % 4), trial % 3 == 0);
        CHECK_STATUS(pyroi_roi_align_forward_f64(m.x, m.shape, m.strides, box, 1, 4, m.batch, m.y,
                                                 m.out_strides, &p), PYROI_OK);
        CHECK_STATUS(pyroi_roi_align_sample_grid_f64(box, H, W, &p, grid), PYROI_OK);
        if (grid[0] * 2 > MAX_SAMPLES || grid[1] * 2 > MAX_SAMPLES) {
            continue;
        }
        CHECK_STATUS(pyroi_roi_align_sample_axes_f64(box, H, W, &p, &rows, &cols), PYROI_OK);
        for (ph = 0; ph < 2; ++ph) {
            for (pw = 0; pw < 2; ++pw) {
                const int64_t count = grid[0] * grid[1] > 1 ? grid[0] * grid[1] : 1;
                double sum = 0.0;
                int64_t iy, ix;
                for (iy = 0; iy < grid[0]; ++iy) {
                    const int64_t r = ph * grid[0] + iy;
                    for (ix = 0; ix < grid[1]; ++ix) {
                        const int64_t q = pw * grid[1] + ix;
                        const int64_t *ty = rb.taps + 2 * r, *tx = cb.taps + 2 * q;
                        const double *wy = rb.weights + 2 * r, *wx = cb.weights + 2 * q;
                        if (!(rb.in_map[r] && cb.in_map[q])) {
                            continue;
                        }
                        sum += wy[0] * wx[0] * m.x[ty[0] * W + tx[0]] +
                               wy[0] * wx[1] * m.x[ty[0] * W + tx[1]] +
                               wy[1] * wx[0] * m.x[ty[1] * W + tx[0]] +
                               wy[1] * wx[1] * m.x[ty[1] * W + tx[1]];
                    }
                }
                CHECK_CLOSE(sum / (double)count, m.y[ph * 2 + pw], 1e-12);
            }
        }
    }
}

static void test_align_statuses(void)
{
    const double box[4] = {0, 0, 4, 4}, nan_box[4] = {0, NAN, 4, 4};
    pyroi_roi_align_params p;
    axis_buffers rb, cb;
    pyroi_roi_align_axis_samples_f64 rows = samples_of(&rb), cols = samples_of(&cb);
    int64_t grid[2] = {-7, -7};

    align_params(&p, 2, 2, 0);
    CHECK_STATUS(pyroi_roi_align_sample_grid_f64(box, 6, 6, NULL, grid), PYROI_E_NULL_POINTER);
    p.pooled_width = 0;
    CHECK_STATUS(pyroi_roi_align_sample_grid_f64(box, 6, 6, &p, grid),
                 PYROI_E_INVALID_OUTPUT_SIZE);
    align_params(&p, 2, 2, 0);
    p.spatial_scale_h = -1.0;
    CHECK_STATUS(pyroi_roi_align_sample_grid_f64(box, 6, 6, &p, grid), PYROI_E_INVALID_SCALE);
    align_params(&p, 2, PYROI_MAX_SAMPLING_RATIO + 1, 0);
    CHECK_STATUS(pyroi_roi_align_sample_axes_f64(box, 6, 6, &p, &rows, &cols),
                 PYROI_E_INVALID_SAMPLING_RATIO);
    align_params(&p, 2, 2, 0);
    p.num_threads = -1;
    CHECK_STATUS(pyroi_roi_align_sample_grid_f64(box, 6, 6, &p, grid),
                 PYROI_E_INVALID_NUM_THREADS);
    align_params(&p, 2, 2, 0);
    CHECK_STATUS(pyroi_roi_align_sample_grid_f64(box, -1, 6, &p, grid), PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_align_sample_axes_f64(box, 6, -1, &p, &rows, &cols),
                 PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_align_sample_grid_f64(NULL, 6, 6, &p, grid), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_sample_grid_f64(box, 6, 6, &p, NULL), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_sample_grid_f64(nan_box, 6, 6, &p, grid), PYROI_E_INVALID_BOX);
    CHECK(grid[0] == -7 && grid[1] == -7); /* nothing written on failure */
    {
        const double huge[4] = {0, 0, 1e30, 1e30};
        align_params(&p, 2, 0, 0);
        CHECK_STATUS(pyroi_roi_align_sample_grid_f64(huge, 6, 6, &p, grid),
                     PYROI_E_INVALID_BOX);
        align_params(&p, 2, 2, 0);
    }
    /* the axes: NULL structs, NULL arrays, too small a capacity; nothing written */
    rb.coords[0] = -42.0;
    CHECK_STATUS(pyroi_roi_align_sample_axes_f64(box, 6, 6, &p, NULL, &cols),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_sample_axes_f64(box, 6, 6, &p, &rows, NULL),
                 PYROI_E_NULL_POINTER);
    cols.capacity = 3; /* 2 bins x 2 samples need 4 */
    CHECK_STATUS(pyroi_roi_align_sample_axes_f64(box, 6, 6, &p, &rows, &cols),
                 PYROI_E_INVALID_SHAPE);
    cols = samples_of(&cb);
    cols.taps = NULL;
    CHECK_STATUS(pyroi_roi_align_sample_axes_f64(box, 6, 6, &p, &rows, &cols),
                 PYROI_E_NULL_POINTER);
    cols = samples_of(&cb);
    cols.in_map = NULL;
    CHECK_STATUS(pyroi_roi_align_sample_axes_f64(box, 6, 6, &p, &rows, &cols),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_sample_axes_f64(nan_box, 6, 6, &p, &rows, &cols),
                 PYROI_E_INVALID_BOX);
    CHECK(rb.coords[0] == -42.0);
}

static void test_pool_known_answers(void)
{
    pyroi_roi_pool_params p;
    int64_t roi[4], rows[6], cols[6];
    /* docs/semantics.md §5.1: a 2 x 2 RoI (pixels 1..2) in 3 bins: [1,2), [1,3), [2,3) */
    const double box[4] = {1, 1, 2, 2};
    const int64_t expected[6] = {1, 2, 1, 3, 2, 3};
    int i;

    check_roi_pool_params(&p, 3, 3);
    CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(box, 4, 4, &p, roi, rows, cols), PYROI_OK);
    for (i = 0; i < 6; ++i) {
        CHECK(rows[i] == expected[i] && cols[i] == expected[i]);
    }
    CHECK(roi[0] == 1 && roi[1] == 3 && roi[2] == 1 && roi[3] == 3);

    /* rounding half away from zero, scaling, clipping to the map, empty bins */
    {
        const float box32[4] = {-2.5f, 0.5f, 9.4f, 0.5f}; /* x: -3 .. 9; y: 1 .. 1 */
        check_roi_pool_params(&p, 1, 3);
        CHECK_STATUS(pyroi_roi_pool_bin_edges_f32(box32, 4, 8, &p, roi, rows, cols), PYROI_OK);
        CHECK(roi[0] == 1 && roi[1] == 2 && roi[2] == -3 && roi[3] == 10);
        CHECK(rows[0] == 1 && rows[1] == 2);
        /* 13 pixels in 3 bins: [-3, 2) -> [0, 2), [1, 6), [5, 10) -> [5, 8) */
        CHECK(cols[0] == 0 && cols[1] == 2);
        CHECK(cols[2] == 1 && cols[3] == 6);
        CHECK(cols[4] == 5 && cols[5] == 8);
    }
    {
        const double outside[4] = {-9, -9, -5, -5};
        check_roi_pool_params(&p, 2, 2);
        p.spatial_scale_h = p.spatial_scale_w = 0.5; /* -4.5 -> -5, -2.5 -> -3 */
        CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(outside, 4, 4, &p, NULL, rows, cols),
                     PYROI_OK);
        CHECK(rows[0] == 0 && rows[1] == 0 && rows[2] == 0 && rows[3] == 0);
    }
}

static void test_pool_reproduces_forward(void)
{
    enum { H = 6, W = 8 };
    plane m;
    int trial;

    random_plane(&m, H, W, 2, 3, 99);
    for (trial = 0; trial < 200; ++trial) {
        pyroi_roi_pool_params p;
        int64_t rows[4], cols[6];
        double box[4];
        int ph, pw;
        random_box(box, &m.state);
        check_roi_pool_params(&p, 2, 3);
        CHECK_STATUS(pyroi_roi_pool_forward_f64(m.x, m.shape, m.strides, box, 1, 4, m.batch, m.y,
                                                m.out_strides, NULL, NULL, &p), PYROI_OK);
        CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(box, H, W, &p, NULL, rows, cols), PYROI_OK);
        for (ph = 0; ph < 2; ++ph) {
            for (pw = 0; pw < 3; ++pw) {
                double best = 0.0;
                int64_t h, w;
                if (rows[2 * ph + 1] > rows[2 * ph] && cols[2 * pw + 1] > cols[2 * pw]) {
                    best = -INFINITY;
                    for (h = rows[2 * ph]; h < rows[2 * ph + 1]; ++h) {
                        for (w = cols[2 * pw]; w < cols[2 * pw + 1]; ++w) {
                            best = m.x[h * W + w] > best ? m.x[h * W + w] : best;
                        }
                    }
                }
                CHECK(best == m.y[ph * 3 + pw]);
            }
        }
    }
}

static void test_pool_statuses(void)
{
    const double box[4] = {0, 0, 2, 2}, inf_box[4] = {0, 0, INFINITY, 2};
    const double big_box[4] = {0, 0, 1e308, 2};
    pyroi_roi_pool_params p;
    int64_t roi[4] = {-7, -7, -7, -7}, rows[4] = {-7, -7, -7, -7}, cols[4];

    check_roi_pool_params(&p, 2, 2);
    CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(box, 4, 4, NULL, roi, rows, cols),
                 PYROI_E_NULL_POINTER);
    p.pooled_height = -1;
    CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(box, 4, 4, &p, roi, rows, cols),
                 PYROI_E_INVALID_OUTPUT_SIZE);
    check_roi_pool_params(&p, 2, 2);
    p.spatial_scale_w = NAN;
    CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(box, 4, 4, &p, roi, rows, cols),
                 PYROI_E_INVALID_SCALE);
    check_roi_pool_params(&p, 2, 2);
    p.num_threads = -3;
    CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(box, 4, 4, &p, roi, rows, cols),
                 PYROI_E_INVALID_NUM_THREADS);
    check_roi_pool_params(&p, 2, 2);
    CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(box, -4, 4, &p, roi, rows, cols),
                 PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(NULL, 4, 4, &p, roi, rows, cols),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(box, 4, 4, &p, roi, NULL, cols),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(box, 4, 4, &p, roi, rows, NULL),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(inf_box, 4, 4, &p, roi, rows, cols),
                 PYROI_E_INVALID_BOX);
    p.spatial_scale_w = 1e10; /* finite box, product overflows */
    CHECK_STATUS(pyroi_roi_pool_bin_edges_f64(big_box, 4, 4, &p, roi, rows, cols),
                 PYROI_E_INVALID_BOX);
    CHECK(roi[0] == -7 && rows[0] == -7); /* nothing written on failure */
}

int main(void)
{
    test_align_known_answers();
    test_align_reproduces_forward();
    test_align_statuses();
    test_pool_known_answers();
    test_pool_reproduces_forward();
    test_pool_statuses();
    return check_report("explain");
}
