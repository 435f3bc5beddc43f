/* sampling.h - the one bilinear sampler of pyroi (internal, not installed).
 *
 * Every RoIAlign-family operator samples its feature plane the same way (the "Caffe2 rule"
 * that torchvision, ONNX Runtime, mmcv and detectron2 share; docs/semantics.md §2): a real
 * coordinate in [-1, extent] is clamped into the map and split into two neighbouring pixels
 * with linear weights; a coordinate outside contributes nothing. The rule is applied per
 * axis, so an axis-aligned RoI needs only two small tables of per-axis taps (one for rows,
 * one for columns) that every channel reuses; a sample's four bilinear weights are products
 * of one row tap and one column tap, formed in the same order as the peers for bit-exact
 * results.
 *
 * The functions are static inline and written once in sampling_template.h, instantiated here
 * for float and double; kernels include this header.
 */
#ifndef PYROI_SAMPLING_H
#define PYROI_SAMPLING_H

#include "core/common.h"

#include <math.h>

/* The taps of bin b along one axis are entries [begin, end) of that axis's tap table; they
 * belong to the bin's samples first_sample, first_sample + 1, ... (samples outside the map
 * have no taps). */
typedef struct pyroi_tap_range {
    int64_t begin;
    int64_t end;
    int64_t first_sample;
} pyroi_tap_range;

/* Tests of a sample coordinate against the map [-1, extent], for bisection. */
enum pyroi_position_test {
    PYROI_POSITION_NOT_BELOW, /* coord >= -1 */
    PYROI_POSITION_ABOVE,     /* coord > extent */
    PYROI_POSITION_NOT_ABOVE, /* coord <= extent */
    PYROI_POSITION_BELOW      /* coord < -1 */
};

/* How a float16 call widens each element of its map as it reads it (exactly); NULL in a call
 * on T tensors. */
typedef float (*pyroi_widen_fn)(uint16_t half);

#define PYROI_DTYPE_TEMPLATE "core/sampling_template.h"
#include "core/each_dtype.h"

#endif /* PYROI_SAMPLING_H */
