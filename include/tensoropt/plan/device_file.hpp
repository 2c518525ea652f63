// Device preset files (`tensoropt-device/2`, and `/1` without a GEMM table): a
// device's figures as JSON, written by the GPU calibration (bench/gpu_calibrate)
// from what it measured on a machine and read by `tensoropt-plan --gpu-file FILE`,
// so the planner plans with the achieved figures of the machine it will run on
// instead of the vendor's peaks.
//
//   {"format": "tensoropt-device/2",
//    "name": "NVIDIA H200",
//    "device": {"memory-gib": 139.8, "bf16-tflops": 702.1, "fp32-tflops": 50.3,
//               "hbm-gbs": 4012, "nvlink-gbs": 360, "network-gbs": 50},
//    "launch-us": 2.6,
//    "gemm-shapes": [{"dtype": "bf16", "m": 8192, "n": 8192, "k": 256, "tflops": 512.3}, ...],
//    "measured": ["memory-gib", "bf16-tflops", "fp32-tflops", "hbm-gbs", "launch-us", "gemm-shapes"]}
//
// "device" is the device spec's reflected JSON form (cost/device_spec.hpp, the keys
// of `--gpu gpu:...`), read by the same field table: the same keys, ranges and
// messages. "measured" lists the figures that were measured (the others, e.g. the
// links on a one-GPU machine, came from a preset); it is informational.
//
// "gemm-shapes" (format 2, optional) is measured GEMM throughput by shape: rows of
// dtype (bf16 or fp32), m, n, k (C = A B, m x k times k x n) and the achieved
// TFLOP/s, at most the device's peak of that dtype, one row per dtype and k. The
// cost model then charges a linear's GEMMs by that table (cost/gemm_table.hpp: the
// factor of each row reproduces its measured time; interpolated in log k). Without
// it the fitted K / (K + K0) applies. The writer tags a file 2 only when it has a
// table, so files without one still read in readers of format 1.
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
// non-numeric, zero or negative figure, a GEMM row that is malformed, repeated or
// above the peak) are refused with one format_error line that names the file and
// the field ("device.bf16-tflops", "gemm-shapes[3].k").
#pragma once
#include <algorithm>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>
#include "../core/error.hpp"
#include "../core/input_file.hpp"
#include "../core/reflect_json.hpp"
#include "../cost/device.hpp"
#include "../cost/device_spec.hpp"
#include "../cost/gemm_table.hpp"
#include "../runtime/gpu_calibration.hpp"
#include "../search/json_read.hpp"

namespace tensoropt {

inline constexpr const char* device_file_format = "tensoropt-device/2";
/// The format of files without a GEMM table (read, and written when there is none).
inline constexpr const char* device_file_format_1 = "tensoropt-device/1";

/// The content of a device preset file.
struct device_file {
  std::string name;                   ///< e.g. the GPU's product name
  device_spec spec;                   ///< memory, FLOP rates, bandwidths
  double launch_us = 4;               ///< per-kernel overhead, microseconds
  std::vector<gemm_rate> gemm_shapes;  ///< measured GEMM throughput by shape (may be empty)
  std::vector<std::string> measured;  ///< which figures were measured
  friend bool operator==(const device_file&, const device_file&) = default;
};

/// The JSON text of `f` (what read_device_json reads back): format 2 when it has
/// GEMM shapes, 1 otherwise.
inline std::string device_json(const device_file& f) {
  nlohmann::json j;
  j["format"] = f.gemm_shapes.empty() ? device_file_format_1 : device_file_format;
  j["name"] = f.name;
  j["device"] = to_json(f.spec);
  j["launch-us"] = f.launch_us;
  if (!f.gemm_shapes.empty()) {
    auto& rows = j["gemm-shapes"] = nlohmann::json::array();
    for (const auto& r : f.gemm_shapes)
      rows.push_back({{"dtype", name_of(r.type)}, {"m", r.m}, {"n", r.n}, {"k", r.k}, {"tflops", r.flops / 1e12}});
  }
  j["measured"] = f.measured;
  return j.dump(2) + "\n";
}

namespace detail {
/// A positive whole number of at most 2^31 (a GEMM size).
inline std::int64_t json_gemm_size(const nlohmann::json& v, const std::string& at) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > (std::int64_t(1) << 31))
    throw format_error(at + ": expected a whole number in [1, 2^31], got " + json_echo(v));
  return v.get<std::int64_t>();
}

/// The "gemm-shapes" rows; `spec` gives each dtype's peak (the rows' upper bound).
inline std::vector<gemm_rate> read_gemm_shapes(const nlohmann::json& v, const device_spec& spec) {
  std::vector<gemm_rate> rows;
  const auto& a = json_array(v, "gemm-shapes");
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto at = "gemm-shapes[" + std::to_string(i) + "]";
    if (!a[i].is_object())
      throw format_error(at + ": expected an object {dtype, m, n, k, tflops}, got " + json_echo(a[i]));
    for (auto it = a[i].begin(); it != a[i].end(); ++it)
      if (it.key() != "dtype" && it.key() != "m" && it.key() != "n" && it.key() != "k" && it.key() != "tflops")
        throw format_error(at + ": unknown field '" + cut_short(it.key()) + "'; valid: dtype, m, n, k, tflops");
    gemm_rate r;
    const auto t = json_string(json_field(a[i], "dtype", at), at + ".dtype");
    if (t != "bf16" && t != "fp32")
      throw format_error(at + ".dtype: expected \"bf16\" or \"fp32\", got " + json_echo(a[i]["dtype"]));
    r.type = t == "bf16" ? dtype::bf16 : dtype::fp32;
    r.m = json_gemm_size(json_field(a[i], "m", at), at + ".m");
    r.n = json_gemm_size(json_field(a[i], "n", at), at + ".n");
    r.k = json_gemm_size(json_field(a[i], "k", at), at + ".k");
    const auto& tf = json_field(a[i], "tflops", at);
    const double peak = r.type == dtype::bf16 ? spec.bf16_tflops : spec.fp32_tflops;
    if (!tf.is_number() || !(tf.get<double>() > 0))
      throw format_error(at + ".tflops: expected a positive number of TFLOP/s, got " + json_echo(tf));
    if (tf.get<double>() > peak * (1 + 1e-12))
      throw format_error(at + ".tflops: " + json_echo(tf) + " exceeds device." + t + "-tflops (" +
                         (std::ostringstream() << peak).str() + "): the peak is the best rate measured; raise it or "
                         "lower the row");
    r.flops = tf.get<double>() * 1e12;
    for (std::size_t p = 0; p < rows.size(); ++p)
      if (rows[p].type == r.type && rows[p].k == r.k)
        throw format_error(at + ": a second " + t + " row with k = " + std::to_string(r.k) + " (gemm-shapes[" +
                           std::to_string(p) + "]); the cost model takes one shape per dtype and k");
    rows.push_back(r);
  }
  return rows;
}
}  // namespace detail

/// Parses the text of a device preset file. Throws format_error naming the field.
inline device_file read_device_json(std::string_view text) {
  using namespace detail;  // the json_read helpers
  const auto j = parse_json_text(text, "device file");
  if (!j.is_object()) throw format_error(std::string("expected a JSON object (") + device_file_format + ")");
  device_file f;
  const auto& tag = json_field(j, "format", "");
  const bool v2 = tag.is_string() && tag.get<std::string>() == device_file_format;
  if (!v2 && !(tag.is_string() && tag.get<std::string>() == device_file_format_1))
    throw format_error("format: expected \"" + std::string(device_file_format_1) + "\" or \"" + device_file_format +
                       "\", got " + json_echo(tag));
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "format" && it.key() != "name" && it.key() != "device" && it.key() != "launch-us" &&
        it.key() != "measured" && it.key() != "gemm-shapes")
      throw format_error("unknown field '" + cut_short(it.key()) +
                         "'; valid: format, name, device, launch-us, gemm-shapes, measured");
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
  if (auto g = j.find("gemm-shapes"); g != j.end()) {
    if (!v2)
      throw format_error("gemm-shapes: needs format \"" + std::string(device_file_format) + "\"; this file says \"" +
                         device_file_format_1 + "\"");
    f.gemm_shapes = read_gemm_shapes(*g, f.spec);
  }
  if (auto m = j.find("measured"); m != j.end()) {
    const auto& a = json_array(*m, "measured");
    for (std::size_t i = 0; i < a.size(); ++i) {
      const auto at = "measured[" + std::to_string(i) + "]";
      auto s = json_string(a[i], at);
      bool known = s == "launch-us" || s == "gemm-shapes";
      for_each_field<device_spec>([&](const auto& fd) { known = known || fd.name == s; });
      if (!known) throw format_error(at + ": unknown figure " + json_echo(a[i]) + "; valid: " +
                                     field_names<device_spec>() + ", launch-us, gemm-shapes");
      f.measured.push_back(std::move(s));
    }
  }
  return f;
}

/// Reads the device preset file at `path`; throws format_error naming the file.
inline device_file load_device_file(const std::string& path) {
  std::string why;
  const auto text = read_input_file(path, why);
  if (!text) throw format_error("cannot open the device file '" + path + "' (" + why + ")");
  try {
    return read_device_json(*text);
  } catch (const format_error& e) {
    throw format_error("device file '" + path + "': " + e.what());
  }
}

namespace detail {
/// Keeps a value alive for the program's life (a device holds views / pointers:
/// its name, its GEMM table); equal values share one copy.
template <class T>
const T& keep_for_program(const T& v) {
  static std::mutex mu;
  static std::deque<T> kept;
  std::lock_guard lk(mu);
  for (const auto& k : kept)
    if (k == v) return k;
  return kept.emplace_back(v);
}
}  // namespace detail

/// The cost model's device of `f` (see the file comment for the efficiencies and
/// the GEMM table).
inline device device_of(const device_file& f) {
  device d = make_device(f.spec, detail::keep_for_program(f.name));
  d.gemm_max_efficiency = 1;
  d.memory_efficiency = 1;
  d.launch_overhead = seconds(f.launch_us * 1e-6);
  if (!f.gemm_shapes.empty()) d.gemm_measured = &detail::keep_for_program(make_gemm_table(f.gemm_shapes, d));
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
  for (const auto& g : c.shape_table) {
    if (g.dtype != "bf16" && g.dtype != "fp32")
      throw invalid_argument("GPU calibration: a GEMM table row of dtype '" + g.dtype + "' (bf16 or fp32 only)");
    need(g.flops, "GEMM table rate");
    f.gemm_shapes.push_back({g.dtype == "bf16" ? dtype::bf16 : dtype::fp32, g.m, g.n, g.k, g.flops});
    // the peak of each dtype is the best rate measured, table rows included
    double& peak = g.dtype == "bf16" ? f.spec.bf16_tflops : f.spec.fp32_tflops;
    peak = std::max(peak, g.flops / 1e12);
  }
  if (!f.gemm_shapes.empty()) f.measured.push_back("gemm-shapes");
  return f;
}

}  // namespace tensoropt
