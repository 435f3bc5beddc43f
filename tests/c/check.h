/* check.h - a minimal test harness for the C tests (no dependencies). */
#ifndef PYROI_TEST_CHECK_H
#define PYROI_TEST_CHECK_H

#include "pyroi.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

static int check_failures = 0;
static int check_count = 0;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        ++check_count;                                                                \
        if (!(cond)) {                                                                \
            ++check_failures;                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                             \
    } while (0)

#define CHECK_STATUS(call, expected)                                                  \
    do {                                                                              \
        pyroi_status check_status_ = (call);                                          \
        ++check_count;                                                                \
        if (check_status_ != (expected)) {                                            \
            ++check_failures;                                                         \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %s\n", __FILE__,    \
                    __LINE__, #call, (int)check_status_,                              \
                    pyroi_status_string(check_status_), #expected);                   \
        }                                                                             \
    } while (0)

#define CHECK_CLOSE(actual, expected, tol)                                            \
    do {                                                                              \
        double check_a_ = (double)(actual), check_e_ = (double)(expected);            \
        ++check_count;                                                                \
        if (!(fabs(check_a_ - check_e_) <= (tol) * (1.0 + fabs(check_e_)))) {         \
            ++check_failures;                                                         \
            fprintf(stderr, "%s:%d: %s = %.9g, expected %.9g\n", __FILE__, __LINE__,  \
                    #actual, check_a_, check_e_);                                     \
        }                                                                             \
    } while (0)

static int check_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures == 0 ? 0 : 1;
}

/* Deterministic pseudo-random numbers in [0, 1) (64-bit LCG, high bits). */
static double check_random(unsigned long long *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*state >> 11) / 9007199254740992.0;
}

/* x[i] = i for i < count: a map whose every value names its offset, so that a hand-worked
 * expected result can be read off the pixels it averages. */
static void check_ramp_f32(float *x, int count)
{
    int i;

    for (i = 0; i < count; ++i) {
        x[i] = (float)i;
    }
}

static void check_ramp_f64(double *x, int count)
{
    int i;

    for (i = 0; i < count; ++i) {
        x[i] = i;
    }
}

/* Fills v[0 .. count) with pseudo-random values uniform in [lo, hi). */
static void check_random_fill(double *v, long count, double lo, double hi,
                              unsigned long long *state)
{
    long i;

    for (i = 0; i < count; ++i) {
        v[i] = lo + (hi - lo) * check_random(state);
    }
}

/* The same pseudo-random N x C x H x W tensor (values in [offset, offset + 1)) written in
 * NCHW order into `nchw` and in NHWC order into `nhwc`: the layout tests' inputs. */
static void check_random_nchw_nhwc(float *nchw, float *nhwc, int N, int C, int H, int W,
                                   float offset, unsigned long long *state)
{
    int n, c, h, w;

    for (n = 0; n < N; ++n)
        for (c = 0; c < C; ++c)
            for (h = 0; h < H; ++h)
                for (w = 0; w < W; ++w) {
                    const float v = (float)check_random(state) + offset;
                    nchw[((n * C + c) * H + h) * W + w] = v;
                    nhwc[((n * H + h) * W + w) * C + c] = v;
                }
}

/* `count` boxes (4 floats a row) of up to 30 x 30 pixels with their top-left corner in
 * [-8, 52)^2, box k on image k % num_images: the RoIs of the thread-count tests. */
static void check_random_boxes(float *boxes, int64_t *batch, int count, int num_images,
                               unsigned long long *state)
{
    int k;

    for (k = 0; k < count; ++k) {
        const float x1 = (float)(check_random(state) * 60 - 8);
        const float y1 = (float)(check_random(state) * 60 - 8);
        batch[k] = k % num_images;
        boxes[4 * k] = x1;
        boxes[4 * k + 1] = y1;
        boxes[4 * k + 2] = x1 + (float)(check_random(state) * 30);
        boxes[4 * k + 3] = y1 + (float)(check_random(state) * 30);
    }
}

/* The adjoint identity of a linear forward y = A x and its backward gx = A^T gy:
 * <y, gy> == <x, gx> to rounding, relative to sum |y * gy|, which must not be 0 (else the
 * identity holds vacuously). A macro, so that a failure names the caller's line. */
static void check_adjoint_sums(const double *y, const double *gy, long n_out, const double *x,
                               const double *gx, long n_in, double sums[3])
{
    long i;

    sums[0] = sums[1] = sums[2] = 0;
    for (i = 0; i < n_out; ++i) {
        sums[0] += y[i] * gy[i];
        sums[2] += fabs(y[i] * gy[i]);
    }
    for (i = 0; i < n_in; ++i) {
        sums[1] += x[i] * gx[i];
    }
}

#define CHECK_ADJOINT(y, gy, n_out, x, gx, n_in)                                      \
    do {                                                                              \
        double check_sums_[3];                                                        \
        check_adjoint_sums((y), (gy), (n_out), (x), (gx), (n_in), check_sums_);       \
        CHECK(check_sums_[2] > 0);                                                    \
        CHECK(fabs(check_sums_[0] - check_sums_[1]) <= 1e-12 * (1 + check_sums_[2])); \
    } while (0)

/* RoIPool's parameters with a pooled size, the rest at their defaults (the tests of RoIPool
 * and of its explain function share them). */
static void check_roi_pool_params(pyroi_roi_pool_params *p, int64_t pooled_height,
                                  int64_t pooled_width)
{
    pyroi_roi_pool_params_init(p);
    p->pooled_height = pooled_height;
    p->pooled_width = pooled_width;
}

/* `init` (a params_init entry) sets the fields every params struct has to their defaults (1 x 1
 * bins, scale 1, the default thread count) in `p`, filled with garbage first, and ignores
 * NULL; the caller checks the operator's own fields after it. Needs <string.h>. */
#define CHECK_PARAMS_INIT(init, p)                                                    \
    do {                                                                              \
        memset(&(p), 0x5a, sizeof(p));                                                \
        init(&(p));                                                                   \
        CHECK((p).pooled_height == 1 && (p).pooled_width == 1);                       \
        CHECK((p).spatial_scale_h == 1.0 && (p).spatial_scale_w == 1.0);              \
        CHECK((p).num_threads == 0);                                                  \
        init(NULL); /* no crash */                                                    \
    } while (0)

/* The parameters every operator validates alike, seen through pointers into the operator's
 * own struct (sampling_ratio NULL where it has none). */
typedef struct check_params_view {
    int64_t *pooled_height, *pooled_width;
    double *spatial_scale_h, *spatial_scale_w;
    int64_t *sampling_ratio;
    int *num_threads;
} check_params_view;

/* Invalid values of those parameters and the status each must get. */
enum check_param { CHECK_POOLED_HEIGHT, CHECK_POOLED_WIDTH, CHECK_SCALE_H, CHECK_SCALE_W,
                   CHECK_SAMPLING_RATIO, CHECK_NUM_THREADS };
static const struct check_bad_param {
    enum check_param field;
    double value;
    pyroi_status status;
} check_bad_params[] = {
    {CHECK_POOLED_HEIGHT, 0, PYROI_E_INVALID_OUTPUT_SIZE},
    {CHECK_POOLED_WIDTH, -1, PYROI_E_INVALID_OUTPUT_SIZE},
    {CHECK_POOLED_WIDTH, -3, PYROI_E_INVALID_OUTPUT_SIZE},
    {CHECK_SCALE_H, -0.5, PYROI_E_INVALID_SCALE},
    {CHECK_SCALE_H, NAN, PYROI_E_INVALID_SCALE},
    {CHECK_SCALE_H, INFINITY, PYROI_E_INVALID_SCALE},
    {CHECK_SCALE_W, -1.0, PYROI_E_INVALID_SCALE},
    {CHECK_SCALE_W, NAN, PYROI_E_INVALID_SCALE},
    {CHECK_SCALE_W, INFINITY, PYROI_E_INVALID_SCALE},
    {CHECK_SAMPLING_RATIO, (double)PYROI_MAX_SAMPLING_GRID + 1, PYROI_E_INVALID_SAMPLING_RATIO},
    {CHECK_NUM_THREADS, -1, PYROI_E_INVALID_NUM_THREADS},
    {CHECK_NUM_THREADS, -2, PYROI_E_INVALID_NUM_THREADS},
};

/* Writes row `row` of check_bad_params through `v`; 0 if the operator has no such field. */
static int check_set_bad_param(const check_params_view *v, size_t row)
{
    const struct check_bad_param *bad = &check_bad_params[row];

    switch (bad->field) {
    case CHECK_POOLED_HEIGHT: *v->pooled_height = (int64_t)bad->value; break;
    case CHECK_POOLED_WIDTH: *v->pooled_width = (int64_t)bad->value; break;
    case CHECK_SCALE_H: *v->spatial_scale_h = bad->value; break;
    case CHECK_SCALE_W: *v->spatial_scale_w = bad->value; break;
    case CHECK_SAMPLING_RATIO:
        if (v->sampling_ratio == NULL) {
            return 0;
        }
        *v->sampling_ratio = (int64_t)bad->value;
        break;
    default: *v->num_threads = (int)bad->value; break;
    }
    return 1;
}

/* Every row of check_bad_params, alone, fails both `forward` and `backward` (calls with the
 * parameters `view` points into) with its status; `reset` makes the parameters valid again. */
#define CHECK_PARAMS_STATUS(view, reset, forward, backward)                           \
    do {                                                                              \
        size_t check_row_;                                                            \
        for (check_row_ = 0;                                                          \
             check_row_ < sizeof(check_bad_params) / sizeof(check_bad_params[0]);     \
             ++check_row_) {                                                          \
            reset;                                                                    \
            if (check_set_bad_param(&(view), check_row_)) {                           \
                CHECK_STATUS(forward, check_bad_params[check_row_].status);           \
                CHECK_STATUS(backward, check_bad_params[check_row_].status);          \
            }                                                                         \
        }                                                                             \
    } while (0)

/* The tensor arguments every RoI operator takes alike: its forward (map, shape, strides,
 * boxes, num_rois, box_stride, batch, pooled, pooled_strides, params) reads the map and
 * writes the pooled tensor; its backward (pooled, pooled_strides, boxes, num_rois,
 * box_stride, batch, map, shape, strides, params) reads the pooled gradient and writes the
 * map's. A test fills one with valid tensors (pooled bins at least 2 high) and
 * check_tensor_status breaks one argument at a time. */
typedef struct check_tensors {
    float *map;
    const int64_t *shape, *strides;
    const float *boxes;
    int64_t num_rois, box_stride;
    const int64_t *batch;
    float *pooled;
    const int64_t *pooled_strides;
} check_tensors;

/* An operator's forward (backward == 0) or backward on `t`; `params` is its params struct. */
typedef pyroi_status (*check_tensor_call)(int backward, const check_tensors *t,
                                          const void *params);

/* Defines `name`, the check_tensor_call of the operator whose entry points are
 * `entry`_forward_f32 and `entry`_backward_f32. */
#define CHECK_TENSOR_CALL(name, entry)                                                 \
    static pyroi_status name(int backward, const check_tensors *t, const void *params) \
    {                                                                                 \
        if (backward) {                                                               \
            return entry##_backward_f32(t->pooled, t->pooled_strides, t->boxes,       \
                                        t->num_rois, t->box_stride, t->batch, t->map, \
                                        t->shape, t->strides, params);                \
        }                                                                             \
        return entry##_forward_f32(t->map, t->shape, t->strides, t->boxes, t->num_rois, \
                                   t->box_stride, t->batch, t->pooled,                \
                                   t->pooled_strides, params);                        \
    }

/* The broken arguments of check_tensor_status: each turns a valid set into a call that must
 * give its status. */
enum {
    CHECK_NULL_MAP, CHECK_NULL_SHAPE, CHECK_NULL_STRIDES, CHECK_NULL_BOXES, CHECK_NULL_BATCH,
    CHECK_NULL_POOLED, CHECK_NULL_POOLED_STRIDES, CHECK_NO_ROIS, CHECK_NEGATIVE_ROI_COUNT,
    CHECK_NEGATIVE_WIDTH, CHECK_OUTPUT_OVERLAPS, CHECK_NEGATIVE_BOX_STRIDE,
    CHECK_STRIDES_PAST_INT64, CHECK_BROKEN_TENSORS
};

static const char *const check_broken_tensor_names[CHECK_BROKEN_TENSORS] = {
    "map NULL", "shape NULL", "strides NULL", "boxes NULL", "batch NULL", "pooled NULL",
    "pooled_strides NULL", "no RoIs, their tensors NULL", "num_rois -1", "width -4",
    "the written tensor overlaps itself", "box_stride INT64_MIN",
    "3 images at a stride of INT64_MAX / 2"};

/* Breaks argument `which` of `t` (shape, strides and pooled_strides: copies to modify) and
 * returns the status the call must give. */
static pyroi_status check_break_tensor(check_tensors *t, int which, int backward,
                                       int64_t shape[4], int64_t strides[4],
                                       int64_t pooled_strides[4])
{
    int i;

    for (i = 0; i < 4; ++i) {
        shape[i] = t->shape[i];
        strides[i] = t->strides[i];
        pooled_strides[i] = t->pooled_strides[i];
    }
    t->shape = shape;
    t->strides = strides;
    t->pooled_strides = pooled_strides;
    switch (which) {
    case CHECK_NULL_MAP: t->map = NULL; return PYROI_E_NULL_POINTER;
    case CHECK_NULL_SHAPE: t->shape = NULL; return PYROI_E_NULL_POINTER;
    case CHECK_NULL_STRIDES: t->strides = NULL; return PYROI_E_NULL_POINTER;
    case CHECK_NULL_BOXES: t->boxes = NULL; return PYROI_E_NULL_POINTER;
    case CHECK_NULL_BATCH: t->batch = NULL; return PYROI_E_NULL_POINTER;
    case CHECK_NULL_POOLED: t->pooled = NULL; return PYROI_E_NULL_POINTER;
    case CHECK_NULL_POOLED_STRIDES: t->pooled_strides = NULL; return PYROI_E_NULL_POINTER;
    case CHECK_NO_ROIS:
        t->num_rois = 0;
        t->boxes = NULL;
        t->batch = NULL;
        t->pooled = NULL;
        return PYROI_OK;
    case CHECK_NEGATIVE_ROI_COUNT: t->num_rois = -1; return PYROI_E_INVALID_SHAPE;
    case CHECK_NEGATIVE_WIDTH: shape[3] = -4; return PYROI_E_INVALID_SHAPE;
    case CHECK_OUTPUT_OVERLAPS:
        (backward ? strides : pooled_strides)[2] = 0; /* rows on top of each other */
        return PYROI_E_INVALID_STRIDES;
    case CHECK_NEGATIVE_BOX_STRIDE:
        t->num_rois = 2;
        t->box_stride = INT64_MIN;
        return PYROI_E_INVALID_STRIDES;
    default:
        shape[0] = 3;
        strides[0] = INT64_MAX / 2;
        return PYROI_E_INVALID_STRIDES;
    }
}

/* The valid tensors `valid` pass; each broken argument of check_break_tensor, alone, gets its
 * status from the forward and from the backward. */
static void check_tensor_status(check_tensor_call call, const check_tensors *valid,
                                const void *params, const char *name)
{
    int backward, which;

    for (backward = 0; backward < 2; ++backward) {
        CHECK_STATUS(call(backward, valid, params), PYROI_OK);
        for (which = 0; which < CHECK_BROKEN_TENSORS; ++which) {
            check_tensors t = *valid;
            int64_t shape[4], strides[4], pooled_strides[4];
            pyroi_status expected = check_break_tensor(&t, which, backward, shape, strides,
                                                       pooled_strides);
            pyroi_status got = call(backward, &t, params);
            ++check_count;
            if (got != expected) {
                ++check_failures;
                fprintf(stderr, "%s %s, %s: returned %d (%s), expected %s\n", name,
                        backward ? "backward" : "forward", check_broken_tensor_names[which],
                        (int)got, pyroi_status_string(got), pyroi_status_string(expected));
            }
        }
    }
}

/* The answers every find_invalid_roi entry `find` (its name without _f32 / _f64) gives on
 * float `boxes` of `coords` numbers a row whose first two are valid and whose third is not,
 * with batches `good` (all 0) and `bad` (the second index 1, past one image); the arguments
 * after them are the entry's own (map size, parameters). A macro, so that a failure names the
 * caller's line. */
#define CHECK_FIRST_OFFENDER(find, boxes, coords, good, bad, ...)                     \
    do {                                                                              \
        int64_t check_index_ = 99;                                                    \
        CHECK_STATUS(find##_f32(boxes, 2, coords, good, 1, __VA_ARGS__, &check_index_), \
                     PYROI_OK);                                                       \
        CHECK(check_index_ == -1);                                                    \
        CHECK_STATUS(find##_f32(boxes, 3, coords, good, 1, __VA_ARGS__, &check_index_), \
                     PYROI_E_INVALID_BOX);                                            \
        CHECK(check_index_ == 2);                                                     \
        /* every batch index is checked before any box */                             \
        CHECK_STATUS(find##_f32(boxes, 3, coords, bad, 1, __VA_ARGS__, &check_index_), \
                     PYROI_E_INVALID_BATCH_INDEX);                                    \
        CHECK(check_index_ == 1);                                                     \
        check_index_ = 99;                                                            \
        CHECK_STATUS(find##_f64(NULL, 3, coords, good, 1, __VA_ARGS__, &check_index_), \
                     PYROI_E_NULL_POINTER);                                           \
        CHECK(check_index_ == -1);                                                    \
        CHECK_STATUS(find##_f32(boxes, 3, coords, good, 1, __VA_ARGS__, NULL),        \
                     PYROI_E_NULL_POINTER);                                           \
    } while (0)

#endif
