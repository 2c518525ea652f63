// Pipeline planning benchmark: for the Megatron-LM workloads at their device counts,
// the whole planning time of the frontier with pipeline stages (every legal pipeline
// degree and micro-batch count k >= p, balanced stages), its size, its fastest plan
// that fits the device, and the best Megatron 3D baseline (tp x pp x dp, full
// recompute) on the same cost model.
//
//   pipeline_bench [--epsilon E] [--threads N] [--only NAME[,NAME...]] [--mode auto|exact|fast]
//                  [--degree P] [--micro-batches K] [--progress] [--no-skip] [--lines N] [--no-peak]
//
// `cpu` is the process CPU time over all threads (the runtime peak replay of every point
// included, its wall time printed apart); the baselines are timed apart.
#include "bench_cli.hpp"
#include <tensoropt/plan/pipeline_planner.hpp>
#include <tensoropt/plan/pipeline_spec.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace to = tensoropt;

namespace {
struct pipeline_bench_options {
  double epsilon = 0.05;
  std::string mode = "auto";
  std::optional<long> threads;
  std::string only = "megatron-145.6b,megatron-1t";
  std::optional<long> degree, micro_batches;
  bool progress = false;
  bool no_skip = false;
  bool no_peak = false;
  long lines = 3;
  bool help = false;
};
}  // namespace

template <>
struct to::reflection<pipeline_bench_options> {
  using o = pipeline_bench_options;
  static constexpr auto fields = boost::hana::make_tuple(
      to::field("epsilon", &o::epsilon, "(1+E)-approximate stage frontiers; 0 = exact").range_open_hi(0, 1).meta("E"),
      to::field("mode", &o::mode, "stage search mode").one_of("auto|exact|fast"),
      to::field("threads", &o::threads, "worker threads (default: every core)").range(1, 1024).meta("N"),
      to::field("only", &o::only, "comma list of workloads to plan").meta("NAME,..."),
      to::field("degree", &o::degree, "one pipeline degree instead of all").range(1, 1L << 20).meta("P"),
      to::field("micro-batches", &o::micro_batches, "one micro-batch count instead of all").range(1, 1L << 40).meta("K"),
      to::field("progress", &o::progress, "print a line per job"),
      to::field("no-skip", &o::no_skip, "search every job (no job bounds; the same frontier, for timing them)"),
      to::field("no-peak", &o::no_peak, "keep the additive memory (no runtime peak replay of the points)"),
      to::field("lines", &o::lines, "lines of a job's region at most (scalar searches each)").range(0, 16).meta("N"),
      to::field("help", &o::help, "print this help"));
};

int main(int argc, char** argv) {
  pipeline_bench_options opt;
  std::vector<std::string> only;
  to::search_mode mode = to::search_mode::automatic;
  if (const auto rc = to::bench::parse_bench_options(
          argc, argv, opt, only, "pipeline_bench", "pipeline_bench [options]",
          "Planning time of the frontier with pipeline stages.",
          [&](const pipeline_bench_options& x) { mode = to::parse_search_mode(x.mode); }))
    return *rc;
  const std::size_t used = to::bench::threads_used(opt.threads);
  for (const auto& name : only) {
    const auto& m = to::models::find(name);
    const auto cl = to::bench::workload_cluster(m);
    to::pipeline_options o;
    o.solve.epsilon = opt.epsilon;
    o.solve.memory_limit = to::to_byte_count(cl.gpu_spec.capacity);
    o.threads = used;
    o.mode = mode;
    o.skip_by_bounds = !opt.no_skip;
    o.max_lines = std::size_t(opt.lines);
    o.runtime_peak = !opt.no_peak;
    if (opt.degree) o.degrees = {*opt.degree};
    if (opt.micro_batches) o.micro_batches = {*opt.micro_batches};
    if (opt.progress) o.progress = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
    const std::clock_t c0 = std::clock();
    const auto g = m.lower();
    const auto pf = to::plan_pipeline_frontier(g, cl, o);
    const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    std::printf("%s on %s: %zu jobs, %zu stage searches, %.2f s wall (peak replay %.2f s), %.2f s cpu, %zu threads, "
                "%zu points (%zu searched), epsilon %g\n",
                std::string(m.name).c_str(), cl.describe().c_str(), pf.jobs, pf.stage_searches, pf.seconds,
                pf.peak_seconds, cpu, used, pf.points.size(), pf.searched.empty() ? pf.points.size() : pf.searched.size(),
                opt.epsilon);
    std::printf("    memory: %s\n", pf.memory_note.c_str());
    for (auto& n : pf.notes) std::printf("    %s\n", n.c_str());
    if (!pf.points.empty()) {
      const auto& f = pf.points.back();
      std::printf("  fastest that fits: %.3f s, %.1f GiB (additive %.1f GiB), k %d: %s\n", double(f.time) / 1e12,
                  double(f.reported_memory()) / double(1ull << 30), double(f.memory) / double(1ull << 30),
                  f.plan.micro_batches,
                  to::summarize_pipeline(g, f.plan).c_str());
      const auto& l = pf.points.front();
      std::printf("  least memory:      %.3f s, %.1f GiB (additive %.1f GiB), k %d: %s\n", double(l.time) / 1e12,
                  double(l.reported_memory()) / double(1ull << 30), double(l.memory) / double(1ull << 30),
                  l.plan.micro_batches,
                  to::summarize_pipeline(g, l.plan).c_str());
    }
    const auto tb = std::chrono::steady_clock::now();
    // additive memory on both sides: the baselines against every searched point
    const auto base = to::megatron_3d_baselines(g, cl, o.build, pf.searched.empty() ? pf.points : pf.searched,
                                                to::detail::legal_micro_batches(g));
    const double bs = std::chrono::duration<double>(std::chrono::steady_clock::now() - tb).count();
    const to::baseline_result* best = nullptr;
    for (auto& b : base)
      if (b.valid && b.memory <= cl.gpu_spec.capacity.value && (!best || b.time < best->time)) best = &b;
    std::printf("  %zu Megatron 3D baselines in %.2f s", base.size(), bs);
    if (best) {
      std::printf("; best that fits: %s, %.3f s, %.1f GiB (%s)", best->name.c_str(), best->time,
                  best->memory / double(1ull << 30), best->summary.c_str());
      if (!pf.points.empty())
        std::printf("; frontier's fastest / baseline = %.4f", double(pf.points.back().time) / 1e12 / best->time);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
}
