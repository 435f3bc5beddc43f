/* roi_align_rotated.c - rotated RoIAlign (average), forward and backward, float32 and float64
 * (detectron2 ROIAlignRotated, mmcv roi_align_rotated). The kernel bodies are written once,
 * in the templates roi_align_rotated_dtype.h lists; the bilinear sampling is the shared one of
 * sampling.h. */
#include "parallel.h"
#include "rois.h"
#include "sampling.h"
#include "validate.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* pi as a double constant (M_PI is not C99); rounds to the same double as M_PI, so degrees
 * convert exactly as the peers' angle * M_PI / 180.0. */
#define PYROI_ROTATED_PI 3.14159265358979323846

/* In-map samples buffered per worker before they are applied to every channel. The buffer
 * holds the taps of whole bins when they fit; a larger bin is split over several flushes,
 * its running sum kept in the output element (exact: it is a T like the sum). */
#define PYROI_ROTATED_CHUNK 512
/* Bins (or parts of bins) per flush. */
#define PYROI_ROTATED_SEGMENTS 256
/* Along a row (or over the rows of a bin) with at most this many samples, every sample is
 * visited and tested; longer ones are narrowed to the in-map ones by bisection first. */
#define PYROI_ROTATED_BISECT_MIN 8

/* The four monotone tests of a sample against the band [-1, H] x [-1, W] the sampler reads,
 * and two more for whole rows of a bin: the row's local y lies in the RoI's row band (the local
 * y range of the map, widened by a bound on rounding; see rotated_row_band). */
enum pyroi_rotated_bound {
    PYROI_ROTATED_Y_NOT_BELOW, /* from 0: the narrowing to in-map samples loops over them */
    PYROI_ROTATED_Y_NOT_ABOVE,
    PYROI_ROTATED_X_NOT_BELOW,
    PYROI_ROTATED_X_NOT_ABOVE,
    PYROI_ROTATED_ROW_NOT_BELOW_BAND,
    PYROI_ROTATED_ROW_NOT_ABOVE_BAND,
    PYROI_ROTATED_BOUNDS /* their count */
};

void pyroi_roi_align_rotated_params_init(pyroi_roi_align_rotated_params *params)
{
    /* the fields not named are 0 (num_threads: all cores) or NULL */
    static const pyroi_roi_align_rotated_params defaults = {
        .pooled_height = 1, .pooled_width = 1, .spatial_scale_h = 1.0, .spatial_scale_w = 1.0,
        .aligned = 1, .angle_in_degrees = 1};
    if (params != NULL) {
        *params = defaults;
    }
}

/* Validation shared by forward and backward once the dtype no longer matters; then the copy
 * of the RoIs (value_bytes a coordinate) that the call reads from then on and frees. */
static pyroi_status roi_align_rotated_check_call(
    const void *features, const int64_t features_shape[4], const int64_t features_strides[4],
    pyroi_tensor_role features_role, const void *pooled, const int64_t pooled_strides[4],
    pyroi_tensor_role pooled_role, const void *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, const pyroi_roi_align_rotated_params *params,
    size_t value_bytes, pyroi_rois *rois)
{
    pyroi_status status = pyroi_check_roi_align_rotated_params(params);
    if (status == PYROI_OK) { /* the pooling checks need valid params */
        status = pyroi_check_pooling_call(features, features_shape, features_strides,
                                          features_role, pooled, pooled_strides, pooled_role, -1,
                                          params->pooled_height, params->pooled_width, boxes,
                                          num_rois, box_row_stride, 5, batch_indices);
    }
    return status != PYROI_OK ? status
                              : pyroi_rois_copy(rois, boxes, value_bytes, num_rois,
                                                box_row_stride, 5, batch_indices,
                                                features_shape[0], NULL, params->cancel);
}

/* One bin, or the part of a bin, whose samples are entries [begin, end) of a flush buffer. */
typedef struct pyroi_rotated_segment {
    int64_t bin_y;
    int64_t bin_x;
    int64_t begin;
    int64_t end;
    int continued; /* earlier samples of this bin were flushed before */
    int complete;  /* the bin's last samples are in this flush */
} pyroi_rotated_segment;

#define PYROI_DTYPE_TEMPLATE "roi_align_rotated_dtype.h"
#include "each_dtype.h"
