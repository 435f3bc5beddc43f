/* Known answers for the compatibility front-ends: ONNX RoiAlign mode="max" (onnxruntime's max
 * over weighted taps; SEMANTICS.md 4.1 and 12.6, verified on onnxruntime 1.32). */
#include "pyroi.h"
#include "check.h"

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

int main(void)
{
    test_onnx_max_quirks();
    test_onnx_max_outside();
    test_onnx_max_statuses();
    return check_report("test_frontends");
}
