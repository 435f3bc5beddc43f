/* crop_and_resize.c - TensorFlow's crop_and_resize (tf.image.crop_and_resize, with its
 * CropAndResizeGradImage and CropAndResizeGradBoxes), float32 and float64
 * (docs/semantics.md §13): point samples at corner-aligned positions of normalised
 * [y1, x1, y2, x2] boxes, bilinear or nearest, an extrapolation value outside the image. The
 * parameter and call checks are here; the kernels, written once, are in
 * crop_and_resize_template.h, compiled per dtype through core/each_dtype.h. */
#include "core/parallel.h"
#include "core/rois.h"
#include "core/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pyroi_crop_and_resize_params_init(pyroi_crop_and_resize_params *params)
{
    /* the fields not named are 0 (bilinear, TensorFlow's placement, extrapolation 0, all
     * cores) or NULL */
    static const pyroi_crop_and_resize_params defaults = {.crop_height = 1, .crop_width = 1};
    if (params != NULL) {
        *params = defaults;
    }
}

/* The params struct's own checks; box_gradient: the call is the box gradient, which has no
 * nearest (TensorFlow's CropAndResizeGradBoxes is bilinear only). */
static pyroi_status crop_check_params(const pyroi_crop_and_resize_params *params,
                                      int box_gradient)
{
    if (params == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    if (params->crop_height <= 0 || params->crop_width <= 0) {
        return PYROI_E_INVALID_OUTPUT_SIZE;
    }
    if ((params->method != PYROI_CROP_BILINEAR && params->method != PYROI_CROP_NEAREST) ||
        (params->placement != PYROI_CROP_PLACEMENT_TENSORFLOW &&
         params->placement != PYROI_CROP_PLACEMENT_EXACT_ENDS) ||
        (box_gradient && params->method != PYROI_CROP_BILINEAR)) {
        return PYROI_E_INVALID_METHOD;
    }
    if (params->num_threads < 0) {
        return PYROI_E_INVALID_NUM_THREADS;
    }
    return PYROI_OK;
}

/* The checks of every entry point once its parameters are valid: the image (or grad_image),
 * the crops (or grads) of shape (K, C, crop_height, crop_width), the box rows; then the one
 * copy of the boxes and box indices (value_bytes a coordinate, indices in [0, N)), which the
 * call reads from then on and frees. */
static pyroi_status crop_check_call(const void *image, const int64_t image_shape[4],
                                    const int64_t image_strides[4], pyroi_tensor_role image_role,
                                    const void *crops, const int64_t crops_strides[4],
                                    pyroi_tensor_role crops_role, const void *boxes,
                                    int64_t num_boxes, int64_t box_row_stride,
                                    const int64_t *box_indices,
                                    const pyroi_crop_and_resize_params *params,
                                    size_t value_bytes, pyroi_rois *rois)
{
    pyroi_status status = pyroi_check_pooling_call(
        image, image_shape, image_strides, image_role, crops, crops_strides, crops_role, -1,
        params->crop_height, params->crop_width, boxes, num_boxes, box_row_stride, 4,
        box_indices);
    if (status != PYROI_OK) {
        return status;
    }
    return pyroi_rois_copy(rois, boxes, value_bytes, num_boxes, box_row_stride, 4, box_indices,
                           image_shape[0], NULL, params->cancel);
}

/* The box-gradient output: num_boxes rows of 4 values, row k at k * row_stride, the rows
 * disjoint (row_stride >= 4) and every offset within int64. */
static pyroi_status crop_check_grad_boxes(const void *grad_boxes, int64_t num_boxes,
                                          int64_t row_stride)
{
    int64_t last;
    if (num_boxes == 0) {
        return PYROI_OK;
    }
    if (grad_boxes == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    if (row_stride < 4 || !pyroi_mul_nonneg(num_boxes - 1, row_stride, &last) ||
        !pyroi_add_nonneg(last, 4, &last)) {
        return PYROI_E_INVALID_STRIDES;
    }
    return PYROI_OK;
}

#define PYROI_DTYPE_TEMPLATE "crop_and_resize/crop_and_resize_template.h"
#include "core/each_dtype.h"
