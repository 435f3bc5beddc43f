/* validate.h - argument checks shared by every operator (the C API is public, so every entry
 * point validates in full before it reads a tensor element). */
#ifndef PYROI_VALIDATE_H
#define PYROI_VALIDATE_H

#include "core/common.h"
#include "core/parallel.h"

typedef enum pyroi_tensor_role {
    PYROI_TENSOR_INPUT = 0,  /* read only: any strides, overlap allowed (broadcast views) */
    PYROI_TENSOR_OUTPUT = 1  /* written: its elements must not overlap each other */
} pyroi_tensor_role;

/* Checks a 4-d tensor: non-negative shape, element count and every reachable offset within
 * int64, data non-NULL when it has elements, and for outputs no self-overlap. */
pyroi_status pyroi_check_tensor4(const void *data, const int64_t shape[4],
                                 const int64_t strides[4], pyroi_tensor_role role);

/* Checks the box rows of num_rois RoIs: count, pointers and row offsets (not the batch indices'
 * values; the find-invalid-RoI functions test those themselves to name the first offender). */
pyroi_status pyroi_check_roi_rows(const void *boxes, int64_t num_rois, int64_t box_row_stride,
                                  int64_t coords_per_box, const int64_t *batch_indices);

/* The first steps of every find-invalid-RoI function, after its parameter check gave
 * params_status: failed_roi not NULL (set to -1), then params_status, num_images, height and
 * width not negative, the box rows' pointers and offsets, and every batch index in order: the
 * first outside [0, num_images) is reported in *failed_roi with PYROI_E_INVALID_BATCH_INDEX.
 * PYROI_OK: the caller goes on to the boxes. */
pyroi_status pyroi_find_invalid_batch_index(pyroi_status params_status, const void *boxes,
                                            int64_t num_rois, int64_t box_row_stride,
                                            int64_t coords_per_box,
                                            const int64_t *batch_indices, int64_t num_images,
                                            int64_t height, int64_t width, int64_t *failed_roi);

/* The verdict on box k of a scan over a call's boxes, whose own check gave box_status:
 * PYROI_E_CANCELLED when the call is cancelled (polled as pyroi_cancel_at does), else
 * box_status, a failure naming k in *failed_roi. */
static inline pyroi_status pyroi_box_scan_verdict(pyroi_status box_status,
                                                  pyroi_call_cancel *cancel, int64_t k,
                                                  int64_t *failed_roi)
{
    if (pyroi_cancel_at(cancel, k)) {
        return PYROI_E_CANCELLED;
    }
    if (box_status != PYROI_OK) {
        *failed_roi = k;
    }
    return box_status;
}

/* Checks the box rows and batch indices of num_rois RoIs against a batch of num_images:
 * pointers, offsets, and every index in [0, num_images). Reads the batch indices. */
pyroi_status pyroi_check_rois(const void *boxes, int64_t num_rois, int64_t box_row_stride,
                              int64_t coords_per_box, const int64_t *batch_indices,
                              int64_t num_images);

/* Checks the fields of RoIAlign parameters. */
pyroi_status pyroi_check_roi_align_params(const pyroi_roi_align_params *params);

/* Checks the level parameters of a multi-level RoIAlign call (their own checks, as
 * pyroi_fpn_levels_f64 makes them) and that num_levels is one map per level from min_level to
 * max_level - before the caller's num_levels maps are read. */
pyroi_status pyroi_check_fpn_level_count(const pyroi_fpn_level_params *level_params,
                                         int64_t num_levels);

/* Checks that each of num_rois batch indices lies in [0, num_images) (for entry points that
 * take batch indices without boxes). */
pyroi_status pyroi_check_batch_indices(const int64_t *batch_indices, int64_t num_rois,
                                       int64_t num_images);

/* Checks the fields of RoIPool parameters. */
pyroi_status pyroi_check_roi_pool_params(const pyroi_roi_pool_params *params);

/* Checks the fields of position-sensitive RoIAlign parameters. */
pyroi_status pyroi_check_ps_roi_align_params(const pyroi_ps_roi_align_params *params);

/* Checks the fields of position-sensitive RoIPool parameters. */
pyroi_status pyroi_check_ps_roi_pool_params(const pyroi_ps_roi_pool_params *params);

/* Checks the fields of Precise RoI Pooling parameters. */
pyroi_status pyroi_check_prroi_pool_params(const pyroi_prroi_pool_params *params);

/* Checks the fields of deformable RoI pooling parameters (gamma finite: else
 * PYROI_E_INVALID_SCALE). */
pyroi_status pyroi_check_deform_roi_pool_params(const pyroi_deform_roi_pool_params *params);

/* Checks the fields of rotated RoIAlign parameters. */
pyroi_status pyroi_check_roi_align_rotated_params(const pyroi_roi_align_rotated_params *params);

/* The checks every pooling entry point shares once its parameters are valid: num_rois >= 0,
 * the feature tensor (input or grad_input), the pooled tensor (output or grad_output) of shape
 * (num_rois, pooled_channels, pooled_height, pooled_width) (pooled_channels < 0: the
 * features' channel count), and the RoIs' pointers and row offsets (coords_per_box
 * coordinates a row; not the batch indices' values: pyroi_rois_copy checks those in the copy
 * that the call then reads). */
pyroi_status pyroi_check_pooling_call(
    const void *features, const int64_t features_shape[4], const int64_t features_strides[4],
    pyroi_tensor_role features_role,
    const void *pooled, const int64_t pooled_strides[4], pyroi_tensor_role pooled_role,
    int64_t pooled_channels, int64_t pooled_height, int64_t pooled_width,
    const void *boxes, int64_t num_rois, int64_t box_row_stride, int64_t coords_per_box,
    const int64_t *batch_indices);

/* The rows of a box gradient (PrRoIPool's, RoIAlign's): num_rois rows of 4 values, row k at
 * k * row_stride (|row_stride| >= 4 when num_rois > 1: the rows do not overlap), every offset
 * within int64; grad_boxes not NULL when num_rois > 0. */
pyroi_status pyroi_check_grad_box_rows(const void *grad_boxes, int64_t num_rois,
                                       int64_t row_stride);

/* The shape of a pooled tensor (output or grad_output): (num_rois, channels, pooled_height,
 * pooled_width). */
void pyroi_pooled_shape(int64_t num_rois, int64_t channels, int64_t pooled_height,
                        int64_t pooled_width, int64_t pooled_shape[4]);

#endif /* PYROI_VALIDATE_H */
