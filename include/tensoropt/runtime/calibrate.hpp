// Calibration of the `cpu` device: achieved GEMM FLOP/s, streaming bandwidth and a
// per-kernel fixed cost measured on this machine, cached to a file.
//
// The cost model's `gpus::cpu` preset is a guess (100 GFLOP/s, 20 GB/s). calibrate()
// measures, on one thread (the runtime runs one BLAS thread per device):
//  - GEMM: cblas_sgemm on square sizes (default 64, 128, 256), the best rate of
//    repeated calls over each size, averaged over the sizes (the runtime's GEMMs
//    are small: a 64-hidden GPT multiplies 256 x 64 x 64 matrices);
//  - bandwidth: a triad a[i] = b[i] + s * c[i] over arrays larger than the caches,
//    counting 3 x 4 bytes per element (the best of a few passes);
//  - launch: the fixed cost of one kernel call in the runtime (a counted buffer
//    allocation plus a 4 x 4 x 4 GEMM), which the cost model charges per kernel;
//  - local latency: half the round trip of a one-float message between two
//    local_world devices (the intra-node link's latency; its bandwidth is taken
//    as half the streaming bandwidth: a message is copied in and out).
// The figures are cached as JSON at $XDG_CACHE_HOME/tensoropt/cpu-calibration.json
// (else ~/.cache/...), keyed by host name and CPU model, written atomically
// (temporary file + rename). A cache that does not parse, has non-positive figures
// or is for another host is ignored with a message and re-measured.
#pragma once
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include "../core/output_file.hpp"
#include "../cost/device.hpp"
#include "comm.hpp"
#include "cpu_backend.hpp"

namespace tensoropt::runtime {

/// Measured figures of this CPU (one thread).
struct cpu_calibration {
  std::string host, cpu_model;
  double gemm_flops = 0;      ///< achieved sgemm FLOP/s
  double bandwidth = 0;       ///< achieved streaming bytes/s (triad)
  double launch_seconds = 0;  ///< fixed cost per kernel call
  double local_latency = 0;   ///< one message between two local_world devices (half a round trip)
  bool from_cache = false;    ///< loaded rather than measured

  /// The cost model's device: device::calibrated("cpu", ...) with these figures.
  /// The intra-node link is a local_world mailbox: a message is copied in and out
  /// (half the streaming bandwidth) after the measured hand-over latency.
  device to_device(bytes capacity = bytes(16 * gib)) const {
    return device::calibrated("cpu", flop_rate(gemm_flops), tensoropt::bandwidth(bandwidth), capacity,
                              seconds(launch_seconds), link{tensoropt::bandwidth(bandwidth / 2), seconds(local_latency)});
  }
};

struct calibrate_options {
  std::string cache_path;                  ///< empty: the default path (see default_cache_path)
  bool use_cache = true;                   ///< read and write the cache
  std::vector<int> gemm_sizes{64, 128, 256};
  std::size_t stream_floats = std::size_t(1) << 23;  ///< per triad array (32 MiB)
  double seconds_per_test = 0.05;          ///< time budget of each measurement
  std::ostream* log = &std::cerr;          ///< messages about the cache (null: quiet)
};

namespace detail {
inline std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) {
        auto v = line.substr(p + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  return "unknown cpu";
}
inline std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}
template <class F>
double best_seconds(double budget, F&& f) {
  using clock = std::chrono::steady_clock;
  double best = 1e30, spent = 0;
  for (int i = 0; i < 3 || spent < budget; ++i) {
    const auto t0 = clock::now();
    f();
    const double dt = std::chrono::duration<double>(clock::now() - t0).count();
    best = std::min(best, dt);
    spent += dt;
    if (i > 10000) break;
  }
  return best;
}
}  // namespace detail

/// $XDG_CACHE_HOME/tensoropt/cpu-calibration.json, else $HOME/.cache/..., else
/// the temporary directory.
inline std::string default_cache_path() {
  namespace fs = std::filesystem;
  fs::path base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = fs::path(h) / ".cache";
  else base = fs::temp_directory_path();
  return (base / "tensoropt" / "cpu-calibration.json").string();
}

/// Measures this CPU now (no cache).
inline cpu_calibration measure_cpu(const calibrate_options& o = {}) {
  single_threaded_blas();
  cpu_calibration c;
  c.host = detail::host_name();
  c.cpu_model = detail::cpu_model_name();
  double rate_sum = 0;
  for (int n : o.gemm_sizes) {
    std::vector<float> a(std::size_t(n) * n, 0.5f), b(a), out(a.size());
    const double t = detail::best_seconds(o.seconds_per_test / double(o.gemm_sizes.size()), [&] {
      gemm(false, false, n, n, n, 1.f, a.data(), b.data(), 0.f, out.data());
    });
    rate_sum += 2.0 * n * n * n / t;
  }
  c.gemm_flops = rate_sum / double(o.gemm_sizes.size());
  {
    std::vector<float> a(o.stream_floats), b(o.stream_floats, 1.f), d(o.stream_floats, 2.f);
    const double t = detail::best_seconds(o.seconds_per_test, [&] {
      float* __restrict pa = a.data();
      const float* __restrict pb = b.data();
      const float* __restrict pd = d.data();
      for (std::size_t i = 0; i < a.size(); ++i) pa[i] = pb[i] + 0.5f * pd[i];
    });
    c.bandwidth = 3.0 * sizeof(float) * double(o.stream_floats) / t;
    if (a[a.size() / 2] != 2.f) c.bandwidth = 0;  // keeps the loop observable
  }
  {
    cpu_backend be;
    float x[16] = {}, y[16] = {};
    constexpr int calls = 200;
    const double t = detail::best_seconds(o.seconds_per_test / 4, [&] {
      for (int i = 0; i < calls; ++i) {
        buffer z = be.allocate(16);
        gemm(false, false, 4, 4, 4, 1.f, x, y, 0.f, z.data());
      }
    });
    c.launch_seconds = std::max(t / calls, 1e-9);
  }
  {
    local_world w(2);
    constexpr int rounds = 200;
    double t = 0;
    w.run([&](communicator& cm) {
      float v[1] = {0};
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < rounds; ++i) {
        if (cm.rank() == 0) {
          cm.send(1, v, i);
          cm.recv(1, v, i, "calibrate");
        } else {
          cm.recv(0, v, i, "calibrate");
          cm.send(0, v, i);
        }
      }
      if (cm.rank() == 0) t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
    c.local_latency = std::max(t / (2.0 * rounds), 1e-9);
  }
  return c;
}

/// Reads a cache file; returns false (with a message on `log`) when it is missing,
/// does not parse, has non-positive figures or is for another host or CPU.
inline bool read_calibration(const std::string& path, cpu_calibration& out, std::ostream* log) {
  namespace fs = std::filesystem;
  if (!fs::exists(path)) return false;
  auto say = [&](const std::string& why) {
    if (log) *log << "tensoropt: ignoring the calibration cache '" << path << "' (" << why << "); re-measuring\n";
    return false;
  };
  try {
    std::ifstream in(path);
    const auto j = nlohmann::json::parse(in);
    cpu_calibration c;
    c.host = j.at("host").get<std::string>();
    c.cpu_model = j.at("cpu_model").get<std::string>();
    c.gemm_flops = j.at("gemm_flops").get<double>();
    c.bandwidth = j.at("bandwidth").get<double>();
    c.launch_seconds = j.at("launch_seconds").get<double>();
    c.local_latency = j.at("local_latency").get<double>();
    if (!(c.gemm_flops > 0 && c.bandwidth > 0 && c.launch_seconds > 0 && c.local_latency > 0)) return say("non-positive figures");
    if (c.host != detail::host_name() || c.cpu_model != detail::cpu_model_name())
      return say("measured on " + c.host + " / " + c.cpu_model);
    c.from_cache = true;
    out = c;
    return true;
  } catch (const std::exception& e) {
    return say(std::string("corrupt: ") + e.what());
  }
}

/// Writes `c` to `path` atomically (see output_file); throws runtime_error
/// naming the path when it cannot.
inline void write_calibration(const std::string& path, const cpu_calibration& c) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  const std::string text = nlohmann::json{{"host", c.host},
                                          {"cpu_model", c.cpu_model},
                                          {"gemm_flops", c.gemm_flops},
                                          {"bandwidth", c.bandwidth},
                                          {"launch_seconds", c.launch_seconds},
                                          {"local_latency", c.local_latency}}
                               .dump(2) + "\n";
  try {
    write_output_file(path, text, "calibration cache");
  } catch (const error& e) {
    throw runtime_error(e.what());
  }
}

/// The calibration of this CPU: from the cache when it holds a valid one for this
/// host and CPU, else measured (and cached; a cache that cannot be written is
/// reported on `log` and the measurement is still returned).
inline cpu_calibration calibrate_cpu(const calibrate_options& o = {}) {
  const std::string path = o.cache_path.empty() ? default_cache_path() : o.cache_path;
  cpu_calibration c;
  if (o.use_cache && read_calibration(path, c, o.log)) return c;
  c = measure_cpu(o);
  if (o.use_cache) try {
      write_calibration(path, c);
    } catch (const std::exception& e) {
      if (o.log) *o.log << "tensoropt: " << e.what() << "\n";
    }
  return c;
}

}  // namespace tensoropt::runtime
