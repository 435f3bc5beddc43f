/* Cancellation (pyroi_cancel): for every operator family, a token set before the call makes
 * it return PYROI_E_CANCELLED without writing outside its output, a token set by another
 * thread (POSIX) or by the poll function during a long call stops it, the preparation before
 * the work polls too, validation comes first, and a call with a token that stays clear gives
 * the same result as without one. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* nanosleep */
#endif
#include "pyroi.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32)
#  include <pthread.h>
#  include <time.h>
#endif

enum { C = 196, OUT_CHANNELS = 4, H = 64, W = 64, P = 7, GUARD = 64 };
static const int64_t map_shape[4] = {1, C, H, W};
static const int64_t map_strides[4] = {C * H * W, H * W, W, 1};
static const int64_t broadcast[4] = {0, 0, 0, 0}; /* one value for every gradient/argmax */

typedef struct call_case {
    const char *name;
    int64_t rois;     /* enough for a call of 50 ms or more on a fast machine (Zen 4) */
    int64_t channels; /* of the output per RoI; 0: a backward (output C x H x W) */
    int64_t pooled;   /* the bins per side */
} call_case;

static float *features, *boxes, *rotated, *out, one = 1.0f;
static int64_t *batch, *argmax_out, zero_index = 0;
/* The backward cases' gradient map and the bins per side (each case sets pooled, and
 * test_zeroing_is_cancellable the three). */
static float *grad_map;
static const int64_t *grad_shape = map_shape, *grad_strides = map_strides;
static int64_t pooled = P;

/* Runs case `which` with the given token; writes into out. */
static pyroi_status run(int which, int64_t rois, pyroi_cancel *token)
{
    const int64_t pooled_strides[4] = {C * pooled * pooled, pooled * pooled, pooled, 1};
    const int64_t ps_strides[4] = {OUT_CHANNELS * pooled * pooled, pooled * pooled, pooled, 1};
    pyroi_roi_align_params align;
    pyroi_roi_pool_params pool;
    pyroi_ps_roi_align_params ps_align;
    pyroi_ps_roi_pool_params ps_pool;
    pyroi_roi_align_rotated_params rot;
    pyroi_roi_align_params_init(&align);
    pyroi_roi_pool_params_init(&pool);
    pyroi_ps_roi_align_params_init(&ps_align);
    pyroi_ps_roi_pool_params_init(&ps_pool);
    pyroi_roi_align_rotated_params_init(&rot);
    align.pooled_height = align.pooled_width = pooled;
    align.sampling_ratio = 16;
    align.aligned = 1;
    align.cancel = token;
    pool.pooled_height = pool.pooled_width = pooled;
    pool.cancel = token;
    ps_align.pooled_height = ps_align.pooled_width = pooled;
    ps_align.sampling_ratio = 16;
    ps_align.cancel = token;
    ps_pool.pooled_height = ps_pool.pooled_width = pooled;
    ps_pool.cancel = token;
    rot.pooled_height = rot.pooled_width = pooled;
    rot.sampling_ratio = 8;
    rot.cancel = token;
    switch (which) {
    case 0:
        return pyroi_roi_align_forward_f32(features, map_shape, map_strides, boxes, rois, 4,
                                           batch, out, pooled_strides, &align);
    case 1:
        return pyroi_roi_align_backward_f32(&one, broadcast, boxes, rois, 4, batch, grad_map,
                                            grad_shape, grad_strides, &align);
    case 2:
        return pyroi_roi_align_max_forward_f32(features, map_shape, map_strides, boxes, rois,
                                               4, batch, out, pooled_strides, argmax_out,
                                               pooled_strides, &align);
    case 3:
        return pyroi_roi_align_max_backward_f32(&one, broadcast, &zero_index, broadcast, boxes,
                                                rois, 4, batch, grad_map, grad_shape, grad_strides,
                                                &align);
    case 4:
        return pyroi_roi_align_onnx_max_forward_f32(features, map_shape, map_strides, boxes,
                                                    rois, 4, batch, out, pooled_strides,
                                                    &align);
    case 5:
        return pyroi_roi_pool_forward_f32(features, map_shape, map_strides, boxes, rois, 4,
                                          batch, out, pooled_strides, argmax_out,
                                          pooled_strides, &pool);
    case 6:
        return pyroi_roi_pool_backward_f32(&one, broadcast, &zero_index, broadcast, batch, rois,
                                           grad_map, grad_shape, grad_strides, &pool);
    case 7:
        return pyroi_ps_roi_align_forward_f32(features, map_shape, map_strides, boxes, rois, 4,
                                              batch, out, ps_strides, &ps_align);
    case 8:
        return pyroi_ps_roi_align_backward_f32(&one, broadcast, boxes, rois, 4, batch, grad_map,
                                               grad_shape, grad_strides, &ps_align);
    case 9:
        return pyroi_ps_roi_pool_forward_f32(features, map_shape, map_strides, boxes, rois, 4,
                                             batch, out, ps_strides, &ps_pool);
    case 10:
        return pyroi_ps_roi_pool_backward_f32(&one, broadcast, boxes, rois, 4, batch, grad_map,
                                              grad_shape, grad_strides, &ps_pool);
    case 11:
        return pyroi_roi_align_rotated_forward_f32(features, map_shape, map_strides, rotated,
                                                   rois, 5, batch, out, pooled_strides, &rot);
    default:
        return pyroi_roi_align_rotated_backward_f32(&one, broadcast, rotated, rois, 5, batch,
                                                    grad_map, grad_shape, grad_strides, &rot);
    }
}

enum { MAX_OUT = 500 * C * P * P, MAX_ROIS = 200000 };
/* RoI pooling reads each RoI's pixels once per channel whatever its bins: its forward takes
 * one bin per side, so that enough RoIs for a long call fit the output. */
static const call_case cases[] = {
    {"roi_align forward", 500, C, P},
    {"roi_align backward", 2000, 0, P},
    {"roi_align max forward", 500, C, P},
    {"roi_align max backward", 20000, 0, P},
    {"onnx max forward", 500, C, P},
    {"roi_pool forward", 10000, C, 1},
    {"roi_pool backward", 200000, 0, P},
    {"ps_roi_align forward", 20000, OUT_CHANNELS, P},
    {"ps_roi_align backward", 20000, 0, P},
    {"ps_roi_pool forward", 20000, OUT_CHANNELS, P},
    {"ps_roi_pool backward", 60000, 0, P},
    {"rotated forward", 500, C, P},
    {"rotated backward", 2000, 0, P},
};
enum { CASES = sizeof(cases) / sizeof(cases[0]) };

static int guards_intact(int64_t out_elements)
{
    int64_t i;
    for (i = out_elements; i < out_elements + GUARD; ++i) {
        if (out[i] != -7.0f) {
            return 0;
        }
    }
    return 1;
}

static void set_guards(int64_t out_elements)
{
    int64_t i;
    for (i = out_elements; i < out_elements + GUARD; ++i) {
        out[i] = -7.0f;
    }
}

static void request_on_poll(pyroi_cancel *token)
{
    int *polls = (int *)token->poll_context;
    if (++*polls >= 2) {
        token->requested = 1;
    }
}

static void request_at_once(pyroi_cancel *token)
{
    ++*(int *)token->poll_context;
    token->requested = 1;
}

static int untouched(int64_t out_elements)
{
    int64_t i;
    for (i = 0; i < out_elements; ++i) {
        if (out[i] != -3.0f) {
            return 0;
        }
    }
    return 1;
}

#if !defined(_WIN32)
/* A value in out[0] that no call writes (features are in [0, 1); a backward zeroes it). */
#define NOT_YET_WRITTEN -5.0f

/* A thread watching a running call: the token it sets, and whether the call has returned. */
typedef struct call_watch {
    pyroi_cancel *token;
    volatile int done;
} call_watch;

/* Sets the flag once the call has written out[0] (a forward's first work item, a backward's
 * zeroing) or 20 ms into it (a backward that writes its blocks out at the end): the call is
 * then under way with most of its work to do, however fast the machine. */
static void *request_once_under_way(void *arg)
{
    call_watch *watch = (call_watch *)arg;
    const struct timespec pause = {0, 50 * 1000};
    int waits;
    for (waits = 0; waits < 400 && !watch->done; ++waits) {
        if (((volatile float *)out)[0] != NOT_YET_WRITTEN) {
            break;
        }
        nanosleep(&pause, NULL);
    }
    watch->token->requested = 1;
    return NULL;
}
#endif

static void test_case(int which)
{
    const call_case *c = &cases[which];
    /* the outputs this case writes: the output proper, argmax for max/pool forwards */
    const int64_t out_elements = c->channels == 0 ? (int64_t)C * H * W
                                                  : c->rois * c->channels * c->pooled * c->pooled;
    pyroi_cancel token;
    int polls = 0, round;
    int64_t i;
    pyroi_status status;
    pooled = c->pooled;

    /* set before the call: cancelled, nothing outside the output written */
    pyroi_cancel_init(&token);
    token.requested = 1;
    set_guards(out_elements);
    CHECK_STATUS(run(which, c->rois, &token), PYROI_E_CANCELLED);
    CHECK(guards_intact(out_elements));
    CHECK(token.requested == 1); /* never reset by the library */

    /* validation comes first: a negative RoI count is a shape error even when cancelled */
    CHECK_STATUS(run(which, -1, &token), PYROI_E_INVALID_SHAPE);

    /* a clear token: the call completes */
    pyroi_cancel_init(&token);
    CHECK_STATUS(run(which, 8, &token), PYROI_OK);

    /* the poll function, on the calling thread, cancels the long call */
    pyroi_cancel_init(&token);
    token.poll = request_on_poll;
    token.poll_context = &polls;
    set_guards(out_elements);
    status = run(which, c->rois, &token);
    if (status != PYROI_E_CANCELLED) {
        fprintf(stderr, "%s: poll did not cancel\n", c->name);
    }
    CHECK_STATUS(status, PYROI_E_CANCELLED);
    CHECK(polls >= 2);
    CHECK(guards_intact(out_elements));

    /* the preparation (copying the RoIs, their tables) polls too: a poll that stops the call
     * at once stops it before any output is written (before, the first poll came 20 ms into
     * the work). Twice in a row: the second call starts a moment after the first one polled,
     * on this thread, with this token; each call keeps its own poll clock, so its first check
     * polls all the same (a clock per thread would wait out the 20 ms, and the work would
     * start) */
    for (round = 0; round < 2; ++round) {
        for (i = 0; i < out_elements + GUARD; ++i) {
            out[i] = -3.0f;
        }
        pyroi_cancel_init(&token);
        token.poll = request_at_once;
        token.poll_context = &polls;
        polls = 0;
        status = run(which, c->rois, &token);
        if (status != PYROI_E_CANCELLED || polls != 1 || !untouched(out_elements + GUARD)) {
            fprintf(stderr, "%s: the preparation did not stop call %d (%d polls)\n", c->name,
                    round + 1, polls);
        }
        CHECK_STATUS(status, PYROI_E_CANCELLED);
        CHECK(polls == 1);
        CHECK(untouched(out_elements + GUARD));
    }

#if !defined(_WIN32)
    { /* another thread sets the flag while the call runs */
        pthread_t thread;
        call_watch watch;
        pyroi_cancel_init(&token);
        set_guards(out_elements);
        out[0] = NOT_YET_WRITTEN;
        watch.token = &token;
        watch.done = 0;
        CHECK(pthread_create(&thread, NULL, request_once_under_way, &watch) == 0);
        status = run(which, c->rois, &token);
        watch.done = 1;
        pthread_join(thread, NULL);
        if (status != PYROI_E_CANCELLED) {
            fprintf(stderr, "%s: another thread did not cancel\n", c->name);
        }
        CHECK_STATUS(status, PYROI_E_CANCELLED);
        CHECK(guards_intact(out_elements));
    }
#endif
}

#if !defined(_WIN32)
/* The backward's zeroing of a huge gradient is one work item: it reads the token between
 * slices. A C = 1 backward over a 64M-pixel map, with one small RoI, is cancelled by a thread
 * that sets the flag as soon as the first pixel is zeroed: the call stops before the last
 * pixel is (before, the whole plane was zeroed first and the flag read only after). */
enum { BIG_SIDE = 8192 };
static float *big;

static void *request_once_zeroing(void *arg)
{
    call_watch *watch = (call_watch *)arg;
    while (!watch->done && ((volatile float *)big)[0] != 0.0f) {
    }
    watch->token->requested = 1;
    return NULL;
}

static void test_zeroing_is_cancellable(void)
{
    static const int backwards[] = {1, 3, 6, 8, 10, 12}; /* indices in cases */
    static const int64_t shape[4] = {1, 1, BIG_SIDE, BIG_SIDE};
    static const int64_t strides[4] = {(int64_t)BIG_SIDE * BIG_SIDE, (int64_t)BIG_SIDE * BIG_SIDE,
                                       BIG_SIDE, 1};
    const int64_t pixels = (int64_t)BIG_SIDE * BIG_SIDE;
    int which;
    int64_t i;
    big = (float *)malloc(sizeof(float) * (size_t)pixels);
    CHECK(big != NULL);
    if (big == NULL) {
        return;
    }
    grad_map = big;
    grad_shape = shape;
    grad_strides = strides;
    pooled = 1; /* PS-RoI*: one input channel per output channel */
    for (which = 0; which < 6; ++which) {
        pyroi_cancel token;
        call_watch watch;
        pthread_t thread;
        pyroi_status status;
        for (i = 0; i < pixels; ++i) {
            big[i] = -3.0f;
        }
        pyroi_cancel_init(&token);
        watch.token = &token;
        watch.done = 0;
        CHECK(pthread_create(&thread, NULL, request_once_zeroing, &watch) == 0);
        status = run(backwards[which], 1, &token);
        watch.done = 1;
        pthread_join(thread, NULL);
        if (status != PYROI_E_CANCELLED || big[pixels - 1] != -3.0f) {
            fprintf(stderr, "%s: the zeroing did not stop (status %d)\n",
                    cases[backwards[which]].name, (int)status);
        }
        CHECK_STATUS(status, PYROI_E_CANCELLED);
        CHECK(big[pixels - 1] == -3.0f);
    }
    grad_map = out;
    grad_shape = map_shape;
    grad_strides = map_strides;
    pooled = P;
    free(big);
}
#endif

int main(void)
{
    int64_t i, k;
    int which;
    features = (float *)malloc(sizeof(float) * C * H * W);
    boxes = (float *)malloc(sizeof(float) * 4 * MAX_ROIS);
    rotated = (float *)malloc(sizeof(float) * 5 * MAX_ROIS);
    batch = (int64_t *)calloc(MAX_ROIS, sizeof(int64_t));
    out = (float *)malloc(sizeof(float) * ((size_t)MAX_OUT + GUARD));
    argmax_out = (int64_t *)malloc(sizeof(int64_t) * (size_t)MAX_OUT);
    if (!features || !boxes || !rotated || !batch || !out || !argmax_out) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (i = 0; i < C * H * W; ++i) {
        features[i] = (float)((i * 7919) % 1000) / 1000.0f;
    }
    for (k = 0; k < MAX_ROIS; ++k) {
        const float x = (float)(k % 5), y = (float)(k % 3);
        boxes[4 * k] = x;
        boxes[4 * k + 1] = y;
        boxes[4 * k + 2] = x + 58.0f;
        boxes[4 * k + 3] = y + 58.0f;
        rotated[5 * k] = 32.0f + x;
        rotated[5 * k + 1] = 32.0f + y;
        rotated[5 * k + 2] = 50.0f;
        rotated[5 * k + 3] = 40.0f;
        rotated[5 * k + 4] = (float)(k % 90);
    }
    grad_map = out;
    for (which = 0; which < CASES; ++which) {
        test_case(which);
    }
#if !defined(_WIN32)
    test_zeroing_is_cancellable();
#endif
    free(features);
    free(boxes);
    free(rotated);
    free(batch);
    free(out);
    free(argmax_out);
    return check_report("test_cancel");
}
