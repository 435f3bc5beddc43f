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

/* Fills v[0 .. count) with pseudo-random values uniform in [lo, hi). */
static void check_random_fill(double *v, long count, double lo, double hi,
                              unsigned long long *state)
{
    long i;

    for (i = 0; i < count; ++i) {
        v[i] = lo + (hi - lo) * check_random(state);
    }
}

/* The adjoint identity of a linear forward y = A x and its backward gx = A^T gy:
 * <y, gy> == <x, gx> to rounding, relative to sum |y * gy|, which must not be 0 (else the
 * identity holds vacuously). A macro, so that a failure names the caller's line. */
static void check_adjoint_sums(const double *y, const double *gy, long n_out, const double *x,
                               const double *gx, long n_in, double sums[3])
{
    long i;

    sums[0] = sums[1] = sums[2] = 0;
    for (i = 0; i < n_out; ++i) {
        sums[0] += y[i] * gy[i];
        sums[2] += fabs(y[i] * gy[i]);
    }
    for (i = 0; i < n_in; ++i) {
        sums[1] += x[i] * gx[i];
    }
}

#define CHECK_ADJOINT(y, gy, n_out, x, gx, n_in)                                      \
    do {                                                                              \
        double check_sums_[3];                                                        \
        check_adjoint_sums((y), (gy), (n_out), (x), (gx), (n_in), check_sums_);       \
        CHECK(check_sums_[2] > 0);                                                    \
        CHECK(fabs(check_sums_[0] - check_sums_[1]) <= 1e-12 * (1 + check_sums_[2])); \
    } while (0)

#endif
