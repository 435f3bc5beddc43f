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

/* The level the dispatch uses: the highest one this CPU and its OS support (the OS must save
 * the wider registers on a context switch: xgetbv), lowered to the cap that the environment
 * variable PYROI_MAX_VECTOR_ISA names ("baseline", "avx2", "x86-64-v4", the names of
 * pyroi_vector_isa(); any case) if it is set and not empty. A cap can only lower the level.
 * A value that is none of the names caps at the baseline (a typo must not leave the level it
 * meant to avoid running) and pyroi_cpu_cap_unknown() then says so. Detected, with the
 * variable read, on the first call of any function here; thread-safe. */
pyroi_cpu_level pyroi_cpu_vector_level(void);

/* 1 if PYROI_MAX_VECTOR_ISA held a value that is none of the names above, else 0. */
int pyroi_cpu_cap_unknown(void);

/* 1 if the float16 conversion instructions (F16C) may run: the CPU has them and the vector
 * level (after the cap) is at least PYROI_CPU_AVX2; else 0. */
int pyroi_cpu_has_f16c(void);

/* Size in bytes of one core's level 1 data cache and level 2 cache, and of the level 3 cache
 * the core shares with others (the whole of it, as the CPU reports it), 0 where unknown
 * (detected from cpuid on x86; 0 elsewhere). For tuning block sizes at run time. */
int64_t pyroi_cpu_l1d_bytes(void);
int64_t pyroi_cpu_l2_bytes(void);
int64_t pyroi_cpu_l3_bytes(void);

#endif /* PYROI_CPU_H */
