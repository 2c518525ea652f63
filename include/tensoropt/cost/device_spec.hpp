// Device specs: any accelerator as text, `gpu:memory-gib=24,bf16-tflops=165,
// fp32-tflops=82.6,hbm-gbs=1008,nvlink-gbs=32,network-gbs=3`, built by the same
// function as the presets of device.hpp (detail::make_gpu: launch overhead 4 us,
// GEMM efficiency 0.8 reaching half at 5 us of peak, contraction cost K0 = 157
// (cost/gemm_shape.hpp), 85 % of HBM bandwidth for
// streaming kernels, link latencies 2 us / 5 us), so `--gpu` takes a device that
// has no preset, and every preset prints as the spec that rebuilds it exactly.
//
// The keys, help lines and ranges are device_spec's reflection table (core/
// reflect.hpp): parsing, range errors and the list of valid keys come from it.
// Figures are the vendor's dense peaks, as for the presets: memory in GiB,
// FLOP rates in TFLOP/s, bandwidths in GB/s (decimal) per device and direction.
#pragma once
#include <boost/hana/tuple.hpp>
#include <string>
#include <string_view>
#include "../core/error.hpp"
#include "../core/reflect.hpp"
#include "../core/units.hpp"
#include "device.hpp"

namespace tensoropt {

/// The figures of a device spec.
struct device_spec {
  double memory_gib = 0;
  double bf16_tflops = 0;
  double fp32_tflops = 0;
  double hbm_gbs = 0;
  double nvlink_gbs = 0;
  double network_gbs = 0;
  friend constexpr bool operator==(const device_spec&, const device_spec&) = default;
};

template <>
struct reflection<device_spec> {
  using d = device_spec;
  static constexpr auto fields = boost::hana::make_tuple(
      field("memory-gib", &d::memory_gib, "device memory, GiB").range_open_lo(0, 1 << 20).required(),
      field("bf16-tflops", &d::bf16_tflops, "bf16/fp16 tensor-core peak, TFLOP/s").range_open_lo(0, 1e6).required(),
      field("fp32-tflops", &d::fp32_tflops, "FP32 peak, TFLOP/s").range_open_lo(0, 1e6).required(),
      field("hbm-gbs", &d::hbm_gbs, "memory bandwidth, GB/s").range_open_lo(0, 1e6).required(),
      field("nvlink-gbs", &d::nvlink_gbs, "intra-node bandwidth per device, GB/s").range_open_lo(0, 1e6).required(),
      field("network-gbs", &d::network_gbs, "inter-node bandwidth per device, GB/s").range_open_lo(0, 1e6)
          .required());
};

/// True when `s` is written as a device spec ("gpu:...") rather than a preset name.
inline bool is_device_spec(std::string_view s) { return s.substr(0, 4) == "gpu:"; }

/// Parses "gpu:memory-gib=...,...". Throws invalid_argument naming the key and its
/// range, or an unknown or missing key with the valid ones.
inline device_spec parse_device_spec(std::string_view s) {
  if (!is_device_spec(s))
    throw invalid_argument("device spec '" + detail::echo(s) + "': expected gpu:KEY=VALUE,... with keys " +
                           field_names<device_spec>());
  return parse_key_values<device_spec>(s.substr(4), "gpu");
}

/// The device of spec `d`, named `name` (a view: the caller keeps the text alive).
constexpr device make_device(const device_spec& d, std::string_view name) {
  return detail::make_gpu(name, d.fp32_tflops, d.bf16_tflops, d.hbm_gbs, d.memory_gib * gib, d.nvlink_gbs,
                          d.network_gbs);
}

/// The spec of a device built by make_gpu (every GPU preset): "gpu:memory-gib=...".
/// make_device(parse_device_spec(to_spec(p)), p.name) == p.
inline std::string to_spec(const device& p) {
  device_spec d;
  d.memory_gib = p.capacity.value / gib;
  d.bf16_tflops = p.peak_half.value / 1e12;
  d.fp32_tflops = p.peak_fp32.value / 1e12;
  d.hbm_gbs = p.memory_bw.value / 1e9;
  d.nvlink_gbs = p.nvlink.bw.value / 1e9;
  d.network_gbs = p.network.bw.value / 1e9;
  return "gpu:" + to_key_values(d);
}

}  // namespace tensoropt
