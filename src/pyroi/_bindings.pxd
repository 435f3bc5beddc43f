# Mirror of src/pyroi/_bindings.h (the C half of the bindings) for Cython, and nothing else.
from libc.stdint cimport int64_t, int8_t

from pyroi._cpyroi cimport (PYROI_MAX_FPN_LEVELS, pyroi_cancel, pyroi_fpn_level_params,
                            pyroi_status)


cdef extern from "_bindings.h" nogil:
    ctypedef enum Layout "binding_layout":
        FORWARD "BINDING_FORWARD"
        BACKWARD "BINDING_BACKWARD"
        QUERY "BINDING_QUERY"
        BOX_BACKWARD "BINDING_BOX_BACKWARD"

    ctypedef struct Call "binding_call":
        int f64
        int f16
        void *map
        int64_t map_shape[4]
        int64_t map_strides[4]
        void *pooled
        int64_t pooled_strides[4]
        void *boxes
        int64_t num_rois
        int64_t box_row_stride
        int64_t *batch_indices
        void *argmax
        int64_t argmax_strides[4]
        void *features
        int64_t features_strides[4]
        void *grad_boxes
        int64_t grad_box_row_stride
        void *workspace
        size_t workspace_size
        int64_t failed_roi
        int64_t pooled_height
        int64_t pooled_width
        double spatial_scale_h
        double spatial_scale_w
        int64_t sampling_ratio
        int aligned
        int clockwise
        int angle_in_degrees
        int num_threads
        int merge_samples
        pyroi_cancel *cancel
        int method
        int placement
        double extrapolation_value
        double gamma
        void *offset
        void *mask
        void *grad_offset
        void *grad_mask
        int64_t offset_strides[4]
        int64_t mask_strides[4]
        int64_t grad_offset_strides[4]
        int64_t grad_mask_strides[4]

    ctypedef struct Entry "binding_entry":
        pyroi_status (*run)(Call *call) noexcept nogil
        void (*fill_params)(Call *call) noexcept nogil
        pyroi_status (*find_invalid_roi)(Call *call) noexcept nogil
        Layout layout
        int argmax_bytes
        int box_size
        int position_sensitive
        int float16
        const char *boxes_name

    # BINDING_ENTRIES: one line each
    const Entry roi_align_forward "binding_roi_align_forward"
    const Entry roi_align_backward "binding_roi_align_backward"
    const Entry roi_align_max_forward "binding_roi_align_max_forward"
    const Entry roi_align_max_backward "binding_roi_align_max_backward"
    const Entry roi_align_onnx_max_forward "binding_roi_align_onnx_max_forward_argmax"
    const Entry roi_align_onnx_max_backward "binding_roi_align_onnx_max_backward"
    const Entry roi_align_backward_with_workspace "binding_roi_align_backward_with_workspace"
    const Entry roi_align_backward_workspace_size "binding_roi_align_backward_workspace_size"
    const Entry roi_pool_forward "binding_roi_pool_forward"
    const Entry roi_pool_backward "binding_roi_pool_backward"
    const Entry roi_pool_forward_i32 "binding_roi_pool_forward_i32"
    const Entry roi_pool_backward_i32 "binding_roi_pool_backward_i32"
    const Entry roi_pool_backward_from_input "binding_roi_pool_backward_from_input"
    const Entry ps_roi_align_forward "binding_ps_roi_align_forward"
    const Entry ps_roi_align_backward "binding_ps_roi_align_backward"
    const Entry ps_roi_pool_forward "binding_ps_roi_pool_forward"
    const Entry ps_roi_pool_backward "binding_ps_roi_pool_backward"
    const Entry roi_align_rotated_forward "binding_roi_align_rotated_forward"
    const Entry roi_align_rotated_backward "binding_roi_align_rotated_backward"
    const Entry roi_align_backward_boxes "binding_roi_align_backward_boxes"
    const Entry prroi_pool_forward "binding_prroi_pool_forward"
    const Entry prroi_pool_backward "binding_prroi_pool_backward"
    const Entry prroi_pool_backward_boxes "binding_prroi_pool_backward_boxes"
    const Entry crop_and_resize_forward "binding_crop_and_resize_forward"
    const Entry crop_and_resize_backward_image "binding_crop_and_resize_backward_image"
    const Entry crop_and_resize_backward_boxes "binding_crop_and_resize_backward_boxes"
    const Entry deform_roi_pool_forward "binding_deform_roi_pool_forward"
    const Entry deform_roi_pool_backward "binding_deform_roi_pool_backward"
    const Entry deform_roi_pool_backward_offset "binding_deform_roi_pool_backward_offset"

    pyroi_status roi_rows_batch_indices "binding_roi_rows_batch_indices" (
        int f64, const void *rows, int64_t num_rois, int64_t row_stride,
        int64_t coords_per_box, int64_t num_images, int64_t *batch_indices,
        int64_t *failed_roi)
    pyroi_status fpn_levels "binding_fpn_levels" (
        int f64, const void *boxes, int64_t num_rois, int64_t box_row_stride,
        const pyroi_fpn_level_params *params, int64_t *levels)

    ctypedef struct Pyramid "binding_pyramid":
        int64_t num_levels
        void *maps[PYROI_MAX_FPN_LEVELS]
        int64_t shapes[4 * PYROI_MAX_FPN_LEVELS]
        int64_t strides[4 * PYROI_MAX_FPN_LEVELS]
        double scales[PYROI_MAX_FPN_LEVELS]
        pyroi_fpn_level_params levels
    pyroi_status roi_align_levels_forward "binding_roi_align_levels_forward" (
        Call *call, const Pyramid *pyramid)
    pyroi_status roi_align_levels_backward "binding_roi_align_levels_backward" (
        Call *call, const Pyramid *pyramid)

    ctypedef struct AxisSamples "binding_axis_samples":
        int64_t capacity
        void *coords
        int64_t *taps
        void *weights
        int8_t *in_map
        void *edges

    pyroi_status roi_align_sample_grid "binding_roi_align_sample_grid" (
        Call *call, const void *box, int64_t height, int64_t width, int64_t *grid)
    pyroi_status roi_align_sample_axes "binding_roi_align_sample_axes" (
        Call *call, const void *box, int64_t height, int64_t width, const AxisSamples *rows,
        const AxisSamples *cols)
    pyroi_status roi_pool_bin_edges "binding_roi_pool_bin_edges" (
        Call *call, const void *box, int64_t height, int64_t width, int64_t *roi_pixels,
        int64_t *row_edges, int64_t *col_edges)
    pyroi_status roi_pool_backward_from_input_pays "binding_roi_pool_backward_from_input_pays" (
        Call *call, const int64_t *input_shape, int64_t num_rois, int *pays)
