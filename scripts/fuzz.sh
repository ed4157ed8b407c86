#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/fuzz_*.c) with Clang, ASan and UBSan in
# build-fuzz/, then runs each for DQG_FUZZ_SECONDS (default 30) seconds on a
# corpus under build-fuzz/corpus/<target>, seeded from fuzz/corpus/<target>
# and, for the ONNX targets, from the ONNX backend node tests
# (libonnx-testdata). Prints the executions per target; exits 1 if any target
# found a crash, a leak, UB, a timeout or an out-of-memory (the input is kept
# under build-fuzz/artifacts/<target>/), or if a reproducer saved under
# tests/corpus/fuzz/<target>-* (bugs found earlier) still fails.
#
#   DQG_FUZZ_SECONDS=60 scripts/fuzz.sh            # every target
#   DQG_FUZZ_TARGETS="fuzz_builder" scripts/fuzz.sh # some of them
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
source scripts/setup.sh
dqg_install_missing clang libclang-rt-14-dev libomp-14-dev

build=$root/build-fuzz
seconds=${DQG_FUZZ_SECONDS:-30}
jobs=${DQG_JOBS:-2}
testdata=/usr/share/libonnx-testdata/data/node

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DDQG_FUZZ=ON -DDQG_BUILD_TESTS=OFF \
  -DDQG_BUILD_SAMPLES=OFF -DDQG_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# Only the fuzz targets (and the library): the tool is not needed here.
cmake --build "$build" --target dqg_fuzz -j "$jobs"

# Seeds from the ONNX node tests that use operators dqgraph imports.
onnx_tests() {
  [ -d "$testdata" ] || return 0
  find "$testdata" -maxdepth 1 -type d -name 'test_*' |
    grep -Ei 'quant|matmul|conv|gemm|relu|clip|lstm|gru|rnn|reshape|transpose|cast_FLOAT|flatten|squeeze|_add|_mul|identity|constant|pool|softmax|layer_norm|rms_norm|batchnorm|lrn|expand|gather|slice|concat|split|where|equal|reduce_(mean|sum|max)|sigmoid|tanh|erf|gelu|pow|sqrt|_div|_sub|_neg|hardswish|hardsigmoid|reciprocal|dropout|_sum|shape|range' |
    grep -vi 'convtranspose\|expanded\|string\|double\|training\|_random' | sort | head -n 400
}

seed_corpus() { # target corpus_dir
  local target=$1 dir=$2 t pb
  mkdir -p "$dir"
  if [ -d "$root/fuzz/corpus/$target" ]; then
    find "$root/fuzz/corpus/$target" -maxdepth 1 -type f -exec cp -n {} "$dir/" \;
  fi
  case $target in
    fuzz_onnx_model)
      for t in $(onnx_tests); do
        if [ -f "$t/model.onnx" ]; then cp -n "$t/model.onnx" "$dir/$(basename "$t").onnx"; fi
      done
      ;;
    fuzz_tensor_proto)
      for t in $(onnx_tests | head -n 80); do
        for pb in "$t"/test_data_set_0/input_0.pb "$t"/test_data_set_0/output_0.pb; do
          if [ -f "$pb" ] && [ "$(stat -c %s "$pb")" -le 65536 ]; then
            cp -n "$pb" "$dir/$(basename "$t")_$(basename "$pb")"
          fi
        done
      done
      ;;
  esac
  return 0
}

targets=${DQG_FUZZ_TARGETS:-$(cd "$build" && ls fuzz_* 2>/dev/null | grep -v '\.' || true)}
if [ -z "$targets" ]; then
  echo "fuzz: no fuzz targets were built" >&2
  exit 1
fi
for t in $targets; do
  if [ ! -x "$build/$t" ]; then
    echo "fuzz: no target '$t' in $build (built: $(cd "$build" && ls fuzz_* 2>/dev/null | grep -v '\.' | tr '\n' ' '))" >&2
    exit 1
  fi
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
summary=()
for t in $targets; do
  corpus=$build/corpus/$t
  artifacts=$build/artifacts/$t
  log=$build/logs/$t.log
  mkdir -p "$artifacts" "$(dirname "$log")"
  seed_corpus "$t" "$corpus"
  # Replay the saved reproducers of bugs found earlier (tests/corpus/fuzz/
  # <target>-*): each one that still fails is reported.
  for repro in "$root"/tests/corpus/fuzz/"$t"-*; do
    [ -f "$repro" ] || continue
    if ! "$build/$t" "$repro" >"$build/logs/$t.replay.log" 2>&1; then
      failed+=("$t:$(basename "$repro")")
      summary+=("$(printf '%-20s reproducer still fails: %s' "$t" "$repro")")
    fi
  done
  extra=()
  if [ -f "$root/fuzz/$t.dict" ]; then extra+=("-dict=$root/fuzz/$t.dict"); fi
  echo "fuzz: $t for ${seconds}s ($(ls "$corpus" | wc -l) corpus files)"
  set +e
  "$build/$t" "$corpus" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${extra[@]}" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*' || true)
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    summary+=("$(printf '%-20s FAILED (exit %d) after %s executions; log %s' "$t" "$rc" "${execs:-?}" "$log")")
    echo "fuzz: $t FAILED; the end of its log:"
    tail -n 60 "$log" | sed 's/^/  | /'
    ls "$artifacts" | sed "s|^|  artifact: $artifacts/|"
  else
    summary+=("$(printf '%-20s ok: %s executions, coverage %s' "$t" "${execs:-?}" "${cov:-?}")")
  fi
done

echo
echo "fuzz summary (${seconds}s per target):"
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "fuzz: ${#failed[@]} problem(s): ${failed[*]}"
  exit 1
fi
