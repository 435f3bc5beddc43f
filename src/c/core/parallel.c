/* parallel.c - deterministic parallel-for on POSIX threads or Win32 threads.
 * Build with -DPYROI_NO_THREADS for a serial library (no thread library needed). */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* sysconf under -std=c99 */
#endif

#include "core/parallel.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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
/* Operations per chunk of a cancellable call (about a millisecond): a worker reads the cancel
 * flag at least this often, and the chunk's claim (a lock) costs nothing beside it. */
#define PYROI_CANCEL_GRAIN 1.0e6
/* Seconds between two calls of a cancel token's poll function. */
#define PYROI_POLL_INTERVAL 0.02
/* Operations above which a call with a poll function is polled by its calling thread while
 * helpers work (about one poll interval: a shorter call would not poll once, and would pay a
 * thread start, ~20-50 us, for nothing). */
#define PYROI_POLLED_WORK 2.0e7

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

void pyroi_cancel_init(pyroi_cancel *token)
{
    if (token != NULL) {
        token->requested = 0;
        token->poll = NULL;
        token->poll_context = NULL;
    }
}

/* A monotonic clock in seconds, for spacing the poll calls. */
static double now_seconds(void)
{
#if defined(PYROI_WIN32_THREADS)
    return (double)GetTickCount64() / 1000.0;
#elif defined(CLOCK_MONOTONIC)
    struct timespec time;
    if (clock_gettime(CLOCK_MONOTONIC, &time) == 0) {
        return (double)time.tv_sec + 1e-9 * (double)time.tv_nsec;
    }
    return (double)clock() / CLOCKS_PER_SEC;
#else
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}

int pyroi_cancel_check(pyroi_call_cancel *call)
{
    pyroi_cancel *token = call->token;
    if (token == NULL) {
        return 0;
    }
    if (token->poll != NULL && token->requested == 0) {
        const double now = now_seconds();
        if (now >= call->next_poll) {
            token->poll(token);
            call->next_poll = now_seconds() + PYROI_POLL_INTERVAL;
        }
    }
    return token->requested != 0;
}

/* Elements pyroi_zero_channels writes between two reads of the token (~0.1-1 ms). */
#define PYROI_ZERO_SLICE ((int64_t)1 << 20)

/* Zeroes count elements (of 2, 4 or 8 bytes: float16, float32, float64) from row,
 * element_stride apart. */
static void zero_run(char *row, size_t element_size, int64_t element_stride, int64_t count)
{
    int64_t w;
    if (element_stride == 1) {
        memset(row, 0, (size_t)count * element_size);
    } else if (element_size == sizeof(uint16_t)) { /* +0.0 in float16: all bits clear */
        for (w = 0; w < count; ++w) {
            ((uint16_t *)(void *)row)[w * element_stride] = 0;
        }
    } else if (element_size == sizeof(float)) {
        for (w = 0; w < count; ++w) {
            ((float *)row)[w * element_stride] = 0.0f;
        }
    } else {
        for (w = 0; w < count; ++w) {
            ((double *)row)[w * element_stride] = 0.0;
        }
    }
}

int pyroi_zero_channels(void *tensor, size_t element_size, const int64_t shape[4],
                        const int64_t strides[4], int64_t channel_begin, int64_t channel_end,
                        const pyroi_cancel *cancel)
{
    char *base = (char *)tensor;
    const int64_t size = (int64_t)element_size;
    int64_t n, c, h, w, since_check = 0;
    for (n = 0; n < shape[0]; ++n) {
        for (c = channel_begin; c < channel_end; ++c) {
            for (h = 0; h < shape[2]; ++h) {
                char *row = base + (n * strides[0] + c * strides[1] + h * strides[2]) * size;
                for (w = 0; w < shape[3]; w += PYROI_ZERO_SLICE) { /* a row may be huge */
                    const int64_t count =
                        shape[3] - w < PYROI_ZERO_SLICE ? shape[3] - w : PYROI_ZERO_SLICE;
                    zero_run(row + w * strides[3] * size, element_size, strides[3], count);
                    since_check += count;
                    if (since_check >= PYROI_ZERO_SLICE) {
                        since_check = 0;
                        if (pyroi_cancel_requested(cancel)) {
                            return 1;
                        }
                    }
                }
            }
        }
    }
    return 0;
}

typedef struct parallel_job {
    pyroi_range_task task;
    void *context;
    int64_t item_count;
    int64_t chunk;
    int64_t next; /* first unclaimed item, guarded by lock when threaded */
    pyroi_cancel *cancel;
    double next_poll; /* when the caller polls next (0: not yet set); the caller's alone */
#if defined(PYROI_POSIX_THREADS) || defined(PYROI_WIN32_THREADS)
    int threaded;
#  if defined(PYROI_POSIX_THREADS)
    pthread_mutex_t lock;
    pthread_cond_t finished; /* signalled as each helper ends, for a polling caller */
    int running;             /* helpers not yet ended, guarded by lock */
#  else
    CRITICAL_SECTION lock;
#  endif
#endif
} parallel_job;

typedef struct parallel_worker {
    parallel_job *job;
    int index;
    int is_caller; /* the thread that made the call: the one that may run the poll */
} parallel_worker;

/* Takes (lock nonzero) or releases the job's lock around the chunk counter; a job run on the
 * calling thread alone has none. */
static void chunk_counter_lock(parallel_job *job, int lock)
{
#if defined(PYROI_POSIX_THREADS)
    if (job->threaded) {
        (void)(lock ? pthread_mutex_lock(&job->lock) : pthread_mutex_unlock(&job->lock));
    }
#elif defined(PYROI_WIN32_THREADS)
    if (job->threaded) {
        if (lock) {
            EnterCriticalSection(&job->lock);
        } else {
            LeaveCriticalSection(&job->lock);
        }
    }
#else
    (void)job;
    (void)lock;
#endif
}

static int claim_chunk(parallel_job *job, int64_t *begin, int64_t *end)
{
    int64_t first;
    if (pyroi_cancel_requested(job->cancel)) {
        return 0;
    }
    chunk_counter_lock(job, 1);
    first = job->next;
    if (first < job->item_count) {
        job->next = job->item_count - first > job->chunk ? first + job->chunk : job->item_count;
    }
    *end = job->next;
    chunk_counter_lock(job, 0);
    *begin = first;
    return first < *end;
}

/* The calling thread, between its chunks: runs the token's poll once it is due (never after
 * the last chunk, so a call of one chunk reads no clock). */
static void poll_if_due(parallel_job *job, int64_t end)
{
    double now;
    if (job->cancel == NULL || job->cancel->poll == NULL || end >= job->item_count) {
        return;
    }
    now = now_seconds();
    if (job->next_poll == 0.0) {
        job->next_poll = now + PYROI_POLL_INTERVAL;
    } else if (now >= job->next_poll) {
        job->cancel->poll(job->cancel);
        job->next_poll = now_seconds() + PYROI_POLL_INTERVAL;
    }
}

static void run_worker(parallel_worker *worker)
{
    int64_t begin, end;
    while (claim_chunk(worker->job, &begin, &end)) {
        worker->job->task(worker->job->context, begin, end, worker->index);
        if (worker->is_caller) {
            poll_if_due(worker->job, end);
        }
    }
}

#if defined(PYROI_POSIX_THREADS)
static void *posix_worker_main(void *arg)
{
    parallel_job *job = ((parallel_worker *)arg)->job;
    run_worker((parallel_worker *)arg);
    pthread_mutex_lock(&job->lock);
    --job->running;
    pthread_cond_signal(&job->finished);
    pthread_mutex_unlock(&job->lock);
    return NULL;
}

/* The calling thread of a polled call: calls poll every PYROI_POLL_INTERVAL until the
 * helpers have ended. */
static void poll_until_finished(parallel_job *job)
{
    pthread_mutex_lock(&job->lock);
    while (job->running > 0) {
        struct timespec deadline;
        double when;
        clock_gettime(CLOCK_REALTIME, &deadline); /* pthread_cond_timedwait's clock */
        when = (double)deadline.tv_nsec + 1e9 * PYROI_POLL_INTERVAL;
        deadline.tv_sec += (time_t)(when / 1e9);
        deadline.tv_nsec = (long)(when - 1e9 * (double)(int64_t)(when / 1e9));
        if (pthread_cond_timedwait(&job->finished, &job->lock, &deadline) != 0 &&
            job->running > 0) {
            pthread_mutex_unlock(&job->lock);
            job->cancel->poll(job->cancel);
            pthread_mutex_lock(&job->lock);
        }
    }
    pthread_mutex_unlock(&job->lock);
}
#elif defined(PYROI_WIN32_THREADS)
static DWORD WINAPI win32_worker_main(LPVOID arg)
{
    run_worker((parallel_worker *)arg);
    return 0;
}

static void poll_until_finished(parallel_job *job, HANDLE *threads, int started)
{
    while (WaitForMultipleObjects((DWORD)started, threads, TRUE,
                                  (DWORD)(1000.0 * PYROI_POLL_INTERVAL)) == WAIT_TIMEOUT) {
        job->cancel->poll(job->cancel);
    }
}
#endif

#if defined(PYROI_POSIX_THREADS) || defined(PYROI_WIN32_THREADS)
/* Starts helpers and joins them. The calling thread is worker 0, or, when `polled`, only
 * calls the token's poll while the helpers (then `workers` of them) do the work: a long
 * chunk of its own would delay the poll. */
static void run_threaded(parallel_job *job, int workers, int polled)
{
#  if defined(PYROI_POSIX_THREADS)
    pthread_t threads[PYROI_MAX_THREADS];
#  else
    HANDLE threads[PYROI_MAX_THREADS];
#  endif
    parallel_worker helpers[PYROI_MAX_THREADS];
    parallel_worker caller;
    int started = 0, i;

    job->threaded = 1;
#  if defined(PYROI_POSIX_THREADS)
    pthread_mutex_init(&job->lock, NULL);
    pthread_cond_init(&job->finished, NULL);
    job->running = 0;
#  else
    InitializeCriticalSection(&job->lock);
#  endif
    for (i = polled ? 0 : 1; i < workers && i < PYROI_MAX_THREADS; ++i) {
        helpers[started].job = job;
        helpers[started].index = i;
        helpers[started].is_caller = 0;
#  if defined(PYROI_POSIX_THREADS)
        pthread_mutex_lock(&job->lock);
        ++job->running;
        pthread_mutex_unlock(&job->lock);
        if (pthread_create(&threads[started], NULL, posix_worker_main, &helpers[started]) != 0) {
            pthread_mutex_lock(&job->lock);
            --job->running;
            pthread_mutex_unlock(&job->lock);
            break;
        }
#  else
        threads[started] = CreateThread(NULL, 0, win32_worker_main, &helpers[started], 0, NULL);
        if (threads[started] == NULL) {
            break;
        }
#  endif
        ++started;
    }
    if (polled && started > 0) {
#  if defined(PYROI_POSIX_THREADS)
        poll_until_finished(job);
#  else
        poll_until_finished(job, threads, started);
#  endif
    } else {
        /* worker 0 (index 0 is free: no helper took it, or none started) */
        caller.job = job;
        caller.index = 0;
        caller.is_caller = 1;
        run_worker(&caller);
    }
    for (i = 0; i < started; ++i) {
#  if defined(PYROI_POSIX_THREADS)
        pthread_join(threads[i], NULL);
#  else
        WaitForSingleObject(threads[i], INFINITE);
        CloseHandle(threads[i]);
#  endif
    }
#  if defined(PYROI_POSIX_THREADS)
    pthread_cond_destroy(&job->finished);
    pthread_mutex_destroy(&job->lock);
#  else
    DeleteCriticalSection(&job->lock);
#  endif
}
#endif /* threads */

pyroi_status pyroi_parallel_for(int workers, int64_t item_count, double work_per_item,
                                pyroi_cancel *cancel, pyroi_range_task task, void *context)
{
    parallel_job job;
    parallel_worker caller;
    if (item_count <= 0) {
        return PYROI_OK;
    }
    if (workers <= 1 && cancel == NULL) {
        task(context, 0, item_count, 0);
        return PYROI_OK;
    }
    job.task = task;
    job.context = context;
    job.item_count = item_count;
    /* one chunk for a serial call (cut below when cancellable), else enough to balance */
    job.chunk = workers <= 1 ? item_count
                             : item_count / ((int64_t)workers * PYROI_CHUNKS_PER_WORKER);
    if (cancel != NULL && work_per_item * (double)job.chunk > PYROI_CANCEL_GRAIN) {
        job.chunk = (int64_t)(PYROI_CANCEL_GRAIN / work_per_item); /* < chunk, so fits */
    }
    if (job.chunk < 1) {
        job.chunk = 1;
    }
    job.next = 0;
    job.cancel = cancel;
    job.next_poll = 0.0;
#if defined(PYROI_POSIX_THREADS) || defined(PYROI_WIN32_THREADS)
    job.threaded = 0;
    {
        const int polled = cancel != NULL && cancel->poll != NULL &&
                           work_per_item * (double)item_count > PYROI_POLLED_WORK;
        if (workers > 1 || polled) {
            run_threaded(&job, workers, polled);
            return job.next < item_count || pyroi_cancel_requested(cancel) ? PYROI_E_CANCELLED
                                                                            : PYROI_OK;
        }
    }
#endif
    {
        caller.job = &job;
        caller.index = 0;
        caller.is_caller = 1;
        run_worker(&caller);
    }
    /* requested but every item claimed: a task may have stopped inside its items */
    return job.next < item_count || pyroi_cancel_requested(cancel) ? PYROI_E_CANCELLED
                                                                    : PYROI_OK;
}
