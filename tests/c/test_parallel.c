/* The internal parallel-for: every item is processed exactly once, by several workers when
 * asked, and the worker count respects the cost model. Also: forward and backward give
 * bit-identical results for every thread count on a call large enough to use threads. */
#include "pyroi.h"
#include "check.h"
#include "core/parallel.h"

#include <stdlib.h>
#include <string.h>

enum { ITEMS = 10000 };

typedef struct {
    int visits[ITEMS];
    int worker_of[ITEMS];
} visit_log;

static void record(void *context, int64_t begin, int64_t end, int worker)
{
    visit_log *log = (visit_log *)context;
    int64_t i;
    volatile double spin = 0; /* make items slow enough for threads to share them */
    for (i = begin; i < end; ++i) {
        int j;
        for (j = 0; j < 2000; ++j) {
            spin += j;
        }
        log->visits[i] += 1;
        log->worker_of[i] = worker;
    }
}

static void test_parallel_for(void)
{
    static visit_log log;
    int i, workers_seen = 0, seen[4] = {0, 0, 0, 0};

    memset(&log, 0, sizeof(log));
    pyroi_parallel_for(4, ITEMS, 1.0, NULL, record, &log);
    for (i = 0; i < ITEMS; ++i) {
        CHECK(log.visits[i] == 1);
        CHECK(log.worker_of[i] >= 0 && log.worker_of[i] < 4);
        seen[log.worker_of[i]] = 1;
    }
    for (i = 0; i < 4; ++i) {
        workers_seen += seen[i];
    }
    CHECK(workers_seen >= 2); /* threads really ran */

    memset(&log, 0, sizeof(log));
    pyroi_parallel_for(1, ITEMS, 1.0, NULL, record, &log);
    for (i = 0; i < ITEMS; ++i) {
        CHECK(log.visits[i] == 1 && log.worker_of[i] == 0);
    }
    pyroi_parallel_for(4, 0, 1.0, NULL, record, &log); /* nothing to do: no call at all */
}

static void test_worker_counts(void)
{
    CHECK(pyroi_parallel_workers(4, 1000000, 1000.0) == 4);
    CHECK(pyroi_parallel_workers(4, 3, 1e9) == 3);   /* never more workers than items */
    CHECK(pyroi_parallel_workers(8, 10, 10.0) == 1); /* too small to pay for a thread */
    CHECK(pyroi_parallel_workers(1, 1000000, 1e6) == 1);
    CHECK(pyroi_parallel_workers(0, 1000000, 1e6) >= 1);
    CHECK(pyroi_parallel_workers(100000, 1000000, 1e6) <= PYROI_PARALLEL_MAX_WORKERS);
}

static void test_thread_count_invariance(void)
{
    enum { N = 2, C = 48, H = 40, W = 44, K = 300, P = 7 };
    const int64_t shape[4] = {N, C, H, W};
    const int64_t strides[4] = {C * H * W, H * W, W, 1};
    const int64_t out_strides[4] = {C * P * P, P * P, P, 1};
    static const int thread_counts[] = {2, 3, 8};
    float *x = malloc(sizeof(float) * N * C * H * W);
    float *y1 = malloc(sizeof(float) * K * C * P * P), *yn = malloc(sizeof(float) * K * C * P * P);
    float *g1 = malloc(sizeof(float) * N * C * H * W), *gn = malloc(sizeof(float) * N * C * H * W);
    float boxes[K * 4];
    int64_t batch[K];
    unsigned long long seed = 99;
    pyroi_roi_align_params p;
    size_t t;
    int i;

    if (!x || !y1 || !yn || !g1 || !gn) {
        CHECK(!"allocation");
        return;
    }
    for (i = 0; i < N * C * H * W; ++i) {
        x[i] = (float)check_random(&seed) - 0.5f;
    }
    check_random_boxes(boxes, batch, K, N, &seed);
    pyroi_roi_align_params_init(&p);
    p.pooled_height = p.pooled_width = P;
    p.spatial_scale_h = p.spatial_scale_w = 0.75;
    p.sampling_ratio = 2;
    p.num_threads = 1;
    CHECK_STATUS(pyroi_roi_align_forward_f32(x, shape, strides, boxes, K, 4, batch, y1,
                                             out_strides, &p), PYROI_OK);
    CHECK_STATUS(pyroi_roi_align_backward_f32(y1, out_strides, boxes, K, 4, batch, g1, shape,
                                              strides, &p), PYROI_OK);
    for (t = 0; t < sizeof(thread_counts) / sizeof(thread_counts[0]); ++t) {
        p.num_threads = thread_counts[t];
        CHECK_STATUS(pyroi_roi_align_forward_f32(x, shape, strides, boxes, K, 4, batch, yn,
                                                 out_strides, &p), PYROI_OK);
        CHECK_STATUS(pyroi_roi_align_backward_f32(y1, out_strides, boxes, K, 4, batch, gn, shape,
                                                  strides, &p), PYROI_OK);
        CHECK(memcmp(y1, yn, sizeof(float) * K * C * P * P) == 0);
        CHECK(memcmp(g1, gn, sizeof(float) * N * C * H * W) == 0);
    }
    free(x);
    free(y1);
    free(yn);
    free(g1);
    free(gn);
}

int main(void)
{
    test_parallel_for();
    test_worker_counts();
    test_thread_count_invariance();
    return check_report("test_parallel");
}
