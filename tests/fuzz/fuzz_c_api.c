/* fuzz_c_api.c - libFuzzer harness over the whole public C API of pyroi.
 *
 * Each input is decoded into one call: an entry point (every forward, backward, find-invalid
 * and level function, float32 and float64), shapes, strides, parameters, boxes and batch
 * indices, the way a real caller would give them: every buffer is allocated with exactly the
 * elements its shape and strides reach (transposed, padded, negative and zero strides), so
 * AddressSanitizer sees any access outside the memory the caller described. Hostile values
 * (NaN, inf, 1e30, inverted boxes, batch indices -1 / N / INT64_MIN, zero and negative sizes,
 * output sizes and sampling ratios past their limits, overlapping outputs, NULL pointers) are
 * drawn often. Besides memory errors and undefined behaviour the harness aborts when a
 * documented contract breaks:
 *   - a failed call wrote nothing; a successful one wrote every output element, and only
 *     output elements (the rest of each buffer keeps its fill pattern);
 *   - an output whose strides make elements overlap is rejected;
 *   - with finite data of moderate size, every output value is finite;
 *   - the result does not depend on num_threads (bit for bit);
 *   - find_invalid_roi names the RoI status a forward call failed with, and a valid argmax;
 *   - fpn levels lie in [-1, max_level - min_level];
 *   - roi_rows gives each row's integer index in [0, N), or names the first bad row;
 *   - a multi-scale call writes only its output (forward) or every level's map (backward),
 *     as above, with any level count, level range, level shapes and scales.
 *
 * Build (clang), with the library sources of every folder of src/c:
 *     clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/c/include -Isrc/c \
 *     tests/fuzz/fuzz_c_api.c $(find src/c -name '*.c') -lm -lpthread -o fuzz_c_api
 * Without libFuzzer, tests/fuzz/replay_main.c turns it into a program that replays a corpus
 * (run by ctest as the test fuzz_corpus).
 *
 * Fixed sampling ratios between 65 and 1024 are used only on tiny outputs (valid, but up to
 * 2^20 samples per bin), so that the fuzzer spends its time on many small calls.
 */
#ifndef PYROI_FUZZ_TEMPLATE

#include "pyroi.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest buffer (elements) the harness allocates for one tensor. */
#define FUZZ_MAX_ELEMENTS (INT64_C(1) << 16)
/* The fill pattern of every output buffer (bytes). */
#define FUZZ_FILL 0xA5

typedef struct fuzz_input {
    const uint8_t *data;
    size_t size;
    size_t pos;
} fuzz_input;

static unsigned fuzz_byte(fuzz_input *in)
{
    return in->pos < in->size ? in->data[in->pos++] : 0u;
}

static int64_t fuzz_pick(fuzz_input *in, const int64_t *table, size_t count)
{
    return table[fuzz_byte(in) % count];
}

#define FUZZ_COUNT(table) (sizeof(table) / sizeof((table)[0]))

static void fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_c_api: contract broken: %s\n", what);
    abort();
}

#define FUZZ_REQUIRE(condition)                                                   \
    do {                                                                          \
        if (!(condition)) {                                                       \
            fuzz_fail(#condition);                                                \
        }                                                                         \
    } while (0)

/* A 4-d tensor laid out in a buffer of exactly the elements it reaches. */
typedef struct fuzz_layout {
    int64_t shape[4];
    int64_t strides[4];
    int64_t base;     /* offset of element (0, 0, 0, 0) in the buffer */
    int64_t elements; /* buffer length */
    int64_t count;    /* product of the shape */
    int overlapping;  /* some axis of length > 1 has stride 0 */
    int null_data;    /* no elements and the caller passes NULL */
} fuzz_layout;

/* Decodes axis order, padding, reversed and broadcast axes for a tensor of this shape.
 * Returns 0 when the buffer would be too large (the input is skipped). */
static int fuzz_decode_layout(fuzz_input *in, const int64_t shape[4], int allow_broadcast,
                              fuzz_layout *t)
{
    static const int permutations[24][4] = {
        {0, 1, 2, 3}, {0, 1, 3, 2}, {0, 2, 1, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {0, 3, 2, 1},
        {1, 0, 2, 3}, {1, 0, 3, 2}, {1, 2, 0, 3}, {1, 2, 3, 0}, {1, 3, 0, 2}, {1, 3, 2, 0},
        {2, 0, 1, 3}, {2, 0, 3, 1}, {2, 1, 0, 3}, {2, 1, 3, 0}, {2, 3, 0, 1}, {2, 3, 1, 0},
        {3, 0, 1, 2}, {3, 0, 2, 1}, {3, 1, 0, 2}, {3, 1, 2, 0}, {3, 2, 0, 1}, {3, 2, 1, 0}};
    const unsigned style = fuzz_byte(in);
    const unsigned reversed = fuzz_byte(in);
    const unsigned broadcast = allow_broadcast ? fuzz_byte(in) : 0u;
    const unsigned padding = fuzz_byte(in);
    const int *order = permutations[style % 24];
    int64_t running = 1, span = 0;
    int i;

    t->count = 1;
    t->overlapping = 0;
    t->base = 0;
    for (i = 0; i < 4; ++i) {
        t->shape[i] = shape[i];
        if (shape[i] < 0 || shape[i] > FUZZ_MAX_ELEMENTS) {
            return 0;
        }
        t->count *= shape[i];
        if (t->count > FUZZ_MAX_ELEMENTS) {
            return 0;
        }
    }
    /* strides from the innermost axis of the chosen order outwards */
    for (i = 3; i >= 0; --i) {
        const int axis = order[i];
        const int64_t pad = (style & 0x80u) ? (int64_t)((padding >> (2 * axis)) & 3u) : 0;
        const int64_t length = shape[axis] > 0 ? shape[axis] : 1;
        if ((broadcast & 0x80u) && ((broadcast >> axis) & 1u)) {
            t->strides[axis] = 0;
            if (shape[axis] > 1) {
                t->overlapping = 1;
            }
            continue;
        }
        t->strides[axis] = running;
        running *= length + pad;
        if (running > FUZZ_MAX_ELEMENTS) {
            return 0;
        }
    }
    for (i = 0; i < 4; ++i) {
        if (shape[i] > 1) {
            const int64_t reach = t->strides[i] * (shape[i] - 1);
            span += reach;
            if ((style & 0x40u) && ((reversed >> i) & 1u)) { /* walk this axis backwards */
                t->strides[i] = -t->strides[i];
                t->base += reach;
            }
        } else if ((reversed >> (4 + i)) & 1u) {
            /* a length-1 axis: any stride is valid, the library must never apply it */
            t->strides[i] = (reversed & 1u) ? INT64_MAX : INT64_MIN;
        }
    }
    if (t->count == 0) {
        t->base = 0; /* nothing is addressed: the data pointer is the buffer itself (or NULL) */
    }
    t->elements = t->count > 0 ? span + 1 : 0;
    t->null_data = t->count == 0 && (padding & 1u);
    return 1;
}

static int64_t fuzz_offset(const fuzz_layout *t, int64_t n, int64_t c, int64_t h, int64_t w)
{
    int64_t offset = t->base;
    if (t->shape[0] > 1) offset += n * t->strides[0];
    if (t->shape[1] > 1) offset += c * t->strides[1];
    if (t->shape[2] > 1) offset += h * t->strides[2];
    if (t->shape[3] > 1) offset += w * t->strides[3];
    return offset;
}

/* Marks the buffer elements the tensor addresses (mask has t->elements bytes). */
static void fuzz_mark(const fuzz_layout *t, unsigned char *mask)
{
    int64_t n, c, h, w;
    for (n = 0; n < t->shape[0]; ++n)
        for (c = 0; c < t->shape[1]; ++c)
            for (h = 0; h < t->shape[2]; ++h)
                for (w = 0; w < t->shape[3]; ++w)
                    mask[fuzz_offset(t, n, c, h, w)] = 1;
}

/* An output buffer: exactly its elements, filled with FUZZ_FILL bytes. */
typedef struct fuzz_buffer {
    unsigned char *bytes;
    size_t item;
    fuzz_layout layout;
} fuzz_buffer;

static int fuzz_buffer_alloc(fuzz_buffer *b, const fuzz_layout *layout, size_t item)
{
    b->layout = *layout;
    b->item = item;
    b->bytes = (unsigned char *)malloc((size_t)layout->elements * item + 1);
    if (b->bytes == NULL) {
        return 0;
    }
    memset(b->bytes, FUZZ_FILL, (size_t)layout->elements * item);
    return 1;
}

static void *fuzz_buffer_data(const fuzz_buffer *b)
{
    if (b->bytes == NULL || b->layout.null_data) {
        return NULL;
    }
    return b->bytes + (size_t)b->layout.base * b->item;
}

static int fuzz_element_untouched(const fuzz_buffer *b, int64_t index)
{
    size_t i;
    for (i = 0; i < b->item; ++i) {
        if (b->bytes[(size_t)index * b->item + i] != FUZZ_FILL) {
            return 0;
        }
    }
    return 1;
}

/* After a call: a failed call left the buffer untouched; a successful one wrote every addressed
 * element and nothing else. */
static void fuzz_check_writes(const fuzz_buffer *b, int ok)
{
    unsigned char *mask;
    int64_t i;
    if (b->layout.elements == 0) {
        return;
    }
    mask = (unsigned char *)calloc((size_t)b->layout.elements, 1);
    if (mask == NULL) {
        abort();
    }
    if (ok) {
        fuzz_mark(&b->layout, mask);
    }
    for (i = 0; i < b->layout.elements; ++i) {
        if (mask[i]) {
            FUZZ_REQUIRE(!fuzz_element_untouched(b, i)); /* every output element is written */
        } else {
            FUZZ_REQUIRE(fuzz_element_untouched(b, i)); /* and nothing else */
        }
    }
    free(mask);
}

/* ---- decoded scalars ----------------------------------------------------------------------- */

static const int64_t fuzz_pooled_sizes[] = {1, 2, 3, 1, 2, 4, 1, 2, 0, -1, INT64_MIN,
                                            INT64_C(1) << 40, INT64_MAX};

static int64_t fuzz_pooled(fuzz_input *in)
{
    const unsigned b = fuzz_byte(in);
    if (b < 232) {
        return 1 + (int64_t)(b % 4);
    }
    return fuzz_pooled_sizes[b % FUZZ_COUNT(fuzz_pooled_sizes)];
}

static double fuzz_scale(fuzz_input *in)
{
    static const double normal[] = {1.0, 0.5, 0.25, 2.0, 0.0625, 1.0 / 3.0, 0.0, 1.5};
    const unsigned b = fuzz_byte(in);
    if (b < 232) {
        return normal[b % 8];
    }
    switch (b % 10) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return -1.0;
    case 4: return 1e30;
    case 5: return 1e300;
    case 6: return -0.0;
    case 7: return 5e-324;
    case 8: return DBL_MAX;
    default: return 1e-30;
    }
}

static int64_t fuzz_sampling_ratio(fuzz_input *in)
{
    static const int64_t special[] = {1024, 1025, INT64_C(2147483647), INT64_C(2147483648),
                                      INT64_MAX, INT64_MIN, -5, 64};
    const unsigned b = fuzz_byte(in);
    if (b < 224) {
        return (int64_t)(b % 6) - 1; /* -1 .. 4 */
    }
    return special[b % FUZZ_COUNT(special)];
}

static int fuzz_num_threads(fuzz_input *in)
{
    const unsigned b = fuzz_byte(in);
    if (b < 200) return 1;
    if (b < 230) return 2;
    if (b < 250) return 0;
    return b & 1u ? -1 : INT32_MIN;
}

/* A coordinate: mostly around a map of at most 12 pixels, sometimes hostile. */
static double fuzz_coordinate(fuzz_input *in)
{
    static const double special[] = {NAN, INFINITY, -INFINITY, 1e30, -1e30, 3.0e38, -3.0e38,
                                     1e6, -1e6, 1e-40, -0.0, 2147483648.0, 1e15, 4.5e15,
                                     -2147483649.0, 9.5};
    const unsigned b = fuzz_byte(in);
    if (b < 208) {
        return ((double)b - 100.0) / 6.0; /* [-16.7, 17.8] in steps of 1/6 */
    }
    return special[b % FUZZ_COUNT(special)];
}

static int64_t fuzz_batch_index(fuzz_input *in, int64_t num_images)
{
    const unsigned b = fuzz_byte(in);
    if (b < 224) {
        return num_images > 0 ? (int64_t)b % num_images : 0;
    }
    switch (b % 8) {
    case 0: return -1;
    case 1: return num_images;
    case 2: return INT64_MIN;
    case 3: return INT64_MAX;
    case 4: return num_images + 1;
    case 5: return -2;
    case 6: return INT64_C(1) << 40;
    default: return 0;
    }
}

/* Boxes: rows of coords_per_box values at a decoded row stride, and batch indices. */
typedef struct fuzz_boxes {
    int64_t num_rois;
    int64_t row_stride;
    int64_t base;
    int64_t elements;
    double *values; /* elements values, converted to the dtype by the typed part */
    int64_t *batch_indices; /* num_rois entries, or NULL */
    int null_boxes;
} fuzz_boxes;

static int fuzz_decode_boxes(fuzz_input *in, int64_t coords_per_box, int64_t num_images,
                             fuzz_boxes *boxes)
{
    const unsigned count_byte = fuzz_byte(in);
    const unsigned stride_byte = fuzz_byte(in);
    int64_t k, j, stride = coords_per_box + (int64_t)(stride_byte % 3);
    boxes->num_rois = count_byte < 240 ? (int64_t)(count_byte % 7) : (count_byte & 1u ? -1 : 0);
    boxes->base = 0;
    boxes->null_boxes = 0;
    if (stride_byte >= 160 && stride_byte < 200) {
        stride = -stride; /* rows in reverse memory order */
    } else if (stride_byte >= 200 && stride_byte < 216) {
        stride = 0; /* every RoI reads the same row */
    } else if (stride_byte >= 250) {
        stride = stride_byte & 1u ? INT64_MAX : INT64_MIN; /* must be rejected for K > 1 */
    }
    boxes->row_stride = stride;
    if (boxes->num_rois <= 0) {
        boxes->elements = coords_per_box;
        boxes->null_boxes = stride_byte & 1u;
    } else if (stride == INT64_MAX || stride == INT64_MIN) {
        boxes->elements = coords_per_box; /* enough for RoI 0 only */
    } else {
        const int64_t step = stride < 0 ? -stride : stride;
        boxes->elements = (boxes->num_rois - 1) * step + coords_per_box;
        if (stride < 0) {
            boxes->base = (boxes->num_rois - 1) * step;
        }
    }
    boxes->values = (double *)malloc((size_t)boxes->elements * sizeof(double));
    boxes->batch_indices = (int64_t *)malloc((size_t)(boxes->num_rois > 0 ? boxes->num_rois : 1) *
                                             sizeof(int64_t));
    if (boxes->values == NULL || boxes->batch_indices == NULL) {
        return 0;
    }
    for (j = 0; j < boxes->elements; ++j) {
        boxes->values[j] = fuzz_coordinate(in);
    }
    for (k = 0; k < boxes->num_rois; ++k) {
        boxes->batch_indices[k] = fuzz_batch_index(in, num_images);
    }
    if (boxes->num_rois > 0 && count_byte >= 200 && count_byte < 204) {
        boxes->null_boxes = 1; /* must be PYROI_E_NULL_POINTER */
    }
    return 1;
}

static void fuzz_boxes_free(fuzz_boxes *boxes)
{
    free(boxes->values);
    free(boxes->batch_indices);
}

/* The entry points, in the order of the selector byte (its low 7 bits modulo the count; the
 * high bit picks float64). The kept corpus's selector bytes are the op numbers themselves
 * (below the count), so an op added at the end leaves every kept input's meaning as it was. */
enum fuzz_op {
    FUZZ_ROI_ALIGN_FORWARD,
    FUZZ_ROI_ALIGN_BACKWARD,
    FUZZ_ROI_ALIGN_MAX_FORWARD,
    FUZZ_ROI_ALIGN_MAX_BACKWARD,
    FUZZ_ROI_POOL_FORWARD,
    FUZZ_ROI_POOL_BACKWARD,
    FUZZ_PS_ROI_ALIGN_FORWARD,
    FUZZ_PS_ROI_ALIGN_BACKWARD,
    FUZZ_PS_ROI_POOL_FORWARD,
    FUZZ_PS_ROI_POOL_BACKWARD,
    FUZZ_ROTATED_FORWARD,
    FUZZ_ROTATED_BACKWARD,
    FUZZ_FPN_LEVELS,
    FUZZ_ROI_ROWS, /* pyroi_roi_rows_batch_indices_*: added last, see the corpus note */
    FUZZ_LEVELS_FORWARD, /* pyroi_roi_align_levels_*: added after FUZZ_ROI_ROWS, as above */
    FUZZ_LEVELS_BACKWARD,
    FUZZ_OP_COUNT
};

/* The parts of an operator call every case below shares: its params' common fields, the
 * argument lists of pyroi.h's calling conventions, and the check that a per-RoI status is
 * explained by the op's find_invalid_roi (first pass only: the second reuses the inputs). */
#define FUZZ_SET_PARAMS(p)                                                                 \
    ((p).pooled_height = pooled_height, (p).pooled_width = pooled_width,                   \
     (p).spatial_scale_h = scale_h, (p).spatial_scale_w = scale_w, (p).num_threads = threads)
#define FUZZ_PARAMS (params_null ? NULL : &p)
#define FUZZ_ROIS box_data, boxes.num_rois, boxes.row_stride, index_data
#define FUZZ_FORWARD_ARGS src, map_shape, src_strides, FUZZ_ROIS, dst, dst_strides, FUZZ_PARAMS
#define FUZZ_BACKWARD_ARGS src, src_strides, FUZZ_ROIS, dst, map_shape, dst_strides, FUZZ_PARAMS
#define FUZZ_ARGMAX_OUT \
    argmax_out_data, argmax_out.bytes ? argmax_out.layout.strides : NULL
#define FUZZ_ARGMAX_IN argmax_in_data, argmax_in_layout.strides
#define FUZZ_IN_MAP map_shape[0], map_shape[2], map_shape[3] /* RoIAlign-like: N, H, W */
#define FUZZ_IN_BATCH map_shape[0]                           /* RoIPool-like: N */
#define FUZZ_CHECK_FIND(find, ...) /* the rest: the map's extent */                        \
    do {                                                                                   \
        if (pass == 0 &&                                                                   \
            (status == PYROI_E_INVALID_BOX || status == PYROI_E_INVALID_BATCH_INDEX)) {    \
            int64_t failed = -1;                                                           \
            FUZZ_REQUIRE(PYROI_TYPED_CALL(find)(FUZZ_ROIS, __VA_ARGS__, &p, &failed) ==   \
                         status);                                                          \
            FUZZ_REQUIRE(failed >= 0 && failed < boxes.num_rois);                          \
        }                                                                                  \
    } while (0)
/* The call of an op whose forward and backward take pyroi.h's common argument lists (family:
 * the calls' prefix; is_forward: which of the two), then its find_invalid_roi check. */
#define FUZZ_CALL_COMMON(is_forward, family, ...)                                          \
    do {                                                                                   \
        status = (is_forward) ? PYROI_TYPED_CALL(family##_forward)(FUZZ_FORWARD_ARGS)      \
                              : PYROI_TYPED_CALL(family##_backward)(FUZZ_BACKWARD_ARGS);   \
        FUZZ_CHECK_FIND(family##_find_invalid_roi, __VA_ARGS__);                           \
    } while (0)

#define PYROI_FUZZ_TEMPLATE
#define T float
#define FUZZ_TYPED(name) name##_f32
#define PYROI_TYPED_CALL(name) name##_f32
#include "fuzz_c_api.c"
#undef PYROI_TYPED_CALL
#undef FUZZ_TYPED
#undef T

#define T double
#define FUZZ_TYPED(name) name##_f64
#define PYROI_TYPED_CALL(name) name##_f64
#include "fuzz_c_api.c"
#undef PYROI_TYPED_CALL
#undef FUZZ_TYPED
#undef T
#undef PYROI_FUZZ_TEMPLATE

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in;
    unsigned selector;
    in.data = data;
    in.size = size;
    in.pos = 0;
    selector = fuzz_byte(&in);
    if (selector & 0x80u) {
        fuzz_run_f64(&in, (int)((selector & 0x7Fu) % FUZZ_OP_COUNT));
    } else {
        fuzz_run_f32(&in, (int)((selector & 0x7Fu) % FUZZ_OP_COUNT));
    }
    return 0;
}

#else /* PYROI_FUZZ_TEMPLATE: the typed part, once per dtype */

/* Fills the elements of an input tensor: small multiples of 1/4, or (hostile) NaN and inf. */
static void FUZZ_TYPED(fuzz_fill)(T *buffer, int64_t elements, unsigned seed, int hostile)
{
    uint64_t state = 0x9E3779B97F4A7C15ULL ^ (uint64_t)seed;
    int64_t i;
    for (i = 0; i < elements; ++i) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        buffer[i] = (T)((double)((int64_t)(state >> 59) - 16) / 4.0);
        if (hostile && ((state >> 40) & 7u) == 0) {
            const unsigned kind = (unsigned)(state >> 30) & 3u;
            buffer[i] = kind == 0 ? (T)NAN : kind == 1 ? (T)INFINITY
                                          : kind == 2 ? (T)-INFINITY : (T)FLT_MAX;
        }
    }
}

/* A read-only input tensor of the given shape with a decoded layout (broadcast allowed). */
typedef struct FUZZ_TYPED(fuzz_tensor) {
    fuzz_layout layout;
    T *buffer;
} FUZZ_TYPED(fuzz_tensor);

static int FUZZ_TYPED(fuzz_input_tensor)(fuzz_input *in, const int64_t shape[4], int hostile,
                                         FUZZ_TYPED(fuzz_tensor) *t)
{
    const unsigned seed = fuzz_byte(in);
    t->buffer = NULL;
    if (!fuzz_decode_layout(in, shape, 1, &t->layout)) {
        return 0;
    }
    t->buffer = (T *)malloc((size_t)(t->layout.elements > 0 ? t->layout.elements : 1) *
                            sizeof(T));
    if (t->buffer == NULL) {
        return 0;
    }
    FUZZ_TYPED(fuzz_fill)(t->buffer, t->layout.elements, seed, hostile);
    return 1;
}

static const T *FUZZ_TYPED(fuzz_tensor_data)(const FUZZ_TYPED(fuzz_tensor) *t)
{
    return t->layout.null_data ? NULL : t->buffer + t->layout.base;
}

/* Every addressed element of a successful output is finite. */
static void FUZZ_TYPED(fuzz_check_finite)(const fuzz_buffer *b)
{
    const fuzz_layout *t = &b->layout;
    const T *data = (const T *)(const void *)b->bytes;
    int64_t n, c, h, w;
    for (n = 0; n < t->shape[0]; ++n)
        for (c = 0; c < t->shape[1]; ++c)
            for (h = 0; h < t->shape[2]; ++h)
                for (w = 0; w < t->shape[3]; ++w)
                    FUZZ_REQUIRE(isfinite(data[fuzz_offset(t, n, c, h, w)]));
}

/* pyroi_roi_rows_batch_indices on the decoded rows (index column first): usually valid
 * indices, else the decoded hostile values (NaN, inf, fractions, huge). */
static void FUZZ_TYPED(fuzz_roi_rows)(fuzz_input *in, const fuzz_boxes *boxes, T *values,
                                      int64_t num_images)
{
    const unsigned mode = fuzz_byte(in);
    const int64_t count = boxes->num_rois > 0 ? boxes->num_rois : 1;
    const int64_t step = boxes->row_stride == INT64_MIN ? INT64_MAX
                         : boxes->row_stride < 0    ? -boxes->row_stride
                                                    : boxes->row_stride;
    int64_t *indices = (int64_t *)malloc((size_t)count * sizeof(int64_t));
    int64_t k, failed = -2;
    pyroi_status status;
    if (indices == NULL) {
        return;
    }
    for (k = 0; k < count; ++k) {
        indices[k] = INT64_C(0x5A5A5A5A5A5A5A5A);
    }
    if (mode < 192 && step < boxes->elements) { /* rows within the buffer: valid indices */
        for (k = 0; k < boxes->num_rois; ++k) {
            values[boxes->base + k * boxes->row_stride] = (T)boxes->batch_indices[k];
        }
    }
    status = PYROI_TYPED_CALL(pyroi_roi_rows_batch_indices)(
        boxes->null_boxes ? NULL : values + boxes->base, boxes->num_rois, boxes->row_stride, 4,
        num_images, (mode & 1u) && boxes->null_boxes ? NULL : indices, &failed);
    if (status == PYROI_OK) {
        FUZZ_REQUIRE(failed == -1);
        for (k = 0; k < boxes->num_rois; ++k) {
            const T index = values[boxes->base + k * boxes->row_stride];
            FUZZ_REQUIRE(indices[k] >= 0 && indices[k] < num_images && (T)indices[k] == index);
        }
    } else if (status == PYROI_E_INVALID_BATCH_INDEX || status == PYROI_E_INVALID_BOX) {
        FUZZ_REQUIRE(failed >= 0 && failed < boxes->num_rois);
    } else {
        FUZZ_REQUIRE(failed == -1);
    }
    free(indices);
}

/* Levels 1.. of a multi-scale call (level 0 is the call's generic map: the source tensor of a
 * forward, the result buffer of a backward) and the arrays pyroi_roi_align_levels_* reads. */
#define FUZZ_MAX_LEVELS 3
typedef struct FUZZ_TYPED(fuzz_pyramid) {
    int64_t num_levels; /* as passed: sometimes not the level range's, or out of bounds */
    int built;          /* levels with a map (level 0 included) */
    FUZZ_TYPED(fuzz_tensor) inputs[FUZZ_MAX_LEVELS]; /* forward; index 0 unused */
    fuzz_buffer grads[2][FUZZ_MAX_LEVELS];           /* backward, per pass; index 0 unused */
    const void *maps[PYROI_MAX_FPN_LEVELS + 1];
    int64_t shapes[4 * (PYROI_MAX_FPN_LEVELS + 1)];
    int64_t strides[4 * (PYROI_MAX_FPN_LEVELS + 1)];
    double scales[PYROI_MAX_FPN_LEVELS + 1];
    pyroi_fpn_level_params level_params;
} FUZZ_TYPED(fuzz_pyramid);

/* Decodes the level range and the maps of levels 1.. (halving the map, or hostile shapes and
 * layouts). Returns 0 when the input is to be skipped. */
static int FUZZ_TYPED(fuzz_decode_pyramid)(fuzz_input *in, int backward, int hostile,
                                           const int64_t map_shape[4], double scale,
                                           FUZZ_TYPED(fuzz_pyramid) *p)
{
    static const int64_t bad_counts[] = {0, -1, PYROI_MAX_FPN_LEVELS + 1, INT64_MIN};
    const unsigned count_byte = fuzz_byte(in), range_byte = fuzz_byte(in);
    int l, i;
    memset(p, 0, sizeof(*p));
    p->built = 1 + (int)(count_byte % FUZZ_MAX_LEVELS);
    p->num_levels = count_byte < 240 ? p->built : bad_counts[count_byte % 4];
    pyroi_fpn_level_params_init(&p->level_params);
    p->level_params.min_level = (int64_t)(range_byte % 6) - (range_byte >= 250 ? 7 : 0);
    p->level_params.max_level = p->level_params.min_level + p->built - 1 +
                                (range_byte >= 240 && range_byte < 250 ? 1 : 0);
    p->level_params.canonical_scale = (range_byte & 0x40u) ? 8.0 : 4.0; /* boxes of ~1-17 px */
    p->level_params.canonical_level = (double)p->level_params.min_level + 1.0;
    p->scales[0] = scale;
    for (i = 0; i < 4; ++i) {
        p->shapes[i] = map_shape[i];
    }
    for (l = 1; l < p->built; ++l) {
        const unsigned shape_byte = fuzz_byte(in);
        int64_t shape[4];
        shape[0] = map_shape[0];
        shape[1] = map_shape[1] + ((shape_byte & 0xC0u) == 0xC0u ? 1 : 0); /* C must agree */
        shape[2] = (shape_byte & 0x20u) ? 0 : (p->shapes[4 * (l - 1) + 2] + 1) / 2;
        shape[3] = (p->shapes[4 * (l - 1) + 3] + 1) / 2 + (int64_t)(shape_byte & 1u);
        p->scales[l] = (shape_byte & 0x10u) ? fuzz_scale(in) : scale / (double)(1 << l);
        for (i = 0; i < 4; ++i) {
            p->shapes[4 * l + i] = shape[i];
        }
        if (backward) {
            fuzz_layout layout;
            if (!fuzz_decode_layout(in, shape, 1, &layout) ||
                !fuzz_buffer_alloc(&p->grads[0][l], &layout, sizeof(T)) ||
                !fuzz_buffer_alloc(&p->grads[1][l], &layout, sizeof(T))) {
                return 0;
            }
            p->maps[l] = fuzz_buffer_data(&p->grads[0][l]);
        } else {
            if (!FUZZ_TYPED(fuzz_input_tensor)(in, shape, hostile, &p->inputs[l])) {
                return 0;
            }
            p->maps[l] = FUZZ_TYPED(fuzz_tensor_data)(&p->inputs[l]);
        }
        for (i = 0; i < 4; ++i) {
            p->strides[4 * l + i] = backward ? p->grads[0][l].layout.strides[i]
                                             : p->inputs[l].layout.strides[i];
        }
    }
    return 1;
}

/* The maps of a backward's pass (0 or 1: a buffer set each, compared afterwards). */
static void FUZZ_TYPED(fuzz_pyramid_pass)(FUZZ_TYPED(fuzz_pyramid) *p, int pass)
{
    int l;
    for (l = 1; l < p->built; ++l) {
        if (p->grads[pass][l].bytes != NULL) {
            p->maps[l] = fuzz_buffer_data(&p->grads[pass][l]);
        }
    }
}

static void FUZZ_TYPED(fuzz_pyramid_free)(FUZZ_TYPED(fuzz_pyramid) *p)
{
    int l;
    for (l = 1; l < FUZZ_MAX_LEVELS; ++l) {
        free(p->inputs[l].buffer);
        free(p->grads[0][l].bytes);
        free(p->grads[1][l].bytes);
    }
}

/* Runs one decoded call. */
static void FUZZ_TYPED(fuzz_run)(fuzz_input *in, int op)
{
    const int rotated = op == FUZZ_ROTATED_FORWARD || op == FUZZ_ROTATED_BACKWARD;
    const int position_sensitive = op >= FUZZ_PS_ROI_ALIGN_FORWARD &&
                                   op <= FUZZ_PS_ROI_POOL_BACKWARD;
    const int backward = op == FUZZ_ROI_ALIGN_BACKWARD || op == FUZZ_ROI_ALIGN_MAX_BACKWARD ||
                         op == FUZZ_ROI_POOL_BACKWARD || op == FUZZ_PS_ROI_ALIGN_BACKWARD ||
                         op == FUZZ_PS_ROI_POOL_BACKWARD || op == FUZZ_ROTATED_BACKWARD ||
                         op == FUZZ_LEVELS_BACKWARD;
    const int levels = op == FUZZ_LEVELS_FORWARD || op == FUZZ_LEVELS_BACKWARD;
    /* RoI rows hold an index before the four coordinates */
    const int64_t coords_per_box = rotated || op == FUZZ_ROI_ROWS ? 5 : 4;
    const unsigned flags = fuzz_byte(in);
    const int hostile_data = (flags & 7u) == 0;
    const int check_threads = (flags & 0x18u) == 0x18u;
    int64_t map_shape[4], pooled_shape[4], argmax_shape[4];
    int64_t pooled_height, pooled_width, sampling_ratio, channels_out = 0;
    double scale_h, scale_w;
    int num_threads, aligned, params_null, i;
    fuzz_boxes boxes;
    T *box_values = NULL;
    FUZZ_TYPED(fuzz_tensor) source; /* input (forward) or grad_output (backward) */
    fuzz_layout result_layout, argmax_layout;
    fuzz_buffer result, result_again, argmax_out;
    int64_t *argmax_in = NULL;
    fuzz_layout argmax_in_layout;
    const T *box_data;
    const int64_t *index_data;
    FUZZ_TYPED(fuzz_pyramid) pyramid;
    pyroi_status status = PYROI_OK;

    memset(&boxes, 0, sizeof(boxes));
    memset(&pyramid, 0, sizeof(pyramid));
    source.buffer = NULL;
    result.bytes = result_again.bytes = argmax_out.bytes = NULL;

    /* shapes and parameters */
    map_shape[0] = (int64_t)(fuzz_byte(in) % 4);
    map_shape[1] = (int64_t)(fuzz_byte(in) % 5);
    map_shape[2] = fuzz_pick(in, (const int64_t[]){0, 1, 2, 3, 5, 8, 12, 1}, 8);
    map_shape[3] = fuzz_pick(in, (const int64_t[]){0, 1, 2, 3, 5, 8, 12, 2}, 8);
    pooled_height = fuzz_pooled(in);
    pooled_width = fuzz_pooled(in);
    scale_h = fuzz_scale(in);
    scale_w = (flags & 0x20u) ? fuzz_scale(in) : scale_h;
    sampling_ratio = fuzz_sampling_ratio(in);
    num_threads = fuzz_num_threads(in);
    aligned = (int)(fuzz_byte(in) & 1u);
    params_null = fuzz_byte(in) == 0xFFu;
    if (position_sensitive && pooled_height > 0 && pooled_height <= 4 && pooled_width > 0 &&
        pooled_width <= 4) {
        /* C = C_out * PH * PW (or, sometimes, one more: PYROI_E_INVALID_SHAPE) */
        channels_out = map_shape[1] % 3;
        map_shape[1] = channels_out * pooled_height * pooled_width + ((flags & 0x40u) ? 1 : 0);
    }
    if (!fuzz_decode_boxes(in, coords_per_box, map_shape[0], &boxes)) {
        goto done;
    }
    /* a fixed grid of 2^10 samples per axis is valid but slow: only on tiny outputs */
    if (sampling_ratio > 64 && sampling_ratio <= 1024 &&
        (boxes.num_rois > 1 || map_shape[1] > 2 || pooled_height > 2 || pooled_width > 2 ||
         (pooled_height > 0 && pooled_width > 0 && pooled_height * pooled_width > 2))) {
        sampling_ratio = 64;
    }
    box_values = (T *)malloc((size_t)boxes.elements * sizeof(T));
    if (box_values == NULL) {
        goto done;
    }
    for (i = 0; i < boxes.elements; ++i) {
        box_values[i] = (T)boxes.values[i];
    }
    box_data = boxes.null_boxes ? NULL : box_values + boxes.base;
    index_data = boxes.null_boxes ? NULL : boxes.batch_indices;

    if (op == FUZZ_FPN_LEVELS) {
        pyroi_fpn_level_params p;
        int64_t *levels = (int64_t *)malloc((size_t)(boxes.num_rois > 0 ? boxes.num_rois : 1) *
                                            sizeof(int64_t));
        int64_t k;
        if (levels == NULL) {
            goto done;
        }
        pyroi_fpn_level_params_init(&p);
        p.min_level = (int64_t)(fuzz_byte(in) % 8) - 1;
        p.max_level = (int64_t)(fuzz_byte(in) % 8) - 1;
        {
            const unsigned b = fuzz_byte(in);
            p.canonical_scale = b < 200 ? 224.0 : b < 220 ? 0.0 : b < 240 ? NAN : 1e-300;
        }
        {
            const unsigned b = fuzz_byte(in);
            p.canonical_level = b < 220 ? 4.0 : b < 240 ? INFINITY : -1e300;
        }
        for (k = 0; k < (boxes.num_rois > 0 ? boxes.num_rois : 1); ++k) {
            levels[k] = INT64_C(0x5A5A5A5A5A5A5A5A);
        }
        status = PYROI_TYPED_CALL(pyroi_fpn_levels)(box_data, boxes.num_rois, boxes.row_stride,
                                                    params_null ? NULL : &p,
                                                    boxes.null_boxes ? NULL : levels);
        for (k = 0; k < boxes.num_rois; ++k) {
            if (status == PYROI_OK) {
                FUZZ_REQUIRE(levels[k] >= -1 && levels[k] <= p.max_level - p.min_level);
            } else {
                FUZZ_REQUIRE(levels[k] == INT64_C(0x5A5A5A5A5A5A5A5A));
            }
        }
        free(levels);
        goto done;
    }

    if (op == FUZZ_ROI_ROWS) {
        FUZZ_TYPED(fuzz_roi_rows)(in, &boxes, box_values, map_shape[0]);
        goto done;
    }

    /* the pooled-side tensor: output (forward) or grad_output (backward), of the shape the
     * library derives from the parameters */
    pooled_shape[0] = boxes.num_rois > 0 ? boxes.num_rois : 0;
    pooled_shape[1] = map_shape[1];
    if (position_sensitive) { /* C / (PH * PW) output channels, as the library derives them */
        pooled_shape[1] = pooled_height > 0 && pooled_width > 0 &&
                                  pooled_height <= INT64_MAX / pooled_width
                              ? map_shape[1] / (pooled_height * pooled_width)
                              : 0;
    }
    pooled_shape[2] = pooled_height > 0 ? pooled_height : 1;
    pooled_shape[3] = pooled_width > 0 ? pooled_width : 1;
    if (pooled_shape[2] > 64 || pooled_shape[3] > 64) {
        if (pooled_shape[0] > 0 && pooled_shape[1] > 0) {
            goto done; /* a huge non-empty output: no buffer can be given for it */
        }
        /* an empty one needs no memory: describe it with any small strides */
        pooled_shape[2] = pooled_shape[3] = 1;
    }
    for (i = 0; i < 4; ++i) {
        argmax_shape[i] = pooled_shape[i];
    }

    if (backward) {
        if (!FUZZ_TYPED(fuzz_input_tensor)(in, pooled_shape, hostile_data, &source) ||
            !fuzz_decode_layout(in, map_shape, 1, &result_layout)) {
            goto done;
        }
    } else {
        if (!FUZZ_TYPED(fuzz_input_tensor)(in, map_shape, hostile_data, &source) ||
            !fuzz_decode_layout(in, pooled_shape, 1, &result_layout)) {
            goto done;
        }
    }
    if (!fuzz_buffer_alloc(&result, &result_layout, sizeof(T)) ||
        !fuzz_buffer_alloc(&result_again, &result_layout, sizeof(T))) {
        goto done;
    }
    /* argmax: an output of the max forwards, an input of the max backwards */
    if (op == FUZZ_ROI_ALIGN_MAX_FORWARD || op == FUZZ_ROI_POOL_FORWARD) {
        if (!fuzz_decode_layout(in, argmax_shape, 1, &argmax_layout) ||
            !fuzz_buffer_alloc(&argmax_out, &argmax_layout, sizeof(int64_t))) {
            goto done;
        }
        if (op == FUZZ_ROI_ALIGN_MAX_FORWARD && (fuzz_byte(in) & 1u)) {
            argmax_out.layout.null_data = 1; /* argmax is optional */
            argmax_out.layout.elements = 0;
        }
    }
    if (op == FUZZ_ROI_ALIGN_MAX_BACKWARD || op == FUZZ_ROI_POOL_BACKWARD) {
        static const int64_t special[] = {-1, 0, 1, 2, 3, 5, 7, 15, 16, 63, 143, 144, -2,
                                          INT64_MAX, INT64_MIN};
        int64_t j;
        if (!fuzz_decode_layout(in, argmax_shape, 1, &argmax_in_layout)) {
            goto done;
        }
        argmax_in = (int64_t *)malloc((size_t)(argmax_in_layout.elements > 0
                                                   ? argmax_in_layout.elements : 1) *
                                      sizeof(int64_t));
        if (argmax_in == NULL) {
            goto done;
        }
        for (j = 0; j < argmax_in_layout.elements; ++j) {
            const unsigned b = fuzz_byte(in);
            argmax_in[j] = b < 192 ? (int64_t)(b % 12) - 1
                                   : special[b % FUZZ_COUNT(special)];
        }
    }
    if (levels && !FUZZ_TYPED(fuzz_decode_pyramid)(in, backward, hostile_data, map_shape, scale_h,
                                                   &pyramid)) {
        goto done;
    }

    if (getenv("PYROI_FUZZ_VERBOSE") != NULL) { /* triage: what the input decodes to */
        int64_t j;
        fprintf(stderr, "op %d dtype %s map %lld %lld %lld %lld pooled %lld %lld scale %g %g "
                "ratio %lld threads %d aligned %d rois %lld row_stride %lld null %d/%d\n",
                op, sizeof(T) == 4 ? "f32" : "f64", (long long)map_shape[0],
                (long long)map_shape[1], (long long)map_shape[2], (long long)map_shape[3],
                (long long)pooled_height, (long long)pooled_width, scale_h, scale_w,
                (long long)sampling_ratio, num_threads, aligned, (long long)boxes.num_rois,
                (long long)boxes.row_stride, boxes.null_boxes, params_null);
        fprintf(stderr, "source strides %lld %lld %lld %lld base %lld elements %lld\n",
                (long long)source.layout.strides[0], (long long)source.layout.strides[1],
                (long long)source.layout.strides[2], (long long)source.layout.strides[3],
                (long long)source.layout.base, (long long)source.layout.elements);
        fprintf(stderr, "result shape %lld %lld %lld %lld strides %lld %lld %lld %lld base %lld "
                "elements %lld\n", (long long)result_layout.shape[0],
                (long long)result_layout.shape[1], (long long)result_layout.shape[2],
                (long long)result_layout.shape[3], (long long)result_layout.strides[0],
                (long long)result_layout.strides[1], (long long)result_layout.strides[2],
                (long long)result_layout.strides[3], (long long)result_layout.base,
                (long long)result_layout.elements);
        for (j = 0; j < boxes.num_rois; ++j) {
            fprintf(stderr, "roi %lld batch %lld\n", (long long)j,
                    (long long)boxes.batch_indices[j]);
        }
        for (j = 0; j < boxes.elements; ++j) {
            fprintf(stderr, "box value %lld: %.9g\n", (long long)j, boxes.values[j]);
        }
    }
    {
        const T *src = FUZZ_TYPED(fuzz_tensor_data)(&source);
        const int64_t *src_strides = source.layout.strides;
        T *dst = (T *)fuzz_buffer_data(&result);
        const int64_t *dst_strides = result_layout.strides;
        const int64_t *argmax_in_data = argmax_in == NULL || argmax_in_layout.null_data
                                            ? NULL
                                            : argmax_in + argmax_in_layout.base;
        int64_t *argmax_out_data = (int64_t *)fuzz_buffer_data(&argmax_out);
        int pass;
        for (pass = 0; pass < (check_threads ? 2 : 1); ++pass) {
            const int threads = pass == 0 ? num_threads : 3;
            if (pass == 1) {
                dst = (T *)fuzz_buffer_data(&result_again);
                argmax_out_data = NULL;
            }
            switch (op) {
            case FUZZ_ROI_ALIGN_FORWARD:
            case FUZZ_ROI_ALIGN_BACKWARD:
            case FUZZ_ROI_ALIGN_MAX_FORWARD:
            case FUZZ_ROI_ALIGN_MAX_BACKWARD: {
                pyroi_roi_align_params p;
                pyroi_roi_align_params_init(&p);
                FUZZ_SET_PARAMS(p);
                p.sampling_ratio = sampling_ratio;
                p.aligned = aligned;
                if (op == FUZZ_ROI_ALIGN_FORWARD) {
                    status = PYROI_TYPED_CALL(pyroi_roi_align_forward)(FUZZ_FORWARD_ARGS);
                } else if (op == FUZZ_ROI_ALIGN_BACKWARD) {
                    status = PYROI_TYPED_CALL(pyroi_roi_align_backward)(FUZZ_BACKWARD_ARGS);
                } else if (op == FUZZ_ROI_ALIGN_MAX_FORWARD) {
                    status = PYROI_TYPED_CALL(pyroi_roi_align_max_forward)(
                        src, map_shape, src_strides, FUZZ_ROIS, dst, dst_strides, FUZZ_ARGMAX_OUT,
                        FUZZ_PARAMS);
                } else {
                    status = PYROI_TYPED_CALL(pyroi_roi_align_max_backward)(
                        src, src_strides, FUZZ_ARGMAX_IN, FUZZ_ROIS, dst, map_shape, dst_strides,
                        FUZZ_PARAMS);
                }
                FUZZ_CHECK_FIND(pyroi_roi_align_find_invalid_roi, FUZZ_IN_MAP);
                break;
            }
            case FUZZ_ROI_POOL_FORWARD:
            case FUZZ_ROI_POOL_BACKWARD: {
                pyroi_roi_pool_params p;
                pyroi_roi_pool_params_init(&p);
                FUZZ_SET_PARAMS(p);
                if (op == FUZZ_ROI_POOL_FORWARD) {
                    status = PYROI_TYPED_CALL(pyroi_roi_pool_forward)(
                        src, map_shape, src_strides, FUZZ_ROIS, dst, dst_strides, FUZZ_ARGMAX_OUT,
                        FUZZ_PARAMS);
                    FUZZ_CHECK_FIND(pyroi_roi_pool_find_invalid_roi, FUZZ_IN_BATCH);
                } else {
                    status = PYROI_TYPED_CALL(pyroi_roi_pool_backward)(
                        src, src_strides, FUZZ_ARGMAX_IN, index_data, boxes.num_rois, dst,
                        map_shape, dst_strides, FUZZ_PARAMS);
                }
                break;
            }
            case FUZZ_PS_ROI_ALIGN_FORWARD:
            case FUZZ_PS_ROI_ALIGN_BACKWARD: {
                pyroi_ps_roi_align_params p;
                pyroi_ps_roi_align_params_init(&p);
                FUZZ_SET_PARAMS(p);
                p.sampling_ratio = sampling_ratio;
                FUZZ_CALL_COMMON(op == FUZZ_PS_ROI_ALIGN_FORWARD, pyroi_ps_roi_align, FUZZ_IN_MAP);
                break;
            }
            case FUZZ_PS_ROI_POOL_FORWARD:
            case FUZZ_PS_ROI_POOL_BACKWARD: {
                pyroi_ps_roi_pool_params p;
                pyroi_ps_roi_pool_params_init(&p);
                FUZZ_SET_PARAMS(p);
                FUZZ_CALL_COMMON(op == FUZZ_PS_ROI_POOL_FORWARD, pyroi_ps_roi_pool, FUZZ_IN_BATCH);
                break;
            }
            case FUZZ_ROTATED_FORWARD:
            case FUZZ_ROTATED_BACKWARD: {
                pyroi_roi_align_rotated_params p;
                pyroi_roi_align_rotated_params_init(&p);
                FUZZ_SET_PARAMS(p);
                p.sampling_ratio = sampling_ratio;
                p.aligned = aligned;
                p.clockwise = (int)((flags >> 6) & 1u);
                p.angle_in_degrees = !((flags >> 7) & 1u);
                FUZZ_CALL_COMMON(op == FUZZ_ROTATED_FORWARD, pyroi_roi_align_rotated, FUZZ_IN_MAP);
                break;
            }
            case FUZZ_LEVELS_FORWARD:
            case FUZZ_LEVELS_BACKWARD: {
                pyroi_roi_align_params p;
                pyroi_roi_align_params_init(&p);
                FUZZ_SET_PARAMS(p);
                p.sampling_ratio = sampling_ratio;
                p.aligned = aligned;
                FUZZ_TYPED(fuzz_pyramid_pass)(&pyramid, pass);
                pyramid.maps[0] = op == FUZZ_LEVELS_FORWARD ? (const void *)src : (void *)dst;
                for (i = 0; i < 4; ++i) {
                    pyramid.strides[i] = op == FUZZ_LEVELS_FORWARD ? src_strides[i]
                                                                   : dst_strides[i];
                }
                if (op == FUZZ_LEVELS_FORWARD) {
                    status = PYROI_TYPED_CALL(pyroi_roi_align_levels_forward)(
                        pyramid.num_levels, (const T *const *)pyramid.maps, pyramid.shapes,
                        pyramid.strides, pyramid.scales, FUZZ_ROIS, dst, dst_strides,
                        &pyramid.level_params, FUZZ_PARAMS);
                } else {
                    status = PYROI_TYPED_CALL(pyroi_roi_align_levels_backward)(
                        src, src_strides, FUZZ_ROIS, pyramid.num_levels,
                        (T *const *)pyramid.maps, pyramid.shapes, pyramid.strides,
                        pyramid.scales, &pyramid.level_params, FUZZ_PARAMS);
                }
                break;
            }
            default:
                break;
            }
            for (i = 1; levels && backward && i < pyramid.built; ++i) {
                if (pass == 0) {
                    fuzz_check_writes(&pyramid.grads[0][i], status == PYROI_OK);
                    FUZZ_REQUIRE(status != PYROI_OK || !pyramid.grads[0][i].layout.overlapping ||
                                 pyramid.grads[0][i].layout.count == 0);
                } else if (status == PYROI_OK) {
                    FUZZ_REQUIRE(memcmp(pyramid.grads[0][i].bytes, pyramid.grads[1][i].bytes,
                                        (size_t)pyramid.grads[0][i].layout.elements *
                                            sizeof(T)) == 0);
                }
            }
            if (pass == 0) {
                fuzz_check_writes(&result, status == PYROI_OK);
                if (argmax_out.bytes != NULL && !argmax_out.layout.null_data) {
                    fuzz_check_writes(&argmax_out, status == PYROI_OK);
                }
                if (status == PYROI_OK) {
                    /* an output whose elements overlap must have been rejected */
                    FUZZ_REQUIRE(!(result_layout.overlapping && result_layout.count > 0));
                    if (argmax_out.bytes != NULL && !argmax_out.layout.null_data) {
                        FUZZ_REQUIRE(!(argmax_out.layout.overlapping &&
                                       argmax_out.layout.count > 0));
                    }
                    if (!hostile_data) {
                        FUZZ_TYPED(fuzz_check_finite)(&result);
                    }
                }
            } else if (status == PYROI_OK) {
                /* same bits whatever the thread count (the fill pattern included) */
                FUZZ_REQUIRE(memcmp(result.bytes, result_again.bytes,
                                    (size_t)result_layout.elements * sizeof(T)) == 0);
            }
            if (status != PYROI_OK) {
                break;
            }
        }
    }

done:
    free(source.buffer);
    free(result.bytes);
    free(result_again.bytes);
    free(argmax_out.bytes);
    free(argmax_in);
    free(box_values);
    fuzz_boxes_free(&boxes);
    FUZZ_TYPED(fuzz_pyramid_free)(&pyramid);
}

#endif /* PYROI_FUZZ_TEMPLATE */
