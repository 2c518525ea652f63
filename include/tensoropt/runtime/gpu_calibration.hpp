// Calibration of a GPU: the figures the cost model needs, measured on this machine,
// and the device preset file (tensoropt-device/2, plan/device_file.hpp) made of them
// that `tensoropt-plan --gpu-file FILE` loads.
//
// This header is host-only and free of Boost.Hana, as the CUDA translation unit
// includes it; the device file of a calibration is plan/device_file.hpp's
// to_device_file(). The measurement itself is CUDA code (cuda/calibrate.cuh); like the CUDA backend
// it is reached through a registry so that programs built by g++ call it without
// including any .cuh: the tensoropt::cuda target's source (src/tensoropt_cuda.cu)
// registers measure_gpu at start-up, and calibrate_gpu() here calls it, or says
// that this program was not linked with tensoropt::cuda.
//
// What is measured (on device `options.device`, CUDA events around repeated calls,
// the best of a few repetitions after a warm-up):
//  - GEMM: cuBLASLt (cuda/gemm.cuh) bf16 with fp32 accumulation and fp32 (TF32 off)
//    on a few square and transformer-like shapes; 2 m n k FLOPs per GEMM. The file's
//    rate of each dtype is the best shape's (the cost model's efficiency curve
//    lowers small GEMMs from it), and every shape's rate is reported;
//  - GEMM by contraction length: m = n = 8192 and k from 128 to 16384 (powers of
//    two) in both dtypes, the device file's "gemm-shapes" table, by which the cost
//    model charges a GEMM of contraction k (plan/device_file.hpp, cost/gemm_table.hpp);
//  - bandwidth: a device-to-device cudaMemcpyAsync of `copy_bytes`, counting the
//    bytes read plus the bytes written (2 x size), as STREAM's copy does;
//  - launch cost: the wall time per launch of an empty kernel, enqueued back to
//    back and synchronised once (what the cost model's per-kernel overhead is);
//  - capacity: the device's total memory (cudaMemGetInfo);
//  - NCCL all-reduce bus bandwidth over every local GPU when there are >= 2 (one
//    process, ncclCommInitAll): busbw = 2 (n-1)/n x bytes / time, NCCL-tests'
//    definition, which is the per-device ring bandwidth the cost model's
//    `nvlink` link is. With one GPU the links are not measured: they come from the
//    preset named by `options.links_from` and are not listed as measured.
#pragma once
#include <mutex>
#include <string>
#include <utility>
#include <vector>
#include "../core/error.hpp"

namespace tensoropt::runtime {

struct gpu_calibrate_options {
  int device = 0;
  double seconds_per_test = 0.1;                  ///< time budget of each timed figure
  std::size_t copy_bytes = std::size_t(1) << 30;  ///< per copy (1 GiB: far beyond the L2)
  std::size_t all_reduce_bytes = std::size_t(256) << 20;
  std::string links_from = "h100-80gb";           ///< preset of the links when they are not measured
};

/// One measured GEMM shape.
struct gemm_figure {
  std::string dtype;  ///< "bf16" or "fp32"
  long m = 0, n = 0, k = 0;
  double flops = 0;   ///< achieved FLOP/s
};

/// What measure_gpu found.
struct gpu_calibration {
  std::string name;                  ///< the product name (cudaDeviceProp::name)
  int gpus = 0;                      ///< CUDA devices on this machine
  double capacity_bytes = 0;
  double bf16_flops = 0, fp32_flops = 0;  ///< best shape of each dtype
  std::vector<gemm_figure> gemms;
  std::vector<gemm_figure> shape_table;  ///< the device file's GEMM table: one shape per dtype and k
  double copy_bandwidth = 0;         ///< bytes/s, read + written
  double launch_seconds = 0;
  double all_reduce_busbw = 0;       ///< bytes/s per device; 0: not measured (one GPU)
};

/// Measures; returns false with `why` when there is no GPU (nothing measured).
/// Throws cuda errors (as runtime_error) when a measurement fails.
using gpu_calibrator = bool (*)(const gpu_calibrate_options&, gpu_calibration&, std::string& why);

namespace detail {
struct gpu_calibrator_slot {
  std::mutex mu;
  gpu_calibrator f = nullptr;
  static gpu_calibrator_slot& get() {
    static gpu_calibrator_slot s;
    return s;
  }
};
}  // namespace detail

/// Registers the measurement (done by the tensoropt::cuda target's source).
inline bool register_gpu_calibrator(gpu_calibrator f) {
  auto& s = detail::gpu_calibrator_slot::get();
  std::lock_guard lk(s.mu);
  s.f = f;
  return true;
}

/// Whether this program can measure a GPU (it links tensoropt::cuda).
inline bool has_gpu_calibrator() {
  auto& s = detail::gpu_calibrator_slot::get();
  std::lock_guard lk(s.mu);
  return s.f != nullptr;
}

/// Measures device `o.device`; false with `why` when there is no GPU. Throws
/// invalid_argument when the program is not linked with tensoropt::cuda.
inline bool calibrate_gpu(const gpu_calibrate_options& o, gpu_calibration& out, std::string& why) {
  gpu_calibrator f = nullptr;
  {
    auto& s = detail::gpu_calibrator_slot::get();
    std::lock_guard lk(s.mu);
    f = s.f;
  }
  if (!f)
    throw invalid_argument("GPU calibration is not part of this program: link it with the tensoropt::cuda CMake "
                           "target (which compiles src/tensoropt_cuda.cu)");
  return f(o, out, why);
}

}  // namespace tensoropt::runtime
