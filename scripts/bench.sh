#!/usr/bin/env bash
# Builds Release, runs every benchmark in bench/ and rewrites
# docs/BENCHMARKS.md with their tables and a description of the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
dqg_install_missing
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"

out=docs/BENCHMARKS.md
tmp=$(mktemp)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
isa=$(ONEDNN_VERBOSE=1 ./build/bench_runtime 2>/dev/null | grep -m1 -o 'cpu,runtime:[^,]*,nthr:[0-9]*' || true)
isa_line=$(ONEDNN_VERBOSE=1 ./build/bench_runtime 2>/dev/null | grep -m1 'info,cpu,isa' | cut -d, -f4- || true)
dnnl=$(dpkg-query -W -f='${Version}' libdnnl2 2>/dev/null || echo unknown)
{
  echo "# Benchmarks"
  echo
  echo "Written by \`./scripts/bench.sh\` on $(date -u +%Y-%m-%d). Every figure is a median over"
  echo "repeated runs, with the min-max spread in parentheses; every ratio comes from one run."
  echo
  echo "| machine | |"
  echo "|---|---|"
  echo "| CPU | $cpu |"
  echo "| cores | $(nproc) |"
  echo "| ISA oneDNN dispatches to | ${isa_line:-unknown} |"
  echo "| oneDNN | $dnnl (${isa:-}) |"
  echo "| dqgraph | $(grep -m1 DQG_VERSION_STRING include/dqgraph.h | cut -d'"' -f2) |"
  echo
  for b in build/bench_*; do
    [ -x "$b" ] || continue
    echo "## $(basename "$b")"
    echo
    "$b"
    echo
  done
} > "$tmp"
mv "$tmp" "$out"
cat "$out"
