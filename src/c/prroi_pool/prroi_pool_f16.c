/* prroi_pool_f16.c - PrRoIPool's float16 entry points: the forward and the input backward in
 * chunks of channels through core/half_chunks.h (no in-place path). */
#include "core/half_chunks.h"
#include "core/validate.h"

HALF_FORWARD_NO_ARGMAX(prroi_pool_forward, prroi_pool, NULL)
HALF_BACKWARD(prroi_pool_backward, prroi_pool, 4, 0, HALF_NO_ARGMAX_PARAMETERS,
              HALF_NO_ARGMAX_ARGUMENTS, HALF_BACKWARD_ARGS(prroi_pool), NULL)
