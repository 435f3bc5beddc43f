/* parallel.h - deterministic parallel-for over disjoint outputs (internal).
 *
 * Threads are created and joined inside each call, so the library keeps no thread pool:
 * nothing survives a call, a fork()ed child can always call pyroi, and concurrent calls from
 * several application threads do not interfere. Work items are claimed in chunks; every item
 * writes only its own outputs and is computed the same way whichever worker runs it, so the
 * results are bit-identical for every thread count.
 */
#ifndef PYROI_PARALLEL_H
#define PYROI_PARALLEL_H

#include "common.h"

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
 * share: the call never fails. */
void pyroi_parallel_for(int workers, int64_t item_count, pyroi_range_task task, void *context);

#endif /* PYROI_PARALLEL_H */
