#!/usr/bin/env bash
# Runs the benchmark models on dqgraph and on ONNX Runtime 1.30 side by side
# and prints their medians and ratios. ONNX Runtime is the peer, never a
# dependency: it is installed from npm into build/ort for this script only.
# Each model runs ROUNDS times on each engine, alternating, and the median
# of the rounds' medians is reported; each ratio is the median of the
# rounds' own ratios (the two engines timed back to back). Options (environment):
#   DQG_BENCH_FILTER=regex  models to run (default: all)
#   DQG_BENCH_ROUNDS=N      alternating rounds (default 3)
#   DQG_BENCH_ITERS=N       timed iterations per round (default 50)
#   DQG_BENCH_THREADS=N     threads for both engines (default 2)
#   DQG_BENCH_OUT=FILE      also write the markdown table there
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
# Node.js and npm: the machine's own when present, else Debian's.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  dqg_install_missing nodejs npm
fi

rounds="${DQG_BENCH_ROUNDS:-3}"
iters="${DQG_BENCH_ITERS:-50}"
threads="${DQG_BENCH_THREADS:-2}"
filter="${DQG_BENCH_FILTER:-.}"
ort_dir="$PWD/build/ort"

if [ ! -d "$ort_dir/node_modules/onnxruntime-node" ]; then
  mkdir -p "$ort_dir"
  (cd "$ort_dir" && npm install --silent --no-audit --no-fund --ignore-scripts \
    onnxruntime-node@1.30.0 >/dev/null)
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target dqgraph_tool gen_models bench_bert_layer >/dev/null
models="$PWD/build/models"
mkdir -p "$models"
./build/gen_models "$models" >/dev/null

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# The median over rounds of ORT's time / dqgraph's in the same round: a load
# change between rounds moves both engines' times and cancels in each pair.
paired() { paste -d' ' <(printf '%s\n' $1) <(printf '%s\n' $2) | awk '{print $1 / $2}' | median; }
dqg_ms() {
  ./build/dqgraph bench "$1" --iters "$iters" --threads "$threads" "${@:2}" |
    awk '/^median_ms:/ {print $2}'
}
ort_ms() {
  DQG_ORT_DIR="$ort_dir" node bench/ort_bench.js "$1" --iters "$iters" --threads "$threads" "${@:2}" |
    sed 's/.*"median_ms":\([0-9.e-]*\).*/\1/'
}

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
isa=$(grep -ow 'amx_int8\|avx512_vnni\|avx512_bf16\|avx512f\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')
table=$(mktemp)
{
  echo "Machine: $cpu, $(nproc) cores ($isa); $threads threads; $(date -u +%Y-%m-%d)."
  echo "Medians of $rounds alternating rounds of $iters runs; ONNX Runtime 1.30 (onnxruntime-node), all graph optimizations."
  echo "Each ratio is the median over the rounds of ORT's time over dqgraph's in the same round."
  echo
  echo "| model | dqgraph | ONNX Runtime | ORT / dqgraph |"
  echo "|---|---|---|---|"
} >"$table"
for f in "$models"/*.onnx; do
  name=$(basename "$f" .onnx)
  [[ "$name" =~ $filter ]] || continue
  # Weight-only models: ORT's MatMulNBits runs int8 activations by default
  # (accuracy level 4); level 0 keeps them f32 like dqgraph's exact mode.
  variants=("")
  [[ "$name" == wo_* ]] && variants=("" "--accuracy-level 0")
  # The Llama layer at sequence 32 and the weight-only layers of 64 rows and
  # more also run with fpmath = bf16 (dqgraph's opt-in mode), against ONNX
  # Runtime's default.
  bf16=0
  [[ "$name" == *llama_layer_s32* || "$name" =~ ^wo_.*_(64|128|512)x ]] && bf16=1
  # Weight-only layers of integer weights also run with fpmath = int8
  # (dqgraph's opt-in approximate mode, int8 activations as ORT's default).
  int8=0
  [[ "$name" == wo_int* ]] && int8=1
  # The BERT layer also runs as its raw oneDNN primitives (bench_bert_layer):
  # the floor of an engine built on them, against the same ORT rounds.
  raw=0
  [[ "$name" == bert_layer_128x768 ]] && raw=1
  d=() o=() db=() di=() dr=()
  for ((r = 0; r < rounds; r++)); do
    d+=("$(dqg_ms "$f")")
    [ "$bf16" = 1 ] && db+=("$(dqg_ms "$f" --fpmath bf16)")
    [ "$int8" = 1 ] && di+=("$(dqg_ms "$f" --fpmath int8)")
    [ "$raw" = 1 ] && dr+=("$(OMP_NUM_THREADS="$threads" ./build/bench_bert_layer --raw-only \
      --iters "$iters" | awk '/^median_ms:/ {print $2}')")
    for v in "${!variants[@]}"; do
      # shellcheck disable=SC2086 # the variant is a list of options
      o[v]+="$(ort_ms "$f" ${variants[v]}) "
    done
  done
  dm=$(printf '%s\n' "${d[@]}" | median)
  if [ "$bf16" = 1 ]; then
    dbm=$(printf '%s\n' "${db[@]}" | median)
    om=$(printf '%s\n' ${o[0]} | median)
    printf '| %s (dqgraph --fpmath bf16) | %.3f ms | %.3f ms | %.2fx |\n' "$name" "$dbm" "$om" \
      "$(paired "${o[0]}" "${db[*]}")" >>"$table"
  fi
  if [ "$int8" = 1 ]; then
    dim=$(printf '%s\n' "${di[@]}" | median)
    om=$(printf '%s\n' ${o[0]} | median)
    printf '| %s (dqgraph --fpmath int8) | %.3f ms | %.3f ms | %.2fx |\n' "$name" "$dim" "$om" \
      "$(paired "${o[0]}" "${di[*]}")" >>"$table"
  fi
  if [ "$raw" = 1 ]; then
    drm=$(printf '%s\n' "${dr[@]}" | median)
    om=$(printf '%s\n' ${o[0]} | median)
    printf '| %s: the same layer as raw oneDNN primitives, without its activation quantizations | %.3f ms | %.3f ms | %.2fx |\n' \
      "$name" "$drm" "$om" "$(paired "${o[0]}" "${dr[*]}")" >>"$table"
  fi
  for v in "${!variants[@]}"; do
    om=$(printf '%s\n' ${o[v]} | median)
    label="$name"
    [ -n "${variants[v]}" ] && label="$name (ORT f32 activations)"
    printf '| %s | %.3f ms | %.3f ms | %.2fx |\n' "$label" "$dm" "$om" \
      "$(paired "${o[v]}" "${d[*]}")" >>"$table"
  done
done
# Agreement: models written with a tolerance (NAME.atol: one quantization
# step of every activation, or for the CNNs a tenth of the logits'
# magnitude) are run once on ONNX Runtime with its graph optimizations
# off (the QDQ graph as written: dequantize, float op, quantize), whose
# outputs become a backend-test case that dqgraph must reproduce within
# it; for the CNNs also the logits' cosine similarity (at least 0.99) and
# the same top-1 class.
# Every value of a TensorProto file, one per line.
logit_values() {
  ./build/dqgraph tensor "$1" --all | sed -n '/^values/,$p' | tail -n +2 |
    sed 's/^ *\[[0-9]*\] //' | tr ' ' '\n' | awk 'NF'
}
checked=0
for tol in "$models"/*.atol; do
  [ -e "$tol" ] || continue
  name=$(basename "$tol" .atol)
  [[ "$name" =~ $filter ]] || continue
  if [ "$checked" = 0 ]; then
    printf '\nAgreement with ONNX Runtime, graph optimizations off (same inputs; |dqgraph - ORT| <= atol: one quantization step of the activations for the projections, a tenth of the logits'"'"' calibrated magnitude for the CNNs, whose logits must also have a cosine similarity of at least 0.99 and the same top-1 class, a tie at the top counting as either):\n\n' >>"$table"
    checked=1
  fi
  case_dir="$models/$name.case"
  rm -rf "$case_dir"
  DQG_ORT_DIR="$ort_dir" node bench/ort_bench.js "$models/$name.onnx" --threads "$threads" \
    --no-opt --case "$case_dir"
  atol=$(cat "$tol")
  logits=""
  if [[ "$name" == *_cnn_* ]]; then
    out_dir=$(mktemp -d)
    ort_out="$case_dir/test_data_set_0/output_0.pb"
    ./build/dqgraph run "$models/$name.onnx" -i "$case_dir/test_data_set_0" -o "$out_dir" >/dev/null
    cosine=$(./build/dqgraph compare "$out_dir/output_0.pb" "$ort_out" --atol "$atol" |
      awk '/^cosine:/ {print $2}')
    # Top-1: the class one engine ranks first is among those the other
    # ranks first (quantized logits tie: equal values share the rank).
    top=$(paste <(logit_values "$out_dir/output_0.pb") <(logit_values "$ort_out") | awk '
      NR == 1 || $1 > m1 { m1 = $1; a1 = NR - 1 }
      NR == 1 || $2 > m2 { m2 = $2; a2 = NR - 1 }
      { v1[NR - 1] = $1; v2[NR - 1] = $2 }
      END { print a1, a2, (v1[a2] == m1 || v2[a1] == m2) ? "same" : "differs" }')
    read -r top_dqg top_ort top_same <<<"$top"
    rm -rf "$out_dir"
    logits=", cosine $cosine, top-1 $top_dqg (ORT $top_ort)"
    [ "$top_dqg" = "$top_ort" ] || logits="$logits, tied in one engine"
    if ! awk -v c="$cosine" 'BEGIN {exit !(c >= 0.99)}' || [ "$top_same" != same ]; then
      logits="$logits: FAIL"
      agreement_failed=1
    fi
  fi
  if result=$(./build/dqgraph test "$case_dir" --rtol 0 --atol "$atol" 2>&1); then
    printf -- '- %s: PASS (atol %s%s)\n' "$name" "$atol" "$logits" >>"$table"
  else
    printf -- '- %s: FAIL (atol %s): %s\n' "$name" "$atol" "$(echo "$result" | head -3 | tr '\n' ' ')" >>"$table"
    agreement_failed=1
  fi
done
# Peak resident memory of one `dqgraph run` on the M=1 weight-only models,
# beside the size of the model file (weights at their stored width).
rss_dir=$(mktemp -d)
header=0
for f in "$models"/wo_*_1x4096x4096.onnx; do
  [ -e "$f" ] && [ -x /usr/bin/time ] || continue
  name=$(basename "$f" .onnx)
  [[ "$name" =~ $filter ]] || continue
  if [ "$header" = 0 ]; then
    printf '\nPeak resident memory of `dqgraph run MODEL --random` (GNU time, one execution):\n\n' >>"$table"
    header=1
  fi
  kb=$(/usr/bin/time -f %M ./build/dqgraph run "$f" --random -o "$rss_dir" 2>&1 >/dev/null | tail -1)
  printf -- '- %s: %.1f MB (model file %.1f MB)\n' "$name" "$(awk -v k="$kb" 'BEGIN {print k / 1024}')" \
    "$(awk -v b="$(stat -c %s "$f")" 'BEGIN {print b / 1048576}')" >>"$table"
done
rm -rf "$rss_dir"
cat "$table"
if [ -n "${DQG_BENCH_OUT:-}" ]; then
  cp "$table" "$DQG_BENCH_OUT"
fi
rm -f "$table"
exit "${agreement_failed:-0}"
