/* common.h - internal helpers shared by every pyroi source file (not installed). */
#ifndef PYROI_COMMON_H
#define PYROI_COMMON_H

#include "pyroi.h"

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER)
#  define PYROI_RESTRICT __restrict
#else
#  define PYROI_RESTRICT
#endif

/* Hot vector loops are compiled three times on x86-64 Linux with GCC or Clang, for AVX-512,
 * AVX2 and the baseline, and the loader picks one (an ifunc). All give identical results:
 * lanes are independent and no multiply-add is fused (-ffp-contract=off). Elsewhere: the
 * baseline only. The AVX-512 clone is x86-64-v4 (AVX512F with VL, BW, DQ, CD), not plain
 * "avx512f": without AVX512VL, 256-bit code may only use 16 of the 32 vector registers, and
 * GCC then spilled the kernels' accumulators (measured: adaptive sampling 6% faster). */
#if defined(__x86_64__) && defined(__linux__) && !defined(PYROI_NO_CLONES) && \
    ((defined(__GNUC__) && __GNUC__ >= 6) || (defined(__clang__) && __clang_major__ >= 14))
#  define PYROI_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#  define PYROI_HAVE_VECTOR_CLONES 1
#else
#  define PYROI_VECTOR_CLONES
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

/* A hint to start loading memory that will be read soon; no effect on results. */
#if defined(__GNUC__) || defined(__clang__)
#  define PYROI_PREFETCH(address) __builtin_prefetch(address)
#else
#  define PYROI_PREFETCH(address) ((void)0)
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

/* malloc for vector scratch and large results: the result is aligned to 64 bytes (one cache
 * line, one AVX-512 register), so a lane block never straddles two lines. Blocks of 1 MiB and
 * more are pages mapped for the block alone, returned to the OS by pyroi_aligned_free (see
 * memory.c). Also used by the Python bindings for their result buffers. */
void *pyroi_aligned_malloc(size_t bytes);
void pyroi_aligned_free(void *pointer);

#endif /* PYROI_COMMON_H */
