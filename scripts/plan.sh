#!/usr/bin/env bash
# Installs what tensoropt needs, builds the planner and runs it on the default model
# and cluster. Extra arguments go to tensoropt-plan (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENSOROPT_BUILD_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)" --target tensoropt-plan
./build/examples/tensoropt-plan "$@"
