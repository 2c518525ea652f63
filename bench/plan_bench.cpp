// Planner benchmark: for every model of the zoo at its listed device count (and GPU,
// nodes x devices per node as listed), the whole planning time (problem building +
// search over every micro-batch count), the problem and frontier sizes, the search
// mode that ran and the epsilon, next to the planning times peers report.
//
//   plan_bench [--epsilon E] [--mode auto|exact|fast] [--threads N] [--only NAME[,NAME...]]
//              [--micro-batches K] [--no-check]
//
// Threads default to every core (the micro-batch counts are solved on a pool); `cpu`
// is the process CPU time over all threads. Only plans that fit the device are
// searched, as the planner does. Fast mode's restriction check (weighted-sum optima of
// the unrestricted problem) is part of the timed planning and printed under each line
// (--no-check leaves it out).
#include <tensoropt/tensoropt.hpp>
#include <tensoropt/models/zoo.hpp>
#include <tensoropt/plan/planner.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <cstring>
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
}  // namespace

int main(int argc, char** argv) {
  double epsilon = 0;
  long fixed_k = 0;
  std::size_t threads = 0;
  to::search_mode mode = to::search_mode::automatic;
  std::vector<std::string> only;
  bool check = true;
  try {
    for (int i = 1; i < argc; ++i) {
      if (!std::strcmp(argv[i], "--epsilon") && i + 1 < argc) epsilon = std::atof(argv[++i]);
      else if (!std::strcmp(argv[i], "--micro-batches") && i + 1 < argc) fixed_k = std::atol(argv[++i]);
      else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::size_t(std::atol(argv[++i]));
      else if (!std::strcmp(argv[i], "--mode") && i + 1 < argc) mode = to::parse_search_mode(argv[++i]);
      else if (!std::strcmp(argv[i], "--no-check")) check = false;
      else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
        std::string s = argv[++i], item;
        for (char c : s + ",")
          if (c == ',') { only.push_back(item); item.clear(); } else item += c;
      } else {
        std::fprintf(stderr, "usage: plan_bench [--epsilon E] [--mode auto|exact|fast] [--threads N] [--only NAME,...] "
                             "[--micro-batches K] [--no-check]\n");
        return 2;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plan_bench: %s\n", e.what());
    return 2;
  }
  const std::size_t used = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  std::printf("%-15s %10s %5s %7s %3s %9s %9s %3s %6s %5s %7s  %s\n", "workload", "devices", "ops", "configs", "ks",
              "wall", "cpu", "thr", "points", "mode", "epsilon", "peers");
  for (const auto& m : to::models::list()) {
    if (!only.empty() && std::find(only.begin(), only.end(), m.name) == only.end()) continue;
    const long per = std::min<long>(m.gpus, m.gpus_per_node);
    const auto cl = to::cluster::nodes(m.gpus / per).gpus_per_node(per).gpu(to::gpus::find(m.gpu));
    to::planner_options o;
    o.solve.epsilon = epsilon;
    o.baselines = false;
    o.threads = used;
    o.mode = mode;
    o.check_restriction = check;
    o.solve.memory_limit = to::cost_t(cl.gpu_spec.capacity.value);
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
