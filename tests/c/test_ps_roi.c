/* Position-sensitive RoIAlign / RoIPool: known answers (docs/semantics.md §3.6, §6.2, §11.6; values
 * verified on torchvision 0.29.1), pyroi's defined results where torchvision has none,
 * the adjoint identity, thread-count invariance, and every status code. */
#include "pyroi.h"
#include "check.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const int64_t out_2x2[4] = {4, 4, 2, 1}; /* one output channel of 2 x 2 bins */

/* docs/semantics.md §11.6: arange(100) as (1, 4, 5, 5), RoI (0, 0, 5, 5), 2x2 output. */
static void test_pool_quirk_known_answer(void)
{
    const int64_t shape[4] = {1, 4, 5, 5}, strides[4] = {100, 25, 5, 1};
    const int64_t batch[1] = {0};
    const float box_f[4] = {0, 0, 5, 5};
    const double box_d[4] = {0, 0, 5, 5};
    const float expected[4] = {6.0f, 32.5f, 63.5f, 90.0f};
    const float ones_f[4] = {1, 1, 1, 1};
    const double ones_d[4] = {1, 1, 1, 1};
    float x_f[100], y_f[4], g_f[100];
    double x_d[100], y_d[4], g_d[100];
    pyroi_ps_roi_pool_params p;
    int i, c, h, w;

    for (i = 0; i < 100; ++i) {
        x_f[i] = (float)i;
        x_d[i] = i;
    }
    pyroi_ps_roi_pool_params_init(&p);
    p.pooled_height = p.pooled_width = 2;
    CHECK_STATUS(pyroi_ps_roi_pool_forward_f32(x_f, shape, strides, box_f, 1, 4, batch, y_f,
                                               out_2x2, &p), PYROI_OK);
    CHECK_STATUS(pyroi_ps_roi_pool_forward_f64(x_d, shape, strides, box_d, 1, 4, batch, y_d,
                                               out_2x2, &p), PYROI_OK);
    for (i = 0; i < 4; ++i) {
        CHECK(y_f[i] == expected[i]);
        CHECK(y_d[i] == (double)expected[i]);
    }
    /* the gradient of every bin is spread as 1/9 over a 3x3 window clamped to [0, 5), even
     * for bin (1, 1) whose forward window is rows/cols 2..3 only */
    CHECK_STATUS(pyroi_ps_roi_pool_backward_f32(ones_f, out_2x2, box_f, 1, 4, batch, g_f, shape,
                                                strides, &p), PYROI_OK);
    CHECK_STATUS(pyroi_ps_roi_pool_backward_f64(ones_d, out_2x2, box_d, 1, 4, batch, g_d, shape,
                                                strides, &p), PYROI_OK);
    for (c = 0; c < 4; ++c) {
        const int row0 = (c / 2) * 2, col0 = (c % 2) * 2; /* 0..2 or 2..4 */
        for (h = 0; h < 5; ++h) {
            for (w = 0; w < 5; ++w) {
                const int inside = h >= row0 && h <= row0 + 2 && w >= col0 && w <= col0 + 2;
                CHECK(g_f[c * 25 + h * 5 + w] == (inside ? 1.0f / 9.0f : 0.0f));
                CHECK(g_d[c * 25 + h * 5 + w] == (inside ? 1.0 / 9.0 : 0.0));
            }
        }
    }
}

/* torchvision's ps_roi_pool backward rounds with roundf even for float64: 2.4999999999 is
 * 2 in the forward (round) and 3 in the backward (roundf of 2.5f). */
static void test_pool_float64_backward_rounding(void)
{
    const int64_t shape[4] = {1, 4, 8, 8}, strides[4] = {256, 64, 8, 1};
    const int64_t batch[1] = {0};
    const double box[4] = {2.4999999999, 1.0, 6.0, 6.0};
    const double ones[4] = {1, 1, 1, 1};
    double x[256], y[4], g[256];
    pyroi_ps_roi_pool_params p;
    int h, w;

    check_ramp_f64(x, 256);
    pyroi_ps_roi_pool_params_init(&p);
    p.pooled_height = p.pooled_width = 2;
    CHECK_STATUS(pyroi_ps_roi_pool_forward_f64(x, shape, strides, box, 1, 4, batch, y, out_2x2,
                                               &p), PYROI_OK);
    /* forward bin (0, 0): x1 = 2, width 4, columns 2..3; y1 = 1, height 5, rows 1..3 */
    CHECK(y[0] == (10 + 11 + 18 + 19 + 26 + 27) / 6.0);
    CHECK_STATUS(pyroi_ps_roi_pool_backward_f64(ones, out_2x2, box, 1, 4, batch, g, shape,
                                                strides, &p), PYROI_OK);
    /* backward bin (0, 0): x1 = 3, width 3, columns floor(0) + 3 .. ceil(1.5) + 3 = 3..4 */
    for (h = 0; h < 8; ++h) {
        for (w = 0; w < 8; ++w) {
            const int inside = h >= 1 && h <= 3 && w >= 3 && w <= 4;
            CHECK(g[h * 8 + w] == (inside ? 1.0 / 6.0 : 0.0));
        }
    }
}

/* docs/semantics.md §3.6, aligned column: 6x7 arange map broadcast to 4 channels (zero channel
 * stride), so bin (ph, pw) reads channel ph * 2 + pw holding the same plane. */
static void test_align_edge_table(void)
{
    struct edge_case {
        float box[4];
        int sampling_ratio;
        float expected[4];
    };
    static const struct edge_case cases[] = {
        {{1, 1, 1, 4}, 2, {9.25f, 9.25f, 19.75f, 19.75f}},
        {{2, 2, 2, 2}, 2, {12, 12, 12, 12}},
        {{4, 4, 1, 1}, 2, {22, 20.5f, 11.5f, 10}},
        {{5, 4, 9, 8}, 0, {37, 18.75f, 20.25f, 10.25f}},
        {{-20, -20, -10, -10}, 0, {0, 0, 0, 0}},
        {{-20, -20, -10, -10}, 2, {0, 0, 0, 0}},
    };
    const int64_t shape[4] = {1, 4, 6, 7}, strides[4] = {0, 0, 7, 1};
    const int64_t batch[1] = {0};
    float plane[42], y[4];
    pyroi_ps_roi_align_params p;
    size_t n;
    int i;

    check_ramp_f32(plane, 42);
    for (n = 0; n < sizeof(cases) / sizeof(cases[0]); ++n) {
        pyroi_ps_roi_align_params_init(&p);
        p.pooled_height = p.pooled_width = 2;
        p.sampling_ratio = cases[n].sampling_ratio;
        CHECK_STATUS(pyroi_ps_roi_align_forward_f32(plane, shape, strides, cases[n].box, 1, 4,
                                                    batch, y, out_2x2, &p), PYROI_OK);
        for (i = 0; i < 4; ++i) {
            CHECK(y[i] == cases[n].expected[i]);
        }
    }
}

/* Where adaptive sampling gives no sample (zero size, one axis inverted) torchvision returns
 * NaN or -0.0; pyroi returns +0.0 and the gradient is zero. */
static void test_align_without_samples(void)
{
    static const double boxes[4][4] = {
        {1, 1, 1, 4}, {4, 1, 1, 4}, {1, 2.2, 4, 1}, {4, 4, 1, 1}};
    const int64_t shape[4] = {1, 4, 6, 7}, strides[4] = {168, 42, 7, 1};
    const int64_t batch[1] = {0};
    const double ones[4] = {1, 1, 1, 1};
    double x[168], y[4], g[168];
    pyroi_ps_roi_align_params p;
    int i, k;

    for (i = 0; i < 168; ++i) {
        x[i] = 1.0 + i;
    }
    pyroi_ps_roi_align_params_init(&p);
    p.pooled_height = p.pooled_width = 2;
    for (k = 0; k < 4; ++k) {
        CHECK_STATUS(pyroi_ps_roi_align_forward_f64(x, shape, strides, boxes[k], 1, 4, batch, y,
                                                    out_2x2, &p), PYROI_OK);
        CHECK_STATUS(pyroi_ps_roi_align_backward_f64(ones, out_2x2, boxes[k], 1, 4, batch, g,
                                                     shape, strides, &p), PYROI_OK);
        for (i = 0; i < 4; ++i) {
            CHECK(y[i] == 0.0 && !signbit(y[i]));
        }
        for (i = 0; i < 168; ++i) {
            CHECK(g[i] == 0.0);
        }
    }
}

/* Output (c_out, ph, pw) reads input channel (c_out * PH + ph) * PW + pw: planes that hold
 * their channel index pool to that index, in both operators. */
static void test_channel_mapping(void)
{
    enum { COUT = 2, PH = 2, PW = 3, C = COUT * PH * PW, H = 5, W = 6 };
    const int64_t shape[4] = {1, C, H, W}, strides[4] = {C * H * W, H * W, W, 1};
    const int64_t y_strides[4] = {COUT * PH * PW, PH * PW, PW, 1};
    const int64_t batch[1] = {0};
    const double box[4] = {0.5, 0.5, 4.5, 3.5};
    double x[C * H * W], y[C];
    pyroi_ps_roi_align_params pa;
    pyroi_ps_roi_pool_params pp;
    int i;

    for (i = 0; i < C * H * W; ++i) {
        x[i] = i / (H * W);
    }
    pyroi_ps_roi_align_params_init(&pa);
    pa.pooled_height = PH;
    pa.pooled_width = PW;
    pa.sampling_ratio = 2;
    CHECK_STATUS(pyroi_ps_roi_align_forward_f64(x, shape, strides, box, 1, 4, batch, y,
                                                y_strides, &pa), PYROI_OK);
    for (i = 0; i < C; ++i) {
        CHECK_CLOSE(y[i], i, 1e-14);
    }
    pyroi_ps_roi_pool_params_init(&pp);
    pp.pooled_height = PH;
    pp.pooled_width = PW;
    CHECK_STATUS(pyroi_ps_roi_pool_forward_f64(x, shape, strides, box, 1, 4, batch, y,
                                               y_strides, &pp), PYROI_OK);
    for (i = 0; i < C; ++i) {
        CHECK(y[i] == i);
    }
}

/* <ps_roi_align(x), g> == <x, ps_roi_align_backward(g)> in float64 over random boxes. */
static void test_align_adjoint(void)
{
    enum { N = 2, COUT = 2, PH = 3, PW = 2, C = COUT * PH * PW, H = 9, W = 11, K = 24 };
    static double x[N * C * H * W], gx[N * C * H * W];
    static double y[K * COUT * PH * PW], gy[K * COUT * PH * PW];
    const int64_t shape[4] = {N, C, H, W}, strides[4] = {C * H * W, H * W, W, 1};
    const int64_t y_strides[4] = {COUT * PH * PW, PH * PW, PW, 1};
    static const int ratios[] = {-1, 1, 3};
    double boxes[K * 4];
    int64_t batch[K];
    unsigned long long seed = 777;
    pyroi_ps_roi_align_params p;
    size_t r;
    int k;

    check_random_fill(x, N * C * H * W, -0.5, 0.5, &seed);
    check_random_fill(gy, K * COUT * PH * PW, -0.5, 0.5, &seed);
    for (k = 0; k < K; ++k) {
        batch[k] = k % N;
        boxes[4 * k + 0] = -4 + 20 * check_random(&seed);
        boxes[4 * k + 1] = -4 + 17 * check_random(&seed);
        boxes[4 * k + 2] = -4 + 20 * check_random(&seed); /* some boxes are inverted */
        boxes[4 * k + 3] = -4 + 17 * check_random(&seed);
    }
    for (r = 0; r < sizeof(ratios) / sizeof(ratios[0]); ++r) {
        pyroi_ps_roi_align_params_init(&p);
        p.pooled_height = PH;
        p.pooled_width = PW;
        p.spatial_scale_h = p.spatial_scale_w = 0.7;
        p.sampling_ratio = ratios[r];
        CHECK_STATUS(pyroi_ps_roi_align_forward_f64(x, shape, strides, boxes, K, 4, batch, y,
                                                    y_strides, &p), PYROI_OK);
        CHECK_STATUS(pyroi_ps_roi_align_backward_f64(gy, y_strides, boxes, K, 4, batch, gx,
                                                     shape, strides, &p), PYROI_OK);
        CHECK_ADJOINT(y, gy, K * COUT * PH * PW, x, gx, N * C * H * W);
    }
}

/* Forward and backward of both operators are bit-identical for 1, 2 and 3 threads. */
static void test_thread_invariance(void)
{
    enum { N = 2, COUT = 4, P = 7, C = COUT * P * P, H = 40, W = 44, K = 600 };
    const int64_t shape[4] = {N, C, H, W}, strides[4] = {C * H * W, H * W, W, 1};
    const int64_t y_strides[4] = {COUT * P * P, P * P, P, 1};
    const size_t x_count = (size_t)N * C * H * W, y_count = (size_t)K * COUT * P * P;
    float *x = (float *)malloc(sizeof(float) * x_count);
    float *g1 = (float *)malloc(sizeof(float) * x_count);
    float *gn = (float *)malloc(sizeof(float) * x_count);
    float *y1 = (float *)malloc(sizeof(float) * y_count);
    float *yn = (float *)malloc(sizeof(float) * y_count);
    float boxes[K * 4];
    int64_t batch[K];
    unsigned long long seed = 4242;
    pyroi_ps_roi_align_params pa;
    pyroi_ps_roi_pool_params pp;
    size_t i;
    int op, t;

    if (!x || !g1 || !gn || !y1 || !yn) {
        CHECK(!"allocation");
        free(x), free(g1), free(gn), free(y1), free(yn);
        return;
    }
    for (i = 0; i < x_count; ++i) {
        x[i] = (float)check_random(&seed) - 0.5f;
    }
    check_random_boxes(boxes, batch, K, N, &seed);
    pyroi_ps_roi_align_params_init(&pa);
    pa.pooled_height = pa.pooled_width = P;
    pa.spatial_scale_h = pa.spatial_scale_w = 0.75;
    pyroi_ps_roi_pool_params_init(&pp);
    pp.pooled_height = pp.pooled_width = P;
    pp.spatial_scale_h = pp.spatial_scale_w = 0.75;
    for (op = 0; op < 2; ++op) { /* 0: PSRoIAlign, 1: PSRoIPool */
        for (t = 1; t <= 3; ++t) {
            float *y = t == 1 ? y1 : yn, *g = t == 1 ? g1 : gn;
            pa.num_threads = pp.num_threads = t;
            CHECK_STATUS(op == 0 ? pyroi_ps_roi_align_forward_f32(x, shape, strides, boxes, K, 4,
                                                                  batch, y, y_strides, &pa)
                                 : pyroi_ps_roi_pool_forward_f32(x, shape, strides, boxes, K, 4,
                                                                 batch, y, y_strides, &pp),
                         PYROI_OK);
            /* the forward output doubles as grad_output */
            CHECK_STATUS(op == 0 ? pyroi_ps_roi_align_backward_f32(y1, y_strides, boxes, K, 4,
                                                                   batch, g, shape, strides, &pa)
                                 : pyroi_ps_roi_pool_backward_f32(y1, y_strides, boxes, K, 4,
                                                                  batch, g, shape, strides, &pp),
                         PYROI_OK);
            CHECK(memcmp(y1, yn, sizeof(float) * y_count) == 0 || t == 1);
            CHECK(memcmp(g1, gn, sizeof(float) * x_count) == 0 || t == 1);
        }
    }
    free(x);
    free(g1);
    free(gn);
    free(y1);
    free(yn);
}

/* ------------------------------------------------------------------------------------------
 * status codes
 * ---------------------------------------------------------------------------------------- */

enum { SH = 4, SW = 4, SC = 8 }; /* 2 output channels of 2 x 2 bins */
static float sx[SC * SH * SW];
static float sy[2 * 4 * 2];
static float sg[SC * SH * SW];
static const int64_t s_shape[4] = {1, SC, SH, SW};
static const int64_t s_strides[4] = {SC * SH * SW, SH * SW, SW, 1};
static const int64_t s_y_strides[4] = {8, 4, 2, 1};

static void align_params(pyroi_ps_roi_align_params *p)
{
    pyroi_ps_roi_align_params_init(p);
    p->pooled_height = p->pooled_width = 2;
    p->sampling_ratio = 2;
}

static void pool_params(pyroi_ps_roi_pool_params *p)
{
    pyroi_ps_roi_pool_params_init(p);
    p->pooled_height = p->pooled_width = 2;
}

CHECK_TENSOR_CALL(ps_align_call, pyroi_ps_roi_align)

CHECK_TENSOR_CALL(ps_pool_call, pyroi_ps_roi_pool)

/* One call of the status tests on the tensors above; `params` points to the op's struct. */
enum ps_call { ALIGN_FWD, ALIGN_BWD, POOL_FWD, POOL_BWD };

static pyroi_status ps_call(enum ps_call op, const float box[4], int64_t batch,
                            const int64_t shape[4], const void *params)
{
    const int backward = op == ALIGN_BWD || op == POOL_BWD;
    const check_tensors t = {backward ? sg : sx, shape, s_strides, box, 1, 4, &batch, sy,
                             s_y_strides};
    return (op == ALIGN_FWD || op == ALIGN_BWD ? ps_align_call : ps_pool_call)(backward, &t,
                                                                                params);
}

static void test_params_init(void)
{
    pyroi_ps_roi_align_params a;
    pyroi_ps_roi_pool_params b;
    CHECK_PARAMS_INIT(pyroi_ps_roi_align_params_init, a);
    CHECK(a.sampling_ratio == -1);
    CHECK_PARAMS_INIT(pyroi_ps_roi_pool_params_init, b);
}

static void test_status_params(void)
{
    const float box[4] = {0, 0, 2, 2};
    pyroi_ps_roi_align_params a;
    pyroi_ps_roi_pool_params b;
    const check_params_view align_view = {&a.pooled_height, &a.pooled_width,
                                          &a.spatial_scale_h, &a.spatial_scale_w,
                                          &a.sampling_ratio, &a.num_threads};
    const check_params_view pool_view = {&b.pooled_height, &b.pooled_width, &b.spatial_scale_h,
                                         &b.spatial_scale_w, NULL, &b.num_threads};

    align_params(&a);
    pool_params(&b);
    CHECK_STATUS(ps_call(ALIGN_FWD, box, 0, s_shape, &a), PYROI_OK);
    CHECK_STATUS(ps_call(ALIGN_BWD, box, 0, s_shape, &a), PYROI_OK);
    CHECK_STATUS(ps_call(POOL_FWD, box, 0, s_shape, &b), PYROI_OK);
    CHECK_STATUS(ps_call(POOL_BWD, box, 0, s_shape, &b), PYROI_OK);
    CHECK_STATUS(ps_call(ALIGN_FWD, box, 0, s_shape, NULL), PYROI_E_NULL_POINTER);
    CHECK_STATUS(ps_call(POOL_BWD, box, 0, s_shape, NULL), PYROI_E_NULL_POINTER);
    CHECK_PARAMS_STATUS(align_view, align_params(&a), ps_call(ALIGN_FWD, box, 0, s_shape, &a),
                        ps_call(ALIGN_BWD, box, 0, s_shape, &a));
    CHECK_PARAMS_STATUS(pool_view, pool_params(&b), ps_call(POOL_FWD, box, 0, s_shape, &b),
                        ps_call(POOL_BWD, box, 0, s_shape, &b));
}

static void test_status_shapes(void)
{
    const float box[4] = {0, 0, 2, 2};
    const int64_t batch = 0;
    int64_t shape[4];
    pyroi_ps_roi_align_params a;
    pyroi_ps_roi_pool_params b;

    align_params(&a);
    pool_params(&b);
    /* channels not a multiple of PH * PW */
    memcpy(shape, s_shape, sizeof(shape));
    shape[1] = 6;
    CHECK_STATUS(ps_call(ALIGN_FWD, box, 0, shape, &a), PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(ps_call(ALIGN_BWD, box, 0, shape, &a), PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(ps_call(POOL_FWD, box, 0, shape, &b), PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(ps_call(POOL_BWD, box, 0, shape, &b), PYROI_E_INVALID_SHAPE);
    /* PH * PW overflows int64: only C = 0 is a multiple, and even then the output shape
     * (K, 0, 2^40, 2^40) is rejected: the product of its non-zero sizes overflows int64 */
    b.pooled_height = b.pooled_width = INT64_C(1) << 40;
    CHECK_STATUS(ps_call(POOL_FWD, box, 0, s_shape, &b), PYROI_E_INVALID_SHAPE);
    shape[1] = 0;
    CHECK_STATUS(pyroi_ps_roi_pool_forward_f32(NULL, shape, s_strides, box, 1, 4, &batch, NULL,
                                               s_y_strides, &b), PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_ps_roi_pool_backward_f32(NULL, s_y_strides, box, 1, 4, &batch, NULL,
                                                shape, s_strides, &b), PYROI_E_INVALID_SHAPE);
    pool_params(&b);
    memcpy(shape, s_shape, sizeof(shape));
    shape[3] = -1;
    CHECK_STATUS(ps_call(POOL_FWD, box, 0, shape, &b), PYROI_E_INVALID_SHAPE);
    {
        const check_tensors valid = {sg, s_shape, s_strides, box, 1, 4, &batch, sy, s_y_strides};
        check_tensor_status(ps_align_call, &valid, &a, "ps_roi_align");
        check_tensor_status(ps_pool_call, &valid, &b, "ps_roi_pool");
    }
}

static void test_status_rois(void)
{
    const float inside[4] = {0, 0, 2, 2};
    const float nan_box[4] = {0, NAN, 2, 2};
    const float inf_box[4] = {0, 0, INFINITY, 2};
    const float scaled_overflow[4] = {0, 0, 3e38f, 2}; /* finite, times 2 is not */
    const float huge[4] = {0, 0, 1e30f, 2};             /* adaptive grid of 1e30 samples */
    pyroi_ps_roi_align_params a;
    pyroi_ps_roi_pool_params b;
    int i;

    align_params(&a);
    pool_params(&b);
    CHECK_STATUS(ps_call(ALIGN_FWD, inside, 1, s_shape, &a), PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(ps_call(POOL_BWD, inside, -1, s_shape, &b), PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(ps_call(ALIGN_FWD, nan_box, 0, s_shape, &a), PYROI_E_INVALID_BOX);
    CHECK_STATUS(ps_call(ALIGN_BWD, inf_box, 0, s_shape, &a), PYROI_E_INVALID_BOX);
    CHECK_STATUS(ps_call(POOL_FWD, nan_box, 0, s_shape, &b), PYROI_E_INVALID_BOX);
    CHECK_STATUS(ps_call(POOL_BWD, inf_box, 0, s_shape, &b), PYROI_E_INVALID_BOX);
    CHECK_STATUS(ps_call(POOL_FWD, scaled_overflow, 0, s_shape, &b), PYROI_OK);
    b.spatial_scale_w = 2.0;
    CHECK_STATUS(ps_call(POOL_FWD, scaled_overflow, 0, s_shape, &b), PYROI_E_INVALID_BOX);
    CHECK_STATUS(ps_call(POOL_FWD, huge, 0, s_shape, &b), PYROI_OK); /* saturates; no grid */
    CHECK_STATUS(ps_call(ALIGN_FWD, huge, 0, s_shape, &a), PYROI_OK); /* a fixed ratio samples it */
    a.sampling_ratio = 0;
    CHECK_STATUS(ps_call(ALIGN_FWD, huge, 0, s_shape, &a), PYROI_E_INVALID_BOX);

    /* a failing call leaves its output untouched */
    for (i = 0; i < 16; ++i) {
        sy[i] = 42.0f;
    }
    for (i = 0; i < SC * SH * SW; ++i) {
        sg[i] = 42.0f;
    }
    pool_params(&b);
    CHECK_STATUS(ps_call(POOL_FWD, nan_box, 0, s_shape, &b), PYROI_E_INVALID_BOX);
    CHECK_STATUS(pyroi_ps_roi_align_backward_f32(sx, s_y_strides, nan_box, 1, 4,
                                                 (const int64_t[]){0}, sg, s_shape, s_strides,
                                                 &a), PYROI_E_INVALID_BOX);
    for (i = 0; i < 16; ++i) {
        CHECK(sy[i] == 42.0f);
    }
    for (i = 0; i < SC * SH * SW; ++i) {
        CHECK(sg[i] == 42.0f);
    }
}

static void test_find_invalid_roi(void)
{
    const float boxes[3 * 4] = {0, 0, 2, 2, 0, 0, 3, 3, 0, NAN, 1, 1};
    const double boxes_d[2 * 4] = {0, 0, 2, 2, 0, 0, 1e300, 3};
    const int64_t good[3] = {0, 0, 0}, bad[3] = {0, 1, 0};
    pyroi_ps_roi_align_params a;
    pyroi_ps_roi_pool_params b;
    int64_t failed = 99;

    align_params(&a);
    pool_params(&b);
    CHECK_FIRST_OFFENDER(pyroi_ps_roi_align_find_invalid_roi, boxes, 4, good, bad, SH, SW, &a);
    CHECK_FIRST_OFFENDER(pyroi_ps_roi_pool_find_invalid_roi, boxes, 4, good, bad, &b);
    b.spatial_scale_w = 1e10; /* 1e300 * 1e10 overflows double */
    CHECK_STATUS(pyroi_ps_roi_pool_find_invalid_roi_f64(boxes_d, 2, 4, good, 1, &b, &failed),
                 PYROI_E_INVALID_BOX);
    CHECK(failed == 1);
    CHECK_STATUS(pyroi_ps_roi_pool_find_invalid_roi_f64(boxes_d, 2, 4, good, -1, &b, &failed),
                 PYROI_E_INVALID_SHAPE);
    a.sampling_ratio = 0; /* the adaptive grid of 1e300 is too large */
    CHECK_STATUS(pyroi_ps_roi_align_find_invalid_roi_f64(boxes_d, 2, 4, good, 1, SH, SW, &a,
                                                         &failed), PYROI_E_INVALID_BOX);
    CHECK(failed == 1);
}

static void test_no_memory(void)
{
    /* 2^31 - 1 samples per bin on each axis, all inside the map, would need about 100 GB of
     * tap tables: beyond PYROI_MAX_SAMPLING_RATIO, rejected before anything is allocated */
    const float box[4] = {0, 0, 3, 3};
    pyroi_ps_roi_align_params a;
    align_params(&a);
    a.sampling_ratio = PYROI_MAX_SAMPLING_GRID;
    CHECK_STATUS(ps_call(ALIGN_FWD, box, 0, s_shape, &a), PYROI_E_INVALID_SAMPLING_RATIO);
    CHECK_STATUS(ps_call(ALIGN_BWD, box, 0, s_shape, &a), PYROI_E_INVALID_SAMPLING_RATIO);
}

int main(void)
{
    check_ramp_f32(sx, SC * SH * SW);
    test_pool_quirk_known_answer();
    test_pool_float64_backward_rounding();
    test_align_edge_table();
    test_align_without_samples();
    test_channel_mapping();
    test_align_adjoint();
    test_thread_invariance();
    test_params_init();
    test_status_params();
    test_status_shapes();
    test_status_rois();
    test_find_invalid_roi();
    test_no_memory();
    return check_report("test_ps_roi");
}
