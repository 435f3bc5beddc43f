/* memory.c - aligned scratch and result buffers (see common.h).
 *
 * Blocks of PYROI_MAPPED_BYTES or more are mapped from the operating system (mmap, or
 * VirtualAlloc on Windows) and unmapped when freed, so their pages go back at once (but for
 * one spare block kept for the next call, within a limit: see below). malloc
 * would keep many of them: glibc raises its mmap threshold to the largest block freed (up to
 * 32 MB) and keeps freed heap blocks in its arenas, one per thread that allocated, so a
 * process that allocates blocks of varying sizes grows well past what it holds. Smaller
 * blocks, and every block where neither is available, come from malloc. */
#if !defined(_WIN32) && !defined(_DEFAULT_SOURCE)
#  define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS under -std=c99 (glibc, musl) */
#endif

#include "core/common.h"

#include <stdlib.h>

#if defined(_WIN32)
#  define WIN32_LEAN_AND_MEAN
#  include <windows.h>
#  define PYROI_MAPPED_PAGES 1
#elif defined(__unix__) || defined(__APPLE__)
#  include <sys/mman.h>
#  if defined(MAP_ANONYMOUS) || defined(MAP_ANON)
#    define PYROI_MAPPED_PAGES 1
#    ifndef MAP_ANONYMOUS
#      define MAP_ANONYMOUS MAP_ANON
#    endif
#  endif
#endif

#define PYROI_SCRATCH_ALIGNMENT 64
/* Below this, malloc's reuse of freed memory is what small blocks want. */
#define PYROI_MAPPED_BYTES ((size_t)1 << 20)

/* Every block starts with this header; the aligned pointer handed out follows it at
 * PYROI_SCRATCH_ALIGNMENT bytes (mapped blocks start on a page) or at the next multiple of it
 * after the header (malloc'd blocks), and the header's address is stored just before it. */
typedef struct block_header {
    void *block;
    size_t mapped_bytes; /* 0: the block came from malloc */
} block_header;

#define PYROI_HEADER_BYTES (sizeof(block_header) + sizeof(void *))

static void *map_pages(size_t bytes)
{
#if defined(_WIN32)
    return VirtualAlloc(NULL, bytes, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
#elif defined(PYROI_MAPPED_PAGES)
    void *pages = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return pages == MAP_FAILED ? NULL : pages;
#else
    (void)bytes;
    return NULL;
#endif
}

static void unmap_pages(void *pages, size_t bytes)
{
#if defined(_WIN32)
    (void)bytes;
    VirtualFree(pages, 0, MEM_RELEASE);
#elif defined(PYROI_MAPPED_PAGES)
    munmap(pages, bytes);
#else
    (void)pages;
    (void)bytes;
#endif
}

/* ---- the thread's open scratch keeper (common.h) ----------------------------------------- */

#if defined(PYROI_THREAD_LOCAL) && defined(PYROI_MAPPED_PAGES)
static PYROI_THREAD_LOCAL pyroi_scratch_keeper *open_keeper;
#  define HAVE_KEEPER 1
#endif

void pyroi_scratch_keep_begin(pyroi_scratch_keeper *keeper)
{
    keeper->kept = NULL;
    keeper->opened = 0;
#ifdef HAVE_KEEPER
    if (open_keeper == NULL) {
        open_keeper = keeper;
        keeper->opened = 1;
    }
#endif
}

static void spare_give(block_header *header);

void pyroi_scratch_keep_end(pyroi_scratch_keeper *keeper)
{
    if (!keeper->opened) {
        return;
    }
#ifdef HAVE_KEEPER
    open_keeper = NULL;
#endif
    if (keeper->kept != NULL) {
        spare_give((block_header *)keeper->kept);
        keeper->kept = NULL;
    }
    keeper->opened = 0;
}

/* The kept block if it holds bytes (it leaves the keeper), else NULL. */
static block_header *keeper_take(size_t bytes)
{
#ifdef HAVE_KEEPER
    pyroi_scratch_keeper *keeper = open_keeper;
    block_header *kept = keeper != NULL ? (block_header *)keeper->kept : NULL;
    if (kept != NULL && kept->mapped_bytes >= bytes) {
        keeper->kept = NULL;
        return kept;
    }
#else
    (void)bytes;
#endif
    return NULL;
}

/* ---- the process's spare scratch block (pyroi.h: pyroi_set_scratch_cache_limit) ---------
 * The largest mapped block freed outside a keeper (a call's scratch, at the call's end; or a
 * result buffer the bindings' cache lets go) stays mapped for the next block that fits, if it
 * is within the limit; the other is unmapped. The faults of fresh pages cost more
 * than the kernels filling them (measured, 64 boxes from an NCHW 2 x 256 x 200 x 272 map:
 * 722 faults a call, 9.7 -> 8.0 ms at 1 thread, 6.8 -> 4.2 ms at 2). One block, under a lock
 * shared by every calling thread. */
#define PYROI_SCRATCH_CACHE_DEFAULT ((size_t)64 << 20)

#if defined(PYROI_MAPPED_PAGES) && !defined(PYROI_NO_THREADS) && defined(_WIN32)
/* a spin lock: the critical sections are a few loads and stores, and it needs no set-up */
static volatile LONG spare_lock;
#  define SPARE_LOCK()                                                                         \
      while (InterlockedCompareExchange(&spare_lock, 1, 0) != 0) {                            \
          Sleep(0);                                                                            \
      }
#  define SPARE_UNLOCK() InterlockedExchange(&spare_lock, 0)
#  define HAVE_SPARE 1
#elif defined(PYROI_MAPPED_PAGES) && !defined(PYROI_NO_THREADS)
#  include <pthread.h>
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t spare_fork_once = PTHREAD_ONCE_INIT;
/* A fork while another thread holds the lock would leave it held in the child for good: the
 * lock is taken around every fork and released on both sides. */
static void spare_lock_for_fork(void)
{
    pthread_mutex_lock(&spare_lock);
}
static void spare_unlock_after_fork(void)
{
    pthread_mutex_unlock(&spare_lock);
}
static void spare_register_fork(void)
{
    pthread_atfork(spare_lock_for_fork, spare_unlock_after_fork, spare_unlock_after_fork);
}
#  define SPARE_LOCK()                                                                         \
      (pthread_once(&spare_fork_once, spare_register_fork), pthread_mutex_lock(&spare_lock))
#  define SPARE_UNLOCK() pthread_mutex_unlock(&spare_lock)
#  define HAVE_SPARE 1
#else /* no lock to guard it (or nothing mapped): nothing is kept */
#  define SPARE_LOCK() ((void)0)
#  define SPARE_UNLOCK() ((void)0)
#endif

static block_header *spare_block; /* the kept block, or NULL */
static size_t spare_limit = PYROI_SCRATCH_CACHE_DEFAULT;

/* The spare block if it holds bytes (it leaves the cache), else NULL. */
static block_header *spare_take(size_t bytes)
{
    block_header *taken = NULL;
    SPARE_LOCK();
    if (spare_block != NULL && spare_block->mapped_bytes >= bytes) {
        taken = spare_block;
        spare_block = NULL;
    }
    SPARE_UNLOCK();
    return taken;
}

/* Keeps a freed mapped block as the spare if it is within the limit and larger than the
 * spare; unmaps whichever is not kept (outside the lock). */
static void spare_give(block_header *header)
{
    block_header *unmapped = header;
    SPARE_LOCK();
#ifdef HAVE_SPARE
    if (header->mapped_bytes <= spare_limit &&
        (spare_block == NULL || spare_block->mapped_bytes < header->mapped_bytes)) {
        unmapped = spare_block;
        spare_block = header;
    }
#endif
    SPARE_UNLOCK();
    if (unmapped != NULL) {
        unmap_pages(unmapped->block, unmapped->mapped_bytes);
    }
}

size_t pyroi_set_scratch_cache_limit(size_t bytes)
{
    size_t previous;
    block_header *unmapped = NULL;
    SPARE_LOCK();
    previous = spare_limit;
    spare_limit = bytes;
    if (spare_block != NULL && spare_block->mapped_bytes > bytes) {
        unmapped = spare_block;
        spare_block = NULL;
    }
    SPARE_UNLOCK();
    if (unmapped != NULL) {
        unmap_pages(unmapped->block, unmapped->mapped_bytes);
    }
    return previous;
}

size_t pyroi_scratch_cache_limit(void)
{
    size_t bytes;
    SPARE_LOCK();
    bytes = spare_limit;
    SPARE_UNLOCK();
    return bytes;
}

size_t pyroi_scratch_cache_bytes(void)
{
    size_t bytes;
    SPARE_LOCK();
    bytes = spare_block != NULL ? spare_block->mapped_bytes : 0;
    SPARE_UNLOCK();
    return bytes;
}

/* A freed mapped block: kept if it is the larger (the other is unmapped), else unmapped. */
static void keeper_give(block_header *header)
{
#ifdef HAVE_KEEPER
    pyroi_scratch_keeper *keeper = open_keeper;
    if (keeper != NULL) {
        block_header *kept = (block_header *)keeper->kept;
        if (kept != NULL && kept->mapped_bytes >= header->mapped_bytes) {
            unmap_pages(header->block, header->mapped_bytes);
            return;
        }
        if (kept != NULL) {
            unmap_pages(kept->block, kept->mapped_bytes);
        }
        keeper->kept = header;
        return;
    }
#endif
    spare_give(header);
}

void *pyroi_aligned_malloc(size_t bytes)
{
    const size_t padding = PYROI_SCRATCH_ALIGNMENT + PYROI_HEADER_BYTES;
    unsigned char *block = NULL, *aligned;
    block_header *header;
    size_t mapped_bytes = 0;
    if (bytes > SIZE_MAX - padding) {
        return NULL;
    }
    if (bytes >= PYROI_MAPPED_BYTES) {
        block_header *kept = keeper_take(bytes + padding);
        if (kept == NULL) {
            kept = spare_take(bytes + padding);
        }
        if (kept != NULL) { /* its mapped_bytes stay those it was mapped with */
            block = (unsigned char *)kept->block;
            mapped_bytes = kept->mapped_bytes;
        } else {
            block = (unsigned char *)map_pages(bytes + padding);
            mapped_bytes = block != NULL ? bytes + padding : 0;
        }
    }
    if (block == NULL) {
        block = (unsigned char *)malloc(bytes + padding);
        if (block == NULL) {
            return NULL;
        }
    }
    aligned = block + PYROI_HEADER_BYTES;
    aligned += (PYROI_SCRATCH_ALIGNMENT - (uintptr_t)aligned % PYROI_SCRATCH_ALIGNMENT) %
               PYROI_SCRATCH_ALIGNMENT;
    header = (block_header *)(void *)block;
    header->block = block;
    header->mapped_bytes = mapped_bytes;
    ((block_header **)(void *)aligned)[-1] = header;
    return aligned;
}

void pyroi_aligned_free(void *pointer)
{
    block_header *header;
    if (pointer == NULL) {
        return;
    }
    header = ((block_header **)pointer)[-1];
    if (header->mapped_bytes > 0) {
        keeper_give(header);
    } else {
        free(header->block);
    }
}
