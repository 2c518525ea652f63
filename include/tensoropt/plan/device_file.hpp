// Device preset files (`tensoropt-device/1`): a device's figures as JSON, written
// by the GPU calibration (bench/gpu_calibrate) from what it measured on a machine
// and read by `tensoropt-plan --gpu-file FILE`, so the planner plans with the
// achieved figures of the machine it will run on instead of the vendor's peaks.
//
//   {"format": "tensoropt-device/1",
//    "name": "NVIDIA H200",
//    "device": {"memory-gib": 139.8, "bf16-tflops": 702.1, "fp32-tflops": 50.3,
//               "hbm-gbs": 4012, "nvlink-gbs": 360, "network-gbs": 50},
//    "launch-us": 2.6,
//    "measured": ["memory-gib", "bf16-tflops", "fp32-tflops", "hbm-gbs", "launch-us"]}
//
// "device" is the device spec's reflected JSON form (cost/device_spec.hpp, the keys
// of `--gpu gpu:...`), read by the same field table: the same keys, ranges and
// messages. "measured" lists the figures that were measured (the others, e.g. the
// links on a one-GPU machine, came from a preset); it is informational.
//
// Meaning of the figures (device_of): measured FLOP rates and bandwidth are achieved
// ones, so the device has GEMM efficiency 1 and memory efficiency 1 (a preset's are
// 0.8 and 0.85 of peak); the GEMM half-efficiency size stays make_gpu's (a GEMM
// worth 5 us at the rate), as small GEMMs still run below the large ones' rate;
// launch-us is the per-kernel overhead (a preset's is 4 us).
//
// to_device_file() makes the file of a GPU calibration (runtime/gpu_calibration.hpp).
//
// Bad files (not JSON, a NUL byte, another format tag, a missing, unknown,
// non-numeric, zero or negative figure) are refused with one format_error line
// that names the file and the field ("device.bf16-tflops").
#pragma once
#include <deque>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>
#include "../core/error.hpp"
#include "../core/reflect_json.hpp"
#include "../cost/device.hpp"
#include "../cost/device_spec.hpp"
#include "../runtime/gpu_calibration.hpp"
#include "../search/json_read.hpp"

namespace tensoropt {

inline constexpr const char* device_file_format = "tensoropt-device/1";

/// The content of a device preset file.
struct device_file {
  std::string name;                   ///< e.g. the GPU's product name
  device_spec spec;                   ///< memory, FLOP rates, bandwidths
  double launch_us = 4;               ///< per-kernel overhead, microseconds
  std::vector<std::string> measured;  ///< which figures were measured
  friend bool operator==(const device_file&, const device_file&) = default;
};

/// The JSON text of `f` (what read_device_json reads back).
inline std::string device_json(const device_file& f) {
  nlohmann::json j;
  j["format"] = device_file_format;
  j["name"] = f.name;
  j["device"] = to_json(f.spec);
  j["launch-us"] = f.launch_us;
  j["measured"] = f.measured;
  return j.dump(2) + "\n";
}

/// Parses the text of a device preset file. Throws format_error naming the field.
inline device_file read_device_json(std::string_view text) {
  using namespace detail;  // the json_read helpers
  const auto j = parse_json_text(text, "device file");
  if (!j.is_object()) throw format_error(std::string("expected a JSON object (") + device_file_format + ")");
  device_file f;
  const auto& tag = json_field(j, "format", "");
  if (!tag.is_string() || tag.get<std::string>() != device_file_format)
    throw format_error("format: expected \"" + std::string(device_file_format) + "\", got " + json_echo(tag));
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "format" && it.key() != "name" && it.key() != "device" && it.key() != "launch-us" &&
        it.key() != "measured")
      throw format_error("unknown field '" + cut_short(it.key()) + "'; valid: format, name, device, launch-us, measured");
  f.name = json_string(json_field(j, "name", ""), "name");
  if (f.name.empty() || f.name.size() > 200) throw format_error("name: expected 1 to 200 characters");
  for (unsigned char ch : f.name)
    if (ch < 0x20 || ch == 0x7f)
      throw format_error("name: a control character (code " + std::to_string(int(ch)) +
                         "); the name is printed in tables and reports");
  f.spec = from_json<device_spec>(json_field(j, "device", ""), "device");
  const auto& l = json_field(j, "launch-us", "");
  if (!l.is_number()) throw format_error("launch-us: expected a number of microseconds, got " + json_echo(l));
  f.launch_us = l.get<double>();
  if (!(f.launch_us > 0 && f.launch_us <= 1e6))
    throw format_error("launch-us: expected a value in (0, 1e6] microseconds, got " + json_echo(l));
  if (auto m = j.find("measured"); m != j.end()) {
    const auto& a = json_array(*m, "measured");
    for (std::size_t i = 0; i < a.size(); ++i) {
      const auto at = "measured[" + std::to_string(i) + "]";
      auto s = json_string(a[i], at);
      bool known = s == "launch-us";
      for_each_field<device_spec>([&](const auto& fd) { known = known || fd.name == s; });
      if (!known) throw format_error(at + ": unknown figure " + json_echo(a[i]) + "; valid: " +
                                     field_names<device_spec>() + ", launch-us");
      f.measured.push_back(std::move(s));
    }
  }
  return f;
}

/// Reads the device preset file at `path`; throws format_error naming the file.
inline device_file load_device_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw format_error("cannot open the device file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return read_device_json(ss.str());
  } catch (const format_error& e) {
    throw format_error("device file '" + path + "': " + e.what());
  }
}

namespace detail {
/// Keeps device names alive for the program's life (device::name is a view).
inline std::string_view keep_device_name(const std::string& name) {
  static std::mutex mu;
  static std::deque<std::string> names;
  std::lock_guard lk(mu);
  for (const auto& n : names)
    if (n == name) return n;
  return names.emplace_back(name);
}
}  // namespace detail

/// The cost model's device of `f` (see the file comment for the efficiencies).
inline device device_of(const device_file& f) {
  device d = make_device(f.spec, detail::keep_device_name(f.name));
  d.gemm_max_efficiency = 1;
  d.memory_efficiency = 1;
  d.launch_overhead = seconds(f.launch_us * 1e-6);
  return d;
}

/// The device preset file of `c`: measured figures, the links of preset
/// `links_from` where they were not measured. Throws invalid_argument on a
/// figure that is not positive (a failed measurement) or an unknown preset.
inline device_file to_device_file(const runtime::gpu_calibration& c, const std::string& links_from = "h100-80gb") {
  auto need = [](double v, const char* what) {
    if (!(v > 0)) throw invalid_argument(std::string("GPU calibration: the measured ") + what + " is not positive");
  };
  need(c.capacity_bytes, "memory capacity");
  need(c.bf16_flops, "bf16 GEMM rate");
  need(c.fp32_flops, "fp32 GEMM rate");
  need(c.copy_bandwidth, "copy bandwidth");
  need(c.launch_seconds, "launch cost");
  const device& links = gpus::find(links_from);
  device_file f;
  f.name = c.name.empty() ? std::string("gpu") : c.name;
  f.spec.memory_gib = c.capacity_bytes / gib;
  f.spec.bf16_tflops = c.bf16_flops / 1e12;
  f.spec.fp32_tflops = c.fp32_flops / 1e12;
  f.spec.hbm_gbs = c.copy_bandwidth / 1e9;
  f.spec.nvlink_gbs = c.all_reduce_busbw > 0 ? c.all_reduce_busbw / 1e9 : links.nvlink.bw.value / 1e9;
  f.spec.network_gbs = links.network.bw.value / 1e9;
  f.launch_us = c.launch_seconds * 1e6;
  f.measured = {"memory-gib", "bf16-tflops", "fp32-tflops", "hbm-gbs", "launch-us"};
  if (c.all_reduce_busbw > 0) f.measured.push_back("nvlink-gbs");
  return f;
}

}  // namespace tensoropt
