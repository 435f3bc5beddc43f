/* Known answers for the compatibility front-ends: ONNX RoiAlign mode="max" (onnxruntime's max
 * over weighted taps; docs/semantics.md §4.1 and §11.6, verified on onnxruntime 1.32). */
#include "pyroi.h"
#include "check.h"
#include "core/half.h"

#include <math.h>
#include <string.h>

static const int64_t one_strides[4] = {1, 1, 1, 1};

/* X = [[1,2],[3,4]] (and -X), roi (0,0,1,1), 1x1 output, sr 1. */
static void test_onnx_max_quirks(void)
{
    const int64_t shape[4] = {1, 1, 2, 2}, strides[4] = {4, 4, 2, 1};
    const float box[4] = {0, 0, 1, 1};
    const int64_t batch[1] = {0};
    /* sign, aligned -> expected */
    const struct { float sign; int aligned; float expected; int negative_zero; } cases[4] = {
        {1.0f, 0, 1.0f, 0}, {-1.0f, 0, -0.25f, 0}, {1.0f, 1, 1.0f, 0}, {-1.0f, 1, 0.0f, 1}};
    pyroi_roi_align_params p;
    int i, j;
    pyroi_roi_align_params_init(&p);
    p.sampling_ratio = 1;
    for (i = 0; i < 4; ++i) {
        float x[4], y = 123.0f;
        double xd[4], yd = 123.0, boxd[4] = {0, 0, 1, 1};
        for (j = 0; j < 4; ++j) {
            x[j] = cases[i].sign * (float)(j + 1);
            xd[j] = (double)x[j];
        }
        p.aligned = cases[i].aligned;
        CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(x, shape, strides, box, 1, 4, batch,
                                                          &y, one_strides, &p), PYROI_OK);
        CHECK(y == cases[i].expected);
        CHECK((signbit(y) != 0) == (cases[i].negative_zero || cases[i].expected < 0));
        CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f64(xd, shape, strides, boxd, 1, 4, batch,
                                                          &yd, one_strides, &p), PYROI_OK);
        CHECK(yd == (double)cases[i].expected);
        CHECK((signbit(yd) != 0) == (cases[i].negative_zero || cases[i].expected < 0));
    }
}

/* An out-of-map sample is 0 * X[0,0]: NaN when that pixel is infinite; an empty grid is 0. */
static void test_onnx_max_outside(void)
{
    float x[4] = {INFINITY, 2, 3, 4};
    const int64_t shape[4] = {1, 1, 2, 2}, strides[4] = {4, 4, 2, 1};
    const float outside[4] = {-30, -30, -20, -20};
    const float empty[4] = {1, 1, 1, 1}; /* aligned, adaptive: grid 0 */
    const int64_t batch[1] = {0};
    pyroi_roi_align_params p;
    float y = 0.0f;
    pyroi_roi_align_params_init(&p);
    p.sampling_ratio = 2;
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(x, shape, strides, outside, 1, 4, batch,
                                                      &y, one_strides, &p), PYROI_OK);
    CHECK(isnan(y));
    x[0] = 1.0f;
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(x, shape, strides, outside, 1, 4, batch,
                                                      &y, one_strides, &p), PYROI_OK);
    CHECK(y == 0.0f);
    x[0] = -1.0f; /* 0 * -1 = -0.0 */
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(x, shape, strides, outside, 1, 4, batch,
                                                      &y, one_strides, &p), PYROI_OK);
    CHECK(y == 0.0f && signbit(y));
    p.aligned = 1;
    p.sampling_ratio = 0;
    y = 5.0f;
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(x, shape, strides, empty, 1, 4, batch,
                                                      &y, one_strides, &p), PYROI_OK);
    CHECK(y == 0.0f && !signbit(y));
}

/* Every validation status reaches the caller before anything is written. */
static void test_onnx_max_statuses(void)
{
    const float x[4] = {1, 2, 3, 4};
    const int64_t shape[4] = {1, 1, 2, 2}, strides[4] = {4, 4, 2, 1};
    const float box[4] = {0, 0, 1, 1};
    const float bad_box[4] = {0, NAN, 1, 1};
    const int64_t batch[1] = {0}, bad_batch[1] = {1};
    const int64_t bad_shape[4] = {1, -1, 2, 2};
    pyroi_roi_align_params p;
    float y = 7.0f;
    pyroi_roi_align_params_init(&p);
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(x, shape, strides, box, 1, 4, batch, &y,
                                                      one_strides, NULL), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(NULL, shape, strides, box, 1, 4, batch,
                                                      &y, one_strides, &p),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(x, bad_shape, strides, box, 1, 4, batch,
                                                      &y, one_strides, &p),
                 PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(x, shape, strides, box, 1, 4, bad_batch,
                                                      &y, one_strides, &p),
                 PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(x, shape, strides, bad_box, 1, 4, batch,
                                                      &y, one_strides, &p), PYROI_E_INVALID_BOX);
    p.pooled_height = 0;
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(x, shape, strides, box, 1, 4, batch, &y,
                                                      one_strides, &p),
                 PYROI_E_INVALID_OUTPUT_SIZE);
    pyroi_roi_align_params_init(&p);
    p.spatial_scale_w = -1.0;
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(x, shape, strides, box, 1, 4, batch, &y,
                                                      one_strides, &p), PYROI_E_INVALID_SCALE);
    pyroi_roi_align_params_init(&p);
    p.num_threads = -1;
    CHECK_STATUS(pyroi_roi_align_onnx_max_forward_f32(x, shape, strides, box, 1, 4, batch, &y,
                                                      one_strides, &p),
                 PYROI_E_INVALID_NUM_THREADS);
    CHECK(y == 7.0f);
}


/* The two-phase backward: the queried workspace reproduces pyroi_roi_align_backward bit for
 * bit, at any alignment, with fewer bytes (fewer workers / direct order), and fails cleanly
 * when even the tap tables do not fit. */
#define WS_N 2
#define WS_C 20
#define WS_H 13
#define WS_W 17
#define WS_K 9
static void test_backward_workspace(void)
{
    static float grad_output[WS_K * WS_C * 2 * 3], expected[WS_N * WS_C * WS_H * WS_W];
    static float actual[WS_N * WS_C * WS_H * WS_W];
    static unsigned char workspace[1 << 20];
    const int64_t shape[4] = {WS_N, WS_C, WS_H, WS_W};
    const int64_t strides[4] = {WS_C * WS_H * WS_W, WS_H * WS_W, WS_W, 1};
    const int64_t go_strides[4] = {WS_C * 6, 6, 3, 1};
    const int64_t empty_shape[4] = {WS_N, WS_C, 0, WS_W};
    const int64_t bad_shape[4] = {WS_N, -1, WS_H, WS_W};
    float boxes[WS_K * 4];
    int64_t batch[WS_K], bad_batch[WS_K];
    unsigned long long state = 7;
    pyroi_roi_align_params p;
    size_t size = 0, trial, tiny = 0;
    int threads, i, k, aligned;

    for (i = 0; i < WS_K * WS_C * 6; ++i) {
        grad_output[i] = (float)(check_random(&state) - 0.5);
    }
    for (k = 0; k < WS_K; ++k) {
        const float x1 = (float)(check_random(&state) * 40.0 - 4.0);
        const float y1 = (float)(check_random(&state) * 30.0 - 4.0);
        boxes[4 * k] = x1;
        boxes[4 * k + 1] = y1;
        boxes[4 * k + 2] = x1 + (float)(check_random(&state) * 20.0);
        boxes[4 * k + 3] = y1 + (float)(check_random(&state) * 20.0);
        batch[k] = k % WS_N;
        bad_batch[k] = k == 3 ? WS_N : batch[k];
    }
    pyroi_roi_align_params_init(&p);
    p.pooled_height = 2;
    p.pooled_width = 3;
    p.spatial_scale_h = p.spatial_scale_w = 0.5;
    for (aligned = 0; aligned < 2; ++aligned) {
        for (threads = 1; threads <= 3; ++threads) {
            p.aligned = aligned;
            p.num_threads = threads;
            CHECK_STATUS(pyroi_roi_align_backward_f32(grad_output, go_strides, boxes, WS_K, 4,
                                                      batch, expected, shape, strides, &p),
                         PYROI_OK);
            CHECK_STATUS(pyroi_roi_align_backward_workspace_size_f32(boxes, WS_K, 4, batch, shape,
                                                                     &p, &size), PYROI_OK);
            CHECK(size > 0 && size < sizeof(workspace) - 1);
            /* the queried size, then misaligned, then ever smaller */
            for (trial = size; trial >= 64; trial = trial * 2 / 3) {
                pyroi_status status;
                memset(actual, 0x7f, sizeof(actual));
                status = pyroi_roi_align_backward_with_workspace_f32(
                    grad_output, go_strides, boxes, WS_K, 4, batch, actual, shape, strides, &p,
                    workspace + (trial == size ? 0 : 1), trial);
                if (trial == size) {
                    CHECK(status == PYROI_OK);
                }
                if (status == PYROI_OK) {
                    CHECK(memcmp(actual, expected, sizeof(actual)) == 0);
                } else {
                    CHECK(status == PYROI_E_NO_MEMORY);
                    CHECK(((const unsigned char *)actual)[0] == 0x7f); /* nothing written */
                    tiny = trial;
                }
            }
        }
    }
    CHECK(tiny > 0); /* the loop reached a workspace too small for the tap tables */
    /* statuses */
    CHECK_STATUS(pyroi_roi_align_backward_workspace_size_f32(boxes, WS_K, 4, batch, shape, &p,
                                                             NULL), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_backward_workspace_size_f32(boxes, WS_K, 4, batch, bad_shape,
                                                             &p, &size), PYROI_E_INVALID_SHAPE);
    CHECK(size == 0);
    CHECK_STATUS(pyroi_roi_align_backward_workspace_size_f32(boxes, WS_K, 4, bad_batch, shape,
                                                             &p, &size),
                 PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(pyroi_roi_align_backward_workspace_size_f32(boxes, -1, 4, batch, shape, &p,
                                                             &size), PYROI_E_INVALID_SHAPE);
    boxes[5] = NAN;
    CHECK_STATUS(pyroi_roi_align_backward_workspace_size_f32(boxes, WS_K, 4, batch, shape, &p,
                                                             &size), PYROI_E_INVALID_BOX);
    CHECK_STATUS(pyroi_roi_align_backward_with_workspace_f32(grad_output, go_strides, boxes,
                                                             WS_K, 4, batch, actual, shape,
                                                             strides, &p, workspace,
                                                             sizeof(workspace)),
                 PYROI_E_INVALID_BOX);
    boxes[5] = 1.0f;
    CHECK_STATUS(pyroi_roi_align_backward_with_workspace_f32(grad_output, go_strides, boxes,
                                                             WS_K, 4, batch, actual, shape,
                                                             strides, &p, NULL, 16),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_backward_with_workspace_f32(grad_output, go_strides, boxes,
                                                             WS_K, 4, batch, actual, shape,
                                                             strides, &p, NULL, 0),
                 PYROI_E_NO_MEMORY);
    p.pooled_width = 0;
    CHECK_STATUS(pyroi_roi_align_backward_workspace_size_f32(boxes, WS_K, 4, batch, shape, &p,
                                                             &size),
                 PYROI_E_INVALID_OUTPUT_SIZE);
    p.pooled_width = 3;
    /* nothing to write: no workspace needed */
    CHECK_STATUS(pyroi_roi_align_backward_workspace_size_f32(boxes, WS_K, 4, batch, empty_shape,
                                                             &p, &size), PYROI_OK);
    CHECK(size == 0);
    CHECK_STATUS(pyroi_roi_align_backward_with_workspace_f32(grad_output, go_strides, boxes,
                                                             WS_K, 4, batch, actual,
                                                             empty_shape, strides, &p, NULL, 0),
                 PYROI_OK);
}

/* float64: the queried workspace gives the malloc backward's result. */
static void test_backward_workspace_f64(void)
{
    static double grad_output[3 * 2 * 4], expected[2 * 2 * 6 * 7], actual[2 * 2 * 6 * 7];
    static unsigned char workspace[1 << 16];
    const int64_t shape[4] = {2, 2, 6, 7}, strides[4] = {84, 42, 7, 1};
    const int64_t go_strides[4] = {8, 4, 2, 1};
    const double boxes[12] = {0.5, 1, 5, 4.5, -1, -2, 3, 8, 2, 2, 2, 2};
    const int64_t batch[3] = {1, 0, 1};
    pyroi_roi_align_params p;
    size_t size = 0;
    int i;
    for (i = 0; i < 24; ++i) {
        grad_output[i] = 0.25 * i - 2.0;
    }
    pyroi_roi_align_params_init(&p);
    p.pooled_height = p.pooled_width = 2;
    p.aligned = 1;
    p.sampling_ratio = 2;
    CHECK_STATUS(pyroi_roi_align_backward_f64(grad_output, go_strides, boxes, 3, 4, batch,
                                              expected, shape, strides, &p), PYROI_OK);
    CHECK_STATUS(pyroi_roi_align_backward_workspace_size_f64(boxes, 3, 4, batch, shape, &p,
                                                             &size), PYROI_OK);
    CHECK(size > 0 && size <= sizeof(workspace));
    CHECK_STATUS(pyroi_roi_align_backward_with_workspace_f64(grad_output, go_strides, boxes, 3,
                                                             4, batch, actual, shape, strides,
                                                             &p, workspace, size), PYROI_OK);
    CHECK(memcmp(actual, expected, sizeof(actual)) == 0);
}

/* binary16 conversion: exhaustive round trip, ties to even at every midpoint, overflow. */
static void test_half_conversion(void)
{
    uint32_t h;
    int round_trip_ok = 1, ties_ok = 1;
    for (h = 0; h < 0x10000u; ++h) {
        const float value = pyroi_half_to_float((uint16_t)h);
        if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0) {
            round_trip_ok &= isnan(value) && (pyroi_float_to_half(value) & 0x7c00u) == 0x7c00u &&
                             (pyroi_float_to_half(value) & 0x3ffu) != 0;
            continue;
        }
        round_trip_ok &= pyroi_float_to_half(value) == (uint16_t)h;
        /* between h and the next larger magnitude (both finite): the midpoint is exact in
         * float and rounds to the even one; one float ulp either side rounds to the nearer */
        if ((h & 0x7fffu) < 0x7bffu) {
            const uint16_t next = (uint16_t)(h + 1u);
            const float mid = (float)(((double)value + (double)pyroi_half_to_float(next)) / 2.0);
            const uint16_t even = (h & 1u) ? next : (uint16_t)h;
            ties_ok &= pyroi_float_to_half(mid) == even;
            ties_ok &= pyroi_float_to_half(nextafterf(mid, value)) == (uint16_t)h;
            ties_ok &= pyroi_float_to_half(nextafterf(mid, 2.0f * mid)) == next ||
                       mid == 0.0f;
        }
    }
    CHECK(round_trip_ok);
    CHECK(ties_ok);
    CHECK(pyroi_float_to_half(65504.0f) == 0x7bffu);
    CHECK(pyroi_float_to_half(65519.99f) == 0x7bffu);
    CHECK(pyroi_float_to_half(65520.0f) == 0x7c00u);
    CHECK(pyroi_float_to_half(-1e30f) == 0xfc00u);
    CHECK(pyroi_float_to_half(1e-30f) == 0x0000u);
    CHECK(pyroi_float_to_half(-1e-30f) == 0x8000u);
    CHECK(pyroi_float_to_half(5.9604644775390625e-8f) == 0x0001u);  /* 2^-24 */
    CHECK(pyroi_float_to_half(2.98023223876953125e-8f) == 0x0000u); /* 2^-25: tie to 0 */
    CHECK(pyroi_float_to_half(3.0e-8f) == 0x0001u);
    CHECK(pyroi_half_to_float(0x3c00u) == 1.0f && pyroi_half_to_float(0xc000u) == -2.0f);
    CHECK(isnan(pyroi_half_to_float(pyroi_float_to_half(NAN))));
}

/* float16 entry points = float32 calls on the widened data, rounded once. */
static void test_roi_align_f16(void)
{
    static uint16_t x16[2 * 3 * 7 * 9], y16[4 * 3 * 2 * 2], g16[2 * 3 * 7 * 9];
    static float x32[2 * 3 * 7 * 9], y32[4 * 3 * 2 * 2], g32[2 * 3 * 7 * 9];
    static uint16_t go16[4 * 3 * 2 * 2];
    static float go32[4 * 3 * 2 * 2];
    const int64_t shape[4] = {2, 3, 7, 9}, strides[4] = {189, 63, 9, 1};
    const int64_t t_strides[4] = {189, 1, 27, 3}; /* channels-last: any strides */
    const int64_t out_strides[4] = {12, 4, 2, 1};
    float boxes[16] = {0.5f, 1, 6, 5.5f, -2, -1, 3, 9, 4, 4, 4, 4, 8, 0, 2, 6};
    const int64_t batch[4] = {0, 1, 1, 0}, bad_batch[4] = {0, 2, 1, 0};
    unsigned long long state = 3;
    pyroi_roi_align_params p;
    int i, same = 1, aligned;
    for (i = 0; i < 2 * 3 * 7 * 9; ++i) {
        x16[i] = pyroi_float_to_half((float)(check_random(&state) * 8.0 - 4.0));
    }
    for (i = 0; i < 4 * 3 * 2 * 2; ++i) {
        go16[i] = pyroi_float_to_half((float)(check_random(&state) - 0.5));
        go32[i] = pyroi_half_to_float(go16[i]);
    }
    pyroi_roi_align_params_init(&p);
    p.pooled_height = p.pooled_width = 2;
    p.spatial_scale_h = p.spatial_scale_w = 0.75;
    for (aligned = 0; aligned < 2; ++aligned) {
        p.aligned = aligned;
        /* x16 read as channels-last: widen the same element order for the reference */
        for (i = 0; i < 2 * 3 * 7 * 9; ++i) {
            x32[i] = pyroi_half_to_float(x16[i]);
        }
        CHECK_STATUS(pyroi_roi_align_forward_f16(x16, shape, t_strides, boxes, 4, 4, batch, y16,
                                                 out_strides, &p), PYROI_OK);
        CHECK_STATUS(pyroi_roi_align_forward_f32(x32, shape, t_strides, boxes, 4, 4, batch, y32,
                                                 out_strides, &p), PYROI_OK);
        for (i = 0; i < 4 * 3 * 2 * 2; ++i) {
            same &= y16[i] == pyroi_float_to_half(y32[i]);
        }
        CHECK_STATUS(pyroi_roi_align_backward_f16(go16, out_strides, boxes, 4, 4, batch, g16,
                                                  shape, strides, &p), PYROI_OK);
        CHECK_STATUS(pyroi_roi_align_backward_f32(go32, out_strides, boxes, 4, 4, batch, g32,
                                                  shape, strides, &p), PYROI_OK);
        for (i = 0; i < 2 * 3 * 7 * 9; ++i) {
            same &= g16[i] == pyroi_float_to_half(g32[i]);
        }
    }
    CHECK(same);
    /* statuses: validated before anything is written */
    memset(y16, 0, sizeof(y16));
    CHECK_STATUS(pyroi_roi_align_forward_f16(x16, shape, strides, boxes, 4, 4, bad_batch, y16,
                                             out_strides, &p), PYROI_E_INVALID_BATCH_INDEX);
    boxes[2] = NAN;
    CHECK_STATUS(pyroi_roi_align_forward_f16(x16, shape, strides, boxes, 4, 4, batch, y16,
                                             out_strides, &p), PYROI_E_INVALID_BOX);
    CHECK_STATUS(pyroi_roi_align_backward_f16(go16, out_strides, boxes, 4, 4, batch, g16, shape,
                                              strides, &p), PYROI_E_INVALID_BOX);
    boxes[2] = 6;
    CHECK_STATUS(pyroi_roi_align_forward_f16(NULL, shape, strides, boxes, 4, 4, batch, y16,
                                             out_strides, &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_forward_f16(x16, shape, strides, boxes, 4, 4, batch, y16,
                                             out_strides, NULL), PYROI_E_NULL_POINTER);
    for (i = 0; i < 4 * 3 * 2 * 2; ++i) {
        CHECK(y16[i] == 0);
    }
    CHECK_STATUS(pyroi_roi_align_forward_f16(x16, shape, strides, boxes, 0, 4, batch, y16,
                                             out_strides, &p), PYROI_OK); /* K = 0 */
}

/* pyroi_scale_f32_to_f16: the float32 product, rounded once to float16; statuses. */
static void test_scale_to_f16(void)
{
    const float source[5] = {1.0f / 3.0f, 65504.0f, -2.5f, 0.0f, 1.0f + 0x1p-11f};
    uint16_t target[5] = {0, 0, 0, 0, 0};
    int i;
    CHECK_STATUS(pyroi_scale_f32_to_f16(source, 5, 3.0f, target), PYROI_OK);
    for (i = 0; i < 5; ++i) {
        const float product = source[i] * 3.0f;
        CHECK(target[i] == pyroi_float_to_half(product));
    }
    CHECK(target[1] == 0x7c00u); /* 196512 overflows float16: infinity */
    CHECK(target[2] == pyroi_float_to_half(-7.5f));
    /* 1 + 2^-11 is a float16 tie: rounded once (to even, 1.0) when scaled by 1 */
    CHECK_STATUS(pyroi_scale_f32_to_f16(source + 4, 1, 1.0f, target), PYROI_OK);
    CHECK(target[0] == 0x3c00u);
    CHECK_STATUS(pyroi_scale_f32_to_f16(NULL, 0, 2.0f, NULL), PYROI_OK);
    CHECK_STATUS(pyroi_scale_f32_to_f16(NULL, 1, 2.0f, target), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_scale_f32_to_f16(source, 1, 2.0f, NULL), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_scale_f32_to_f16(source, -1, 2.0f, target), PYROI_E_INVALID_SHAPE);
}

int main(void)
{
    test_onnx_max_quirks();
    test_onnx_max_outside();
    test_onnx_max_statuses();
    test_backward_workspace();
    test_backward_workspace_f64();
    test_half_conversion();
    test_roi_align_f16();
    test_scale_to_f16();
    return check_report("test_frontends");
}
