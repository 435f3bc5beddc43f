/* half.h - IEEE 754 binary16 <-> binary32 conversion (internal, not installed).
 *
 * C99 has no half type, so binary16 values travel as uint16_t bit patterns. Widening is exact;
 * narrowing rounds to nearest, ties to even (as NumPy's astype(float16) and hardware
 * conversions), overflows to infinity and keeps NaN a (quiet) NaN of the same sign. */
#ifndef PYROI_HALF_H
#define PYROI_HALF_H

#include <stdint.h>
#include <string.h>

static inline float pyroi_half_to_float(uint16_t half)
{
    const uint32_t sign = (uint32_t)(half & 0x8000u) << 16;
    const uint32_t exponent = (uint32_t)(half >> 10) & 0x1fu;
    const uint32_t mantissa = (uint32_t)half & 0x3ffu;
    uint32_t bits;
    float value;
    if (exponent == 0x1fu) { /* inf, NaN (payload kept) */
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent == 0) { /* zero or subnormal: mantissa * 2^-24, exact in float */
        value = (float)mantissa * 5.9604644775390625e-8f;
        return sign ? -value : value;
    } else {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    }
    memcpy(&value, &bits, sizeof(value));
    return value;
}

static inline uint16_t pyroi_float_to_half(float value)
{
    uint32_t bits, sign, exponent, mantissa, result;
    int32_t biased;
    memcpy(&bits, &value, sizeof(bits));
    sign = (bits >> 16) & 0x8000u;
    exponent = (bits >> 23) & 0xffu;
    mantissa = bits & 0x7fffffu;
    if (exponent == 0xffu) { /* inf stays inf; NaN stays a quiet NaN */
        return (uint16_t)(sign | 0x7c00u | (mantissa != 0 ? 0x200u | (mantissa >> 13) : 0u));
    }
    biased = (int32_t)exponent - 127 + 15;
    if (biased >= 31) {
        return (uint16_t)(sign | 0x7c00u);
    }
    if (biased <= 0) { /* a half subnormal (or zero): units of 2^-24 */
        const uint32_t shift = (uint32_t)(14 - biased);
        uint32_t significand, quotient, remainder, halfway;
        if (exponent == 0 || shift > 24) {
            return (uint16_t)sign; /* below half the smallest subnormal: +-0 */
        }
        significand = mantissa | 0x800000u;
        quotient = significand >> shift;
        remainder = significand & ((1u << shift) - 1u);
        halfway = 1u << (shift - 1u);
        if (remainder > halfway || (remainder == halfway && (quotient & 1u))) {
            ++quotient; /* may become the smallest normal: still the right encoding */
        }
        return (uint16_t)(sign | quotient);
    }
    result = ((uint32_t)biased << 10) | (mantissa >> 13);
    if ((mantissa & 0x1fffu) > 0x1000u ||
        ((mantissa & 0x1fffu) == 0x1000u && (result & 1u))) {
        ++result; /* a carry into the exponent is correct, up to infinity */
    }
    return (uint16_t)(sign | result);
}

#endif /* PYROI_HALF_H */
