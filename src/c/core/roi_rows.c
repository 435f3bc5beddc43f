/* roi_rows.c - RoIs given as rows [batch_index, coordinates...] (torchvision's (K, 5) boxes):
 * their batch indices as integers, float32 and float64. */
#include "core/validate.h"

#include <math.h>

/* Validation of a call once the dtype no longer matters. */
static pyroi_status check_roi_rows_call(const void *rows, int64_t num_rois, int64_t row_stride,
                                        int64_t coords_per_box, int64_t num_images,
                                        const int64_t *batch_indices, int64_t *failed_roi)
{
    if (failed_roi == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    *failed_roi = -1;
    if (coords_per_box < 1 || num_images < 0) {
        return PYROI_E_INVALID_SHAPE;
    }
    /* a row is 1 + coords_per_box elements; the batch indices are written, not read */
    return pyroi_check_roi_rows(rows, num_rois, row_stride, 1 + coords_per_box, batch_indices);
}

#define PYROI_DTYPE_TEMPLATE "core/roi_rows_template.h"
#include "core/each_dtype.h"
