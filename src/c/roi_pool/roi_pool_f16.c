/* roi_pool_f16.c - RoIPool's float16 entry points: in place where its lane-major orders run
 * (roi_pool_half.h), else through the chunks of core/half_chunks.h. */
#include "core/half_chunks.h"
#include "core/half.h"
#include "core/validate.h"
#include "roi_pool/roi_pool_half.h"

#include <string.h>

/* RoIPool's forward likewise where its lane-major orders run (roi_pool_half.h). */
static pyroi_status half_roi_pool_forward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_pool_forward_half(c->map, c->map_shape, c->map_strides, HALF_ROIS(c),
                                       c->pooled, c->pooled_strides, c->argmax,
                                       c->argmax_strides,
                                       c->argmax_bytes == (int64_t)sizeof(int64_t),
                                       HALF_PARAMS(roi_pool, c), taken);
}

HALF_FORWARD_ARGMAX(roi_pool_forward, roi_pool, OUT, half_roi_pool_forward_whole)
HALF_FORWARD_ARGMAX(roi_pool_forward_i32, roi_pool, I32_OUT, half_roi_pool_forward_whole)

/* RoIPool's backward from an argmax likewise where its image blocks run (roi_pool_half.h). */
static pyroi_status half_roi_pool_backward_whole(const half_call *c, int *taken)
{
    return pyroi_roi_pool_backward_half(c->pooled, c->pooled_strides, c->argmax,
                                        c->argmax_strides,
                                        c->argmax_bytes == (int64_t)sizeof(int64_t),
                                        c->batch_indices, c->num_rois, c->map, c->map_shape,
                                        c->map_strides, HALF_PARAMS(roi_pool, c), taken);
}

/* RoIPool's backward reads no boxes: its RoIs are the batch indices of the argmax rows. Its
 * float16 forms, from an int64 (name roi_pool_backward) or int32 (roi_pool_backward_i32)
 * argmax of element type index. */
#define HALF_ROI_POOL_BACKWARD(name, index)                                                   \
    HALF_CHUNK_CALL(name, (HALF_POOLED(t), HALF_ARGMAX(c, t), c->batch_indices, c->num_rois,  \
                           HALF_MAP(t), HALF_PARAMS(roi_pool, c)))                            \
    pyroi_status pyroi_##name##_f16(                                                          \
        const uint16_t *grad_output, const int64_t grad_output_strides[4],                    \
        const index *argmax, const int64_t argmax_strides[4], const int64_t *batch_indices,  \
        int64_t num_rois, uint16_t *grad_input, const int64_t grad_input_shape[4],            \
        const int64_t grad_input_strides[4], const pyroi_roi_pool_params *params)             \
    {                                                                                         \
        half_call call;                                                                       \
        const pyroi_status status = pyroi_check_roi_pool_params(params);                     \
        if (status != PYROI_OK) {                                                             \
            return status;                                                                    \
        }                                                                                     \
        half_tensors(&call, 1, grad_input, grad_input_strides, grad_output,                   \
                     grad_output_strides, HALF_ARGMAX_ARGUMENTS);                             \
        half_rois(&call, NULL, num_rois, 0, batch_indices, 0);                                \
        HALF_SETTINGS(&call, params, half_##name, half_roi_pool_backward_whole);              \
        return pyroi_half_run(&call, grad_input_shape);                                       \
    }

HALF_ROI_POOL_BACKWARD(roi_pool_backward, int64_t)
HALF_ROI_POOL_BACKWARD(roi_pool_backward_i32, int32_t)

/* RoIPool's backward from the input also reads the forward's float16 input: each chunk's
 * call widens the input's channels of the chunk too. Chunks run in channel order, so a
 * chunk's first channel is the count of those before it (*next_channel). */
typedef struct half_pool_from_input {
    half_call call; /* first: the chunk's run receives &call */
    const uint16_t *input;
    const int64_t *input_strides;
    int64_t *next_channel;
} half_pool_from_input;

static pyroi_status half_roi_pool_backward_from_input(const half_call *c, const half_chunk *t)
{
    const half_pool_from_input *f = (const half_pool_from_input *)(const void *)c;
    const int64_t first = *f->next_channel;
    /* the chunk's grad_input planes, whose size half_run checked */
    float *input = (float *)pyroi_aligned_malloc(
        (size_t)(t->map_shape[0] * t->map_shape[1] * t->map_shape[2] * t->map_shape[3]) *
            sizeof(float) + 64);
    pyroi_status status;
    if (input == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    status = pyroi_half_planes_run(f->input + (first > 0 ? first * f->input_strides[1] : 0),
                                   NULL, t->map_shape, f->input_strides, t->map_shape[1], input,
                                   c->num_threads, c->cancel);
    if (status == PYROI_OK) {
        status = pyroi_roi_pool_backward_from_input_f32(
            HALF_POOLED(t), input, t->map_shape, t->map_strides, HALF_ROIS(c), t->map,
            t->map_strides, HALF_PARAMS(roi_pool, c));
    }
    *f->next_channel = first + t->map_shape[1];
    pyroi_aligned_free(input);
    return status;
}

/* The whole call in place where its image blocks run (roi_pool_half.h). */
static pyroi_status half_roi_pool_backward_from_input_whole(const half_call *c, int *taken)
{
    const half_pool_from_input *f = (const half_pool_from_input *)(const void *)c;
    return pyroi_roi_pool_backward_from_input_half(
        c->pooled, c->pooled_strides, f->input, c->map_shape, f->input_strides, HALF_ROIS(c),
        c->map, c->map_strides, HALF_PARAMS(roi_pool, c), taken);
}

pyroi_status pyroi_roi_pool_backward_from_input_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const uint16_t *input,
    const int64_t input_shape[4], const int64_t input_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices,
    uint16_t *grad_input, const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params)
{
    half_pool_from_input from_input;
    int64_t shape[4], next_channel = 0; /* shape: read once, for both maps */
    pyroi_status status = pyroi_check_roi_pool_params(params);
    if (status == PYROI_OK && input_shape == NULL) {
        status = PYROI_E_NULL_POINTER;
    }
    if (status != PYROI_OK) {
        return status;
    }
    memcpy(shape, input_shape, sizeof(shape));
    status = pyroi_check_tensor4(input, shape, input_strides, PYROI_TENSOR_INPUT);
    if (status != PYROI_OK) {
        return status;
    }
    from_input.input = input;
    from_input.input_strides = input_strides;
    from_input.next_channel = &next_channel;
    half_tensors(&from_input.call, 1, grad_input, grad_input_strides, grad_output,
                 grad_output_strides, HALF_NO_ARGMAX_ARGUMENTS);
    half_rois(&from_input.call, boxes, num_rois, box_row_stride, batch_indices, 4);
    HALF_SETTINGS(&from_input.call, params, half_roi_pool_backward_from_input,
                  half_roi_pool_backward_from_input_whole);
    return pyroi_half_run(&from_input.call, shape);
}
