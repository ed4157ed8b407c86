#!/usr/bin/env bash
# Installs what is missing, builds Release and runs the main sample.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
dqg_install_missing
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target quickstart
./build/quickstart "$@"
