// Device preset files (tensoropt-device/1): round trip, the planner plans with the
// file's figures (a faster GEMM rate gives a faster plan, a smaller memory a
// refusal), and bad files give one line naming the field.
#include <doctest/doctest.h>
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/cli.hpp>
#include <tensoropt/plan/device_file.hpp>
#include <tensoropt/plan/planner.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

using namespace tensoropt;

namespace {
device_file sample() {
  device_file f;
  f.name = "test-gpu";
  f.spec = {.memory_gib = 80, .bf16_tflops = 700, .fp32_tflops = 50, .hbm_gbs = 3000, .nvlink_gbs = 300,
            .network_gbs = 40};
  f.launch_us = 2.5;
  f.measured = {"memory-gib", "bf16-tflops", "fp32-tflops", "hbm-gbs", "launch-us"};
  return f;
}
std::string refusal(const std::string& text) {
  try {
    read_device_json(text);
  } catch (const format_error& e) {
    const std::string m = e.what();
    CHECK(m.find('\n') == std::string::npos);
    return m;
  }
  return "accepted";
}
/// The JSON of sample() with `edit` applied to it.
template <class F>
std::string edited(F edit) {
  auto j = nlohmann::json::parse(device_json(sample()));
  edit(j);
  return j.dump();
}
double fastest_time(const device& d) {
  constexpr models::gpt_config c{.layers = 2, .hidden = 256, .heads = 4, .seq = 128, .vocab = 512, .batch = 8,
                                 .dropout = 0.0};
  planner_options o;
  o.micro_batches = {1};
  o.baselines = false;
  const auto fr = plan_frontier(models::lower_transformer(c, models::transformer_kind::gpt),
                                cluster::nodes(1).gpus_per_node(2).gpu(d), o);
  REQUIRE(fr.fastest());
  return fr.fastest()->time().value;
}
}  // namespace

TEST_CASE("device file: write, read back, device") {
  const auto f = sample();
  const std::string text = device_json(f);
  CHECK(text.find("\"format\": \"tensoropt-device/1\"") != std::string::npos);
  CHECK(text.find("\"bf16-tflops\": 700") != std::string::npos);
  CHECK(read_device_json(text) == f);
  const auto path = (std::filesystem::temp_directory_path() / "tensoropt_device_file_test.json").string();
  { std::ofstream(path) << text; }
  CHECK(load_device_file(path) == f);
  std::remove(path.c_str());
  const device d = device_of(f);
  CHECK(d.name == "test-gpu");
  CHECK(d.peak_half.value == doctest::Approx(700e12));
  CHECK(d.peak_fp32.value == doctest::Approx(50e12));
  CHECK(d.memory_bw.value == doctest::Approx(3000e9));
  CHECK(d.capacity.value == doctest::Approx(80.0 * gib));
  CHECK(d.launch_overhead.value * 1e6 == doctest::Approx(2.5));
  CHECK(d.nvlink.bw.value == doctest::Approx(300e9));
  CHECK(d.gemm_max_efficiency == 1);
  CHECK(d.memory_efficiency == 1);
  // "measured" is optional
  CHECK(read_device_json(edited([](auto& j) { j.erase("measured"); })).measured.empty());
}

TEST_CASE("device file: the planner plans with the file's figures") {
  auto slow = sample(), fast = sample();
  fast.spec.bf16_tflops *= 4;
  fast.spec.fp32_tflops *= 4;
  const double t_slow = fastest_time(device_of(read_device_json(device_json(slow))));
  const double t_fast = fastest_time(device_of(read_device_json(device_json(fast))));
  CAPTURE(t_slow);
  CAPTURE(t_fast);
  CHECK(t_fast < t_slow);
  auto slow_launch = sample();
  slow_launch.launch_us = 500;
  CHECK(fastest_time(device_of(slow_launch)) > t_slow);
}

TEST_CASE("device file: bad files are one line naming the field") {
  CHECK(refusal(edited([](auto& j) { j["device"].erase("bf16-tflops"); })).find("bf16-tflops") != std::string::npos);
  CHECK(refusal(edited([](auto& j) { j["device"]["hbm-gbs"] = -5; })).find("device.hbm-gbs") != std::string::npos);
  CHECK(refusal(edited([](auto& j) { j["device"]["memory-gib"] = 0; })).find("device.memory-gib") !=
        std::string::npos);
  CHECK(refusal(edited([](auto& j) { j["device"]["fp32-tflops"] = "fast"; })).find("device.fp32-tflops") !=
        std::string::npos);
  CHECK(refusal(edited([](auto& j) { j["device"]["tdp"] = 700; })).find("tdp") != std::string::npos);
  CHECK(refusal(edited([](auto& j) { j["format"] = "tensoropt-plan/1"; })).find("format: expected \"tensoropt-device/1\"") !=
        std::string::npos);
  CHECK(refusal(edited([](auto& j) { j.erase("format"); })).find("format: missing field") != std::string::npos);
  CHECK(refusal(edited([](auto& j) { j["launch-us"] = -1; })).find("launch-us") != std::string::npos);
  CHECK(refusal(edited([](auto& j) { j.erase("launch-us"); })).find("launch-us: missing field") != std::string::npos);
  CHECK(refusal(edited([](auto& j) { j.erase("name"); })).find("name: missing field") != std::string::npos);
  CHECK(refusal(edited([](auto& j) { j["name"] = "a\nb"; })).find("name: a control character (code 10)") !=
        std::string::npos);
  CHECK(refusal(edited([](auto& j) { j["name"] = ""; })).find("name: expected 1 to 200 characters") !=
        std::string::npos);
  CHECK(refusal(edited([](auto& j) { j["measured"] = {"speed"}; })).find("measured[0]") != std::string::npos);
  CHECK(refusal(edited([](auto& j) { j["extra"] = 1; })).find("unknown field 'extra'") != std::string::npos);
  std::string nul = device_json(sample());
  nul[10] = '\0';
  CHECK(refusal(nul).find("NUL byte at byte 10") != std::string::npos);
  CHECK(refusal("[1, 2]").find("expected a JSON object") != std::string::npos);
  CHECK(refusal("{\"format\": ").find("not valid JSON") != std::string::npos);
  try {
    load_device_file("/nonexistent/device.json");
    FAIL("accepted a missing file");
  } catch (const format_error& e) {
    CHECK(std::string(e.what()).find("cannot open the device file '/nonexistent/device.json'") != std::string::npos);
  }
}

TEST_CASE("device file: --gpu-file on the command line") {
  const char* both[] = {"tensoropt-plan", "--gpu", "a100-80gb", "--gpu-file", "x.json"};
  CHECK_THROWS_WITH_AS(parse_plan_cli(5, both), doctest::Contains("--gpu and --gpu-file"), invalid_argument);
  const char* solve[] = {"tensoropt-plan", "--solve", "p.json", "--gpu-file", "x.json"};
  CHECK_THROWS_WITH_AS(parse_plan_cli(5, solve), doctest::Contains("--gpu-file does not apply to --solve"),
                       invalid_argument);
  const char* ok[] = {"tensoropt-plan", "--gpu-file", "x.json"};
  CHECK(parse_plan_cli(3, ok).gpu_file == "x.json");
}

TEST_CASE("device file of a GPU calibration") {
  runtime::gpu_calibration c;
  c.name = "NVIDIA Test";
  c.gpus = 1;
  c.capacity_bytes = 96.0 * gib;
  c.bf16_flops = 600e12;
  c.fp32_flops = 45e12;
  c.copy_bandwidth = 3.2e12;
  c.launch_seconds = 3e-6;
  auto f = to_device_file(c, "a100-80gb");
  CHECK(f.name == "NVIDIA Test");
  CHECK(f.spec.memory_gib == doctest::Approx(96));
  CHECK(f.spec.bf16_tflops == doctest::Approx(600));
  CHECK(f.spec.fp32_tflops == doctest::Approx(45));
  CHECK(f.spec.hbm_gbs == doctest::Approx(3200));
  CHECK(f.launch_us == doctest::Approx(3));
  // one GPU: the links are the preset's, and not listed as measured
  CHECK(f.spec.nvlink_gbs == doctest::Approx(gpus::a100_80gb.nvlink.bw.value / 1e9));
  CHECK(f.spec.network_gbs == doctest::Approx(gpus::a100_80gb.network.bw.value / 1e9));
  CHECK(std::find(f.measured.begin(), f.measured.end(), "nvlink-gbs") == f.measured.end());
  CHECK(read_device_json(device_json(f)) == f);
  c.all_reduce_busbw = 350e9;
  f = to_device_file(c, "a100-80gb");
  CHECK(f.spec.nvlink_gbs == doctest::Approx(350));
  CHECK(std::find(f.measured.begin(), f.measured.end(), "nvlink-gbs") != f.measured.end());
  CHECK(read_device_json(device_json(f)) == f);
  c.copy_bandwidth = 0;
  CHECK_THROWS_WITH_AS(to_device_file(c), doctest::Contains("copy bandwidth is not positive"), invalid_argument);
  c.copy_bandwidth = 1e12;
  CHECK_THROWS_WITH_AS(to_device_file(c, "tpu-v4"), doctest::Contains("unknown GPU 'tpu-v4'"), invalid_argument);
}

TEST_CASE("GPU calibration without the CUDA target") {
  // this program is not linked with tensoropt::cuda: no measurement is registered
  CHECK_FALSE(runtime::has_gpu_calibrator());
  runtime::gpu_calibration c;
  std::string why;
  CHECK_THROWS_WITH_AS(runtime::calibrate_gpu({}, c, why), doctest::Contains("link it with the tensoropt::cuda"),
                       invalid_argument);
  // a registered measurement is what calibrate_gpu calls
  runtime::register_gpu_calibrator([](const runtime::gpu_calibrate_options&, runtime::gpu_calibration& out,
                                      std::string& w) {
    out.name = "fake";
    w = "no device";
    return false;
  });
  CHECK(runtime::has_gpu_calibrator());
  CHECK_FALSE(runtime::calibrate_gpu({}, c, why));
  CHECK(why == "no device");
  CHECK(c.name == "fake");
}
