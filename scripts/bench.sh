#!/usr/bin/env bash
# Builds Release, runs every benchmark in bench/ and rewrites
# docs/BENCHMARKS.md with their tables and a description of the machine
# (DQG_BENCH_ORT=1 adds the comparison with ONNX Runtime).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
dqg_install_missing gnuplot-nox # the fused-vs-unfused chart
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"

out=docs/BENCHMARKS.md
tmp=$(mktemp)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
# The instruction sets that decide dqgraph's and oneDNN's kernels, as the
# kernel reports them (AMX and VNNI change the int8 figures most).
flags=$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2- | tr ' ' '\n' |
  grep -xE 'avx2|fma|f16c|avx512f|avx512bw|avx512vl|avx512dq|avx512_vnni|avx512_bf16|avx512_fp16|avx_vnni|amx_tile|amx_int8|amx_bf16' |
  tr '\n' ' ' | sed 's/ $//')
sockets=$(grep '^physical id' /proc/cpuinfo | sort -u | wc -l)
mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
date=$(date -u +%Y-%m-%d)
isa=$(ONEDNN_VERBOSE=1 ./build/bench_runtime 2>/dev/null | grep -m1 -o 'cpu,runtime:[^,]*,nthr:[0-9]*' || true)
isa_line=$(ONEDNN_VERBOSE=1 ./build/bench_runtime 2>/dev/null | grep -m1 'info,cpu,isa' | cut -d, -f4- || true)
dnnl=$(dpkg-query -W -f='${Version}' libdnnl2 2>/dev/null || echo unknown)
{
  echo "# Benchmarks"
  echo
  echo "Written by \`./scripts/bench.sh\` on $date, on the machine below; every figure on this"
  echo "page comes from that machine and that run. Every figure is a median over repeated runs,"
  echo "with the min-max spread in parentheses; every ratio comes from one run. On another CPU"
  echo "the figures differ, most of all the int8 ones (VNNI, AMX): run the script there."
  echo
  echo "| machine | |"
  echo "|---|---|"
  echo "| CPU | $cpu |"
  echo "| cores | $(nproc) online (${sockets:-?} socket(s)), $mem memory |"
  echo "| ISA flags | ${flags:-none of the ones dqgraph uses} |"
  echo "| ISA oneDNN dispatches to | ${isa_line:-unknown} |"
  echo "| oneDNN | $dnnl (${isa:-}) |"
  echo "| dqgraph | $(grep -m1 DQG_VERSION_STRING include/dqgraph.h | cut -d'"' -f2) ($(git rev-parse --short HEAD 2>/dev/null || echo unknown)) |"
  echo "| date | $date |"
  echo
  for b in build/bench_*; do
    [ -x "$b" ] || continue
    echo "## $(basename "$b")"
    echo
    "$b"
    echo
  done
  # The demo (./scripts/demo.sh): fused against unfused on the int8 MLP.
  echo "## quickstart (the demo's int8 MLP, batch 256, 1024 -> 4096 -> 4096 -> 1024)"
  echo
  ./build/quickstart | sed -n '/^| | |$/,/^| speedup/p'
  echo
  # The CLI on the sample QDQ model (samples/onnx_model.c writes it).
  model_dir=$(mktemp -d)
  ./build/onnx_model "$model_dir" >/dev/null
  echo "## dqgraph bench (samples/onnx_model's QDQ MLP, ONNX file through the CLI)"
  echo
  echo "| mode | compile (ms) | recompile, cache hit (ms) | median (ms) | min (ms) | partitions | fused |"
  echo "|---|---|---|---|---|---|---|"
  for mode in fused unfused; do
    flag=()
    if [ "$mode" = unfused ]; then flag=(--no-fuse); fi
    ./build/dqgraph bench "$model_dir/qdq_mlp.onnx" --iters 200 --warmup 20 "${flag[@]}" |
      awk -v m="$mode" -F': *' '{v[$1]=$2} END {printf "| %s | %s | %s | %s | %s | %s | %s |\n", m,
        v["compile_ms"], v["recompile_ms"], v["median_ms"], v["min_ms"], v["partitions"], v["fused"]}'
  done
  rm -rf "$model_dir"
  echo
  # With DQG_BENCH_ORT=1: dqgraph against ONNX Runtime 1.30 on the benchmark
  # models (scripts/bench_ort.sh, which installs ONNX Runtime from npm and
  # checks agreement with its outputs); DQG_BENCH_FILTER selects models.
  if [ "${DQG_BENCH_ORT:-0}" = 1 ]; then
    ort_table=$(mktemp)
    echo "## dqgraph against ONNX Runtime (scripts/bench_ort.sh)"
    echo
    DQG_BENCH_OUT="$ort_table" ./scripts/bench_ort.sh >/dev/null || echo "(bench_ort.sh: an agreement check failed; see below)"
    cat "$ort_table"
    rm -f "$ort_table"
    echo
  fi
} > "$tmp"
mv "$tmp" "$out"
chmod 644 "$out"

# Chart: fused, unfused and raw oneDNN latency per case (medians, log scale).
data=$(mktemp)
awk -F'|' '/^## bench_fusion/{on=1} /^## bench_runtime/{on=0}
  on && /^\| (MatMul|Conv)/ {
    gsub(/^ +| +$/, "", $2); split($3, f, " "); split($4, u, " "); split($5, r, " ");
    printf "\"%s\" %s %s %s\n", $2, f[1], u[1], r[1] }' "$out" > "$data"
gnuplot <<GP
set terminal png size 1000,520 font ",10"
set output "docs/fusion.png"
set title "DQ -> MatMul / Convolution: fused vs unfused vs raw oneDNN int8 (median ms, log scale)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set ylabel "milliseconds"
set grid ytics
set key top left
set xtics rotate by -15
plot "$data" using 2:xtic(1) title "fused (dqgraph)", '' using 3 title "unfused (dqgraph, fusion off)", '' using 4 title "raw oneDNN int8"
GP
rm -f "$data"
cat "$out"
echo "chart: docs/fusion.png"
