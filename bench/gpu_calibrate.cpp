// gpu_calibrate: measures this machine's GPU (bf16 / fp32 GEMM rates over a few
// shapes and by contraction length, copy bandwidth, launch cost, memory, NCCL
// all-reduce bandwidth with >= 2 GPUs; runtime/gpu_calibration.hpp says how) and
// writes the device preset file (tensoropt-device/2, with the GEMM table) that
// `tensoropt-plan --gpu-file FILE` plans with.
//
//   gpu_calibrate --out FILE [--device N] [--seconds S] [--links-from PRESET]
//
// Prints every measured figure; exits 77 (skipped) without a GPU, 1 on an error.
#include <tensoropt/core/command_line.hpp>
#include <tensoropt/core/output_file.hpp>
#include <tensoropt/core/reflect.hpp>
#include <tensoropt/cost/device.hpp>
#include <tensoropt/plan/device_file.hpp>
#include <tensoropt/runtime/gpu_calibration.hpp>
#include <boost/hana/tuple.hpp>
#include <cstdio>
#include <string>

namespace to = tensoropt;
namespace rt = tensoropt::runtime;

struct calibrate_cli {
  std::string out;
  long device = 0;
  double seconds = 0.1;
  std::string links_from = "h100-80gb";
  bool help = false;
  to::given_flags given;
};

template <>
struct to::reflection<calibrate_cli> {
  using c = calibrate_cli;
  static constexpr auto fields = boost::hana::make_tuple(
      field("out", &c::out, "write the device preset file (tensoropt-device/2) here").meta("FILE"),
      field("device", &c::device, "CUDA device to measure").range(0, 1023).meta("N"),
      field("seconds", &c::seconds, "time budget of each measured figure").range_open_lo(0, 60).meta("S"),
      field("links-from", &c::links_from, "preset whose link figures are used when they are not measured "
                                          "(one GPU: no all-reduce)").meta("PRESET"),
      field("help", &c::help, "print this help"));
};

int main(int argc, char** argv) {
  try {
    calibrate_cli c;
    c.given = to::parse_command_line(argc, argv, c);
    if (c.help) {
      std::fputs(to::command_line_help<calibrate_cli>("gpu_calibrate --out FILE [options]",
                                                      "Measures this GPU and writes a device preset file for "
                                                      "tensoropt-plan --gpu-file.").c_str(), stdout);
      return 0;
    }
    if (c.out.empty()) throw to::invalid_argument("--out FILE is required: where to write the device preset file");
    to::gpus::find(c.links_from);  // an unknown preset is refused before measuring
    to::check_output_path(c.out, "device file");
    rt::gpu_calibrate_options o;
    o.device = int(c.device);
    o.seconds_per_test = c.seconds;
    o.links_from = c.links_from;
    rt::gpu_calibration cal;
    std::string why;
    if (!rt::calibrate_gpu(o, cal, why)) {
      std::printf("gpu_calibrate: skipped: %s\n", why.c_str());
      return 77;
    }
    std::printf("device %d of %d: %s, %.1f GiB\n", o.device, cal.gpus, cal.name.c_str(), cal.capacity_bytes / to::gib);
    for (const auto& g : cal.gemms)
      std::printf("  GEMM %-4s %5ld x %5ld x %5ld  %8.1f TFLOP/s\n", g.dtype.c_str(), g.m, g.n, g.k, g.flops / 1e12);
    for (const auto& g : cal.shape_table)
      std::printf("  GEMM table %-4s %5ld x %5ld x %5ld  %8.1f TFLOP/s\n", g.dtype.c_str(), g.m, g.n, g.k,
                  g.flops / 1e12);
    std::printf("  copy bandwidth        %8.1f GB/s (read + write)\n", cal.copy_bandwidth / 1e9);
    std::printf("  launch cost           %8.2f us per kernel\n", cal.launch_seconds * 1e6);
    if (cal.all_reduce_busbw > 0)
      std::printf("  all-reduce bus bw     %8.1f GB/s over %d GPUs\n", cal.all_reduce_busbw / 1e9, cal.gpus);
    else
      std::printf("  all-reduce            not measured (one GPU): links from %s\n", c.links_from.c_str());
    const auto f = to::to_device_file(cal, c.links_from);
    to::write_output_file(c.out, to::device_json(f), "device file");
    if (!to::detail::is_stdout_path(c.out) && !(to::load_device_file(c.out) == f))
      throw to::runtime_error("the device file " + c.out + " does not read back as written");
    std::printf("wrote %s: plan with tensoropt-plan --gpu-file %s\n", c.out.c_str(), c.out.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_calibrate: %s\n", e.what());
    return 1;
  }
}
