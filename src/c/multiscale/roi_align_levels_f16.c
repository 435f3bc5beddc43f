/* roi_align_levels_f16.c - the multi-level RoIAlign's float16 entry points: in place where
 * every level's order allows it (roi_align/roi_align_half.h), else every level's chunk of
 * channels through one float32 multi-level call (the planes and chunk sizes of
 * core/half_chunks.h). */
#include "core/half_chunks.h"
#include "core/validate.h"
#include "roi_align/roi_align_half.h"

#include <string.h>

/* A float16 call of pyroi_roi_align_levels_forward_f32 / _backward_f32: the chunks run over
 * the channels every level shares; a chunk widens (forward) or rounds (backward) the same
 * channels of every level, sized from level 0, the largest. */
typedef struct half_levels {
    int backward;
    int64_t num_levels;
    uint16_t *maps[PYROI_MAX_FPN_LEVELS]; /* the caller's inputs or grad_inputs */
    int64_t shapes[PYROI_MAX_FPN_LEVELS][4]; /* read once from the caller */
    int64_t strides[PYROI_MAX_FPN_LEVELS][4];
    uint16_t *pooled;
    int64_t pooled_strides[4];
    const float *boxes;
    int64_t num_rois, box_row_stride;
    const int64_t *batch_indices;
    const double *spatial_scales;
    const pyroi_fpn_level_params *level_params;
    const pyroi_roi_align_params *params;
} half_levels;

/* Copies the caller's level tensors into call (each value read once) and checks them, before
 * any element is read: level 0 with the pooled tensor and RoI rows, every level's own shape
 * and strides, and the batch and channels every level shares. */
static pyroi_status half_levels_check(half_levels *call, const void *const *maps,
                                      const int64_t *shapes, const int64_t *strides,
                                      const int64_t pooled_strides[4])
{
    const pyroi_tensor_role map_role = call->backward ? PYROI_TENSOR_OUTPUT : PYROI_TENSOR_INPUT;
    pyroi_status status = pyroi_check_roi_align_params(call->params);
    int64_t l;
    if (status != PYROI_OK) {
        return status;
    }
    if (call->level_params == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    /* as the float32 entry, before any of the num_levels maps is read */
    status = pyroi_check_fpn_level_count(call->level_params, call->num_levels);
    if (status != PYROI_OK) {
        return status;
    }
    if (maps == NULL || shapes == NULL || strides == NULL || pooled_strides == NULL ||
        call->spatial_scales == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    memcpy(call->pooled_strides, pooled_strides, sizeof(call->pooled_strides));
    for (l = 0; l < call->num_levels && status == PYROI_OK; ++l) {
        call->maps[l] = (uint16_t *)(uintptr_t)maps[l]; /* an input is never written */
        memcpy(call->shapes[l], shapes + 4 * l, sizeof(call->shapes[l]));
        memcpy(call->strides[l], strides + 4 * l, sizeof(call->strides[l]));
        status = pyroi_check_tensor4(call->maps[l], call->shapes[l], call->strides[l], map_role);
        if (status == PYROI_OK && (call->shapes[l][0] != call->shapes[0][0] ||
                                   call->shapes[l][1] != call->shapes[0][1])) {
            status = PYROI_E_INVALID_SHAPE;
        }
    }
    return status != PYROI_OK
               ? status
               : pyroi_check_pooling_call(
                     call->maps[0], call->shapes[0], call->strides[0], map_role, call->pooled,
                     call->pooled_strides,
                     call->backward ? PYROI_TENSOR_INPUT : PYROI_TENSOR_OUTPUT, -1,
                     call->params->pooled_height, call->params->pooled_width, call->boxes,
                     call->num_rois, call->box_row_stride, 4, call->batch_indices);
}

/* Widens (round 0) or rounds (round 1) the chunk from channel first of every level. */
static pyroi_status half_levels_planes(const half_levels *call, int64_t first,
                                       int64_t level_shapes[][4], float *const *wide, int round)
{
    pyroi_status status = PYROI_OK;
    int64_t l;
    for (l = 0; l < call->num_levels && status == PYROI_OK; ++l) {
        uint16_t *map = call->maps[l] + (first > 0 ? first * call->strides[l][1] : 0);
        status = pyroi_half_planes_run(round ? NULL : map, round ? map : NULL, level_shapes[l],
                                       call->strides[l], level_shapes[l][1], wide[l],
                                       call->params->num_threads, call->params->cancel);
    }
    return status;
}

/* Runs the checked call chunk by chunk, as half_run does for one map. */
static pyroi_status half_levels_run(const half_levels *call)
{
    const int num_threads = call->params->num_threads;
    pyroi_cancel *const cancel = call->params->cancel;
    const int64_t channels = call->shapes[0][1];
    int64_t pooled_shape[4], level_shapes[PYROI_MAX_FPN_LEVELS][4];
    int64_t level_strides[PYROI_MAX_FPN_LEVELS][4], pooled_chunk_strides[4];
    float *wide[PYROI_MAX_FPN_LEVELS], *pooled_wide, *scratch;
    pyroi_scratch_keeper keeper;
    uint64_t bytes = 0, offsets[PYROI_MAX_FPN_LEVELS + 1];
    int64_t chunk_channels = pyroi_half_chunk_channels(call->shapes[0], 1, num_threads);
    int64_t l, first, count, elements;
    pyroi_status status = PYROI_OK;
    /* the scratch of the largest chunk: every level's planes, then the pooled planes, each on
     * a cache line (the checks bound every tensor's elements: no overflow) */
    pyroi_pooled_shape(call->num_rois, chunk_channels, call->params->pooled_height,
                       call->params->pooled_width, pooled_shape);
    for (l = 0; l <= call->num_levels; ++l) {
        const int64_t *shape = l < call->num_levels ? call->shapes[l] : pooled_shape;
        elements = l < call->num_levels ? shape[0] * chunk_channels : shape[0] * shape[1];
        offsets[l] = bytes;
        if (!pyroi_mul_nonneg(elements, shape[2] * shape[3], &elements) ||
            (uint64_t)elements > ((uint64_t)SIZE_MAX - bytes - 128) / 4) {
            return PYROI_E_NO_MEMORY;
        }
        bytes += ((uint64_t)elements * 4 + 63) / 64 * 64;
    }
    scratch = (float *)pyroi_aligned_malloc((size_t)bytes + 64);
    if (scratch == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    for (l = 0; l < call->num_levels; ++l) {
        wide[l] = scratch + offsets[l] / 4;
    }
    pooled_wide = scratch + offsets[call->num_levels] / 4;
    pyroi_scratch_keep_begin(&keeper); /* as in half_run */
    /* one call even without channels: its float32 call checks the boxes and parameters */
    for (first = 0; status == PYROI_OK; first += count) {
        uint16_t *pooled = call->pooled + (first > 0 ? first * call->pooled_strides[1] : 0);
        count = channels - first < chunk_channels ? channels - first : chunk_channels;
        pooled_shape[1] = count;
        half_contiguous_strides(pooled_shape, pooled_chunk_strides);
        for (l = 0; l < call->num_levels; ++l) {
            memcpy(level_shapes[l], call->shapes[l], sizeof(level_shapes[l]));
            level_shapes[l][1] = count;
            half_contiguous_strides(level_shapes[l], level_strides[l]);
        }
        status = call->backward ? pyroi_half_planes_run(pooled, NULL, pooled_shape,
                                                        call->pooled_strides, count,
                                                        pooled_wide, num_threads, cancel)
                                : half_levels_planes(call, first, level_shapes, wide, 0);
        if (status == PYROI_OK) {
            status = call->backward
                         ? pyroi_roi_align_levels_backward_f32(
                               pooled_wide, pooled_chunk_strides, call->boxes, call->num_rois,
                               call->box_row_stride, call->batch_indices, call->num_levels,
                               wide, &level_shapes[0][0], &level_strides[0][0],
                               call->spatial_scales, call->level_params, call->params)
                         : pyroi_roi_align_levels_forward_f32(
                               call->num_levels, (const float *const *)wide,
                               &level_shapes[0][0], &level_strides[0][0], call->spatial_scales,
                               call->boxes, call->num_rois, call->box_row_stride,
                               call->batch_indices, pooled_wide, pooled_chunk_strides,
                               call->level_params, call->params);
        }
        if (status == PYROI_OK) {
            status = call->backward
                         ? half_levels_planes(call, first, level_shapes, wide, 1)
                         : pyroi_half_planes_run(NULL, pooled, pooled_shape,
                                                 call->pooled_strides, count, pooled_wide,
                                                 num_threads, cancel);
        }
        if (first + count >= channels) {
            break;
        }
    }
    pyroi_scratch_keep_end(&keeper);
    pyroi_aligned_free(scratch);
    return status;
}

/* A float16 multi-level call: its tensors checked, then run (the caller's pooled tensor is
 * written by a forward, only read by a backward). */
static pyroi_status half_levels_call(int backward, int64_t num_levels,
                                     const void *const *maps, const int64_t *shapes,
                                     const int64_t *strides, const double *spatial_scales,
                                     const float *boxes, int64_t num_rois,
                                     int64_t box_row_stride, const int64_t *batch_indices,
                                     const uint16_t *pooled, const int64_t pooled_strides[4],
                                     const pyroi_fpn_level_params *level_params,
                                     const pyroi_roi_align_params *params)
{
    half_levels call;
    pyroi_status status;
    call.backward = backward;
    call.num_levels = num_levels;
    call.pooled = (uint16_t *)(uintptr_t)pooled;
    call.boxes = boxes;
    call.num_rois = num_rois;
    call.box_row_stride = box_row_stride;
    call.batch_indices = batch_indices;
    call.spatial_scales = spatial_scales;
    call.level_params = level_params;
    call.params = params;
    status = half_levels_check(&call, maps, shapes, strides, pooled_strides);
    if (status == PYROI_OK) { /* in place where every level's order allows it */
        int taken;
        status = pyroi_roi_align_levels_half(
            backward, num_levels, call.maps, &call.shapes[0][0], &call.strides[0][0],
            spatial_scales, call.pooled, call.pooled_strides, boxes, num_rois, box_row_stride,
            batch_indices, level_params, params, &taken);
        if (taken) {
            return status;
        }
    }
    return status != PYROI_OK ? status : half_levels_run(&call);
}

pyroi_status pyroi_roi_align_levels_forward_f16(
    int64_t num_levels, const uint16_t *const *inputs, const int64_t *input_shapes,
    const int64_t *input_strides, const double *spatial_scales, const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices, uint16_t *output,
    const int64_t output_strides[4], const pyroi_fpn_level_params *level_params,
    const pyroi_roi_align_params *params)
{
    return half_levels_call(0, num_levels, (const void *const *)inputs, input_shapes,
                            input_strides, spatial_scales, boxes, num_rois, box_row_stride,
                            batch_indices, output, output_strides, level_params, params);
}

pyroi_status pyroi_roi_align_levels_backward_f16(
    const uint16_t *grad_output, const int64_t grad_output_strides[4], const float *boxes,
    int64_t num_rois, int64_t box_row_stride, const int64_t *batch_indices, int64_t num_levels,
    uint16_t *const *grad_inputs, const int64_t *grad_input_shapes,
    const int64_t *grad_input_strides, const double *spatial_scales,
    const pyroi_fpn_level_params *level_params, const pyroi_roi_align_params *params)
{
    return half_levels_call(1, num_levels, (const void *const *)grad_inputs,
                            grad_input_shapes, grad_input_strides, spatial_scales, boxes,
                            num_rois, box_row_stride, batch_indices, grad_output,
                            grad_output_strides, level_params, params);
}
