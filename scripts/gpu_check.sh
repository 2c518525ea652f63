#!/usr/bin/env bash
# The GPU check: builds the GPU binaries (nvcc, sm_90) and the CPU reference here,
# then, where a GPU is present, runs every GPU test, the CUDA-vs-CPU equivalence
# checks and the benchmarks, prints one summary table and writes at most 8 files
# of figures to OUTDIR. Without a GPU it builds, says so and exits 0.
#
#   scripts/gpu_check.sh OUTDIR            build (if needed) and run
#   scripts/gpu_check.sh --build-only      build the bundle (gpu_bundle/) and stop
#
# The bundle (gpu_bundle/: binaries, the CPU reference, a few MiB) is what travels
# to a GPU machine that has the CUDA driver, the CUDA 13 runtime libraries, NCCL
# and PyTorch but no Boost, OpenBLAS or doctest; there the script finds the bundle
# and only runs (gpu_bundle/ is git-ignored: carry it explicitly). The binaries link
# the CUDA runtime statically and load cuBLASLt and NCCL at run time: the script puts
# pip's copies (nvidia-* wheels) on the loader's path, and a missing one is one line
# from the program naming it and the fix (TENSOROPT_CUBLASLT_LIBRARY /
# TENSOROPT_NCCL_LIBRARY point at a file elsewhere). cuda_libraries checks the
# loading first, without a device. The summary lists the calibration's GEMM table
# (the device file's "gemm-shapes", by contraction length).
# Measured here (no GPU, 2 cores shared with five other builds, load 12): building
# the bundle from an empty build-gpu/ took 282 s user + 14 s sys (29 min wall); it
# is 13 MiB stripped (16 MiB before; the CUDA runtime is now linked into each binary).
set -u -o pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bundle=$here/gpu_bundle
out=${1:-}
if [ -z "$out" ]; then
  echo "usage: scripts/gpu_check.sh OUTDIR | --build-only" >&2
  exit 2
fi

build_bundle() {
  local b=$here/build-gpu
  command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
  if ! command -v nvcc >/dev/null; then
    echo "gpu_check: no nvcc here and no gpu_bundle/: build the bundle on a machine with the CUDA toolkit" >&2
    return 1
  fi
  mkdir -p "$b"  # its logs live inside it (build-gpu/ is git-ignored)
  cmake -S "$here" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DTENSOROPT_BUILD_EXAMPLES=OFF >"$b/gpu_check.configure.log" 2>&1 ||
    { tail -20 "$b/gpu_check.configure.log"; return 1; }
  if ! grep -q "backend ON" "$b/gpu_check.configure.log"; then
    echo "gpu_check: this tree cannot build the CUDA backend here:" \
         "$(grep 'tensoropt: CUDA' "$b/gpu_check.configure.log")" >&2
    echo "gpu_check: it needs nvcc, the CUDA toolkit, NCCL (libnccl-dev) and include/tensoropt/cuda/*.cuh" >&2
    return 1
  fi
  local targets="backend_check_cpu backend_check_cuda gpu_bench gpu_calibrate"
  # every CUDA test CTest knows (label gpu, named cuda.NAME, target cuda_NAME)
  for t in $(ctest --test-dir "$b" -N -L gpu | sed -n 's/.*Test *#[0-9]*: cuda\.\([A-Za-z0-9_]*\)$/\1/p'); do
    targets="$targets cuda_$t"
  done
  cmake --build "$b" -j"${JOBS:-1}" --target $targets >"$b/gpu_check.build.log" 2>&1 ||
    { tail -30 "$b/gpu_check.build.log"; return 1; }
  rm -rf "$bundle" && mkdir -p "$bundle"
  "$b/test/gpu/backend_check_cpu" --write "$bundle/backend_reference.txt" || return 1
  cp "$b/test/gpu/backend_check_cuda" "$b/bench/gpu_bench" "$b/bench/gpu_calibrate" "$here/bench/gpt_torch.py" \
     "$bundle/"
  for t in "$b"/test/cuda/cuda_*; do [ -x "$t" ] && cp "$t" "$bundle/"; done
  # symbol tables are not needed to run (saves about 3 of 16 MiB)
  if command -v strip >/dev/null; then
    for t in "$bundle"/*; do [ -x "$t" ] && [ "${t%.py}" = "$t" ] && strip "$t"; done
  fi
  du -sh "$bundle" | sed 's/^/gpu_check: bundle /'
}

if [ ! -x "$bundle/backend_check_cuda" ] || [ ! -x "$bundle/gpu_calibrate" ] || [ "$out" = "--build-only" ]; then
  echo "gpu_check: building the GPU bundle (nvcc, sm_90) and the CPU reference"
  build_bundle || exit 1
fi
[ "$out" = "--build-only" ] && exit 0
mkdir -p "$out"

# Libraries the bundle needs at run time: the CUDA 13 runtime, cuBLASLt, NCCL (pip's
# nvidia-nccl-cu13 where there is no system NCCL).
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH=$d:${LD_LIBRARY_PATH:-}
done
py=$(command -v python3 || true)
if [ -n "$py" ]; then
  # every folder of the nvidia.* wheels holding libnccl / libcublasLt (their layout
  # differs between CUDA 12 and 13 wheels)
  roots=$("$py" -c "import nvidia; print('\n'.join(nvidia.__path__))" 2>/dev/null || true)
  for d in $(for r in $roots; do find "$r" -maxdepth 4 \( -name 'libnccl.so.*' -o -name 'libcublasLt.so.*' \) \
               -printf '%h\n' 2>/dev/null; done | sort -u); do
    export LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH
  done
fi

if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no GPU on this machine (nvidia-smi found none): built the bundle, ran nothing; exit 0"
  exit 0
fi
nvidia-smi -L | head -1 | tee "$out/device.txt"

summary=$out/summary.txt
: >"$summary"
row() { printf '%-34s %-8s %s\n' "$1" "$2" "$3" | tee -a "$summary"; }
fails=0
run_step() {  # name, log file, command...
  local name=$1 log=$2
  shift 2
  local t0=$(date +%s) from=$(( $(wc -c <"$log") + 1 ))
  "$@" >>"$log" 2>&1
  local rc=$? dt=$(( $(date +%s) - t0 ))
  if [ $rc -eq 0 ]; then row "$name" ok "${dt}s"
  elif [ $rc -eq 77 ]; then row "$name" skipped "$(tail -1 "$log")"
  else  # the first error line of this step's own output
    local first
    first=$(tail -c +"$from" "$log" | grep -m1 -E 'cannot load|is not a usable|error while loading|FAIL|error') ||
      first=$(tail -1 "$log")
    row "$name" FAIL "exit $rc: $first"
    fails=$((fails + 1))
  fi
}

tests_log=$out/gpu_tests.log
: >"$tests_log"
for t in "$bundle"/cuda_*; do
  [ -x "$t" ] || continue
  echo "== $(basename "$t")" >>"$tests_log"
  run_step "test $(basename "$t")" "$tests_log" timeout 120 "$t"
done
check_log=$out/backend_check.log
: >"$check_log"
run_step "cuda vs cpu equivalence" "$check_log" timeout 180 "$bundle/backend_check_cuda" --check \
  "$bundle/backend_reference.txt"
grep -E '^[a-z].* (ok|FAIL|NOT RUN) ' "$check_log" | sed 's/^/  /' | tee -a "$summary"
# a program's own error (PROG: ... or a test case that threw it), not cuda_libraries'
# deliberate bad paths, which it prints indented
missing='^[A-Za-z0-9_]+: (cannot load |[^ ]+ is not a usable )|threw (cannot load |[^ ]+ is not a usable )'
if grep -q -E "$missing|error while loading shared libraries" "$tests_log" "$check_log"; then
  echo "gpu_check: cuBLASLt or NCCL is missing (see above): install the CUDA 13 cuBLAS and NCCL (pip:" \
       "nvidia-cublas, nvidia-nccl-cu13), add their lib folders to LD_LIBRARY_PATH, or set" \
       "TENSOROPT_CUBLASLT_LIBRARY / TENSOROPT_NCCL_LIBRARY to the files" | tee -a "$summary"
fi
bench_log=$out/bench.log
: >"$bench_log"
run_step "bench: gpu_bench bf16 (tensoropt)" "$bench_log" timeout 240 "$bundle/gpu_bench" --steps 10 \
  --json "$out/bench_tensoropt.json"
run_step "bench: PyTorch eager plain + SDPA" "$bench_log" timeout 240 python3 "$bundle/gpt_torch.py" --steps 10 \
  --json "$out/bench_torch.json"
grep -E "step .* ms|MFU|predicted|memory:" "$bench_log" | sed 's/^/  /' | tee -a "$summary"
# the device preset file (tensoropt-device/2, with the GEMM table): tensoropt-plan --gpu-file gpu_device.json
run_step "GPU calibration (--gpu-file)" "$bench_log" timeout 120 "$bundle/gpu_calibrate" --seconds 0.1 \
  --out "$out/gpu_device.json"
grep -E "^device [0-9]+ of [0-9]+:|^  (GEMM|copy|launch|all-reduce)" "$bench_log" | sed 's/^/  /' | tee -a "$summary"
echo "gpu_check: $fails failure(s); figures in $out" | tee -a "$summary"
[ $fails -eq 0 ]
