// Device preset files (tensoropt-device/1 and /2): round trip, the planner plans
// with the file's figures (a faster GEMM rate gives a faster plan, a smaller memory
// a refusal), a GEMM table changes a linear's time as cost/gemm_table.hpp's formula
// says, and bad files give one line naming the field.
#include <doctest/doctest.h>
#include <tensoropt/cost/op_cost.hpp>
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/cli.hpp>
#include <tensoropt/plan/device_file.hpp>
#include <tensoropt/plan/planner.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include "cost_test_graphs.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_device_file_test_file {

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
/// sample() with a GEMM table: bf16 at m = n = 8192, k 512 / 2048 / 8192, and one fp32 row.
device_file sample_with_table() {
  device_file f = sample();
  f.gemm_shapes = {{dtype::bf16, 8192, 8192, 2048, 600e12},
                   {dtype::bf16, 8192, 8192, 512, 400e12},
                   {dtype::bf16, 8192, 8192, 8192, 700e12},
                   {dtype::fp32, 8192, 8192, 1024, 40e12}};
  f.measured.push_back("gemm-shapes");
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
/// The JSON of `f` (sample()) with `edit` applied to it.
template <class F>
std::string edited(F edit, const device_file& f = sample()) {
  auto j = nlohmann::json::parse(device_json(f));
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
  CHECK(refusal(edited([](auto& j) {
          j["format"] = "tensoropt-plan/1";
        })).find("format: expected \"tensoropt-device/1\"") != std::string::npos);
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
  CHECK_THROWS_WITH_AS(load_device_file("/nonexistent/device.json"),
                       doctest::Contains("cannot open the device file '/nonexistent/device.json' (no such file)"),
                       format_error);
  // a folder opens as an empty stream: said as such, not as JSON that ends at byte 1
  CHECK_THROWS_WITH_AS(load_device_file("/"),
                       doctest::Contains("cannot open the device file '/' (it is a folder, not a file)"), format_error);
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

// A one-GPU calibration as the GPU tools measure it (no GEMM table).
runtime::gpu_calibration test_calibration() {
  runtime::gpu_calibration c;
  c.name = "NVIDIA Test";
  c.gpus = 1;
  c.capacity_bytes = 96.0 * gib;
  c.bf16_flops = 600e12;
  c.fp32_flops = 45e12;
  c.copy_bandwidth = 3.2e12;
  c.launch_seconds = 3e-6;
  return c;
}

TEST_CASE("device file of a GPU calibration") {
  auto c = test_calibration();
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

TEST_CASE("device file: a GEMM table is format 2; format 1 files still read") {
  const auto f = sample_with_table();
  const std::string text = device_json(f);
  CHECK(text.find("\"format\": \"tensoropt-device/2\"") != std::string::npos);
  CHECK(text.find("\"gemm-shapes\"") != std::string::npos);
  CHECK(read_device_json(text) == f);
  // no table: format 1, as before (older readers read it), and read here
  CHECK(device_json(sample()).find("\"format\": \"tensoropt-device/1\"") != std::string::npos);
  CHECK(read_device_json(device_json(sample())).gemm_shapes.empty());
  // a format 2 file without a table reads too
  CHECK(read_device_json(edited([](auto& j) { j["format"] = "tensoropt-device/2"; })) == sample());
  const device d = device_of(f);
  REQUIRE(d.gemm_measured != nullptr);
  CHECK(d.gemm_measured->of(dtype::bf16)->k == std::vector<double>{512, 2048, 8192});
  CHECK(d.gemm_measured->of(dtype::fp16) == d.gemm_measured->of(dtype::bf16));
  CHECK(d.gemm_measured->of(dtype::fp32)->k == std::vector<double>{1024});
  CHECK(device_of(sample()).gemm_measured == nullptr);
  CHECK(device_of(read_device_json(text)).gemm_measured == d.gemm_measured);  // one copy per distinct table
}

TEST_CASE("device file: a GEMM table sets a linear's factors and time as the formula says") {
  const device d = device_of(sample_with_table());
  // factor(K) = rate / (peak * f / (f + h)), f = 2 m n k, h = 5 us at the bf16 peak (E = 1)
  const double h = 700e12 * 5e-6;
  CHECK(d.gemm_half_flops == doctest::Approx(h));
  auto factor = [&](double rate, double peak, double k) {
    const double f = 2.0 * 8192 * 8192 * k;
    return rate / (peak * (f / (f + h)));
  };
  const double f512 = factor(400e12, 700e12, 512), f2048 = factor(600e12, 700e12, 2048),
               f8192 = factor(700e12, 700e12, 8192);
  // K: forward 1024, data gradient 4096, weight gradient 8192 (the tokens)
  const op_graph g = testing::mlp(8192, {1024, 4096});
  const auto s = shape_factors(g, g.ops[1], op_config{}, d);
  const double dgrad = (f2048 + f8192) / 2;  // 4096: half way between 2048 and 8192 in log k
  CHECK(s.forward == doctest::Approx((f512 + f2048) / 2).epsilon(1e-12));
  CHECK(s.backward == doctest::Approx(2 / (1 / dgrad + 1 / f8192)).epsilon(1e-12));
  // below the smallest k: the fitted K / (K + 157) scaled to meet it; above the largest: flat
  const op_graph small = testing::mlp(64, {1024, 4096}), large = testing::mlp(32768, {16384, 4096});
  const double w64 = f512 * (64.0 / (64 + 157)) / (512.0 / (512 + 157));
  CHECK(shape_factors(small, small.ops[1], op_config{}, d).backward ==
        doctest::Approx(2 / (1 / dgrad + 1 / w64)).epsilon(1e-12));
  CHECK(shape_factors(large, large.ops[1], op_config{}, d).forward == doctest::Approx(f8192).epsilon(1e-12));
  // fp32 GEMMs read the fp32 rows (one: flat above it)
  const double fp = factor(40e12, 50e12, 1024);
  CHECK(shape_factors(g, g.ops[1], op_config{}, d, dtype::fp32).forward == doctest::Approx(fp).epsilon(1e-12));
  CHECK(shape_factors(g, g.ops[1], op_config{}, d, dtype::fp32).backward == doctest::Approx(fp).epsilon(1e-12));
  // the measured shape itself is predicted at its measured rate: time = flops / rate
  const double f_meas = 2.0 * 8192 * 8192 * 2048;
  CHECK(f_meas / (700e12 * d.gemm_efficiency(f_meas) * f2048) == doctest::Approx(f_meas / 600e12).epsilon(1e-12));

  // the op's compute time: against the same device without table and K0 (factors 1),
  // each GEMM pass takes its FLOPs / (peak * efficiency(FLOPs)) times (1 / factor - 1) longer
  device flat = d;
  flat.gemm_measured = nullptr;
  flat.gemm_k0 = 0;
  const op_node& op = g.ops[1];
  double pts = 1;
  for (const auto& dim : op.dims) pts *= double(dim.extent);
  const double ff = op.fwd_flops_per_point * pts, bf = op.bwd_flops_per_point * pts;
  const double with_table = cost_op(g, 1, op_config{}, cluster(device_mesh(1, 1), d)).compute.value;
  const double without = cost_op(g, 1, op_config{}, cluster(device_mesh(1, 1), flat)).compute.value;
  const double expect = ff / (700e12 * d.gemm_efficiency(ff)) * (1 / s.forward - 1) +
                        bf / (700e12 * d.gemm_efficiency(bf)) * (1 / s.backward - 1);
  CAPTURE(with_table);
  CAPTURE(without);
  CHECK(with_table - without == doctest::Approx(expect).epsilon(1e-9));
  CHECK(with_table > without);
}

TEST_CASE("device file: bad GEMM tables are one line naming the row") {
  const auto t = sample_with_table();
  auto bad = [&](auto edit) { return refusal(edited(edit, t)); };
  CHECK(bad([](auto& j) {
          j["format"] = "tensoropt-device/1";
        }).find("gemm-shapes: needs format \"tensoropt-device/2\"") != std::string::npos);
  CHECK(bad([](auto& j) { j["gemm-shapes"] = 5; }).find("gemm-shapes: expected an array") != std::string::npos);
  CHECK(bad([](auto& j) { j["gemm-shapes"][0] = 5; }).find("gemm-shapes[0]: expected an object") != std::string::npos);
  CHECK(bad([](auto& j) { j["gemm-shapes"][1]["speed"] = 5; }).find("gemm-shapes[1]: unknown field 'speed'") !=
        std::string::npos);
  CHECK(bad([](auto& j) { j["gemm-shapes"][0]["dtype"] = "fp16"; })
            .find("gemm-shapes[0].dtype: expected \"bf16\" or \"fp32\", got \"fp16\"") != std::string::npos);
  CHECK(bad([](auto& j) { j["gemm-shapes"][2].erase("k"); }).find("gemm-shapes[2].k: missing field") !=
        std::string::npos);
  for (const nlohmann::json& v : {nlohmann::json(0), nlohmann::json(1.5), nlohmann::json("x"), nlohmann::json(-8)})
    CHECK(bad([&](auto& j) {
            j["gemm-shapes"][0]["m"] = v;
          }).find("gemm-shapes[0].m: expected a whole number in [1, 2^31]") != std::string::npos);
  CHECK(bad([](auto& j) { j["gemm-shapes"][3]["tflops"] = -1; }).find("gemm-shapes[3].tflops: expected a positive") !=
        std::string::npos);
  CHECK(bad([](auto& j) { j["gemm-shapes"][0]["tflops"] = 800; })
            .find("gemm-shapes[0].tflops: 800 exceeds device.bf16-tflops (700)") != std::string::npos);
  CHECK(bad([](auto& j) { j["gemm-shapes"][1]["k"] = 2048; })
            .find("gemm-shapes[1]: a second bf16 row with k = 2048 (gemm-shapes[0])") != std::string::npos);
  // the same k in the other dtype is another row
  CHECK_NOTHROW(read_device_json(edited([](auto& j) { j["gemm-shapes"][3]["k"] = 2048; }, t)));
  CHECK(refusal(edited([](auto& j) { j["format"] = "tensoropt-device/3"; }))
            .find("format: expected \"tensoropt-device/1\" or \"tensoropt-device/2\"") != std::string::npos);
}

TEST_CASE("device file of a GPU calibration with a GEMM table") {
  auto c = test_calibration();
  c.shape_table = {{"bf16", 8192, 8192, 256, 420e12}, {"bf16", 8192, 8192, 4096, 650e12},
                   {"fp32", 8192, 8192, 4096, 44e12}};
  const auto f = to_device_file(c, "a100-80gb");
  REQUIRE(f.gemm_shapes.size() == 3);
  CHECK(f.gemm_shapes[1] == gemm_rate{dtype::bf16, 8192, 8192, 4096, 650e12});
  CHECK(f.spec.bf16_tflops == doctest::Approx(650));  // the best rate measured, table rows included
  CHECK(f.spec.fp32_tflops == doctest::Approx(45));
  CHECK(std::find(f.measured.begin(), f.measured.end(), "gemm-shapes") != f.measured.end());
  CHECK(read_device_json(device_json(f)) == f);
  REQUIRE(device_of(f).gemm_measured != nullptr);
  c.shape_table.push_back({"fp16", 8192, 8192, 512, 1e12});
  CHECK_THROWS_WITH_AS(to_device_file(c), doctest::Contains("dtype 'fp16'"), invalid_argument);
}
}  // namespace plan_device_file_test_file
