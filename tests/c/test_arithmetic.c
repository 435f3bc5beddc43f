/* test_arithmetic.c - the integer helpers of common.h that hot loops use instead of the
 * operators they stand for: each must agree with the operator exactly. */
#include "check.h"
#include "core/common.h"

#include <stdint.h>

/* pyroi_divide_index against / and % : every small case, the ends of its range, and
 * divisors of a grid (a sample index divided by the grid's width). */
static void test_divide_index(void)
{
    static const int64_t divisors[] = {1, 2, 3, 7, 10, 49, 255, 1000, 65535, 2147483647,
                                       INT64_C(4503599627370495)};
    int64_t n, d, i, quotient;
    for (d = 1; d <= 64; ++d) {
        for (n = 0; n < 4096; ++n) {
            const int64_t remainder = pyroi_divide_index(n, d, 1.0 / (double)d, &quotient);
            CHECK(quotient == n / d && remainder == n % d);
        }
    }
    for (i = 0; i < (int64_t)(sizeof(divisors) / sizeof(divisors[0])); ++i) {
        static const int64_t near_top[] = {0, 1, -1, -2, -12345};
        const int64_t top = (INT64_C(1) << 52) - 1;
        int64_t j;
        d = divisors[i];
        for (j = 0; j < (int64_t)(sizeof(near_top) / sizeof(near_top[0])); ++j) {
            const int64_t values[] = {near_top[j] < 0 ? top + 1 + near_top[j] : near_top[j],
                                      d * 3 - 1, d * 3, d * 3 + 1};
            int64_t v;
            for (v = 0; v < 4; ++v) {
                if (values[v] > top) {
                    continue; /* past the range the helper is for */
                }
                const int64_t remainder =
                    pyroi_divide_index(values[v], d, 1.0 / (double)d, &quotient);
                CHECK(quotient == values[v] / d && remainder == values[v] % d);
            }
        }
    }
}

int main(void)
{
    test_divide_index();
    return check_report("test_arithmetic");
}
