#!/usr/bin/env bash
# Installs what is missing, configures, builds with tests and runs every test.
# DQG_SANITIZE=address,undefined builds and tests that configuration in its
# own folder, build-san-<sanitizers>; DQG_SANITIZE=thread runs the
# concurrency stress programs. DQG_CMAKE_ARGS adds configure options (e.g.
# -DDQG_CACHE_TRUNCATE_HASH=ON to force cache hash collisions).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
dqg_install_missing

san="${DQG_SANITIZE:-}"
if [ -n "$san" ]; then
  build="build-san-${san//,/-}"
  btype=Debug
else
  build="build"
  btype=Release
fi
# shellcheck disable=SC2086 # DQG_CMAKE_ARGS is a list of options
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE="$btype" -DDQG_SANITIZE="$san" -DDQG_BUILD_TESTS=ON \
  ${DQG_CMAKE_ARGS:-}
cmake --build "$build" -j"$(nproc)"
if [ -n "$san" ]; then
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
fi
if [[ "$san" == *thread* ]]; then
  # Criterion's forking runner cannot start under ThreadSanitizer; the
  # concurrency tests exist as plain programs (tests/stress_*.c) for this.
  ctest --test-dir "$build" --output-on-failure -R '^stress/'
else
  ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
fi
