/* test_hostile.c - hostile input through the C API of every operator: each case returns its
 * documented status (and writes nothing) or its documented result. Also the regression tests
 * of the defects the fuzzer (tests/fuzz/fuzz_c_api.c) found. */
#include "pyroi.h"

#include "check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N 2
#define C 4 /* position-sensitive ops with 2 x 1 bins: 2 output channels */
#define H 6
#define W 7
#define PH 2
#define PW 1
#define MAX_ROIS 3

static float x[N * C * H * W];
static const int64_t x_shape[4] = {N, C, H, W};
static const int64_t x_strides[4] = {C * H * W, H * W, W, 1};
static float out[MAX_ROIS * C * PH * PW];
static float grad_in[N * C * H * W];
static const float sentinel = 42.0f;

/* ---- every operator behind one signature ----------------------------------------------- */

typedef struct hostile_call {
    const float *input; /* forward: the map; backward: grad_output */
    const int64_t *input_shape;
    const int64_t *input_strides;
    const float *boxes;
    int64_t num_rois;
    int64_t row_stride;
    const int64_t *batch;
    float *result; /* forward: output; backward: grad_input */
    const int64_t *result_shape;
    const int64_t *result_strides;
    int64_t pooled_height;
    int64_t pooled_width;
    int64_t sampling_ratio;
    int num_threads;
} hostile_call;

enum { OP_ALIGN, OP_ALIGN_MAX, OP_POOL, OP_PS_ALIGN, OP_PS_POOL, OP_ROTATED, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"roi_align", "roi_align_max", "roi_pool",
                                               "ps_roi_align", "ps_roi_pool", "rotated"};

static int coords_of(int op)
{
    return op == OP_ROTATED ? 5 : 4;
}

static int has_sampling(int op)
{
    return op == OP_ALIGN || op == OP_ALIGN_MAX || op == OP_PS_ALIGN || op == OP_ROTATED;
}

static int64_t out_channels(int op, int64_t channels, int64_t ph, int64_t pw)
{
    return (op == OP_PS_ALIGN || op == OP_PS_POOL) ? channels / (ph * pw) : channels;
}

/* The params of every op, filled from a call's numbers. */
typedef union op_params {
    pyroi_roi_align_params align;
    pyroi_roi_pool_params pool;
    pyroi_ps_roi_align_params ps_align;
    pyroi_ps_roi_pool_params ps_pool;
    pyroi_roi_align_rotated_params rotated;
} op_params;

/* init, then the fields every op has, then the op's own (more) */
#define SET_PARAMS(family, p, a, more)                                                    \
    do {                                                                                  \
        pyroi_##family##_params_init(p);                                                  \
        (p)->pooled_height = (a)->pooled_height;                                          \
        (p)->pooled_width = (a)->pooled_width;                                            \
        (p)->num_threads = (a)->num_threads;                                              \
        more;                                                                             \
    } while (0)

static void fill_params(int op, const hostile_call *a, op_params *p)
{
    if (op == OP_ALIGN || op == OP_ALIGN_MAX) {
        SET_PARAMS(roi_align, &p->align, a, p->align.sampling_ratio = a->sampling_ratio);
    } else if (op == OP_POOL) {
        SET_PARAMS(roi_pool, &p->pool, a, (void)0);
    } else if (op == OP_PS_ALIGN) {
        SET_PARAMS(ps_roi_align, &p->ps_align, a, p->ps_align.sampling_ratio = a->sampling_ratio);
    } else if (op == OP_PS_POOL) {
        SET_PARAMS(ps_roi_pool, &p->ps_pool, a, (void)0);
    } else {
        SET_PARAMS(roi_align_rotated, &p->rotated, a,
                   p->rotated.sampling_ratio = a->sampling_ratio);
    }
}

/* pyroi.h's argument lists, from a call */
#define ROIS(a) (a)->boxes, (a)->num_rois, (a)->row_stride, (a)->batch
#define FORWARD_ARGS(a) \
    (a)->input, (a)->input_shape, (a)->input_strides, ROIS(a), (a)->result, (a)->result_strides
#define BACKWARD_ARGS(a) \
    (a)->input, (a)->input_strides, ROIS(a), (a)->result, (a)->result_shape, (a)->result_strides

static pyroi_status forward(int op, const hostile_call *a)
{
    op_params p;
    fill_params(op, a, &p);
    switch (op) {
    case OP_ALIGN:
        return pyroi_roi_align_forward_f32(FORWARD_ARGS(a), &p.align);
    case OP_ALIGN_MAX:
        return pyroi_roi_align_max_forward_f32(FORWARD_ARGS(a), NULL, NULL, &p.align);
    case OP_POOL:
        return pyroi_roi_pool_forward_f32(FORWARD_ARGS(a), NULL, NULL, &p.pool);
    case OP_PS_ALIGN:
        return pyroi_ps_roi_align_forward_f32(FORWARD_ARGS(a), &p.ps_align);
    case OP_PS_POOL:
        return pyroi_ps_roi_pool_forward_f32(FORWARD_ARGS(a), &p.ps_pool);
    default:
        return pyroi_roi_align_rotated_forward_f32(FORWARD_ARGS(a), &p.rotated);
    }
}

/* Backward; max-pooling ops get an all -1 argmax (argmax_strides: grad_output's strides). */
static pyroi_status backward(int op, const hostile_call *a)
{
    static int64_t argmax[MAX_ROIS * C * PH * PW * 4];
    op_params p;
    size_t i;
    for (i = 0; i < sizeof(argmax) / sizeof(argmax[0]); ++i) {
        argmax[i] = -1;
    }
    fill_params(op, a, &p);
    switch (op) {
    case OP_ALIGN:
        return pyroi_roi_align_backward_f32(BACKWARD_ARGS(a), &p.align);
    case OP_ALIGN_MAX:
        return pyroi_roi_align_max_backward_f32(a->input, a->input_strides, argmax,
                                                a->input_strides, ROIS(a), a->result,
                                                a->result_shape, a->result_strides, &p.align);
    case OP_POOL:
        return pyroi_roi_pool_backward_f32(a->input, a->input_strides, argmax, a->input_strides,
                                           a->batch, a->num_rois, a->result, a->result_shape,
                                           a->result_strides, &p.pool);
    case OP_PS_ALIGN:
        return pyroi_ps_roi_align_backward_f32(BACKWARD_ARGS(a), &p.ps_align);
    case OP_PS_POOL:
        return pyroi_ps_roi_pool_backward_f32(BACKWARD_ARGS(a), &p.ps_pool);
    default:
        return pyroi_roi_align_rotated_backward_f32(BACKWARD_ARGS(a), &p.rotated);
    }
}

/* The first RoI of the forward call a that the op's find-invalid function rejects (roi_pool's
 * covers its backward). */
static pyroi_status find_invalid(int op, const hostile_call *a, int64_t *failed)
{
    op_params p;
    fill_params(op, a, &p);
    switch (op) {
    case OP_ALIGN:
    case OP_ALIGN_MAX:
        return pyroi_roi_align_find_invalid_roi_f32(ROIS(a), N, H, W, &p.align, failed);
    case OP_POOL:
        return pyroi_roi_pool_find_invalid_roi_f32(ROIS(a), N, &p.pool, failed);
    case OP_PS_ALIGN:
        return pyroi_ps_roi_align_find_invalid_roi_f32(ROIS(a), N, H, W, &p.ps_align, failed);
    case OP_PS_POOL:
        return pyroi_ps_roi_pool_find_invalid_roi_f32(ROIS(a), N, &p.ps_pool, failed);
    default:
        return pyroi_roi_align_rotated_find_invalid_roi_f32(ROIS(a), N, H, W, &p.rotated, failed);
    }
}

/* Valid boxes inside the map: MAX_ROIS rows of coords_of(op) values. */
static void valid_boxes(int op, float *boxes)
{
    static const float aligned_rows[MAX_ROIS][4] = {{1, 1, 5, 4}, {0.5f, 2, 6, 5.5f},
                                                    {2, 0, 3, 3}};
    int k;
    for (k = 0; k < MAX_ROIS; ++k) {
        const float *r = aligned_rows[k];
        if (coords_of(op) == 5) {
            float *b = boxes + 5 * k;
            b[0] = (r[0] + r[2]) / 2;
            b[1] = (r[1] + r[3]) / 2;
            b[2] = r[2] - r[0];
            b[3] = r[3] - r[1];
            b[4] = 30.0f * (float)k;
        } else {
            memcpy(boxes + 4 * k, r, sizeof(r[0]) * 4);
        }
    }
}

/* A forward call with MAX_ROIS valid RoIs into out (all elements set to the sentinel). */
static void forward_call(int op, hostile_call *a, float *boxes, int64_t *batch,
                         int64_t *out_strides)
{
    const int64_t c_out = out_channels(op, C, PH, PW);
    size_t i;
    valid_boxes(op, boxes);
    batch[0] = 0;
    batch[1] = 1;
    batch[2] = 1;
    out_strides[0] = c_out * PH * PW;
    out_strides[1] = PH * PW;
    out_strides[2] = PW;
    out_strides[3] = 1;
    for (i = 0; i < sizeof(out) / sizeof(out[0]); ++i) {
        out[i] = sentinel;
    }
    a->input = x;
    a->input_shape = x_shape;
    a->input_strides = x_strides;
    a->boxes = boxes;
    a->num_rois = MAX_ROIS;
    a->row_stride = coords_of(op);
    a->batch = batch;
    a->result = out;
    a->result_shape = NULL;
    a->result_strides = out_strides;
    a->pooled_height = PH;
    a->pooled_width = PW;
    a->sampling_ratio = 2;
    a->num_threads = 1;
}

/* The matching backward call: grad_output is out (as an input), grad_input is grad_in. */
static void backward_call(int op, hostile_call *a, float *boxes, int64_t *batch,
                          int64_t *out_strides)
{
    size_t i;
    forward_call(op, a, boxes, batch, out_strides);
    for (i = 0; i < sizeof(out) / sizeof(out[0]); ++i) {
        out[i] = 1.0f;
    }
    for (i = 0; i < sizeof(grad_in) / sizeof(grad_in[0]); ++i) {
        grad_in[i] = sentinel;
    }
    a->input = out;
    a->input_shape = NULL;
    a->input_strides = out_strides;
    a->result = grad_in;
    a->result_shape = x_shape;
    a->result_strides = x_strides;
}

static int untouched(const float *data, size_t count)
{
    size_t i;
    for (i = 0; i < count; ++i) {
        if (data[i] != sentinel) {
            return 0;
        }
    }
    return 1;
}

static int all_finite(const float *data, size_t count)
{
    size_t i;
    for (i = 0; i < count; ++i) {
        if (!isfinite(data[i])) {
            return 0;
        }
    }
    return 1;
}

#define OUT_COUNT (sizeof(out) / sizeof(out[0]))
#define GRAD_COUNT (sizeof(grad_in) / sizeof(grad_in[0]))

/* ---- the cases ------------------------------------------------------------------------- */

static void test_valid_calls(void)
{
    int op;
    for (op = 0; op < OP_COUNT; ++op) {
        hostile_call a;
        float boxes[5 * MAX_ROIS];
        int64_t batch[MAX_ROIS], out_strides[4];
        forward_call(op, &a, boxes, batch, out_strides);
        CHECK_STATUS(forward(op, &a), PYROI_OK);
        CHECK(all_finite(out, (size_t)(MAX_ROIS * out_channels(op, C, PH, PW) * PH * PW)));
        backward_call(op, &a, boxes, batch, out_strides);
        CHECK_STATUS(backward(op, &a), PYROI_OK);
        CHECK(all_finite(grad_in, GRAD_COUNT));
    }
}

static void test_sampling_ratio_cap(void)
{
    static const int64_t too_large[] = {PYROI_MAX_SAMPLING_RATIO + 1, INT64_C(2147483647),
                                        INT64_MAX};
    int op;
    size_t i;
    CHECK(PYROI_MAX_SAMPLING_RATIO == 1024);
    for (op = 0; op < OP_COUNT; ++op) {
        hostile_call a;
        float boxes[5 * MAX_ROIS];
        int64_t batch[MAX_ROIS], out_strides[4];
        if (!has_sampling(op)) {
            continue;
        }
        for (i = 0; i < sizeof(too_large) / sizeof(too_large[0]); ++i) {
            forward_call(op, &a, boxes, batch, out_strides);
            a.sampling_ratio = too_large[i];
            CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_SAMPLING_RATIO);
            CHECK(untouched(out, OUT_COUNT));
            backward_call(op, &a, boxes, batch, out_strides);
            a.sampling_ratio = too_large[i];
            CHECK_STATUS(backward(op, &a), PYROI_E_INVALID_SAMPLING_RATIO);
            CHECK(untouched(grad_in, GRAD_COUNT));
        }
        /* the cap itself: 2^20 samples per bin, computed */
        forward_call(op, &a, boxes, batch, out_strides);
        a.num_rois = 1;
        a.sampling_ratio = PYROI_MAX_SAMPLING_RATIO;
        CHECK_STATUS(forward(op, &a), PYROI_OK);
        CHECK(all_finite(out, (size_t)(out_channels(op, C, PH, PW) * PH * PW)));
    }
}

static void test_nonfinite_coordinates(void)
{
    const float values[3] = {NAN, INFINITY, -INFINITY};
    int op, v, column;
    for (op = 0; op < OP_COUNT; ++op) {
        for (v = 0; v < 3; ++v) {
            for (column = 0; column < coords_of(op); ++column) {
                hostile_call a;
                float boxes[5 * MAX_ROIS];
                int64_t batch[MAX_ROIS], out_strides[4], failed = -1;
                forward_call(op, &a, boxes, batch, out_strides);
                boxes[coords_of(op) * 2 + column] = values[v];
                CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_BOX);
                CHECK(untouched(out, OUT_COUNT));
                CHECK_STATUS(find_invalid(op, &a, &failed),
                             PYROI_E_INVALID_BOX);
                CHECK(failed == 2);
                backward_call(op, &a, boxes, batch, out_strides);
                boxes[coords_of(op) * 2 + column] = values[v];
                if (op != OP_POOL) { /* RoIPool's backward takes no boxes */
                    CHECK_STATUS(backward(op, &a), PYROI_E_INVALID_BOX);
                    CHECK(untouched(grad_in, GRAD_COUNT));
                }
            }
        }
    }
}

/* Regression: a negative batch index made every find-invalid function return the status
 * with failed_roi = -1 (their pointer check also rejected negative indices). */
static void test_bad_batch_indices(void)
{
    static const int64_t bad[] = {-1, N, INT64_MIN, INT64_MAX, -2};
    int op;
    size_t i;
    for (op = 0; op < OP_COUNT; ++op) {
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
            hostile_call a;
            float boxes[5 * MAX_ROIS];
            int64_t batch[MAX_ROIS], out_strides[4], failed = -1;
            forward_call(op, &a, boxes, batch, out_strides);
            batch[1] = bad[i];
            CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_BATCH_INDEX);
            CHECK(untouched(out, OUT_COUNT));
            CHECK_STATUS(find_invalid(op, &a, &failed),
                         PYROI_E_INVALID_BATCH_INDEX);
            CHECK(failed == 1);
            backward_call(op, &a, boxes, batch, out_strides);
            batch[1] = bad[i];
            CHECK_STATUS(backward(op, &a), PYROI_E_INVALID_BATCH_INDEX);
            CHECK(untouched(grad_in, GRAD_COUNT));
        }
    }
}

/* 1e30 coordinates: adaptive grids beyond 2^31 - 1 samples are PYROI_E_INVALID_BOX; with a
 * fixed grid every sample is outside (zeros); pooling ops saturate (finite). Inverted,
 * zero-size and far-away boxes: finite. */
static void test_extreme_boxes(void)
{
    int op, ratio;
    for (op = 0; op < OP_COUNT; ++op) {
        for (ratio = 0; ratio <= 2; ratio += 2) {
            hostile_call a;
            float boxes[5 * MAX_ROIS];
            int64_t batch[MAX_ROIS], out_strides[4];
            pyroi_status status;
            forward_call(op, &a, boxes, batch, out_strides);
            a.sampling_ratio = ratio;
            if (coords_of(op) == 5) {
                boxes[5] = 3;
                boxes[6] = 3;
                boxes[7] = 2e30f;
                boxes[8] = 2e30f;
                boxes[9] = 45;
            } else {
                boxes[4] = -1e30f;
                boxes[5] = -1e30f;
                boxes[6] = 1e30f;
                boxes[7] = 1e30f;
            }
            status = forward(op, &a);
            if (has_sampling(op) && ratio == 0) {
                CHECK_STATUS(status, PYROI_E_INVALID_BOX);
            } else {
                CHECK_STATUS(status, PYROI_OK);
                CHECK(all_finite(out, (size_t)(MAX_ROIS * out_channels(op, C, PH, PW) * PH *
                                               PW)));
            }
            /* inverted, a point, far outside */
            forward_call(op, &a, boxes, batch, out_strides);
            a.sampling_ratio = ratio;
            if (coords_of(op) == 5) {
                boxes[2] = -3; /* negative width */
                boxes[5 + 2] = 0;
                boxes[5 + 3] = 0;
                boxes[10] = 1e4f;
            } else {
                boxes[0] = 5;
                boxes[2] = 1; /* x2 < x1 */
                boxes[4 + 2] = boxes[4];
                boxes[4 + 3] = boxes[4 + 1];
                boxes[8] = 1e4f;
                boxes[10] = 1e4f + 3;
            }
            CHECK_STATUS(forward(op, &a), PYROI_OK);
            CHECK(all_finite(out, (size_t)(MAX_ROIS * out_channels(op, C, PH, PW) * PH * PW)));
        }
    }
}

/* Regression: a backward with no RoIs and an output size near INT64_MAX overflowed
 * pooled_height + pooled_width (signed overflow). It zeroes grad_input. */
static void test_huge_output_size_without_rois(void)
{
    static const int64_t one_channel[4] = {N, 1, H, W}; /* (0, 1, INT64_MAX, 1) is valid */
    int op;
    for (op = 0; op < OP_COUNT; ++op) {
        hostile_call a;
        float boxes[5 * MAX_ROIS];
        int64_t batch[MAX_ROIS], out_strides[4];
        if (op == OP_PS_ALIGN || op == OP_PS_POOL) {
            continue; /* C must be a multiple of PH * PW */
        }
        backward_call(op, &a, boxes, batch, out_strides);
        a.num_rois = 0;
        a.result_shape = one_channel;
        a.pooled_height = INT64_MAX;
        a.pooled_width = 1;
        CHECK_STATUS(backward(op, &a), PYROI_OK);
        CHECK(grad_in[0] == 0.0f && grad_in[(N - 1) * C * H * W + H * W - 1] == 0.0f);
        forward_call(op, &a, boxes, batch, out_strides);
        a.num_rois = 0;
        a.input_shape = one_channel;
        a.pooled_height = INT64_MAX;
        a.pooled_width = 1;
        CHECK_STATUS(forward(op, &a), PYROI_OK);
        CHECK(untouched(out, OUT_COUNT));
    }
}

/* Scratch that cannot exist is PYROI_E_NO_MEMORY, checked before anything is written. */
static void test_no_memory(void)
{
    hostile_call a;
    float boxes[5 * MAX_ROIS];
    int64_t batch[MAX_ROIS], out_strides[4];
    /* 2^40 bins along y: the per-RoI ranges alone would need 26 TB (the output strides
     * describe memory that is never reached) */
    int64_t huge_strides[4] = {INT64_C(1) << 41, INT64_C(1) << 40, 1, 1};
    forward_call(OP_ALIGN, &a, boxes, batch, out_strides);
    a.num_rois = 1;
    a.input_shape = (const int64_t[4]){N, 1, H, W};
    a.pooled_height = INT64_C(1) << 40;
    a.result_strides = huge_strides;
    CHECK_STATUS(forward(OP_ALIGN, &a), PYROI_E_NO_MEMORY);
    CHECK(untouched(out, OUT_COUNT));
}

/* Regression: a zero-stride batch of 2^61 - 1 images made roi_align's per-image table size
 * wrap size_t, then wrote past the allocation (heap overflow); later a clean refusal; now the
 * RoIs are grouped by sorting, so the call costs what its two RoIs cost and gives what the
 * same RoIs give on a batch of one image (every image of the broadcast batch is that one). */
static void test_broadcast_batch(void)
{
    static const int64_t shape[4] = {INT64_C(2305843009213693951), 1, 1, 1};
    static const int64_t one_image[4] = {1, 1, 1, 1};
    static const int64_t strides[4] = {0, 0, 0, 0};
    const float pixel = 3.0f;
    const float boxes[8] = {0, 0, 1, 1, -0.25f, 0, 0.5f, 0.75f};
    const int64_t batch[2] = {INT64_C(2305843009213693950), 0};
    const int64_t first[2] = {0, 0};
    const int64_t out_strides[4] = {1, 1, 1, 1};
    float result[2] = {sentinel, sentinel}, expected[2];
    pyroi_roi_align_params p;
    pyroi_roi_pool_params q;
    int64_t argmax[2], expected_argmax[2];
    pyroi_roi_align_params_init(&p);
    CHECK_STATUS(pyroi_roi_align_forward_f32(&pixel, one_image, strides, boxes, 2, 4, first,
                                         expected, out_strides, &p), PYROI_OK);
    CHECK_STATUS(pyroi_roi_align_forward_f32(&pixel, shape, strides, boxes, 2, 4, batch, result,
                                         out_strides, &p), PYROI_OK);
    CHECK(result[0] == expected[0] && result[1] == expected[1]);
    pyroi_roi_pool_params_init(&q);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(&pixel, one_image, strides, boxes, 2, 4, first,
                                        expected, out_strides, expected_argmax, out_strides, &q), PYROI_OK);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(&pixel, shape, strides, boxes, 2, 4, batch, result,
                                        out_strides, argmax, out_strides, &q), PYROI_OK);
    CHECK(result[0] == expected[0] && result[1] == expected[1]);
    CHECK(argmax[0] == expected_argmax[0] && argmax[1] == expected_argmax[1]);
    CHECK_STATUS(pyroi_roi_align_max_forward_f32(&pixel, one_image, strides, boxes, 2, 4, first,
                                             expected, out_strides, expected_argmax,
                                             out_strides, &p), PYROI_OK);
    CHECK_STATUS(pyroi_roi_align_max_forward_f32(&pixel, shape, strides, boxes, 2, 4, batch, result,
                                             out_strides, argmax, out_strides, &p), PYROI_OK);
    CHECK(result[0] == expected[0] && result[1] == expected[1]);
}

/* Regression: NULL is allowed for a tensor without elements; kernels formed plane pointers
 * from it (a forward over a map with H or W = 0, a backward into an empty grad_input). */
static void test_null_empty_tensors(void)
{
    int op, axis;
    for (op = 0; op < OP_COUNT; ++op) {
        for (axis = 2; axis < 4; ++axis) {
            hostile_call a;
            float boxes[5 * MAX_ROIS];
            int64_t batch[MAX_ROIS], out_strides[4], empty_shape[4] = {N, C, H, W};
            size_t i, count;
            empty_shape[axis] = 0;
            forward_call(op, &a, boxes, batch, out_strides);
            a.input = NULL;
            a.input_shape = empty_shape;
            CHECK_STATUS(forward(op, &a), PYROI_OK);
            count = (size_t)(MAX_ROIS * out_channels(op, C, PH, PW) * PH * PW);
            for (i = 0; i < count; ++i) {
                CHECK(out[i] == 0.0f);
            }
            backward_call(op, &a, boxes, batch, out_strides);
            a.result = NULL;
            a.result_shape = empty_shape;
            CHECK_STATUS(backward(op, &a), PYROI_OK);
        }
    }
}

/* Regression: roi_pool stepped its pixel pointer by the stride of a one-column map, a stride
 * the API says is never applied (INT64_MIN: pointer overflow). */
static void test_stride_of_length_one_axes(void)
{
    static const float column[3] = {1, 5, 2};
    const int64_t shape[4] = {1, 1, 3, 1};
    const int64_t strides[4] = {INT64_MAX, INT64_MIN, 1, INT64_MIN};
    const float boxes[4] = {0, 0, 0, 2};
    const float centre_of_row_1[4] = {0, 1, 0, 2};
    const int64_t batch = 0;
    const int64_t out_strides[4] = {1, 1, 1, 1};
    float result = sentinel;
    int64_t argmax = -5;
    pyroi_roi_pool_params p;
    pyroi_roi_align_params q;
    pyroi_roi_pool_params_init(&p);
    CHECK_STATUS(pyroi_roi_pool_forward_f32(column, shape, strides, boxes, 1, 4, &batch, &result,
                                            out_strides, &argmax, out_strides, &p),
                 PYROI_OK);
    CHECK(result == 5.0f && argmax == 1);
    pyroi_roi_align_params_init(&q);
    q.sampling_ratio = 1;
    q.aligned = 1;
    CHECK_STATUS(pyroi_roi_align_forward_f32(column, shape, strides, centre_of_row_1, 1, 4,
                                             &batch, &result, out_strides, &q),
                 PYROI_OK);
    CHECK(result == 5.0f); /* the one sample, at (1, 0) after the half-pixel shift */
}

/* Regression (time): a 1e9-pixel turned box with adaptive sampling visited every one of its
 * ~1e9 rows per bin (minutes); only rows near the map are visited now. Asserted: it returns,
 * with finite results, and a thin far-reaching box gives the same bits on 1 and 3 threads. */
static void test_huge_rotated_boxes(void)
{
    const float rois[10] = {3, 3, 1e9f, 1e9f, 45, 3, 2, 3e6f, 0.75f, 37};
    const int64_t batch[2] = {0, 1};
    const int64_t out_strides[4] = {C * 3 * 3, 3 * 3, 3, 1};
    float once[2 * C * 9], again[2 * C * 9];
    pyroi_roi_align_rotated_params p;
    pyroi_roi_align_rotated_params_init(&p);
    p.pooled_height = p.pooled_width = 3;
    p.num_threads = 1;
    CHECK_STATUS(pyroi_roi_align_rotated_forward_f32(x, x_shape, x_strides, rois, 2, 5, batch,
                                                     once, out_strides, &p),
                 PYROI_OK);
    CHECK(all_finite(once, 2 * C * 9));
    p.num_threads = 3;
    CHECK_STATUS(pyroi_roi_align_rotated_forward_f32(x, x_shape, x_strides, rois, 2, 5, batch,
                                                     again, out_strides, &p),
                 PYROI_OK);
    CHECK(memcmp(once, again, sizeof(once)) == 0);
    CHECK_STATUS(pyroi_roi_align_rotated_backward_f32(once, out_strides, rois, 2, 5, batch,
                                                      grad_in, x_shape, x_strides, &p),
                 PYROI_OK);
    CHECK(all_finite(grad_in, GRAD_COUNT));
}

/* Outputs whose elements overlap, shapes and strides that overflow, NULL, bad threads. */
static void test_shapes_strides_and_pointers(void)
{
    int op;
    for (op = 0; op < OP_COUNT; ++op) {
        hostile_call a;
        float boxes[5 * MAX_ROIS];
        int64_t batch[MAX_ROIS], out_strides[4];
        int64_t shape[4] = {N, C, H, W}, strides[4] = {C * H * W, H * W, W, 1};

        forward_call(op, &a, boxes, batch, out_strides);
        out_strides[0] = 0; /* every RoI writes the same elements */
        CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_STRIDES);
        CHECK(untouched(out, OUT_COUNT));

        forward_call(op, &a, boxes, batch, out_strides);
        shape[2] = -1;
        a.input_shape = shape;
        CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_SHAPE);
        shape[2] = INT64_MAX; /* N * C * H * W overflows */
        CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_SHAPE);
        shape[2] = H;
        strides[2] = INT64_MAX / 2; /* (H - 1) * stride overflows */
        a.input_strides = strides;
        CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_STRIDES);
        strides[2] = INT64_MIN;
        CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_STRIDES);

        forward_call(op, &a, boxes, batch, out_strides);
        a.row_stride = INT64_MIN;
        CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_STRIDES);
        a.row_stride = INT64_MAX;
        CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_STRIDES);
        a.row_stride = coords_of(op);
        a.num_rois = -1;
        CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_SHAPE);
        a.num_rois = MAX_ROIS;
        a.boxes = NULL;
        CHECK_STATUS(forward(op, &a), PYROI_E_NULL_POINTER);
        a.boxes = boxes;
        a.batch = NULL;
        CHECK_STATUS(forward(op, &a), PYROI_E_NULL_POINTER);
        a.batch = batch;
        a.input = NULL;
        CHECK_STATUS(forward(op, &a), PYROI_E_NULL_POINTER);
        a.input = x;
        a.num_threads = -1;
        CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_NUM_THREADS);
        a.num_threads = 1;
        a.pooled_height = 0;
        CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_OUTPUT_SIZE);
        a.pooled_height = INT64_MIN;
        CHECK_STATUS(forward(op, &a), PYROI_E_INVALID_OUTPUT_SIZE);
        CHECK(untouched(out, OUT_COUNT));
        (void)op_names;
    }
}

static void test_fpn_levels(void)
{
    const float boxes[8] = {0, 0, 224, 224, 1, 1, NAN, 3};
    int64_t levels[2] = {7, 7};
    pyroi_fpn_level_params p;
    pyroi_fpn_level_params_init(&p);
    CHECK_STATUS(pyroi_fpn_levels_f32(boxes, 2, 4, &p, levels), PYROI_E_INVALID_BOX);
    CHECK(levels[0] == 7 && levels[1] == 7);
    CHECK_STATUS(pyroi_fpn_levels_f32(boxes, 1, 4, &p, levels), PYROI_OK);
    CHECK(levels[0] == 2); /* level 4 of 2..5 */
}

/* Regression (found by the CI fuzz run): RoIPool's backward checked a NULL argmax of a tensor
 * without elements by forming pointers from it (UBSan: zero offset applied to NULL). */
static void test_roi_pool_backward_empty_argmax(void)
{
    static const int64_t shape[4] = {1, 0, 4, 4}; /* no channels: nothing to check or write */
    static const int64_t strides[4] = {0, 16, 4, 1};
    static const int64_t pooled_strides[4] = {0, 4, 2, 1};
    const int64_t batch[2] = {0, 0};
    pyroi_roi_pool_params q;
    pyroi_roi_pool_params_init(&q);
    q.pooled_height = q.pooled_width = 2;
    CHECK_STATUS(pyroi_roi_pool_backward_f32(NULL, pooled_strides, NULL, pooled_strides, batch, 2,
                                             NULL, shape, strides, &q),
                 PYROI_OK);
}

int main(void)
{
    int i;
    for (i = 0; i < N * C * H * W; ++i) {
        x[i] = (float)((i * 37) % 17) - 8.0f;
    }
    test_valid_calls();
    test_sampling_ratio_cap();
    test_nonfinite_coordinates();
    test_bad_batch_indices();
    test_extreme_boxes();
    test_huge_output_size_without_rois();
    test_no_memory();
    test_broadcast_batch();
    test_null_empty_tensors();
    test_stride_of_length_one_axes();
    test_huge_rotated_boxes();
    test_shapes_strides_and_pointers();
    test_fpn_levels();
    test_roi_pool_backward_empty_argmax();
    return check_report("test_hostile");
}
