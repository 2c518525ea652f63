// Device specs (peak FLOP/s, memory bandwidth and capacity, launch overhead, GEMM
// efficiency curve, default links) and the named presets (v100-16gb ... h200-141gb).
//
// Figures are the vendors' dense peaks (SXM parts). bf16 on V100 uses the fp16
// tensor-core figure (V100 has no bf16 units; mixed precision runs in fp16 there).
// Links: `nvlink` is the per-GPU ring bandwidth inside a node (what NCCL's bus
// bandwidth reaches), `network` the per-GPU share of the inter-node fabric
// (V100: 100 Gb/s per node shared by 8 GPUs; A100: one 200 Gb/s HDR rail per GPU;
// H100/H200: one 400 Gb/s NDR rail per GPU). A cluster may override both.
// memory_efficiency (0.85 for every preset) is the fraction of HBM bandwidth a
// streaming kernel reaches, checked against measured figures: A100-SXM4-40GB copy
// 1310.7 GB/s (84.3 % of 1555) and saxpy 82.3 %, V100-SXM2-32GB copy 86-88 % and
// saxpy 90 % (pc2/GPUInspector.jl device pages, docs/src/devices/), A100 80GB SXM
// a read-only kernel at 1.80 TB/s (88 % of 2039; NVIDIA developer forum, "Trouble
// to Reach Peak Bandwidth of A100"). The A100 rows of the published-run table are
// 0.7-8 % optimistic, and 0.80 would bring them closer (-2.4..-5.8 %, ResNet-50
// -3.6 %), but no measurement puts A100 streaming below 82 %: 0.85 is kept.
// GEMM efficiency: gemm_max_efficiency (0.8) times gemm_half_flops' curve over a
// GEMM's FLOPs (half at 5 us of peak) times, for linears, gemm_k_factor over the
// contraction length with K0 = 157 (measured cuBLAS figures: cost/gemm_shape.hpp).
// Calibration (a later issue) builds a device from measured figures with
// `device::calibrated(...)`; the analytic figures are then replaced.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"

namespace tensoropt {

struct gemm_table;  // cost/gemm_table.hpp

/// A point-to-point link figure for the alpha-beta model.
struct link {
  bandwidth bw{};     ///< bytes per second, one direction, per device
  seconds latency{};  ///< per message (per ring step)
  constexpr bool operator==(const link&) const = default;
};

/// One accelerator (or the host CPU) as the cost model sees it.
struct device {
  std::string_view name = "cpu";
  flop_rate peak_fp32{};           ///< FP32 (non-tensor-core) peak
  flop_rate peak_half{};           ///< bf16/fp16 tensor-core peak
  bandwidth memory_bw{};           ///< HBM bandwidth
  bytes capacity{};                ///< device memory
  seconds launch_overhead{};       ///< per kernel
  double gemm_max_efficiency = 1;  ///< fraction of peak a large GEMM reaches
  double gemm_half_flops = 0;      ///< a GEMM of this many FLOPs reaches half of that
  double gemm_k0 = 0;              ///< per-tile fixed cost in steps of the contraction (gemm_shape.hpp)
  double memory_efficiency = 1;    ///< fraction of memory_bw a streaming kernel reaches
  link nvlink{};                   ///< default intra-node link
  link network{};                  ///< default inter-node link (per device)
  const gemm_table* gemm_measured = nullptr;  ///< measured GEMM factors by K (cost/gemm_table.hpp), if any

  /// Peak FLOP/s of `t`: tensor cores for bf16/fp16, FP32 units otherwise.
  constexpr flop_rate peak(dtype t) const { return t == dtype::fp32 ? peak_fp32 : peak_half; }

  /// Fraction of peak a GEMM of `f` FLOPs reaches:
  /// gemm_max_efficiency * f / (f + gemm_half_flops).
  constexpr double gemm_efficiency(double f) const {
    if (f <= 0) return gemm_max_efficiency;
    return gemm_max_efficiency * f / (f + gemm_half_flops);
  }

  /// Fraction of that a GEMM of contraction length `k` keeps: k / (k + K0), with
  /// K0 = gemm_k0 * `rate_fraction`, the GEMM's peak over the bf16/fp16 tensor-core
  /// peak (a slower main loop hides the same per-tile cost in fewer steps of k;
  /// cost/gemm_shape.hpp). 1 when gemm_k0 is 0.
  constexpr double gemm_k_factor(double k, double rate_fraction = 1) const {
    const double k0 = gemm_k0 * rate_fraction;
    if (k0 <= 0) return 1;
    return k > 0 ? k / (k + k0) : 1;
  }

  /// A device from measured figures (the calibration hook): `gemm_rate` is the
  /// achieved GEMM FLOP/s (used for every dtype), `bw` the achieved streaming
  /// bandwidth; efficiencies are 1 since the figures are achieved ones.
  /// Throws invalid_argument unless every figure is positive.
  static constexpr device calibrated(std::string_view name, flop_rate gemm_rate, bandwidth bw,
                                     bytes capacity, seconds launch = seconds(2e-6),
                                     link intra = {gb_per_s(10), seconds(1e-6)},
                                     link inter = {gb_per_s(1), seconds(20e-6)}) {
    detail::require(gemm_rate.value > 0 && bw.value > 0 && capacity.value > 0,
                    "device::calibrated: the GEMM rate, bandwidth and capacity must be positive");
    device d;
    d.name = name;
    d.peak_fp32 = gemm_rate;
    d.peak_half = gemm_rate;
    d.memory_bw = bw;
    d.capacity = capacity;
    d.launch_overhead = launch;
    d.gemm_max_efficiency = 1;
    d.gemm_half_flops = 0;
    d.gemm_k0 = 0;
    d.memory_efficiency = 1;
    d.nvlink = intra;
    d.network = inter;
    return d;
  }
  constexpr bool operator==(const device&) const = default;
};

namespace detail {
constexpr device make_gpu(std::string_view name, double fp32_tf, double half_tf, double hbm_gbs,
                          double capacity, double nvlink_gbs, double net_gbs) {
  device d;
  d.name = name;
  d.peak_fp32 = tflop_per_s(fp32_tf);
  d.peak_half = tflop_per_s(half_tf);
  d.memory_bw = gb_per_s(hbm_gbs);
  d.capacity = bytes(capacity);
  d.launch_overhead = seconds(4e-6);
  d.gemm_max_efficiency = 0.8;
  d.gemm_half_flops = half_tf * 1e12 * 5e-6;  // half efficiency at a GEMM worth 5 us of peak
  d.gemm_k0 = 157;                            // cost/gemm_shape.hpp
  d.memory_efficiency = 0.85;
  d.nvlink = {gb_per_s(nvlink_gbs), seconds(2e-6)};
  d.network = {gb_per_s(net_gbs), seconds(5e-6)};
  return d;
}
}  // namespace detail

/// The presets, by the names the zoo and the command lines use.
namespace gpus {
inline constexpr device v100_16gb = detail::make_gpu("v100-16gb", 15.7, 125, 900, 16 * gib, 130, 1.5625);
inline constexpr device v100_32gb = detail::make_gpu("v100-32gb", 15.7, 125, 900, 32 * gib, 130, 1.5625);
inline constexpr device a100_40gb = detail::make_gpu("a100-40gb", 19.5, 312, 1555, 40 * gib, 240, 25);
inline constexpr device a100_80gb = detail::make_gpu("a100-80gb", 19.5, 312, 2039, 80 * gib, 240, 25);
inline constexpr device h100_80gb = detail::make_gpu("h100-80gb", 67, 989, 3350, 80 * gib, 360, 50);
inline constexpr device h200_141gb = detail::make_gpu("h200-141gb", 67, 989, 4800, 141e9, 360, 50);
/// Uncalibrated host defaults: 100 GFLOP/s, 20 GB/s, 16 GiB. Calibrate with
/// device::calibrated for predictions that mean something.
inline constexpr device cpu = device::calibrated("cpu", flop_rate(100e9), gb_per_s(20), bytes(16 * gib));

inline constexpr std::array<const device*, 7> all = {&v100_16gb, &v100_32gb, &a100_40gb, &a100_80gb,
                                                     &h100_80gb, &h200_141gb, &cpu};

/// The preset names, in order.
constexpr std::array<std::string_view, 7> list() {
  std::array<std::string_view, 7> n{};
  for (std::size_t i = 0; i < all.size(); ++i) n[i] = all[i]->name;
  return n;
}

/// The preset called `name`; throws invalid_argument listing the valid names.
constexpr const device& find(std::string_view name) {
  for (auto* d : all)
    if (d->name == name) return *d;
  if (std::is_constant_evaluated()) throw invalid_argument("gpus::find: unknown device name");
  std::string msg = "unknown GPU '";
  msg.append(name).append("'; valid names:");
  for (auto n : list()) msg.append(" ").append(n);
  throw invalid_argument(msg);
}
}  // namespace gpus

}  // namespace tensoropt
