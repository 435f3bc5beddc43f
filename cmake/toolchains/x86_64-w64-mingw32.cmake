# 64-bit Windows (Debian: gcc-mingw-w64-x86-64, wine64). The C tests run under wine64;
# a program finds the DLL through WINEPATH (the caller sets it).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR AMD64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# Debian's wine64 package puts the loader in /usr/lib/wine (the wrapper /usr/bin/wine comes
# with the separate "wine" package).
find_program(PYROI_WINE NAMES wine64 wine PATHS /usr/lib/wine NO_CMAKE_FIND_ROOT_PATH)
if(NOT PYROI_WINE)
  message(FATAL_ERROR "wine64 not found (Debian: apt-get install wine64)")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${PYROI_WINE})
