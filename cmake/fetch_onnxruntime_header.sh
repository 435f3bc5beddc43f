#!/usr/bin/env bash
# Fetches ONNX Runtime's C API header, onnxruntime_c_api.h, for building pyroi's custom-op
# library (src/onnxruntime/): it is not in onnxruntime's wheel. Debian 13 ("trixie") packages
# it as libonnxruntime-dev (ONNX Runtime 1.21, C API version 21). The package is fetched by
# name with apt-get from the machine's own Debian mirror, in a private apt directory (the
# machine's apt state is not touched), and only the header is kept.
#
#   cmake/fetch_onnxruntime_header.sh OUT_DIR     ->  OUT_DIR/onnxruntime_c_api.h
#
# Needs apt-get and dpkg-deb (any Debian or Ubuntu machine that reaches a Debian mirror).
set -euo pipefail
out=$1
mkdir -p "$out"
if [[ -s $out/onnxruntime_c_api.h ]]; then
  exit 0
fi
command -v apt-get > /dev/null && command -v dpkg-deb > /dev/null || {
  echo "fetch_onnxruntime_header: needs apt-get and dpkg-deb" >&2
  exit 1
}
# The machine's Debian mirror: the first URI of a main (not security) source.
mirror=$(
  { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources || true
    grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list || true
  } | awk '{print $2}' | grep -v security | grep '/debian/\?$' | head -1 || true
)
if [[ -z $mirror ]]; then
  echo "fetch_onnxruntime_header: no Debian mirror in this machine's apt sources" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/sources"
cat > "$work/sources/trixie.sources" << SOURCES
Types: deb
URIs: $mirror
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
apt_options=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$work/sources"
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
  -o "Dir::State::status=/dev/null" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
apt-get "${apt_options[@]}" -qq update
(cd "$work" && apt-get "${apt_options[@]}" -qq download libonnxruntime-dev)
dpkg-deb -x "$work"/libonnxruntime-dev_*.deb "$work/unpacked"
header=$(find "$work/unpacked" -name onnxruntime_c_api.h | head -1)
version=$(sed -n 's/^#define ORT_API_VERSION \([0-9]*\).*/\1/p' "$header")
if [[ -z $version || $version -lt 21 ]]; then
  echo "fetch_onnxruntime_header: the header's C API version is '$version', 21 is needed" >&2
  exit 1
fi
cp "$header" "$out/onnxruntime_c_api.h"
echo "fetch_onnxruntime_header: onnxruntime_c_api.h (C API $version) -> $out"
