// The command-line scaffolding the planning benchmarks share (plan_bench, pipeline_bench):
// parsing an options struct with --help and one-line errors, the --only list of zoo
// workloads, the worker threads used, and a zoo workload's cluster.
//
// Each benchmark keeps its own options struct (a reflection table, core/command_line.hpp);
// what is the same in every one of them lives here, so that a fix to an error message
// or to the default thread count reaches both.
#pragma once
#include <tensoropt/core/command_line.hpp>
#include <tensoropt/cost/cluster.hpp>
#include <tensoropt/models/zoo.hpp>
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tensoropt::bench {

/// The workloads of a comma list (empty items ignored), each checked against the zoo.
/// Throws invalid_argument naming the valid workloads.
inline std::vector<std::string> workload_list(const std::string& only) {
  std::vector<std::string> out;
  std::string item;
  for (char c : only + ",")
    if (c != ',') {
      item += c;
    } else if (!item.empty()) {
      bool known = false;
      for (const auto& m : models::list()) known = known || item == m.name;
      if (!known) {
        std::string names;
        for (const auto& m : models::list()) names += (names.empty() ? "" : ", ") + std::string(m.name);
        throw invalid_argument("--only: unknown workload '" + item + "'; valid workloads: " + names);
      }
      out.push_back(item);
      item.clear();
    }
  return out;
}

/// Parses argv into `opt` (which has `help` and `only`) and `only` into `workloads`; then
/// `check(opt)` for what the benchmark validates itself. Returns the exit code when the
/// program should stop (2 after a one-line error on stderr, 0 after --help), else nullopt.
template <class Options, class Check>
std::optional<int> parse_bench_options(int argc, char** argv, Options& opt, std::vector<std::string>& workloads,
                                       const char* prog, const char* usage, const char* what, Check check) {
  try {
    parse_command_line(argc, argv, opt);
    check(opt);
    workloads = workload_list(opt.only);
  } catch (const error& e) {
    std::fprintf(stderr, "%s: %s\n", prog, e.what());
    return 2;
  }
  if (opt.help) {
    std::fputs(command_line_help<Options>(usage, what).c_str(), stdout);
    return 0;
  }
  return std::nullopt;
}

/// Worker threads: the --threads value, else every core.
inline std::size_t threads_used(const std::optional<long>& threads) {
  return threads ? std::size_t(*threads) : std::max(1u, std::thread::hardware_concurrency());
}

/// The cluster a zoo workload lists: nodes x devices per node of its GPU.
inline cluster workload_cluster(const models::model_info& m) {
  const long per = std::min<long>(m.gpus, m.gpus_per_node);
  return cluster::nodes(m.gpus / per).gpus_per_node(per).gpu(gpus::find(m.gpu));
}

}  // namespace tensoropt::bench
