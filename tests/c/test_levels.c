/* test_levels.c - multi-scale RoIAlign (pyroi_roi_align_levels_*): each RoI pooled from its
 * level as pyroi_roi_align_* pools it from that map alone, in place in the RoIs' order;
 * each level's gradient as pyroi_roi_align_backward_* gives it for that level's RoIs; and a
 * named status, with nothing written, for every bad argument. */
#include "check.h"

#include <pyroi.h>

#include <stdlib.h>
#include <string.h>

enum { N = 2, C = 3, LEVELS = 3, K = 24, PH = 3, PW = 2 };

static const int64_t HEIGHTS[LEVELS] = {32, 16, 8};
static const int64_t WIDTHS[LEVELS] = {28, 14, 7};
static const double SCALES[LEVELS] = {0.25, 0.125, 0.0625};

typedef struct pyramid {
    float *maps[LEVELS];
    int64_t shapes[4 * LEVELS];
    int64_t strides[4 * LEVELS];
    float boxes[K * 5]; /* rows of (image, x1, y1, x2, y2): box_row_stride 5 */
    int64_t batch_indices[K];
    pyroi_fpn_level_params level_params;
    pyroi_roi_align_params params;
} pyramid;

static void pyramid_init(pyramid *p, unsigned long long seed)
{
    int64_t l, i, k;
    for (l = 0; l < LEVELS; ++l) {
        const int64_t count = N * C * HEIGHTS[l] * WIDTHS[l];
        p->maps[l] = (float *)malloc((size_t)count * sizeof(float));
        for (i = 0; i < count; ++i) {
            p->maps[l][i] = (float)(check_random(&seed) * 2.0 - 1.0);
        }
        p->shapes[4 * l + 0] = N;
        p->shapes[4 * l + 1] = C;
        p->shapes[4 * l + 2] = HEIGHTS[l];
        p->shapes[4 * l + 3] = WIDTHS[l];
        p->strides[4 * l + 0] = C * HEIGHTS[l] * WIDTHS[l];
        p->strides[4 * l + 1] = HEIGHTS[l] * WIDTHS[l];
        p->strides[4 * l + 2] = WIDTHS[l];
        p->strides[4 * l + 3] = 1;
    }
    for (k = 0; k < K; ++k) { /* sides from 2 to 120 px: every level gets RoIs */
        const double side = 2.0 + 118.0 * check_random(&seed) * check_random(&seed);
        const double x = check_random(&seed) * 100.0, y = check_random(&seed) * 110.0;
        float *row = p->boxes + 5 * k;
        p->batch_indices[k] = k % N;
        row[0] = (float)(k % N);
        row[1] = (float)x;
        row[2] = (float)y;
        row[3] = (float)(x + side);
        row[4] = (float)(y + side * (0.5 + check_random(&seed)));
    }
    p->boxes[5 * 7 + 3] = p->boxes[5 * 7 + 1] - 3.0f; /* negative area: no level */
    pyroi_fpn_level_params_init(&p->level_params);
    p->level_params.min_level = 2;
    p->level_params.max_level = 4;
    p->level_params.canonical_scale = 56.0; /* spreads the boxes above over the 3 levels */
    pyroi_roi_align_params_init(&p->params);
    p->params.pooled_height = PH;
    p->params.pooled_width = PW;
    p->params.sampling_ratio = 2;
}

static void pyramid_free(pyramid *p)
{
    int l;
    for (l = 0; l < LEVELS; ++l) {
        free(p->maps[l]);
    }
}

static pyroi_status forward(const pyramid *p, float *output)
{
    static const int64_t output_strides[4] = {C * PH * PW, PH * PW, PW, 1};
    return pyroi_roi_align_levels_forward_f32(
        LEVELS, (const float *const *)p->maps, p->shapes, p->strides, SCALES, p->boxes + 1, K, 5,
        p->batch_indices, output, output_strides, &p->level_params, &p->params);
}

/* Level of each box and the count per level (at least one RoI on every level). */
static void levels_of(const pyramid *p, int64_t levels[K])
{
    int64_t counts[LEVELS] = {0}, k;
    CHECK_STATUS(pyroi_fpn_levels_f32(p->boxes + 1, K, 5, &p->level_params, levels), PYROI_OK);
    for (k = 0; k < K; ++k) {
        if (levels[k] >= 0) {
            ++counts[levels[k]];
        }
    }
    CHECK(levels[7] == -1);
    CHECK(counts[0] > 0 && counts[1] > 0 && counts[2] > 0);
}

static void test_forward_is_per_level_roi_align(void)
{
    static const int64_t one_strides[4] = {C * PH * PW, PH * PW, PW, 1};
    pyramid p;
    int64_t levels[K], k, l, i;
    float output[K * C * PH * PW], one[C * PH * PW];
    pyramid_init(&p, 1);
    levels_of(&p, levels);
    for (i = 0; i < K * C * PH * PW; ++i) {
        output[i] = 12345.0f; /* the row of no level must be written too */
    }
    CHECK_STATUS(forward(&p, output), PYROI_OK);
    for (k = 0; k < K; ++k) {
        if (levels[k] < 0) {
            for (i = 0; i < C * PH * PW; ++i) {
                one[i] = 0.0f;
            }
        } else {
            pyroi_roi_align_params params = p.params;
            l = levels[k];
            params.spatial_scale_h = params.spatial_scale_w = SCALES[l];
            CHECK_STATUS(pyroi_roi_align_forward_f32(p.maps[l], p.shapes + 4 * l,
                                                     p.strides + 4 * l, p.boxes + 5 * k + 1, 1,
                                                     5, p.batch_indices + k, one, one_strides,
                                                     &params),
                         PYROI_OK);
        }
        CHECK(memcmp(one, output + k * C * PH * PW, sizeof(one)) == 0);
    }
    pyramid_free(&p);
}

static void test_backward_is_per_level_roi_align_backward(void)
{
    static const int64_t grad_strides[4] = {C * PH * PW, PH * PW, PW, 1};
    pyramid p;
    int64_t levels[K], k, l, i;
    float grad_output[K * C * PH * PW];
    float *grads[LEVELS], *expected;
    unsigned long long seed = 7;
    pyramid_init(&p, 2);
    levels_of(&p, levels);
    for (i = 0; i < K * C * PH * PW; ++i) {
        grad_output[i] = (float)check_random(&seed);
    }
    for (l = 0; l < LEVELS; ++l) {
        grads[l] = (float *)malloc((size_t)(N * C * HEIGHTS[l] * WIDTHS[l]) * sizeof(float));
        for (i = 0; i < N * C * HEIGHTS[l] * WIDTHS[l]; ++i) {
            grads[l][i] = 99.0f; /* overwritten, not added to */
        }
    }
    CHECK_STATUS(pyroi_roi_align_levels_backward_f32(
                     grad_output, grad_strides, p.boxes + 1, K, 5, p.batch_indices, LEVELS,
                     grads, p.shapes, p.strides, SCALES, &p.level_params, &p.params),
                 PYROI_OK);
    for (l = 0; l < LEVELS; ++l) {
        /* that level's RoIs alone, in their order: their boxes, indices and gradient rows */
        const int64_t count = N * C * HEIGHTS[l] * WIDTHS[l];
        float boxes[K * 4], rows[K * C * PH * PW];
        int64_t images[K], m = 0;
        pyroi_roi_align_params params = p.params;
        params.spatial_scale_h = params.spatial_scale_w = SCALES[l];
        for (k = 0; k < K; ++k) {
            if (levels[k] == l) {
                memcpy(boxes + 4 * m, p.boxes + 5 * k + 1, 4 * sizeof(float));
                memcpy(rows + m * C * PH * PW, grad_output + k * C * PH * PW,
                       C * PH * PW * sizeof(float));
                images[m++] = p.batch_indices[k];
            }
        }
        expected = (float *)malloc((size_t)count * sizeof(float));
        CHECK_STATUS(pyroi_roi_align_backward_f32(rows, grad_strides, boxes, m, 4, images,
                                                  expected, p.shapes + 4 * l, p.strides + 4 * l,
                                                  &params),
                     PYROI_OK);
        CHECK(memcmp(expected, grads[l], (size_t)count * sizeof(float)) == 0);
        free(expected);
        free(grads[l]);
    }
    pyramid_free(&p);
}

/* Every bad argument: its status, and the output untouched. */
static void test_hostile_arguments(void)
{
    static const int64_t output_strides[4] = {C * PH * PW, PH * PW, PW, 1};
    static const int64_t overlapping[4] = {0, PH * PW, PW, 1};
    pyramid p;
    float output[K * C * PH * PW];
    double scales[LEVELS];
    int64_t i;
    pyramid_init(&p, 3);
    for (i = 0; i < K * C * PH * PW; ++i) {
        output[i] = 5.0f;
    }
#define LEVELS_CALL(levels, maps, shapes, strides, scales, boxes, num_rois, indices, out,       \
                    out_strides, level_params, params)                                          \
    pyroi_roi_align_levels_forward_f32(levels, (const float *const *)(maps), shapes, strides,   \
                                       scales, boxes, num_rois, 5, indices, out, out_strides,   \
                                       level_params, params)
    CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                             p.batch_indices, output, output_strides, &p.level_params, NULL),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                             p.batch_indices, output, output_strides, NULL, &p.params),
                 PYROI_E_NULL_POINTER);
    /* as many maps as levels from min_level to max_level, at most PYROI_MAX_FPN_LEVELS */
    CHECK_STATUS(LEVELS_CALL(LEVELS - 1, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                             p.batch_indices, output, output_strides, &p.level_params,
                             &p.params),
                 PYROI_E_INVALID_SHAPE);
    CHECK_STATUS(LEVELS_CALL(0, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                             p.batch_indices, output, output_strides, &p.level_params,
                             &p.params),
                 PYROI_E_INVALID_SHAPE);
    {
        pyroi_fpn_level_params wide = p.level_params;
        wide.min_level = INT64_MIN;
        wide.max_level = INT64_MAX; /* max - min + 1 wraps to 0 in int64 arithmetic */
        CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                                 p.batch_indices, output, output_strides, &wide, &p.params),
                     PYROI_E_INVALID_SHAPE);
        wide.min_level = 0;
        wide.max_level = PYROI_MAX_FPN_LEVELS;
        CHECK_STATUS(LEVELS_CALL(PYROI_MAX_FPN_LEVELS + 1, p.maps, p.shapes, p.strides, SCALES,
                                 p.boxes + 1, K, p.batch_indices, output, output_strides, &wide,
                                 &p.params),
                     PYROI_E_INVALID_SHAPE);
        wide.min_level = 3;
        wide.max_level = 2;
        CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                                 p.batch_indices, output, output_strides, &wide, &p.params),
                     PYROI_E_INVALID_OUTPUT_SIZE);
        wide = p.level_params;
        wide.canonical_scale = 0.0;
        CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                                 p.batch_indices, output, output_strides, &wide, &p.params),
                     PYROI_E_INVALID_SCALE);
    }
    CHECK_STATUS(LEVELS_CALL(LEVELS, NULL, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                             p.batch_indices, output, output_strides, &p.level_params,
                             &p.params),
                 PYROI_E_NULL_POINTER);
    CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, NULL, p.boxes + 1, K,
                             p.batch_indices, output, output_strides, &p.level_params,
                             &p.params),
                 PYROI_E_NULL_POINTER);
    memcpy(scales, SCALES, sizeof(scales));
    scales[2] = -1.0; /* a level's scale */
    CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, scales, p.boxes + 1, K,
                             p.batch_indices, output, output_strides, &p.level_params,
                             &p.params),
                 PYROI_E_INVALID_SCALE);
    p.shapes[4 * 1 + 1] = C - 1; /* a level with other channels */
    CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                             p.batch_indices, output, output_strides, &p.level_params,
                             &p.params),
                 PYROI_E_INVALID_SHAPE);
    p.shapes[4 * 1 + 1] = C;
    p.strides[4 * 2 + 0] = INT64_MIN;
    CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                             p.batch_indices, output, output_strides, &p.level_params,
                             &p.params),
                 PYROI_E_INVALID_STRIDES);
    p.strides[4 * 2 + 0] = C * HEIGHTS[2] * WIDTHS[2];
    CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                             p.batch_indices, output, overlapping, &p.level_params, &p.params),
                 PYROI_E_INVALID_STRIDES);
    p.batch_indices[K - 1] = N; /* out of range */
    CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                             p.batch_indices, output, output_strides, &p.level_params,
                             &p.params),
                 PYROI_E_INVALID_BATCH_INDEX);
    p.batch_indices[K - 1] = (K - 1) % N;
    p.boxes[5 * (K - 1) + 2] = (float)INFINITY;
    CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                             p.batch_indices, output, output_strides, &p.level_params,
                             &p.params),
                 PYROI_E_INVALID_BOX);
    p.boxes[5 * (K - 1) + 2] = 1.0f;
    p.boxes[5 * (K - 1) + 3] = 3.0e38f; /* finite, but its adaptive grid too large */
    p.boxes[5 * (K - 1) + 4] = 3.0e38f;
    p.params.sampling_ratio = 0;
    CHECK_STATUS(LEVELS_CALL(LEVELS, p.maps, p.shapes, p.strides, SCALES, p.boxes + 1, K,
                             p.batch_indices, output, output_strides, &p.level_params,
                             &p.params),
                 PYROI_E_INVALID_BOX);
    for (i = 0; i < K * C * PH * PW; ++i) {
        CHECK(output[i] == 5.0f);
    }
#undef LEVELS_CALL
    pyramid_free(&p);
}

/* Without RoIs a backward zeroes every level; a forward writes nothing. */
static void test_no_rois(void)
{
    static const int64_t grad_strides[4] = {C * PH * PW, PH * PW, PW, 1};
    pyramid p;
    float *grads[LEVELS];
    int64_t l, i;
    int zero = 1;
    pyramid_init(&p, 4);
    for (l = 0; l < LEVELS; ++l) {
        grads[l] = (float *)malloc((size_t)(N * C * HEIGHTS[l] * WIDTHS[l]) * sizeof(float));
        for (i = 0; i < N * C * HEIGHTS[l] * WIDTHS[l]; ++i) {
            grads[l][i] = 1.0f;
        }
    }
    CHECK_STATUS(forward(&p, NULL), PYROI_E_NULL_POINTER); /* RoIs but no output */
    CHECK_STATUS(pyroi_roi_align_levels_forward_f32(
                     LEVELS, (const float *const *)p.maps, p.shapes, p.strides, SCALES, NULL, 0,
                     5, NULL, NULL, grad_strides, &p.level_params, &p.params),
                 PYROI_OK);
    CHECK_STATUS(pyroi_roi_align_levels_backward_f32(NULL, grad_strides, NULL, 0, 5, NULL,
                                                     LEVELS, grads, p.shapes, p.strides, SCALES,
                                                     &p.level_params, &p.params),
                 PYROI_OK);
    for (l = 0; l < LEVELS; ++l) {
        for (i = 0; i < N * C * HEIGHTS[l] * WIDTHS[l]; ++i) {
            zero &= grads[l][i] == 0.0f;
        }
        free(grads[l]);
    }
    CHECK(zero);
    pyramid_free(&p);
}

int main(void)
{
    test_forward_is_per_level_roi_align();
    test_backward_is_per_level_roi_align_backward();
    test_hostile_arguments();
    test_no_rois();
    return check_report("levels");
}
