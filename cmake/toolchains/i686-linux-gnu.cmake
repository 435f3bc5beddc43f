# 32-bit x86 Linux (Debian: gcc-i686-linux-gnu, qemu-user-static): size_t and pointers of
# 32 bits. qemu-i386 runs the tests on any host; an x86-64 kernel could run them natively,
# but only with IA-32 emulation and the i386 loader installed at /lib/ld-linux.so.2.
set(PYROI_CROSS_TRIPLE i686-linux-gnu)
set(CMAKE_SYSTEM_PROCESSOR i686)
set(PYROI_CROSS_QEMU qemu-i386)
include(${CMAKE_CURRENT_LIST_DIR}/debian-linux-cross.cmake)
