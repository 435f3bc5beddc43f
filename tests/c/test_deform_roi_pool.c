/* Deformable RoI pooling (docs/semantics.md §14): mmcv's third known answer (zero offsets:
 * aligned RoIAlign; mmcv tests/test_ops/test_deform_roi_pool.py at 0a4cd90a), a translated
 * bin, the offset gradient on a ramp (inside the map and in the halo ring, where the sampler
 * clamps), the mask, thread-count invariance and the statuses. */
#include "pyroi.h"
#include "check.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static const int64_t out_strides[4] = {4, 4, 2, 1}; /* one channel of 2 x 2 bins */
static const int64_t offset_strides[4] = {8, 4, 2, 1}; /* (K, 2, 2, 2) */
static const int64_t mask_strides[4] = {4, 4, 2, 1};   /* (K, 1, 2, 2) */

/* mmcv's third case: a 4x4 map, RoI (0, 0, 3, 3), 2x2 bins, sampling_ratio 2; the same with
 * zero offsets given and with none. */
static void test_mmcv_known_answer(void)
{
    const int64_t shape[4] = {1, 1, 4, 4}, strides[4] = {16, 16, 4, 1};
    const int64_t batch[1] = {0};
    const float x[16] = {1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16};
    const float box[4] = {0, 0, 3, 3};
    const float expected[4] = {1.9375f, 4.75f, 7.5625f, 10.375f};
    const float expected_grad[16] = {
        0.47265625f, 0.4296875f, 0.4296875f, 0.04296875f, 0.4296875f, 0.390625f,
        0.390625f,   0.0390625f, 0.4296875f, 0.390625f,  0.390625f,  0.0390625f,
        0.04296875f, 0.0390625f, 0.0390625f, 0.00390625f};
    const float zeros[8] = {0}, ones[4] = {1, 1, 1, 1};
    float y[4], g[16];
    pyroi_deform_roi_pool_params p;
    int i, given;
    pyroi_deform_roi_pool_params_init(&p);
    CHECK(p.gamma == 0.1 && p.sampling_ratio == 0 && p.pooled_height == 1);
    p.pooled_height = p.pooled_width = 2;
    p.sampling_ratio = 2;
    for (given = 0; given < 2; ++given) {
        const float *offset = given ? zeros : NULL;
        CHECK_STATUS(pyroi_deform_roi_pool_forward_f32(x, shape, strides, box, 1, 4, batch,
                                                       offset, offset_strides, NULL, NULL, y,
                                                       out_strides, &p), PYROI_OK);
        for (i = 0; i < 4; ++i) {
            CHECK_CLOSE(y[i], expected[i], 1e-6);
        }
        CHECK_STATUS(pyroi_deform_roi_pool_backward_f32(ones, out_strides, box, 1, 4, batch,
                                                        offset, offset_strides, NULL, NULL, g,
                                                        shape, strides, &p), PYROI_OK);
        for (i = 0; i < 16; ++i) {
            CHECK_CLOSE(g[i], expected_grad[i], 1e-6);
        }
    }
}

/* A ramp rising by 1 per column (value = column) and 10 per row: one bin, one sample. The
 * RoI (0, 0, 2, 2) samples (0.5, 0.5); offset (5, 0) moves it to x = 1.5 (value 1.5 + 5),
 * with d/d offset_x = gamma * roi_w * 1 = 0.2 and d/d offset_y = 0.1 * 2 * 10 = 2. Moved to
 * x = -0.5 (the halo ring, clamped to column 0) the x slope is 0; moved to x = 3.5, past
 * the last column, too; moved beyond the halo the value and both slopes are 0. The mask
 * scales the value and the offset slopes, and its own gradient is the mean. */
static void test_offsets_and_mask_on_a_ramp(void)
{
    const int64_t shape[4] = {1, 1, 4, 4}, strides[4] = {16, 16, 4, 1};
    const int64_t one[4] = {1, 1, 1, 1}, two[4] = {2, 1, 1, 1}; /* (1, 2, 1, 1) */
    const int64_t batch[1] = {0};
    const double box[4] = {0, 0, 2, 2};
    const double shifts[4][2] = {{5, 0}, {-5, 0}, {15, 0}, {40, 0}};
    const double values[4] = {6.5, 5.0, 8.0, 0.0}, slopes_x[4] = {0.2, 0, 0, 0};
    const double slopes_y[4] = {2.0, 2.0, 2.0, 0.0};
    double x[16], y, gin[16], goff[2], gmask, gout = 1.0, mask = 0.5;
    pyroi_deform_roi_pool_params p;
    int i, c;
    for (i = 0; i < 16; ++i) {
        x[i] = (double)(i % 4) + 10.0 * (double)(i / 4);
    }
    pyroi_deform_roi_pool_params_init(&p);
    p.sampling_ratio = 1;
    for (c = 0; c < 4; ++c) {
        CHECK_STATUS(pyroi_deform_roi_pool_forward_f64(x, shape, strides, box, 1, 4, batch,
                                                       shifts[c], two, NULL, NULL, &y, one, &p),
                     PYROI_OK);
        CHECK_CLOSE(y, values[c], 1e-12);
        CHECK_STATUS(pyroi_deform_roi_pool_backward_offset_f64(
                         &gout, one, x, shape, strides, box, 1, 4, batch, shifts[c], two, NULL,
                         NULL, goff, two, NULL, NULL, &p), PYROI_OK);
        CHECK_CLOSE(goff[0], slopes_x[c], 1e-12);
        CHECK_CLOSE(goff[1], slopes_y[c], 1e-12);
        /* modulated: half the value, half the slopes, the mean as the mask's gradient */
        CHECK_STATUS(pyroi_deform_roi_pool_forward_f64(x, shape, strides, box, 1, 4, batch,
                                                       shifts[c], two, &mask, one, &y, one, &p),
                     PYROI_OK);
        CHECK_CLOSE(y, 0.5 * values[c], 1e-12);
        CHECK_STATUS(pyroi_deform_roi_pool_backward_offset_f64(
                         &gout, one, x, shape, strides, box, 1, 4, batch, shifts[c], two, &mask,
                         one, goff, two, &gmask, one, &p), PYROI_OK);
        CHECK_CLOSE(goff[0], 0.5 * slopes_x[c], 1e-12);
        CHECK_CLOSE(gmask, values[c], 1e-12);
        CHECK_STATUS(pyroi_deform_roi_pool_backward_f64(&gout, one, box, 1, 4, batch, shifts[c],
                                                        two, &mask, one, gin, shape, strides,
                                                        &p), PYROI_OK);
        {
            double total = 0.0;
            for (i = 0; i < 16; ++i) {
                total += gin[i];
            }
            CHECK_CLOSE(total, c == 3 ? 0.0 : 0.5, 1e-12); /* the sample's weights, masked */
        }
    }
}

/* 40 RoIs of 70 channels (two channel blocks and a remainder), random offsets and mask: the
 * same bits for 1, 2 and 5 threads, for every entry point. */
static void test_threads(void)
{
    enum { K = 40, C = 70, H = 12, W = 15 };
    static float x[C * H * W], y[3][K * C * 4], go[K * C * 4], gi[3][C * H * W];
    static float offset[K * 8], mask[K * 4], goff[3][K * 8], gmask[3][K * 4];
    const int64_t shape[4] = {1, C, H, W}, strides[4] = {C * H * W, H * W, W, 1};
    const int64_t pooled[4] = {C * 4, 4, 2, 1};
    const int64_t offsets[4] = {8, 4, 2, 1}, masks[4] = {4, 4, 2, 1};
    static float boxes[K * 4];
    static int64_t batch[K];
    const int threads[3] = {1, 2, 5};
    uint32_t seed = 12345u;
    pyroi_deform_roi_pool_params p;
    int i, t;
    for (i = 0; i < C * H * W; ++i) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }
    for (i = 0; i < K * C * 4; ++i) {
        go[i] = (float)((i * 7) % 13) - 6.0f;
    }
    for (i = 0; i < K; ++i) {
        boxes[4 * i + 0] = (float)(i % 7) - 2.0f;
        boxes[4 * i + 1] = (float)(i % 5) - 1.0f;
        boxes[4 * i + 2] = boxes[4 * i + 0] + 3.0f + (float)(i % 9);
        boxes[4 * i + 3] = boxes[4 * i + 1] + 2.0f + (float)(i % 6);
        batch[i] = 0;
    }
    for (i = 0; i < K * 8; ++i) {
        offset[i] = (float)((i * 11) % 17) / 4.0f - 2.0f;
    }
    for (i = 0; i < K * 4; ++i) {
        mask[i] = (float)(i % 5) / 4.0f;
    }
    pyroi_deform_roi_pool_params_init(&p);
    p.pooled_height = p.pooled_width = 2;
    for (t = 0; t < 3; ++t) {
        p.num_threads = threads[t];
        CHECK_STATUS(pyroi_deform_roi_pool_forward_f32(x, shape, strides, boxes, K, 4, batch,
                                                       offset, offsets, mask, masks, y[t],
                                                       pooled, &p), PYROI_OK);
        CHECK_STATUS(pyroi_deform_roi_pool_backward_f32(go, pooled, boxes, K, 4, batch, offset,
                                                        offsets, mask, masks, gi[t], shape,
                                                        strides, &p), PYROI_OK);
        CHECK_STATUS(pyroi_deform_roi_pool_backward_offset_f32(
                         go, pooled, x, shape, strides, boxes, K, 4, batch, offset, offsets,
                         mask, masks, goff[t], offsets, gmask[t], masks, &p), PYROI_OK);
    }
    for (t = 1; t < 3; ++t) {
        CHECK(memcmp(y[0], y[t], sizeof y[0]) == 0);
        CHECK(memcmp(gi[0], gi[t], sizeof gi[0]) == 0);
        CHECK(memcmp(goff[0], goff[t], sizeof goff[0]) == 0);
        CHECK(memcmp(gmask[0], gmask[t], sizeof gmask[0]) == 0);
    }
}

static void test_statuses(void)
{
    const int64_t shape[4] = {1, 1, 2, 2}, strides[4] = {4, 4, 2, 1};
    const int64_t one[4] = {1, 1, 1, 1}, two[4] = {2, 1, 1, 1}; /* (1, 2, 1, 1) */
    const int64_t batch[1] = {0}, bad_batch[1] = {1};
    const float x[4] = {1, 1, 1, 1}, box[4] = {0, 0, 1, 1};
    const float inf_box[4] = {0, 0, INFINITY, 1};
    float offset[2] = {0, 0}, y[1], go[1] = {1}, goff[2];
    int64_t failed = 7;
    pyroi_cancel cancel;
    pyroi_deform_roi_pool_params p;
    pyroi_deform_roi_pool_params_init(&p);
    CHECK_STATUS(pyroi_deform_roi_pool_forward_f32(x, shape, strides, box, 1, 4, batch, offset,
                                                   two, NULL, NULL, y, one, NULL),
                 PYROI_E_NULL_POINTER);
    p.gamma = NAN;
    CHECK_STATUS(pyroi_deform_roi_pool_forward_f32(x, shape, strides, box, 1, 4, batch, offset,
                                                   two, NULL, NULL, y, one, &p),
                 PYROI_E_INVALID_SCALE);
    p.gamma = 0.1;
    p.sampling_ratio = PYROI_MAX_SAMPLING_RATIO + 1;
    CHECK_STATUS(pyroi_deform_roi_pool_forward_f32(x, shape, strides, box, 1, 4, batch, offset,
                                                   two, NULL, NULL, y, one, &p),
                 PYROI_E_INVALID_SAMPLING_RATIO);
    p.sampling_ratio = 0;
    CHECK_STATUS(pyroi_deform_roi_pool_forward_f32(x, shape, strides, box, 1, 4, bad_batch,
                                                   offset, two, NULL, NULL, y, one, &p),
                 PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(pyroi_deform_roi_pool_forward_f32(x, shape, strides, inf_box, 1, 4, batch,
                                                   offset, two, NULL, NULL, y, one, &p),
                 PYROI_E_INVALID_BOX);
    CHECK_STATUS(pyroi_deform_roi_pool_find_invalid_roi_f32(inf_box, 1, 4, batch, 1, 2, 2, &p,
                                                            &failed), PYROI_E_INVALID_BOX);
    CHECK(failed == 0);
    offset[1] = NAN;
    CHECK_STATUS(pyroi_deform_roi_pool_forward_f32(x, shape, strides, box, 1, 4, batch, offset,
                                                   two, NULL, NULL, y, one, &p),
                 PYROI_E_INVALID_OFFSET);
    CHECK_STATUS(pyroi_deform_roi_pool_backward_offset_f32(go, one, x, shape, strides, box, 1, 4,
                                                           batch, offset, two, NULL, NULL, goff,
                                                           two, NULL, NULL, &p),
                 PYROI_E_INVALID_OFFSET);
    CHECK(strcmp(pyroi_status_string(PYROI_E_INVALID_OFFSET), "unknown status") != 0);
    offset[1] = 0;
    CHECK_STATUS(pyroi_deform_roi_pool_backward_offset_f32(go, one, x, shape, strides, box, 1, 4,
                                                           batch, offset, NULL, NULL, NULL,
                                                           goff, two, NULL, NULL, &p),
                 PYROI_E_NULL_POINTER);
    pyroi_cancel_init(&cancel);
    cancel.requested = 1;
    p.cancel = &cancel;
    CHECK_STATUS(pyroi_deform_roi_pool_forward_f32(x, shape, strides, box, 1, 4, batch, offset,
                                                   two, NULL, NULL, y, one, &p),
                 PYROI_E_CANCELLED);
}

int main(void)
{
    test_mmcv_known_answer();
    test_offsets_and_mask_on_a_ramp();
    test_threads();
    test_statuses();
    return check_report("test_deform_roi_pool");
}
