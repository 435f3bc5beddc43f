/* The CPU detection (cpu.c) against what the OS says: on x86-64 Linux the vector level the
 * dispatch picks is the one /proc/cpuinfo's flags allow (the kernel lists AVX only where it
 * saves the registers), lowered to PYROI_MAX_VECTOR_ISA's cap; pyroi_vector_isa() names it,
 * and the cache sizes are glibc's. Run as `test_cpu [CAP]`: the program sets the variable to
 * CAP (or removes it) before the first query, so ctest runs it capped and uncapped. */
#if defined(__linux__)
#  define _GNU_SOURCE /* sysconf's cache queries, setenv */
#endif
#include "check.h"
#include "core/cpu.h"
#include "pyroi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#  include <unistd.h>
#endif

/* The highest level the test expects: PYROI_MAX_VECTOR_ISA's cap, set by main. */
static pyroi_cpu_level cap = PYROI_CPU_X86_64_V4;

#if defined(__x86_64__) && defined(__linux__)
/* Whether the "flags" line of /proc/cpuinfo lists every one of the space-separated names. */
static int cpuinfo_has_all(const char *names)
{
    static char line[8192];
    char padded[8192 + 2], name[64];
    FILE *file = fopen("/proc/cpuinfo", "r");
    int found = 0;
    if (file == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), file) != NULL) {
        if (strncmp(line, "flags", 5) == 0) {
            found = 1;
            break;
        }
    }
    fclose(file);
    if (!found) {
        return -1;
    }
    line[strcspn(line, "\n")] = '\0';
    sprintf(padded, "%s ", strchr(line, ':') + 1); /* every flag then has a space each side */
    while (sscanf(names, "%63s", name) == 1) {
        char pattern[68];
        sprintf(pattern, " %s ", name);
        if (strstr(padded, pattern) == NULL) {
            return 0;
        }
        names = strstr(names, name) + strlen(name);
    }
    return 1;
}

static pyroi_cpu_level capped(pyroi_cpu_level level)
{
    return level < cap ? level : cap;
}

static void test_level_is_the_one_linux_reports(void)
{
    /* (pni: SSE3, abm: LZCNT) */
    const int avx2 = cpuinfo_has_all("pni ssse3 sse4_1 sse4_2 popcnt avx avx2");
    const int v4 = avx2 == 1 ? cpuinfo_has_all("fma cx16 movbe f16c bmi1 bmi2 abm lahf_lm "
                                               "avx512f avx512vl avx512bw avx512dq avx512cd")
                             : avx2;
    CHECK(v4 >= 0 && avx2 >= 0);
    if (v4 == 1) {
        CHECK(pyroi_cpu_vector_level() == capped(PYROI_CPU_X86_64_V4));
    } else if (avx2 == 1) {
        CHECK(pyroi_cpu_vector_level() == capped(PYROI_CPU_AVX2));
    } else {
        CHECK(pyroi_cpu_vector_level() == PYROI_CPU_BASELINE);
    }
}
#endif

/* pyroi_vector_isa() names the level the vector tasks dispatch on. */
static void test_vector_isa_names_the_level(void)
{
    static const char *const names[] = {"baseline", "avx2", "x86-64-v4"};
    const char *isa = pyroi_vector_isa();
    const pyroi_cpu_level level = pyroi_cpu_vector_level();
    CHECK(level >= PYROI_CPU_BASELINE && level <= cap);
    CHECK(pyroi_cpu_vector_level() == level); /* the cached answer is the first one */
    if (strcmp(isa, "baseline-only build") != 0 && !pyroi_cpu_cap_unknown()) {
        CHECK(strcmp(isa, names[level]) == 0);
    }
#if !(defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86))
    CHECK(level == PYROI_CPU_BASELINE);
#endif
}

static void test_cache_sizes(void)
{
    const int64_t l1d = pyroi_cpu_l1d_bytes(), l2 = pyroi_cpu_l2_bytes();
    const int64_t l3 = pyroi_cpu_l3_bytes();
    printf("CPU: vector level %d (%s), L1d %lld bytes, L2 %lld bytes, L3 %lld bytes\n",
           (int)pyroi_cpu_vector_level(), pyroi_vector_isa(), (long long)l1d, (long long)l2,
           (long long)l3);
    CHECK(l1d == 0 || (l1d >= 4096 && l1d <= (1 << 20)));
    CHECK(l2 == 0 || (l2 >= l1d && l2 <= (1 << 30)));
    CHECK(l3 == 0 || (l3 >= (1 << 20) && l3 <= ((int64_t)1 << 34)));
    CHECK(pyroi_cpu_l1d_bytes() == l1d && pyroi_cpu_l2_bytes() == l2 &&
          pyroi_cpu_l3_bytes() == l3);
    /* the public query answers what the kernels read */
    CHECK(pyroi_cache_bytes(1) == l1d && pyroi_cache_bytes(2) == l2 &&
          pyroi_cache_bytes(3) == l3);
    CHECK(pyroi_cache_bytes(0) == 0 && pyroi_cache_bytes(4) == 0);
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
    CHECK(l1d > 0 && l2 > 0); /* every x86 CPU of this century reports them */
#endif
#if defined(__linux__) && defined(__GLIBC__) && defined(_SC_LEVEL1_DCACHE_SIZE) && \
    (defined(__x86_64__) || defined(__i386__))
    /* glibc reads the same cpuid leaves on x86 (elsewhere it often knows nothing) */
    if (sysconf(_SC_LEVEL1_DCACHE_SIZE) > 0) {
        CHECK(l1d == sysconf(_SC_LEVEL1_DCACHE_SIZE));
    }
    if (sysconf(_SC_LEVEL2_CACHE_SIZE) > 0) {
        CHECK(l2 == sysconf(_SC_LEVEL2_CACHE_SIZE));
    }
    /* (not L3: glibc's figure for AMD's is not the cache's size -- 320 MB for a 32 MB one) */
#endif
}

/* A cap that names no level: the baseline, and pyroi_vector_isa() says why. */
static void test_unknown_cap(void)
{
    const char *isa = pyroi_vector_isa();
    CHECK(pyroi_cpu_cap_unknown() == 1);
    CHECK(pyroi_cpu_vector_level() == PYROI_CPU_BASELINE);
    if (strcmp(isa, "baseline-only build") != 0) {
        CHECK(strncmp(isa, "baseline (PYROI_MAX_VECTOR_ISA not understood", 45) == 0);
    }
}

/* PYROI_MAX_VECTOR_ISA set to `value` (NULL: removed) before the library's first query. */
static void set_cap_variable(const char *value)
{
#ifdef _WIN32
    static char assignment[64];
    sprintf(assignment, "PYROI_MAX_VECTOR_ISA=%.40s", value != NULL ? value : "");
    CHECK(_putenv(assignment) == 0);
#else
    CHECK((value != NULL ? setenv("PYROI_MAX_VECTOR_ISA", value, 1)
                         : unsetenv("PYROI_MAX_VECTOR_ISA")) == 0);
#endif
}

/* test_cpu [CAP LEVEL]: PYROI_MAX_VECTOR_ISA=CAP caps the level at LEVEL (0 baseline, 1 avx2,
 * 2 x86-64-v4, or "unknown": CAP names no level). */
int main(int argc, char **argv)
{
    const int unknown = argc > 2 && strcmp(argv[2], "unknown") == 0;
    set_cap_variable(argc > 2 ? argv[1] : NULL);
    if (argc > 2) {
        cap = unknown ? PYROI_CPU_BASELINE : (pyroi_cpu_level)atoi(argv[2]);
    }
    CHECK(pyroi_cpu_cap_unknown() == unknown);
    if (unknown) {
        test_unknown_cap();
    }
#if defined(__x86_64__) && defined(__linux__)
    test_level_is_the_one_linux_reports();
#endif
    test_vector_isa_names_the_level();
    test_cache_sizes();
    return check_report("cpu");
}
