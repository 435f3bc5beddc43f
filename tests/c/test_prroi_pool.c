/* Precise RoI Pooling: mmcv's known answers (forward, input gradient, box gradient; mmcv
 * tests/test_ops/test_prroi_pool.py at 1917af53), the border rule of the zero-padded surface,
 * degenerate boxes, thread-count invariance and the statuses (docs/semantics.md §12). */
#include "pyroi.h"
#include "check.h"

#include <stdint.h>
#include <string.h>

static const int64_t out_strides[4] = {4, 4, 2, 1}; /* one channel of 2 x 2 bins */

/* mmcv's third case: a 4x4 map, RoI (0, 0, 3, 3), 2x2 bins; grad_output all ones. */
static void test_mmcv_known_answer(void)
{
    const int64_t shape[4] = {1, 1, 4, 4}, strides[4] = {16, 16, 4, 1};
    const int64_t batch[1] = {0};
    const float x[16] = {1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16};
    const float box[4] = {0, 0, 3, 3};
    const float expected[4] = {3.75f, 6.91666651f, 10.08333302f, 13.25f};
    const float expected_grad[16] = {
        0.11111111f, 0.22222224f, 0.22222222f, 0.11111111f, 0.22222224f, 0.444444448f,
        0.44444448f, 0.22222224f, 0.22222224f, 0.44444448f, 0.44444448f, 0.22222224f,
        0.11111111f, 0.22222224f, 0.22222224f, 0.11111111f};
    const float expected_boxes[4] = {3.33333302f, 6.66666603f, 3.33333349f, 6.66666698f};
    const float ones[4] = {1, 1, 1, 1};
    float y[4], g[16], gb[4];
    pyroi_prroi_pool_params p;
    int i;
    pyroi_prroi_pool_params_init(&p);
    p.pooled_height = p.pooled_width = 2;
    CHECK_STATUS(pyroi_prroi_pool_forward_f32(x, shape, strides, box, 1, 4, batch, y,
                                              out_strides, &p), PYROI_OK);
    for (i = 0; i < 4; ++i) {
        CHECK_CLOSE(y[i], expected[i], 1e-5);
    }
    CHECK_STATUS(pyroi_prroi_pool_backward_f32(ones, out_strides, box, 1, 4, batch, g, shape,
                                               strides, &p), PYROI_OK);
    for (i = 0; i < 16; ++i) {
        CHECK_CLOSE(g[i], expected_grad[i], 1e-5);
    }
    CHECK_STATUS(pyroi_prroi_pool_backward_boxes_f32(ones, out_strides, x, shape, strides, box,
                                                     1, 4, batch, gb, 4, &p), PYROI_OK);
    for (i = 0; i < 4; ++i) {
        CHECK_CLOSE(gb[i], expected_boxes[i], 1e-5);
    }
}

/* A constant-1 map 4 wide: the box x in [3, 5] (rows [0, 1]) averages the fading surface
 * (x in [3, 4] falls from 1 to 0, [4, 5] is 0): one bin of 0.25. An inverted or empty box
 * gives 0 and no gradient; a box far off the map gives 0. */
static void test_border_and_degenerate(void)
{
    const int64_t shape[4] = {1, 1, 4, 4}, strides[4] = {16, 16, 4, 1};
    const int64_t one[4] = {1, 1, 1, 1};
    const int64_t batch[1] = {0};
    const double boxes[4][4] = {{3, 0, 5, 1}, {2, 2, 1, 3}, {1, 1, 1, 3}, {10, 10, 12, 12}};
    const double expected[4] = {0.25, 0, 0, 0};
    double x[16], y, gb[4], gout = 1.0;
    pyroi_prroi_pool_params p;
    int i, b;
    for (i = 0; i < 16; ++i) {
        x[i] = 1.0;
    }
    pyroi_prroi_pool_params_init(&p);
    for (b = 0; b < 4; ++b) {
        CHECK_STATUS(pyroi_prroi_pool_forward_f64(x, shape, strides, boxes[b], 1, 4, batch, &y,
                                                  one, &p), PYROI_OK);
        CHECK_CLOSE(y, expected[b], 1e-12);
        CHECK_STATUS(pyroi_prroi_pool_backward_boxes_f64(&gout, one, x, shape, strides,
                                                         boxes[b], 1, 4, batch, gb, 4, &p),
                     PYROI_OK);
        if (b > 0) {
            for (i = 0; i < 4; ++i) {
                CHECK(gb[i] == 0.0);
            }
        }
    }
}

/* Random boxes: every output and gradient identical for 1, 2 and 3 threads. */
static void test_threads(void)
{
    enum { N = 2, C = 5, H = 9, W = 11, K = 13 };
    const int64_t shape[4] = {N, C, H, W}, strides[4] = {C * H * W, H * W, W, 1};
    const int64_t pooled[4] = {C * 6, 6, 3, 1};
    static float x[N * C * H * W], boxes[K * 4], go[K * C * 6];
    static float y[3][K * C * 6], gi[3][N * C * H * W], gb[3][K * 4];
    int64_t batch[K];
    pyroi_prroi_pool_params p;
    uint32_t seed = 12345u;
    int i, t;
#define NEXT() ((seed = seed * 1664525u + 1013904223u), (float)(seed >> 8) / 16777216.0f)
    for (i = 0; i < N * C * H * W; ++i) {
        x[i] = NEXT() - 0.5f;
    }
    for (i = 0; i < K; ++i) {
        boxes[4 * i] = NEXT() * 14.0f - 2.0f;
        boxes[4 * i + 1] = NEXT() * 12.0f - 2.0f;
        boxes[4 * i + 2] = boxes[4 * i] + NEXT() * 8.0f;
        boxes[4 * i + 3] = boxes[4 * i + 1] + NEXT() * 8.0f;
        batch[i] = i % N;
    }
    for (i = 0; i < K * C * 6; ++i) {
        go[i] = NEXT();
    }
#undef NEXT
    pyroi_prroi_pool_params_init(&p);
    p.pooled_height = 2;
    p.pooled_width = 3;
    for (t = 0; t < 3; ++t) {
        p.num_threads = t + 1;
        CHECK_STATUS(pyroi_prroi_pool_forward_f32(x, shape, strides, boxes, K, 4, batch, y[t],
                                                  pooled, &p), PYROI_OK);
        CHECK_STATUS(pyroi_prroi_pool_backward_f32(go, pooled, boxes, K, 4, batch, gi[t], shape,
                                                   strides, &p), PYROI_OK);
        CHECK_STATUS(pyroi_prroi_pool_backward_boxes_f32(go, pooled, x, shape, strides, boxes, K,
                                                         4, batch, gb[t], 4, &p), PYROI_OK);
    }
    CHECK(memcmp(y[0], y[1], sizeof y[0]) == 0 && memcmp(y[0], y[2], sizeof y[0]) == 0);
    CHECK(memcmp(gi[0], gi[1], sizeof gi[0]) == 0 && memcmp(gi[0], gi[2], sizeof gi[0]) == 0);
    CHECK(memcmp(gb[0], gb[1], sizeof gb[0]) == 0 && memcmp(gb[0], gb[2], sizeof gb[0]) == 0);
}

/* Every status the entry points document, nothing written on failure. */
static void test_statuses(void)
{
    const int64_t shape[4] = {1, 1, 2, 2}, strides[4] = {4, 4, 2, 1};
    const int64_t one[4] = {1, 1, 1, 1};
    const int64_t bad_shape[4] = {1, -1, 2, 2};
    int64_t batch[2] = {0, 0};
    const int64_t bad_batch[1] = {1};
    const float x[4] = {1, 2, 3, 4};
    float boxes[8] = {0, 0, 1, 1, 0, 0, 1, 1};
    const float inf_box[4] = {0, 0, 1.0f / 0.0f, 1};
    const float huge_box[4] = {-3e38f, -3e38f, 3e38f, 3e38f};
    float y[2] = {-7, -7}, gb[8];
    uint16_t half_x[4] = {0x3c00, 0x3c00, 0x3c00, 0x3c00}, half_y[1] = {0};
    pyroi_prroi_pool_params p;
    pyroi_cancel cancel;
    pyroi_prroi_pool_params_init(&p);
    CHECK_STATUS(pyroi_prroi_pool_forward_f32(x, shape, strides, boxes, 1, 4, batch, y, one,
                                              NULL), PYROI_E_NULL_POINTER);
    p.pooled_height = 0;
    CHECK_STATUS(pyroi_prroi_pool_forward_f32(x, shape, strides, boxes, 1, 4, batch, y, one, &p),
                 PYROI_E_INVALID_OUTPUT_SIZE);
    p.pooled_height = 1;
    p.spatial_scale_w = -1.0;
    CHECK_STATUS(pyroi_prroi_pool_forward_f32(x, shape, strides, boxes, 1, 4, batch, y, one, &p),
                 PYROI_E_INVALID_SCALE);
    p.spatial_scale_w = 1.0;
    p.num_threads = -1;
    CHECK_STATUS(pyroi_prroi_pool_forward_f32(x, shape, strides, boxes, 1, 4, batch, y, one, &p),
                 PYROI_E_INVALID_NUM_THREADS);
    p.num_threads = 0;
    CHECK_STATUS(pyroi_prroi_pool_forward_f32(x, bad_shape, strides, boxes, 1, 4, batch, y, one,
                                              &p), PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_prroi_pool_forward_f32(NULL, shape, strides, boxes, 1, 4, batch, y, one,
                                              &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_prroi_pool_forward_f32(x, shape, strides, boxes, 1, 4, bad_batch, y, one,
                                              &p), PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(pyroi_prroi_pool_forward_f32(x, shape, strides, inf_box, 1, 4, batch, y, one,
                                              &p), PYROI_E_INVALID_BOX);
    CHECK(y[0] == -7.0f); /* nothing written */
    /* huge finite boxes: accepted in double, cost bounded by the map; the mean is ~0 */
    CHECK_STATUS(pyroi_prroi_pool_forward_f32(x, shape, strides, huge_box, 1, 4, batch, y, one,
                                              &p), PYROI_OK);
    CHECK(y[0] >= 0.0f && y[0] < 1e-30f);
    CHECK_STATUS(pyroi_prroi_pool_backward_boxes_f32(y, one, x, bad_shape, strides, boxes, 2, 4,
                                                     batch, gb, 4, &p), PYROI_E_INVALID_SHAPE);
    {
        const int64_t two[4] = {1, 1, 1, 1};
        CHECK_STATUS(pyroi_prroi_pool_backward_boxes_f32(y, two, x, shape, strides, boxes, 2, 4,
                                                         batch, gb, 2, &p),
                     PYROI_E_INVALID_STRIDES); /* rows of gradients overlap */
        CHECK_STATUS(pyroi_prroi_pool_backward_boxes_f32(y, two, x, shape, strides, boxes, 1, 4,
                                                         batch, NULL, 4, &p),
                     PYROI_E_NULL_POINTER);
    }
    {
        int64_t failed = 7;
        CHECK_STATUS(pyroi_prroi_pool_find_invalid_roi_f32(inf_box, 1, 4, batch, 1, &p, &failed),
                     PYROI_E_INVALID_BOX);
        CHECK(failed == 0);
    }
    pyroi_cancel_init(&cancel);
    cancel.requested = 1;
    p.cancel = &cancel;
    CHECK_STATUS(pyroi_prroi_pool_forward_f32(x, shape, strides, boxes, 1, 4, batch, y, one, &p),
                 PYROI_E_CANCELLED);
    p.cancel = NULL;
    /* float16: the box (0, 0, 1, 1) over a constant-1 map 2x2 is 1 */
    CHECK_STATUS(pyroi_prroi_pool_forward_f16(half_x, shape, strides, boxes, 1, 4, batch, half_y,
                                              one, &p), PYROI_OK);
    CHECK(half_y[0] == 0x3c00);
}

int main(void)
{
    test_mmcv_known_answer();
    test_border_and_degenerate();
    test_threads();
    test_statuses();
    return check_report("test_prroi_pool");
}
