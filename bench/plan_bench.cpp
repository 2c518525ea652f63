// Planner benchmark: for every model of the zoo at its listed device count (and GPU,
// nodes x devices per node as listed), the whole planning time (problem building +
// search over every micro-batch count), the problem and frontier sizes, the search
// mode that ran and the epsilon, next to the planning times peers report.
//
//   plan_bench [--epsilon E] [--mode auto|exact|fast] [--threads N] [--only NAME[,NAME...]]
//              [--micro-batches K] [--no-check] [--no-job-bounds] [--progress]
//
// Threads default to every core (the micro-batch counts are solved on a pool); `cpu`
// is the process CPU time over all threads. The first line names the allocator (tcmalloc
// where the build linked it: wresnet-13b's planning 5-14 % faster than with glibc's
// malloc, the other workloads within what runs vary or faster). Only plans that fit the
// device are searched, as the planner does. Fast mode's restriction check (weighted-sum optima of
// the unrestricted problem) is part of the timed planning and printed under each line
// (--no-check leaves it out). Micro-batch counts bound each other as the planner does
// (--no-job-bounds searches each alone: the same frontier at epsilon 0, for comparison).
#include <tensoropt/tensoropt.hpp>
#include "bench_cli.hpp"
#include <tensoropt/plan/planner.hpp>
#include <dlfcn.h>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace to = tensoropt;

namespace {
// Published planning times for the same workload (whole planning, one plan each).
const char* peers(std::string_view model) {
  if (model == "gpt3-1.3b") return "Aceso 99 s, Alpa 4,092 s";
  if (model == "gpt3-39b") return "Alpa 2,393 s";
  if (model == "wresnet-1b") return "Aceso 45 s, Alpa 5,781 s";
  if (model == "inception-v3") return "FlexFlow budget 30 min";
  return "";
}
/// The command line (one table: parsing, ranges, --help, errors).
struct plan_bench_options {
  double epsilon = 0;
  std::string mode = "auto";
  std::optional<long> threads;
  std::string only;
  std::optional<long> micro_batches;
  bool no_check = false;
  bool no_job_bounds = false;
  bool all_layouts = false;
  bool progress = false;
  bool help = false;
};
}  // namespace

template <>
struct to::reflection<plan_bench_options> {
  using o = plan_bench_options;
  static constexpr auto fields = boost::hana::make_tuple(
      to::field("epsilon", &o::epsilon, "(1+E)-approximate frontiers; 0 = exact").range_open_hi(0, 1).meta("E"),
      to::field("mode", &o::mode, "search mode").one_of("auto|exact|fast"),
      to::field("threads", &o::threads, "worker threads (default: every core)").range(1, 1024).meta("N"),
      to::field("only", &o::only, "comma list of workloads to plan").meta("NAME,..."),
      to::field("micro-batches", &o::micro_batches, "one micro-batch count instead of all").range(1, 1L << 40)
          .meta("K"),
      to::field("no-check", &o::no_check, "leave out fast mode's restriction check"),
      to::field("no-job-bounds", &o::no_job_bounds, "search every micro-batch count alone (no bounds between them)"),
      to::field("all-layouts", &o::all_layouts, "fast mode keeps every layout (no layout restriction; "
                                                "plan/search_mode.hpp)"),
      to::field("progress", &o::progress, "print each micro-batch count's problem and times to stderr"),
      to::field("help", &o::help, "print this help"));
};

int main(int argc, char** argv) {
  plan_bench_options opt;
  std::vector<std::string> only;
  to::search_mode mode = to::search_mode::automatic;
  if (const auto rc = to::bench::parse_bench_options(
          argc, argv, opt, only, "plan_bench", "plan_bench [options]",
          "Whole planning time of each zoo workload at its device count.",
          [&](const plan_bench_options& x) { mode = to::parse_search_mode(x.mode); }))
    return *rc;
  const double epsilon = opt.epsilon;
  const long fixed_k = opt.micro_batches.value_or(0);
  const bool check = !opt.no_check;
  const std::size_t used = to::bench::threads_used(opt.threads);
  // the allocator changes the timings (tcmalloc where linked: CMake's TENSOROPT_TCMALLOC)
  std::printf("allocator: %s\n", dlsym(RTLD_DEFAULT, "tc_malloc") ? "tcmalloc" : "the C library's malloc");
  std::printf("%-15s %10s %5s %7s %3s %9s %9s %3s %6s %5s %7s  %s\n", "workload", "devices", "ops", "configs", "ks",
              "wall", "cpu", "thr", "points", "mode", "epsilon", "peers");
  for (const auto& m : to::models::list()) {
    if (!only.empty() && std::find(only.begin(), only.end(), m.name) == only.end()) continue;
    const long per = std::min<long>(m.gpus, m.gpus_per_node);
    const auto cl = to::bench::workload_cluster(m);
    to::planner_options o;
    o.solve.epsilon = epsilon;
    o.baselines = false;
    o.threads = used;
    o.mode = mode;
    o.check_restriction = check;
    o.job_bounds = !opt.no_job_bounds;
    if (opt.all_layouts) o.layout_lanes = 0;
    if (opt.progress) o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    o.solve.memory_limit = to::to_byte_count(cl.gpu_spec.capacity);
    if (fixed_k) o.micro_batches = {fixed_k};
    const std::clock_t c0 = std::clock();
    const auto g = m.lower();
    to::planned_frontier pf;
    try {
      pf = to::plan_frontier(g, cl, o);
    } catch (const std::exception& e) {
      std::printf("%-15s failed: %s\n", std::string(m.name).c_str(), e.what());
      continue;
    }
    const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    std::size_t configs = 0;
    bool fast = false, exact_mode = false;
    for (auto& p : pf.parts) {
      configs = std::max(configs, p.configs);
      fast = fast || p.mode == to::search_mode::fast;
      exact_mode = exact_mode || p.mode == to::search_mode::exact;
    }
    const std::string devs = std::to_string(m.gpus / per) + "x" + std::to_string(per);
    std::printf("%-15s %10s %5zu %7zu %3zu %8.2fs %8.2fs %3zu %6zu %5s %7g  %s\n", std::string(m.name).c_str(),
                devs.c_str(), g.ops.size(), configs, pf.parts.size(), pf.search_seconds, cpu, used, pf.points.size(),
                fast && exact_mode ? "mixed" : fast ? "fast" : "exact", epsilon, peers(m.name));
    for (auto& n : pf.mode_notes) std::printf("    %s\n", n.c_str());
    std::fflush(stdout);
  }
}
