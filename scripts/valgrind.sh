#!/usr/bin/env bash
# Runs the samples under valgrind memcheck: any memory error or definite
# leak fails. (valgrind hides AVX-512 and VNNI from programs, so this also
# exercises the AVX2 kernels and the unfused fallback of int8 layers.)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
dqg_install_missing valgrind
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target dynamic_quantization int8_conv_block \
  weight_only_int4_linear
failed=0
passed=0
for s in dynamic_quantization int8_conv_block weight_only_int4_linear; do
  if valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
    "./build/$s" >/dev/null; then
    echo "PASS valgrind $s"
    passed=$((passed + 1))
  else
    echo "FAIL valgrind $s"
    failed=$((failed + 1))
  fi
done
echo "valgrind memcheck: $passed of $((passed + failed)) samples clean"
[ "$failed" -eq 0 ]
