/* each_dtype.h - compiles the template that PYROI_DTYPE_TEMPLATE names (a quoted file name)
 * once per floating dtype: T float with PYROI_TYPED(name) = name_f32, then T double with
 * name_f64. The C99 math functions of T are PYROI_FLOOR, PYROI_CEIL, PYROI_ROUND, PYROI_SQRT
 * and PYROI_LOG2 (floorf or floor, ...). Every typed file of the core is instantiated
 * through here, so that the dtype list and the suffixes are written once. No include guard:
 * each inclusion instantiates its template and then undefines PYROI_DTYPE_TEMPLATE. */
#ifndef PYROI_DTYPE_TEMPLATE
#error "define PYROI_DTYPE_TEMPLATE (the template's file name) before including each_dtype.h"
#endif

#include "core/common.h"

#include <math.h>

#ifndef PYROI_FLOOR
/* PYROI_MATH(name): the float (suffix f) or double (no suffix) version of a math function. */
#  define PYROI_FLOOR PYROI_MATH(floor)
#  define PYROI_CEIL PYROI_MATH(ceil)
#  define PYROI_ROUND PYROI_MATH(round)
#  define PYROI_SQRT PYROI_MATH(sqrt)
#  define PYROI_LOG2 PYROI_MATH(log2)
#endif

#define T float
#define PYROI_TYPED(name) PYROI_CAT(name, _f32)
#define PYROI_MATH(name) PYROI_CAT(name, f)
#include PYROI_DTYPE_TEMPLATE
#undef PYROI_MATH
#undef PYROI_TYPED
#undef T

#define PYROI_MATH(name) name
#define T double
#define PYROI_TYPED(name) PYROI_CAT(name, _f64)
#include PYROI_DTYPE_TEMPLATE
#undef PYROI_TYPED
#undef T
#undef PYROI_MATH

#undef PYROI_DTYPE_TEMPLATE
