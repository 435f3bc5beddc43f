/* half_chunks.h - the chunked float16 call (internal, not installed): a family's *_f16 entry
 * point runs its float32 entry point on chunks of channels widened into float32 scratch, and
 * rounds each chunk's result once (core/half_chunks.c says how). A family defines its entry
 * points with the macros below in its own <family>_f16.c; this mechanism reaches the family
 * only through the function pointers of the call (half_chunk_run, half_whole_run), so it
 * calls no family by name. */
#ifndef PYROI_HALF_CHUNKS_H
#define PYROI_HALF_CHUNKS_H

#include "core/common.h"

#include <stdint.h>

/* A chunk's float32 tensors, as the float32 entry point takes them. */
typedef struct half_chunk {
    float *map; /* a forward's input, a backward's grad_input: (N, channels, H, W) */
    int64_t map_shape[4];
    int64_t map_strides[4];
    float *pooled; /* a forward's output, a backward's grad_output: (K, channels', PH, PW) */
    int64_t pooled_strides[4];
    void *argmax; /* the caller's, at the chunk's channels (NULL: none) */
} half_chunk;

typedef struct half_call half_call;
typedef pyroi_status (*half_chunk_run)(const half_call *call, const half_chunk *chunk);
/* The whole call at once, reading and writing the float16 tensors in place (*taken 1), or
 * nothing (*taken 0: the chunks then run). */
typedef pyroi_status (*half_whole_run)(const half_call *call, int *taken);

struct half_call {
    int backward; /* reads the pooled tensor and writes the map, else the reverse */
    /* the caller's float16 tensors (the one read is not written: const again in the run) */
    uint16_t *map;
    int64_t map_shape[4]; /* read once from the caller */
    const int64_t *map_strides;
    uint16_t *pooled;
    const int64_t *pooled_strides;
    char *argmax; /* of the pooled tensor's shape, or NULL */
    const int64_t *argmax_strides;
    int64_t argmax_bytes; /* of an entry: int64 or int32 */
    int position_sensitive; /* a pooled channel reads PH * PW map channels, else one */
    int coords_per_box;     /* 0: the call takes batch indices without boxes */
    /* the float32 entry point's other arguments */
    const float *boxes;
    int64_t num_rois, box_row_stride;
    const int64_t *batch_indices;
    const void *params;
    int64_t pooled_height, pooled_width;
    int num_threads;
    pyroi_cancel *cancel;
    half_chunk_run run;
    half_whole_run whole; /* NULL: none */
};

/* Widens (from) or rounds (to) the planes of a (shape[0], channels, shape[2], shape[3])
 * chunk, with the call's threads. */
pyroi_status pyroi_half_planes_run(const uint16_t *from, uint16_t *to, const int64_t shape[4],
                                   const int64_t strides[4], int64_t channels, float *wide,
                                   int num_threads, pyroi_cancel *cancel);

/* Map channels a chunk holds (a multiple of group, the map channels a pooled channel reads),
 * sized from the L2 cache and the workers. */
int64_t pyroi_half_chunk_channels(const int64_t map_shape[4], int64_t group, int num_threads);

/* Checks the caller's tensors of call (map_shape read once), runs call->whole, else the
 * chunks. */
pyroi_status pyroi_half_run(half_call *call, const int64_t *map_shape);

static inline void half_contiguous_strides(const int64_t shape[4], int64_t strides[4])
{
    strides[3] = 1;
    strides[2] = shape[3];
    strides[1] = shape[2] * shape[3];
    strides[0] = shape[1] * shape[2] * shape[3];
}

static inline void half_tensors(half_call *call, int backward, const uint16_t *map,
                         const int64_t map_strides[4], const uint16_t *pooled,
                         const int64_t pooled_strides[4], const void *argmax,
                         const int64_t argmax_strides[4], int64_t argmax_bytes)
{
    call->backward = backward;
    call->map = (uint16_t *)map; /* the tensor a call reads is never written */
    call->map_strides = map_strides;
    call->pooled = (uint16_t *)pooled;
    call->pooled_strides = pooled_strides;
    call->argmax = (char *)argmax;
    call->argmax_strides = argmax_strides;
    call->argmax_bytes = argmax_bytes;
    call->position_sensitive = 0;
}

static inline void half_rois(half_call *call, const float *boxes, int64_t num_rois,
                      int64_t box_row_stride, const int64_t *batch_indices, int coords_per_box)
{
    call->boxes = boxes;
    call->num_rois = num_rois;
    call->box_row_stride = box_row_stride;
    call->batch_indices = batch_indices;
    call->coords_per_box = coords_per_box;
}

/* The settings every params struct has, the chunk's float32 call and the whole call (NULL:
 * none; after the params' check: p is not NULL). */
#define HALF_SETTINGS(call, p, chunk_run, whole_run)                                          \
    ((call)->params = (p), (call)->pooled_height = (p)->pooled_height,                        \
     (call)->pooled_width = (p)->pooled_width, (call)->num_threads = (p)->num_threads,        \
     (call)->cancel = (p)->cancel, (call)->run = (chunk_run), (call)->whole = (whole_run))

/* The float32 entry points' arguments, from a call c and its chunk t. */
#define HALF_MAP(t) (t)->map, (t)->map_shape, (t)->map_strides
#define HALF_POOLED(t) (t)->pooled, (t)->pooled_strides
#define HALF_ARGMAX(c, t) (t)->argmax, (c)->argmax_strides
#define HALF_ROIS(c) (c)->boxes, (c)->num_rois, (c)->box_row_stride, (c)->batch_indices
#define HALF_PARAMS(family, c) ((const pyroi_##family##_params *)(c)->params)

/* The body of an entry point: the params' check, the call's tensors (... : the argmax and its
 * strides, or NULL, NULL) and RoIs, the chunks. */
#define HALF_ENTRY_BODY(family, backward, map, map_strides, pooled, pooled_strides,          \
                        position_sensitive_, coords, chunk_run, whole_run, map_shape, ...)   \
    half_call call;                                                                           \
    const pyroi_status status = pyroi_check_##family##_params(params);                       \
    if (status != PYROI_OK) {                                                                 \
        return status;                                                                        \
    }                                                                                         \
    half_tensors(&call, backward, map, map_strides, pooled, pooled_strides, __VA_ARGS__);     \
    call.position_sensitive = position_sensitive_;                                            \
    half_rois(&call, boxes, num_rois, box_row_stride, batch_indices, coords);                 \
    HALF_SETTINGS(&call, params, chunk_run, whole_run);                                       \
    return pyroi_half_run(&call, map_shape);

/* The chunk call half_<name>: pyroi_<name>_f32 with <arguments> (of a call c and its chunk t). */
#define HALF_CHUNK_CALL(name, arguments)                                                      \
    static pyroi_status half_##name(const half_call *c, const half_chunk *t)                 \
    {                                                                                         \
        return pyroi_##name##_f32 arguments;                                                  \
    }

/* Defines the float16 forward pyroi_<name>_f16 (arguments as <name>_f32, float16 tensors,
 * float32 boxes) from the chunk call <arguments> of pyroi_<name>_f32, and whole_run (NULL:
 * none). */
#define HALF_FORWARD(name, family, coords, position_sensitive_, argmax_parameters,          \
                     argmax_arguments, arguments, whole_run)                                  \
    HALF_CHUNK_CALL(name, arguments)                                                          \
    pyroi_status pyroi_##name##_f16(                                                          \
        const uint16_t *input, const int64_t input_shape[4], const int64_t input_strides[4],  \
        const float *boxes, int64_t num_rois, int64_t box_row_stride,                         \
        const int64_t *batch_indices, uint16_t *output,                                       \
        const int64_t output_strides[4] argmax_parameters,                                    \
        const pyroi_##family##_params *params)                                                \
    {                                                                                         \
        HALF_ENTRY_BODY(family, 0, input, input_strides, output, output_strides,              \
                        position_sensitive_, coords, half_##name, whole_run, input_shape,     \
                        argmax_arguments)                                                     \
    }

/* Likewise a backward, which writes grad_input. */
#define HALF_BACKWARD(name, family, coords, position_sensitive_, argmax_parameters,         \
                      argmax_arguments, arguments, whole_run)                                 \
    HALF_CHUNK_CALL(name, arguments)                                                          \
    pyroi_status pyroi_##name##_f16(                                                          \
        const uint16_t *grad_output,                                                          \
        const int64_t grad_output_strides[4] argmax_parameters, const float *boxes,           \
        int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,               \
        uint16_t *grad_input, const int64_t grad_input_shape[4],                              \
        const int64_t grad_input_strides[4], const pyroi_##family##_params *params)           \
    {                                                                                         \
        HALF_ENTRY_BODY(family, 1, grad_input, grad_input_strides, grad_output,               \
                        grad_output_strides, position_sensitive_, coords, half_##name,        \
                        whole_run, grad_input_shape, argmax_arguments)                        \
    }

#define HALF_NO_ARGMAX_PARAMETERS
#define HALF_NO_ARGMAX_ARGUMENTS NULL, NULL, 0
#define HALF_ARGMAX_OUT_PARAMETERS , int64_t *argmax, const int64_t argmax_strides[4]
#define HALF_ARGMAX_IN_PARAMETERS , const int64_t *argmax, const int64_t argmax_strides[4]
#define HALF_ARGMAX_I32_OUT_PARAMETERS , int32_t *argmax, const int64_t argmax_strides[4]
#define HALF_ARGMAX_ARGUMENTS argmax, argmax_strides, (int64_t)sizeof *argmax

#define HALF_FORWARD_ARGS(family) \
    (HALF_MAP(t), HALF_ROIS(c), HALF_POOLED(t), HALF_PARAMS(family, c))
#define HALF_FORWARD_ARGMAX_ARGS(family) \
    (HALF_MAP(t), HALF_ROIS(c), HALF_POOLED(t), HALF_ARGMAX(c, t), HALF_PARAMS(family, c))
#define HALF_BACKWARD_ARGS(family) \
    (HALF_POOLED(t), HALF_ROIS(c), HALF_MAP(t), HALF_PARAMS(family, c))
#define HALF_BACKWARD_ARGMAX_ARGS(family) \
    (HALF_POOLED(t), HALF_ARGMAX(c, t), HALF_ROIS(c), HALF_MAP(t), HALF_PARAMS(family, c))


/* One-line forms of HALF_FORWARD / HALF_BACKWARD for an operator of 4-coordinate boxes that is
 * not position-sensitive: a forward without argmax, a forward writing an argmax
 * (HALF_ARGMAX_<kind>_PARAMETERS: OUT, int64, or I32_OUT), a backward reading one. */
#define HALF_FORWARD_NO_ARGMAX(name, family, whole_run)                                       \
    HALF_FORWARD(name, family, 4, 0, HALF_NO_ARGMAX_PARAMETERS, HALF_NO_ARGMAX_ARGUMENTS,     \
                 HALF_FORWARD_ARGS(family), whole_run)
#define HALF_FORWARD_ARGMAX(name, family, kind, whole_run)                                    \
    HALF_FORWARD(name, family, 4, 0, HALF_ARGMAX_##kind##_PARAMETERS, HALF_ARGMAX_ARGUMENTS,  \
                 HALF_FORWARD_ARGMAX_ARGS(family), whole_run)
#define HALF_BACKWARD_ARGMAX(name, family, whole_run)                                         \
    HALF_BACKWARD(name, family, 4, 0, HALF_ARGMAX_IN_PARAMETERS, HALF_ARGMAX_ARGUMENTS,       \
                  HALF_BACKWARD_ARGMAX_ARGS(family), whole_run)

/* The whole call of pyroi_<name>_f16 (a forward, or a backward), in place by the family's
 * pyroi_<name>_half (its <family>_half.h), which sets *taken: half_<name>_whole. */
#define HALF_WHOLE_FORWARD(name, family)                                                      \
    static pyroi_status half_##name##_whole(const half_call *c, int *taken)                   \
    {                                                                                         \
        return pyroi_##name##_half(c->map, c->map_shape, c->map_strides, HALF_ROIS(c),        \
                                   c->pooled, c->pooled_strides, HALF_PARAMS(family, c),      \
                                   taken);                                                    \
    }
#define HALF_WHOLE_BACKWARD(name, family)                                                     \
    static pyroi_status half_##name##_whole(const half_call *c, int *taken)                   \
    {                                                                                         \
        return pyroi_##name##_half(c->pooled, c->pooled_strides, HALF_ROIS(c), c->map,        \
                                   c->map_shape, c->map_strides, HALF_PARAMS(family, c),      \
                                   taken);                                                    \
    }

/* The float16 forward and backward of an operator without argmax, pyroi_<op>_forward_f16 and
 * pyroi_<op>_backward_f16: in place by pyroi_<op>_forward_half / _backward_half where those
 * take the call, else in chunks through pyroi_<op>_forward_f32 / _backward_f32. */
#define HALF_FORWARD_BACKWARD(op, family, coords, position_sensitive_)                        \
    HALF_WHOLE_FORWARD(op##_forward, family)                                                  \
    HALF_WHOLE_BACKWARD(op##_backward, family)                                                \
    HALF_FORWARD(op##_forward, family, coords, position_sensitive_, HALF_NO_ARGMAX_PARAMETERS, \
                 HALF_NO_ARGMAX_ARGUMENTS, HALF_FORWARD_ARGS(family), half_##op##_forward_whole) \
    HALF_BACKWARD(op##_backward, family, coords, position_sensitive_,                        \
                  HALF_NO_ARGMAX_PARAMETERS, HALF_NO_ARGMAX_ARGUMENTS,                        \
                  HALF_BACKWARD_ARGS(family), half_##op##_backward_whole)

#endif /* PYROI_HALF_CHUNKS_H */
