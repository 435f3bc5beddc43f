/* parallel.c - deterministic parallel-for on POSIX threads or Win32 threads.
 * Build with -DPYROI_NO_THREADS for a serial library (no thread library needed). */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* sysconf under -std=c99 */
#endif

#include "parallel.h"

#include <stdlib.h>

#if defined(PYROI_NO_THREADS)
#elif defined(_WIN32)
#  define WIN32_LEAN_AND_MEAN
#  include <windows.h>
#  define PYROI_WIN32_THREADS 1
#else
#  include <pthread.h>
#  include <unistd.h>
#  define PYROI_POSIX_THREADS 1
#endif

/* Elementary operations (a bilinear tap times a channel, say) below which starting one more
 * thread costs more than it saves: thread start + join is ~10-30 us, ~1 ns per operation. */
#define PYROI_WORK_PER_THREAD 200000.0
/* Chunks per worker: enough to even out RoIs of different sizes, few enough to keep the
 * shared counter cold. */
#define PYROI_CHUNKS_PER_WORKER 8
#define PYROI_MAX_THREADS PYROI_PARALLEL_MAX_WORKERS

static int online_processors(void)
{
#if defined(PYROI_WIN32_THREADS)
    SYSTEM_INFO info;
    GetSystemInfo(&info);
    return (int)info.dwNumberOfProcessors;
#elif defined(PYROI_POSIX_THREADS) && defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n < PYROI_MAX_THREADS ? n : PYROI_MAX_THREADS) : 1;
#else
    return 1;
#endif
}

int pyroi_parallel_workers(int num_threads, int64_t item_count, double work_per_item)
{
    double affordable;
    int workers = num_threads > 0 ? num_threads : online_processors();
#if defined(PYROI_NO_THREADS)
    workers = 1;
#endif
    if (workers > PYROI_MAX_THREADS) {
        workers = PYROI_MAX_THREADS;
    }
    if ((int64_t)workers > item_count) {
        workers = item_count > 0 ? (int)item_count : 1;
    }
    affordable = (double)item_count * work_per_item / PYROI_WORK_PER_THREAD;
    if (affordable < (double)workers) {
        workers = affordable < 1.0 ? 1 : (int)affordable;
    }
    return workers;
}

#if defined(PYROI_POSIX_THREADS) || defined(PYROI_WIN32_THREADS)

typedef struct parallel_job {
    pyroi_range_task task;
    void *context;
    int64_t item_count;
    int64_t chunk;
    int64_t next; /* first unclaimed item, guarded by lock */
#if defined(PYROI_POSIX_THREADS)
    pthread_mutex_t lock;
#elif defined(PYROI_WIN32_THREADS)
    CRITICAL_SECTION lock;
#endif
} parallel_job;

typedef struct parallel_worker {
    parallel_job *job;
    int index;
} parallel_worker;

static int claim_chunk(parallel_job *job, int64_t *begin, int64_t *end)
{
    int64_t first;
#if defined(PYROI_POSIX_THREADS)
    pthread_mutex_lock(&job->lock);
#elif defined(PYROI_WIN32_THREADS)
    EnterCriticalSection(&job->lock);
#endif
    first = job->next;
    if (first < job->item_count) {
        job->next = job->item_count - first > job->chunk ? first + job->chunk : job->item_count;
    }
    *end = job->next;
#if defined(PYROI_POSIX_THREADS)
    pthread_mutex_unlock(&job->lock);
#elif defined(PYROI_WIN32_THREADS)
    LeaveCriticalSection(&job->lock);
#endif
    *begin = first;
    return first < *end;
}

static void run_worker(parallel_worker *worker)
{
    int64_t begin, end;
    while (claim_chunk(worker->job, &begin, &end)) {
        worker->job->task(worker->job->context, begin, end, worker->index);
    }
}

#if defined(PYROI_POSIX_THREADS)
static void *posix_worker_main(void *arg)
{
    run_worker((parallel_worker *)arg);
    return NULL;
}
#elif defined(PYROI_WIN32_THREADS)
static DWORD WINAPI win32_worker_main(LPVOID arg)
{
    run_worker((parallel_worker *)arg);
    return 0;
}
#endif

static void run_threaded(int workers, int64_t item_count, pyroi_range_task task, void *context)
{
    parallel_job job;
    parallel_worker caller;
    int started = 0;

    job.task = task;
    job.context = context;
    job.item_count = item_count;
    job.chunk = item_count / ((int64_t)workers * PYROI_CHUNKS_PER_WORKER);
    if (job.chunk < 1) {
        job.chunk = 1;
    }
    job.next = 0;
    caller.job = &job;
    caller.index = 0;
    {
#if defined(PYROI_POSIX_THREADS)
        pthread_t threads[PYROI_MAX_THREADS];
#elif defined(PYROI_WIN32_THREADS)
        HANDLE threads[PYROI_MAX_THREADS];
#endif
        parallel_worker helpers[PYROI_MAX_THREADS];
        int i;
#if defined(PYROI_POSIX_THREADS)
        pthread_mutex_init(&job.lock, NULL);
#elif defined(PYROI_WIN32_THREADS)
        InitializeCriticalSection(&job.lock);
#endif
        for (i = 1; i < workers && i < PYROI_MAX_THREADS; ++i) {
            helpers[started].job = &job;
            helpers[started].index = i;
#if defined(PYROI_POSIX_THREADS)
            if (pthread_create(&threads[started], NULL, posix_worker_main, &helpers[started]) != 0) {
                break;
            }
#elif defined(PYROI_WIN32_THREADS)
            threads[started] = CreateThread(NULL, 0, win32_worker_main, &helpers[started], 0, NULL);
            if (threads[started] == NULL) {
                break;
            }
#endif
            ++started;
        }
        run_worker(&caller);
        for (i = 0; i < started; ++i) {
#if defined(PYROI_POSIX_THREADS)
            pthread_join(threads[i], NULL);
#elif defined(PYROI_WIN32_THREADS)
            WaitForSingleObject(threads[i], INFINITE);
            CloseHandle(threads[i]);
#endif
        }
#if defined(PYROI_POSIX_THREADS)
        pthread_mutex_destroy(&job.lock);
#elif defined(PYROI_WIN32_THREADS)
        DeleteCriticalSection(&job.lock);
#endif
    }
}

#endif /* threads */

void pyroi_parallel_for(int workers, int64_t item_count, pyroi_range_task task, void *context)
{
    if (item_count <= 0) {
        return;
    }
#if defined(PYROI_POSIX_THREADS) || defined(PYROI_WIN32_THREADS)
    if (workers > 1) {
        run_threaded(workers, item_count, task, context);
        return;
    }
#endif
    (void)workers;
    task(context, 0, item_count, 0);
}
