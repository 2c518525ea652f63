// Planner benchmark: for each workload of WORKLOADS.md at its listed device count
// (8 devices per node), the whole planning time (problem building + Frontier
// Tracking over every micro-batch count), the problem size and the frontier size,
// next to the planning times peers report.
//
//   plan_bench [--epsilon E] [--only NAME[,NAME...]] [--micro-batches K]
//
// It plans on one core (the targets are for one core) and searches only plans that
// fit the device, as the planner does. `cpu` is the process CPU time.
#include <tensoropt/tensoropt.hpp>
#include <tensoropt/models/zoo.hpp>
#include <tensoropt/plan/planner.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <cstring>
#include <string>
#include <vector>

namespace to = tensoropt;

namespace {
struct workload {
  const char* model;
  long devices;
  const char* peers;  // published planning times for the same workload
};
const workload workloads[] = {
    {"gpt3-1.3b", 4, "Aceso 99 s, Alpa 4,092 s"},
    {"gpt3-2.6b", 8, ""},
    {"gpt3-6.7b", 16, ""},
    {"gpt3-39b", 64, "Alpa 2,393 s"},
    {"wresnet-1b", 4, "Aceso 45 s, Alpa 5,781 s"},
    {"wresnet-13b", 64, ""},
    {"moe-1.3b", 4, ""},
    {"moe-10b", 16, ""},
    {"inception-v3", 16, "FlexFlow budget 30 min"},
    {"megatron-1.7b", 32, ""},
    {"megatron-1t", 3072, ""},
};
}  // namespace

int main(int argc, char** argv) {
  double epsilon = 0;
  long fixed_k = 0;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--epsilon") && i + 1 < argc) epsilon = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--micro-batches") && i + 1 < argc) fixed_k = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      std::string s = argv[++i], item;
      for (char c : s + ",")
        if (c == ',') { only.push_back(item); item.clear(); } else item += c;
    } else {
      std::fprintf(stderr, "usage: plan_bench [--epsilon E] [--only NAME,...] [--micro-batches K]\n");
      return 2;
    }
  }
  std::printf("%-14s %5s %5s %7s %3s %9s %9s %6s %5s  %s\n", "workload", "devs", "ops", "configs", "ks", "wall",
              "cpu", "points", "exact", "peers");
  for (const auto& w : workloads) {
    if (!only.empty() && std::find(only.begin(), only.end(), w.model) == only.end()) continue;
    const auto& m = to::models::find(w.model);
    const long per = std::min<long>(w.devices, 8);
    const auto cl = to::cluster::nodes(w.devices / per).gpus_per_node(per).gpu(to::gpus::find(m.gpu));
    to::planner_options o;
    o.solve.epsilon = epsilon;
    o.baselines = false;
    o.threads = 1;  // the targets are for one core
    o.solve.memory_limit = to::to_byte_count(cl.gpu_spec.capacity);
    if (fixed_k) o.micro_batches = {fixed_k};
    const auto g = m.lower();
    const std::clock_t c0 = std::clock();
    const auto pf = to::plan_frontier(g, cl, o);
    const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    std::size_t configs = 0;
    for (auto& p : pf.parts) configs = std::max(configs, p.configs);
    std::printf("%-14s %5ld %5zu %7zu %3zu %8.2fs %8.2fs %6zu %5s  %s\n", w.model, w.devices, g.ops.size(), configs,
                pf.parts.size(), pf.search_seconds, cpu, pf.points.size(), pf.exact ? "yes" : "no", w.peers);
    std::fflush(stdout);
  }
}
