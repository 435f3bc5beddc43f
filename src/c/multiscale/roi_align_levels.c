/* roi_align_levels.c - RoIAlign over a feature pyramid in one call, as
 * torchvision.ops.MultiScaleRoIAlign: each RoI is assigned its level (fpn.c) and pooled from
 * that level's map by the RoIAlign kernels (roi_align.c), writing (forward) or reading
 * (backward) its row of the pooled tensor in place, in the RoIs' original order. float32 and
 * float64; the typed part is roi_align_levels_template.h; float16 in place at the end. */
#include "core/parallel.h"
#include "roi_align/roi_align_half.h"
#include "roi_align/roi_align_rows.h"
#include "core/rois.h"
#include "core/validate.h"

#include <stdlib.h>
#include <string.h>

/* The call's own copy of everything that sizes or addresses memory, read from the caller
 * once: parameters, level parameters, each level's map (pointer, shape, strides) and
 * params, and the pooled tensor's strides. */
typedef struct roi_align_levels_call {
    int64_t num_levels;
    pyroi_fpn_level_params level_params;
    const void *maps[PYROI_MAX_FPN_LEVELS]; /* input or grad_input of each level */
    int64_t pooled_strides[4];              /* output or grad_output */
    int64_t shapes[PYROI_MAX_FPN_LEVELS][4];
    int64_t strides[PYROI_MAX_FPN_LEVELS][4];
    pyroi_roi_align_params params[PYROI_MAX_FPN_LEVELS]; /* spatial scale of the level */
} roi_align_levels_call;

/* Steps 1 and 2 of the checks (pyroi.h) for a call with these maps (input or grad_input, role
 * maps_role) and pooled tensor (output or grad_output), then the box rows' pointers and
 * offsets; fills *call. */
static pyroi_status roi_align_levels_check_call(
    roi_align_levels_call *call, int64_t num_levels, const void *const *maps,
    const int64_t *shapes, const int64_t *strides, const double *spatial_scales,
    pyroi_tensor_role maps_role, const void *pooled, const int64_t pooled_strides[4],
    pyroi_tensor_role pooled_role, const void *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, const pyroi_fpn_level_params *level_params,
    const pyroi_roi_align_params *params)
{
    pyroi_status status;
    int64_t l;
    int i;
    if (params == NULL || level_params == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    call->params[0] = *params;
    call->level_params = *level_params;
    status = pyroi_check_roi_align_params(&call->params[0]);
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_check_fpn_level_count(&call->level_params, num_levels);
    if (status != PYROI_OK) {
        return status;
    }
    if (maps == NULL || shapes == NULL || strides == NULL || spatial_scales == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    call->num_levels = num_levels;
    for (l = 0; l < num_levels; ++l) {
        call->params[l] = call->params[0];
        call->params[l].spatial_scale_h = spatial_scales[l];
        call->params[l].spatial_scale_w = call->params[l].spatial_scale_h;
        status = pyroi_check_roi_align_params(&call->params[l]);
        if (status != PYROI_OK) {
            return status;
        }
    }
    for (l = 0; l < num_levels; ++l) {
        call->maps[l] = maps[l];
        for (i = 0; i < 4; ++i) {
            call->shapes[l][i] = shapes[4 * l + i];
            call->strides[l][i] = strides[4 * l + i];
        }
        status = pyroi_check_tensor4(call->maps[l], call->shapes[l], call->strides[l], maps_role);
        if (status != PYROI_OK) {
            return status;
        }
        if (call->shapes[l][0] != call->shapes[0][0] || call->shapes[l][1] != call->shapes[0][1]) {
            return PYROI_E_INVALID_SHAPE; /* the levels share the batch and the channels */
        }
    }
    if (pooled_strides == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    for (i = 0; i < 4; ++i) {
        call->pooled_strides[i] = pooled_strides[i];
    }
    return pyroi_check_pooling_call(call->maps[0], call->shapes[0], call->strides[0], maps_role,
                                    pooled, call->pooled_strides, pooled_role, -1,
                                    call->params[0].pooled_height, call->params[0].pooled_width,
                                    boxes, num_rois, box_row_stride, 4, batch_indices);
}

/* The RoIs of a call sorted by level (stable: original order within a level), from the
 * call's copy of them: level l's are entries [start[l], start[l + 1]), those of no level
 * (levels -1) [start[num_levels], num_rois). */
typedef struct roi_align_levels_rois {
    pyroi_rois copy;
    int64_t start[PYROI_MAX_FPN_LEVELS + 2];
    int64_t *rows;          /* original index (the pooled tensor's row) */
    int64_t *batch_indices;
    void *boxes;            /* packed rows of 4 coordinates */
    int64_t *levels;        /* per original RoI */
    void *allocation;
} roi_align_levels_rois;

/* RoIs whose levels are computed between two cancel checks (a few milliseconds). */
#define ROI_ALIGN_LEVELS_SLICE ((int64_t)1 << 16)

static void roi_align_levels_rois_free(roi_align_levels_rois *rois)
{
    free(rois->allocation);
    rois->allocation = NULL;
    pyroi_rois_free(&rois->copy);
}

/* Copies the RoIs (each value read once; batch indices checked against num_images) and makes
 * room for the level of each and the sorted arrays. */
static pyroi_status roi_align_levels_rois_copy(roi_align_levels_rois *rois, const void *boxes,
                                               size_t value_bytes, int64_t num_rois,
                                               int64_t box_row_stride,
                                               const int64_t *batch_indices, int64_t num_images,
                                               pyroi_cancel *cancel)
{
    pyroi_status status;
    const uint64_t per_roi = 3 * sizeof(int64_t) + 4 * value_bytes;
    rois->allocation = NULL;
    status = pyroi_rois_copy(&rois->copy, boxes, value_bytes, num_rois, box_row_stride, 4,
                             batch_indices, num_images, NULL, cancel);
    if (status != PYROI_OK) {
        return status;
    }
    if ((uint64_t)num_rois > (uint64_t)(SIZE_MAX / 4) / per_roi) {
        roi_align_levels_rois_free(rois);
        return PYROI_E_NO_MEMORY;
    }
    rois->allocation = malloc((size_t)((uint64_t)num_rois * per_roi + 1));
    if (rois->allocation == NULL) {
        roi_align_levels_rois_free(rois);
        return PYROI_E_NO_MEMORY;
    }
    rois->levels = (int64_t *)rois->allocation;
    rois->rows = rois->levels + num_rois;
    rois->batch_indices = rois->rows + num_rois;
    rois->boxes = rois->batch_indices + num_rois;
    return PYROI_OK;
}

/* Fills the sorted arrays from the levels (each in [-1, num_levels)), by counting. */
static void roi_align_levels_rois_sort(roi_align_levels_rois *rois, int64_t num_levels,
                                       size_t value_bytes)
{
    const int64_t num_rois = rois->copy.num_rois;
    int64_t next[PYROI_MAX_FPN_LEVELS + 1];
    int64_t k, l;
    for (l = 0; l <= num_levels + 1; ++l) {
        rois->start[l] = 0;
    }
    for (k = 0; k < num_rois; ++k) { /* no level counts as level num_levels */
        const int64_t level = rois->levels[k] < 0 ? num_levels : rois->levels[k];
        ++rois->start[level + 1];
    }
    for (l = 0; l <= num_levels; ++l) {
        rois->start[l + 1] += rois->start[l];
        next[l] = rois->start[l];
    }
    for (k = 0; k < num_rois; ++k) {
        const int64_t level = rois->levels[k] < 0 ? num_levels : rois->levels[k];
        const int64_t i = next[level]++;
        rois->rows[i] = k;
        rois->batch_indices[i] = rois->copy.batch_indices[k];
        memcpy((unsigned char *)rois->boxes + (size_t)i * 4 * value_bytes,
               (const unsigned char *)rois->copy.boxes + (size_t)k * 4 * value_bytes,
               4 * value_bytes);
    }
}

#define PYROI_DTYPE_TEMPLATE "multiscale/roi_align_levels_template.h"
#include "core/each_dtype.h"

/* ---- float16 in place (roi_align_half.h) ----------------------------------------------- */

/* Level l's RoIs of a checked float16 call as pyroi_roi_align_rows_half. */
static pyroi_status roi_align_level_half(const roi_align_levels_call *call,
                                         const roi_align_levels_rois *rois, int64_t l,
                                         int backward, int dry_run, uint16_t *pooled,
                                         int *taken)
{
    const int64_t first = rois->start[l];
    return pyroi_roi_align_rows_half(
        backward, dry_run, (uint16_t *)(uintptr_t)call->maps[l], call->shapes[l],
        call->strides[l], pooled, call->pooled_strides, (const float *)rois->boxes + 4 * first,
        rois->start[l + 1] - first, 4, rois->batch_indices + first, rois->rows + first,
        &call->params[l], taken);
}

pyroi_status pyroi_roi_align_levels_half(
    int backward, int64_t num_levels, uint16_t *const *maps, const int64_t *shapes,
    const int64_t *strides, const double *spatial_scales, uint16_t *pooled,
    const int64_t pooled_strides[4], const float *boxes, int64_t num_rois,
    int64_t box_row_stride, const int64_t *batch_indices,
    const pyroi_fpn_level_params *level_params, const pyroi_roi_align_params *params,
    int *taken)
{
    roi_align_levels_call call;
    roi_align_levels_rois rois;
    int64_t l, i;
    int level_taken = 1;
    pyroi_status status = roi_align_levels_check_call(
        &call, num_levels, (const void *const *)maps, shapes, strides, spatial_scales,
        backward ? PYROI_TENSOR_OUTPUT : PYROI_TENSOR_INPUT, pooled, pooled_strides,
        backward ? PYROI_TENSOR_INPUT : PYROI_TENSOR_OUTPUT, boxes, num_rois, box_row_stride,
        batch_indices, level_params, params);
    status = roi_align_levels_prepare_f32(status, &rois, &call, boxes, num_rois,
                                          box_row_stride, batch_indices);
    *taken = 1;
    if (status != PYROI_OK) {
        return status;
    }
    /* every level's order first: all in place, or nothing written */
    for (l = 0; l < num_levels && status == PYROI_OK && level_taken; ++l) {
        if (rois.start[l + 1] > rois.start[l]) {
            status = roi_align_level_half(&call, &rois, l, backward, 1, pooled, &level_taken);
        }
    }
    if (status == PYROI_OK && !level_taken) {
        *taken = 0;
        roi_align_levels_rois_free(&rois);
        return PYROI_OK;
    }
    /* a RoI of no level gets zeros, as in torchvision (its row, a 1 x C x PH x PW tensor) */
    for (i = rois.start[num_levels]; !backward && status == PYROI_OK && i < num_rois; ++i) {
        const int64_t row[4] = {1, call.shapes[0][1], call.params[0].pooled_height,
                                call.params[0].pooled_width};
        if (pyroi_zero_channels(pooled + rois.rows[i] * call.pooled_strides[0],
                                sizeof(uint16_t), row, call.pooled_strides, 0, row[1],
                                params->cancel)) {
            status = PYROI_E_CANCELLED;
        }
    }
    for (l = 0; l < num_levels && status == PYROI_OK && level_taken; ++l) {
        if (rois.start[l + 1] > rois.start[l]) {
            status = roi_align_level_half(&call, &rois, l, backward, 0, pooled, &level_taken);
        } else if (backward &&
                   pyroi_zero_channels((uint16_t *)(uintptr_t)call.maps[l], sizeof(uint16_t),
                                       call.shapes[l], call.strides[l], 0, call.shapes[l][1],
                                       params->cancel)) {
            status = PYROI_E_CANCELLED; /* a level without RoIs: its map is zero */
        }
    }
    /* The run decides as its dry run did (the schedule is a function of the plan, the
     * parameters and the CPU's caches). Should a level still decline, the chunks run the whole
     * call: they write every row and every level's map, so nothing of this call is left. */
    *taken = level_taken;
    roi_align_levels_rois_free(&rois);
    return status;
}
