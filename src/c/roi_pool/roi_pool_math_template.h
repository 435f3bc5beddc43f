/* roi_pool_math_template.h - the math of RoIPool (the quantised max pooling of Fast R-CNN,
 * torchvision.ops.roi_pool): a RoI's bin windows, the direct forward (max and argmax) and
 * backward kernels, and the same max per lane on a channels-last block. Semantics:
 * docs/semantics.md §5.1; the arithmetic is torchvision's (one rounding per operation, in T)
 * so that windows, maxima and argmax match it exactly. Included by roi_pool.c once per dtype
 * with T, PYROI_TYPED(name), ROI_POOL_ROUND, ROI_POOL_FLOOR and ROI_POOL_CEIL defined. */

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
                                                     pyroi_call_cancel *cancel,
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
        if (pyroi_cancel_at(cancel, k)) {
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
    void *PYROI_RESTRICT argmax, const int64_t argmax_strides[4], int argmax_wide,
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
        /* a part: one bin of one channel, at most the largest window's pixels */
        pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(
            params->cancel, roi_pool_largest_window(row_windows, pooled_height) *
                                roi_pool_largest_window(col_windows, pooled_width));
        for (c = 0; c < channels; ++c) {
            const T *plane = input + batch_indices[k] * input_strides[0] + c * input_strides[1];
            T *out = output + k * output_strides[0] + c * output_strides[1];
            /* the first argmax entry of the channel (argmax_strides is NULL without one) */
            const int64_t winners =
                argmax == NULL ? 0 : k * argmax_strides[0] + c * argmax_strides[1];
            for (ph = 0; ph < pooled_height; ++ph) {
                const roi_pool_window rw = row_windows[ph];
                for (pw = 0; pw < pooled_width; ++pw) {
                    const roi_pool_window cw = col_windows[pw];
                    /* an empty bin is 0; otherwise the running maximum starts at -FLT_MAX
                     * (also for double, as torchvision) and only a strictly larger pixel
                     * replaces it: ties keep the first in row-major order, NaN never wins */
                    T best = (T)0;
                    int64_t best_index = -1;
                    if (pyroi_cancel_count(&countdown)) {
                        return; /* the outputs are unspecified once cancelled */
                    }
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
                    if (argmax != NULL) {
                        roi_pool_argmax_set(argmax,
                                            winners + ph * argmax_strides[2] +
                                                pw * argmax_strides[3],
                                            argmax_wide, best_index);
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
    const void *argmax, const int64_t argmax_strides[4], int argmax_wide,
    const int64_t *batch_indices, int64_t num_rois,
    T *PYROI_RESTRICT grad_input, const int64_t grad_input_shape[4],
    const int64_t grad_input_strides[4], const pyroi_roi_pool_params *params,
    int64_t channel_begin, int64_t channel_end)
{
    const int64_t width = grad_input_shape[3];
    const int64_t plane_size = grad_input_shape[2] * width;
    const int64_t row_stride = grad_input_strides[2], col_stride = grad_input_strides[3];
    int64_t k, c, ph, pw;

    if (pyroi_zero_channels(grad_input, sizeof(T), grad_input_shape, grad_input_strides,
                            channel_begin, channel_end, params->cancel)) {
        return;
    }
    for (k = 0; k < num_rois; ++k) {
        if (k % 8 == 0 && pyroi_cancel_requested(params->cancel)) {
            break; /* an item (channel) holds every RoI */
        }
        for (c = channel_begin; c < channel_end; ++c) {
            T *plane = grad_input + batch_indices[k] * grad_input_strides[0] +
                       c * grad_input_strides[1];
            const T *grad = grad_output + k * grad_output_strides[0] + c * grad_output_strides[1];
            const int64_t winners = k * argmax_strides[0] + c * argmax_strides[1];
            for (ph = 0; ph < params->pooled_height; ++ph) {
                for (pw = 0; pw < params->pooled_width; ++pw) {
                    const int64_t a = roi_pool_argmax_read_once(
                        argmax, winners + ph * argmax_strides[2] + pw * argmax_strides[3],
                        argmax_wide);
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

#define ROI_POOL_GROUP_LANES (ROI_POOL_GROUP * PYROI_LANES)

/* The bin kernels. first points at the window's (rw x cw, non-empty) top-left pixel in
 * sub-block 0 of a block of pitch pixels per row; sub-block s is s * sub_stride further.
 * Per lane they perform the scalar kernel's
 *     if (value > best) { best = value; best_index = index; }
 * over the window in row-major order, starting from best = -FLT_MAX, best_index = -1.
 * Results go to result[s * result_sub_stride + lane]. */

/* The maxima alone. value > best ? value : best is exactly the x86 max instruction (NaN or
 * equal keep best), so compilers turn each lane loop into one max per vector. */
PYROI_CLONE_INLINE void PYROI_TYPED(roi_pool_bin_max)(const T *first, int64_t sub_stride,
                                                 int64_t pitch, roi_pool_window rw,
                                                 roi_pool_window cw, T *PYROI_RESTRICT result,
                                                 int64_t result_sub_stride)
{
    T best0[PYROI_LANE_BYTES / sizeof(T)], best1[PYROI_LANE_BYTES / sizeof(T)];
    int64_t h, w, j;
    for (j = 0; j < PYROI_LANES; ++j) {
        best0[j] = (T)-FLT_MAX;
        best1[j] = (T)-FLT_MAX;
    }
    for (h = rw.begin; h < rw.end; ++h) {
        const T *pixel = first + (h - rw.begin) * pitch * PYROI_LANES;
        for (w = cw.begin; w < cw.end; ++w) {
            /* kept loops: fully unrolled, GCC no longer vectorises them */
            ROI_POOL_NO_UNROLL
            for (j = 0; j < PYROI_LANES; ++j) {
                best0[j] = pixel[j] > best0[j] ? pixel[j] : best0[j];
            }
            ROI_POOL_NO_UNROLL
            for (j = 0; j < PYROI_LANES; ++j) {
                best1[j] = pixel[sub_stride + j] > best1[j] ? pixel[sub_stride + j] : best1[j];
            }
            pixel += PYROI_LANES;
        }
    }
    for (j = 0; j < PYROI_LANES; ++j) {
        result[j] = best0[j];
    }
    for (j = 0; j < PYROI_LANES; ++j) {
        result[result_sub_stride + j] = best1[j];
    }
}

/* The maxima and, in winners, the in-plane index h * width + w where each was found, or -1
 * (as roi_pool_index: int32 for float, enough for every map of these orders, below 2^19
 * pixels).
 * And roi_pool_bin_add_at_max, the backward of one bin from the input: per lane the winner
 * of roi_pool_bin_argmax (the first pixel in row-major order equal to the bin's maximum
 * target[lane]; NaN equals nothing; none when the maximum stayed at -FLT_MAX) receives
 * grad[lane] in sums, a block of first's layout at first's offset; target and grad are tiles
 * as result. No index is kept: the gradient lands where the argmax backward puts it. */

#if defined(ROI_POOL_VECTORS)
/* GCC turns the scalar form of the index update into masked stores; generic vectors of half
 * a lane line (one AVX2 register) give plain compare-and-blend code. */
typedef T PYROI_TYPED(roi_pool_half) __attribute__((vector_size(PYROI_LANE_BYTES / 2)));
typedef PYROI_TYPED(roi_pool_index)
    PYROI_TYPED(roi_pool_half_index) __attribute__((vector_size(PYROI_LANE_BYTES / 2)));

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

PYROI_CLONE_INLINE void PYROI_TYPED(roi_pool_bin_argmax)(
    const T *first, int64_t sub_stride, int64_t pitch, int64_t width, roi_pool_window rw,
    roi_pool_window cw, T *PYROI_RESTRICT result,
    PYROI_TYPED(roi_pool_index) *PYROI_RESTRICT winners, int64_t result_sub_stride)
{
    const PYROI_TYPED(roi_pool_half) lowest = {0};
    const PYROI_TYPED(roi_pool_half_index) none = {0};
    const int64_t half = PYROI_LANES / 2;
    /* sub-block 0 low and high half, sub-block 1 low and high half */
    PYROI_TYPED(roi_pool_half) best0 = lowest - (T)FLT_MAX, best1 = best0, best2 = best0;
    PYROI_TYPED(roi_pool_half) best3 = best0;
    PYROI_TYPED(roi_pool_half_index) index0 = none - 1, index1 = index0, index2 = index0;
    PYROI_TYPED(roi_pool_half_index) index3 = index0;
    int64_t h, w;
    for (h = rw.begin; h < rw.end; ++h) {
        const T *pixel = first + (h - rw.begin) * pitch * PYROI_LANES;
        PYROI_TYPED(roi_pool_half_index) at = none + (PYROI_TYPED(roi_pool_index))(
                                                         h * width + cw.begin);
        for (w = cw.begin; w < cw.end; ++w) {
            ROI_POOL_UPDATE(best0, index0, pixel, at);
            ROI_POOL_UPDATE(best1, index1, pixel + half, at);
            ROI_POOL_UPDATE(best2, index2, pixel + sub_stride, at);
            ROI_POOL_UPDATE(best3, index3, pixel + sub_stride + half, at);
            pixel += PYROI_LANES;
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

/* The backward of one bin from the input (see roi_pool_bin_add_at_max below). One step of
 * half a lane line: the still open lanes whose value at address equals target take grad
 * into sum and close; the others add +0, which leaves every sum as it was (sums start at +0
 * and a sum of additions starting there is never -0). */
#define ROI_POOL_ADD_AT(sum, open, address, target, grad)                                      \
    do {                                                                                       \
        PYROI_TYPED(roi_pool_half) value_, total_;                                             \
        PYROI_TYPED(roi_pool_half_index) hit_;                                                 \
        memcpy(&value_, (address), sizeof(value_));                                            \
        memcpy(&total_, (sum), sizeof(total_));                                                \
        hit_ = (PYROI_TYPED(roi_pool_half_index))(value_ == (target)) & (open);                \
        total_ += (PYROI_TYPED(roi_pool_half))((PYROI_TYPED(roi_pool_half_index))(grad) &      \
                                               hit_);                                          \
        memcpy((sum), &total_, sizeof(total_));                                                \
        (open) &= ~hit_;                                                                       \
    } while (0)

PYROI_CLONE_INLINE void PYROI_TYPED(roi_pool_bin_add_at_max)(
    const T *first, int64_t sub_stride, int64_t pitch, roi_pool_window rw, roi_pool_window cw,
    const T *target, const T *grad, int64_t tile_sub_stride, T *PYROI_RESTRICT sums)
{
    const PYROI_TYPED(roi_pool_half) lowest = {0};
    const int64_t half = PYROI_LANES / 2;
    PYROI_TYPED(roi_pool_half) target0, target1, target2, target3;
    PYROI_TYPED(roi_pool_half) grad0, grad1, grad2, grad3;
    PYROI_TYPED(roi_pool_half_index) open0, open1, open2, open3;
    int64_t h, w;
    memcpy(&target0, target, sizeof(target0));
    memcpy(&target1, target + half, sizeof(target1));
    memcpy(&target2, target + tile_sub_stride, sizeof(target2));
    memcpy(&target3, target + tile_sub_stride + half, sizeof(target3));
    memcpy(&grad0, grad, sizeof(grad0));
    memcpy(&grad1, grad + half, sizeof(grad1));
    memcpy(&grad2, grad + tile_sub_stride, sizeof(grad2));
    memcpy(&grad3, grad + tile_sub_stride + half, sizeof(grad3));
    /* a maximum still at -FLT_MAX: no pixel beat the start, no winner */
    open0 = (PYROI_TYPED(roi_pool_half_index))(target0 > lowest - (T)FLT_MAX);
    open1 = (PYROI_TYPED(roi_pool_half_index))(target1 > lowest - (T)FLT_MAX);
    open2 = (PYROI_TYPED(roi_pool_half_index))(target2 > lowest - (T)FLT_MAX);
    open3 = (PYROI_TYPED(roi_pool_half_index))(target3 > lowest - (T)FLT_MAX);
    for (h = rw.begin; h < rw.end; ++h) {
        const T *pixel = first + (h - rw.begin) * pitch * PYROI_LANES;
        T *sum = sums + (h - rw.begin) * pitch * PYROI_LANES;
        for (w = cw.begin; w < cw.end; ++w) {
            ROI_POOL_ADD_AT(sum, open0, pixel, target0, grad0);
            ROI_POOL_ADD_AT(sum + half, open1, pixel + half, target1, grad1);
            ROI_POOL_ADD_AT(sum + sub_stride, open2, pixel + sub_stride, target2, grad2);
            ROI_POOL_ADD_AT(sum + sub_stride + half, open3, pixel + sub_stride + half, target3,
                            grad3);
            pixel += PYROI_LANES;
            sum += PYROI_LANES;
        }
    }
}

#undef ROI_POOL_ADD_AT
#undef ROI_POOL_UPDATE
#else
PYROI_CLONE_INLINE void PYROI_TYPED(roi_pool_bin_argmax)(
    const T *first, int64_t sub_stride, int64_t pitch, int64_t width, roi_pool_window rw,
    roi_pool_window cw, T *PYROI_RESTRICT result,
    PYROI_TYPED(roi_pool_index) *PYROI_RESTRICT winners, int64_t result_sub_stride)
{
    T best[PYROI_LANE_BYTES / sizeof(T)];
    PYROI_TYPED(roi_pool_index) best_index[PYROI_LANE_BYTES / sizeof(T)];
    int64_t s, h, w, j;
    for (s = 0; s < ROI_POOL_GROUP; ++s) {
        for (j = 0; j < PYROI_LANES; ++j) {
            best[j] = (T)-FLT_MAX;
            best_index[j] = -1;
        }
        for (h = rw.begin; h < rw.end; ++h) {
            const T *pixel = first + s * sub_stride + (h - rw.begin) * pitch * PYROI_LANES;
            for (w = cw.begin; w < cw.end; ++w) {
                for (j = 0; j < PYROI_LANES; ++j) {
                    if (pixel[j] > best[j]) {
                        best[j] = pixel[j];
                        best_index[j] = (PYROI_TYPED(roi_pool_index))(h * width + w);
                    }
                }
                pixel += PYROI_LANES;
            }
        }
        for (j = 0; j < PYROI_LANES; ++j) {
            result[s * result_sub_stride + j] = best[j];
            winners[s * result_sub_stride + j] = best_index[j];
        }
    }
}

PYROI_CLONE_INLINE void PYROI_TYPED(roi_pool_bin_add_at_max)(
    const T *first, int64_t sub_stride, int64_t pitch, roi_pool_window rw, roi_pool_window cw,
    const T *target, const T *grad, int64_t tile_sub_stride, T *PYROI_RESTRICT sums)
{
    int64_t s, h, w, j;
    for (s = 0; s < ROI_POOL_GROUP; ++s) {
        for (j = 0; j < PYROI_LANES; ++j) {
            const T best = target[s * tile_sub_stride + j];
            int open = best > (T)-FLT_MAX; /* else no pixel beat the start: no winner */
            for (h = rw.begin; h < rw.end && open; ++h) {
                const int64_t row = s * sub_stride + (h - rw.begin) * pitch * PYROI_LANES + j;
                for (w = 0; w < cw.end - cw.begin; ++w) {
                    if (first[row + w * PYROI_LANES] == best) {
                        sums[row + w * PYROI_LANES] += grad[s * tile_sub_stride + j];
                        open = 0;
                        break;
                    }
                }
            }
        }
    }
}
#endif
