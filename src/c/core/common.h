/* common.h - internal helpers shared by every pyroi source file (not installed). */
#ifndef PYROI_COMMON_H
#define PYROI_COMMON_H

#include "pyroi.h"

#include <float.h>
#include <stddef.h>
#include <stdint.h>

/* Bit-exact results need every float and double operation rounded to its own type. Where the
 * compiler keeps intermediates wider (x87 without SSE2: 2; GCC on s390x under -std=c99: 1),
 * results would differ from the peers' in the last bits: stop here instead. CMakeLists.txt
 * adds the flags that give 0 (-msse2 -mfpmath=sse, -fexcess-precision=fast). */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#  error "pyroi needs FLT_EVAL_METHOD == 0: build with -msse2 -mfpmath=sse on 32-bit x86, -fexcess-precision=fast with GCC on s390x"
#endif

#if defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER)
#  define PYROI_RESTRICT __restrict
#else
#  define PYROI_RESTRICT
#endif

/* Hot vector loops are compiled three times on x86-64 Linux with GCC or Clang, for AVX-512,
 * AVX2 and the baseline, and each call runs the one the CPU supports (cpu.c asks the CPU
 * itself: the compilers' target_clones resolver reads a table that zig's runtime leaves
 * empty). All give identical results: lanes are independent and no multiply-add is fused
 * (-ffp-contract=off). Elsewhere: the baseline only. The AVX-512 variant is x86-64-v4
 * (AVX512F with VL, BW, DQ, CD), not plain "avx512f": without AVX512VL, 256-bit code may only
 * use 16 of the 32 vector registers, and GCC then spilled the kernels' accumulators
 * (measured: adaptive sampling 6% faster).
 *
 * PYROI_VECTOR_TASK(name) { body } defines the pyroi_range_task `name` (parameters context,
 * begin, end, worker): the body is inlined into one function per target, and `name` calls
 * the one for pyroi_cpu_vector_level() (a cached load: once per range, not per element). */
#if defined(__x86_64__) && defined(__linux__) && !defined(PYROI_NO_CLONES) && \
    ((defined(__clang__) && __clang_major__ >= 14) || (!defined(__clang__) && __GNUC__ >= 11))
#  define PYROI_HAVE_VECTOR_CLONES 1
#  include "core/cpu.h"
#  define PYROI_VECTOR_TASK_PARAMETERS void *context, int64_t begin, int64_t end, int worker
#  define PYROI_VECTOR_TASK_VARIANT(name, suffix, isa)                                         \
    __attribute__((target(isa))) static void PYROI_CAT(name, suffix)(                          \
        PYROI_VECTOR_TASK_PARAMETERS)                                                          \
    {                                                                                          \
        PYROI_CAT(name, _body)(context, begin, end, worker);                                   \
    }
#  define PYROI_VECTOR_TASK(name)                                                              \
    PYROI_CLONE_INLINE void PYROI_CAT(name, _body)(PYROI_VECTOR_TASK_PARAMETERS);               \
    PYROI_VECTOR_TASK_VARIANT(name, _x86_64_v4, "arch=x86-64-v4")                              \
    PYROI_VECTOR_TASK_VARIANT(name, _avx2, "avx2")                                             \
    static void name(PYROI_VECTOR_TASK_PARAMETERS)                                             \
    {                                                                                          \
        switch (pyroi_cpu_vector_level()) {                                                    \
        case PYROI_CPU_X86_64_V4:                                                              \
            PYROI_CAT(name, _x86_64_v4)(context, begin, end, worker);                          \
            return;                                                                            \
        case PYROI_CPU_AVX2:                                                                   \
            PYROI_CAT(name, _avx2)(context, begin, end, worker);                               \
            return;                                                                            \
        case PYROI_CPU_BASELINE:                                                               \
            break;                                                                             \
        }                                                                                      \
        PYROI_CAT(name, _body)(context, begin, end, worker);                                   \
    }                                                                                          \
    PYROI_CLONE_INLINE void PYROI_CAT(name, _body)(PYROI_VECTOR_TASK_PARAMETERS)
#else
#  define PYROI_VECTOR_TASK(name)                                                              \
    static void name(void *context, int64_t begin, int64_t end, int worker)
#endif
/* The compiler-dispatched form this replaced; a branch written against it stops here. */
#if defined(__GNUC__) || defined(__clang__)
#  define PYROI_VECTOR_CLONES \
    _Pragma("GCC error \"PYROI_VECTOR_CLONES is gone: write PYROI_VECTOR_TASK(name) { body }\"")
#endif

/* GCC and Clang vector types (vector_size): element-wise arithmetic that every target lowers
 * to its own registers. The width is the one all compiled targets handle well: 32 bytes
 * where the AVX2/AVX-512 clones exist (measured on the box head: within 5% of 64 bytes on
 * AVX-512 and twice as fast as 64 on AVX2, where wider vectors spill), else 16 (SSE2, NEON:
 * wider generic vectors are split badly there). */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(PYROI_NO_VECTOR_TYPES)
#  define PYROI_HAVE_VECTOR_TYPES 1
#  ifdef PYROI_HAVE_VECTOR_CLONES
#    define PYROI_VECTOR_BYTES 32
#  else
#    define PYROI_VECTOR_BYTES 16
#  endif
#endif

/* Kernels called from the vector clones must be inlined into each clone to be compiled for
 * its target; a kernel left out of line would run the baseline code in every clone. */
#if defined(__GNUC__) || defined(__clang__)
#  define PYROI_CLONE_INLINE static inline __attribute__((always_inline))
#else
#  define PYROI_CLONE_INLINE static inline
#endif

/* A hint to start loading memory that will be read soon; no effect on results. _L2: into the
 * level 2 cache (x86's prefetcht1), for data read after the L1 would have evicted it. */
#if defined(__GNUC__) || defined(__clang__)
#  define PYROI_PREFETCH(address) __builtin_prefetch(address)
#  define PYROI_PREFETCH_L2(address) __builtin_prefetch(address, 0, 2)
#else
#  define PYROI_PREFETCH(address) ((void)0)
#  define PYROI_PREFETCH_L2(address) ((void)0)
#endif

#define PYROI_CAT_(a, b) a##b
#define PYROI_CAT(a, b) PYROI_CAT_(a, b)

/* a * b for non-negative operands; returns 0 and leaves *out untouched on int64 overflow. */
static inline int pyroi_mul_nonneg(int64_t a, int64_t b, int64_t *out)
{
    if (a != 0 && b > INT64_MAX / a) {
        return 0;
    }
    *out = a * b;
    return 1;
}

/* Whether a (N, C, H, W) shape has no element (a call into it writes nothing). */
/* n % d, and n / d in *quotient, for 0 <= n < 2^52 and d > 0 given inverse = 1.0 / d: a
 * multiplication and one correction instead of an integer division (tens of cycles, where a
 * loop does one per element). The product is within 1 of n / d, so one step corrects it. */
static inline int64_t pyroi_divide_index(int64_t n, int64_t d, double inverse,
                                         int64_t *quotient)
{
    int64_t q = (int64_t)((double)n * inverse);
    int64_t r = n - q * d;
    if (r < 0) {
        --q;
        r += d;
    } else if (r >= d) {
        ++q;
        r -= d;
    }
    *quotient = q;
    return r;
}

static inline int pyroi_shape_is_empty(const int64_t shape[4])
{
    return shape[0] == 0 || shape[1] == 0 || shape[2] == 0 || shape[3] == 0;
}

/* a + b for non-negative operands; returns 0 on int64 overflow. */
static inline int pyroi_add_nonneg(int64_t a, int64_t b, int64_t *out)
{
    if (b > INT64_MAX - a) {
        return 0;
    }
    *out = a + b;
    return 1;
}

/* The data pointer of an input tensor, or a placeholder when the caller passed NULL for a tensor
 * without elements (allowed by the API): a forward over a map with H or W = 0 still forms plane
 * pointers before it finds that no pixel is in the map, and arithmetic on NULL is undefined. */
static inline const void *pyroi_data_or_placeholder(const void *data)
{
    static const double placeholder[1] = {0.0};
    return data != NULL ? data : (const void *)placeholder;
}

/* Reading caller memory once. C lets a compiler load memory again where the program reads it
 * once, since it may assume that no other thread writes it: it may split a loop that checks
 * an index and forms an offset from it into two loops that each load the index, or load a
 * value again instead of keeping it in a register. A caller's thread may write its arrays
 * during a call (hostile-input.md), so every index or coordinate that sizes or addresses
 * memory is read in one of two ways:
 * - one entry at a time, through pyroi_read_once_i64 / _i32 (a volatile access: exactly one
 *   load, used for the check and the address alike);
 * - a run at a time, copied into the call's own memory, then PYROI_OWN_COPY(copy), after
 *   which the compiler takes the values from the copy: the check and the offsets formed from
 *   it see the same values, whatever the caller writes meanwhile. */
static inline int64_t pyroi_read_once_i64(const int64_t *p)
{
    return *(const volatile int64_t *)p;
}
static inline int32_t pyroi_read_once_i32(const int32_t *p)
{
    return *(const volatile int32_t *)p;
}
#if defined(__GNUC__) || defined(__clang__)
/* an empty statement that may read and write the copy (and any memory) */
#  define PYROI_OWN_COPY(copy) __asm__ __volatile__("" : : "r"(copy) : "memory")
#else
/* elsewhere, a call the compiler cannot see through (validate.c: a volatile pointer to a
 * function that does nothing) */
extern void (*volatile pyroi_own_copy_fence)(void *copy);
#  define PYROI_OWN_COPY(copy) pyroi_own_copy_fence((void *)(copy))
#endif

/* Thread-local storage, where the compiler has it (else PYROI_THREAD_LOCAL is undefined and
 * its users do without). */
#if defined(_MSC_VER)
#  define PYROI_THREAD_LOCAL __declspec(thread)
#elif defined(__MINGW32__)
/* none: MinGW's GCC emulates thread-locals with a libgcc DLL, which libpyroi.dll must not
 * need */
#elif defined(__GNUC__) || defined(__clang__)
#  define PYROI_THREAD_LOCAL __thread
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#  define PYROI_THREAD_LOCAL _Thread_local
#endif

/* malloc for vector scratch and large results: the result is aligned to 64 bytes (one cache
 * line, one AVX-512 register), so a lane block never straddles two lines. Blocks of 1 MiB and
 * more are pages mapped for the block alone, returned to the OS by pyroi_aligned_free (see
 * memory.c). Also used by the Python bindings for their result buffers. */
void *pyroi_aligned_malloc(size_t bytes);
void pyroi_aligned_free(void *pointer);

/* A keeper of mapped scratch on one thread. Between pyroi_scratch_keep_begin and _end on a
 * thread, pyroi_aligned_free keeps the largest mapped block freed on that thread instead of
 * unmapping it, and pyroi_aligned_malloc hands it out again for a mapped block that fits
 * (its pages already faulted in; like any block, not zeroed); _end hands it to the process's
 * spare block (pyroi.h: pyroi_set_scratch_cache_limit). A float16
 * call's chunks (half_chunks.c) run one float32 call each: this way their scratch is mapped once
 * per call, not once per chunk. A begin while another keeper is open on the thread does
 * nothing (nor does its end). Without thread-local storage, nothing is kept. */
typedef struct pyroi_scratch_keeper {
    void *kept;  /* the kept block's header, or NULL */
    int opened;  /* this keeper is the thread's open one */
} pyroi_scratch_keeper;
void pyroi_scratch_keep_begin(pyroi_scratch_keeper *keeper);
void pyroi_scratch_keep_end(pyroi_scratch_keeper *keeper);

#endif /* PYROI_COMMON_H */
