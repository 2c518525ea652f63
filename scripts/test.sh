#!/usr/bin/env bash
# Installs what tensoropt needs, builds everything and runs the whole test suite:
# the test build (unit, static, expected-compile-failure, deploy, examples, MPI,
# CUDA-compile tests) and an AddressSanitizer + UBSan build of the unit tests.
#
# The test build (build-test/) is a Release build at -O1: the tests check results,
# not speed, and -O1 compiles in about 55 % of -O3's time (measured on a unit test
# translation unit: 18.1 s against 34.7 s CPU; plan_bench 27.6 s against 46.7 s),
# which keeps the whole suite inside its CI budget on 2 cores. Programs for use and
# for timing (scripts/plan.sh, the benchmarks) come from build/, at -O3 (tensoropt-plan
# and plan_bench at -O2: cmake/tensoropt_testing.cmake).
#
# Every part is switched on explicitly, and TENSOROPT_REQUIRE_ALL turns a part that
# cannot be built here (no BLAS, no MPI, nvcc present but no CUDA) into a configure
# error. The script fails when no test ran or a label that must have tests has none,
# and prints the number of tests and their time per label.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --tests
jobs=$(nproc)
start=$(date +%s)

# Runs ctest in $1 with the remaining arguments; fails when no test ran.
run_ctest() {
  local dir=$1; shift
  ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$jobs" "$@"
}

# Fails unless build dir $1 has at least one test under each label that follows.
require_labels() {
  local dir=$1; shift
  local label n
  for label in "$@"; do
    n=$(ctest --test-dir "$dir" -N -L "^${label}\$" | sed -n 's/^Total Tests: *//p')
    if [ "${n:-0}" -eq 0 ]; then
      echo "tensoropt: no '$label' test in $dir: that part of the suite was not configured" >&2
      exit 1
    fi
  done
}

echo "== Test build (Release, -O1)"
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENSOROPT_BUILD_TESTS=ON \
      "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" "-DCMAKE_CUDA_FLAGS_RELEASE=-O1 -DNDEBUG" \
      -DTENSOROPT_BUILD_EXAMPLES=ON -DTENSOROPT_BUILD_BENCH=ON -DTENSOROPT_BENCH_UNOPTIMIZED=ON \
      -DTENSOROPT_ENABLE_CUDA=ON -DTENSOROPT_SANITIZE=OFF -DTENSOROPT_REQUIRE_ALL=ON >/dev/null
cmake --build build-test -j "$jobs"
labels=(unit static fail fuzz deploy example mpi browser)
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then labels+=(gpu); fi
require_labels build-test "${labels[@]}"
echo "== Tests"
run_ctest build-test

echo "== ASan + UBSan build of the unit tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DTENSOROPT_SANITIZE=ON -DTENSOROPT_BUILD_TESTS=ON \
      -DTENSOROPT_BUILD_EXAMPLES=OFF -DTENSOROPT_BUILD_BENCH=OFF -DTENSOROPT_ENABLE_CUDA=OFF \
      -DTENSOROPT_REQUIRE_ALL=OFF >/dev/null
targets=$(ninja -C build-asan -t targets all | sed -n 's/^\(unit_[A-Za-z0-9_]*\): .*/\1/p' | sort -u)
if [ -z "$targets" ]; then echo "tensoropt: no unit test target in build-asan" >&2; exit 1; fi
cmake --build build-asan -j "$jobs" --target $targets
require_labels build-asan sanitizer
echo "== ASan + UBSan tests"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_ctest build-asan -L '^sanitizer$'
echo "== all tests passed in $(( $(date +%s) - start )) s"
