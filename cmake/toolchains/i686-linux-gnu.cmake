# 32-bit x86 Linux (Debian: gcc-i686-linux-gnu, qemu-user-static): size_t and pointers of
# 32 bits. The tests run under qemu-i386 with the cross sysroot (-L), which works on any
# host; an x86-64 kernel could run them natively, but only where it has IA-32 emulation
# and the i386 loader is installed at /lib/ld-linux.so.2.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR i686)
set(CMAKE_C_COMPILER i686-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/i686-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-i386-static -L /usr/i686-linux-gnu)
