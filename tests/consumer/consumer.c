/* consumer.c - a program that uses the INSTALLED pyroi C library, written from pyroi.h alone.
 *
 * tests/consumer/run.sh builds it against an installed (and then moved) prefix in three ways:
 * CMake find_package with pyroi::pyroi and pyroi::pyroi_static, and pkg-config. It checks the
 * version handshake, known RoIAlign answers in float32 and float64 (forward and backward), a
 * channels-last layout, a validation failure, and a call large enough to start threads
 * (so a static link that lost its thread dependency fails here). Exit status 0 = all good.
 */
#include <pyroi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                                   \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            ++failures;                                                                \
            fprintf(stderr, "consumer.c:%d: expected %s\n", __LINE__, #cond);          \
        }                                                                              \
    } while (0)

#define EXPECT_STATUS(call, expected)                                                  \
    do {                                                                               \
        pyroi_status got_ = (call);                                                    \
        if (got_ != (expected)) {                                                      \
            ++failures;                                                                \
            fprintf(stderr, "consumer.c:%d: %s gave %d (%s), expected %s\n", __LINE__, \
                    #call, (int)got_, pyroi_status_string(got_), #expected);           \
        }                                                                              \
    } while (0)

/* The header and the library must be the same release. */
static void test_version(void)
{
    EXPECT(pyroi_version_number() == PYROI_VERSION_NUMBER);
    EXPECT(strcmp(pyroi_version_string(), PYROI_VERSION_STRING) == 0);
    EXPECT(PYROI_VERSION_NUMBER == PYROI_VERSION_MAJOR * 10000 + PYROI_VERSION_MINOR * 100 +
                                       PYROI_VERSION_PATCH);
    EXPECT(strcmp(pyroi_status_string(PYROI_OK), "") != 0);
    EXPECT(pyroi_status_string((pyroi_status)12345) != NULL);
}

/* Map [[1, 2], [3, 4]], box (0, 0, 1, 1), aligned, 2 samples per axis, 2 x 2 bins: the mmcv
 * test values. Its gradient for an all-ones grad_output too. */
static void test_known_answer_f32(void)
{
    const float x[4] = {1, 2, 3, 4};
    const int64_t shape[4] = {1, 1, 2, 2}, strides[4] = {4, 4, 2, 1};
    const float box[4] = {0, 0, 1, 1};
    const int64_t batch[1] = {0};
    const float expected[4] = {1.0f, 1.25f, 1.5f, 1.75f};
    const float expected_grad[4] = {3.0625f, 0.4375f, 0.4375f, 0.0625f};
    const float ones[4] = {1, 1, 1, 1};
    float y[4], gx[4];
    pyroi_roi_align_params p;
    int i;

    pyroi_roi_align_params_init(&p);
    p.pooled_height = p.pooled_width = 2;
    p.sampling_ratio = 2;
    p.aligned = 1;
    EXPECT_STATUS(pyroi_roi_align_forward_f32(x, shape, strides, box, 1, 4, batch, y, strides,
                                              &p), PYROI_OK);
    EXPECT_STATUS(pyroi_roi_align_backward_f32(ones, strides, box, 1, 4, batch, gx, shape,
                                               strides, &p), PYROI_OK);
    for (i = 0; i < 4; ++i) {
        EXPECT(y[i] == expected[i]);
        EXPECT(gx[i] == expected_grad[i]);
    }
}

/* Map 10 * y + x (4 x 5) stored channels-last (NHWC strides), box (1, 1, 3, 3), aligned:
 * bilinear interpolation of a linear map is exact, so the bins are 11 12 / 21 22. */
static void test_channels_last_f64(void)
{
    enum { H = 4, W = 5, C = 2 };
    double x[H * W * C];
    const int64_t shape[4] = {1, C, H, W};
    const int64_t nhwc_strides[4] = {H * W * C, 1, W * C, C};
    const double box[5] = {1, 1, 3, 3, -1}; /* a fifth column the row stride skips */
    const int64_t batch[1] = {0};
    double y[C * 4];
    const int64_t y_strides[4] = {C * 4, 4, 2, 1};
    const double expected[4] = {11, 12, 21, 22};
    pyroi_roi_align_params p;
    int h, w, c, i;

    for (h = 0; h < H; ++h) {
        for (w = 0; w < W; ++w) {
            for (c = 0; c < C; ++c) {
                x[(h * W + w) * C + c] = (c == 0 ? 1.0 : -1.0) * (10.0 * h + w);
            }
        }
    }
    pyroi_roi_align_params_init(&p);
    p.pooled_height = p.pooled_width = 2;
    p.sampling_ratio = 2;
    p.aligned = 1;
    EXPECT_STATUS(pyroi_roi_align_forward_f64(x, shape, nhwc_strides, box, 1, 5, batch, y,
                                              y_strides, &p), PYROI_OK);
    for (i = 0; i < 4; ++i) {
        EXPECT(y[i] == expected[i]);
        EXPECT(y[4 + i] == -expected[i]);
    }
}

/* A batch index outside [0, N) is rejected before anything is written. */
static void test_validation(void)
{
    const float x[4] = {1, 2, 3, 4};
    const int64_t shape[4] = {1, 1, 2, 2}, strides[4] = {4, 4, 2, 1};
    const float box[4] = {0, 0, 1, 1};
    const int64_t bad_batch[1] = {1};
    float y[4] = {-7, -7, -7, -7};
    int64_t failed = 0;
    pyroi_roi_align_params p;

    pyroi_roi_align_params_init(&p);
    p.pooled_height = 0;
    EXPECT_STATUS(pyroi_roi_align_forward_f32(x, shape, strides, box, 1, 4, bad_batch, y,
                                              strides, &p), PYROI_E_INVALID_OUTPUT_SIZE);
    p.pooled_height = p.pooled_width = 2;
    EXPECT_STATUS(pyroi_roi_align_forward_f32(x, shape, strides, box, 1, 4, bad_batch, y,
                                              strides, &p), PYROI_E_INVALID_BATCH_INDEX);
    EXPECT(y[0] == -7 && y[3] == -7);
    EXPECT_STATUS(pyroi_roi_align_find_invalid_roi_f32(box, 1, 4, bad_batch, 1, 2, 2, &p,
                                                       &failed), PYROI_E_INVALID_BATCH_INDEX);
    EXPECT(failed == 0);
    p.num_threads = -1;
    EXPECT_STATUS(pyroi_roi_align_forward_f32(x, shape, strides, box, 1, 4, bad_batch, y,
                                              strides, &p), PYROI_E_INVALID_NUM_THREADS);
}

/* A call big enough to run on several threads gives the same bits as one thread. */
static void test_threads(void)
{
    enum { N = 2, C = 32, H = 48, W = 48, K = 200, P = 7 };
    const int64_t shape[4] = {N, C, H, W}, strides[4] = {C * H * W, H * W, W, 1};
    const int64_t out_strides[4] = {C * P * P, P * P, P, 1};
    float *x = (float *)malloc(sizeof(float) * N * C * H * W);
    float *y1 = (float *)malloc(sizeof(float) * K * C * P * P);
    float *y4 = (float *)malloc(sizeof(float) * K * C * P * P);
    float boxes[K * 4];
    int64_t batch[K];
    uint32_t state = 12345u;
    pyroi_roi_align_params p;
    int i;

    if (x == NULL || y1 == NULL || y4 == NULL) {
        fprintf(stderr, "consumer.c: out of memory\n");
        exit(EXIT_FAILURE);
    }
    for (i = 0; i < N * C * H * W; ++i) {
        state = state * 1664525u + 1013904223u;
        x[i] = (float)(state >> 8) / 16777216.0f - 0.5f;
    }
    for (i = 0; i < K; ++i) {
        float x1 = (float)(i % 40), y1_ = (float)((i * 7) % 40);
        boxes[4 * i + 0] = x1;
        boxes[4 * i + 1] = y1_;
        boxes[4 * i + 2] = x1 + 3.0f + (float)(i % 11);
        boxes[4 * i + 3] = y1_ + 2.5f + (float)(i % 13);
        batch[i] = i % N;
    }
    pyroi_roi_align_params_init(&p);
    p.pooled_height = p.pooled_width = P;
    p.sampling_ratio = 2;
    p.num_threads = 1;
    EXPECT_STATUS(pyroi_roi_align_forward_f32(x, shape, strides, boxes, K, 4, batch, y1,
                                              out_strides, &p), PYROI_OK);
    p.num_threads = 4;
    EXPECT_STATUS(pyroi_roi_align_forward_f32(x, shape, strides, boxes, K, 4, batch, y4,
                                              out_strides, &p), PYROI_OK);
    EXPECT(memcmp(y1, y4, sizeof(float) * K * C * P * P) == 0);
    free(x);
    free(y1);
    free(y4);
}

int main(void)
{
    test_version();
    test_known_answer_f32();
    test_channels_last_f64();
    test_validation();
    test_threads();
    if (failures != 0) {
        fprintf(stderr, "consumer: %d check(s) failed\n", failures);
        return EXIT_FAILURE;
    }
    printf("consumer: pyroi %s OK\n", pyroi_version_string());
    return EXIT_SUCCESS;
}
