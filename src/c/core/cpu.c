/* cpu.c - see cpu.h. The feature bits are those of the Intel SDM / AMD APM cpuid tables. */
#include "core/cpu.h"

#include <ctype.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#  define PYROI_CPU_X86 1
#  if defined(_MSC_VER) && !defined(__clang__)
#    define PYROI_CPU_MSVC 1
#    include <immintrin.h>
#    include <intrin.h>
#  else
#    include <cpuid.h>
#  endif
#endif

enum { DETECTED_LEVEL, DETECTED_L1D, DETECTED_L2, DETECTED_L3, DETECTED_CAP_UNKNOWN,
       DETECTED_F16C, DETECTED_COUNT };

#ifdef PYROI_CPU_X86
/* Leaf 1, ECX */
#  define SSE3 (1u << 0)
#  define SSSE3 (1u << 9)
#  define FMA (1u << 12)
#  define CMPXCHG16B (1u << 13)
#  define SSE4_1 (1u << 19)
#  define SSE4_2 (1u << 20)
#  define MOVBE (1u << 22)
#  define POPCNT (1u << 23)
#  define OSXSAVE (1u << 27)
#  define AVX (1u << 28)
#  define F16C (1u << 29)
/* Leaf 7 subleaf 0, EBX */
#  define BMI1 (1u << 3)
#  define AVX2 (1u << 5)
#  define BMI2 (1u << 8)
#  define AVX512F (1u << 16)
#  define AVX512DQ (1u << 17)
#  define AVX512CD (1u << 28)
#  define AVX512BW (1u << 30)
#  define AVX512VL (1u << 31)
/* Leaf 0x80000001, ECX */
#  define LAHF_SAHF (1u << 0)
#  define LZCNT (1u << 5)
/* XCR0: the register state the OS saves. XMM and YMM; AVX-512's opmask, ZMM0-15 upper
 * halves and ZMM16-31. */
#  define XCR0_YMM 0x6u
#  define XCR0_ZMM 0xE6u

/* r = eax, ebx, ecx, edx of cpuid(leaf, subleaf). */
static void cpuid(uint32_t leaf, uint32_t subleaf, uint32_t r[4])
{
#  ifdef PYROI_CPU_MSVC
    int v[4];
    __cpuidex(v, (int)leaf, (int)subleaf);
    r[0] = (uint32_t)v[0];
    r[1] = (uint32_t)v[1];
    r[2] = (uint32_t)v[2];
    r[3] = (uint32_t)v[3];
#  else
    unsigned int a, b, c, d;
    __cpuid_count(leaf, subleaf, a, b, c, d);
    r[0] = a;
    r[1] = b;
    r[2] = c;
    r[3] = d;
#  endif
}

/* XCR0 (xgetbv 0); call only where cpuid reports OSXSAVE. Inline assembly rather than the
 * _xgetbv intrinsic, which GCC and clang offer only in code compiled for XSAVE. */
static uint32_t xcr0(void)
{
#  ifdef PYROI_CPU_MSVC
    return (uint32_t)_xgetbv(0);
#  else
    uint32_t eax, edx;
    __asm__ __volatile__("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    (void)edx;
    return eax;
#  endif
}

static int has_all(uint32_t bits, uint32_t wanted)
{
    return (bits & wanted) == wanted;
}

/* The level of common.h's clones this CPU runs: each may use every instruction its target
 * (GCC's "avx2", "arch=x86-64-v4") enables, so every feature of the target is checked. */
static int detect_level(uint32_t max_leaf, uint32_t max_extended_leaf)
{
    uint32_t r[4], leaf1_ecx, leaf7_ebx = 0, extended_ecx = 0, xcr;
    if (max_leaf < 1) {
        return PYROI_CPU_BASELINE;
    }
    cpuid(1, 0, r);
    leaf1_ecx = r[2];
    if (max_leaf >= 7) {
        cpuid(7, 0, r);
        leaf7_ebx = r[1];
    }
    if (max_extended_leaf >= 0x80000001u) {
        cpuid(0x80000001u, 0, r);
        extended_ecx = r[2];
    }
    if (!has_all(leaf1_ecx, SSE3 | SSSE3 | SSE4_1 | SSE4_2 | POPCNT | OSXSAVE | AVX) ||
        !has_all(leaf7_ebx, AVX2)) {
        return PYROI_CPU_BASELINE;
    }
    xcr = xcr0();
    if (!has_all(xcr, XCR0_YMM)) {
        return PYROI_CPU_BASELINE;
    }
    if (!has_all(leaf1_ecx, FMA | CMPXCHG16B | MOVBE | F16C) ||
        !has_all(leaf7_ebx,
                 BMI1 | BMI2 | AVX512F | AVX512DQ | AVX512CD | AVX512BW | AVX512VL) ||
        !has_all(extended_ecx, LAHF_SAHF | LZCNT) || !has_all(xcr, XCR0_ZMM)) {
        return PYROI_CPU_AVX2;
    }
    return PYROI_CPU_X86_64_V4;
}

/* Level 1 data, level 2 and level 3 sizes from the deterministic cache parameters: leaf 4
 * (Intel) or 0x8000001D (AMD), one subleaf per cache, same layout. Leaves sizes[] alone where
 * not found. */
static void cache_sizes_from_leaf(uint32_t leaf, int64_t sizes[3])
{
    uint32_t subleaf, r[4];
    for (subleaf = 0; subleaf < 16; ++subleaf) {
        uint32_t type, level;
        cpuid(leaf, subleaf, r);
        type = r[0] & 0x1Fu; /* 0 none (the end), 1 data, 2 instruction, 3 unified */
        level = (r[0] >> 5) & 0x7u;
        if (type == 0) {
            break;
        }
        if ((type == 1 || type == 3) && level >= 1 && level <= 3 && sizes[level - 1] == 0) {
            const int64_t ways = ((r[1] >> 22) & 0x3FFu) + 1;
            const int64_t partitions = ((r[1] >> 12) & 0x3FFu) + 1;
            const int64_t line = (r[1] & 0xFFFu) + 1, sets = (int64_t)r[2] + 1;
            sizes[level - 1] = ways * partitions * line * sets;
        }
    }
}

static void detect_cpu(int64_t detected[DETECTED_COUNT])
{
    uint32_t r[4], max_leaf, max_extended_leaf;
    int64_t sizes[3] = {0, 0, 0};
    cpuid(0, 0, r);
    max_leaf = r[0];
    cpuid(0x80000000u, 0, r);
    max_extended_leaf = r[0] >= 0x80000000u ? r[0] : 0;
    detected[DETECTED_LEVEL] = detect_level(max_leaf, max_extended_leaf);
    /* F16C (VEX-encoded: the AVX2 level's YMM state check covers it) */
    detected[DETECTED_F16C] = 0;
    if (detected[DETECTED_LEVEL] >= PYROI_CPU_AVX2) {
        cpuid(1, 0, r);
        detected[DETECTED_F16C] = has_all(r[2], F16C);
    }
    if (max_leaf >= 4) {
        cache_sizes_from_leaf(4, sizes);
    }
    if (sizes[0] == 0 && sizes[1] == 0 && max_extended_leaf >= 0x8000001Du) {
        cache_sizes_from_leaf(0x8000001Du, sizes);
    }
    /* Older AMD CPUs: L1d KiB in 0x80000005 ECX[31:24], L2 KiB in 0x80000006 ECX[31:16]
     * (the latter also on Intel), L3 in 512 KiB units in 0x80000006 EDX[31:18] (AMD). */
    if (sizes[0] == 0 && max_extended_leaf >= 0x80000005u) {
        cpuid(0x80000005u, 0, r);
        sizes[0] = (int64_t)(r[2] >> 24) * 1024;
    }
    if (sizes[1] == 0 && max_extended_leaf >= 0x80000006u) {
        cpuid(0x80000006u, 0, r);
        sizes[1] = (int64_t)(r[2] >> 16) * 1024;
    }
    if (sizes[2] == 0 && max_extended_leaf >= 0x80000006u) {
        cpuid(0x80000006u, 0, r);
        sizes[2] = (int64_t)(r[3] >> 18) * 512 * 1024;
    }
    detected[DETECTED_L1D] = sizes[0];
    detected[DETECTED_L2] = sizes[1];
    detected[DETECTED_L3] = sizes[2];
}
#else
static void detect_cpu(int64_t detected[DETECTED_COUNT])
{
    detected[DETECTED_LEVEL] = PYROI_CPU_BASELINE;
    detected[DETECTED_F16C] = 0;
    detected[DETECTED_L1D] = 0;
    detected[DETECTED_L2] = 0;
    detected[DETECTED_L3] = 0;
}
#endif

/* Whether `text` is `name`, ignoring the case of ASCII letters. */
static int same_name(const char *text, const char *name)
{
    while (*name != '\0' && tolower((unsigned char)*text) == *name) {
        ++text;
        ++name;
    }
    return *text == '\0' && *name == '\0';
}

/* The CPU's values, the level lowered to PYROI_MAX_VECTOR_ISA's cap (cpu.h). */
static void detect(int64_t detected[DETECTED_COUNT])
{
    static const char *const names[] = {"baseline", "avx2", "x86-64-v4"};
    const char *cap = getenv("PYROI_MAX_VECTOR_ISA");
    detect_cpu(detected);
    detected[DETECTED_CAP_UNKNOWN] = 0;
    if (cap != NULL && cap[0] != '\0') {
        int64_t level = PYROI_CPU_X86_64_V4;
        while (level > PYROI_CPU_BASELINE && !same_name(cap, names[level])) {
            --level;
        }
        detected[DETECTED_CAP_UNKNOWN] = level == PYROI_CPU_BASELINE && !same_name(cap, names[0]);
        if (detected[DETECTED_LEVEL] > level) {
            detected[DETECTED_LEVEL] = level;
        }
        if (level < PYROI_CPU_AVX2) { /* a baseline cap runs baseline code only */
            detected[DETECTED_F16C] = 0;
        }
    }
}

/* What detect() found, plus 1 (0: not asked yet), in an int: loads and stores of it are
 * atomic on every target without a library (cache sizes are capped at 1 GiB). Each value is
 * stored and read on its own, so threads that ask first at the same time store the same. */
static int cached[DETECTED_COUNT];

#if defined(__GNUC__) || defined(__clang__)
#  define CACHED_LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#  define CACHED_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#elif defined(PYROI_CPU_MSVC)
#  define CACHED_LOAD(p) _InterlockedOr((volatile long *)(p), 0)
#  define CACHED_STORE(p, v) ((void)_InterlockedExchange((volatile long *)(p), (long)(v)))
#else
#  define CACHED_LOAD(p) (*(volatile int *)(p))
#  define CACHED_STORE(p, v) ((void)(*(volatile int *)(p) = (v)))
#endif

static int64_t detected_value(int which)
{
    int value = CACHED_LOAD(&cached[which]);
    if (value == 0) {
        int64_t detected[DETECTED_COUNT];
        int i;
        detect(detected);
        for (i = 0; i < DETECTED_COUNT; ++i) {
            const int64_t capped = detected[i] < (1 << 30) ? detected[i] : (1 << 30);
            CACHED_STORE(&cached[i], (int)capped + 1);
        }
        value = CACHED_LOAD(&cached[which]);
    }
    return value - 1;
}

pyroi_cpu_level pyroi_cpu_vector_level(void)
{
    return (pyroi_cpu_level)detected_value(DETECTED_LEVEL);
}

int pyroi_cpu_cap_unknown(void)
{
    return (int)detected_value(DETECTED_CAP_UNKNOWN);
}

int64_t pyroi_cpu_l1d_bytes(void)
{
    return detected_value(DETECTED_L1D);
}

int64_t pyroi_cpu_l2_bytes(void)
{
    return detected_value(DETECTED_L2);
}

int64_t pyroi_cpu_l3_bytes(void)
{
    return detected_value(DETECTED_L3);
}

int pyroi_cpu_has_f16c(void)
{
    return (int)detected_value(DETECTED_F16C);
}
