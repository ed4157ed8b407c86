#!/usr/bin/env bash
# Installs the Debian packages dqgraph needs, and only those that are missing.
# Sourced by test.sh, demo.sh and bench.sh.
set -euo pipefail

DQG_PACKAGES=(
  cmake gcc g++ make pkg-config
  libdnnl-dev      # oneDNN 2.6: int8/f32 primitives and reorders
  ocl-icd-opencl-dev # oneDNN's CMake package looks for OpenCL even for CPU use
  libxxhash-dev    # XXH3-128 keys of the compiled-partition cache
  libcriterion-dev # the unit-test framework
  libprotobuf-c-dev protobuf-c-compiler # ONNX model and TensorProto decoding
  libonnx-dev      # ships onnx.proto, compiled by protobuf-c at configure time
  libonnx-testdata # ONNX backend node tests, registered as conformance tests
  clang-format     # the suite checks every C file against .clang-format
  python3-numpy python3-pytest # the Python binding (python/) and its tests
  python3-pip      # pip install ./python (offline: the package builds itself)
)

dqg_install_missing() {
  local missing=()
  for p in "${DQG_PACKAGES[@]}" "$@"; do
    if ! dpkg -s "$p" >/dev/null 2>&1; then
      missing+=("$p")
    fi
  done
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}
