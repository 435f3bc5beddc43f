#!/usr/bin/env bash
# Consumer tests of the installed pyroi C library: programs that know pyroi only through
# its installed header, CMake package and pkg-config file.
#
#   tests/consumer/run.sh [LIBRARY_BUILD_DIR]
#
# 1. Installs the library (shared + static; from LIBRARY_BUILD_DIR when given, else from a
#    fresh Release build) into a temporary prefix and MOVES the prefix, so that everything
#    below also proves the CMake package and pyroi.pc relocatable.
# 2. find_package(pyroi): tests/consumer/ built against pyroi::pyroi (shared) and
#    pyroi::pyroi_static, plus examples/roi_align.c; run under ctest.
# 3. pkg-config: cc $(pkg-config --cflags --libs pyroi) consumer.c, run.
# 4. ctypes: examples/ctypes_roi_align.py on the installed libpyroi.so.
# 5. A static-only install (PYROI_BUILD_SHARED=OFF): find_package gives pyroi::pyroi as the
#    static library, and plain `pkg-config --libs` links it with its dependencies.
# 6. pyroi.h compiles as C++ (extern "C").
# (Step 1 also checks that the license is installed, in share/doc/pyroi.)
# Needs cmake, a C compiler, pkg-config (or pkgconf) and python3 (for the ctypes example).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
library_build=${1:-}
python=${PYTHON:-python3}
cc=${CC:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
generator=()
if command -v ninja > /dev/null; then
  generator=(-G Ninja)
fi
warnings=(-std=c99 -Wall -Wextra -Werror -pedantic)

step() { echo "-- consumer: $*"; }

# expect_link shared|static EXECUTABLE: does it load libpyroi.so at run time, or not?
expect_link() {
  if ! command -v readelf > /dev/null; then
    return 0  # no binutils: the runs below still test the program
  fi
  local needed=no
  if readelf -d "$2" | grep -q 'NEEDED.*libpyroi\.so'; then
    needed=yes
  fi
  if [[ ($1 == shared && $needed == no) || ($1 == static && $needed == yes) ]]; then
    echo "$2: expected a $1 link to pyroi (NEEDED libpyroi.so: $needed)" >&2
    exit 1
  fi
}

install_library() {  # install_library BUILD_DIR PREFIX [cmake options...]
  local build=$1 prefix=$2
  shift 2
  if [[ ! -f "$build/CMakeCache.txt" ]]; then
    cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DPYROI_BUILD_TESTS=OFF "$@" > /dev/null
    cmake --build "$build" > /dev/null
  fi
  cmake --install "$build" --prefix "$prefix" > /dev/null
}

build_consumer() {  # build_consumer PREFIX BUILD_DIR
  cmake -S "$root/tests/consumer" -B "$2" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$1" > "$2.log" || { cat "$2.log"; return 1; }
  grep -- "-- pyroi " "$2.log"
  cmake --build "$2" > /dev/null
  ctest --test-dir "$2" --output-on-failure
}

step "install the shared + static library, then move the prefix"
install_library "${library_build:-$work/build-lib}" "$work/staging"
mv "$work/staging" "$work/prefix"
prefix=$work/prefix
test -f "$prefix/share/doc/pyroi/LICENSE" || { echo "LICENSE not installed" >&2; exit 1; }

step "find_package(pyroi): pyroi::pyroi, pyroi::pyroi_static, examples/roi_align.c"
build_consumer "$prefix" "$work/consumer"
expect_link shared "$work/consumer/consumer"
expect_link static "$work/consumer/consumer_static"
"$work/consumer/roi_align_example" | tee "$work/example.txt"
grep -q "box 0 (1, 1, 3, 3): 11 12 / 21 22" "$work/example.txt"

step "pkg-config: cc \$(pkg-config --cflags --libs pyroi)"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pkg-config --exists --print-errors "pyroi >= 0.1"
echo "pyroi $(pkg-config --modversion pyroi): $(pkg-config --cflags --libs pyroi)"
libdir=$(pkg-config --variable=libdir pyroi)
# shellcheck disable=SC2046
"$cc" "${warnings[@]}" "$root/tests/consumer/consumer.c" -o "$work/consumer_pc" \
  $(pkg-config --cflags --libs pyroi) -Wl,-rpath,"$libdir"
expect_link shared "$work/consumer_pc"
"$work/consumer_pc"

step "ctypes: examples/ctypes_roi_align.py"
"$python" "$root/examples/ctypes_roi_align.py" "$libdir/libpyroi.so"

step "static-only install: pyroi::pyroi is the static library; pkg-config links it alone"
install_library "$work/build-static" "$work/static-staging" -DPYROI_BUILD_SHARED=OFF
mv "$work/static-staging" "$work/static"
if compgen -G "$work/static/lib*/libpyroi.so*" > /dev/null; then
  echo "a shared library was installed with PYROI_BUILD_SHARED=OFF" >&2
  exit 1
fi
build_consumer "$work/static" "$work/consumer-static-only"
expect_link static "$work/consumer-static-only/consumer"
export PKG_CONFIG_PATH="$work/static/lib/pkgconfig"
echo "pyroi $(pkg-config --modversion pyroi): $(pkg-config --cflags --libs pyroi)"
# shellcheck disable=SC2046
"$cc" "${warnings[@]}" "$root/tests/consumer/consumer.c" -o "$work/consumer_pc_static" \
  $(pkg-config --cflags --libs pyroi)
expect_link static "$work/consumer_pc_static"
"$work/consumer_pc_static"

if command -v c++ > /dev/null; then
  step "pyroi.h as C++"
  echo '#include <pyroi.h>
int main() { pyroi_roi_align_params p; pyroi_roi_align_params_init(&p);
             return pyroi_version_number() == PYROI_VERSION_NUMBER ? 0 : 1; }' \
    > "$work/cxx.cpp"
  c++ -Wall -Wextra -Werror -pedantic "$work/cxx.cpp" -o "$work/cxx" -I"$prefix/include" \
    -L"$prefix/lib" -lpyroi -Wl,-rpath,"$prefix/lib"
  "$work/cxx"
fi

step "all consumer tests passed"
