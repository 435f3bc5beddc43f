/*
 * _bindings.h - the C half of the Python bindings (included by _core.pyx only; not part of
 * the C library or its API).
 *
 * Every operator call of _core.pyx takes one path: its arrays and numbers are marshalled into
 * a binding_call, and the call's binding_entry - one row of BINDING_ENTRIES below - fills the
 * operator's params struct and calls the pyroi.h function of the arrays' dtype (_f32, _f64 or
 * _f16). The functions are chosen here by name, so that neither Cython nor a function-pointer
 * cast is involved in choosing them: each call below is type-checked against pyroi.h.
 */
#ifndef PYROI_BINDINGS_H
#define PYROI_BINDINGS_H

#include "pyroi.h"

/* Which array a call writes: a forward writes the pooled tensor (and argmax, when given), a
 * backward the map (reading argmax, when the entry has one); a query writes neither and
 * answers workspace_size. */
typedef enum binding_layout {
    BINDING_FORWARD,
    BINDING_BACKWARD,
    BINDING_QUERY,
    /* a box gradient (RoIAlign, PrRoIPool, crop_and_resize), or deformable pooling's offset
     * gradient: reads the pooled tensor (grad_output) and the forward's input (features),
     * writes grad_boxes (the offset and mask gradients) */
    BINDING_BOX_BACKWARD
} binding_layout;

typedef struct binding_call {
    int f64; /* float64 tensors and boxes */
    int f16; /* float16 tensors (uint16 bit patterns) and float32 boxes; neither: float32 */
    /* (N, C, H, W): a forward's input, a backward's grad_input */
    void *map;
    int64_t map_shape[4];
    int64_t map_strides[4];
    /* (K, C', PH, PW): a forward's output, a backward's grad_output */
    void *pooled;
    int64_t pooled_strides[4];
    void *boxes;
    int64_t num_rois;
    int64_t box_row_stride;
    int64_t *batch_indices;
    void *argmax; /* the pooled tensor's shape (entries of the entry's argmax_bytes), or NULL */
    int64_t argmax_strides[4];
    /* a backward from the input: the forward's input, of the map's shape (else NULL) */
    void *features;
    int64_t features_strides[4];
    /* a box backward's gradients: num_rois rows of box_size values (else NULL) */
    void *grad_boxes;
    int64_t grad_box_row_stride;
    void *workspace;
    size_t workspace_size; /* the workspace's bytes; a query's answer */
    int64_t failed_roi;    /* set by find_invalid_roi */
    /* the numbers of the params structs (a backward's pooled size: its grad_output's) */
    int64_t pooled_height, pooled_width, sampling_ratio;
    double spatial_scale_h, spatial_scale_w;
    int aligned, clockwise, angle_in_degrees, num_threads, merge_samples;
    pyroi_cancel *cancel;
    /* crop_and_resize: its params' method, placement, extrapolation value */
    int method, placement;
    double extrapolation_value;
    /* deformable pooling: its params' gamma, and its per-bin tensors (num_rois, planes, PH,
     * PW): offset and mask read, their gradients written; each NULL when absent */
    double gamma;
    void *offset, *mask, *grad_offset, *grad_mask;
    int64_t offset_strides[4], mask_strides[4], grad_offset_strides[4], grad_mask_strides[4];
    union {
        pyroi_roi_align_params roi_align;
        pyroi_roi_pool_params roi_pool;
        pyroi_ps_roi_align_params ps_roi_align;
        pyroi_ps_roi_pool_params ps_roi_pool;
        pyroi_roi_align_rotated_params roi_align_rotated;
        pyroi_prroi_pool_params prroi_pool;
        pyroi_crop_and_resize_params crop_and_resize;
        pyroi_deform_roi_pool_params deform_roi_pool;
    } params;
} binding_call;

typedef struct binding_entry {
    pyroi_status (*run)(binding_call *call);
    void (*fill_params)(binding_call *call);
    /* sets call->failed_roi to the first RoI the operator rejects; NULL: the call has no boxes */
    pyroi_status (*find_invalid_roi)(binding_call *call);
    binding_layout layout;
    int argmax_bytes;       /* bytes of an argmax entry (8: int64, 4: int32); 0: no argmax */
    int box_size;           /* coordinates per box */
    int position_sensitive; /* pooled channels C' = C / (PH * PW), else C' = C */
    int float16;            /* the C function has an _f16 variant */
    const char *boxes_name; /* the argument a rejected RoI's message names */
} binding_entry;

/* ---- the params structs, filled from a call's numbers ---------------------------------- */
#define BINDING_PARAMS(family, more)                                                        \
    static void binding_##family##_params(binding_call *c)                                  \
    {                                                                                       \
        pyroi_##family##_params *p = &c->params.family;                                     \
        pyroi_##family##_params_init(p);                                                    \
        p->pooled_height = c->pooled_height;                                                \
        p->pooled_width = c->pooled_width;                                                  \
        p->spatial_scale_h = c->spatial_scale_h;                                            \
        p->spatial_scale_w = c->spatial_scale_w;                                            \
        p->num_threads = c->num_threads;                                                    \
        p->cancel = c->cancel;                                                              \
        more                                                                                \
    }
#define BINDING_RATIO p->sampling_ratio = c->sampling_ratio;
BINDING_PARAMS(roi_align, BINDING_RATIO p->aligned = c->aligned;
               p->merge_samples = c->merge_samples;)
BINDING_PARAMS(roi_pool, )
BINDING_PARAMS(ps_roi_align, BINDING_RATIO)
BINDING_PARAMS(ps_roi_pool, )
BINDING_PARAMS(roi_align_rotated, BINDING_RATIO p->aligned = c->aligned;
               p->clockwise = c->clockwise; p->angle_in_degrees = c->angle_in_degrees;)
BINDING_PARAMS(prroi_pool, )
BINDING_PARAMS(deform_roi_pool, BINDING_RATIO p->gamma = c->gamma;)

/* crop_and_resize's params: its crop size travels as the pooled size */
static void binding_crop_and_resize_params(binding_call *c)
{
    pyroi_crop_and_resize_params *p = &c->params.crop_and_resize;
    pyroi_crop_and_resize_params_init(p);
    p->crop_height = c->pooled_height;
    p->crop_width = c->pooled_width;
    p->method = c->method;
    p->placement = c->placement;
    p->extrapolation_value = c->extrapolation_value;
    p->num_threads = c->num_threads;
    p->cancel = c->cancel;
}

/* ---- pyroi.h's argument lists, read from binding_call *c --------------------------------- */
#define BINDING_ROIS c->boxes, c->num_rois, c->box_row_stride, c->batch_indices
#define BINDING_MAP c->map, c->map_shape, c->map_strides
#define BINDING_POOLED c->pooled, c->pooled_strides
#define BINDING_ARGMAX c->argmax, c->argmax_strides
#define BINDING_FORWARD_ARGS(family) (BINDING_MAP, BINDING_ROIS, BINDING_POOLED, &c->params.family)
#define BINDING_FORWARD_ARGMAX_ARGS(family) \
    (BINDING_MAP, BINDING_ROIS, BINDING_POOLED, BINDING_ARGMAX, &c->params.family)
#define BINDING_BACKWARD_ARGS(family) (BINDING_POOLED, BINDING_ROIS, BINDING_MAP, &c->params.family)
#define BINDING_BACKWARD_ARGMAX_ARGS(family) \
    (BINDING_POOLED, BINDING_ARGMAX, BINDING_ROIS, BINDING_MAP, &c->params.family)
/* RoIPool's backward reads no boxes: its RoIs are the batch indices of the argmax rows */
#define BINDING_POOL_BACKWARD_ARGS(family) (BINDING_POOLED, BINDING_ARGMAX, c->batch_indices, \
    c->num_rois, BINDING_MAP, &c->params.family)
/* RoIPool's backward from the forward's input: the winners are found again from features */
#define BINDING_POOL_FROM_INPUT_ARGS(family) (BINDING_POOLED, c->features, c->map_shape, \
    c->features_strides, BINDING_ROIS, c->map, c->map_strides, &c->params.family)
/* the box backwards (RoIAlign's, PrRoIPool's): grad_output and the forward's input read, the box rows written */
#define BINDING_BOX_BACKWARD_ARGS(family) (BINDING_POOLED, c->features, c->map_shape, \
    c->features_strides, BINDING_ROIS, c->grad_boxes, c->grad_box_row_stride, &c->params.family)
/* deformable pooling: the per-bin offset and mask after the RoIs; its offset backward reads
 * grad_output and the forward's input (as a box backward does) and writes the two gradients */
#define BINDING_BINS c->offset, c->offset_strides, c->mask, c->mask_strides
#define BINDING_DEFORM_FORWARD_ARGS(family) \
    (BINDING_MAP, BINDING_ROIS, BINDING_BINS, BINDING_POOLED, &c->params.family)
#define BINDING_DEFORM_BACKWARD_ARGS(family) \
    (BINDING_POOLED, BINDING_ROIS, BINDING_BINS, BINDING_MAP, &c->params.family)
#define BINDING_DEFORM_OFFSET_BACKWARD_ARGS(family) (BINDING_POOLED, c->features, c->map_shape, \
    c->features_strides, BINDING_ROIS, BINDING_BINS, c->grad_offset, c->grad_offset_strides, \
    c->grad_mask, c->grad_mask_strides, &c->params.family)
#define BINDING_WITH_WORKSPACE_ARGS(family) (BINDING_POOLED, BINDING_ROIS, BINDING_MAP, \
    &c->params.family, c->workspace, c->workspace_size)
#define BINDING_WORKSPACE_SIZE_ARGS(family) \
    (BINDING_ROIS, c->map_shape, &c->params.family, &c->workspace_size)
/* find_invalid_roi: RoIAlign-like ops need the map's size, RoIPool-like ops its batch only */
#define BINDING_FIND_IN_MAP_ARGS(family) (BINDING_ROIS, c->map_shape[0], c->map_shape[2], \
    c->map_shape[3], &c->params.family, &c->failed_roi)
#define BINDING_FIND_IN_BATCH_ARGS(family) \
    (BINDING_ROIS, c->map_shape[0], &c->params.family, &c->failed_roi)

/* The dtypes of a function: its _f32 / _f64 pair (REAL), and _f16 (HALF). */
#define BINDING_BY_DTYPE(f64, function, arguments) \
    ((f64) ? function##_f64 arguments : function##_f32 arguments)
#define BINDING_REAL(function, arguments) BINDING_BY_DTYPE(c->f64, function, arguments)
#define BINDING_HALF(function, arguments) \
    (c->f16 ? function##_f16 arguments : BINDING_REAL(function, arguments))

#define BINDING_FIND(name, family, arguments) \
    static pyroi_status binding_find_##name(binding_call *c) \
    { return BINDING_REAL(pyroi_##name##_find_invalid_roi, arguments(family)); }
BINDING_FIND(roi_align, roi_align, BINDING_FIND_IN_MAP_ARGS)
BINDING_FIND(roi_pool, roi_pool, BINDING_FIND_IN_BATCH_ARGS)
BINDING_FIND(ps_roi_align, ps_roi_align, BINDING_FIND_IN_MAP_ARGS)
BINDING_FIND(ps_roi_pool, ps_roi_pool, BINDING_FIND_IN_BATCH_ARGS)
BINDING_FIND(roi_align_rotated, roi_align_rotated, BINDING_FIND_IN_MAP_ARGS)
BINDING_FIND(prroi_pool, prroi_pool, BINDING_FIND_IN_BATCH_ARGS)
BINDING_FIND(crop_and_resize, crop_and_resize, BINDING_FIND_IN_MAP_ARGS)
BINDING_FIND(deform_roi_pool, deform_roi_pool, BINDING_FIND_IN_MAP_ARGS)
#define binding_find_none NULL

/* ---- the entry points: one row each --------------------------------------------------------
 * X(name: pyroi_<name>[_f32|_f64|_f16] and the entry binding_<name>, dtypes (REAL: _f32 and
 *   _f64; HALF: also _f16), params family, argument list, layout, argmax_bytes, box_size,
 *   position_sensitive, find_invalid_roi family, boxes_name) */
#define BINDING_ENTRIES(X)                                                                    \
    X(roi_align_forward, HALF, roi_align, FORWARD, FORWARD, 0, 4, 0, roi_align, "boxes")      \
    X(roi_align_backward, HALF, roi_align, BACKWARD, BACKWARD, 0, 4, 0, roi_align, "boxes")   \
    X(roi_align_max_forward, HALF, roi_align, FORWARD_ARGMAX, FORWARD, 8, 4, 0,               \
      roi_align, "boxes")                                                                     \
    X(roi_align_max_backward, HALF, roi_align, BACKWARD_ARGMAX, BACKWARD, 8, 4, 0,            \
      roi_align, "boxes")                                                                     \
    X(roi_align_onnx_max_forward_argmax, HALF, roi_align, FORWARD_ARGMAX, FORWARD, 8, 4, 0,   \
      roi_align, "boxes")                                                                     \
    X(roi_align_onnx_max_backward, HALF, roi_align, BACKWARD_ARGMAX, BACKWARD, 8, 4, 0,       \
      roi_align, "boxes")                                                                     \
    X(roi_align_backward_with_workspace, REAL, roi_align, WITH_WORKSPACE, BACKWARD, 0, 4, 0,  \
      roi_align, "boxes")                                                                     \
    X(roi_align_backward_workspace_size, REAL, roi_align, WORKSPACE_SIZE, QUERY, 0, 4, 0,     \
      roi_align, "boxes")                                                                     \
    X(roi_align_backward_boxes, REAL, roi_align, BOX_BACKWARD, BOX_BACKWARD, 0, 4, 0,         \
      roi_align, "boxes")                                                                     \
    X(roi_pool_forward, HALF, roi_pool, FORWARD_ARGMAX, FORWARD, 8, 4, 0, roi_pool, "boxes")  \
    X(roi_pool_backward, HALF, roi_pool, POOL_BACKWARD, BACKWARD, 8, 0, 0, none, "boxes")     \
    X(roi_pool_forward_i32, HALF, roi_pool, FORWARD_ARGMAX, FORWARD, 4, 4, 0, roi_pool,       \
      "boxes")                                                                                \
    X(roi_pool_backward_i32, HALF, roi_pool, POOL_BACKWARD, BACKWARD, 4, 0, 0, none, "boxes") \
    X(roi_pool_backward_from_input, HALF, roi_pool, POOL_FROM_INPUT, BACKWARD, 0, 4, 0,      \
      roi_pool, "boxes")                                                                      \
    X(ps_roi_align_forward, HALF, ps_roi_align, FORWARD, FORWARD, 0, 4, 1,                    \
      ps_roi_align, "boxes")                                                                  \
    X(ps_roi_align_backward, HALF, ps_roi_align, BACKWARD, BACKWARD, 0, 4, 1,                 \
      ps_roi_align, "boxes")                                                                  \
    X(ps_roi_pool_forward, HALF, ps_roi_pool, FORWARD, FORWARD, 0, 4, 1,                     \
      ps_roi_pool, "boxes")                                                                   \
    X(ps_roi_pool_backward, HALF, ps_roi_pool, BACKWARD, BACKWARD, 0, 4, 1,                   \
      ps_roi_pool, "boxes")                                                                   \
    X(roi_align_rotated_forward, HALF, roi_align_rotated, FORWARD, FORWARD, 0, 5, 0,          \
      roi_align_rotated, "rois")                                                              \
    X(roi_align_rotated_backward, HALF, roi_align_rotated, BACKWARD, BACKWARD, 0, 5, 0,       \
      roi_align_rotated, "rois")                                                              \
    X(prroi_pool_forward, HALF, prroi_pool, FORWARD, FORWARD, 0, 4, 0, prroi_pool, "boxes")   \
    X(prroi_pool_backward, HALF, prroi_pool, BACKWARD, BACKWARD, 0, 4, 0, prroi_pool, "boxes") \
    X(prroi_pool_backward_boxes, REAL, prroi_pool, BOX_BACKWARD, BOX_BACKWARD, 0, 4, 0,       \
      prroi_pool, "boxes")                                                                    \
    X(crop_and_resize_forward, REAL, crop_and_resize, FORWARD, FORWARD, 0, 4, 0,              \
      crop_and_resize, "boxes")                                                               \
    X(crop_and_resize_backward_image, REAL, crop_and_resize, BACKWARD, BACKWARD, 0, 4, 0,     \
      crop_and_resize, "boxes")                                                               \
    X(crop_and_resize_backward_boxes, REAL, crop_and_resize, BOX_BACKWARD, BOX_BACKWARD, 0,   \
      4, 0, crop_and_resize, "boxes")                                                         \
    X(deform_roi_pool_forward, REAL, deform_roi_pool, DEFORM_FORWARD, FORWARD, 0, 4, 0,       \
      deform_roi_pool, "rois")                                                                \
    X(deform_roi_pool_backward, REAL, deform_roi_pool, DEFORM_BACKWARD, BACKWARD, 0, 4, 0,    \
      deform_roi_pool, "rois")                                                                \
    X(deform_roi_pool_backward_offset, REAL, deform_roi_pool, DEFORM_OFFSET_BACKWARD,         \
      BOX_BACKWARD, 0, 4, 0, deform_roi_pool, "rois")

#define BINDING_FLOAT16_REAL 0
#define BINDING_FLOAT16_HALF 1
#define BINDING_DEFINE_ENTRY(name, dtypes, family, arguments, layout, argmax_bytes, box_size, \
                             position_sensitive, find, boxes_name)                           \
    static pyroi_status binding_run_##name(binding_call *c)                                   \
    { return BINDING_##dtypes(pyroi_##name, BINDING_##arguments##_ARGS(family)); }            \
    static const binding_entry binding_##name = {                                             \
        binding_run_##name, binding_##family##_params, binding_find_##find,                   \
        BINDING_##layout, argmax_bytes, box_size, position_sensitive,                         \
        BINDING_FLOAT16_##dtypes, boxes_name};
BINDING_ENTRIES(BINDING_DEFINE_ENTRY)

/* ---- the other calls: the dtype of one function, picked by f64 ----------------------------- */
static pyroi_status binding_roi_rows_batch_indices(int f64, const void *rows, int64_t num_rois,
                                                   int64_t row_stride, int64_t coords_per_box,
                                                   int64_t num_images, int64_t *batch_indices,
                                                   int64_t *failed_roi)
{
    return BINDING_BY_DTYPE(f64, pyroi_roi_rows_batch_indices, (rows, num_rois, row_stride,
                            coords_per_box, num_images, batch_indices, failed_roi));
}

static pyroi_status binding_fpn_levels(int f64, const void *boxes, int64_t num_rois,
                                       int64_t box_row_stride,
                                       const pyroi_fpn_level_params *params, int64_t *levels)
{
    return BINDING_BY_DTYPE(f64, pyroi_fpn_levels,
                            (boxes, num_rois, box_row_stride, params, levels));
}

/* ---- multi-scale RoIAlign: a pyramid's maps, level after level ---------------------------- */
typedef struct binding_pyramid {
    int64_t num_levels;
    void *maps[PYROI_MAX_FPN_LEVELS]; /* a forward's inputs, a backward's grad_inputs */
    int64_t shapes[4 * PYROI_MAX_FPN_LEVELS];
    int64_t strides[4 * PYROI_MAX_FPN_LEVELS];
    double scales[PYROI_MAX_FPN_LEVELS];
    pyroi_fpn_level_params levels;
} binding_pyramid;

/* The maps as the dtype's pointers (a pointer array of another type is not read through a cast) */
#define BINDING_LEVEL_MAPS(type, maps, p)                                                   \
    type *maps[PYROI_MAX_FPN_LEVELS];                                                       \
    int64_t level_;                                                                         \
    for (level_ = 0; level_ < (p)->num_levels && level_ < PYROI_MAX_FPN_LEVELS; ++level_) { \
        maps[level_] = (type *)(p)->maps[level_];                                           \
    }
#define BINDING_LEVELS_FORWARD(type, suffix)                                                 \
    {                                                                                        \
        BINDING_LEVEL_MAPS(const type, maps, p)                                              \
        return pyroi_roi_align_levels_forward_##suffix(                                      \
            p->num_levels, maps, p->shapes, p->strides, p->scales, BINDING_ROIS,             \
            BINDING_POOLED, &p->levels, &c->params.roi_align);                               \
    }
#define BINDING_LEVELS_BACKWARD(type, suffix)                                                \
    {                                                                                        \
        BINDING_LEVEL_MAPS(type, maps, p)                                                    \
        return pyroi_roi_align_levels_backward_##suffix(                                     \
            BINDING_POOLED, BINDING_ROIS, p->num_levels, maps, p->shapes, p->strides,        \
            p->scales, &p->levels, &c->params.roi_align);                                    \
    }

static pyroi_status binding_roi_align_levels_forward(binding_call *c, const binding_pyramid *p)
{
    binding_roi_align_params(c);
    if (c->f64) BINDING_LEVELS_FORWARD(double, f64)
    if (c->f16) BINDING_LEVELS_FORWARD(uint16_t, f16)
    BINDING_LEVELS_FORWARD(float, f32)
}

static pyroi_status binding_roi_align_levels_backward(binding_call *c, const binding_pyramid *p)
{
    binding_roi_align_params(c);
    if (c->f64) BINDING_LEVELS_BACKWARD(double, f64)
    if (c->f16) BINDING_LEVELS_BACKWARD(uint16_t, f16)
    BINDING_LEVELS_BACKWARD(float, f32)
}

/* Explaining one RoI: c holds f64 and the numbers of the params. */
static pyroi_status binding_roi_align_sample_grid(binding_call *c, const void *box,
                                                  int64_t height, int64_t width, int64_t *grid)
{
    binding_roi_align_params(c);
    return BINDING_REAL(pyroi_roi_align_sample_grid,
                        (box, height, width, &c->params.roi_align, grid));
}

/* One axis's sample arrays as untyped pointers: the float or double ones of c->f64. */
typedef struct binding_axis_samples {
    int64_t capacity;
    void *coords;
    int64_t *taps;
    void *weights;
    int8_t *in_map;
    void *edges;
} binding_axis_samples;

#define BINDING_AXIS(a) {(a)->capacity, (a)->coords, (a)->taps, (a)->weights, (a)->in_map, \
                         (a)->edges}
static pyroi_status binding_roi_align_sample_axes(binding_call *c, const void *box,
                                                  int64_t height, int64_t width,
                                                  const binding_axis_samples *rows,
                                                  const binding_axis_samples *cols)
{
    binding_roi_align_params(c);
    if (c->f64) {
        pyroi_roi_align_axis_samples_f64 r = BINDING_AXIS(rows), k = BINDING_AXIS(cols);
        return pyroi_roi_align_sample_axes_f64(box, height, width, &c->params.roi_align, &r, &k);
    } else {
        pyroi_roi_align_axis_samples_f32 r = BINDING_AXIS(rows), k = BINDING_AXIS(cols);
        return pyroi_roi_align_sample_axes_f32(box, height, width, &c->params.roi_align, &r, &k);
    }
}

static pyroi_status binding_roi_pool_bin_edges(binding_call *c, const void *box, int64_t height,
                                               int64_t width, int64_t *roi_pixels,
                                               int64_t *row_edges, int64_t *col_edges)
{
    binding_roi_pool_params(c);
    return BINDING_REAL(pyroi_roi_pool_bin_edges, (box, height, width, &c->params.roi_pool,
                                                   roi_pixels, row_edges, col_edges));
}

static pyroi_status binding_roi_pool_backward_from_input_pays(binding_call *c,
                                                              const int64_t input_shape[4],
                                                              int64_t num_rois, int *pays)
{
    binding_roi_pool_params(c);
    return pyroi_roi_pool_backward_from_input_pays(input_shape, num_rois, &c->params.roi_pool,
                                                   pays);
}

#endif /* PYROI_BINDINGS_H */
