/* validate.c - argument checks shared by every operator. */
#include "core/validate.h"

#include <math.h>

#if !defined(__GNUC__) && !defined(__clang__)
/* PYROI_OWN_COPY's fence where there is no empty asm statement (common.h): the compiler must
 * assume that a call through this pointer reads and writes the copy. */
static void own_copy_nothing(void *copy)
{
    (void)copy;
}
void (*volatile pyroi_own_copy_fence)(void *copy) = own_copy_nothing;
#endif

static int64_t abs_stride(int64_t stride)
{
    return stride < 0 ? -stride : stride;
}

pyroi_status pyroi_check_tensor4(const void *data, const int64_t shape[4],
                                 const int64_t strides[4], pyroi_tensor_role role)
{
    int64_t count = 1;
    int64_t span = 0; /* largest |offset| reachable from element 0 */
    int order[4];
    int i, j, used = 0;

    if (shape == NULL || strides == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    int64_t nonzero_product = 1;
    for (i = 0; i < 4; ++i) {
        if (shape[i] < 0) {
            return PYROI_E_INVALID_SHAPE;
        }
        /* the product of the non-zero sizes must fit too: kernels form H * W even when N
         * or C is 0 */
        if (!pyroi_mul_nonneg(nonzero_product, shape[i] > 0 ? shape[i] : 1, &nonzero_product)) {
            return PYROI_E_INVALID_SHAPE;
        }
        count = shape[i] == 0 ? 0 : count * shape[i]; /* <= nonzero_product or 0 */
    }
    if (count == 0) {
        return PYROI_OK; /* nothing is read or written; data may be NULL */
    }
    if (data == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    for (i = 0; i < 4; ++i) {
        int64_t reach;
        if (shape[i] == 1) {
            continue; /* the stride of a length-1 axis is never applied */
        }
        if (strides[i] == INT64_MIN) {
            return PYROI_E_INVALID_STRIDES;
        }
        if (!pyroi_mul_nonneg(abs_stride(strides[i]), shape[i] - 1, &reach) ||
            !pyroi_add_nonneg(span, reach, &span)) {
            return PYROI_E_INVALID_STRIDES;
        }
        order[used++] = i;
    }
    if (role == PYROI_TENSOR_OUTPUT) {
        /* Sufficient test for no self-overlap, exact for every layout NumPy slicing and
         * transposition produce: sorted by |stride|, each axis steps past everything the
         * smaller axes reach. */
        int64_t reached = 0;
        for (i = 1; i < used; ++i) { /* insertion sort of at most 4 axes */
            int axis = order[i];
            for (j = i; j > 0 && abs_stride(strides[order[j - 1]]) > abs_stride(strides[axis]); --j) {
                order[j] = order[j - 1];
            }
            order[j] = axis;
        }
        for (i = 0; i < used; ++i) {
            int64_t stride = abs_stride(strides[order[i]]);
            if (stride <= reached) {
                return PYROI_E_INVALID_STRIDES;
            }
            reached += stride * (shape[order[i]] - 1); /* cannot overflow: bounded by span */
        }
    }
    return PYROI_OK;
}

pyroi_status pyroi_check_roi_rows(const void *boxes, int64_t num_rois, int64_t box_row_stride,
                                  int64_t coords_per_box, const int64_t *batch_indices)
{
    int64_t reach;

    if (num_rois < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    if (num_rois == 0) {
        return PYROI_OK;
    }
    if (boxes == NULL || batch_indices == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    if (box_row_stride == INT64_MIN ||
        !pyroi_mul_nonneg(abs_stride(box_row_stride), num_rois - 1, &reach) ||
        !pyroi_add_nonneg(reach, coords_per_box, &reach)) {
        return PYROI_E_INVALID_STRIDES;
    }
    return PYROI_OK;
}

/* The first of num_rois batch indices outside [0, num_images), or -1. */
static int64_t first_bad_batch_index(const int64_t *batch_indices, int64_t num_rois,
                                     int64_t num_images)
{
    int64_t k;
    for (k = 0; k < num_rois; ++k) {
        if (batch_indices[k] < 0 || batch_indices[k] >= num_images) {
            return k;
        }
    }
    return -1;
}

pyroi_status pyroi_find_invalid_batch_index(pyroi_status params_status, const void *boxes,
                                            int64_t num_rois, int64_t box_row_stride,
                                            int64_t coords_per_box,
                                            const int64_t *batch_indices, int64_t num_images,
                                            int64_t height, int64_t width, int64_t *failed_roi)
{
    pyroi_status status;
    if (failed_roi == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    *failed_roi = -1;
    if (params_status != PYROI_OK) {
        return params_status;
    }
    if (num_images < 0 || height < 0 || width < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    /* pointers and offsets with the index values left out, so that the loop below can name
     * the first offending RoI */
    status = pyroi_check_roi_rows(boxes, num_rois, box_row_stride, coords_per_box,
                                  batch_indices);
    if (status != PYROI_OK) {
        return status;
    }
    *failed_roi = first_bad_batch_index(batch_indices, num_rois, num_images);
    return *failed_roi < 0 ? PYROI_OK : PYROI_E_INVALID_BATCH_INDEX;
}

pyroi_status pyroi_check_rois(const void *boxes, int64_t num_rois, int64_t box_row_stride,
                              int64_t coords_per_box, const int64_t *batch_indices,
                              int64_t num_images)
{
    pyroi_status status = pyroi_check_roi_rows(boxes, num_rois, box_row_stride, coords_per_box,
                                               batch_indices);
    if (status != PYROI_OK) {
        return status;
    }
    return first_bad_batch_index(batch_indices, num_rois, num_images) < 0
               ? PYROI_OK
               : PYROI_E_INVALID_BATCH_INDEX;
}

pyroi_status pyroi_check_batch_indices(const int64_t *batch_indices, int64_t num_rois,
                                       int64_t num_images)
{
    if (num_rois < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    if (num_rois > 0 && batch_indices == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    if (first_bad_batch_index(batch_indices, num_rois, num_images) >= 0) {
        return PYROI_E_INVALID_BATCH_INDEX;
    }
    return PYROI_OK;
}

/* The checks of the fields every RoI pooling parameter struct has, in the order of their
 * statuses; sampling_ratio is 0 for the operators without one. */
static pyroi_status check_pooling_params(int64_t pooled_height, int64_t pooled_width,
                                         double spatial_scale_h, double spatial_scale_w,
                                         int64_t sampling_ratio, int num_threads)
{
    if (pooled_height <= 0 || pooled_width <= 0) {
        return PYROI_E_INVALID_OUTPUT_SIZE;
    }
    if (!(isfinite(spatial_scale_h) && spatial_scale_h >= 0.0) ||
        !(isfinite(spatial_scale_w) && spatial_scale_w >= 0.0)) {
        return PYROI_E_INVALID_SCALE;
    }
    if (sampling_ratio > PYROI_MAX_SAMPLING_RATIO) {
        return PYROI_E_INVALID_SAMPLING_RATIO;
    }
    if (num_threads < 0) {
        return PYROI_E_INVALID_NUM_THREADS;
    }
    return PYROI_OK;
}

/* The status of p, a pointer to any of the parameter structs (their common fields share
 * names); sampling_ratio: 0 for the operators without one. */
#define POOLING_PARAMS_STATUS(p, sampling_ratio)                                               \
    ((p) == NULL ? PYROI_E_NULL_POINTER                                                      \
                 : check_pooling_params((p)->pooled_height, (p)->pooled_width,               \
                                        (p)->spatial_scale_h, (p)->spatial_scale_w,          \
                                        (sampling_ratio), (p)->num_threads))

pyroi_status pyroi_check_roi_align_params(const pyroi_roi_align_params *params)
{
    return POOLING_PARAMS_STATUS(params, params->sampling_ratio);
}

pyroi_status pyroi_check_fpn_level_count(const pyroi_fpn_level_params *level_params,
                                         int64_t num_levels)
{
    /* the level parameters' own checks (no boxes: nothing else is looked at) */
    const pyroi_status status = pyroi_fpn_levels_f64(NULL, 0, 0, level_params, NULL);
    if (status != PYROI_OK) {
        return status;
    }
    /* unsigned: no overflow */
    if (num_levels < 1 || num_levels > PYROI_MAX_FPN_LEVELS ||
        (uint64_t)level_params->max_level - (uint64_t)level_params->min_level !=
            (uint64_t)(num_levels - 1)) {
        return PYROI_E_INVALID_SHAPE;
    }
    return PYROI_OK;
}

pyroi_status pyroi_check_ps_roi_align_params(const pyroi_ps_roi_align_params *params)
{
    return POOLING_PARAMS_STATUS(params, params->sampling_ratio);
}

pyroi_status pyroi_check_roi_align_rotated_params(const pyroi_roi_align_rotated_params *params)
{
    return POOLING_PARAMS_STATUS(params, params->sampling_ratio);
}

pyroi_status pyroi_check_prroi_pool_params(const pyroi_prroi_pool_params *params)
{
    return POOLING_PARAMS_STATUS(params, 0);
}

pyroi_status pyroi_check_deform_roi_pool_params(const pyroi_deform_roi_pool_params *params)
{
    const pyroi_status status = POOLING_PARAMS_STATUS(params, params->sampling_ratio);
    if (status == PYROI_OK && !isfinite(params->gamma)) {
        return PYROI_E_INVALID_SCALE;
    }
    return status;
}

pyroi_status pyroi_check_roi_pool_params(const pyroi_roi_pool_params *params)
{
    return POOLING_PARAMS_STATUS(params, 0);
}

pyroi_status pyroi_check_ps_roi_pool_params(const pyroi_ps_roi_pool_params *params)
{
    return POOLING_PARAMS_STATUS(params, 0);
}

void pyroi_pooled_shape(int64_t num_rois, int64_t channels, int64_t pooled_height,
                        int64_t pooled_width, int64_t pooled_shape[4])
{
    pooled_shape[0] = num_rois;
    pooled_shape[1] = channels;
    pooled_shape[2] = pooled_height;
    pooled_shape[3] = pooled_width;
}

pyroi_status pyroi_check_pooling_call(const void *features, const int64_t features_shape[4],
                                      const int64_t features_strides[4],
                                      pyroi_tensor_role features_role, const void *pooled,
                                      const int64_t pooled_strides[4],
                                      pyroi_tensor_role pooled_role, int64_t pooled_channels,
                                      int64_t pooled_height, int64_t pooled_width,
                                      const void *boxes, int64_t num_rois,
                                      int64_t box_row_stride, int64_t coords_per_box,
                                      const int64_t *batch_indices)
{
    int64_t pooled_shape[4];
    pyroi_status status;
    if (num_rois < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    status = pyroi_check_tensor4(features, features_shape, features_strides, features_role);
    if (status != PYROI_OK) {
        return status;
    }
    pyroi_pooled_shape(num_rois, pooled_channels < 0 ? features_shape[1] : pooled_channels,
                       pooled_height, pooled_width, pooled_shape);
    status = pyroi_check_tensor4(pooled, pooled_shape, pooled_strides, pooled_role);
    if (status != PYROI_OK) {
        return status;
    }
    /* the batch indices' values are checked in the call's copy of them (pyroi_rois_copy) */
    return pyroi_check_roi_rows(boxes, num_rois, box_row_stride, coords_per_box, batch_indices);
}

pyroi_status pyroi_check_grad_box_rows(const void *grad_boxes, int64_t num_rois,
                                       int64_t row_stride)
{
    if (num_rois > 0 && grad_boxes == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    if (num_rois > 1 && (row_stride == INT64_MIN || (row_stride < 4 && row_stride > -4))) {
        return PYROI_E_INVALID_STRIDES;
    }
    /* the offsets' range: as for the boxes' rows (a non-NULL stand-in for the indices) */
    return pyroi_check_roi_rows(grad_boxes, num_rois, row_stride, 4, &num_rois);
}
