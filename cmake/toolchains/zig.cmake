# zig cc as a cross compiler for Linux with an old glibc: the target comes from the
# environment, PYROI_ZIG_TARGET (e.g. x86_64-linux-gnu.2.17 or aarch64-linux-gnu.2.17, the
# glibc of manylinux2014), and PYROI_ZIG is the zig executable (the ziglang PyPI package).
# Used for the wheels by wheels/build_manylinux2014.sh; the environment reaches CMake's
# try_compile projects too, unlike cache variables.
if(NOT DEFINED ENV{PYROI_ZIG_TARGET} OR NOT DEFINED ENV{PYROI_ZIG})
  message(FATAL_ERROR "set PYROI_ZIG (zig executable) and PYROI_ZIG_TARGET (e.g. x86_64-linux-gnu.2.17)")
endif()
string(REGEX MATCH "^[^-]+" _pyroi_zig_arch "$ENV{PYROI_ZIG_TARGET}")
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${_pyroi_zig_arch})
set(_pyroi_zig_bin ${CMAKE_CURRENT_LIST_DIR}/../../wheels/zig)
set(CMAKE_C_COMPILER ${_pyroi_zig_bin}/cc)
set(CMAKE_AR ${_pyroi_zig_bin}/ar CACHE FILEPATH "zig ar")
set(CMAKE_RANLIB ${_pyroi_zig_bin}/ranlib CACHE FILEPATH "zig ranlib")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
