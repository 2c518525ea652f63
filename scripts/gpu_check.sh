#!/usr/bin/env bash
# The GPU check: builds the GPU binaries (nvcc, sm_90) and the CPU reference here,
# then, where a GPU is present, runs every GPU test, the CUDA-vs-CPU equivalence
# checks, the calibration and the benchmarks (tensoropt predicting with the device
# file the calibration just wrote, and PyTorch eager), prints one summary table with
# the speed figures against their targets, and writes at most 8 files of figures to
# OUTDIR. Without a GPU it builds (where nvcc is), says so and exits 0. The run phase
# keeps to a budget (GPU_CHECK_BUDGET seconds, default 290): each step's time limit
# is what is left of it, so the whole check ends within 5 minutes on one GPU.
#
#   scripts/gpu_check.sh OUTDIR            build (if needed) and run
#   scripts/gpu_check.sh --build-only      build the bundle (gpu_bundle/) and stop
#
# The bundle (gpu_bundle/: binaries, the CPU reference, 14 MiB; packed as
# gpu_bundle.tar.xz, 1.7 MiB, which the script unpacks where it finds it) is what travels
# to a GPU machine that has the CUDA driver, the CUDA 13 runtime libraries, NCCL
# and PyTorch but no Boost, OpenBLAS, nlohmann_json or doctest; there the script finds
# the bundle and only runs (both are git-ignored: carry one explicitly). Building
# there instead needs those headers too (the configure requires Boost and
# nlohmann_json), so carrying the bundle is the way; the script says so when it
# finds neither a bundle nor what the build needs. The binaries link
# the CUDA runtime statically and load cuBLASLt and NCCL at run time: the script puts
# pip's copies (nvidia-* wheels) on the loader's path, and a missing one is one line
# from the program naming it and the fix (TENSOROPT_CUBLASLT_LIBRARY /
# TENSOROPT_NCCL_LIBRARY point at a file elsewhere). cuda_libraries checks the
# loading first, without a device. The summary lists the calibration's GEMM table
# (the device file's "gemm-shapes", by contraction length).
# Measured here (no GPU, 2 cores, nothing else running): building the bundle from an
# empty build-gpu/ with JOBS=2 took 110 s user + 7 s sys (72 s wall); it is 14 MiB
# stripped (the CUDA runtime is linked into each binary), 1.7 MiB packed.
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
    echo "gpu_check: no nvcc here and no gpu_bundle/: build the bundle (scripts/gpu_check.sh --build-only) on a" \
         "machine with the CUDA toolkit, Boost and nlohmann_json, and carry gpu_bundle/ (or gpu_bundle.tar.xz) here" >&2
    return 3
  fi
  mkdir -p "$b"  # its logs live inside it (build-gpu/ is git-ignored)
  cmake -S "$here" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DTENSOROPT_BUILD_EXAMPLES=OFF >"$b/gpu_check.configure.log" 2>&1 || {
    tail -20 "$b/gpu_check.configure.log"
    echo "gpu_check: the configure failed (a GPU machine without Boost or nlohmann_json cannot build the bundle:" \
         "build it with --build-only where they are, and carry gpu_bundle/)" >&2
    return 1
  }
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
  # the same, packed for carrying (1.7 MiB where the folder is 14 MiB)
  tar -cJf "$bundle.tar.xz" -C "$here" gpu_bundle && ls -sh "$bundle.tar.xz" | sed 's/^/gpu_check: packed /'
}

# a carried gpu_bundle.tar.xz unpacks into gpu_bundle/
if [ ! -x "$bundle/backend_check_cuda" ] && [ -s "$bundle.tar.xz" ] && [ "$out" != "--build-only" ]; then
  tar -xJf "$bundle.tar.xz" -C "$here" && echo "gpu_check: unpacked $bundle.tar.xz"
fi

if [ ! -x "$bundle/backend_check_cuda" ] || [ ! -x "$bundle/gpu_calibrate" ] || [ "$out" = "--build-only" ]; then
  echo "gpu_check: building the GPU bundle (nvcc, sm_90) and the CPU reference"
  build_bundle
  rc=$?
  if [ $rc -ne 0 ]; then
    if [ $rc -eq 3 ] && ! nvidia-smi -L >/dev/null 2>&1; then
      echo "gpu_check: no GPU and no nvcc on this machine: nothing to build or run; exit 0"
      exit 0
    fi
    exit 1
  fi
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
budget=${GPU_CHECK_BUDGET:-290}
start=$(date +%s)
run_step() {  # name, log file, most seconds, command...: the limit is also what is left of the budget
  local name=$1 log=$2 most=$3
  shift 3
  local left=$(( budget - ($(date +%s) - start) ))
  [ "$left" -lt "$most" ] && most=$left
  if [ "$most" -le 0 ]; then
    row "$name" FAIL "not run: the ${budget}s budget is spent"
    fails=$((fails + 1))
    return
  fi
  local t0=$(date +%s) from=$(( $(wc -c <"$log") + 1 ))
  timeout "$most" "$@" >>"$log" 2>&1
  local rc=$? dt=$(( $(date +%s) - t0 ))
  if [ $rc -eq 0 ]; then row "$name" ok "${dt}s"
  elif [ $rc -eq 124 ]; then
    row "$name" FAIL "timed out after ${most}s"
    fails=$((fails + 1))
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
  run_step "test $(basename "$t")" "$tests_log" 60 "$t"
done
check_log=$out/backend_check.log
: >"$check_log"
run_step "cuda vs cpu equivalence" "$check_log" 120 "$bundle/backend_check_cuda" --check \
  "$bundle/backend_reference.txt"
grep -E '^[a-z].* (ok|FAIL) ' "$check_log" | sed 's/^/  /' | tee -a "$summary"
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
# the device preset file first (tensoropt-device/2, with the GEMM table; also
# tensoropt-plan --gpu-file gpu_device.json), so the benchmark predicts with it
run_step "GPU calibration (--gpu-file)" "$bench_log" 60 "$bundle/gpu_calibrate" --seconds 0.1 \
  --out "$out/gpu_device.json"
grep -E "^device [0-9]+ of [0-9]+:|^  (GEMM|copy|launch|all-reduce)" "$bench_log" | sed 's/^/  /' | tee -a "$summary"
gpu_file=()
[ -s "$out/gpu_device.json" ] && gpu_file=(--gpu-file "$out/gpu_device.json")
run_step "bench: gpu_bench bf16 (tensoropt)" "$bench_log" 90 "$bundle/gpu_bench" --steps 10 "${gpu_file[@]}" \
  --json "$out/bench_tensoropt.json"
run_step "bench: PyTorch eager plain + SDPA" "$bench_log" 120 python3 "$bundle/gpt_torch.py" --steps 10 \
  --json "$out/bench_torch.json"
grep -E "step .* ms|MFU|predicted|memory:|cost model|bert-large layer" "$bench_log" | sed 's/^/  /' | tee -a "$summary"
# the speed figures against their targets (reported; they do not fail the check)
if [ -n "$py" ] && [ -s "$out/bench_tensoropt.json" ]; then
  "$py" - "$out/bench_tensoropt.json" "$out/bench_torch.json" <<'PY' | tee -a "$summary"
import json, sys
t = json.load(open(sys.argv[1]))
try:
    torch = json.load(open(sys.argv[2]))
except (OSError, ValueError):
    torch = []
def target(name, met, figure):
    print("%-34s %-8s %s" % ("target: " + name, "met" if met else "missed", figure))
target("MFU >= 40 % of 989 TFLOP/s", t["mfu"] >= 0.40, "%.1f %%" % (100 * t["mfu"]))
gpt = [v for v in torch if isinstance(v, dict) and "kind" not in v]
layers = [v for v in torch if isinstance(v, dict) and v.get("kind") == "bert-layer"]
plain = next((v for v in gpt if v.get("attention") == "plain"), None)
if plain and "tokens_per_s" in plain:
    target("tokens/s >= PyTorch plain attention", t["tokens_per_s"] >= plain["tokens_per_s"],
           "%.0f vs %.0f tokens/s" % (t["tokens_per_s"], plain["tokens_per_s"]))
else:
    print("%-34s %-8s %s" % ("target: tokens/s >= PyTorch plain", "unknown", "no PyTorch figures"))
err = t["step_s"] / t["predicted_step_s"] - 1
target("predicted step within 15 %", abs(err) <= 0.15,
       "measured / predicted - 1 = %+.1f %% (%s device)" % (100 * err, t.get("predicted_with", "preset")))
# the cost model against PyTorch's run of the same model (gpu_bench's file comment says
# what of the reference it does not charge); the SDPA variant is the target
for name, key in (("sdpa", "torch_predicted_sdpa_s"), ("plain", "torch_predicted_plain_s")):
    v = next((v for v in gpt if v.get("attention") == name), None)
    if not v or "step_s" not in v or key not in t:
        print("%-34s %-8s %s" % ("cost model vs PyTorch " + name, "unknown", "no figures"))
        continue
    err = v["step_s"] / t[key] - 1
    figure = "PyTorch %.2f ms, predicted %.2f ms: measured / predicted - 1 = %+.1f %% (%s device)" % (
        1e3 * v["step_s"], 1e3 * t[key], 100 * err, t.get("predicted_with", "preset"))
    if name == "sdpa":
        target("cost model within 15 % of PyTorch SDPA", abs(err) <= 0.15, figure)
    else:
        print("%-34s %-8s %s" % ("cost model vs PyTorch plain", "info", figure))
# one BERT-large layer timed alone, as the published V100 layer timings
# (cost/published_runs.hpp layer_runs): printed, not held
for p in t.get("layer_predictions", []):
    v = next((v for v in layers if (v.get("batch"), v.get("seq"), v.get("attention")) ==
              (p["batch"], p["seq"], p["attention"])), None)
    name = "bert-large layer %d x %d %s" % (p["batch"], p["seq"], p["attention"])
    if not v or "step_s" not in v:
        print("%-34s %-8s %s" % (name, "unknown", "no PyTorch figure"))
        continue
    print("%-34s %-8s %s" % (name, "info", "PyTorch %.3f ms, predicted %.3f ms: measured / predicted - 1 = %+.1f %%" % (
        1e3 * v["step_s"], 1e3 * p["step_s"], 100 * (v["step_s"] / p["step_s"] - 1))))
PY
fi
echo "gpu_check: $fails failure(s); figures in $out" | tee -a "$summary"
[ $fails -eq 0 ]
