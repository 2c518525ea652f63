#!/usr/bin/env bash
# Installs what tensoropt needs, builds everything and runs the whole test suite:
# the Release build (unit, static, expected-compile-failure, deploy, examples, MPI
# tests) and an AddressSanitizer + UBSan build of the unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --tests
jobs=$(nproc)
start=$(date +%s)

echo "== Release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
echo "== Release tests"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== ASan + UBSan build of the unit tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTENSOROPT_SANITIZE=ON \
      -DTENSOROPT_BUILD_EXAMPLES=OFF -DTENSOROPT_BUILD_BENCH=OFF -DTENSOROPT_ENABLE_CUDA=OFF >/dev/null
targets=$(ninja -C build-asan -t targets all | sed -n 's/^\(unit_[A-Za-z0-9_]*\): .*/\1/p' | sort -u)
cmake --build build-asan -j "$jobs" --target $targets
echo "== ASan + UBSan tests"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -R '^unit\.'
echo "== all tests passed in $(( $(date +%s) - start )) s"
