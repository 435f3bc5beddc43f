/* half.c - binary16 runs: widened into, and rounded from, float32 (F16C where the CPU has
 * it, the portable conversions of half.h otherwise), and the public float32-to-float16
 * scaling. Below every family: it calls nothing but the CPU query. */
#include "core/half.h"
#include "core/common.h"
#include "core/cpu.h"

/* count elements, step apart in the float16 tensor (GCC versions the loop for step 1 and
 * vectorises that version) */
PYROI_CLONE_INLINE void half_widen(const uint16_t *from, int64_t step, int64_t count,
                                   float *wide)
{
    int64_t i;
    for (i = 0; i < count; ++i) {
        wide[i] = pyroi_half_to_float(from[i * step]);
    }
}

PYROI_CLONE_INLINE void half_round(const float *wide, int64_t count, uint16_t *to, int64_t step)
{
    int64_t i;
    for (i = 0; i < count; ++i) {
        to[i * step] = pyroi_float_to_half(wide[i]);
    }
}

/* With F16C, consecutive elements convert 8 at a time in one instruction each way (VCVTPH2PS
 * is exact; VCVTPS2PH with round-to-nearest-even gives pyroi_float_to_half's bits, NaN
 * payloads included, whatever MXCSR says): about a tenth of the portable loops'
 * instructions. The portable loops do the rest of a run. */
#if defined(PYROI_HAVE_VECTOR_CLONES)
#  include <immintrin.h>
#  define HALF_HAVE_F16C 1
__attribute__((target("avx2,f16c"))) static int64_t half_widen_f16c(const uint16_t *from,
                                                                    int64_t count, float *wide)
{
    int64_t i;
    for (i = 0; i + 8 <= count; i += 8) {
        _mm256_storeu_ps(wide + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(from + i))));
    }
    return i;
}

__attribute__((target("avx2,f16c"))) static int64_t half_round_f16c(const float *wide,
                                                                    int64_t count, uint16_t *to)
{
    int64_t i;
    for (i = 0; i + 8 <= count; i += 8) {
        _mm_storeu_si128((__m128i *)(to + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(wide + i), _MM_FROUND_TO_NEAREST_INT));
    }
    return i;
}

/* The whole 64-byte lines of to (32 elements each, to at a line boundary), by streaming
 * stores; the caller fences. */
__attribute__((target("avx2,f16c"))) static void half_round_lines_f16c(const float *wide,
                                                                      int64_t lines,
                                                                      uint16_t *to)
{
    int64_t i, e;
    for (i = 0; i < lines; ++i) {
        for (e = 32 * i; e < 32 * i + 32; e += 16) {
            const __m128i low =
                _mm256_cvtps_ph(_mm256_loadu_ps(wide + e), _MM_FROUND_TO_NEAREST_INT);
            const __m128i high =
                _mm256_cvtps_ph(_mm256_loadu_ps(wide + e + 8), _MM_FROUND_TO_NEAREST_INT);
            _mm256_stream_si256((__m256i *)(void *)(to + e),
                                _mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1));
        }
    }
}
#endif

void pyroi_half_round_run(const float *wide, int64_t count, uint16_t *to, int64_t step)
{
    int64_t done = 0;
#ifdef HALF_HAVE_F16C
    if (step == 1 && pyroi_cpu_has_f16c()) {
        done = half_round_f16c(wide, count, to);
    }
#endif
    half_round(wide + done, count - done, to + done * step, step);
}

void pyroi_half_round_stream(const float *wide, int64_t count, uint16_t *to)
{
#ifdef HALF_HAVE_F16C
    /* elements before to's first line boundary */
    const int64_t head = (int64_t)((64u - ((uintptr_t)to & 63u)) & 63u) / 2;
    if (((uintptr_t)to & 1u) == 0 && count - head >= 32 && pyroi_cpu_has_f16c()) {
        const int64_t lines = (count - head) / 32;
        /* plain stores for the partial lines at both ends: a plain store into a line that a
         * streaming store holds waits for it to reach memory */
        pyroi_half_round_run(wide, head, to, 1);
        half_round_lines_f16c(wide + head, lines, to + head);
        pyroi_half_round_run(wide + head + 32 * lines, count - head - 32 * lines,
                             to + head + 32 * lines, 1);
        return;
    }
#endif
    pyroi_half_round_run(wide, count, to, 1);
}

void pyroi_half_widen_run(const uint16_t *from, int64_t step, int64_t count, float *wide)
{
    int64_t done = 0;
#ifdef HALF_HAVE_F16C
    if (step == 1 && pyroi_cpu_has_f16c()) {
        done = half_widen_f16c(from, count, wide);
    }
#endif
    half_widen(from + done * step, step, count - done, wide + done);
}

void pyroi_half_round_planes(const float *wide, int64_t count, int64_t height, int64_t width,
                             uint16_t *to, const int64_t strides[4])
{
    const int64_t pixels = height * width;
    const int rows_packed = strides[3] == 1 && strides[2] == width;
    int64_t i, h;
    if (rows_packed && strides[1] == pixels) { /* the planes one run */
        pyroi_half_round_run(wide, count * pixels, to, 1);
        return;
    }
    for (i = 0; i < count; ++i) {
        for (h = 0; h < (rows_packed ? 1 : height); ++h) {
            pyroi_half_round_run(wide + i * pixels + h * width, rows_packed ? pixels : width,
                                 to + i * strides[1] + h * strides[2], strides[3]);
        }
    }
}

pyroi_status pyroi_scale_f32_to_f16(const float *source, int64_t count, float scale,
                                    uint16_t *target)
{
    int64_t i;
    if (count < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    if (count > 0 && (source == NULL || target == NULL)) {
        return PYROI_E_NULL_POINTER;
    }
    for (i = 0; i < count; ++i) {
        const float product = source[i] * scale; /* rounded to float32 here, as in C99 */
        target[i] = pyroi_float_to_half(product);
    }
    return PYROI_OK;
}
