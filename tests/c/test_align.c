/* Known answers for RoIAlign (average), forward and backward, float32 and float64.
 * Values: docs/semantics.md §11 (peer test files) and §3.6 (verified on
 * torchvision 0.29.1 and onnxruntime 1.32). */
#include "pyroi.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int64_t contiguous_2x2[4] = {4, 4, 2, 1};

/* mmcv's tests' parameters: a 2x2 output, 2 samples per axis, aligned. */
static pyroi_roi_align_params mmcv_params(void)
{
    pyroi_roi_align_params p;

    pyroi_roi_align_params_init(&p);
    p.pooled_height = p.pooled_width = 2;
    p.sampling_ratio = 2;
    p.aligned = 1;
    return p;
}

/* mmcv's tests: one box on a one-channel map, a 2x2 output (mmcv_params), gradient ones.
 * Every value is a binary fraction that float32 holds exactly: both precisions must give it. */
typedef struct {
    int64_t height, width;
    double x[16], box[4], expected[4], expected_grad[16];
} mmcv_case;

static const mmcv_case mmcv_cases[] = {
    /* X = [[1,2],[3,4]], roi (0,0,1,1) */
    {2, 2, {1, 2, 3, 4}, {0, 0, 1, 1}, {1.0, 1.25, 1.5, 1.75}, {3.0625, 0.4375, 0.4375, 0.0625}},
    /* 4x4 map, roi (0,0,3,3) */
    {4, 4, {1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16}, {0, 0, 3, 3},
     {1.9375, 4.75, 7.5625, 10.375},
     {0.47265625, 0.4296875, 0.4296875, 0.04296875, 0.4296875, 0.390625, 0.390625, 0.0390625,
      0.4296875, 0.390625, 0.390625, 0.0390625, 0.04296875, 0.0390625, 0.0390625, 0.00390625}},
};

static void test_mmcv_cases(void)
{
    const int64_t batch[1] = {0};
    const pyroi_roi_align_params p = mmcv_params();
    const double ones[4] = {1, 1, 1, 1};
    const float ones_f[4] = {1, 1, 1, 1};
    size_t k;
    int i;

    for (k = 0; k < sizeof(mmcv_cases) / sizeof(mmcv_cases[0]); ++k) {
        const mmcv_case *c = &mmcv_cases[k];
        const int n = (int)(c->height * c->width);
        const int64_t shape[4] = {1, 1, c->height, c->width};
        const int64_t strides[4] = {n, n, c->width, 1};
        float x_f[16], box_f[4], y_f[4], gx_f[16];
        double y[4], gx[16];

        for (i = 0; i < n; ++i) {
            x_f[i] = (float)c->x[i];
        }
        for (i = 0; i < 4; ++i) {
            box_f[i] = (float)c->box[i];
        }
        CHECK_STATUS(pyroi_roi_align_forward_f32(x_f, shape, strides, box_f, 1, 4, batch, y_f,
                                                 contiguous_2x2, &p), PYROI_OK);
        CHECK_STATUS(pyroi_roi_align_forward_f64(c->x, shape, strides, c->box, 1, 4, batch, y,
                                                 contiguous_2x2, &p), PYROI_OK);
        for (i = 0; i < 4; ++i) {
            CHECK(y_f[i] == (float)c->expected[i]);
            CHECK(y[i] == c->expected[i]);
        }
        CHECK_STATUS(pyroi_roi_align_backward_f32(ones_f, contiguous_2x2, box_f, 1, 4, batch,
                                                  gx_f, shape, strides, &p), PYROI_OK);
        CHECK_STATUS(pyroi_roi_align_backward_f64(ones, contiguous_2x2, c->box, 1, 4, batch, gx,
                                                  shape, strides, &p), PYROI_OK);
        for (i = 0; i < n; ++i) {
            CHECK(gx_f[i] == (float)c->expected_grad[i]);
            CHECK(gx[i] == c->expected_grad[i]);
        }
    }
}

/* detectron2 test: arange(25) as 5x5, box (1,1,3,3), 4x4 output, adaptive, both alignments. */
static void test_detectron2(void)
{
    const double legacy[16] = {7.5, 8, 8.5, 9, 10, 10.5, 11, 11.5, 12.5, 13, 13.5, 14, 15, 15.5, 16, 16.5};
    const double half_pixel[16] = {4.5, 5, 5.5, 6, 7, 7.5, 8, 8.5, 9.5, 10, 10.5, 11, 12, 12.5, 13, 13.5};
    const int64_t shape[4] = {1, 1, 5, 5}, strides[4] = {25, 25, 5, 1};
    const int64_t out_strides[4] = {16, 16, 4, 1};
    const double box[4] = {1, 1, 3, 3};
    const double empty_box[4] = {3, 4, 5, 4};
    const int64_t batch[1] = {0};
    double x[25], y[49], gy[49], gx[25];
    pyroi_roi_align_params p;
    int i, aligned;

    check_ramp_f64(x, 25);
    for (aligned = 0; aligned <= 1; ++aligned) {
        const double *expected = aligned ? half_pixel : legacy;
        pyroi_roi_align_params_init(&p);
        p.pooled_height = p.pooled_width = 4;
        p.sampling_ratio = 0;
        p.aligned = aligned;
        CHECK_STATUS(pyroi_roi_align_forward_f64(x, shape, strides, box, 1, 4, batch, y,
                                                 out_strides, &p), PYROI_OK);
        for (i = 0; i < 16; ++i) {
            CHECK_CLOSE(y[i], expected[i], 1e-14);
        }
    }
    /* zero-height box, aligned, adaptive: output and gradient all zero */
    {
        const int64_t strides7[4] = {49, 49, 7, 1};
        pyroi_roi_align_params_init(&p);
        p.pooled_height = p.pooled_width = 7;
        p.sampling_ratio = 0;
        p.aligned = 1;
        for (i = 0; i < 49; ++i) {
            y[i] = -1;
            gy[i] = 1;
        }
        CHECK_STATUS(pyroi_roi_align_forward_f64(x, shape, strides, empty_box, 1, 4, batch, y,
                                                 strides7, &p), PYROI_OK);
        CHECK_STATUS(pyroi_roi_align_backward_f64(gy, strides7, empty_box, 1, 4, batch, gx,
                                                  shape, strides, &p), PYROI_OK);
        for (i = 0; i < 49; ++i) {
            CHECK(y[i] == 0.0);
        }
        for (i = 0; i < 25; ++i) {
            CHECK(gx[i] == 0.0);
        }
    }
}

/* Edge table (docs/semantics.md §3.6): 6x7 arange map, 2x2 output. */
static void test_edge_table(void)
{
    struct edge_case {
        float box[4];
        int sampling_ratio;
        int aligned;
        float expected[4];
    };
    static const struct edge_case cases[] = {
        {{1, 1, 1, 4}, 0, 0, {13.5f, 14, 24, 24.5f}},
        {{1, 1, 1, 4}, 0, 1, {0, 0, 0, 0}},
        {{1, 1, 1, 4}, 2, 0, {13.5f, 14, 24, 24.5f}},
        {{1, 1, 1, 4}, 2, 1, {9.25f, 9.25f, 19.75f, 19.75f}},
        {{2, 2, 2, 2}, 2, 0, {18, 18.5f, 21.5f, 22}},
        {{2, 2, 2, 2}, 2, 1, {12, 12, 12, 12}},
        {{4, 4, 1, 1}, 0, 0, {34, 34.5f, 37.5f, 38}},
        {{4, 4, 1, 1}, 0, 1, {0, 0, 0, 0}},
        {{4, 4, 1, 1}, 2, 0, {34, 34.5f, 37.5f, 38}},
        {{4, 4, 1, 1}, 2, 1, {22, 20.5f, 11.5f, 10}},
        {{4, 1, 1, 4}, 0, 0, {16.5f, 17, 27, 27.5f}},
        {{4, 1, 1, 4}, 0, 1, {0, 0, 0, 0}}, /* peers raise; pyroi defines 0 */
        {{-20, -20, -10, -10}, 0, 0, {0, 0, 0, 0}},
        {{-20, -20, -10, -10}, 2, 1, {0, 0, 0, 0}},
        {{5, 4, 9, 8}, 0, 0, {39, 0, 0, 0}},
        {{5, 4, 9, 8}, 0, 1, {37, 18.75f, 20.25f, 10.25f}},
    };
    const int64_t shape[4] = {1, 1, 6, 7}, strides[4] = {42, 42, 7, 1};
    const int64_t batch[1] = {0};
    float x[42], y[4];
    pyroi_roi_align_params p;
    size_t c;
    int i;

    check_ramp_f32(x, 42);
    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
        pyroi_roi_align_params_init(&p);
        p.pooled_height = p.pooled_width = 2;
        p.sampling_ratio = cases[c].sampling_ratio;
        p.aligned = cases[c].aligned;
        CHECK_STATUS(pyroi_roi_align_forward_f32(x, shape, strides, cases[c].box, 1, 4, batch, y,
                                                 contiguous_2x2, &p), PYROI_OK);
        for (i = 0; i < 4; ++i) {
            if (y[i] != cases[c].expected[i]) {
                fprintf(stderr, "edge case %d: y[%d] = %.9g, expected %.9g\n", (int)c, i, y[i],
                        cases[c].expected[i]);
            }
            CHECK(y[i] == cases[c].expected[i]);
        }
    }
}

/* An NHWC buffer described with NCHW strides gives the same result as the NCHW copy, and a
 * non-contiguous output view is filled in place. */
static void test_strided_layouts(void)
{
    enum { N = 2, C = 3, H = 5, W = 6, K = 3, PH = 2, PW = 3 };
    const int64_t shape[4] = {N, C, H, W};
    const int64_t nchw[4] = {C * H * W, H * W, W, 1};
    const int64_t nhwc[4] = {H * W * C, 1, W * C, C};
    const int64_t out_contiguous[4] = {C * PH * PW, PH * PW, PW, 1};
    const int64_t out_transposed[4] = {1, K, K * C * PW, K * C}; /* (PH, PW, C, K) memory */
    const float boxes[K * 5] = {-1, 0.5f, 4, 3, 0, 0, 0, 0, 0, 1.5f, 2, 6, 5, 0, 0};
    const int64_t batch[K] = {0, 1, 1};
    float x_nchw[N * C * H * W], x_nhwc[N * C * H * W];
    float y_a[K * C * PH * PW], y_b[K * C * PH * PW];
    pyroi_roi_align_params p;
    unsigned long long seed = 7;
    int c, k, ph, pw;

    check_random_nchw_nhwc(x_nchw, x_nhwc, N, C, H, W, 0.0f, &seed);
    pyroi_roi_align_params_init(&p);
    p.pooled_height = PH;
    p.pooled_width = PW;
    p.spatial_scale_h = p.spatial_scale_w = 0.8;
    p.sampling_ratio = 2;
    CHECK_STATUS(pyroi_roi_align_forward_f32(x_nchw, shape, nchw, boxes, K, 5, batch, y_a,
                                             out_contiguous, &p), PYROI_OK);
    CHECK_STATUS(pyroi_roi_align_forward_f32(x_nhwc, shape, nhwc, boxes, K, 5, batch, y_b,
                                             out_transposed, &p), PYROI_OK);
    for (k = 0; k < K; ++k)
        for (c = 0; c < C; ++c)
            for (ph = 0; ph < PH; ++ph)
                for (pw = 0; pw < PW; ++pw) {
                    float a = y_a[((k * C + c) * PH + ph) * PW + pw];
                    float b = y_b[k + K * c + K * C * pw + K * C * PW * ph];
                    CHECK(a == b);
                }
}

/* Max mode without argmax on channels-last features read in place (48 float channels: a pair
 * of lane groups and a single one), the map starting one float past an allocation of its exact
 * size (a sanitizer sees any read past it): the NCHW call's bits, on 1 and 2 threads, with a
 * NaN pixel (its RoIs are redone with the scalar rule) and boxes partly off the map. */
static void test_max_channels_last_in_place(void)
{
    enum { N = 2, C = 48, H = 9, W = 11, K = 24, P = 3 };
    const int64_t shape[4] = {N, C, H, W};
    const int64_t nchw[4] = {C * H * W, H * W, W, 1};
    const int64_t nhwc[4] = {H * W * C, 1, W * C, C};
    const int64_t out_strides[4] = {C * P * P, P * P, P, 1};
    float *x_nchw = malloc(sizeof(float) * N * C * H * W);
    float *buffer = malloc(sizeof(float) * (N * C * H * W + 1));
    float *x_nhwc = buffer + 1;
    float *y_a = malloc(sizeof(float) * K * C * P * P), *y_b = malloc(sizeof(float) * K * C * P * P);
    float boxes[K * 4];
    int64_t batch[K];
    pyroi_roi_align_params p;
    unsigned long long seed = 11;
    int threads, i;

    CHECK(x_nchw != NULL && buffer != NULL && y_a != NULL && y_b != NULL);
    check_random_nchw_nhwc(x_nchw, x_nhwc, N, C, H, W, -0.5f, &seed);
    x_nchw[((1 * C + 20) * H + 4) * W + 5] = x_nhwc[((1 * H + 4) * W + 5) * C + 20] = NAN;
    check_random_boxes(boxes, batch, K, N, &seed);
    for (i = 0; i < K * 4; ++i) {
        boxes[i] *= 0.25f; /* up to 15 x 15 map pixels from (-4, -4) on: some off the map */
    }
    pyroi_roi_align_params_init(&p);
    p.pooled_height = p.pooled_width = P;
    p.spatial_scale_h = p.spatial_scale_w = 0.5;
    p.sampling_ratio = 2;
    p.aligned = 1;
    p.num_threads = 1;
    CHECK_STATUS(pyroi_roi_align_max_forward_f32(x_nchw, shape, nchw, boxes, K, 4, batch, y_a,
                                                 out_strides, NULL, NULL, &p), PYROI_OK);
    for (threads = 1; threads <= 2; ++threads) {
        p.num_threads = threads;
        CHECK_STATUS(pyroi_roi_align_max_forward_f32(x_nhwc, shape, nhwc, boxes, K, 4, batch,
                                                     y_b, out_strides, NULL, NULL, &p),
                     PYROI_OK);
        CHECK(memcmp(y_a, y_b, sizeof(float) * K * C * P * P) == 0);
    }
    free(x_nchw);
    free(buffer);
    free(y_a);
    free(y_b);
}

int main(void)
{
    CHECK(pyroi_version_number() == PYROI_VERSION_NUMBER);
    CHECK(strcmp(pyroi_version_string(), PYROI_VERSION_STRING) == 0);
    test_mmcv_cases();
    test_detectron2();
    test_edge_table();
    test_strided_layouts();
    test_max_channels_last_in_place();
    return check_report("test_align");
}
