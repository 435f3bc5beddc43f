/* crop_and_resize_template.h - crop_and_resize for one dtype (T, PYROI_TYPED; included by
 * crop_and_resize.c through core/each_dtype.h): where a crop samples, the forward, the image
 * and box gradients, their tasks and entry points (docs/semantics.md §13).
 *
 * The bilinear value is TensorFlow's lerp form (two lerps along x, one along y), not the
 * four-weight sum of core/sampling.h: the forms round differently in float32, and crops of a
 * crop_and_resize model are to equal TensorFlow's, so this operator does not use that sampler
 * (nor its [-1, H] halo: a sample outside [0, H - 1] takes the extrapolation value). */

/* One axis of a box: sample i of n lies at position(i); outside [0, last] it is extrapolated. */
typedef struct PYROI_TYPED(crop_axis) {
    T start, end; /* the box's normalised edges along the axis (start may exceed end) */
    T last;       /* the image's extent - 1, as T */
    T scale;      /* (end - start) * last / (n - 1); n == 1: 0 */
    T ratio;      /* last / (n - 1), the box gradient's factor; n == 1: 0 */
    int64_t n;
    int placement;
} PYROI_TYPED(crop_axis);

static PYROI_TYPED(crop_axis) PYROI_TYPED(crop_axis_of)(T start, T end, int64_t extent,
                                                       int64_t n, int placement)
{
    PYROI_TYPED(crop_axis) axis;
    axis.start = start;
    axis.end = end;
    axis.last = (T)(extent - 1);
    axis.scale = n > 1 ? (end - start) * axis.last / (T)(n - 1) : (T)0;
    axis.ratio = n > 1 ? axis.last / (T)(n - 1) : (T)0;
    axis.n = n;
    axis.placement = placement;
    return axis;
}

/* Sample i's position (docs/semantics.md §13): TensorFlow's start * last + i * scale in T
 * (one crop: the centre, 0.5 * (start + end) * last in double, as TensorFlow's double
 * literal makes it), or, with PYROI_CROP_PLACEMENT_EXACT_ENDS (onnxruntime's), the first and
 * last samples at start * last and end * last exactly. */
static inline T PYROI_TYPED(crop_position)(const PYROI_TYPED(crop_axis) *axis, int64_t i)
{
    if (axis->n == 1) {
        return (T)(0.5 * (double)(axis->start + axis->end) * (double)axis->last);
    }
    if (axis->placement == PYROI_CROP_PLACEMENT_EXACT_ENDS) {
        if (i == 0) {
            return axis->start * axis->last;
        }
        if (i == axis->n - 1) {
            return axis->end * axis->last;
        }
    }
    return axis->start * axis->last + (T)i * axis->scale;
}

/* Whether a position lies in [0, last] (NaN, from a finite box whose products overflow, does
 * not: it is extrapolated like any position outside). */
static inline int PYROI_TYPED(crop_inside)(const PYROI_TYPED(crop_axis) *axis, T position)
{
    return position >= (T)0 && position <= axis->last;
}

typedef struct PYROI_TYPED(crop_job) {
    const T *image; /* forward, box gradient: the image; image gradient: NULL */
    T *grad_image;
    const int64_t *shape;   /* the image's (N, C, H, W) */
    const int64_t *strides; /* the image's or grad_image's element strides */
    const T *crops;         /* the grads a backward reads */
    T *out;                 /* the forward's crops */
    const int64_t *crop_strides;
    T *grad_boxes;
    int64_t grad_boxes_row_stride;
    const pyroi_rois *rois; /* the call's copy of boxes and box indices */
    const pyroi_crop_and_resize_params *params;
    int64_t channel_block; /* channels per work item of the image gradient */
} PYROI_TYPED(crop_job);

/* The axes of box k (rows, then columns) from the call's copy. */
static void PYROI_TYPED(crop_axes)(const PYROI_TYPED(crop_job) *job, int64_t k,
                                   PYROI_TYPED(crop_axis) *rows,
                                   PYROI_TYPED(crop_axis) *cols)
{
    const T *box = (const T *)job->rois->boxes + k * 4;
    *rows = PYROI_TYPED(crop_axis_of)(box[0], box[2], job->shape[2], job->params->crop_height,
                                      job->params->placement);
    *cols = PYROI_TYPED(crop_axis_of)(box[1], box[3], job->shape[3], job->params->crop_width,
                                      job->params->placement);
}

/* ---- forward: one work item per box -------------------------------------------------------- */
static void PYROI_TYPED(crop_forward_task)(void *context, int64_t begin, int64_t end,
                                           int worker)
{
    const PYROI_TYPED(crop_job) *job = (const PYROI_TYPED(crop_job) *)context;
    const int64_t C = job->shape[1];
    const int64_t *is = job->strides, *os = job->crop_strides;
    const T fill = (T)job->params->extrapolation_value;
    const int nearest = job->params->method == PYROI_CROP_NEAREST;
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(job->params->cancel, 4 * C);
    int64_t k, i, j, c;
    (void)worker;
    for (k = begin; k < end; ++k) {
        PYROI_TYPED(crop_axis) rows, cols;
        const T *plane = job->image + job->rois->batch_indices[k] * is[0];
        T *crop = job->out + k * os[0];
        PYROI_TYPED(crop_axes)(job, k, &rows, &cols);
        for (i = 0; i < rows.n; ++i) {
            const T y = PYROI_TYPED(crop_position)(&rows, i);
            const int row_inside = PYROI_TYPED(crop_inside)(&rows, y);
            const int64_t top = row_inside ? (int64_t)PYROI_FLOOR(y) : 0;
            const int64_t bottom = row_inside ? (int64_t)PYROI_CEIL(y) : 0;
            const int64_t near_y = row_inside ? (int64_t)PYROI_ROUND(y) : 0;
            const T dy = y - (T)top;
            for (j = 0; j < cols.n; ++j) {
                const T x = PYROI_TYPED(crop_position)(&cols, j);
                T *pixel = crop + i * os[2] + j * os[3];
                if (pyroi_cancel_count(&countdown)) {
                    return;
                }
                if (!row_inside || !PYROI_TYPED(crop_inside)(&cols, x)) {
                    for (c = 0; c < C; ++c) {
                        pixel[c * os[1]] = fill;
                    }
                } else if (nearest) {
                    const T *from = plane + near_y * is[2] + (int64_t)PYROI_ROUND(x) * is[3];
                    for (c = 0; c < C; ++c) {
                        pixel[c * os[1]] = from[c * is[1]];
                    }
                } else {
                    const int64_t left = (int64_t)PYROI_FLOOR(x), right = (int64_t)PYROI_CEIL(x);
                    const T dx = x - (T)left;
                    const T *tl = plane + top * is[2] + left * is[3];
                    const T *tr = plane + top * is[2] + right * is[3];
                    const T *bl = plane + bottom * is[2] + left * is[3];
                    const T *br = plane + bottom * is[2] + right * is[3];
                    for (c = 0; c < C; ++c) {
                        const int64_t o = c * is[1];
                        const T upper = tl[o] + (tr[o] - tl[o]) * dx;
                        const T lower = bl[o] + (br[o] - bl[o]) * dx;
                        pixel[c * os[1]] = upper + (lower - upper) * dy;
                    }
                }
            }
        }
    }
}

/* ---- image gradient: one work item per block of channels, every box in order ---------------
 * An item zeroes its channels of grad_image, then adds every box's gradients to them in
 * TensorFlow's order (box, row, column, tap): items write disjoint channels, each element's
 * sum runs in the same order for every thread count. */
static void PYROI_TYPED(crop_backward_image_task)(void *context, int64_t begin, int64_t end,
                                                  int worker)
{
    const PYROI_TYPED(crop_job) *job = (const PYROI_TYPED(crop_job) *)context;
    const int64_t C = job->shape[1];
    const int64_t *is = job->strides, *gs = job->crop_strides;
    const int nearest = job->params->method == PYROI_CROP_NEAREST;
    const int64_t c_begin = begin * job->channel_block;
    const int64_t c_end = end * job->channel_block < C ? end * job->channel_block : C;
    pyroi_cancel_countdown countdown =
        pyroi_cancel_countdown_of(job->params->cancel, 6 * (c_end - c_begin));
    int64_t k, i, j, c;
    (void)worker;
    if (pyroi_zero_channels(job->grad_image, sizeof(T), job->shape, is, c_begin, c_end,
                            job->params->cancel)) {
        return;
    }
    for (k = 0; k < job->rois->num_rois; ++k) {
        PYROI_TYPED(crop_axis) rows, cols;
        T *plane = job->grad_image + job->rois->batch_indices[k] * is[0];
        const T *grads = job->crops + k * gs[0];
        PYROI_TYPED(crop_axes)(job, k, &rows, &cols);
        for (i = 0; i < rows.n; ++i) {
            const T y = PYROI_TYPED(crop_position)(&rows, i);
            int64_t top, bottom;
            T dy;
            if (!PYROI_TYPED(crop_inside)(&rows, y)) {
                continue;
            }
            top = (int64_t)PYROI_FLOOR(y);
            bottom = (int64_t)PYROI_CEIL(y);
            dy = y - (T)top;
            for (j = 0; j < cols.n; ++j) {
                const T x = PYROI_TYPED(crop_position)(&cols, j);
                const T *g = grads + i * gs[2] + j * gs[3];
                if (pyroi_cancel_count(&countdown)) {
                    return;
                }
                if (!PYROI_TYPED(crop_inside)(&cols, x)) {
                    continue;
                }
                if (nearest) {
                    T *to = plane + (int64_t)PYROI_ROUND(y) * is[2] +
                            (int64_t)PYROI_ROUND(x) * is[3];
                    for (c = c_begin; c < c_end; ++c) {
                        to[c * is[1]] += g[c * gs[1]];
                    }
                } else {
                    const int64_t left = (int64_t)PYROI_FLOOR(x), right = (int64_t)PYROI_CEIL(x);
                    const T dx = x - (T)left;
                    T *tl = plane + top * is[2] + left * is[3];
                    T *tr = plane + top * is[2] + right * is[3];
                    T *bl = plane + bottom * is[2] + left * is[3];
                    T *br = plane + bottom * is[2] + right * is[3];
                    for (c = c_begin; c < c_end; ++c) {
                        const int64_t o = c * is[1];
                        const T grad = g[c * gs[1]];
                        const T upper = ((T)1 - dy) * grad, lower = dy * grad;
                        tl[o] += ((T)1 - dx) * upper;
                        tr[o] += dx * upper;
                        bl[o] += ((T)1 - dx) * lower;
                        br[o] += dx * lower;
                    }
                }
            }
        }
    }
}

/* The cell whose slope the box gradient takes at position p of an axis of extent last + 1:
 * [floor(p), floor(p) + 1], the right cell also at an integer p (the kink rule of
 * docs/semantics.md §13), the left one at p = last; *cell_ok is 0 on an axis of one pixel
 * (no cell: slope 0). */
static inline int64_t PYROI_TYPED(crop_slope_cell)(T p, T last, int *cell_ok)
{
    int64_t low = (int64_t)PYROI_FLOOR(p);
    *cell_ok = last > (T)0;
    if ((T)low >= last) {
        low = (int64_t)last - 1;
    }
    return low < 0 ? 0 : low;
}

/* One axis's two box-gradient terms of a sample: slope * g times d(position)/d(start) and
 * d(position)/d(end), added to acc[0] (start) and acc[1] (end) in TensorFlow's arithmetic. */
static inline void PYROI_TYPED(crop_add_box_terms)(const PYROI_TYPED(crop_axis) *axis,
                                                   int64_t i, T grad_slope, T *start, T *end)
{
    if (axis->n > 1) {
        *start += grad_slope * (axis->last - (T)i * axis->ratio);
        *end += grad_slope * ((T)i * axis->ratio);
    } else {
        const double half = (double)grad_slope * 0.5 * (double)axis->last;
        *start = (T)((double)*start + half);
        *end = (T)((double)*end + half);
    }
}

/* ---- box gradient: one work item per box --------------------------------------------------- */
static void PYROI_TYPED(crop_backward_boxes_task)(void *context, int64_t begin, int64_t end,
                                                  int worker)
{
    const PYROI_TYPED(crop_job) *job = (const PYROI_TYPED(crop_job) *)context;
    const int64_t C = job->shape[1];
    const int64_t *is = job->strides, *gs = job->crop_strides;
    pyroi_cancel_countdown countdown = pyroi_cancel_countdown_of(job->params->cancel, 12 * C);
    int64_t k, i, j, c;
    (void)worker;
    for (k = begin; k < end; ++k) {
        PYROI_TYPED(crop_axis) rows, cols;
        const T *plane = job->image + job->rois->batch_indices[k] * is[0];
        const T *grads = job->crops + k * gs[0];
        T *out = job->grad_boxes + k * job->grad_boxes_row_stride;
        T acc[4] = {0, 0, 0, 0}; /* y1, x1, y2, x2 */
        PYROI_TYPED(crop_axes)(job, k, &rows, &cols);
        for (i = 0; i < rows.n; ++i) {
            const T y = PYROI_TYPED(crop_position)(&rows, i);
            int64_t top, bottom, cell_y;
            int rows_ok;
            T dy;
            if (!PYROI_TYPED(crop_inside)(&rows, y)) {
                continue;
            }
            top = (int64_t)PYROI_FLOOR(y);
            bottom = (int64_t)PYROI_CEIL(y);
            dy = y - (T)top;
            cell_y = PYROI_TYPED(crop_slope_cell)(y, rows.last, &rows_ok);
            for (j = 0; j < cols.n; ++j) {
                const T x = PYROI_TYPED(crop_position)(&cols, j);
                const T *g = grads + i * gs[2] + j * gs[3];
                int64_t left, right, cell_x;
                int cols_ok;
                T dx;
                if (pyroi_cancel_count(&countdown)) {
                    return;
                }
                if (!PYROI_TYPED(crop_inside)(&cols, x)) {
                    continue;
                }
                left = (int64_t)PYROI_FLOOR(x);
                right = (int64_t)PYROI_CEIL(x);
                dx = x - (T)left;
                cell_x = PYROI_TYPED(crop_slope_cell)(x, cols.last, &cols_ok);
                for (c = 0; c < C; ++c) {
                    const T *p = plane + c * is[1];
                    const T grad = g[c * gs[1]];
                    T slope_y = 0, slope_x = 0;
                    if (rows_ok) { /* along y in the cell [cell_y, cell_y + 1] */
                        const T *u = p + cell_y * is[2], *d = u + is[2];
                        slope_y = ((T)1 - dx) * (d[left * is[3]] - u[left * is[3]]) +
                                  dx * (d[right * is[3]] - u[right * is[3]]);
                    }
                    if (cols_ok) { /* along x in the cell [cell_x, cell_x + 1] */
                        const T *u = p + top * is[2] + cell_x * is[3];
                        const T *d = p + bottom * is[2] + cell_x * is[3];
                        slope_x = ((T)1 - dy) * (u[is[3]] - u[0]) + dy * (d[is[3]] - d[0]);
                    }
                    PYROI_TYPED(crop_add_box_terms)(&rows, i, grad * slope_y, &acc[0], &acc[2]);
                    PYROI_TYPED(crop_add_box_terms)(&cols, j, grad * slope_x, &acc[1], &acc[3]);
                }
            }
        }
        for (c = 0; c < 4; ++c) {
            out[c] = acc[c];
        }
    }
}

/* The finite check of every copied box (docs/hostile-input.md), naming none: the Python
 * layer asks pyroi_crop_and_resize_find_invalid_roi_* which. */
static pyroi_status PYROI_TYPED(crop_check_boxes)(pyroi_rois *rois)
{
    const T *boxes = (const T *)rois->boxes;
    int64_t k, failed = -1;
    for (k = 0; k < rois->num_rois; ++k) {
        const T *b = boxes + 4 * k;
        const int finite = isfinite(b[0]) && isfinite(b[1]) && isfinite(b[2]) && isfinite(b[3]);
        pyroi_status status = pyroi_box_scan_verdict(finite ? PYROI_OK : PYROI_E_INVALID_BOX,
                                                     &rois->cancel, k, &failed);
        if (status != PYROI_OK) {
            return status;
        }
    }
    return PYROI_OK;
}

/* Runs task over items with the call's copy checked; frees the copy. */
static pyroi_status PYROI_TYPED(crop_run)(PYROI_TYPED(crop_job) *job, pyroi_rois *rois,
                                          int64_t items, double work_per_item,
                                          pyroi_range_task task)
{
    pyroi_status status = PYROI_TYPED(crop_check_boxes)(rois);
    if (status == PYROI_OK && items > 0) {
        const int workers =
            pyroi_parallel_workers(job->params->num_threads, items, work_per_item);
        job->rois = rois;
        status = pyroi_parallel_for(workers, items, work_per_item, job->params->cancel, task,
                                    job);
    }
    pyroi_rois_free(rois);
    return status;
}

pyroi_status PYROI_TYPED(pyroi_crop_and_resize_forward)(
    const T *image, const int64_t image_shape[4], const int64_t image_strides[4],
    const T *boxes, int64_t num_boxes, int64_t box_row_stride, const int64_t *box_indices,
    T *crops, const int64_t crops_strides[4], const pyroi_crop_and_resize_params *params)
{
    PYROI_TYPED(crop_job) job;
    pyroi_rois rois;
    pyroi_status status = crop_check_params(params, 0);
    if (status == PYROI_OK) {
        status = crop_check_call(image, image_shape, image_strides, PYROI_TENSOR_INPUT, crops,
                                 crops_strides, PYROI_TENSOR_OUTPUT, boxes, num_boxes,
                                 box_row_stride, box_indices, params, sizeof(T), &rois);
    }
    if (status != PYROI_OK) {
        return status;
    }
    memset(&job, 0, sizeof job);
    job.image = image;
    job.shape = image_shape;
    job.strides = image_strides;
    job.out = crops;
    job.crop_strides = crops_strides;
    job.params = params;
    return PYROI_TYPED(crop_run)(
        &job, &rois, num_boxes,
        4.0 * (double)params->crop_height * (double)params->crop_width * (double)image_shape[1],
        PYROI_TYPED(crop_forward_task));
}

pyroi_status PYROI_TYPED(pyroi_crop_and_resize_backward_image)(
    const T *grads, const int64_t grads_strides[4], const T *boxes, int64_t num_boxes,
    int64_t box_row_stride, const int64_t *box_indices, T *grad_image,
    const int64_t grad_image_shape[4], const int64_t grad_image_strides[4],
    const pyroi_crop_and_resize_params *params)
{
    /* channels per item: a 64-byte line of an NHWC pixel, whatever the layout */
    const int64_t block = (int64_t)(64 / sizeof(T));
    PYROI_TYPED(crop_job) job;
    pyroi_rois rois;
    pyroi_status status = crop_check_params(params, 0);
    if (status == PYROI_OK) {
        status = crop_check_call(grad_image, grad_image_shape, grad_image_strides,
                                 PYROI_TENSOR_OUTPUT, grads, grads_strides, PYROI_TENSOR_INPUT,
                                 boxes, num_boxes, box_row_stride, box_indices, params,
                                 sizeof(T), &rois);
    }
    if (status != PYROI_OK) {
        return status;
    }
    memset(&job, 0, sizeof job);
    job.grad_image = grad_image;
    job.shape = grad_image_shape;
    job.strides = grad_image_strides;
    job.crops = grads;
    job.crop_strides = grads_strides;
    job.params = params;
    job.channel_block = block;
    return PYROI_TYPED(crop_run)(
        &job, &rois, (grad_image_shape[1] + block - 1) / block,
        (double)block * (6.0 * (double)num_boxes * (double)params->crop_height *
                             (double)params->crop_width +
                         (double)grad_image_shape[0] * (double)grad_image_shape[2] *
                             (double)grad_image_shape[3]),
        PYROI_TYPED(crop_backward_image_task));
}

pyroi_status PYROI_TYPED(pyroi_crop_and_resize_backward_boxes)(
    const T *grads, const int64_t grads_strides[4], const T *image,
    const int64_t image_shape[4], const int64_t image_strides[4], const T *boxes,
    int64_t num_boxes, int64_t box_row_stride, const int64_t *box_indices, T *grad_boxes,
    int64_t grad_boxes_row_stride, const pyroi_crop_and_resize_params *params)
{
    PYROI_TYPED(crop_job) job;
    pyroi_rois rois;
    pyroi_status status = crop_check_params(params, 1);
    if (status == PYROI_OK) {
        status = crop_check_grad_boxes(grad_boxes, num_boxes, grad_boxes_row_stride);
    }
    if (status == PYROI_OK) {
        status = crop_check_call(image, image_shape, image_strides, PYROI_TENSOR_INPUT, grads,
                                 grads_strides, PYROI_TENSOR_INPUT, boxes, num_boxes,
                                 box_row_stride, box_indices, params, sizeof(T), &rois);
    }
    if (status != PYROI_OK) {
        return status;
    }
    memset(&job, 0, sizeof job);
    job.image = image;
    job.shape = image_shape;
    job.strides = image_strides;
    job.crops = grads;
    job.crop_strides = grads_strides;
    job.grad_boxes = grad_boxes;
    job.grad_boxes_row_stride = grad_boxes_row_stride;
    job.params = params;
    return PYROI_TYPED(crop_run)(
        &job, &rois, num_boxes,
        12.0 * (double)params->crop_height * (double)params->crop_width *
            (double)image_shape[1],
        PYROI_TYPED(crop_backward_boxes_task));
}

pyroi_status PYROI_TYPED(pyroi_crop_and_resize_find_invalid_roi)(
    const T *boxes, int64_t num_boxes, int64_t box_row_stride, const int64_t *box_indices,
    int64_t num_images, int64_t height, int64_t width,
    const pyroi_crop_and_resize_params *params, int64_t *failed_roi)
{
    int64_t k;
    pyroi_status status = pyroi_find_invalid_batch_index(
        params == NULL ? PYROI_E_NULL_POINTER : PYROI_OK, boxes, num_boxes, box_row_stride, 4,
        box_indices, num_images, height, width, failed_roi);
    if (status != PYROI_OK) {
        return status;
    }
    for (k = 0; k < num_boxes; ++k) {
        const T *b = boxes + k * box_row_stride;
        if (!(isfinite(b[0]) && isfinite(b[1]) && isfinite(b[2]) && isfinite(b[3]))) {
            *failed_roi = k;
            return PYROI_E_INVALID_BOX;
        }
    }
    return PYROI_OK;
}
