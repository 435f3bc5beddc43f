/* parallel.h - deterministic parallel-for over disjoint outputs (internal).
 *
 * Threads are created and joined inside each call, so the library keeps no thread pool:
 * nothing survives a call, a fork()ed child can always call pyroi, and concurrent calls from
 * several application threads do not interfere. Work items are claimed in chunks; every item
 * writes only its own outputs and is computed the same way whichever worker runs it, so the
 * results are bit-identical for every thread count. This is also where a call is cancelled
 * (pyroi_cancel in pyroi.h): the workers read the token before each chunk.
 */
#ifndef PYROI_PARALLEL_H
#define PYROI_PARALLEL_H

#include "core/common.h"

/* Most workers any call uses; callers size per-worker scratch arrays with it. */
#define PYROI_PARALLEL_MAX_WORKERS 64

/* Processes items [begin, end); worker is in [0, workers) and selects per-worker scratch. */
typedef void (*pyroi_range_task)(void *context, int64_t begin, int64_t end, int worker);

/* How many workers a call should use for item_count items costing about work_per_item
 * elementary operations each: num_threads (0 = the number of online processors), capped at
 * PYROI_PARALLEL_MAX_WORKERS, and fewer
 * when the call is too small to pay for starting threads. Always >= 1. */
int pyroi_parallel_workers(int num_threads, int64_t item_count, double work_per_item);

/* Runs task over [0, item_count) with at most `workers` workers, the calling thread being
 * one of them. If a thread cannot be started, the others (at least the caller) do its
 * share. work_per_item is the estimate given to pyroi_parallel_workers.
 * cancel (the call's params.cancel, may be NULL): the items are handed out in chunks of about
 * a millisecond's work (by that estimate) and cancel->requested is read before each; a call
 * of more than about 20 ms with a cancel->poll function runs on helper threads while the
 * calling thread calls poll every 20 ms. Returns PYROI_OK when every item ran,
 * PYROI_E_CANCELLED when the token was set (some items may not have run or may have stopped
 * early: the caller must then return that status and use nothing they would have computed). */
pyroi_status pyroi_parallel_for(int workers, int64_t item_count, double work_per_item,
                                pyroi_cancel *cancel, pyroi_range_task task, void *context);

/* Whether a call's token asks it to stop: tasks whose single items can take long read it
 * between parts of an item and return early (pyroi_parallel_for then reports the call
 * cancelled). */
static inline int pyroi_cancel_requested(const pyroi_cancel *cancel)
{
    return cancel != NULL && cancel->requested != 0;
}

/* Work between two reads of the token inside an item, in elementary operations (a bilinear
 * sample times a channel): about a millisecond. */
#define PYROI_CANCEL_WORK ((int64_t)1 << 20)

/* A kernel's count of the parts (bins, mostly) it has left before it reads the token again.
 * An item's work is not bounded by its count of RoIs or bins -- sampling_ratio 1024 makes one
 * bin 2^20 samples, a large output size makes a RoI many bins -- so a kernel that takes a
 * RoI's parts one after the other reads the token every PYROI_CANCEL_WORK of their work (and
 * before every part that alone costs more): a worker then stops within about a millisecond of
 * work of a request (a single part's work at most), whatever the inputs, at the cost of a
 * decrement per part. */
typedef struct pyroi_cancel_countdown {
    const pyroi_cancel *cancel;
    int64_t every; /* parts between two reads */
    int64_t left;  /* parts before the next read */
} pyroi_cancel_countdown;

/* The countdown of parts of work_per_part each (an estimate; >= 0) under token cancel (NULL:
 * never read). */
static inline pyroi_cancel_countdown pyroi_cancel_countdown_of(const pyroi_cancel *cancel,
                                                               int64_t work_per_part)
{
    pyroi_cancel_countdown countdown;
    countdown.cancel = cancel;
    countdown.every = cancel == NULL                        ? INT64_MAX
                      : work_per_part >= PYROI_CANCEL_WORK ? 1
                      : PYROI_CANCEL_WORK / (work_per_part > 0 ? work_per_part : 1);
    countdown.left = countdown.every;
    return countdown;
}

/* a * b (both >= 0) as the work of a part for pyroi_cancel_countdown_of, held at
 * PYROI_CANCEL_WORK: a part of that much work reads the token every time anyway, and the
 * product of a huge grid's samples and its lanes would overflow int64. */
static inline int64_t pyroi_cancel_work_of(int64_t a, int64_t b)
{
    if (a <= 0 || b <= 0) {
        return 0;
    }
    return a > PYROI_CANCEL_WORK / b ? PYROI_CANCEL_WORK : a * b;
}

/* Before each part: nonzero when the call is to stop (the token read once every `every`
 * parts). */
static inline int pyroi_cancel_count(pyroi_cancel_countdown *countdown)
{
    if (--countdown->left > 0) {
        return 0;
    }
    countdown->left = countdown->every;
    return pyroi_cancel_requested(countdown->cancel);
}

/* Before a part of `parts` unit parts (a countdown made with work_per_part 1, for parts of
 * uneven work: a pooling window's pixels times its channels): as pyroi_cancel_count. */
static inline int pyroi_cancel_count_work(pyroi_cancel_countdown *countdown, int64_t parts)
{
    countdown->left -= parts;
    if (countdown->left > 0) {
        return 0;
    }
    countdown->left = countdown->every;
    return pyroi_cancel_requested(countdown->cancel);
}

/* A call's cancellation on its calling thread: the token and the time of its next poll,
 * made once by each entry point (pyroi_call_cancel_of) and handed to every single-threaded
 * stage that polls, so that the polls of one call are spaced by that call's own clock --
 * whatever other calls the thread or the token serve, and without thread-local storage. */
typedef struct pyroi_call_cancel {
    pyroi_cancel *token; /* the call's params.cancel; NULL: the call cannot be cancelled */
    double next_poll;    /* monotonic seconds before which no poll runs; 0: none yet */
} pyroi_call_cancel;

static inline pyroi_call_cancel pyroi_call_cancel_of(pyroi_cancel *token)
{
    pyroi_call_cancel call;
    call.token = token;
    call.next_poll = 0.0;
    return call;
}

/* The calling thread's check in the long single-threaded stages of a call, before or outside
 * the workers (copying and grouping the RoIs, plan and tap tables, zeroing or widening a
 * tensor): runs the token's poll when PYROI_POLL_INTERVAL has passed since the call last
 * polled (at once the first time), and returns nonzero when the call is to stop (it then
 * returns PYROI_E_CANCELLED, freeing what it allocated). Reads a clock: call it every
 * PYROI_CANCEL_STRIDE items of a per-RoI loop (pyroi_cancel_at), or per chunk of about a
 * millisecond of other work. */
int pyroi_cancel_check(pyroi_call_cancel *call);

/* Items of a per-RoI preparation loop between two checks (a power of two; at most about a
 * millisecond of the slowest such loop, well under one for most). */
#define PYROI_CANCEL_STRIDE 256

/* In a loop over items: pyroi_cancel_check after every PYROI_CANCEL_STRIDE items (so a short
 * loop never reads the clock). */
static inline int pyroi_cancel_at(pyroi_call_cancel *call, int64_t item)
{
    return call->token != NULL && ((item + 1) & (PYROI_CANCEL_STRIDE - 1)) == 0 &&
           pyroi_cancel_check(call);
}

/* Zeroes channels [channel_begin, channel_end) of every image of an N x C x H x W tensor of
 * float16 (element_size 2), float (4) or double (8) with the given element strides, as a
 * backward's work
 * item does before adding its gradients: in slices of about a million elements, reading
 * cancel->requested between slices, so that a worker on a huge map still stops within about
 * a millisecond. Returns nonzero when the call is to stop (the planes then partly zeroed). */
int pyroi_zero_channels(void *tensor, size_t element_size, const int64_t shape[4],
                        const int64_t strides[4], int64_t channel_begin, int64_t channel_end,
                        const pyroi_cancel *cancel);

#endif /* PYROI_PARALLEL_H */
