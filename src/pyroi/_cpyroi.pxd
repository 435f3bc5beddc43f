# The part of src/c/include/pyroi.h that Cython code uses by name, and nothing else (the
# operators are called from _bindings.h, which includes pyroi.h itself).
from libc.stdint cimport int64_t, uint16_t


cdef extern from "pyroi.h" nogil:
    int PYROI_VERSION_MAJOR
    int PYROI_VERSION_MINOR
    int PYROI_VERSION_PATCH
    const char *PYROI_VERSION_STRING
    int PYROI_VERSION_NUMBER
    int64_t PYROI_MAX_SAMPLING_GRID
    int64_t PYROI_MAX_SAMPLING_RATIO

    ctypedef enum pyroi_status:
        PYROI_OK
        PYROI_E_NULL_POINTER
        PYROI_E_INVALID_SHAPE
        PYROI_E_INVALID_STRIDES
        PYROI_E_INVALID_OUTPUT_SIZE
        PYROI_E_INVALID_SCALE
        PYROI_E_INVALID_SAMPLING_RATIO
        PYROI_E_INVALID_BATCH_INDEX
        PYROI_E_INVALID_BOX
        PYROI_E_INVALID_NUM_THREADS
        PYROI_E_NO_MEMORY
        PYROI_E_INVALID_ARGMAX
        PYROI_E_CANCELLED
        PYROI_E_INVALID_METHOD
        PYROI_E_INVALID_OFFSET

    int pyroi_version_number()
    const char *pyroi_version_string()
    const char *pyroi_vector_isa()
    int64_t pyroi_cache_bytes(int level)
    size_t pyroi_set_scratch_cache_limit(size_t bytes)
    size_t pyroi_scratch_cache_limit()
    size_t pyroi_scratch_cache_bytes()
    const char *pyroi_status_string(pyroi_status status)

    ctypedef struct pyroi_cancel:
        int requested
        void (*poll)(pyroi_cancel *token) noexcept nogil
        void *poll_context

    void pyroi_cancel_init(pyroi_cancel *token)

    ctypedef struct pyroi_fpn_level_params:
        int64_t min_level
        int64_t max_level
        double canonical_scale
        double canonical_level
        double eps

    void pyroi_fpn_level_params_init(pyroi_fpn_level_params *params)

    enum: PYROI_MAX_FPN_LEVELS
    pyroi_status pyroi_scale_f32_to_f16(const float *source, int64_t count, float scale,
                                        uint16_t *target)
