# IBM Z Linux, big-endian (Debian: gcc-s390x-linux-gnu, qemu-user-static).
set(PYROI_CROSS_TRIPLE s390x-linux-gnu)
set(CMAKE_SYSTEM_PROCESSOR s390x)
set(PYROI_CROSS_QEMU qemu-s390x)
include(${CMAKE_CURRENT_LIST_DIR}/debian-linux-cross.cmake)
