/* roi_pool_template.h - RoIPool kernels, included by roi_pool.c once per dtype with T,
 * PYROI_TYPED(name), ROI_POOL_ROUND, ROI_POOL_FLOOR and ROI_POOL_CEIL defined. Semantics:
 * docs/semantics.md §5.1; the arithmetic is torchvision's (one rounding per operation, in
 * T) so that windows, maxima and argmax match it exactly. */

/* One axis (rows or columns) of a RoI's quantised bin grid. */
typedef struct PYROI_TYPED(roi_pool_axis) {
    int64_t start;  /* first pixel of the RoI: the rounded, scaled first edge */
    int64_t size;   /* pixels the RoI spans, end pixel included; >= 1 */
    T bin_size;     /* size / bins, in T */
    int64_t bins;   /* output bins along this axis */
    int64_t extent; /* feature map size along this axis (H or W) */
} PYROI_TYPED(roi_pool_axis);

/* A scaled coordinate rounded half away from zero (2.5 -> 3, -0.5 -> -1) to a pixel,
 * clamped in T first so that the conversion is defined for every finite value. */
static int64_t PYROI_TYPED(roi_pool_quantise)(T scaled)
{
    T rounded = ROI_POOL_ROUND(scaled);
    if (rounded < (T)-ROI_POOL_COORD_LIMIT) {
        rounded = (T)-ROI_POOL_COORD_LIMIT;
    } else if (rounded > (T)ROI_POOL_COORD_LIMIT) {
        rounded = (T)ROI_POOL_COORD_LIMIT;
    }
    return (int64_t)rounded;
}

/* The bin grid along one axis of a box with edges edge1, edge2 (input-image pixels).
 * Fails with PYROI_E_INVALID_BOX when an edge, or its product with the scale, is not
 * finite. */
static pyroi_status PYROI_TYPED(roi_pool_axis_from_edges)(T edge1, T edge2,
                                                          double spatial_scale, int64_t bins,
                                                          int64_t extent,
                                                          PYROI_TYPED(roi_pool_axis) *axis)
{
    const T scale = (T)spatial_scale;
    const T scaled1 = edge1 * scale;
    const T scaled2 = edge2 * scale;
    int64_t end;
    if (!(isfinite(edge1) && isfinite(edge2) && isfinite(scaled1) && isfinite(scaled2))) {
        return PYROI_E_INVALID_BOX;
    }
    axis->start = PYROI_TYPED(roi_pool_quantise)(scaled1);
    end = PYROI_TYPED(roi_pool_quantise)(scaled2);
    /* malformed (inverted) RoIs span one pixel, as torchvision's std::max(size, 1) */
    axis->size = end - axis->start + 1;
    if (axis->size < 1) {
        axis->size = 1;
    }
    axis->bin_size = (T)axis->size / (T)bins;
    axis->bins = bins;
    axis->extent = extent;
    return PYROI_OK;
}

/* The pixels of bin b: [floor(b * bin), ceil((b + 1) * bin)) from the RoI start, clipped to
 * [0, extent]. Both products are at most about size, so the conversions stay in range. */
static roi_pool_window PYROI_TYPED(roi_pool_bin_window)(const PYROI_TYPED(roi_pool_axis) *axis,
                                                        int64_t bin)
{
    roi_pool_window window;
    const int64_t begin = (int64_t)ROI_POOL_FLOOR((T)bin * axis->bin_size);
    const int64_t end = (int64_t)ROI_POOL_CEIL((T)(bin + 1) * axis->bin_size);
    window.begin = roi_pool_clamp(begin + axis->start, axis->extent);
    window.end = roi_pool_clamp(end + axis->start, axis->extent);
    return window;
}

/* The row and column bin grids of one RoI (box = x1, y1, x2, y2). */
static pyroi_status PYROI_TYPED(roi_pool_axes)(const T *box, const pyroi_roi_pool_params *params,
                                               int64_t height, int64_t width,
                                               PYROI_TYPED(roi_pool_axis) *rows,
                                               PYROI_TYPED(roi_pool_axis) *cols)
{
    pyroi_status status = PYROI_TYPED(roi_pool_axis_from_edges)(
        box[1], box[3], params->spatial_scale_h, params->pooled_height, height, rows);
    if (status != PYROI_OK) {
        return status;
    }
    return PYROI_TYPED(roi_pool_axis_from_edges)(box[0], box[2], params->spatial_scale_w,
                                                 params->pooled_width, width, cols);
}

/* Checks every box; on failure *failed_roi is the offending RoI. *max_area receives the
 * largest number of map pixels a RoI covers (an estimate of the work per RoI and channel). */
static pyroi_status PYROI_TYPED(roi_pool_scan_boxes)(const T *boxes, int64_t num_rois,
                                                     int64_t box_row_stride, int64_t height,
                                                     int64_t width,
                                                     const pyroi_roi_pool_params *params,
                                                     double *max_area, int64_t *failed_roi)
{
    int64_t k;
    *max_area = 0.0;
    *failed_roi = -1;
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(roi_pool_axis) rows, cols;
        double area;
        pyroi_status status = PYROI_TYPED(roi_pool_axes)(boxes + k * box_row_stride, params,
                                                         height, width, &rows, &cols);
        if (pyroi_cancel_at(params->cancel, k)) {
            return PYROI_E_CANCELLED;
        }
        if (status != PYROI_OK) {
            *failed_roi = k;
            return status;
        }
        area = (double)(rows.size < height ? rows.size : height) *
               (double)(cols.size < width ? cols.size : width);
        if (area > *max_area) {
            *max_area = area;
        }
    }
    return PYROI_OK;
}

/* Forward for RoIs [roi_begin, roi_end): every channel and bin of each. windows holds
 * pooled_height + pooled_width entries. */
static void PYROI_TYPED(roi_pool_forward_rois)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t box_row_stride, const int64_t *batch_indices,
    T *PYROI_RESTRICT output, const int64_t output_strides[4],
    int64_t *PYROI_RESTRICT argmax, const int64_t argmax_strides[4],
    const pyroi_roi_pool_params *params, roi_pool_window *windows,
    int64_t roi_begin, int64_t roi_end)
{
    const int64_t channels = input_shape[1], width = input_shape[3];
    /* the running pixel pointer steps once past each row's last pixel: with one column the
     * caller's stride is arbitrary (never applied), so step by 0 there */
    const int64_t row_stride = input_strides[2], col_stride = width > 1 ? input_strides[3] : 0;
    const int64_t pooled_height = params->pooled_height, pooled_width = params->pooled_width;
    roi_pool_window *row_windows = windows;
    roi_pool_window *col_windows = windows + pooled_height;
    int64_t k, c, ph, pw, h;

    for (k = roi_begin; k < roi_end; ++k) {
        PYROI_TYPED(roi_pool_axis) rows, cols;
        /* validated before any worker started */
        (void)PYROI_TYPED(roi_pool_axes)(boxes + k * box_row_stride, params, input_shape[2],
                                         width, &rows, &cols);
        for (ph = 0; ph < pooled_height; ++ph) {
            row_windows[ph] = PYROI_TYPED(roi_pool_bin_window)(&rows, ph);
        }
        for (pw = 0; pw < pooled_width; ++pw) {
            col_windows[pw] = PYROI_TYPED(roi_pool_bin_window)(&cols, pw);
        }
        for (c = 0; c < channels; ++c) {
            const T *plane = input + batch_indices[k] * input_strides[0] + c * input_strides[1];
            T *out = output + k * output_strides[0] + c * output_strides[1];
            int64_t *winners = argmax == NULL
                                   ? NULL
                                   : argmax + k * argmax_strides[0] + c * argmax_strides[1];
            for (ph = 0; ph < pooled_height; ++ph) {
                const roi_pool_window rw = row_windows[ph];
                for (pw = 0; pw < pooled_width; ++pw) {
                    const roi_pool_window cw = col_windows[pw];
                    /* an empty bin is 0; otherwise the running maximum starts at -FLT_MAX
                     * (also for double, as torchvision) and only a strictly larger pixel
                     * replaces it: ties keep the first in row-major order, NaN never wins */
                    T best = (T)0;
                    int64_t best_index = -1;
                    if (rw.end > rw.begin && cw.end > cw.begin) {
                        best = (T)-FLT_MAX;
                        for (h = rw.begin; h < rw.end; ++h) {
                            /* a running pointer and in-plane index keep the loop simple
                             * enough for the compiler to make it branch-free */
                            const T *pixel = plane + h * row_stride + cw.begin * col_stride;
                            const int64_t row_end = h * width + cw.end;
                            int64_t index;
                            for (index = h * width + cw.begin; index < row_end; ++index) {
                                const T value = *pixel;
                                if (value > best) {
                                    best = value;
                                    best_index = index;
                                }
                                pixel += col_stride;
                            }
                        }
                    }
                    out[ph * output_strides[2] + pw * output_strides[3]] = best;
                    if (winners != NULL) {
                        winners[ph * argmax_strides[2] + pw * argmax_strides[3]] = best_index;
                    }
                }
            }
        }
    }
}

/* Backward for input channels [channel_begin, channel_end): zeroes those planes of every
 * image, then adds each RoI's gradient at its argmax pixels in torchvision's order (RoI, bin
 * row, bin column), so the result does not depend on how channels are split. */
static void PYROI_TYPED(roi_pool_backward_channels)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const int64_t *batch_indices, int64_t num_rois,
    T *PYROI_RESTRICT grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_pool_params *params,
    int64_t channel_begin, int64_t channel_end)
{
    const int64_t width = grad_input_shape[3];
    const int64_t plane_size = grad_input_shape[2] * width;
    const int64_t row_stride = grad_input_strides[2], col_stride = grad_input_strides[3];
    int64_t n, k, c, h, w, ph, pw;

    for (n = 0; n < grad_input_shape[0]; ++n) {
        for (c = channel_begin; c < channel_end; ++c) {
            T *plane = grad_input + n * grad_input_strides[0] + c * grad_input_strides[1];
            for (h = 0; h < grad_input_shape[2]; ++h) {
                for (w = 0; w < width; ++w) {
                    plane[h * row_stride + w * col_stride] = (T)0;
                }
            }
        }
    }
    for (k = 0; k < num_rois; ++k) {
        for (c = channel_begin; c < channel_end; ++c) {
            T *plane = grad_input + batch_indices[k] * grad_input_strides[0] +
                       c * grad_input_strides[1];
            const T *grad = grad_output + k * grad_output_strides[0] + c * grad_output_strides[1];
            const int64_t *winners = argmax + k * argmax_strides[0] + c * argmax_strides[1];
            for (ph = 0; ph < params->pooled_height; ++ph) {
                for (pw = 0; pw < params->pooled_width; ++pw) {
                    const int64_t a = winners[ph * argmax_strides[2] + pw * argmax_strides[3]];
                    if (!roi_pool_argmax_is_pixel(a, plane_size)) { /* -1: nothing */
                        continue;
                    }
                    /* rows evenly spaced: the pixel's offset needs no division */
                    plane[row_stride == width * col_stride
                              ? a * col_stride
                              : (a / width) * row_stride + (a % width) * col_stride] +=
                        grad[ph * grad_output_strides[2] + pw * grad_output_strides[3]];
                }
            }
        }
    }
}

/* Everything a worker needs; a worker only adds its own index to pick its scratch. */
typedef struct PYROI_TYPED(roi_pool_job) {
    const T *features; /* input (forward) or grad_output (backward) */
    const int64_t *features_shape;
    const int64_t *features_strides;
    pyroi_rois *rois;  /* the call's copy of the RoIs: the fields below point into it */
    const T *boxes;    /* forward */
    int64_t num_rois;
    int64_t box_row_stride;
    const int64_t *batch_indices;
    T *result; /* output (forward) or grad_input (backward) */
    const int64_t *result_shape;
    const int64_t *result_strides;
    int64_t *argmax_out;      /* forward */
    const int64_t *argmax_in; /* backward */
    const int64_t *argmax_strides;
    const pyroi_roi_pool_params *params;
    roi_pool_window *windows; /* forward: pooled_height + pooled_width per worker */
    const roi_pool_plan *plan; /* lane-major orders */
    T *scratch;                /* lane-major orders: one block and two tiles per worker */
    int64_t scratch_stride;    /* elements per worker */
    int stream;                /* forward: stream the outputs past the caches (large calls) */
} PYROI_TYPED(roi_pool_job);

/* Points the job at the call's copy of the RoIs. */
static void PYROI_TYPED(roi_pool_job_rois)(PYROI_TYPED(roi_pool_job) *job, pyroi_rois *rois)
{
    job->rois = rois;
    job->boxes = (const T *)rois->boxes;
    job->num_rois = rois->num_rois;
    job->box_row_stride = rois->coords;
    job->batch_indices = rois->batch_indices;
}

static void PYROI_TYPED(roi_pool_forward_task)(void *context, int64_t begin, int64_t end,
                                               int worker)
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    const int64_t per_worker = job->params->pooled_height + job->params->pooled_width;
    PYROI_TYPED(roi_pool_forward_rois)(job->features, job->features_shape, job->features_strides,
                                       job->boxes, job->box_row_stride, job->batch_indices,
                                       job->result, job->result_strides, job->argmax_out,
                                       job->argmax_strides, job->params,
                                       job->windows + (int64_t)worker * per_worker, begin, end);
}

static void PYROI_TYPED(roi_pool_backward_task)(void *context, int64_t begin, int64_t end,
                                                int worker)
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    (void)worker;
    PYROI_TYPED(roi_pool_backward_channels)(
        job->features, job->features_strides, job->argmax_in, job->argmax_strides,
        job->batch_indices, job->num_rois, job->result, job->result_shape,
        job->result_strides, job->params, begin, end);
}

/* ---- lane-major loop orders ------------------------------------------------------------ */
/* The direct order above is torchvision's: RoI by RoI, each channel plane read in place, so
 * a plane is read again from memory for every RoI, one scalar comparison at a time. The
 * lane-major orders instead copy a group of channels channels-last into a per-worker block
 * and pool every RoI from it with the channels as the vector axis. A group is
 * ROI_POOL_GROUP sub-blocks of ROI_POOL_LANES channels (one 64-byte line, the layout of
 * transpose.h): block[s][h][w][lane] is channel c0 + s * ROI_POOL_LANES + lane. Two ways to
 * fill the block:
 *  - image blocks: work item = (image, channel group); the whole image is gathered once and
 *    every RoI of that image reads it (many or large RoIs);
 *  - RoI regions: work item = RoI; for each channel group only the pixels the RoI's bins
 *    cover are gathered (few RoIs on a large map).
 * Each lane performs exactly the scalar kernel's comparisons in the same order (strict >,
 * first maximum wins, NaN never wins, start at -FLT_MAX), so results are identical. The
 * backward's image blocks (one sub-block) add each RoI's gradients in torchvision's order. */

#define ROI_POOL_LANES ((int64_t)(ROI_POOL_LANE_BYTES / sizeof(T)))
#define ROI_POOL_GROUP_LANES (ROI_POOL_GROUP * ROI_POOL_LANES)

/* Fills the plan's bin windows (boxes validated before) and its work statistics. */
static pyroi_status PYROI_TYPED(roi_pool_plan_windows)(roi_pool_plan *plan, const T *boxes,
                                               int64_t num_rois, int64_t box_row_stride,
                                               int64_t height, int64_t width,
                                               const pyroi_roi_pool_params *params)
{
    const int64_t pooled_height = params->pooled_height, pooled_width = params->pooled_width;
    int64_t k, b;
    for (k = 0; k < num_rois; ++k) {
        PYROI_TYPED(roi_pool_axis) rows, cols;
        roi_pool_window *windows = plan->windows + k * plan->bins;
        double row_pixels = 0.0, col_pixels = 0.0;
        int64_t region[4], area;
        if (pyroi_cancel_at(params->cancel, k)) {
            return PYROI_E_CANCELLED;
        }
        (void)PYROI_TYPED(roi_pool_axes)(boxes + k * box_row_stride, params, height, width,
                                         &rows, &cols);
        for (b = 0; b < pooled_height + pooled_width; ++b) {
            windows[b] = b < pooled_height
                             ? PYROI_TYPED(roi_pool_bin_window)(&rows, b)
                             : PYROI_TYPED(roi_pool_bin_window)(&cols, b - pooled_height);
            if (windows[b].end > windows[b].begin) {
                *(b < pooled_height ? &row_pixels : &col_pixels) +=
                    (double)(windows[b].end - windows[b].begin);
            }
        }
        plan->visits += row_pixels * col_pixels;
        roi_pool_region(plan, k, pooled_height, region);
        area = (region[1] - region[0]) * (region[3] - region[2]);
        plan->area += (double)area;
        plan->max_area = area > plan->max_area ? area : plan->max_area;
    }
    return PYROI_OK;
}

/* Channels of the group at c0 that sub-block s holds (0 when it is past the last channel). */
static int64_t PYROI_TYPED(roi_pool_sub_lanes)(int64_t channels, int64_t c0, int64_t s)
{
    const int64_t first = c0 + s * ROI_POOL_LANES;
    return channels <= first ? 0
                             : (channels - first < ROI_POOL_LANES ? channels - first
                                                                  : ROI_POOL_LANES);
}

/* Copies rows [region[0], region[1]) x columns [region[2], region[3]) of the channel group
 * at c0 of image n into the block, packed with region[3] - region[2] pixels per row, sub-block
 * s at block + s * sub_stride (lanes past the last channel 0). */
static void PYROI_TYPED(roi_pool_region_to_block)(const T *map, const int64_t shape[4],
                                                  const int64_t strides[4], int64_t n,
                                                  int64_t c0, const int64_t region[4],
                                                  T *block, int64_t sub_stride)
{
    const int64_t pitch = region[3] - region[2];
    int64_t s, h;
    for (s = 0; s < ROI_POOL_GROUP; ++s) {
        const int64_t lanes = PYROI_TYPED(roi_pool_sub_lanes)(shape[1], c0, s);
        T *sub = block + s * sub_stride;
        if (lanes == 0) {
            memset(sub, 0, (size_t)((region[1] - region[0]) * pitch * ROI_POOL_LANES) *
                               sizeof(T));
            continue;
        }
        for (h = region[0]; h < region[1]; ++h) {
            PYROI_TYPED(pyroi_channels_to_lanes)(
                map + n * strides[0] + (c0 + s * ROI_POOL_LANES) * strides[1] +
                    h * strides[2] + region[2] * strides[3],
                strides[1], strides[3], pitch, lanes,
                sub + (h - region[0]) * pitch * ROI_POOL_LANES, ROI_POOL_LANES);
        }
    }
}

/* The bin kernels. first points at the window's (rw x cw, non-empty) top-left pixel in
 * sub-block 0 of a block of pitch pixels per row; sub-block s is s * sub_stride further.
 * Per lane they perform the scalar kernel's
 *     if (value > best) { best = value; best_index = index; }
 * over the window in row-major order, starting from best = -FLT_MAX, best_index = -1.
 * Results go to result[s * result_sub_stride + lane]. */

/* The maxima alone. value > best ? value : best is exactly the x86 max instruction (NaN or
 * equal keep best), so compilers turn each lane loop into one max per vector. */
static inline void PYROI_TYPED(roi_pool_bin_max)(const T *first, int64_t sub_stride,
                                                 int64_t pitch, roi_pool_window rw,
                                                 roi_pool_window cw, T *PYROI_RESTRICT result,
                                                 int64_t result_sub_stride)
{
    T best0[ROI_POOL_LANE_BYTES / sizeof(T)], best1[ROI_POOL_LANE_BYTES / sizeof(T)];
    int64_t h, w, j;
    for (j = 0; j < ROI_POOL_LANES; ++j) {
        best0[j] = (T)-FLT_MAX;
        best1[j] = (T)-FLT_MAX;
    }
    for (h = rw.begin; h < rw.end; ++h) {
        const T *pixel = first + (h - rw.begin) * pitch * ROI_POOL_LANES;
        for (w = cw.begin; w < cw.end; ++w) {
            /* kept loops: fully unrolled, GCC no longer vectorises them */
            ROI_POOL_NO_UNROLL
            for (j = 0; j < ROI_POOL_LANES; ++j) {
                best0[j] = pixel[j] > best0[j] ? pixel[j] : best0[j];
            }
            ROI_POOL_NO_UNROLL
            for (j = 0; j < ROI_POOL_LANES; ++j) {
                best1[j] = pixel[sub_stride + j] > best1[j] ? pixel[sub_stride + j] : best1[j];
            }
            pixel += ROI_POOL_LANES;
        }
    }
    for (j = 0; j < ROI_POOL_LANES; ++j) {
        result[j] = best0[j];
    }
    for (j = 0; j < ROI_POOL_LANES; ++j) {
        result[result_sub_stride + j] = best1[j];
    }
}

/* The maxima and, in winners, the in-plane index h * width + w where each was found, or -1
 * (as roi_pool_index: int32 for float, enough for every map of these orders, below 2^19
 * pixels). */

#if defined(ROI_POOL_VECTORS)
/* GCC turns the scalar form of the index update into masked stores; generic vectors of half
 * a lane line (one AVX2 register) give plain compare-and-blend code. */
typedef T PYROI_TYPED(roi_pool_half) __attribute__((vector_size(ROI_POOL_LANE_BYTES / 2)));
typedef PYROI_TYPED(roi_pool_index)
    PYROI_TYPED(roi_pool_half_index) __attribute__((vector_size(ROI_POOL_LANE_BYTES / 2)));

/* The update of one running (maximum, index) pair of half a lane line with the values at
 * address, found at index (a vector of equal lanes). */
#define ROI_POOL_UPDATE(best, best_index, address, index)                                     \
    do {                                                                                       \
        PYROI_TYPED(roi_pool_half) value_;                                                     \
        PYROI_TYPED(roi_pool_half_index) larger_;                                              \
        memcpy(&value_, (address), sizeof(value_));                                            \
        larger_ = (PYROI_TYPED(roi_pool_half_index))(value_ > (best));                         \
        (best) = (PYROI_TYPED(roi_pool_half))(((PYROI_TYPED(roi_pool_half_index))value_ &      \
                                               larger_) |                                      \
                                              ((PYROI_TYPED(roi_pool_half_index))(best) &      \
                                               ~larger_));                                     \
        (best_index) = ((index) & larger_) | ((best_index) & ~larger_);                        \
    } while (0)

static inline void PYROI_TYPED(roi_pool_bin_argmax)(
    const T *first, int64_t sub_stride, int64_t pitch, int64_t width, roi_pool_window rw,
    roi_pool_window cw, T *PYROI_RESTRICT result,
    PYROI_TYPED(roi_pool_index) *PYROI_RESTRICT winners, int64_t result_sub_stride)
{
    const PYROI_TYPED(roi_pool_half) lowest = {0};
    const PYROI_TYPED(roi_pool_half_index) none = {0};
    const int64_t half = ROI_POOL_LANES / 2;
    /* sub-block 0 low and high half, sub-block 1 low and high half */
    PYROI_TYPED(roi_pool_half) best0 = lowest - (T)FLT_MAX, best1 = best0, best2 = best0;
    PYROI_TYPED(roi_pool_half) best3 = best0;
    PYROI_TYPED(roi_pool_half_index) index0 = none - 1, index1 = index0, index2 = index0;
    PYROI_TYPED(roi_pool_half_index) index3 = index0;
    int64_t h, w;
    for (h = rw.begin; h < rw.end; ++h) {
        const T *pixel = first + (h - rw.begin) * pitch * ROI_POOL_LANES;
        PYROI_TYPED(roi_pool_half_index) at = none + (PYROI_TYPED(roi_pool_index))(
                                                         h * width + cw.begin);
        for (w = cw.begin; w < cw.end; ++w) {
            ROI_POOL_UPDATE(best0, index0, pixel, at);
            ROI_POOL_UPDATE(best1, index1, pixel + half, at);
            ROI_POOL_UPDATE(best2, index2, pixel + sub_stride, at);
            ROI_POOL_UPDATE(best3, index3, pixel + sub_stride + half, at);
            pixel += ROI_POOL_LANES;
            at += 1;
        }
    }
    memcpy(result, &best0, sizeof(best0));
    memcpy(result + half, &best1, sizeof(best1));
    memcpy(result + result_sub_stride, &best2, sizeof(best2));
    memcpy(result + result_sub_stride + half, &best3, sizeof(best3));
    memcpy(winners, &index0, sizeof(index0));
    memcpy(winners + half, &index1, sizeof(index1));
    memcpy(winners + result_sub_stride, &index2, sizeof(index2));
    memcpy(winners + result_sub_stride + half, &index3, sizeof(index3));
}

#undef ROI_POOL_UPDATE
#else
static inline void PYROI_TYPED(roi_pool_bin_argmax)(
    const T *first, int64_t sub_stride, int64_t pitch, int64_t width, roi_pool_window rw,
    roi_pool_window cw, T *PYROI_RESTRICT result,
    PYROI_TYPED(roi_pool_index) *PYROI_RESTRICT winners, int64_t result_sub_stride)
{
    T best[ROI_POOL_LANE_BYTES / sizeof(T)];
    PYROI_TYPED(roi_pool_index) best_index[ROI_POOL_LANE_BYTES / sizeof(T)];
    int64_t s, h, w, j;
    for (s = 0; s < ROI_POOL_GROUP; ++s) {
        for (j = 0; j < ROI_POOL_LANES; ++j) {
            best[j] = (T)-FLT_MAX;
            best_index[j] = -1;
        }
        for (h = rw.begin; h < rw.end; ++h) {
            const T *pixel = first + s * sub_stride + (h - rw.begin) * pitch * ROI_POOL_LANES;
            for (w = cw.begin; w < cw.end; ++w) {
                for (j = 0; j < ROI_POOL_LANES; ++j) {
                    if (pixel[j] > best[j]) {
                        best[j] = pixel[j];
                        best_index[j] = (PYROI_TYPED(roi_pool_index))(h * width + w);
                    }
                }
                pixel += ROI_POOL_LANES;
            }
        }
        for (j = 0; j < ROI_POOL_LANES; ++j) {
            result[s * result_sub_stride + j] = best[j];
            winners[s * result_sub_stride + j] = best_index[j];
        }
    }
}
#endif

/* The output runs of a worker, streamed out behind the pooling of the next tile. */
typedef struct PYROI_TYPED(roi_pool_writer) {
    pyroi_row_stream run;       /* the outputs being written (finished: done == total) */
    pyroi_row_stream index_run; /* and the argmax */
    int64_t per_row;            /* elements of each to write per row of bins pooled */
} PYROI_TYPED(roi_pool_writer);

/* Pools RoI k from a block holding rows from row0 and columns from col0 of the map, pitch
 * pixels per row: values[s][ph][pw][lane] and, unless winners is NULL, winners likewise.
 * A writer (may be NULL) streams out part of the previous tile after each row of bins. */
static inline void PYROI_TYPED(roi_pool_roi_lanes)(const roi_pool_plan *plan, int64_t k,
                                                   const T *block, int64_t sub_stride,
                                                   int64_t pitch, int64_t row0, int64_t col0,
                                                   int64_t width, int64_t pooled_height,
                                                   int64_t pooled_width,
                                                   T *PYROI_RESTRICT values,
                                                   PYROI_TYPED(roi_pool_index) *PYROI_RESTRICT
                                                       winners,
                                                   PYROI_TYPED(roi_pool_writer) *writer)
{
    const roi_pool_window *row_windows = plan->windows + k * plan->bins;
    const roi_pool_window *col_windows = row_windows + pooled_height;
    const int64_t tile_sub_stride = pooled_height * pooled_width * ROI_POOL_LANES;
    int64_t ph, pw, s, j;
    for (ph = 0; ph < pooled_height; ++ph) {
        const roi_pool_window rw = row_windows[ph];
        for (pw = 0; pw < pooled_width; ++pw) {
            const roi_pool_window cw = col_windows[pw];
            const int64_t bin = (ph * pooled_width + pw) * ROI_POOL_LANES;
            if (rw.end <= rw.begin || cw.end <= cw.begin) { /* clipped away: 0, argmax -1 */
                for (s = 0; s < ROI_POOL_GROUP; ++s) {
                    for (j = 0; j < ROI_POOL_LANES; ++j) {
                        values[s * tile_sub_stride + bin + j] = (T)0;
                        if (winners != NULL) {
                            winners[s * tile_sub_stride + bin + j] = -1;
                        }
                    }
                }
            } else {
                /* the window lies inside the block's rows and columns */
                const T *first =
                    block + ((rw.begin - row0) * pitch + cw.begin - col0) * ROI_POOL_LANES;
                if (winners == NULL) {
                    PYROI_TYPED(roi_pool_bin_max)(first, sub_stride, pitch, rw, cw,
                                                  values + bin, tile_sub_stride);
                } else {
                    PYROI_TYPED(roi_pool_bin_argmax)(first, sub_stride, pitch, width, rw, cw,
                                                     values + bin, winners + bin,
                                                     tile_sub_stride);
                }
            }
        }
        if (writer != NULL) { /* a share of the previous tile's stores per row of bins */
            PYROI_TYPED(pyroi_row_stream_advance)(&writer->run, writer->per_row);
            if (winners != NULL) {
                pyroi_row_stream_advance_i64(&writer->index_run, writer->per_row);
            }
        }
    }
}

/* A worker's part of the lane-major scratch; every part starts on a 64-byte boundary. */
typedef struct PYROI_TYPED(roi_pool_scratch) {
    T *block;               /* block[s][pixel][lane], sub-blocks sub_stride apart */
    int64_t sub_stride;
    T *values;              /* values[s][bin][lane] */
    PYROI_TYPED(roi_pool_index) *winners; /* winners[s][bin][lane]; NULL: no argmax */
    T *staging;             /* staging[channel][bin], channel rows staging_stride apart */
    int64_t staging_stride;
    int64_t *staging_index; /* staging_index[channel][bin], packed */
} PYROI_TYPED(roi_pool_scratch);

/* Elements per staging row: the bins, padded so that the transposes store whole aligned
 * vectors (no store straddles a cache line) with the room pyroi_row_stream needs. */
static int64_t PYROI_TYPED(roi_pool_staging_stride)(int64_t bins)
{
    const int64_t vector = ROI_POOL_LANES / 2; /* one AVX2 register */
    return bins < vector ? bins : (bins + 3 + vector - 1) / vector * vector;
}

/* Scratch elements (of T) per worker for blocks of block_pixels and tiles of bins bins. */
static int64_t PYROI_TYPED(roi_pool_scratch_elements)(int64_t block_pixels, int64_t bins)
{
    return ROI_POOL_GROUP_LANES *
           (block_pixels + 2 * bins + PYROI_TYPED(roi_pool_staging_stride)(bins) +
            bins * (int64_t)(sizeof(int64_t) / sizeof(T)));
}

/* Whether the lane-major scratch of blocks of block_pixels and tiles of bins bins is within
 * the limit (at most 5 * bins + 16 lane lines besides the block). */
static int PYROI_TYPED(roi_pool_scratch_fits)(int64_t block_pixels, int64_t bins)
{
    return (double)block_pixels > 0.0 &&
           ((double)block_pixels + 5.0 * (double)bins + 16.0) * ROI_POOL_GROUP *
                   (double)ROI_POOL_LANE_BYTES <=
               (double)ROI_POOL_SCRATCH_BYTES;
}

static PYROI_TYPED(roi_pool_scratch) PYROI_TYPED(roi_pool_scratch_of)(
    const PYROI_TYPED(roi_pool_job) *job, int worker, int64_t block_pixels)
{
    PYROI_TYPED(roi_pool_scratch) scratch;
    const int64_t bins = job->params->pooled_height * job->params->pooled_width;
    scratch.block = job->scratch + worker * job->scratch_stride;
    scratch.sub_stride = block_pixels * ROI_POOL_LANES;
    scratch.values = scratch.block + ROI_POOL_GROUP * scratch.sub_stride;
    /* the index tile has the width of T: it takes the place of one tile of T */
    scratch.winners = job->argmax_out == NULL
                          ? NULL
                          : (PYROI_TYPED(roi_pool_index) *)(void *)(scratch.values +
                                                                    ROI_POOL_GROUP_LANES * bins);
    scratch.staging = scratch.values + 2 * ROI_POOL_GROUP_LANES * bins;
    scratch.staging_stride = PYROI_TYPED(roi_pool_staging_stride)(bins);
    scratch.staging_index = (int64_t *)(void *)(scratch.staging + ROI_POOL_GROUP_LANES *
                                                                      scratch.staging_stride);
    return scratch;
}

/* Whether the bins of consecutive channels of a RoI form one run of memory, channel after
 * channel (the C-contiguous layout), so that a group's outputs can be streamed as one. */
static int PYROI_TYPED(roi_pool_bins_contiguous)(const int64_t strides[4],
                                                 int64_t pooled_height, int64_t pooled_width)
{
    return strides[3] == 1 && strides[2] == pooled_width &&
           strides[1] == pooled_height * pooled_width;
}

/* The task's writer when outputs are streamed (large outputs and argmax, both
 * C-contiguous), else NULL. */
static PYROI_TYPED(roi_pool_writer) *PYROI_TYPED(roi_pool_writer_of)(
    const PYROI_TYPED(roi_pool_job) *job, PYROI_TYPED(roi_pool_writer) *writer)
{
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    if (!job->stream ||
        !PYROI_TYPED(roi_pool_bins_contiguous)(job->result_strides, pooled_height,
                                               pooled_width) ||
        (job->argmax_out != NULL &&
         !PYROI_TYPED(roi_pool_bins_contiguous)(job->argmax_strides, pooled_height,
                                                pooled_width))) {
        return NULL;
    }
    pyroi_row_stream_init(&writer->run, NULL, NULL, 0, 0, 0);
    pyroi_row_stream_init(&writer->index_run, NULL, NULL, 0, 0, 0);
    writer->per_row = 0;
    return writer;
}

/* Finishes the writer's last runs and makes the task's streamed stores visible to the
 * thread that joins it. */
static void PYROI_TYPED(roi_pool_writer_finish)(PYROI_TYPED(roi_pool_writer) *writer)
{
    if (writer != NULL) {
        PYROI_TYPED(pyroi_row_stream_advance)(&writer->run, INT64_MAX);
        pyroi_row_stream_advance_i64(&writer->index_run, INT64_MAX);
    }
    pyroi_stream_fence();
}

/* Writes the tiles of RoI k for the channel group at c0 to output and (if any) argmax;
 * through the writer when there is one. */
static void PYROI_TYPED(roi_pool_tiles_to_bins)(const PYROI_TYPED(roi_pool_job) *job, int64_t k,
                                                int64_t c0,
                                                const PYROI_TYPED(roi_pool_scratch) *scratch,
                                                PYROI_TYPED(roi_pool_writer) *writer)
{
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t bins = pooled_height * pooled_width;
    const int64_t channels = job->features_shape[1];
    const int64_t *strides = job->result_strides, *a_strides = job->argmax_strides;
    const int64_t group_lanes =
        channels - c0 < ROI_POOL_GROUP_LANES ? channels - c0 : ROI_POOL_GROUP_LANES;
    int64_t s, ph, pw, j, i;
    if (writer != NULL) {
        /* large outputs: lay the group's run out in the scratch and stream it out past the
         * caches while the next tile is pooled (roi_pool_roi_lanes advances it) */
        PYROI_TYPED(pyroi_row_stream_advance)(&writer->run, INT64_MAX); /* the previous run */
        for (s = 0; s * ROI_POOL_LANES < group_lanes; ++s) {
            PYROI_TYPED(pyroi_lanes_to_channels)(
                scratch->values + s * bins * ROI_POOL_LANES, bins,
                PYROI_TYPED(roi_pool_sub_lanes)(channels, c0, s),
                scratch->staging + s * ROI_POOL_LANES * scratch->staging_stride,
                scratch->staging_stride, 1);
        }
        pyroi_row_stream_init(&writer->run, job->result + k * strides[0] + c0 * strides[1],
                              scratch->staging, group_lanes, bins, scratch->staging_stride);
        writer->per_row = (group_lanes * bins + pooled_height - 1) / pooled_height;
    } else {
        for (s = 0; s * ROI_POOL_LANES < group_lanes; ++s) {
            const int64_t lanes = PYROI_TYPED(roi_pool_sub_lanes)(channels, c0, s);
            const T *values = scratch->values + s * bins * ROI_POOL_LANES;
            T *base = job->result + k * strides[0] + (c0 + s * ROI_POOL_LANES) * strides[1];
            if (strides[2] == pooled_width * strides[3]) { /* a channel's bins evenly spaced */
                PYROI_TYPED(pyroi_lanes_to_channels)(values, bins, lanes, base, strides[1],
                                                     strides[3]);
                continue;
            }
            for (ph = 0; ph < pooled_height; ++ph) {
                PYROI_TYPED(pyroi_lanes_to_channels)(values + ph * pooled_width * ROI_POOL_LANES,
                                                     pooled_width, lanes,
                                                     base + ph * strides[2], strides[1],
                                                     strides[3]);
            }
        }
    }
    if (scratch->winners == NULL) {
        return;
    }
    if (writer != NULL) { /* the same for argmax */
        pyroi_row_stream_advance_i64(&writer->index_run, INT64_MAX);
        for (j = 0; j < group_lanes; ++j) {
            const PYROI_TYPED(roi_pool_index) *winners =
                scratch->winners + (j / ROI_POOL_LANES) * bins * ROI_POOL_LANES +
                j % ROI_POOL_LANES;
            for (i = 0; i < bins; ++i) {
                scratch->staging_index[j * bins + i] = winners[i * ROI_POOL_LANES];
            }
        }
        pyroi_row_stream_init(&writer->index_run,
                              job->argmax_out + k * a_strides[0] + c0 * a_strides[1],
                              scratch->staging_index, group_lanes, bins, bins);
        return;
    }
    for (j = 0; j < group_lanes; ++j) {
        const PYROI_TYPED(roi_pool_index) *winners =
            scratch->winners + (j / ROI_POOL_LANES) * bins * ROI_POOL_LANES + j % ROI_POOL_LANES;
        int64_t *out = job->argmax_out + k * a_strides[0] + (c0 + j) * a_strides[1];
        for (ph = 0; ph < pooled_height; ++ph) {
            for (pw = 0; pw < pooled_width; ++pw) {
                out[ph * a_strides[2] + pw * a_strides[3]] =
                    winners[(ph * pooled_width + pw) * ROI_POOL_LANES];
            }
        }
    }
}

/* Forward, work item = (image with RoIs, channel group): item / groups is the group of RoIs. */
PYROI_VECTOR_CLONES
static void PYROI_TYPED(roi_pool_forward_image_task)(void *context, int64_t begin, int64_t end,
                                                     int worker)
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    const roi_pool_plan *plan = job->plan;
    const int64_t *shape = job->features_shape;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t groups = (shape[1] + ROI_POOL_GROUP_LANES - 1) / ROI_POOL_GROUP_LANES;
    const int64_t whole[4] = {0, shape[2], 0, shape[3]};
    const PYROI_TYPED(roi_pool_scratch) scratch =
        PYROI_TYPED(roi_pool_scratch_of)(job, worker, shape[2] * shape[3]);
    PYROI_TYPED(roi_pool_writer) writer_state;
    PYROI_TYPED(roi_pool_writer) *writer = PYROI_TYPED(roi_pool_writer_of)(job, &writer_state);
    int64_t item, i;

    for (item = begin; item < end; ++item) {
        const int64_t group = item / groups; /* of RoIs: an image with RoIs (rois.h) */
        const int64_t n = plan->rois->group_image[group];
        const int64_t c0 = (item % groups) * ROI_POOL_GROUP_LANES;
        PYROI_TYPED(roi_pool_region_to_block)(job->features, shape, job->features_strides, n,
                                              c0, whole, scratch.block, scratch.sub_stride);
        for (i = plan->rois->group_start[group]; i < plan->rois->group_start[group + 1]; ++i) {
            const int64_t k = plan->rois->order[i];
            if (i % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                break; /* an item can hold every RoI: the call ends at the next chunk */
            }
            PYROI_TYPED(roi_pool_roi_lanes)(plan, k, scratch.block, scratch.sub_stride,
                                            shape[3], 0, 0, shape[3], pooled_height,
                                            pooled_width, scratch.values, scratch.winners,
                                            writer);
            PYROI_TYPED(roi_pool_tiles_to_bins)(job, k, c0, &scratch, writer);
        }
    }
    PYROI_TYPED(roi_pool_writer_finish)(writer);
}

/* Forward, work item = RoI: for each channel group only the RoI's region is gathered. */
PYROI_VECTOR_CLONES
static void PYROI_TYPED(roi_pool_forward_region_task)(void *context, int64_t begin, int64_t end,
                                                      int worker)
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    const roi_pool_plan *plan = job->plan;
    const int64_t *shape = job->features_shape;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const PYROI_TYPED(roi_pool_scratch) scratch =
        PYROI_TYPED(roi_pool_scratch_of)(job, worker, plan->max_area);
    PYROI_TYPED(roi_pool_writer) writer_state;
    PYROI_TYPED(roi_pool_writer) *writer = PYROI_TYPED(roi_pool_writer_of)(job, &writer_state);
    int64_t k, c0;

    for (k = begin; k < end; ++k) {
        int64_t region[4];
        roi_pool_region(plan, k, pooled_height, region);
        for (c0 = 0; c0 < shape[1]; c0 += ROI_POOL_GROUP_LANES) {
            /* packed: sub-blocks region-area apart */
            const int64_t sub_stride =
                (region[1] - region[0]) * (region[3] - region[2]) * ROI_POOL_LANES;
            PYROI_TYPED(roi_pool_region_to_block)(job->features, shape, job->features_strides,
                                                  job->batch_indices[k], c0, region,
                                                  scratch.block, sub_stride);
            PYROI_TYPED(roi_pool_roi_lanes)(plan, k, scratch.block, sub_stride,
                                            region[3] - region[2], region[0], region[2],
                                            shape[3], pooled_height, pooled_width,
                                            scratch.values, scratch.winners, writer);
            PYROI_TYPED(roi_pool_tiles_to_bins)(job, k, c0, &scratch, writer);
        }
    }
    PYROI_TYPED(roi_pool_writer_finish)(writer);
}

/* Starts loading one channel's output gradients and argmax, elements of each from grad and
 * winners (one cache line per 64 bytes). */
static inline void PYROI_TYPED(roi_pool_prefetch_run)(const T *grad, const int64_t *winners,
                                                      int64_t elements)
{
    int64_t e;
    for (e = 0; e < elements; e += ROI_POOL_LANE_BYTES / (int64_t)sizeof(T)) {
        PYROI_PREFETCH(grad + e);
    }
    for (e = 0; e < elements; e += ROI_POOL_LANE_BYTES / (int64_t)sizeof(int64_t)) {
        PYROI_PREFETCH(winners + e);
    }
}

/* Backward, work item = (image, channel block): the block accumulates the image's gradient
 * from zero, RoI by RoI in order (each pixel sees torchvision's sequence of additions), and
 * is then written out whole. */
PYROI_VECTOR_CLONES
static void PYROI_TYPED(roi_pool_backward_image_task)(void *context, int64_t begin, int64_t end,
                                                      int worker)
{
    const PYROI_TYPED(roi_pool_job) *job = (const PYROI_TYPED(roi_pool_job) *)context;
    const roi_pool_plan *plan = job->plan;
    const int64_t *shape = job->result_shape;
    const int64_t *g_strides = job->features_strides, *a_strides = job->argmax_strides;
    const int64_t *gi_strides = job->result_strides;
    const int64_t pooled_height = job->params->pooled_height;
    const int64_t pooled_width = job->params->pooled_width;
    const int64_t blocks = (shape[1] + ROI_POOL_LANES - 1) / ROI_POOL_LANES;
    const int64_t block_elements = shape[2] * shape[3] * ROI_POOL_LANES;
    const int64_t plane_size = shape[2] * shape[3];
    /* in locals: the compiler cannot tell that the block's stores leave them alone */
    const int64_t g_row = g_strides[2], g_column = g_strides[3];
    const int64_t a_row = a_strides[2], a_column = a_strides[3];
    T *block = job->scratch + worker * job->scratch_stride;
    /* what to prefetch of a channel: its bins when they are one run, else the first */
    const int64_t run_elements =
        g_row == pooled_width * g_column && a_row == pooled_width * a_column &&
                g_column == 1 && a_column == 1
            ? pooled_height * pooled_width
            : 1;
    int64_t item, i, j, h, ph, pw, first, last;

    for (item = begin; item < end; ++item) {
        const int64_t n = item / blocks;
        const int64_t c0 = (item % blocks) * ROI_POOL_LANES;
        const int64_t lanes = shape[1] - c0 < ROI_POOL_LANES ? shape[1] - c0 : ROI_POOL_LANES;
        T *image = job->result + n * gi_strides[0] + c0 * gi_strides[1];
        for (i = 0; i < block_elements; ++i) {
            block[i] = (T)0;
        }
        pyroi_rois_of_image(plan->rois, n, &first, &last);
        for (i = first; i < last; ++i) {
            const int64_t k = plan->rois->order[i];
            /* the next RoI's gradients and argmax, channel by channel while this RoI's are
             * added: a burst of prefetches before the RoI was mostly dropped */
            const int64_t next = i + 1 < last ? plan->rois->order[i + 1] : k;
            if (i % 8 == 0 && pyroi_cancel_requested(job->params->cancel)) {
                break;
            }
            for (j = 0; j < lanes; ++j) {
                const T *grad = job->features + k * g_strides[0] + (c0 + j) * g_strides[1];
                const int64_t *winners = job->argmax_in + k * a_strides[0] +
                                         (c0 + j) * a_strides[1];
                T *lane = block + j;
                PYROI_TYPED(roi_pool_prefetch_run)(
                    job->features + next * g_strides[0] + (c0 + j) * g_strides[1],
                    job->argmax_in + next * a_strides[0] + (c0 + j) * a_strides[1],
                    run_elements);
                for (ph = 0; ph < pooled_height; ++ph) {
                    const int64_t *winner = winners + ph * a_row;
                    const T *g = grad + ph * g_row;
                    for (pw = 0; pw < pooled_width; ++pw) {
                        const int64_t a = winner[pw * a_column];
                        if (roi_pool_argmax_is_pixel(a, plane_size)) { /* -1: nothing */
                            lane[a * ROI_POOL_LANES] += g[pw * g_column];
                        }
                    }
                }
            }
        }
        for (h = 0; h < shape[2]; ++h) {
            PYROI_TYPED(pyroi_lanes_to_channels)(block + h * shape[3] * ROI_POOL_LANES, shape[3],
                                                 lanes, image + h * gi_strides[2],
                                                 gi_strides[1], gi_strides[3]);
        }
    }
}

/* Runs a lane-major order: allocates the workers' scratch (scratch_elements each), runs task
 * over items and frees the scratch. */
static pyroi_status PYROI_TYPED(roi_pool_run_lanes)(PYROI_TYPED(roi_pool_job) *job,
                                                    pyroi_range_task task, int64_t items,
                                                    double work_per_item,
                                                    int64_t scratch_elements)
{
    const int workers = pyroi_parallel_workers(job->params->num_threads, items, work_per_item);
    pyroi_status status;
    unsigned char *allocation = (unsigned char *)malloc(
        (size_t)workers * (size_t)scratch_elements * sizeof(T) + ROI_POOL_LANE_BYTES);
    if (allocation == NULL) {
        return PYROI_E_NO_MEMORY;
    }
    /* the first lane group on a 64-byte (cache line) boundary; every part is a whole number
     * of lane groups, so each starts on one too */
    job->scratch = (T *)(void *)(allocation + (ROI_POOL_LANE_BYTES -
                                               (uintptr_t)allocation % ROI_POOL_LANE_BYTES));
    job->scratch_stride = scratch_elements;
    status = pyroi_parallel_for(workers, items, work_per_item, job->params->cancel, task, job);
    free(allocation);
    job->scratch = NULL;
    return status;
}

/* Forward in a lane-major order (the caller checked roi_pool_scratch_fits for the map). */
static pyroi_status PYROI_TYPED(roi_pool_forward_lanes)(PYROI_TYPED(roi_pool_job) *job)
{
    const int64_t *shape = job->features_shape;
    const int64_t tile = job->params->pooled_height * job->params->pooled_width;
    const int64_t map_pixels = shape[2] * shape[3];
    const int64_t groups = (shape[1] + ROI_POOL_GROUP_LANES - 1) / ROI_POOL_GROUP_LANES;
    roi_pool_plan plan;
    pyroi_status status = roi_pool_plan_init(
        &plan, job->rois, job->params->pooled_height + job->params->pooled_width,
        job->params->cancel);
    if (status != PYROI_OK) {
        return status;
    }
    status = PYROI_TYPED(roi_pool_plan_windows)(&plan, job->boxes, job->num_rois,
                                                job->box_row_stride, shape[2], shape[3],
                                                job->params);
    if (status != PYROI_OK) {
        roi_pool_plan_free(&plan);
        return status;
    }
    job->plan = &plan;
    /* gathering whole images pays once the RoIs cover about half the pixels of the images
     * they are on; below that, gathering each RoI's region reads less */
    if (plan.area * 2.0 >= (double)job->rois->num_groups * (double)map_pixels) {
        /* items follow the images with RoIs, not the batch (which may be broadcast) */
        status = PYROI_TYPED(roi_pool_run_lanes)(
            job, PYROI_TYPED(roi_pool_forward_image_task), job->rois->num_groups * groups,
            (double)ROI_POOL_GROUP_LANES *
                (plan.visits / (double)job->rois->num_groups + (double)map_pixels),
            PYROI_TYPED(roi_pool_scratch_elements)(map_pixels, tile));
    } else {
        status = PYROI_TYPED(roi_pool_run_lanes)(
            job, PYROI_TYPED(roi_pool_forward_region_task), job->num_rois,
            (double)shape[1] * (plan.visits + plan.area) / (double)job->num_rois,
            PYROI_TYPED(roi_pool_scratch_elements)(plan.max_area, tile));
    }
    roi_pool_plan_free(&plan);
    return status;
}

/* The forward of the call's RoIs (job->rois, job->boxes...) once its checks passed. */
static pyroi_status PYROI_TYPED(roi_pool_forward_checked)(PYROI_TYPED(roi_pool_job) *job)
{
    const int64_t *input_shape = job->features_shape;
    const pyroi_roi_pool_params *params = job->params;
    const int64_t num_rois = job->num_rois;
    double max_area;
    int64_t failed_roi;
    int workers;
    pyroi_status status = PYROI_TYPED(roi_pool_scan_boxes)(
        job->boxes, num_rois, job->box_row_stride, input_shape[2], input_shape[3], params,
        &max_area, &failed_roi);
    if (status != PYROI_OK || num_rois == 0 || input_shape[1] == 0) {
        return status;
    }
    /* an output much larger than a core's caches is not read back soon: stream it */
    job->stream = (double)num_rois * (double)input_shape[1] * (double)params->pooled_height *
                      (double)params->pooled_width * (double)sizeof(T) >=
                  (double)ROI_POOL_STREAM_BYTES;
    if (PYROI_TYPED(roi_pool_scratch_fits)(input_shape[2] * input_shape[3],
                                           params->pooled_height * params->pooled_width)) {
        return PYROI_TYPED(roi_pool_forward_lanes)(job);
    }
    /* direct order. Work per RoI: every channel reads the pixels of every bin (bins overlap
     * little) */
    const double work_per_item = (double)input_shape[1] *
                                 ((double)params->pooled_height * (double)params->pooled_width + max_area);
    workers = pyroi_parallel_workers(params->num_threads, num_rois, work_per_item);
    status = roi_pool_windows_alloc(&job->windows, workers, params->pooled_height,
                                    params->pooled_width);
    if (status != PYROI_OK) {
        return status;
    }
    status = pyroi_parallel_for(workers, num_rois, work_per_item, params->cancel,
                                PYROI_TYPED(roi_pool_forward_task), job);
    free(job->windows);
    job->windows = NULL;
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_pool_forward)(
    const T *input, const int64_t input_shape[4], const int64_t input_strides[4],
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices,
    T *output, const int64_t output_strides[4],
    int64_t *argmax, const int64_t argmax_strides[4],
    const pyroi_roi_pool_params *params)
{
    PYROI_TYPED(roi_pool_job) job;
    pyroi_rois rois;
    pyroi_status status = roi_pool_check_forward(input, input_shape, input_strides, boxes,
                                                 num_rois, box_row_stride, batch_indices,
                                                 output, output_strides, argmax,
                                                 argmax_strides, params, sizeof(T), &rois);
    if (status != PYROI_OK) {
        return status;
    }
    memset(&job, 0, sizeof(job));
    job.features = (const T *)pyroi_data_or_placeholder(input); /* no pixels: may be NULL */
    job.features_shape = input_shape;
    job.features_strides = input_strides;
    PYROI_TYPED(roi_pool_job_rois)(&job, &rois);
    job.result = output;
    job.result_strides = output_strides;
    job.argmax_out = argmax;
    job.argmax_strides = argmax_strides;
    job.params = params;
    status = PYROI_TYPED(roi_pool_forward_checked)(&job);
    pyroi_rois_free(&rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_roi_pool_find_invalid_roi)(
    const T *boxes, int64_t num_rois, int64_t box_row_stride,
    const int64_t *batch_indices, int64_t num_images,
    const pyroi_roi_pool_params *params, int64_t *failed_roi)
{
    double max_area;
    const pyroi_status status = pyroi_find_invalid_batch_index(
        pyroi_check_roi_pool_params(params), boxes, num_rois, box_row_stride, 4, batch_indices,
        num_images, 0, 0, failed_roi);
    if (status != PYROI_OK) {
        return status;
    }
    /* the map size only matters for the work estimate */
    return PYROI_TYPED(roi_pool_scan_boxes)(boxes, num_rois, box_row_stride, 0, 0, params,
                                            &max_area, failed_roi);
}

/* The backward of the call's RoIs (job->rois) once its checks passed. */
static pyroi_status PYROI_TYPED(roi_pool_backward_checked)(PYROI_TYPED(roi_pool_job) *job)
{
    const int64_t *grad_input_shape = job->result_shape;
    const pyroi_roi_pool_params *params = job->params;
    const int64_t map_pixels = grad_input_shape[2] * grad_input_shape[3];
    const double bins =
        (double)job->num_rois * (double)params->pooled_height * (double)params->pooled_width;
    int workers;
    /* image blocks once the RoIs' bins are not few next to the map pixels: the block turns
     * every add into a unit-stride-free, division-free scalar add in a cache-resident block */
    if (PYROI_TYPED(roi_pool_scratch_fits)(map_pixels, 0) &&
        bins * 4.0 >= (double)grad_input_shape[0] * (double)map_pixels) {
        const int64_t blocks = (grad_input_shape[1] + ROI_POOL_LANES - 1) / ROI_POOL_LANES;
        roi_pool_plan plan;
        pyroi_status status = roi_pool_plan_init(&plan, job->rois, 0, params->cancel);
        if (status != PYROI_OK) {
            return status;
        }
        job->plan = &plan;
        status = PYROI_TYPED(roi_pool_run_lanes)(
            job, PYROI_TYPED(roi_pool_backward_image_task), grad_input_shape[0] * blocks,
            (double)ROI_POOL_LANES *
                (2.0 * (double)map_pixels + bins / (double)grad_input_shape[0]),
            map_pixels * ROI_POOL_LANES);
        roi_pool_plan_free(&plan);
        job->plan = NULL;
        return status;
    }
    /* direct order. Work per channel: zero N planes, then one add per bin of every RoI */
    const double work_per_item = (double)grad_input_shape[0] * (double)map_pixels + bins;
    workers = pyroi_parallel_workers(params->num_threads, grad_input_shape[1], work_per_item);
    return pyroi_parallel_for(workers, grad_input_shape[1], work_per_item, params->cancel,
                              PYROI_TYPED(roi_pool_backward_task), job);
}

pyroi_status PYROI_TYPED(pyroi_roi_pool_backward)(
    const T *grad_output, const int64_t grad_output_strides[4],
    const int64_t *argmax, const int64_t argmax_strides[4],
    const int64_t *batch_indices, int64_t num_rois,
    T *grad_input, const int64_t grad_input_shape[4], const int64_t grad_input_strides[4],
    const pyroi_roi_pool_params *params)
{
    PYROI_TYPED(roi_pool_job) job;
    pyroi_rois rois;
    pyroi_status status = roi_pool_check_backward(
        grad_output, grad_output_strides, argmax, argmax_strides, batch_indices, num_rois,
        grad_input, grad_input_shape, grad_input_strides, params, &rois);
    if (status != PYROI_OK) {
        return status;
    }
    /* nothing to write with an empty grad_input (which may then be NULL) */
    if (!pyroi_shape_is_empty(grad_input_shape)) {
        memset(&job, 0, sizeof(job));
        job.features = grad_output;
        job.features_strides = grad_output_strides;
        PYROI_TYPED(roi_pool_job_rois)(&job, &rois);
        job.result = grad_input;
        job.result_shape = grad_input_shape;
        job.result_strides = grad_input_strides;
        job.argmax_in = argmax;
        job.argmax_strides = argmax_strides;
        job.params = params;
        status = PYROI_TYPED(roi_pool_backward_checked)(&job);
    }
    pyroi_rois_free(&rois);
    return status;
}

#undef ROI_POOL_GROUP_LANES
#undef ROI_POOL_LANES
