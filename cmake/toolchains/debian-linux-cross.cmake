# Shared part of the Debian cross toolchains for Linux: the including file sets
# PYROI_CROSS_TRIPLE (GNU triple of the gcc-TRIPLE package and its sysroot /usr/TRIPLE),
# CMAKE_SYSTEM_PROCESSOR and PYROI_CROSS_QEMU (the qemu-user binary name, without -static).
# The C tests run under qemu; -L points it at the sysroot's dynamic loader, and
# LD_LIBRARY_PATH at its libc: -L alone falls back to the host's /etc/ld.so.cache, which
# names the host's own libraries of that architecture when some are installed (Debian's
# libc6-i386, which clang's libclang-rt-dev pulls in; libc6:arm64 of multiarch), and that libc
# of another build beside the sysroot's loader hangs in pthread_create under qemu.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${PYROI_CROSS_TRIPLE}-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/${PYROI_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR ${PYROI_CROSS_QEMU}-static -L /usr/${PYROI_CROSS_TRIPLE}
    -E LD_LIBRARY_PATH=/usr/${PYROI_CROSS_TRIPLE}/lib)
