// runtime/calibrate.hpp: the cpu calibration measures positive figures, its cache
// round-trips, and a corrupt or foreign cache is ignored (with a message) and
// re-measured. Tiny sizes keep it fast.
#include <doctest/doctest.h>
#include <tensoropt/runtime/calibrate.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace runtime_calibrate_test_file {

namespace rt = tensoropt::runtime;
namespace fs = std::filesystem;

namespace {
rt::calibrate_options tiny(const std::string& path, std::ostream* log) {
  rt::calibrate_options o;
  o.cache_path = path;
  o.gemm_sizes = {16, 32};
  o.stream_floats = 1 << 12;
  o.seconds_per_test = 0.002;
  o.log = log;
  return o;
}
std::string temp_path(const char* name) {
  const auto dir = fs::temp_directory_path() / ("tensoropt_calibrate_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}
}  // namespace

TEST_CASE("calibration: positive figures and a device the cost model accepts") {
  const auto c = rt::measure_cpu(tiny("", nullptr));
  CHECK(c.gemm_flops > 0);
  CHECK(c.bandwidth > 0);
  CHECK(c.launch_seconds > 0);
  CHECK(c.local_latency > 0);
  CHECK_FALSE(c.from_cache);
  const auto d = c.to_device();
  CHECK(d.name == "cpu");
  CHECK(d.peak_fp32.value == doctest::Approx(c.gemm_flops));
  CHECK(d.memory_bw.value == doctest::Approx(c.bandwidth));
  CHECK(d.launch_overhead.value == doctest::Approx(c.launch_seconds));
  CHECK(d.nvlink.latency.value == doctest::Approx(c.local_latency));
}

TEST_CASE("calibration: the cache round-trips and is reused") {
  const auto path = temp_path("round_trip.json");
  fs::remove(path);
  std::ostringstream log;
  const auto first = rt::calibrate_cpu(tiny(path, &log));
  CHECK_FALSE(first.from_cache);
  REQUIRE(fs::exists(path));
  const auto second = rt::calibrate_cpu(tiny(path, &log));
  CHECK(second.from_cache);
  CHECK(second.gemm_flops == first.gemm_flops);
  CHECK(second.bandwidth == first.bandwidth);
  CHECK(second.launch_seconds == first.launch_seconds);
  CHECK(second.local_latency == first.local_latency);
  CHECK(second.host == first.host);
  CHECK(second.cpu_model == first.cpu_model);
  CHECK(log.str().empty());
  fs::remove(path);
}

TEST_CASE("calibration: a corrupt, non-positive or foreign cache is re-measured with a message") {
  const auto path = temp_path("corrupt.json");
  const auto good = rt::calibrate_cpu(tiny(path, nullptr));
  const std::string bodies[] = {
      "{\"host\": \"x\", \"gemm_fl",  // truncated
      "{\"host\": \"" + good.host + "\", \"cpu_model\": \"" + good.cpu_model +
          "\", \"gemm_flops\": -1, \"bandwidth\": 1, \"launch_seconds\": 1, \"local_latency\": 1}",
      "{\"host\": \"another-host\", \"cpu_model\": \"" + good.cpu_model +
          "\", \"gemm_flops\": 1, \"bandwidth\": 1, \"launch_seconds\": 1, \"local_latency\": 1}"};
  for (const auto& body : bodies) {
    CAPTURE(body);
    {
      std::ofstream(path, std::ios::trunc) << body;
    }
    std::ostringstream log;
    const auto c = rt::calibrate_cpu(tiny(path, &log));
    CHECK_FALSE(c.from_cache);
    CHECK(c.gemm_flops > 0);
    CHECK(log.str().find("ignoring the calibration cache") != std::string::npos);
    // re-measured and rewritten: the next call reads it back
    CHECK(rt::calibrate_cpu(tiny(path, &log)).from_cache);
  }
  fs::remove_all(fs::path(path).parent_path());
}
}  // namespace runtime_calibrate_test_file
