/* Every status code of the RoIAlign entry points is reachable, and a failing call writes
 * nothing. */
#include "pyroi.h"
#include "check.h"

#include <float.h>
#include <math.h>
#include <string.h>

enum { H = 4, W = 4 };
static float x[H * W];
static const int64_t x_shape[4] = {1, 1, H, W};
static const int64_t x_strides[4] = {H * W, H * W, W, 1};
static const int64_t y_strides[4] = {4, 4, 2, 1};
static float y[16];
static float gx[H * W];

static void default_params(pyroi_roi_align_params *p)
{
    pyroi_roi_align_params_init(p);
    p->pooled_height = p->pooled_width = 2;
    p->sampling_ratio = 2;
}

static pyroi_status forward_box(const float box[4], int64_t batch, const pyroi_roi_align_params *p)
{
    return pyroi_roi_align_forward_f32(x, x_shape, x_strides, box, 1, 4, &batch, y, y_strides, p);
}

static pyroi_status backward_box(const float box[4], int64_t batch, const pyroi_roi_align_params *p)
{
    return pyroi_roi_align_backward_f32(y, y_strides, box, 1, 4, &batch, gx, x_shape, x_strides,
                                        p);
}

static void test_status_strings(void)
{
    int s, t;
    for (s = PYROI_OK; s <= PYROI_E_NO_MEMORY; ++s) {
        const char *text = pyroi_status_string((pyroi_status)s);
        CHECK(text != NULL && strlen(text) > 0 && strcmp(text, "unknown status") != 0);
        for (t = PYROI_OK; t < s; ++t) {
            CHECK(strcmp(text, pyroi_status_string((pyroi_status)t)) != 0);
        }
    }
    CHECK(strcmp(pyroi_status_string((pyroi_status)12345), "unknown status") == 0);
}

static void test_params(void)
{
    const float box[4] = {0, 0, 2, 2};
    pyroi_roi_align_params p;
    const check_params_view view = {&p.pooled_height, &p.pooled_width, &p.spatial_scale_h,
                                    &p.spatial_scale_w, &p.sampling_ratio, &p.num_threads};

    default_params(&p);
    CHECK_STATUS(forward_box(box, 0, &p), PYROI_OK);
    CHECK_STATUS(forward_box(box, 0, NULL), PYROI_E_NULL_POINTER);
    CHECK_PARAMS_STATUS(view, default_params(&p), forward_box(box, 0, &p),
                        backward_box(box, 0, &p));
}

static void test_tensors(void)
{
    const float box[4] = {0, 0, 2, 2};
    const int64_t batch = 0;
    int64_t shape[4], strides[4];
    pyroi_roi_align_params p;

    default_params(&p);
    CHECK_STATUS(pyroi_roi_align_forward_f32(NULL, x_shape, x_strides, box, 1, 4, &batch, y,
                                             y_strides, &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_forward_f32(x, NULL, x_strides, box, 1, 4, &batch, y, y_strides,
                                             &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_forward_f32(x, x_shape, x_strides, NULL, 1, 4, &batch, y,
                                             y_strides, &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_forward_f32(x, x_shape, x_strides, box, 1, 4, NULL, y, y_strides,
                                             &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_forward_f32(x, x_shape, x_strides, box, 1, 4, &batch, NULL,
                                             y_strides, &p), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_align_backward_f32(y, y_strides, box, 1, 4, &batch, NULL, x_shape,
                                              x_strides, &p), PYROI_E_NULL_POINTER);
    /* NULL is fine where nothing is addressed: K = 0, empty input */
    CHECK_STATUS(pyroi_roi_align_forward_f32(x, x_shape, x_strides, NULL, 0, 4, NULL, NULL,
                                             y_strides, &p), PYROI_OK);
    memcpy(shape, x_shape, sizeof(shape));
    shape[1] = 0;
    CHECK_STATUS(pyroi_roi_align_forward_f32(NULL, shape, x_strides, box, 1, 4, &batch, NULL,
                                             y_strides, &p), PYROI_OK);

    CHECK_STATUS(pyroi_roi_align_forward_f32(x, x_shape, x_strides, box, -1, 4, &batch, y,
                                             y_strides, &p), PYROI_E_INVALID_SHAPE);
    memcpy(shape, x_shape, sizeof(shape));
    shape[2] = -1;
    CHECK_STATUS(pyroi_roi_align_forward_f32(x, shape, x_strides, box, 1, 4, &batch, y, y_strides,
                                             &p), PYROI_E_INVALID_SHAPE);
    shape[0] = shape[1] = shape[2] = shape[3] = INT64_C(1) << 20; /* 2^80 elements */
    CHECK_STATUS(pyroi_roi_align_forward_f32(x, shape, x_strides, box, 1, 4, &batch, y, y_strides,
                                             &p), PYROI_E_INVALID_SHAPE);

    memcpy(strides, x_strides, sizeof(strides));
    strides[2] = INT64_MAX / 2;
    CHECK_STATUS(pyroi_roi_align_forward_f32(x, x_shape, strides, box, 1, 4, &batch, y, y_strides,
                                             &p), PYROI_E_INVALID_STRIDES);
    strides[2] = INT64_MIN;
    CHECK_STATUS(pyroi_roi_align_forward_f32(x, x_shape, strides, box, 1, 4, &batch, y, y_strides,
                                             &p), PYROI_E_INVALID_STRIDES);
    /* broadcast (zero-stride) input is fine, a zero-stride output is not */
    memcpy(strides, x_strides, sizeof(strides));
    strides[2] = 0;
    CHECK_STATUS(pyroi_roi_align_forward_f32(x, x_shape, strides, box, 1, 4, &batch, y, y_strides,
                                             &p), PYROI_OK);
    {
        const int64_t overlapping[4] = {4, 4, 0, 1};
        const int64_t interleaved[4] = {4, 4, 1, 1};
        const int64_t negative[4] = {4, 4, -2, -1};
        CHECK_STATUS(pyroi_roi_align_forward_f32(x, x_shape, x_strides, box, 1, 4, &batch, y,
                                                 overlapping, &p), PYROI_E_INVALID_STRIDES);
        CHECK_STATUS(pyroi_roi_align_forward_f32(x, x_shape, x_strides, box, 1, 4, &batch, y,
                                                 interleaved, &p), PYROI_E_INVALID_STRIDES);
        CHECK_STATUS(pyroi_roi_align_backward_f32(y, y_strides, box, 1, 4, &batch, gx, x_shape,
                                                  strides, &p), PYROI_E_INVALID_STRIDES);
        /* negative output strides are a valid reversed view */
        CHECK_STATUS(pyroi_roi_align_forward_f32(x, x_shape, x_strides, box, 1, 4, &batch, y + 3,
                                                 negative, &p), PYROI_OK);
    }
    CHECK_STATUS(pyroi_roi_align_forward_f32(x, x_shape, x_strides, box, 2, INT64_MIN, &batch, y,
                                             y_strides, &p), PYROI_E_INVALID_STRIDES);
}

static void test_rois(void)
{
    const float inside[4] = {0, 0, 2, 2};
    const float nan_box[4] = {0, NAN, 2, 2};
    const float inf_box[4] = {0, 0, INFINITY, 2};
    const float overflowing[4] = {-FLT_MAX, 0, FLT_MAX, 2}; /* finite, but the size is not */
    const float huge[4] = {0, 0, 1e30f, 2}; /* adaptive grid of 1e30 samples per bin */
    pyroi_roi_align_params p;
    int i;

    default_params(&p);
    CHECK_STATUS(forward_box(inside, -1, &p), PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(forward_box(inside, 1, &p), PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(backward_box(inside, 1, &p), PYROI_E_INVALID_BATCH_INDEX);
    CHECK_STATUS(forward_box(nan_box, 0, &p), PYROI_E_INVALID_BOX);
    CHECK_STATUS(backward_box(inf_box, 0, &p), PYROI_E_INVALID_BOX);
    CHECK_STATUS(forward_box(overflowing, 0, &p), PYROI_E_INVALID_BOX);
    CHECK_STATUS(forward_box(huge, 0, &p), PYROI_OK); /* a fixed ratio samples it fine */
    p.sampling_ratio = 0;
    CHECK_STATUS(forward_box(huge, 0, &p), PYROI_E_INVALID_BOX);

    /* a failing call leaves the output untouched */
    for (i = 0; i < 16; ++i) {
        y[i] = 42.0f;
    }
    default_params(&p);
    CHECK_STATUS(forward_box(nan_box, 0, &p), PYROI_E_INVALID_BOX);
    for (i = 0; i < 16; ++i) {
        CHECK(y[i] == 42.0f);
    }
}

static void test_find_invalid_roi(void)
{
    const float boxes[3 * 4] = {0, 0, 2, 2, 0, 0, 3, 3, 0, NAN, 1, 1};
    const int64_t good_batch[3] = {0, 0, 0};
    const int64_t bad_batch[3] = {0, 1, 0};
    pyroi_roi_align_params p;

    default_params(&p);
    CHECK_FIRST_OFFENDER(pyroi_roi_align_find_invalid_roi, boxes, 4, good_batch, bad_batch, H, W,
                         &p);
}

static void test_fpn_levels(void)
{
    /* docs/semantics.md §8.1 boundaries (levels 2..5), zero and negative area */
    const float boxes[8 * 4] = {0, 0, 111.9999f, 111.9999f, 0, 0, 112, 112, 0, 0, 224, 224,
                                0, 0, 447.9f, 447.9f, 0, 0, 448, 448, 3, 3, 3, 9,
                                5, 5, 3, 9, 0, 0, 5000, 5000};
    const int64_t expected[8] = {0, 1, 2, 2, 3, 0, -1, 3};
    const float nan_box[4] = {0, 0, NAN, 1};
    int64_t levels[8];
    pyroi_fpn_level_params p;
    int i;

    pyroi_fpn_level_params_init(&p);
    CHECK(p.min_level == 2 && p.max_level == 5 && p.canonical_scale == 224.0);
    CHECK_STATUS(pyroi_fpn_levels_f32(boxes, 8, 4, &p, levels), PYROI_OK);
    for (i = 0; i < 8; ++i) {
        CHECK(levels[i] == expected[i]);
    }
    CHECK_STATUS(pyroi_fpn_levels_f32(boxes, 8, 4, NULL, levels), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_fpn_levels_f32(boxes, 8, 4, &p, NULL), PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_fpn_levels_f32(boxes, -1, 4, &p, levels), PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_fpn_levels_f32(boxes, 8, INT64_MIN, &p, levels), PYROI_E_INVALID_STRIDES);
    CHECK_STATUS(pyroi_fpn_levels_f32(nan_box, 1, 4, &p, levels), PYROI_E_INVALID_BOX);
    p.canonical_scale = 0;
    CHECK_STATUS(pyroi_fpn_levels_f32(boxes, 8, 4, &p, levels), PYROI_E_INVALID_SCALE);
    pyroi_fpn_level_params_init(&p);
    p.min_level = 6;
    CHECK_STATUS(pyroi_fpn_levels_f64(NULL, 0, 4, &p, NULL), PYROI_E_INVALID_OUTPUT_SIZE);
}

static void test_roi_rows(void)
{
    /* rows [batch_index, x1, y1, x2, y2], 6 floats apart (one element of padding) */
    float rows[3 * 6] = {0, 1, 2, 3, 4, -1, 1, 5, 6, 7, 8, -1, -0.0f, 9, 10, 11, 12, -1};
    const double rows64[2 * 5] = {1, 0, 0, 1, 1, 0, 2, 2, 3, 3};
    int64_t indices[3] = {7, 7, 7}, failed = 99;

    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, 3, 6, 4, 2, indices, &failed), PYROI_OK);
    CHECK(indices[0] == 0 && indices[1] == 1 && indices[2] == 0 && failed == -1);
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f64(rows64, 2, 5, 4, 2, indices, &failed),
                 PYROI_OK);
    CHECK(indices[0] == 1 && indices[1] == 0);

    /* the order of the reports: a non-integer index anywhere, then an index out of range,
     * then a coordinate that is not finite; nothing written on failure */
    indices[0] = indices[1] = indices[2] = 7;
    rows[1 * 6 + 3] = NAN;  /* RoI 1: a coordinate */
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, 3, 6, 4, 2, indices, &failed),
                 PYROI_E_INVALID_BOX);
    CHECK(failed == 1);
    rows[2 * 6] = 2;        /* RoI 2: out of range */
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, 3, 6, 4, 2, indices, &failed),
                 PYROI_E_INVALID_BATCH_INDEX);
    CHECK(failed == 2);
    rows[2 * 6] = INFINITY; /* +-inf: out of range, not a non-integer */
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, 3, 6, 4, 2, indices, &failed),
                 PYROI_E_INVALID_BATCH_INDEX);
    CHECK(failed == 2);
    rows[2 * 6] = 3e38f;    /* beyond int64: rejected, not converted */
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, 3, 6, 4, 2, indices, &failed),
                 PYROI_E_INVALID_BATCH_INDEX);
    CHECK(failed == 2);
    rows[2 * 6] = 1.5f;     /* RoI 2: not an integer, reported before RoI 1's NaN */
    rows[1 * 6] = -3;       /* and before RoI 1's range */
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, 3, 6, 4, 2, indices, &failed),
                 PYROI_E_INVALID_BATCH_INDEX);
    CHECK(failed == 2);
    rows[2 * 6] = NAN;
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, 3, 6, 4, 2, indices, &failed),
                 PYROI_E_INVALID_BATCH_INDEX);
    CHECK(failed == 2);
    CHECK(indices[0] == 7 && indices[1] == 7 && indices[2] == 7);

    /* arguments */
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, 3, 6, 4, 2, indices, NULL),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(NULL, 3, 6, 4, 2, indices, &failed),
                 PYROI_E_NULL_POINTER);
    CHECK(failed == -1);
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, 3, 6, 4, 2, NULL, &failed),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, -1, 6, 4, 2, indices, &failed),
                 PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, 3, 6, 0, 2, indices, &failed),
                 PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, 3, 6, 4, -1, indices, &failed),
                 PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f32(rows, 3, INT64_MIN, 4, 2, indices, &failed),
                 PYROI_E_INVALID_STRIDES);
    CHECK_STATUS(pyroi_roi_rows_batch_indices_f64(NULL, 0, 5, 4, 0, NULL, &failed), PYROI_OK);
}

static void test_no_memory(void)
{
    /* 2^31 - 1 samples per bin on each axis, all inside the map, would need about 100 GB of
     * tap tables (and 2^62 samples per bin): beyond PYROI_MAX_SAMPLING_RATIO, rejected before
     * anything is allocated. (tests/c/test_hostile.c reaches PYROI_E_NO_MEMORY otherwise.) */
    const float box[4] = {0, 0, 3, 3};
    pyroi_roi_align_params p;
    default_params(&p);
    p.pooled_height = p.pooled_width = 1;
    p.sampling_ratio = PYROI_MAX_SAMPLING_GRID;
    CHECK_STATUS(forward_box(box, 0, &p), PYROI_E_INVALID_SAMPLING_RATIO);
}

int main(void)
{
    check_ramp_f32(x, H * W);
    test_status_strings();
    test_params();
    test_tensors();
    test_rois();
    test_find_invalid_roi();
    test_fpn_levels();
    test_roi_rows();
    test_no_memory();
    return check_report("test_validation");
}
