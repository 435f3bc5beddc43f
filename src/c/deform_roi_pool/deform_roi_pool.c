/* deform_roi_pool.c - deformable RoI pooling (mmcv's DeformRoIPool and, with a mask,
 * ModulatedDeformRoIPool): forward, input backward, offset and mask backward, float32 and
 * float64 (docs/semantics.md §14). Aligned RoIAlign in which each bin is translated by its own
 * offset, sampled by the one bilinear sampler (core/sampling.h). The dtype-free parts are
 * here; the bins' geometry and the kernels are written once, in the templates
 * deform_roi_pool_dtype.h lists. */
#include "core/half.h"
#include "core/parallel.h"
#include "core/rois.h"
#include "core/sampling.h"
#include "core/validate.h"
#include "layout/transpose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pyroi_deform_roi_pool_params_init(pyroi_deform_roi_pool_params *params)
{
    /* the fields not named are 0 (sampling_ratio: adaptive; num_threads: all cores) or NULL */
    static const pyroi_deform_roi_pool_params defaults = {
        .pooled_height = 1, .pooled_width = 1, .spatial_scale_h = 1.0, .spatial_scale_w = 1.0,
        .gamma = 0.1};
    if (params != NULL) {
        *params = defaults;
    }
}

/* The per-bin tensors of a call - offset (2 per bin), mask (1), and their gradients - are
 * (num_rois, planes, pooled_height, pooled_width): checked as tensors of that shape when given
 * (NULL: absent, which every entry point allows). */
static pyroi_status deform_check_bins(const void *data, const int64_t strides[4],
                                      int64_t num_rois, int64_t planes,
                                      const pyroi_deform_roi_pool_params *params,
                                      pyroi_tensor_role role)
{
    const int64_t shape[4] = {num_rois, planes, params->pooled_height, params->pooled_width};
    if (data == NULL) {
        return PYROI_OK;
    }
    if (strides == NULL) {
        return PYROI_E_NULL_POINTER;
    }
    return pyroi_check_tensor4(data, shape, strides, role);
}

/* The workers' tap tables of a call, at most this. */
#define DEFORM_SCRATCH_LIMIT 17179869184.0 /* 16 GiB for all workers: more is PYROI_E_NO_MEMORY */

/* A worker's channels-last block and tile in the lane-major orders, at most this (a larger
 * map takes the direct order, read in place). */
#define DEFORM_BLOCK_BYTES 67108864.0 /* 64 MiB */

/* The lane-major offset backward's partial sums, at most this (more: the direct order). */
#define DEFORM_PARTIAL_BYTES 268435456.0 /* 256 MiB */

/* A call's table of every bin's taps, at most this (more: each task finds the taps itself). */
#define DEFORM_PLAN_BYTES 67108864.0 /* 64 MiB */

#define PYROI_DTYPE_TEMPLATE "deform_roi_pool/deform_roi_pool_dtype.h"
#include "core/each_dtype.h"
