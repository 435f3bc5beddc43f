/* prroi_pool_dtype.h - PrRoIPool for one dtype: included by prroi_pool.c once per dtype
 * (each_dtype.h) with T and PYROI_TYPED(name) defined. The templates, in include order:
 *   prroi_pool_math_template.h  the job, the box scan, a bin's weights and its three kernels
 *   prroi_pool_template.h       the tasks, the calls and the entry points */
#include "prroi_pool/prroi_pool_math_template.h"
#include "prroi_pool/prroi_pool_template.h"
