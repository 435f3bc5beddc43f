#!/usr/bin/env bash
# Cross-compiles the C library and its ctest programs for one target and runs them under
# emulation (CMAKE_CROSSCOMPILING_EMULATOR of the toolchain file: qemu-user or wine64).
#
#   cmake/toolchains/run_tests.sh TARGET BUILD_DIR [EXCLUDE_REGEX]
#
# TARGET: aarch64-linux-gnu | s390x-linux-gnu | i686-linux-gnu | x86_64-w64-mingw32 (the
# toolchain file cmake/toolchains/TARGET.cmake). EXCLUDE_REGEX leaves ctest programs out
# (ctest -E); default: all of them run. Prints the target, the compiler and the ctest summary.
# For x86_64-w64-mingw32 it also checks the DLL's export table against pyroi.h (PYROI_API)
# and builds and runs tests/consumer against the installed DLL and static library.
# Needs the Debian packages listed in docs/portability.md; .ci/run installs them.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
target=$1
build=$2
exclude=${3:-}
toolchain=$root/cmake/toolchains/$target.cmake
[[ -f $toolchain ]] || { echo "no toolchain file $toolchain" >&2; exit 1; }
options=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE="$toolchain")
windows=0
if [[ $target == *mingw32 ]]; then
  windows=1
  export WINEDEBUG=-all WINEPREFIX=${WINEPREFIX:-$build/wineprefix}
else
  options+=(-DPYROI_BUILD_SHARED=OFF)  # the tests link the static library
fi

cmake -S "$root" -B "$build" -G Ninja "${options[@]}" > "$build.configure.log" ||
  { cat "$build.configure.log"; exit 1; }
compiler=$(sed -n 's/^set(CMAKE_C_COMPILER "\(.*\)")$/\1/p' "$build"/CMakeFiles/*/CMakeCCompiler.cmake)
# the emulator as ctest will call it: the add_test command line without the program
emulator=$(grep -m1 '^add_test' "$build/tests/c/CTestTestfile.cmake" |
  sed -E 's/^add_test\("[a-z_]+" //; s/ "[^"]*"\).*$//; s/"//g')
echo "== target $target: $("$compiler" --version | head -1); emulator: $emulator"
cmake --build "$build" > "$build.build.log" || { tail -40 "$build.build.log"; exit 1; }
if ((windows)); then
  "$(sed -n 's/^PYROI_WINE:FILEPATH=//p' "$build/CMakeCache.txt")" wineboot --init > /dev/null 2>&1
fi
if ((!windows)); then
  # The guest's shared libraries come from the sysroot, never from the host's own libraries
  # of the target's architecture (a libc of another build beside the sysroot's loader hangs in
  # pthread_create under qemu: cmake/toolchains/debian-linux-cross.cmake).
  # shellcheck disable=SC2086  # the emulator command is words
  libraries=$($emulator -E LD_TRACE_LOADED_OBJECTS=1 "$build/tests/c/test_explain" |
    sed -n 's/^[[:space:]]*[^ ]* => \([^ ]*\) .*/\1/p')
  echo "$target: shared libraries $(echo $libraries)"
  if [[ -z $libraries ]] || grep -v "^/usr/$target/" <<< "$libraries"; then
    echo "$target: the tests would load the host's libraries above, not /usr/$target's" >&2
    exit 1
  fi
fi
ctest_args=(--test-dir "$build" --output-on-failure -j2 --timeout 900)
[[ -n $exclude ]] && ctest_args+=(-E "$exclude")
ctest "${ctest_args[@]}" | tee "$build.ctest.log" | grep -E '(Passed|Failed|Not Run|Timeout)' || true
summary=$(grep -E 'tests passed' "$build.ctest.log" || echo "ctest did not finish")
echo "$target: $summary"
if [[ $summary != "100% tests passed"* ]]; then
  # What the failed programs printed, then one more run of just those: a program that fails
  # again fails the target; one that passes the second time is named here as flaky (the
  # emulators have failed to start a program under load: qemu's and wine's own faults).
  sed -n '/^[0-9]*\/[0-9]* Test *#[0-9]*: .*\*\*\*/,/^[0-9]*\/[0-9]* Test /p' "$build.ctest.log"
  ctest --test-dir "$build" --output-on-failure --timeout 900 --rerun-failed |
    tee "$build.rerun.log" | grep -E '(Passed|Failed|Not Run|Timeout)' || true
  rerun=$(grep -E 'tests passed' "$build.rerun.log" || echo "ctest did not finish")
  [[ $rerun == "100% tests passed"* ]] || { echo "$target: failed again: $rerun"; exit 1; }
  echo "$target: FLAKY: the programs above failed once and passed when run again"
fi

if ((windows)); then
  objdump=x86_64-w64-mingw32-objdump
  prefix=$build/prefix
  cmake --install "$build" --prefix "$prefix" > /dev/null
  # Export macros: the DLL exports exactly the functions pyroi.h declares with PYROI_API.
  "$objdump" -p "$prefix/bin/libpyroi.dll" |
    sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | sed -n 's/^[[:space:]]*\[ *[0-9]*\] //p' | sort > "$build/exports.txt"
  tr '\n' ' ' < "$root/src/c/include/pyroi.h" |
    grep -oE 'PYROI_API [^;{]*[^A-Za-z0-9_]pyroi_[a-z0-9_]+ *\(' |
    sed -E 's/.*(pyroi_[a-z0-9_]+) *\($/\1/' | sort -u > "$build/declared.txt"
  if ! diff "$build/declared.txt" "$build/exports.txt"; then
    echo "libpyroi.dll exports differ from pyroi.h's PYROI_API functions (< header, > DLL)" >&2
    exit 1
  fi
  echo "$target: libpyroi.dll exports the $(wc -l < "$build/exports.txt") PYROI_API functions, nothing else;" \
    "imports: $("$objdump" -p "$prefix/bin/libpyroi.dll" | sed -n 's/.*DLL Name: //p' | tr '\n' ' ')"
  # A consumer through find_package(pyroi): the DLL via its import library (dllimport),
  # the static library (PYROI_STATIC) and examples/roi_align.c, run under wine64.
  cmake -S "$root/tests/consumer" -B "$build/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_PREFIX_PATH="$prefix" > "$build/consumer.log" ||
    { cat "$build/consumer.log"; exit 1; }
  cmake --build "$build/consumer" > /dev/null
  # grep reads all of objdump's output (grep -q would end the pipe early: SIGPIPE under pipefail)
  if ! "$objdump" -p "$build/consumer/consumer.exe" | grep 'DLL Name: libpyroi.dll' > /dev/null; then
    echo "consumer.exe does not import libpyroi.dll" >&2
    exit 1
  fi
  WINEPATH="$prefix/bin" ctest --test-dir "$build/consumer" --output-on-failure |
    tee "$build/consumer.ctest.log" | grep -E '(Passed|Failed|Not Run)' || true
  summary=$(grep -E 'tests passed' "$build/consumer.ctest.log" || echo "ctest did not finish")
  echo "$target consumer of the DLL: $summary"
  [[ $summary == "100% tests passed"* ]] || exit 1
fi
