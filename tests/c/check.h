/* check.h - a minimal test harness for the C tests (no dependencies). */
#ifndef PYROI_TEST_CHECK_H
#define PYROI_TEST_CHECK_H

#include <math.h>
#include <stdio.h>

static int check_failures = 0;
static int check_count = 0;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        ++check_count;                                                                \
        if (!(cond)) {                                                                \
            ++check_failures;                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                             \
    } while (0)

#define CHECK_STATUS(call, expected)                                                  \
    do {                                                                              \
        pyroi_status check_status_ = (call);                                          \
        ++check_count;                                                                \
        if (check_status_ != (expected)) {                                            \
            ++check_failures;                                                         \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %s\n", __FILE__,    \
                    __LINE__, #call, (int)check_status_,                              \
                    pyroi_status_string(check_status_), #expected);                   \
        }                                                                             \
    } while (0)

#define CHECK_CLOSE(actual, expected, tol)                                            \
    do {                                                                              \
        double check_a_ = (double)(actual), check_e_ = (double)(expected);            \
        ++check_count;                                                                \
        if (!(fabs(check_a_ - check_e_) <= (tol) * (1.0 + fabs(check_e_)))) {         \
            ++check_failures;                                                         \
            fprintf(stderr, "%s:%d: %s = %.9g, expected %.9g\n", __FILE__, __LINE__,  \
                    #actual, check_a_, check_e_);                                     \
        }                                                                             \
    } while (0)

static int check_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures == 0 ? 0 : 1;
}

/* Deterministic pseudo-random numbers in [0, 1) (64-bit LCG, high bits). */
static double check_random(unsigned long long *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*state >> 11) / 9007199254740992.0;
}

#endif
