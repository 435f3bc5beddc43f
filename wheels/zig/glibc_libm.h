/* Forced into every C file zig cc compiles (wheels/zig/cc): the libm calls bind to glibc's.
 * zig links its compiler_rt into a library that needs any of it (here __cpu_model, of the
 * target_clones dispatch), and compiler_rt defines libm functions of its own (sin, cos, log2,
 * ...: other algorithms than glibc's, at times a last bit apart) which then take the place of
 * libm.so.6's. The peers (PyTorch, ONNX Runtime, mmcv) call glibc's, so each reference names
 * glibc's versioned symbol, which only libm.so.6 defines. An unused line adds no reference.
 * The functions IEEE 754 rounds exactly (sqrt, floor, ceil, round, trunc, fmod, fma, fabs,
 * fmin, fmax) give the same bits from either and need nothing. */
#if defined(__x86_64__)
#  define PYROI_GLIBC_LIBM_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#  define PYROI_GLIBC_LIBM_BASE "GLIBC_2.17"
#endif
#if defined(PYROI_GLIBC_LIBM_BASE)
#  define PYROI_GLIBC_LIBM(name) __asm__(".symver " #name ", " #name "@" PYROI_GLIBC_LIBM_BASE);
PYROI_GLIBC_LIBM(sin) PYROI_GLIBC_LIBM(sinf) PYROI_GLIBC_LIBM(cos) PYROI_GLIBC_LIBM(cosf)
PYROI_GLIBC_LIBM(sincos) PYROI_GLIBC_LIBM(sincosf) PYROI_GLIBC_LIBM(tan) PYROI_GLIBC_LIBM(tanf)
PYROI_GLIBC_LIBM(exp) PYROI_GLIBC_LIBM(expf) PYROI_GLIBC_LIBM(exp2) PYROI_GLIBC_LIBM(exp2f)
PYROI_GLIBC_LIBM(log) PYROI_GLIBC_LIBM(logf) PYROI_GLIBC_LIBM(log2) PYROI_GLIBC_LIBM(log2f)
PYROI_GLIBC_LIBM(log10) PYROI_GLIBC_LIBM(log10f)
#  undef PYROI_GLIBC_LIBM
#endif
