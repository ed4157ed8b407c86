#!/usr/bin/env bash
# Runs the samples, and the dqgraph tool on five models, under valgrind
# memcheck: any memory error or definite leak fails. (valgrind hides AVX-512
# and VNNI from programs, so this also exercises the AVX2 kernels and the
# unfused fallback of int8 layers.)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
dqg_install_missing valgrind
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target dynamic_quantization int8_conv_block \
  weight_only_int4_linear onnx_model dqgraph_tool

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
passed=0
check() { # label command...
  local label=$1
  shift
  if valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
    "$@" >"$work/out.txt" 2>"$work/err.txt"; then
    echo "PASS valgrind $label"
    passed=$((passed + 1))
  else
    echo "FAIL valgrind $label"
    sed 's/^/  | /' "$work/err.txt" | tail -n 40
    failed=$((failed + 1))
  fi
}

for s in dynamic_quantization int8_conv_block weight_only_int4_linear; do
  check "$s" "./build/$s"
done
# The onnx_model sample writes qdq_mlp.onnx and input_0.pb, then runs them.
check onnx_model ./build/onnx_model "$work"

# The tool: run (fused and unfused) and explain on the sample's model, and
# the ONNX backend tests of twelve operators through `dqgraph test`.
check "dqgraph run qdq_mlp.onnx" ./build/dqgraph run "$work/qdq_mlp.onnx" -i "$work/input_0.pb" \
  -o "$work"
check "dqgraph run --no-fuse qdq_mlp.onnx" ./build/dqgraph run "$work/qdq_mlp.onnx" \
  -i "$work/input_0.pb" -o "$work" --no-fuse
check "dqgraph explain qdq_mlp.onnx" ./build/dqgraph explain "$work/qdq_mlp.onnx"
node=/usr/share/libonnx-testdata/data/node
for t in test_qlinearconv test_gemm_all_attributes test_matmulinteger test_dequantizelinear_axis \
  test_softmax_axis_1 test_layer_normalization_4d_axis1 test_lrn test_maxpool_2d_ceil \
  test_slice_neg_steps test_lstm_batchwise test_gru_seq_length test_simple_rnn_with_initial_bias; do
  if [ -d "$node/$t" ]; then
    check "dqgraph test $t" ./build/dqgraph test "$node/$t"
  fi
done
# The data-set folder, made-up inputs, the tensor tools and bench's statistics.
qmm=$node/test_qlinearmatmul_2D
if [ -d "$qmm" ]; then
  check "dqgraph run -i DIR" ./build/dqgraph run "$qmm/model.onnx" -i "$qmm/test_data_set_0" -o "$work"
  check "dqgraph run --random" ./build/dqgraph run "$qmm/model.onnx" --random --seed 3 -o "$work"
  check "dqgraph tensor --all" ./build/dqgraph tensor "$qmm/test_data_set_0/input_0.pb" --all
  check "dqgraph compare" ./build/dqgraph compare "$work/output_0.pb" "$work/output_0.pb"
  check "dqgraph bench --compare --json" ./build/dqgraph bench "$qmm/model.onnx" --iters 5 \
    --compare "--no-fuse" "" --json
fi
echo "valgrind memcheck: $passed of $((passed + failed)) runs clean"
[ "$failed" -eq 0 ]
