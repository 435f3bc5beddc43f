/* version.c - version and dispatch queries, status strings. */
#include "core/common.h"
#include "core/cpu.h"

int pyroi_version_number(void)
{
    return PYROI_VERSION_NUMBER;
}

const char *pyroi_version_string(void)
{
    return PYROI_VERSION_STRING;
}

const char *pyroi_vector_isa(void)
{
#ifdef PYROI_HAVE_VECTOR_CLONES
    /* the level the vector tasks dispatch on (common.h) */
    switch (pyroi_cpu_vector_level()) {
    case PYROI_CPU_X86_64_V4:
        return "x86-64-v4";
    case PYROI_CPU_AVX2:
        return "avx2";
    case PYROI_CPU_BASELINE:
        break;
    }
    /* a cap that names no level: said wherever the level is printed (cpu.h) */
    return pyroi_cpu_cap_unknown() ? "baseline (PYROI_MAX_VECTOR_ISA not understood: use "
                                     "baseline, avx2 or x86-64-v4)"
                                   : "baseline";
#else
    return "baseline-only build";
#endif
}

int64_t pyroi_cache_bytes(int level)
{
    return level == 1   ? pyroi_cpu_l1d_bytes()
           : level == 2 ? pyroi_cpu_l2_bytes()
           : level == 3 ? pyroi_cpu_l3_bytes()
                        : 0;
}

const char *pyroi_status_string(pyroi_status status)
{
    switch (status) {
    case PYROI_OK:
        return "success";
    case PYROI_E_NULL_POINTER:
        return "a required pointer is NULL";
    case PYROI_E_INVALID_SHAPE:
        return "invalid shape: a dimension is negative, too large, or shapes disagree";
    case PYROI_E_INVALID_STRIDES:
        return "invalid strides: an offset overflows int64 or an output overlaps itself";
    case PYROI_E_INVALID_OUTPUT_SIZE:
        return "invalid output size: pooled height and width must be positive";
    case PYROI_E_INVALID_SCALE:
        return "invalid spatial scale: must be finite and non-negative";
    case PYROI_E_INVALID_SAMPLING_RATIO:
        return "invalid sampling ratio: must be at most 1024 (PYROI_MAX_SAMPLING_RATIO)";
    case PYROI_E_INVALID_BATCH_INDEX:
        return "invalid batch index: must lie in [0, N)";
    case PYROI_E_INVALID_BOX:
        return "invalid box: a coordinate is not finite, or the box needs more than "
               "2147483647 samples per bin along an axis";
    case PYROI_E_INVALID_NUM_THREADS:
        return "invalid number of threads: must be non-negative";
    case PYROI_E_NO_MEMORY:
        return "out of memory";
    case PYROI_E_INVALID_ARGMAX:
        return "invalid argmax: an entry is neither -1 nor a pixel index in [0, H * W)";
    case PYROI_E_CANCELLED:
        return "cancelled";
    case PYROI_E_INVALID_METHOD:
        return "invalid method: not one the operator has (crop_and_resize's box gradient has "
               "no nearest)";
    case PYROI_E_INVALID_OFFSET:
        return "invalid offset: a deformable pooling offset is not finite";
    }
    return "unknown status";
}
