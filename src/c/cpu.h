/* cpu.h - what the CPU running pyroi offers: the vector level the dispatch picks (common.h's
 * PYROI_VECTOR_TASK, transpose.c, pyroi_vector_isa) and the data cache sizes. pyroi asks the
 * CPU itself (cpuid, xgetbv) rather than the compiler runtime: GCC's and clang's
 * __builtin_cpu_supports read a table that the runtime fills, and some runtimes (zig's
 * compiler_rt) leave it empty, which ran the baseline code on every CPU. */
#ifndef PYROI_CPU_H
#define PYROI_CPU_H

#include <stdint.h>

/* Vector code levels, each a superset of the one before. */
typedef enum pyroi_cpu_level {
    PYROI_CPU_BASELINE = 0,  /* x86-64 (SSE2), or any CPU that is not x86 */
    PYROI_CPU_AVX2 = 1,      /* AVX and AVX2 (and SSE3 to SSE4.2, POPCNT), YMM state enabled */
    PYROI_CPU_X86_64_V4 = 2  /* x86-64-v4: AVX2 level + the rest of x86-64-v3 + AVX512F, VL, BW,
                                DQ, CD, ZMM state enabled */
} pyroi_cpu_level;

/* The highest level this CPU and its OS support (the OS must save the wider registers on a
 * context switch: xgetbv). Detected on the first call, thread-safe. */
pyroi_cpu_level pyroi_cpu_vector_level(void);

/* Size in bytes of one core's level 1 data cache and level 2 cache, 0 where unknown
 * (detected from cpuid on x86; 0 elsewhere). For tuning block sizes at run time. */
int64_t pyroi_cpu_l1d_bytes(void);
int64_t pyroi_cpu_l2_bytes(void);

#endif /* PYROI_CPU_H */
