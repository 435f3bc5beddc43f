/* half.h - IEEE 754 binary16 <-> binary32 conversion (internal, not installed).
 *
 * C99 has no half type, so binary16 values travel as uint16_t bit patterns. Widening is exact;
 * narrowing rounds to nearest, ties to even (as NumPy's astype(float16) and hardware
 * conversions), overflows to infinity and keeps NaN a (quiet) NaN of the same sign. */
#ifndef PYROI_HALF_H
#define PYROI_HALF_H

#include <stdint.h>
#include <string.h>

/* Both conversions are branch-free (masks, integer and float arithmetic the compilers turn
 * into vector code; GCC 12 did not vectorise the same selects written with ?:), so that a
 * float16 call converts its tensors at a few vector instructions per 8 or 16 elements. */

static inline float pyroi_bits_to_float(uint32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof(value));
    return value;
}

static inline uint32_t pyroi_float_to_bits(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof(bits));
    return bits;
}

static inline float pyroi_half_to_float(uint16_t half)
{
    /* exponent and mantissa moved to float's place; the exponent rebiased by 127 - 15 */
    const uint32_t magnitude = ((uint32_t)half & 0x7fffu) << 13;
    const uint32_t exponent = magnitude & 0x0f800000u;
    const uint32_t normal = magnitude + 0x38000000u;
    /* inf, NaN (payload kept): the exponent all ones */
    const uint32_t special = normal + 0x38000000u;
    /* zero or subnormal, mantissa * 2^-24: as the normal 2^-14 * (1 + mantissa / 1024), exact
     * in float, minus 2^-14 (exact: Sterbenz) */
    const float tiny = pyroi_bits_to_float(normal + 0x00800000u) - 6.103515625e-05f;
    const uint32_t is_special = 0u - (uint32_t)(exponent == 0x0f800000u); /* all ones or 0 */
    const uint32_t is_tiny = 0u - (uint32_t)(exponent == 0);
    const uint32_t bits = (special & is_special) | (pyroi_float_to_bits(tiny) & is_tiny) |
                          (normal & ~(is_special | is_tiny));
    return pyroi_bits_to_float(bits | ((uint32_t)(half & 0x8000u) << 16));
}

static inline uint16_t pyroi_float_to_half(float value)
{
    const uint32_t bits = pyroi_float_to_bits(value);
    const uint32_t sign = (bits >> 16) & 0x8000u;
    const uint32_t magnitude = bits & 0x7fffffffu;
    /* inf stays inf; NaN stays a NaN, made quiet, with its payload's top bits */
    const uint32_t is_nan = 0u - (uint32_t)(magnitude > 0x7f800000u); /* all ones or 0 */
    const uint32_t special = 0x7c00u | ((0x200u | ((magnitude >> 13) & 0x3ffu)) & is_nan);
    /* below 2^-14, a half subnormal (or zero): adding 0.5 leaves the value in units of 2^-24
     * in the low bits of the sum, rounded to nearest even by the float addition itself */
    const uint32_t subnormal =
        pyroi_float_to_bits(pyroi_bits_to_float(magnitude) + 0.5f) - 0x3f000000u;
    /* normal: rebias, then round the 13 dropped bits to nearest even (a carry into the
     * exponent is correct, up to infinity) */
    const uint32_t odd = (magnitude >> 13) & 1u;
    const uint32_t normal = (magnitude - 0x38000000u + 0x0fffu + odd) >> 13;
    /* from 2^16 on: infinity or NaN (65520 up to 2^16 round to infinity as normals) */
    const uint32_t is_special = 0u - (uint32_t)(magnitude >= 0x47800000u); /* all ones or 0 */
    const uint32_t is_subnormal = 0u - (uint32_t)(magnitude < 0x38800000u);
    const uint32_t result = (special & is_special) | (subnormal & is_subnormal) |
                            (normal & ~(is_special | is_subnormal));
    return (uint16_t)(sign | result);
}

/* to[i * step] = pyroi_float_to_half(wide[i]) for i < count (F16C's VCVTPS2PH where the CPU
 * has it and step is 1: the same bits). Defined in core/half.c. */
void pyroi_half_round_run(const float *wide, int64_t count, uint16_t *to, int64_t step);

/* pyroi_half_round_run(wide, count, to, 1) for a destination written once and not read back
 * soon: its whole 64-byte lines by streaming stores where the CPU has F16C, past the caches
 * (no read of the lines first); the partial lines at both ends by plain stores. Before another
 * thread reads to, the writing thread calls pyroi_stream_fence() (transpose.h). Defined in
 * core/half.c. */
void pyroi_half_round_stream(const float *wide, int64_t count, uint16_t *to);

/* wide[i] = pyroi_half_to_float(from[i * step]) for i < count (F16C's VCVTPH2PS where the CPU
 * has it and step is 1). Defined in core/half.c. */
void pyroi_half_widen_run(const uint16_t *from, int64_t step, int64_t count, float *wide);

/* Rounds count planes of height x width contiguous float32 values (plane i at
 * wide + i * height * width) each once into the float16 planes at to + i * strides[1], rows
 * strides[2] and columns strides[3] apart (pyroi_half_round_run over runs as long as both
 * layouts allow). Defined in core/half.c. */
void pyroi_half_round_planes(const float *wide, int64_t count, int64_t height, int64_t width,
                             uint16_t *to, const int64_t strides[4]);

#endif /* PYROI_HALF_H */
