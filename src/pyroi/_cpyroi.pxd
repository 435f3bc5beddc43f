# Mirror of src/c/include/pyroi.h for Cython, and nothing else.
from libc.stdint cimport int64_t, uint16_t
from libc.stdint cimport int8_t


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

    int pyroi_version_number()
    const char *pyroi_version_string()
    const char *pyroi_vector_isa()
    const char *pyroi_status_string(pyroi_status status)

    ctypedef struct pyroi_cancel:
        int requested
        void (*poll)(pyroi_cancel *token) noexcept nogil
        void *poll_context

    void pyroi_cancel_init(pyroi_cancel *token)

    ctypedef struct pyroi_roi_align_params:
        int64_t pooled_height
        int64_t pooled_width
        double spatial_scale_h
        double spatial_scale_w
        int64_t sampling_ratio
        int aligned
        int num_threads
        pyroi_cancel *cancel

    void pyroi_roi_align_params_init(pyroi_roi_align_params *params)

    pyroi_status pyroi_roi_align_forward_f32(
        const float *input, const int64_t *input_shape, const int64_t *input_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *output, const int64_t *output_strides,
        const pyroi_roi_align_params *params)
    pyroi_status pyroi_roi_align_forward_f64(
        const double *input, const int64_t *input_shape, const int64_t *input_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *output, const int64_t *output_strides,
        const pyroi_roi_align_params *params)

    pyroi_status pyroi_roi_align_max_forward_f32(
        const float *input, const int64_t *input_shape, const int64_t *input_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *output, const int64_t *output_strides,
        int64_t *argmax, const int64_t *argmax_strides,
        const pyroi_roi_align_params *params)
    pyroi_status pyroi_roi_align_max_forward_f64(
        const double *input, const int64_t *input_shape, const int64_t *input_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *output, const int64_t *output_strides,
        int64_t *argmax, const int64_t *argmax_strides,
        const pyroi_roi_align_params *params)
    pyroi_status pyroi_roi_align_max_backward_f32(
        const float *grad_output, const int64_t *grad_output_strides,
        const int64_t *argmax, const int64_t *argmax_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_roi_align_params *params)
    pyroi_status pyroi_roi_align_max_backward_f64(
        const double *grad_output, const int64_t *grad_output_strides,
        const int64_t *argmax, const int64_t *argmax_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_roi_align_params *params)

    pyroi_status pyroi_roi_align_find_invalid_roi_f32(
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
        const pyroi_roi_align_params *params, int64_t *failed_roi)
    pyroi_status pyroi_roi_align_find_invalid_roi_f64(
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
        const pyroi_roi_align_params *params, int64_t *failed_roi)

    pyroi_status pyroi_roi_align_backward_f32(
        const float *grad_output, const int64_t *grad_output_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_roi_align_params *params)
    pyroi_status pyroi_roi_align_backward_f64(
        const double *grad_output, const int64_t *grad_output_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_roi_align_params *params)

    ctypedef struct pyroi_roi_pool_params:
        int64_t pooled_height
        int64_t pooled_width
        double spatial_scale_h
        double spatial_scale_w
        int num_threads
        pyroi_cancel *cancel

    void pyroi_roi_pool_params_init(pyroi_roi_pool_params *params)

    pyroi_status pyroi_roi_pool_forward_f32(
        const float *input, const int64_t *input_shape, const int64_t *input_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *output, const int64_t *output_strides,
        int64_t *argmax, const int64_t *argmax_strides,
        const pyroi_roi_pool_params *params)
    pyroi_status pyroi_roi_pool_forward_f64(
        const double *input, const int64_t *input_shape, const int64_t *input_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *output, const int64_t *output_strides,
        int64_t *argmax, const int64_t *argmax_strides,
        const pyroi_roi_pool_params *params)

    pyroi_status pyroi_roi_pool_find_invalid_roi_f32(
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices, int64_t num_images,
        const pyroi_roi_pool_params *params, int64_t *failed_roi)
    pyroi_status pyroi_roi_pool_find_invalid_roi_f64(
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices, int64_t num_images,
        const pyroi_roi_pool_params *params, int64_t *failed_roi)

    pyroi_status pyroi_roi_pool_backward_f32(
        const float *grad_output, const int64_t *grad_output_strides,
        const int64_t *argmax, const int64_t *argmax_strides,
        const int64_t *batch_indices, int64_t num_rois,
        float *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_roi_pool_params *params)
    pyroi_status pyroi_roi_pool_backward_f64(
        const double *grad_output, const int64_t *grad_output_strides,
        const int64_t *argmax, const int64_t *argmax_strides,
        const int64_t *batch_indices, int64_t num_rois,
        double *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_roi_pool_params *params)

    ctypedef struct pyroi_ps_roi_align_params:
        int64_t pooled_height
        int64_t pooled_width
        double spatial_scale_h
        double spatial_scale_w
        int64_t sampling_ratio
        int num_threads
        pyroi_cancel *cancel

    void pyroi_ps_roi_align_params_init(pyroi_ps_roi_align_params *params)

    pyroi_status pyroi_ps_roi_align_forward_f32(
        const float *input, const int64_t *input_shape, const int64_t *input_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *output, const int64_t *output_strides,
        const pyroi_ps_roi_align_params *params)
    pyroi_status pyroi_ps_roi_align_forward_f64(
        const double *input, const int64_t *input_shape, const int64_t *input_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *output, const int64_t *output_strides,
        const pyroi_ps_roi_align_params *params)

    pyroi_status pyroi_ps_roi_align_backward_f32(
        const float *grad_output, const int64_t *grad_output_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_ps_roi_align_params *params)
    pyroi_status pyroi_ps_roi_align_backward_f64(
        const double *grad_output, const int64_t *grad_output_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_ps_roi_align_params *params)

    pyroi_status pyroi_ps_roi_align_find_invalid_roi_f32(
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
        const pyroi_ps_roi_align_params *params, int64_t *failed_roi)
    pyroi_status pyroi_ps_roi_align_find_invalid_roi_f64(
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
        const pyroi_ps_roi_align_params *params, int64_t *failed_roi)

    ctypedef struct pyroi_ps_roi_pool_params:
        int64_t pooled_height
        int64_t pooled_width
        double spatial_scale_h
        double spatial_scale_w
        int num_threads
        pyroi_cancel *cancel

    void pyroi_ps_roi_pool_params_init(pyroi_ps_roi_pool_params *params)

    pyroi_status pyroi_ps_roi_pool_forward_f32(
        const float *input, const int64_t *input_shape, const int64_t *input_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *output, const int64_t *output_strides,
        const pyroi_ps_roi_pool_params *params)
    pyroi_status pyroi_ps_roi_pool_forward_f64(
        const double *input, const int64_t *input_shape, const int64_t *input_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *output, const int64_t *output_strides,
        const pyroi_ps_roi_pool_params *params)

    pyroi_status pyroi_ps_roi_pool_backward_f32(
        const float *grad_output, const int64_t *grad_output_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_ps_roi_pool_params *params)
    pyroi_status pyroi_ps_roi_pool_backward_f64(
        const double *grad_output, const int64_t *grad_output_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_ps_roi_pool_params *params)

    pyroi_status pyroi_ps_roi_pool_find_invalid_roi_f32(
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices, int64_t num_images,
        const pyroi_ps_roi_pool_params *params, int64_t *failed_roi)
    pyroi_status pyroi_ps_roi_pool_find_invalid_roi_f64(
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices, int64_t num_images,
        const pyroi_ps_roi_pool_params *params, int64_t *failed_roi)

    pyroi_status pyroi_roi_rows_batch_indices_f32(const float *rows, int64_t num_rois,
                                                  int64_t row_stride, int64_t coords_per_box,
                                                  int64_t num_images, int64_t *batch_indices,
                                                  int64_t *failed_roi)
    pyroi_status pyroi_roi_rows_batch_indices_f64(const double *rows, int64_t num_rois,
                                                  int64_t row_stride, int64_t coords_per_box,
                                                  int64_t num_images, int64_t *batch_indices,
                                                  int64_t *failed_roi)

    ctypedef struct pyroi_fpn_level_params:
        int64_t min_level
        int64_t max_level
        double canonical_scale
        double canonical_level
        double eps

    void pyroi_fpn_level_params_init(pyroi_fpn_level_params *params)
    pyroi_status pyroi_fpn_levels_f32(const float *boxes, int64_t num_rois,
                                      int64_t box_row_stride,
                                      const pyroi_fpn_level_params *params, int64_t *levels)
    pyroi_status pyroi_fpn_levels_f64(const double *boxes, int64_t num_rois,
                                      int64_t box_row_stride,
                                      const pyroi_fpn_level_params *params, int64_t *levels)

    ctypedef struct pyroi_roi_align_rotated_params:
        int64_t pooled_height
        int64_t pooled_width
        double spatial_scale_h
        double spatial_scale_w
        int64_t sampling_ratio
        int aligned
        int clockwise
        int angle_in_degrees
        int num_threads
        pyroi_cancel *cancel

    void pyroi_roi_align_rotated_params_init(pyroi_roi_align_rotated_params *params)

    pyroi_status pyroi_roi_align_rotated_forward_f32(
        const float *input, const int64_t *input_shape, const int64_t *input_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *output, const int64_t *output_strides,
        const pyroi_roi_align_rotated_params *params)
    pyroi_status pyroi_roi_align_rotated_forward_f64(
        const double *input, const int64_t *input_shape, const int64_t *input_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *output, const int64_t *output_strides,
        const pyroi_roi_align_rotated_params *params)

    pyroi_status pyroi_roi_align_rotated_backward_f32(
        const float *grad_output, const int64_t *grad_output_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_roi_align_rotated_params *params)
    pyroi_status pyroi_roi_align_rotated_backward_f64(
        const double *grad_output, const int64_t *grad_output_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_roi_align_rotated_params *params)

    pyroi_status pyroi_roi_align_rotated_find_invalid_roi_f32(
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
        const pyroi_roi_align_rotated_params *params, int64_t *failed_roi)
    pyroi_status pyroi_roi_align_rotated_find_invalid_roi_f64(
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices, int64_t num_images, int64_t height, int64_t width,
        const pyroi_roi_align_rotated_params *params, int64_t *failed_roi)

    pyroi_status pyroi_roi_align_onnx_max_forward_argmax_f32(
        const float *input, const int64_t *input_shape, const int64_t *input_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *output, const int64_t *output_strides,
        int64_t *argmax, const int64_t *argmax_strides,
        const pyroi_roi_align_params *params)
    pyroi_status pyroi_roi_align_onnx_max_forward_argmax_f64(
        const double *input, const int64_t *input_shape, const int64_t *input_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *output, const int64_t *output_strides,
        int64_t *argmax, const int64_t *argmax_strides,
        const pyroi_roi_align_params *params)
    pyroi_status pyroi_roi_align_onnx_max_backward_f32(
        const float *grad_output, const int64_t *grad_output_strides,
        const int64_t *argmax, const int64_t *argmax_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_roi_align_params *params)
    pyroi_status pyroi_roi_align_onnx_max_backward_f64(
        const double *grad_output, const int64_t *grad_output_strides,
        const int64_t *argmax, const int64_t *argmax_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_roi_align_params *params)

    pyroi_status pyroi_roi_align_backward_workspace_size_f32(
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices, const int64_t *grad_input_shape,
        const pyroi_roi_align_params *params, size_t *workspace_size)
    pyroi_status pyroi_roi_align_backward_workspace_size_f64(
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices, const int64_t *grad_input_shape,
        const pyroi_roi_align_params *params, size_t *workspace_size)
    pyroi_status pyroi_roi_align_backward_with_workspace_f32(
        const float *grad_output, const int64_t *grad_output_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        float *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_roi_align_params *params, void *workspace, size_t workspace_size)
    pyroi_status pyroi_roi_align_backward_with_workspace_f64(
        const double *grad_output, const int64_t *grad_output_strides,
        const double *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        double *grad_input, const int64_t *grad_input_shape, const int64_t *grad_input_strides,
        const pyroi_roi_align_params *params, void *workspace, size_t workspace_size)

    pyroi_status pyroi_roi_align_forward_f16(
        const uint16_t *input, const int64_t *input_shape, const int64_t *input_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        uint16_t *output, const int64_t *output_strides,
        const pyroi_roi_align_params *params)
    pyroi_status pyroi_roi_align_backward_f16(
        const uint16_t *grad_output, const int64_t *grad_output_strides,
        const float *boxes, int64_t num_rois, int64_t box_row_stride,
        const int64_t *batch_indices,
        uint16_t *grad_input, const int64_t *grad_input_shape,
        const int64_t *grad_input_strides, const pyroi_roi_align_params *params)
    pyroi_status pyroi_scale_f32_to_f16(const float *source, int64_t count, float scale,
                                        uint16_t *target)

    # Explaining one RoI (pictures): the geometry the operators use.
    ctypedef struct pyroi_roi_align_axis_samples_f32:
        int64_t capacity
        float *coords
        int64_t *taps
        float *weights
        int8_t *in_map
        float *edges
    ctypedef struct pyroi_roi_align_axis_samples_f64:
        int64_t capacity
        double *coords
        int64_t *taps
        double *weights
        int8_t *in_map
        double *edges

    pyroi_status pyroi_roi_align_sample_grid_f32(
        const float *box, int64_t height, int64_t width, const pyroi_roi_align_params *params,
        int64_t *grid)
    pyroi_status pyroi_roi_align_sample_grid_f64(
        const double *box, int64_t height, int64_t width, const pyroi_roi_align_params *params,
        int64_t *grid)
    pyroi_status pyroi_roi_align_sample_axes_f32(
        const float *box, int64_t height, int64_t width, const pyroi_roi_align_params *params,
        pyroi_roi_align_axis_samples_f32 *rows, pyroi_roi_align_axis_samples_f32 *cols)
    pyroi_status pyroi_roi_align_sample_axes_f64(
        const double *box, int64_t height, int64_t width, const pyroi_roi_align_params *params,
        pyroi_roi_align_axis_samples_f64 *rows, pyroi_roi_align_axis_samples_f64 *cols)

    pyroi_status pyroi_roi_pool_bin_edges_f32(
        const float *box, int64_t height, int64_t width, const pyroi_roi_pool_params *params,
        int64_t *roi_pixels, int64_t *row_edges, int64_t *col_edges)
    pyroi_status pyroi_roi_pool_bin_edges_f64(
        const double *box, int64_t height, int64_t width, const pyroi_roi_pool_params *params,
        int64_t *roi_pixels, int64_t *row_edges, int64_t *col_edges)
