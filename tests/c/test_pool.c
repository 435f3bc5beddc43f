/* RoIPool (quantised max pooling): known answers (docs/semantics.md §5.1, §11.3, §11.6, verified on
 * torchvision 0.29.1), argmax, the backward, layouts, thread counts and every status code. */
#include "pyroi.h"
#include "check.h"

#include <float.h>
#include <string.h>

static const int64_t one_bin[4] = {1, 1, 1, 1};

static void test_defaults(void)
{
    pyroi_roi_pool_params p;
    CHECK_PARAMS_INIT(pyroi_roi_pool_params_init, p);
    CHECK(strstr(pyroi_status_string(PYROI_E_INVALID_ARGMAX), "argmax") != NULL);
    CHECK(strcmp(pyroi_status_string(PYROI_E_INVALID_ARGMAX),
                 pyroi_status_string(PYROI_E_NO_MEMORY)) != 0);
}

/* docs/semantics.md §5.1: a 2x2 RoI pooled to 3x3 on a 4x4 arange repeats pixels. */
static void test_small_roi_repeats_pixels(void)
{
    const int64_t shape[4] = {1, 1, 4, 4}, strides[4] = {16, 16, 4, 1};
    const int64_t out_strides[4] = {9, 9, 3, 1};
    const float box[4] = {1, 1, 2, 2};
    const int64_t batch[1] = {0};
    const float expected[9] = {5, 6, 6, 9, 10, 10, 9, 10, 10};
    const int64_t expected_argmax[9] = {5, 6, 6, 9, 10, 10, 9, 10, 10};
    float x[16], y[9];
    int64_t argmax[9];
    pyroi_roi_pool_params p;
    int i;

    check_ramp_f32(x, 16);
    check_roi_pool_params(&p, 3, 3);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, batch, y, out_strides,
                                            argmax, out_strides, &p), PYROI_OK);
    for (i = 0; i < 9; ++i) {
        CHECK(y[i] == expected[i]);
        CHECK(argmax[i] == expected_argmax[i]);
    }
    /* argmax is optional */
    memset(y, 0, sizeof(y));
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, batch, y, out_strides,
                                            NULL, NULL, &p), PYROI_OK);
    for (i = 0; i < 9; ++i) {
        CHECK(y[i] == expected[i]);
    }
}

/* docs/semantics.md §11.6: arange(100) as 10x10, 1x1 output; half away from zero rounding. */
static void test_rounding(void)
{
    const int64_t shape[4] = {1, 1, 10, 10}, strides[4] = {100, 100, 10, 1};
    const int64_t out_strides[4] = {1, 1, 1, 1};
    const double boxes[5 * 4] = {
        2.5, 2.5, 2.5, 2.5,     /* -> pixel (3, 3) = 33 */
        1.5, 1.5, 1.5, 1.5,     /* -> pixel (2, 2) = 22 */
        -0.5, -0.5, -0.5, -0.5, /* -> pixel (-1, -1): empty bin */
        0.5, 0.5, 0.5, 0.5,     /* -> pixel (1, 1) = 11 */
        3.5, 4.5, 3.5, 4.5};    /* -> pixel (5, 4) = 54 */
    const int64_t batch[5] = {0, 0, 0, 0, 0};
    const double expected[5] = {33, 22, 0, 11, 54};
    const int64_t expected_argmax[5] = {33, 22, -1, 11, 54};
    double x[100], y[5];
    int64_t argmax[5];
    pyroi_roi_pool_params p;
    int i;

    check_ramp_f64(x, 100);
    check_roi_pool_params(&p, 1, 1);
    CHECK_STATUS(pyroi_roi_pool_forward_f64(x, shape, strides, boxes, 5, 4, batch, y,
                                            out_strides, argmax, out_strides, &p), PYROI_OK);
    for (i = 0; i < 5; ++i) {
        CHECK(y[i] == expected[i]);
        CHECK(argmax[i] == expected_argmax[i]);
    }
}

/* docs/semantics.md §11.3 (mmcv test_roi_pool.py; torchvision gives the same): 2x2 output. */
static void test_mmcv_cases(void)
{
    const int64_t out_strides[4] = {4, 4, 2, 1};
    const int64_t batch[1] = {0};
    pyroi_roi_pool_params p;
    int i;

    check_roi_pool_params(&p, 2, 2);
    { /* one channel, roi (0,0,1,1): every pixel its own bin, gradient ones */
        const float x[4] = {1, 2, 3, 4};
        const int64_t shape[4] = {1, 1, 2, 2}, strides[4] = {4, 4, 2, 1};
        const float box[4] = {0, 0, 1, 1};
        const float ones[4] = {1, 1, 1, 1};
        float y[4], gx[4];
        int64_t argmax[4];
        CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, batch, y,
                                                out_strides, argmax, out_strides, &p), PYROI_OK);
        for (i = 0; i < 4; ++i) {
            CHECK(y[i] == x[i]);
            CHECK(argmax[i] == i);
        }
        CHECK_STATUS(pyroi_roi_pool_backward_f32(ones, out_strides, argmax, out_strides, batch, 1,
                                                 gx, shape, strides, &p), PYROI_OK);
        for (i = 0; i < 4; ++i) {
            CHECK(gx[i] == 1.0f);
        }
    }
    { /* two channels */
        const double x[8] = {1, 2, 3, 4, 4, 3, 2, 1};
        const int64_t shape[4] = {1, 2, 2, 2}, strides[4] = {8, 4, 2, 1};
        const int64_t strides2[4] = {8, 4, 2, 1};
        const double box[4] = {0, 0, 1, 1};
        const double ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        double y[8], gx[8];
        int64_t argmax[8];
        CHECK_STATUS(pyroi_roi_pool_forward_f64(x, shape, strides, box, 1, 4, batch, y, strides2,
                                                argmax, strides2, &p), PYROI_OK);
        for (i = 0; i < 8; ++i) {
            CHECK(y[i] == x[i]);
        }
        CHECK_STATUS(pyroi_roi_pool_backward_f64(ones, strides2, argmax, strides2, batch, 1, gx,
                                                 shape, strides, &p), PYROI_OK);
        for (i = 0; i < 8; ++i) {
            CHECK(gx[i] == 1.0);
        }
    }
    { /* 4x4 map, roi (0,0,3,3) -> [[4,8],[12,16]], gradient 1 at (1,1),(1,3),(3,1),(3,3) */
        const float x[16] = {1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16};
        const int64_t shape[4] = {1, 1, 4, 4}, strides[4] = {16, 16, 4, 1};
        const float box[4] = {0, 0, 3, 3};
        const float ones[4] = {1, 1, 1, 1};
        const float expected[4] = {4, 8, 12, 16};
        const float expected_grad[16] = {0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1};
        float y[4], gx[16];
        int64_t argmax[4];
        CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, batch, y,
                                                out_strides, argmax, out_strides, &p), PYROI_OK);
        for (i = 0; i < 4; ++i) {
            CHECK(y[i] == expected[i]);
        }
        CHECK_STATUS(pyroi_roi_pool_backward_f32(ones, out_strides, argmax, out_strides, batch, 1,
                                                 gx, shape, strides, &p), PYROI_OK);
        for (i = 0; i < 16; ++i) {
            CHECK(gx[i] == expected_grad[i]);
        }
    }
}

/* Ties, NaN, -inf, all-negative and below -FLT_MAX bins (verified on torchvision 0.29.1). */
static void test_special_values(void)
{
    const int64_t shape[4] = {1, 1, 3, 3}, strides[4] = {9, 9, 3, 1};
    const float box_f[4] = {0, 0, 2, 2};
    const double box_d[4] = {0, 0, 2, 2};
    const int64_t batch[1] = {0};
    pyroi_roi_pool_params p;
    float xf[9], yf;
    double xd[9], yd;
    int64_t a;
    int i;

    check_roi_pool_params(&p, 1, 1);
    { /* ties: the first maximum in row-major order */
        const float tie[9] = {1, 3, 3, 3, 2, 1, 0, 3, 0};
        CHECK_STATUS(pyroi_roi_pool_forward_f32(tie, shape, strides, box_f, 1, 4, batch, &yf,
                                                one_bin, &a, one_bin, &p), PYROI_OK);
        CHECK(yf == 3.0f && a == 1);
    }
    { /* NaN never wins; all-negative values keep their maximum */
        const float mixed[9] = {NAN, -5, -7, -3, NAN, -1, -9, -2, NAN};
        CHECK_STATUS(pyroi_roi_pool_forward_f32(mixed, shape, strides, box_f, 1, 4, batch, &yf,
                                                one_bin, &a, one_bin, &p), PYROI_OK);
        CHECK(yf == -1.0f && a == 5);
    }
    /* only NaN and -inf: -FLT_MAX with argmax -1 */
    for (i = 0; i < 9; ++i) {
        xf[i] = -INFINITY;
        xd[i] = -INFINITY;
    }
    xf[0] = NAN;
    xd[4] = NAN;
    CHECK_STATUS(pyroi_roi_pool_forward_f32(xf, shape, strides, box_f, 1, 4, batch, &yf, one_bin,
                                            &a, one_bin, &p), PYROI_OK);
    CHECK(yf == -FLT_MAX && a == -1);
    CHECK_STATUS(pyroi_roi_pool_forward_f64(xd, shape, strides, box_d, 1, 4, batch, &yd, one_bin,
                                            &a, one_bin, &p), PYROI_OK);
    CHECK(yd == (double)-FLT_MAX && a == -1);
    /* float32: exactly -FLT_MAX does not beat the start value */
    for (i = 0; i < 9; ++i) {
        xf[i] = -FLT_MAX;
    }
    CHECK_STATUS(pyroi_roi_pool_forward_f32(xf, shape, strides, box_f, 1, 4, batch, &yf, one_bin,
                                            &a, one_bin, &p), PYROI_OK);
    CHECK(yf == -FLT_MAX && a == -1);
    /* float64 starts at -FLT_MAX too: values below it give -FLT_MAX and argmax -1 */
    for (i = 0; i < 9; ++i) {
        xd[i] = -1e300;
    }
    CHECK_STATUS(pyroi_roi_pool_forward_f64(xd, shape, strides, box_d, 1, 4, batch, &yd, one_bin,
                                            &a, one_bin, &p), PYROI_OK);
    CHECK(yd == (double)-FLT_MAX && a == -1);
    xd[7] = -1e38;
    CHECK_STATUS(pyroi_roi_pool_forward_f64(xd, shape, strides, box_d, 1, 4, batch, &yd, one_bin,
                                            &a, one_bin, &p), PYROI_OK);
    CHECK(yd == -1e38 && a == 7);
    /* the backward propagates nothing from an argmax of -1 */
    {
        const double g = 5.0;
        const int64_t none = -1;
        double gx[9];
        CHECK_STATUS(pyroi_roi_pool_backward_f64(&g, one_bin, &none, one_bin, batch, 1, gx, shape,
                                                 strides, &p), PYROI_OK);
        for (i = 0; i < 9; ++i) {
            CHECK(gx[i] == 0.0);
        }
    }
}

/* Out-of-map and inverted RoIs, separate scales, coordinates far beyond int32. */
static void test_geometry(void)
{
    const int64_t shape[4] = {1, 1, 10, 10}, strides[4] = {100, 100, 10, 1};
    const int64_t out_strides[4] = {4, 4, 2, 1};
    const int64_t batch[1] = {0};
    pyroi_roi_pool_params p;
    double x[100], y[4];
    int64_t argmax[4];
    int i;

    check_ramp_f64(x, 100);
    check_roi_pool_params(&p, 2, 2);
    { /* fully outside: zeros and -1 */
        const double box[4] = {10, 10, 12, 12};
        CHECK_STATUS(pyroi_roi_pool_forward_f64(x, shape, strides, box, 1, 4, batch, y,
                                                out_strides, argmax, out_strides, &p), PYROI_OK);
        for (i = 0; i < 4; ++i) {
            CHECK(y[i] == 0.0 && argmax[i] == -1);
        }
    }
    { /* inverted: one pixel at the start corner, bins [0,1) then [0,1) again (ceil(0.5)) */
        const double box[4] = {6, 4, 2, 1};
        CHECK_STATUS(pyroi_roi_pool_forward_f64(x, shape, strides, box, 1, 4, batch, y,
                                                out_strides, argmax, out_strides, &p), PYROI_OK);
        for (i = 0; i < 4; ++i) {
            CHECK(y[i] == 46.0 && argmax[i] == 46);
        }
    }
    { /* separate scales: x * 0.5, y * 0.25 */
        const double box[4] = {4, 8, 4, 8}; /* -> pixel (2, 2) */
        pyroi_roi_pool_params q;
        check_roi_pool_params(&q, 1, 1);
        q.spatial_scale_w = 0.5;
        q.spatial_scale_h = 0.25;
        CHECK_STATUS(pyroi_roi_pool_forward_f64(x, shape, strides, box, 1, 4, batch, y, one_bin,
                                                argmax, one_bin, &q), PYROI_OK);
        CHECK(y[0] == 22.0 && argmax[0] == 22);
    }
    { /* torchvision-defined large coordinates (values checked on 0.29.1) */
        const double box[4] = {-1e9, -1e9, 1e9, 1e9};
        const double expected[4] = {0, 9, 90, 99};
        CHECK_STATUS(pyroi_roi_pool_forward_f64(x, shape, strides, box, 1, 4, batch, y,
                                                out_strides, argmax, out_strides, &p), PYROI_OK);
        for (i = 0; i < 4; ++i) {
            CHECK(y[i] == expected[i]);
        }
    }
    { /* beyond int32 and int64: defined; the rounded corners are clamped to +-2^53, so bin
       * 0 of a huge box takes the whole map and the next bins start past it */
        const float xf[100] = {0};
        const float box[4] = {0, 0, 1e30f, FLT_MAX};
        const double box2[4] = {-1e300, -1e30, 1, 1}; /* size 2^53 + 2: the last bins */
        float yf[4];
        CHECK_STATUS(pyroi_roi_pool_forward_f32(xf, shape, strides, box, 1, 4, batch, yf,
                                                out_strides, argmax, out_strides, &p), PYROI_OK);
        CHECK(argmax[0] == 0 && argmax[1] == -1 && argmax[2] == -1 && argmax[3] == -1);
        CHECK_STATUS(pyroi_roi_pool_forward_f64(x, shape, strides, box2, 1, 4, batch, y,
                                                out_strides, argmax, out_strides, &p), PYROI_OK);
        CHECK(argmax[0] == -1 && argmax[1] == -1 && argmax[2] == -1 && argmax[3] == 11);
        CHECK(y[0] == 0.0 && y[3] == 11.0);
    }
}

/* NHWC memory described by strides, a transposed output and argmax, and thread counts. */
static void test_layouts_and_threads(void)
{
    enum { N = 2, C = 16, H = 40, W = 37, K = 200, PH = 3, PW = 4 };
    static float x_nchw[N * C * H * W], x_nhwc[N * C * H * W];
    static float y_a[K * C * PH * PW], y_b[K * C * PH * PW], y_c[K * C * PH * PW];
    static int64_t a_a[K * C * PH * PW], a_b[K * C * PH * PW], a_c[K * C * PH * PW];
    static float g[K * C * PH * PW], gx_a[N * C * H * W], gx_b[N * C * H * W];
    const int64_t shape[4] = {N, C, H, W};
    const int64_t nchw[4] = {C * H * W, H * W, W, 1};
    const int64_t nhwc[4] = {H * W * C, 1, W * C, C};
    const int64_t out_contiguous[4] = {C * PH * PW, PH * PW, PW, 1};
    const int64_t out_transposed[4] = {1, K, K * C * PW, K * C};
    float boxes[K * 4];
    int64_t batch[K];
    pyroi_roi_pool_params p;
    unsigned long long seed = 99;
    int c, k, i, threads;

    check_random_nchw_nhwc(x_nchw, x_nhwc, N, C, H, W, -0.5f, &seed);
    for (k = 0; k < K; ++k) {
        for (i = 0; i < 4; ++i) {
            boxes[4 * k + i] = (float)(-4.0 + 52.0 * check_random(&seed));
        }
        batch[k] = k % N;
    }
    for (i = 0; i < K * C * PH * PW; ++i) {
        g[i] = (float)check_random(&seed);
    }
    check_roi_pool_params(&p, PH, PW);
    p.spatial_scale_h = 0.8;
    p.spatial_scale_w = 0.7;
    p.num_threads = 1;
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x_nchw, shape, nchw, boxes, K, 4, batch, y_a,
                                            out_contiguous, a_a, out_contiguous, &p), PYROI_OK);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x_nhwc, shape, nhwc, boxes, K, 4, batch, y_b,
                                            out_transposed, a_b, out_transposed, &p), PYROI_OK);
    for (k = 0; k < K; ++k)
        for (c = 0; c < C; ++c)
            for (i = 0; i < PH * PW; ++i) {
                const int ph = i / PW, pw = i % PW;
                const int contiguous = (k * C + c) * PH * PW + i;
                const int transposed = k + K * c + K * C * pw + K * C * PW * ph;
                CHECK(y_a[contiguous] == y_b[transposed]);
                CHECK(a_a[contiguous] == a_b[transposed]);
            }
    CHECK_STATUS(pyroi_roi_pool_backward_f32(g, out_contiguous, a_a, out_contiguous, batch, K,
                                             gx_a, shape, nchw, &p), PYROI_OK);
    for (threads = 2; threads <= 4; ++threads) {
        p.num_threads = threads;
        CHECK_STATUS(pyroi_roi_pool_forward_f32(x_nchw, shape, nchw, boxes, K, 4, batch, y_c,
                                                out_contiguous, a_c, out_contiguous, &p),
                     PYROI_OK);
        CHECK(memcmp(y_a, y_c, sizeof(y_a)) == 0);
        CHECK(memcmp(a_a, a_c, sizeof(a_a)) == 0);
        CHECK_STATUS(pyroi_roi_pool_backward_f32(g, out_contiguous, a_a, out_contiguous, batch,
                                                 K, gx_b, shape, nchw, &p), PYROI_OK);
        CHECK(memcmp(gx_a, gx_b, sizeof(gx_a)) == 0);
    }
    /* with argmax fixed the op is linear: <y, g> == <x, backward(g)> */
    {
        double lhs = 0.0, rhs = 0.0, magnitude = 0.0;
        for (i = 0; i < K * C * PH * PW; ++i) {
            lhs += (double)y_a[i] * (double)g[i];
            magnitude += fabs((double)y_a[i] * (double)g[i]);
        }
        for (i = 0; i < N * C * H * W; ++i) {
            rhs += (double)x_nchw[i] * (double)gx_a[i];
        }
        CHECK(fabs(lhs - rhs) <= 1e-5 * magnitude);
    }
}

static void test_status_codes(void)
{
    enum { H = 4, W = 4 };
    static float x[H * W], y[4], gx[H * W];
    static int64_t argmax[4];
    const int64_t shape[4] = {1, 1, H, W}, strides[4] = {H * W, H * W, W, 1};
    const int64_t out_strides[4] = {4, 4, 2, 1};
    const float box[4] = {0, 0, 2, 2};
    const float nan_box[4] = {0, NAN, 2, 2};
    const float inf_box[4] = {0, 0, INFINITY, 2};
    const float big_box[4] = {0, 0, 1e30f, 2};
    const int64_t batch = 0, bad_batch = 1;
    int64_t bad_shape[4], bad_strides[4];
    pyroi_roi_pool_params p;
    int64_t failed = 7;
    int i;

    check_ramp_f32(x, H * W);
    check_roi_pool_params(&p, 2, 2);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, &batch, y, out_strides,
                                            argmax, out_strides, &p), PYROI_OK);
    /* NULL pointers */
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, &batch, y, out_strides,
                                            argmax, out_strides, NULL), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(NULL, shape, strides, box, 1, 4, &batch, y,
                                            out_strides, argmax, out_strides, &p),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, NULL, 1, 4, &batch, y, out_strides,
                                            argmax, out_strides, &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, NULL, y, out_strides,
                                            argmax, out_strides, &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, &batch, NULL,
                                            out_strides, argmax, out_strides, &p),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, &batch, y, out_strides,
                                            argmax, NULL, &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_backward_f32(y, out_strides, NULL, out_strides, &batch, 1, gx,
                                             shape, strides, &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_backward_f32(y, out_strides, argmax, out_strides, NULL, 1, gx,
                                             shape, strides, &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_backward_f32(NULL, out_strides, argmax, out_strides, &batch, 1,
                                             gx, shape, strides, &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_backward_f64(NULL, out_strides, argmax, out_strides, &batch, 1,
                                             NULL, shape, strides, &p), PYROI_E_NULL_POINTER);
    /* nothing addressed: NULL is fine */
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, NULL, 0, 4, NULL, NULL,
                                            out_strides, NULL, NULL, &p), PYROI_OK);
    CHECK_STATUS(pyroi_roi_pool_backward_f32(NULL, out_strides, NULL, out_strides, NULL, 0, gx,
                                             shape, strides, &p), PYROI_OK);
    /* shapes */
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, -1, 4, &batch, y, out_strides,
                                            argmax, out_strides, &p), PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_pool_backward_f32(y, out_strides, argmax, out_strides, &batch, -1, gx,
                                             shape, strides, &p), PYROI_E_INVALID_SHAPE);
    memcpy(bad_shape, shape, sizeof(bad_shape));
    bad_shape[3] = -2;
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, bad_shape, strides, box, 1, 4, &batch, y,
                                            out_strides, argmax, out_strides, &p),
                 PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_pool_backward_f32(y, out_strides, argmax, out_strides, &batch, 1, gx,
                                             bad_shape, strides, &p), PYROI_E_INVALID_SHAPE);
    /* strides: overflowing input, self-overlapping output / argmax / grad_input */
    memcpy(bad_strides, strides, sizeof(bad_strides));
    bad_strides[2] = INT64_MAX / 2;
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, bad_strides, box, 1, 4, &batch, y,
                                            out_strides, argmax, out_strides, &p),
                 PYROI_E_INVALID_STRIDES);
    {
        const int64_t overlapping[4] = {4, 4, 0, 1};
        CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, &batch, y,
                                                overlapping, argmax, out_strides, &p),
                     PYROI_E_INVALID_STRIDES);
        CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, &batch, y,
                                                out_strides, argmax, overlapping, &p),
                     PYROI_E_INVALID_STRIDES);
        /* a broadcast grad_output and argmax are fine inputs */
        argmax[0] = 5;
        CHECK_STATUS(pyroi_roi_pool_backward_f32(y, overlapping, argmax, overlapping, &batch, 1,
                                                 gx, shape, strides, &p), PYROI_OK);
        bad_strides[2] = 0;
        CHECK_STATUS(pyroi_roi_pool_backward_f32(y, out_strides, argmax, out_strides, &batch, 1,
                                                 gx, shape, bad_strides, &p),
                     PYROI_E_INVALID_STRIDES);
    }
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 2, INT64_MIN, &batch, y,
                                            out_strides, argmax, out_strides, &p),
                 PYROI_E_INVALID_STRIDES);
    /* params */
    {
        const check_params_view view = {&p.pooled_height, &p.pooled_width, &p.spatial_scale_h,
                                        &p.spatial_scale_w, NULL, &p.num_threads};
        CHECK_PARAMS_STATUS(view, check_roi_pool_params(&p, 2, 2),
                            pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, &batch, y,
                                                       out_strides, argmax, out_strides, &p),
                            pyroi_roi_pool_backward_f32(y, out_strides, argmax, out_strides,
                                                        &batch, 1, gx, shape, strides, &p));
    }
    /* RoIs */
    check_roi_pool_params(&p, 2, 2);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, &bad_batch, y,
                                            out_strides, argmax, out_strides, &p),
                 PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(pyroi_roi_pool_backward_f32(y, out_strides, argmax, out_strides, &bad_batch, 1,
                                             gx, shape, strides, &p),
                 PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, nan_box, 1, 4, &batch, y,
                                            out_strides, argmax, out_strides, &p),
                 PYROI_E_INVALID_BOX);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, inf_box, 1, 4, &batch, y,
                                            out_strides, argmax, out_strides, &p),
                 PYROI_E_INVALID_BOX);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, big_box, 1, 4, &batch, y,
                                            out_strides, argmax, out_strides, &p), PYROI_OK);
    p.spatial_scale_w = 1e10; /* 1e30 * 1e10 overflows float */
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, big_box, 1, 4, &batch, y,
                                            out_strides, argmax, out_strides, &p),
                 PYROI_E_INVALID_BOX);
    p.spatial_scale_w = 1e300; /* finite as double, infinite as float */
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, &batch, y, out_strides,
                                            argmax, out_strides, &p), PYROI_E_INVALID_BOX);
    {
        const double box_d[4] = {0, 0, 2, 2};
        double x_d[H * W] = {0}, y_d[4];
        CHECK_STATUS(pyroi_roi_pool_forward_f64(x_d, shape, strides, box_d, 1, 4, &batch, y_d,
                                                out_strides, argmax, out_strides, &p), PYROI_OK);
    }
    /* argmax values: -1 .. H*W-1 only */
    check_roi_pool_params(&p, 2, 2);
    argmax[0] = 0;
    argmax[1] = -1;
    argmax[2] = H * W - 1;
    argmax[3] = H * W;
    for (i = 0; i < H * W; ++i) {
        gx[i] = 42.0f;
    }
    CHECK_STATUS(pyroi_roi_pool_backward_f32(y, out_strides, argmax, out_strides, &batch, 1, gx,
                                             shape, strides, &p), PYROI_E_INVALID_ARGMAX);
    argmax[3] = -2;
    CHECK_STATUS(pyroi_roi_pool_backward_f32(y, out_strides, argmax, out_strides, &batch, 1, gx,
                                             shape, strides, &p), PYROI_E_INVALID_ARGMAX);
    for (i = 0; i < H * W; ++i) {
        CHECK(gx[i] == 42.0f); /* a failing call writes nothing */
    }
    argmax[3] = 3;
    CHECK_STATUS(pyroi_roi_pool_backward_f32(y, out_strides, argmax, out_strides, &batch, 1, gx,
                                             shape, strides, &p), PYROI_OK);
    /* an empty plane accepts only -1 */
    {
        const int64_t flat[4] = {1, 1, H * W, 0};
        argmax[0] = argmax[1] = argmax[2] = argmax[3] = -1;
        CHECK_STATUS(pyroi_roi_pool_backward_f32(y, out_strides, argmax, out_strides, &batch, 1,
                                                 NULL, flat, strides, &p), PYROI_OK);
        argmax[2] = 0;
        CHECK_STATUS(pyroi_roi_pool_backward_f32(y, out_strides, argmax, out_strides, &batch, 1,
                                                 NULL, flat, strides, &p),
                     PYROI_E_INVALID_ARGMAX);
    }
    /* no memory: per-worker bin windows for 2^61 output rows cannot be allocated */
    {
        const int64_t tall[4] = {INT64_C(1) << 61, INT64_C(1) << 61, 1, 1};
        check_roi_pool_params(&p, INT64_C(1) << 61, 1);
        CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, box, 1, 4, &batch, y, tall,
                                                NULL, NULL, &p), PYROI_E_NO_MEMORY);
    }
    /* find_invalid_roi names the first offender */
    {
        const float boxes[3 * 4] = {0, 0, 2, 2, 0, 0, 3, 3, 0, NAN, 1, 1};
        const int64_t good[3] = {0, 0, 0}, bad[3] = {0, 1, 0};
        check_roi_pool_params(&p, 2, 2);
        CHECK_FIRST_OFFENDER(pyroi_roi_pool_find_invalid_roi, boxes, 4, good, bad, &p);
        CHECK_STATUS(pyroi_roi_pool_find_invalid_roi_f32(boxes, 3, 4, good, -1, &p, &failed),
                     PYROI_E_INVALID_SHAPE);
        CHECK_STATUS(pyroi_roi_pool_find_invalid_roi_f32(boxes, 3, 4, good, 1, NULL, &failed),
                     PYROI_E_NULL_POINTER);
    }
}

/* The inputs of the large-output tests: count values with ties, NaN and -inf, and num_rois
 * boxes on image 0 of up to 36 x 36 pixels at scale 1 (the first `small` of up to 8 x 8). */
#define DEFINE_STREAM_INPUTS(T, SUFFIX)                                                         \
    static void stream_inputs_##SUFFIX(T *x, int64_t count, T *boxes, int64_t *batch,          \
                                       int64_t num_rois, int64_t small,                        \
                                       unsigned long long seed)                                \
    {                                                                                          \
        int64_t i, k;                                                                          \
        for (i = 0; i < count; ++i) {                                                          \
            const double u = check_random(&seed);                                              \
            x[i] = u < 0.1 ? (T)NAN : (u < 0.2 ? (T)-INFINITY : (T)(int)(8.0 * u) - (T)6);      \
        }                                                                                      \
        for (k = 0; k < num_rois; ++k) {                                                       \
            const double x1 = -6.0 + 56.0 * check_random(&seed);                              \
            const double y1 = -6.0 + 46.0 * check_random(&seed);                              \
            const double side = k < small ? 8.0 : 36.0;                                        \
            boxes[4 * k] = (T)x1;                                                              \
            boxes[4 * k + 1] = (T)y1;                                                          \
            boxes[4 * k + 2] = (T)(x1 + side * check_random(&seed));                           \
            boxes[4 * k + 3] = (T)(y1 + side * check_random(&seed));                           \
            batch[k] = 0;                                                                      \
        }                                                                                      \
    }
DEFINE_STREAM_INPUTS(float, f32)
DEFINE_STREAM_INPUTS(double, f64)

/* Outputs of 8 MiB and more are streamed out past the caches when C-contiguous: the streamed
 * output, argmax and the values-only output equal those written in place into transposed
 * layouts, for channel counts that leave partial lane lines, and for every thread count;
 * so do the input gradients (the outputs serve as output gradients, in both layouts). */
#define DEFINE_STREAM_TEST(T, SUFFIX, CHANNELS)                                                 \
    static void test_streamed_outputs_##SUFFIX(void)                                           \
    {                                                                                          \
        enum { N = 1, C = CHANNELS, H = 20, W = 24, K = 300, PH = 9, PW = 9 };                  \
        static T x[N * C * H * W], y_a[K * C * PH * PW], y_b[K * C * PH * PW];                  \
        static T y_c[K * C * PH * PW], gx_a[N * C * H * W];                                    \
        static T gx_b[N * C * H * W];                                                          \
        static int64_t a_a[K * C * PH * PW], a_b[K * C * PH * PW];                             \
        const int64_t shape[4] = {N, C, H, W}, nchw[4] = {C * H * W, H * W, W, 1};             \
        const int64_t out_contiguous[4] = {C * PH * PW, PH * PW, PW, 1};                       \
        const int64_t out_transposed[4] = {1, K, K * C * PW, K * C};                           \
        T boxes[K * 4];                                                                        \
        int64_t batch[K];                                                                      \
        pyroi_roi_pool_params p;                                                               \
        int64_t i, k, c, nonzero = 0;                                                          \
        int threads;                                                                           \
        stream_inputs_##SUFFIX(x, N * C * H * W, boxes, batch, K, 0, 7);                       \
        check_roi_pool_params(&p, PH, PW);                                                     \
        p.spatial_scale_h = p.spatial_scale_w = 0.5;                                           \
        for (threads = 1; threads <= 3; ++threads) {                                           \
            p.num_threads = threads;                                                           \
            CHECK_STATUS(pyroi_roi_pool_forward_##SUFFIX(x, shape, nchw, boxes, K, 4, batch,   \
                                                         y_a, out_contiguous, a_a,             \
                                                         out_contiguous, &p),                  \
                         PYROI_OK);                                                            \
            CHECK_STATUS(pyroi_roi_pool_forward_##SUFFIX(x, shape, nchw, boxes, K, 4, batch,   \
                                                         y_b, out_transposed, a_b,             \
                                                         out_transposed, &p),                  \
                         PYROI_OK);                                                            \
            CHECK_STATUS(pyroi_roi_pool_forward_##SUFFIX(x, shape, nchw, boxes, K, 4, batch,   \
                                                         y_c, out_contiguous, NULL, NULL, &p), \
                         PYROI_OK);                                                            \
            CHECK(memcmp(y_a, y_c, sizeof(y_a)) == 0);                                         \
            for (k = 0; k < K; ++k)                                                            \
                for (c = 0; c < C; ++c)                                                        \
                    for (i = 0; i < PH * PW; ++i) {                                            \
                        const int64_t contiguous = (k * C + c) * PH * PW + i;                  \
                        const int64_t transposed = k + K * c + K * C * (i % PW) +              \
                                                   K * C * PW * (i / PW);                      \
                        CHECK(memcmp(&y_a[contiguous], &y_b[transposed], sizeof(T)) == 0);     \
                        CHECK(a_a[contiguous] == a_b[transposed]);                             \
                        nonzero += a_a[contiguous] >= 0;                                       \
                    }                                                                          \
            CHECK_STATUS(pyroi_roi_pool_backward_##SUFFIX(y_a, out_contiguous, a_a,            \
                                                          out_contiguous, batch, K, gx_a,      \
                                                          shape, nchw, &p),                    \
                         PYROI_OK);                                                            \
            CHECK_STATUS(pyroi_roi_pool_backward_##SUFFIX(y_b, out_transposed, a_b,            \
                                                          out_transposed, batch, K, gx_b,      \
                                                          shape, nchw, &p),                    \
                         PYROI_OK);                                                            \
            CHECK(memcmp(gx_a, gx_b, sizeof(gx_a)) == 0);                                      \
        }                                                                                      \
        CHECK(nonzero > 0);                                                                    \
    }

DEFINE_STREAM_TEST(float, f32, 100)
DEFINE_STREAM_TEST(double, f64, 50)

/* An int32 argmax (pyroi_roi_pool_*_i32_*, torchvision's width) holds the int64 argmax's
 * values, with the same outputs, and the backward from it gives the same gradient, bit for
 * bit: in every loop order (image blocks, RoI regions, streamed outputs), layout (transposed,
 * and padded rows: the stores and adds at strides) and thread count. RoIs [0, K) on a small
 * map take the image blocks with 8 MiB or more of output (streamed); the first two alone, RoI
 * regions. */
#define DEFINE_INT32_TEST(T, SUFFIX, CHANNELS)                                                  \
    static void test_int32_argmax_##SUFFIX(void)                                               \
    {                                                                                          \
        enum { N = 1, C = CHANNELS, H = 20, W = 24, K = 300, PH = 9, PW = 9 };                  \
        enum { OUT = K * C * PH * (PW + 1) }; /* room for padded rows */                       \
        static T x[N * C * H * W], y_wide[OUT], y_narrow[OUT], gx_wide[N * C * H * W];         \
        static T gx_narrow[N * C * H * W];                                                     \
        static int64_t a_wide[OUT];                                                            \
        static int32_t a_narrow[OUT];                                                          \
        const int64_t shape[4] = {N, C, H, W}, nchw[4] = {C * H * W, H * W, W, 1};             \
        const int64_t layouts[3][4] = {{C * PH * PW, PH * PW, PW, 1},                          \
                                       {1, K, K * C * PW, K * C},                              \
                                       {C * PH * (PW + 1), PH * (PW + 1), PW + 1, 1}};         \
        const int64_t rois[2] = {K, 2};                                                        \
        T boxes[K * 4];                                                                        \
        int64_t batch[K];                                                                      \
        pyroi_roi_pool_params p;                                                               \
        int64_t i, k, nonzero = 0;                                                             \
        int threads, layout, r;                                                                \
        stream_inputs_##SUFFIX(x, N * C * H * W, boxes, batch, K, 2, 11);                      \
        check_roi_pool_params(&p, PH, PW);                                                     \
        p.spatial_scale_h = p.spatial_scale_w = 0.5;                                           \
        for (threads = 1; threads <= 2; ++threads)                                             \
            for (layout = 0; layout < 3; ++layout)                                             \
                for (r = 0; r < 2; ++r) {                                                      \
                    const int64_t *out = layouts[layout];                                      \
                    p.num_threads = threads;                                                   \
                    for (i = 0; i < OUT; ++i) { /* entries not written stay equal */           \
                        a_wide[i] = a_narrow[i] = -7;                                          \
                        y_wide[i] = y_narrow[i] = (T)-7;                                       \
                    }                                                                          \
                    CHECK_STATUS(pyroi_roi_pool_forward_##SUFFIX(x, shape, nchw, boxes,        \
                                                                 rois[r], 4, batch, y_wide,    \
                                                                 out, a_wide, out, &p),        \
                                 PYROI_OK);                                                    \
                    CHECK_STATUS(pyroi_roi_pool_forward_i32_##SUFFIX(x, shape, nchw, boxes,    \
                                                                     rois[r], 4, batch,        \
                                                                     y_narrow, out, a_narrow,  \
                                                                     out, &p),                 \
                                 PYROI_OK);                                                    \
                    CHECK(memcmp(y_wide, y_narrow, sizeof(y_wide)) == 0);                      \
                    for (i = 0; i < OUT; ++i) {                                                \
                        CHECK(a_wide[i] == (int64_t)a_narrow[i]);                              \
                        nonzero += a_wide[i] >= 0;                                             \
                    }                                                                          \
                    CHECK_STATUS(pyroi_roi_pool_backward_##SUFFIX(y_wide, out, a_wide, out,    \
                                                                  batch, rois[r], gx_wide,     \
                                                                  shape, nchw, &p),            \
                                 PYROI_OK);                                                    \
                    CHECK_STATUS(pyroi_roi_pool_backward_i32_##SUFFIX(y_wide, out, a_narrow,   \
                                                                      out, batch, rois[r],     \
                                                                      gx_narrow, shape, nchw,  \
                                                                      &p),                     \
                                 PYROI_OK);                                                    \
                    CHECK(memcmp(gx_wide, gx_narrow, sizeof(gx_wide)) == 0);                   \
                }                                                                              \
        CHECK(nonzero > 0);                                                                    \
    }

DEFINE_INT32_TEST(float, f32, 100)
DEFINE_INT32_TEST(double, f64, 50)

/* int32 argmax on a map too large for the lane-major scratch (the direct forward, and the
 * backward that checks argmax in a pass of its own): the int64 argmax's values; a bad entry
 * (below -1, or past the plane, also at the int32 extremes) is refused with grad_input
 * untouched. A plane of more than 2^31 pixels cannot have an int32 argmax. */
static void test_int32_argmax_large_map(void)
{
    enum { H = 800, W = 700, K = 3, PH = 7, PW = 7 };
    static float x[H * W], gx[H * W];
    const int64_t shape[4] = {1, 1, H, W}, strides[4] = {H * W, H * W, W, 1};
    const int64_t out[4] = {PH * PW, PH * PW, PW, 1};
    const int64_t huge[4] = {1, 1, 65536, 32769}, broadcast[4] = {0, 0, 0, 0};
    const int32_t bad_values[4] = {-2, H * W, INT32_MIN, INT32_MAX};
    const float boxes[K * 4] = {10, 20, 300, 200, 710, 810, 720, 820, 0, 0, 699, 799};
    const int64_t batch[K] = {0, 0, 0};
    float y[K * PH * PW], y_narrow[K * PH * PW], g[K * PH * PW];
    int64_t a_wide[K * PH * PW];
    int32_t a_narrow[K * PH * PW];
    pyroi_roi_pool_params p;
    unsigned long long seed = 5;
    int i, b;

    for (i = 0; i < H * W; ++i) {
        x[i] = (float)check_random(&seed);
    }
    for (i = 0; i < K * PH * PW; ++i) {
        g[i] = (float)check_random(&seed);
    }
    check_roi_pool_params(&p, PH, PW);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, shape, strides, boxes, K, 4, batch, y, out,
                                            a_wide, out, &p), PYROI_OK);
    CHECK_STATUS(pyroi_roi_pool_forward_i32_f32(x, shape, strides, boxes, K, 4, batch, y_narrow,
                                                out, a_narrow, out, &p), PYROI_OK);
    CHECK(memcmp(y, y_narrow, sizeof(y)) == 0);
    for (i = 0; i < K * PH * PW; ++i) {
        CHECK(a_wide[i] == (int64_t)a_narrow[i]);
    }
    CHECK(a_narrow[PH * PW] == -1); /* the second RoI is off the map */
    CHECK_STATUS(pyroi_roi_pool_backward_i32_f32(g, out, a_narrow, out, batch, K, gx, shape,
                                                 strides, &p), PYROI_OK);
    for (i = 0; i < K * PH * PW; ++i) {
        if (a_narrow[i] >= 0) {
            CHECK(gx[a_narrow[i]] != 0.0f);
        }
    }
    for (b = 0; b < 4; ++b) {
        const int32_t kept = a_narrow[2 * PH * PW + 5];
        a_narrow[2 * PH * PW + 5] = bad_values[b];
        for (i = 0; i < H * W; ++i) {
            gx[i] = 7.0f;
        }
        CHECK_STATUS(pyroi_roi_pool_backward_i32_f32(g, out, a_narrow, out, batch, K, gx,
                                                     shape, strides, &p),
                     PYROI_E_INVALID_ARGMAX);
        for (i = 0; i < H * W; i += 997) {
            CHECK(gx[i] == 7.0f);
        }
        a_narrow[2 * PH * PW + 5] = kept;
    }
    /* a broadcast plane of 2^31 + 32768 pixels: refused with an int32 argmax only */
    CHECK_STATUS(pyroi_roi_pool_forward_i32_f32(x, huge, broadcast, boxes, 1, 4, batch, y, out,
                                                a_narrow, out, &p), PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_pool_forward_i32_f32(x, huge, broadcast, boxes, 1, 4, batch, y, out,
                                                NULL, NULL, &p), PYROI_OK);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(x, huge, broadcast, boxes, 1, 4, batch, y, out,
                                            a_wide, out, &p), PYROI_OK);
}

/* The backward from the input equals the argmax backward bit for bit: both C orders (200
 * RoIs: the lane-major one; 3 RoIs: through a temporary argmax), NCHW and NHWC input, 1-3
 * threads; then its status codes. */
static void test_backward_from_input(void)
{
    enum { N = 2, C = 37, H = 21, W = 19, K = 200, PH = 3, PW = 4 };
    static float x_nchw[N * C * H * W], x_nhwc[N * C * H * W];
    static float y[K * C * PH * PW], g[K * C * PH * PW];
    static int64_t argmax[K * C * PH * PW];
    static float expected[N * C * H * W], got[N * C * H * W];
    static uint16_t x_half[N * C * H * W], g_half[K * C * PH * PW];
    static uint16_t expected_half[N * C * H * W], got_half[N * C * H * W];
    const int64_t shape[4] = {N, C, H, W};
    const int64_t nchw[4] = {C * H * W, H * W, W, 1};
    const int64_t nhwc[4] = {H * W * C, 1, W * C, C};
    const int64_t pooled[4] = {C * PH * PW, PH * PW, PW, 1};
    const int64_t bad_shape[4] = {N, C, -1, W};
    const int64_t overlapping[4] = {0, H * W, W, 1};
    float boxes[K * 4], nan_box[4] = {0.0f, 0.0f, NAN, 3.0f};
    int64_t batch[K], bad_batch[1] = {N};
    const int counts[2] = {K, 3};
    pyroi_roi_pool_params p;
    unsigned long long seed = 7;
    int k, i, threads, count;

    check_random_nchw_nhwc(x_nchw, x_nhwc, N, C, H, W, -0.5f, &seed);
    for (i = 0; i < N * C * H * W; ++i) { /* ties: values on a coarse grid */
        x_nchw[i] = floorf(x_nchw[i] * 8.0f);
    }
    for (k = 0; k < N * C * H * W; ++k) {
        const int n = k / (C * H * W), c = k / (H * W) % C, hw = k % (H * W);
        x_nhwc[n * H * W * C + hw * C + c] = x_nchw[k];
        x_half[k] = (uint16_t)(0x3c00 + ((uint16_t)(x_nchw[k] + 8.0f) << 6)); /* 1 + m/16 */
    }
    for (k = 0; k < K; ++k) {
        for (i = 0; i < 4; ++i) {
            boxes[4 * k + i] = (float)(-4.0 + 30.0 * check_random(&seed));
        }
        batch[k] = k % N;
    }
    for (i = 0; i < K * C * PH * PW; ++i) {
        g[i] = (float)check_random(&seed);
        g_half[i] = (uint16_t)(0x3c00 + (i % 64)); /* 1 + small multiples of 2^-10 */
    }
    check_roi_pool_params(&p, PH, PW);
    p.spatial_scale_h = 0.8;
    p.spatial_scale_w = 0.7;
    for (count = 0; count < 2; ++count) {
        const int num_rois = counts[count];
        p.num_threads = 1;
        CHECK_STATUS(pyroi_roi_pool_forward_f32(x_nchw, shape, nchw, boxes, num_rois, 4, batch,
                                                y, pooled, argmax, pooled, &p), PYROI_OK);
        CHECK_STATUS(pyroi_roi_pool_backward_f32(g, pooled, argmax, pooled, batch, num_rois,
                                                 expected, shape, nchw, &p), PYROI_OK);
        for (threads = 1; threads <= 3; ++threads) {
            p.num_threads = threads;
            memset(got, 0xff, sizeof(got));
            CHECK_STATUS(pyroi_roi_pool_backward_from_input_f32(g, pooled, x_nchw, shape, nchw,
                                                                boxes, num_rois, 4, batch, got,
                                                                nchw, &p), PYROI_OK);
            CHECK(memcmp(expected, got, sizeof(got)) == 0);
            memset(got, 0xff, sizeof(got));
            CHECK_STATUS(pyroi_roi_pool_backward_from_input_f32(g, pooled, x_nhwc, shape, nhwc,
                                                                boxes, num_rois, 4, batch, got,
                                                                nchw, &p), PYROI_OK);
            CHECK(memcmp(expected, got, sizeof(got)) == 0);
        }
        /* float16: the float16 argmax backward's result */
        CHECK_STATUS(pyroi_roi_pool_forward_f16(x_half, shape, nchw, boxes, num_rois, 4, batch,
                                                (uint16_t *)(void *)y, pooled, argmax, pooled,
                                                &p), PYROI_OK);
        CHECK_STATUS(pyroi_roi_pool_backward_f16(g_half, pooled, argmax, pooled, batch,
                                                 num_rois, expected_half, shape, nchw, &p),
                     PYROI_OK);
        CHECK_STATUS(pyroi_roi_pool_backward_from_input_f16(g_half, pooled, x_half, shape, nchw,
                                                            boxes, num_rois, 4, batch, got_half,
                                                            nchw, &p), PYROI_OK);
        CHECK(memcmp(expected_half, got_half, sizeof(got_half)) == 0);
    }
    /* statuses: each names the bad argument's kind, nothing is read past a failed check */
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_f32(g, pooled, NULL, shape, nchw, boxes, K,
                                                        4, batch, got, nchw, &p),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_f32(g, pooled, x_nchw, NULL, nchw, boxes, K,
                                                        4, batch, got, nchw, &p),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_f32(g, pooled, x_nchw, bad_shape, nchw,
                                                        boxes, K, 4, batch, got, nchw, &p),
                 PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_f32(g, pooled, x_nchw, shape, nchw, boxes,
                                                        K, 4, batch, got, overlapping, &p),
                 PYROI_E_INVALID_STRIDES);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_f32(g, pooled, x_nchw, shape, nchw,
                                                        nan_box, 1, 4, batch, got, nchw, &p),
                 PYROI_E_INVALID_BOX);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_f32(g, pooled, x_nchw, shape, nchw, boxes,
                                                        1, 4, bad_batch, got, nchw, &p),
                 PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_f32(g, pooled, x_nchw, shape, nchw, boxes,
                                                        K, 4, batch, got, nchw, NULL),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_f16(g_half, pooled, NULL, shape, nchw,
                                                        boxes, K, 4, batch, got_half, nchw, &p),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_f16(g_half, pooled, x_half, bad_shape, nchw,
                                                        boxes, K, 4, batch, got_half, nchw, &p),
                 PYROI_E_INVALID_SHAPE);
}

/* The rule a training layer asks (keep the input, or an argmax): answers every CPU agrees on
 * (a 2 KB image block fits any L2 cache, a 128 MB one none; few bins next to the map's pixels
 * never take the input's lane-major order; an empty call keeps no argmax) and its statuses. */
static void test_backward_from_input_pays(void)
{
    const int64_t tiny[4] = {2, 64, 4, 4}, huge[4] = {1, 16, 1000, 1000};
    const int64_t sparse[4] = {1, 16, 40, 40}, empty[4] = {0, 16, 40, 40};
    const int64_t negative[4] = {1, -1, 4, 4};
    pyroi_roi_pool_params p;
    int pays = -1;
    pyroi_roi_pool_params_init(&p);
    p.pooled_height = p.pooled_width = 7;
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_pays(tiny, 10, &p, &pays), PYROI_OK);
    CHECK(pays == 1);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_pays(huge, 5000, &p, &pays), PYROI_OK);
    CHECK(pays == 0);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_pays(empty, 5, &p, &pays), PYROI_OK);
    CHECK(pays == 1);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_pays(sparse, 0, &p, &pays), PYROI_OK);
    CHECK(pays == 1);
    p.pooled_height = p.pooled_width = 2;
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_pays(sparse, 2, &p, &pays), PYROI_OK);
    CHECK(pays == 0);
    p.pooled_height = p.pooled_width = (int64_t)1 << 40; /* no overflow: nothing fits */
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_pays(tiny, 3, &p, &pays), PYROI_OK);
    CHECK(pays == 0);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_pays(negative, 3, &p, &pays),
                 PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_pays(tiny, -1, &p, &pays),
                 PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_pays(NULL, 3, &p, &pays),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_pays(tiny, 3, &p, NULL),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_pays(tiny, 3, NULL, &pays),
                 PYROI_E_NULL_POINTER);
    p.pooled_height = 0;
    CHECK_STATUS(pyroi_roi_pool_backward_from_input_pays(tiny, 3, &p, &pays),
                 PYROI_E_INVALID_OUTPUT_SIZE);
}

int main(void)
{
    test_defaults();
    test_small_roi_repeats_pixels();
    test_rounding();
    test_mmcv_cases();
    test_special_values();
    test_geometry();
    test_layouts_and_threads();
    test_status_codes();
    test_streamed_outputs_f32();
    test_streamed_outputs_f64();
    test_int32_argmax_f32();
    test_int32_argmax_f64();
    test_int32_argmax_large_map();
    test_backward_from_input();
    test_backward_from_input_pays();
    return check_report("test_pool");
}
