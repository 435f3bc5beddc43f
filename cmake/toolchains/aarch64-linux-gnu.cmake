# ARM64 Linux (Debian: gcc-aarch64-linux-gnu, qemu-user-static).
set(PYROI_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(PYROI_CROSS_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/debian-linux-cross.cmake)
