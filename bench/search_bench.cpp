// Benchmark of the search engine on synthetic transformer-like problems of the sizes of the real workloads.
//
// Each layer is the 12 ops of a transformer layer: ln1 -> qkv -> attention -> proj ->
// dropout -> add1 (residual edge from the layer input) -> ln2 -> fc1 -> gelu -> fc2 ->
// dropout -> add2 (residual edge from add1); layers are chained, with an embedding
// before and a loss after. Every node has `configs` configs made of `layouts` tensor
// layouts times configs/layouts switch settings (recompute, optimizer sharding) that
// share the layout's edge costs, as the real problems do. Edge costs depend on the
// pair of layouts (free when equal); node costs trade time against memory by the
// layout's parallel degree and the switches. With layouts == configs every config has
// its own edge rows (dense, the worst case).
//
// Usage: search_bench                                       the standard set
//        search_bench --layers L --configs C --layouts K [--epsilon E]   one synthetic problem
//        search_bench --problem FILE [--epsilon E]    a tensoropt-problem/1 file (e.g. from
//                                                     tensoropt-plan --problem-json)
//        search_bench --problem FILE --restrict-layouts N [--epsilon E] [--memory-gib G]
//                     a tensoropt-problem/2 file's largest repeated block in fast mode, on the
//                     whole problem and on the layouts of its weighted-sum optima at 8 + N
//                     weights (search/layout_restriction.hpp): both times, and how far the restricted
//                     frontier lies behind the other (time at the same memory, per point)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <optional>
#include <utility>
#include <vector>
#include <tensoropt/core/command_line.hpp>
#include <tensoropt/core/input_file.hpp>
#include <tensoropt/search/layout_restriction.hpp>
#include <tensoropt/search/problem_json.hpp>
#include <tensoropt/search/repeated.hpp>
#include <tensoropt/search/solve.hpp>

namespace to = tensoropt;

namespace {

to::problem transformer_like(int layers, int configs, int layouts, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  const int switches = configs / layouts;
  // per layout: a parallel degree-like factor, and a redistribution cost between layouts
  std::vector<double> degree(static_cast<std::size_t>(layouts));
  for (auto& d : degree) d = std::pow(2.0, double(int(real(0, 6))));
  std::vector<double> redistribute(static_cast<std::size_t>(layouts * layouts));
  for (int a = 0; a < layouts; ++a)
    for (int b = 0; b < layouts; ++b)
      redistribute[std::size_t(a * layouts + b)] = a == b ? 0 : real(2e8, 4e9);
  to::problem p;
  p.memory_offset = 2'000'000'000;
  // the configs of each op kind are costed once: repeated layers are identical, as in the
  // real problems (which is what keeps their exact frontiers small)
  std::vector<std::pair<double, std::vector<to::problem_config>>> kinds;
  auto add_node = [&](const std::string& name, double flops_time, double bytes) {
    for (auto& [key, cfgs] : kinds)
      if (key == flops_time * 1e3 + bytes) {
        p.nodes.push_back({name, cfgs});
        return int(p.nodes.size() - 1);
      }
    to::problem_node n{name, {}};
    for (int l = 0; l < layouts; ++l)
      for (int s = 0; s < switches; ++s) {
        const double d = degree[std::size_t(l)];
        const bool recompute = s & 1, shard = s & 2;
        double t = flops_time / d + real(0, 0.3) * flops_time * std::log2(d + 1) / 4;
        double m = bytes / d * real(0.8, 1.2);
        if (recompute) { t *= 1.3; m *= 0.3; }
        if (shard) { t *= 1.05; m *= 0.7; }
        n.configs.push_back({"l" + std::to_string(l) + (recompute ? " rc" : "") + (shard ? " zs" : ""),
                             std::int64_t(t), std::int64_t(m)});
      }
    kinds.push_back({flops_time * 1e3 + bytes, n.configs});
    p.nodes.push_back(std::move(n));
    return int(p.nodes.size() - 1);
  };
  auto add_edge = [&](int a, int b) {
    to::problem_edge e{a, b, {}, {}};
    const int ca = int(p.nodes[std::size_t(a)].configs.size()), cb = int(p.nodes[std::size_t(b)].configs.size());
    const bool dense = layouts == configs;
    for (int x = 0; x < ca; ++x)
      for (int y = 0; y < cb; ++y) {
        const int la = x / switches, lb = y / switches;
        const double c = redistribute[std::size_t(la * layouts + lb)];
        e.time.push_back(std::int64_t(dense && la != lb ? c * (0.9 + 0.2 * double((x * 7919 + y * 104729) % 1000) / 1000) : c));
        e.memory.push_back(la == lb ? 0 : std::int64_t(c / 100));
      }
    p.edges.push_back(std::move(e));
  };
  int x = add_node("embedding", 4e9, 8e9);
  const char* ops[] = {"ln1", "qkv", "attention", "proj", "dropout1", "add1",
                       "ln2", "fc1", "gelu", "fc2", "dropout2", "add2"};
  const double cost[] = {1e8, 3e9, 4e9, 1e9, 1.1e8, 1.2e8, 1.3e8, 4e9, 2e8, 4.1e9, 1.4e8, 1.5e8};
  for (int l = 0; l < layers; ++l) {
    int prev = x, add1 = -1;
    for (int k = 0; k < 12; ++k) {
      const int v = add_node("layers." + std::to_string(l) + "." + ops[k], cost[k], cost[k] * 3);
      add_edge(prev, v);
      if (k == 5) { add_edge(x, v); add1 = v; }
      if (k == 11) add_edge(add1, v);
      prev = v;
    }
    x = prev;
  }
  add_edge(x, add_node("loss", 2e9, 4e9));
  return p;
}

void report(const char* name, const to::problem& p, double epsilon, const char* target) {
  std::size_t configs = 0;
  for (auto& n : p.nodes) configs += n.configs.size();
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = to::solve(p, {.epsilon = epsilon});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%-18s %5zu nodes %7zu configs  eps %-5g %9.3f s  %6zu points  width %zu  cells %6zu  "
              "prune depth %3zu  replayed %4zu  trace %9zu  %s  (target %s)\n",
              name, p.nodes.size(), configs, epsilon, s, r.points.size(), r.max_width, r.max_cells,
              r.prune_depth, r.replayed, r.trace_entries, r.exact ? "exact" : "approx", target);
  std::fflush(stdout);
}

// Fast mode on the whole problem and on the layouts of its weighted-sum optima at `lanes`
// weights; every restricted point is re-costed on the whole problem.
void report_restricted(const char* name, const to::problem_file& f, std::size_t lanes, double epsilon,
                       to::cost_t limit) {
  to::repeated_block rb;
  for (const auto& r : f.repeats)
    if (r.instances.size() > rb.instances.size()) rb = r;
  if (rb.instances.empty())
    throw to::invalid_argument("--restrict-layouts: '" + std::string(name) +
                               "' declares no repeated block; write it with tensoropt-plan --problem-json "
                               "--micro-batches K (tensoropt-problem/2)");
  const std::string why = to::check_repeated(f.prob, rb);
  if (!why.empty()) throw to::invalid_argument("--restrict-layouts: the largest repeated block cannot be powered: " + why);
  const to::solve_options so{.epsilon = epsilon, .memory_limit = limit};
  auto seconds = [](auto t0) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  auto t0 = std::chrono::steady_clock::now();
  const auto whole = to::solve_repeated(f.prob, rb, so);
  const double s_whole = seconds(t0);
  t0 = std::chrono::steady_clock::now();
  const auto lr = to::restrict_layouts(f.prob, rb, lanes, limit);
  const double s_lanes = seconds(t0);
  const auto part = to::solve_repeated(lr.restricted, rb, so);
  const double s_part = seconds(t0);
  std::size_t configs = 0;
  for (const auto& n : f.prob.nodes) configs += n.configs.size();
  // per point of the whole frontier: the least restricted time at no more memory, over its time
  std::vector<std::pair<to::cost_t, to::cost_t>> mine;  // memory, time
  for (const auto& q : part.points) {
    const auto c = to::cost_of(f.prob, lr.to_full(q.choice));
    if (c.time != q.time || c.memory != q.memory)
      throw to::runtime_error("--restrict-layouts: a restricted point does not re-cost on the whole problem");
    mine.push_back({q.memory, q.time});
  }
  std::sort(mine.begin(), mine.end());
  for (std::size_t i = 1; i < mine.size(); ++i) mine[i].second = std::min(mine[i].second, mine[i - 1].second);
  std::vector<double> ratio;
  for (const auto& q : whole.points) {
    auto it = std::upper_bound(mine.begin(), mine.end(), std::pair{q.memory, std::numeric_limits<to::cost_t>::max()});
    ratio.push_back(it == mine.begin() ? HUGE_VAL : double(std::prev(it)->second) / double(q.time));
  }
  std::sort(ratio.begin(), ratio.end());
  auto at = [&](double f) { return ratio.empty() ? 1.0 : ratio[std::min(ratio.size() - 1, std::size_t(f * double(ratio.size())))]; };
  std::printf("%s: fast mode, epsilon %g\n  whole problem: %zu configs, %.2f s, %zu points\n"
              "  restricted:    %zu configs (%zu weights, %zu distinct optima within the limit), %.2f s "
              "(the optima %.2f s), %zu points\n"
              "  restricted time / whole time at the same memory, over the whole frontier's points: "
              "median %.4f, 90 %% %.4f, 99 %% %.4f, max %.4f\n",
              name, epsilon, configs, s_whole, whole.points.size(), lr.configs(), lr.lanes, lr.optima, s_part,
              s_lanes, part.points.size(), at(0.5), at(0.9), at(0.99), ratio.empty() ? 1.0 : ratio.back());
  std::fflush(stdout);
}

void run(const char* name, int layers, int configs, int layouts, double epsilon, const char* target) {
  report(name, transformer_like(layers, configs, layouts, 42), epsilon, target);
}

}  // namespace

/// The command line (one table: parsing, ranges, --help, errors).
struct search_bench_options {
  std::string problem;
  std::optional<long> layers, configs, layouts;
  double epsilon = 0;
  std::optional<long> restrict_layouts;
  double memory_gib = 0;
  bool help = false;
};
template <>
struct to::reflection<search_bench_options> {
  using o = search_bench_options;
  static constexpr auto fields = boost::hana::make_tuple(
      to::field("problem", &o::problem, "solve a tensoropt-problem/1 file").meta("FILE"),
      to::field("layers", &o::layers, "one synthetic problem: transformer layers").range(1, 10000).meta("L"),
      to::field("configs", &o::configs, "configs per node, with --layers").range(1, 100000).meta("C"),
      to::field("layouts", &o::layouts, "tensor layouts per node (divides --configs)").range(1, 100000).meta("K"),
      to::field("epsilon", &o::epsilon, "(1+E)-approximate frontier; 0 = exact").range_open_hi(0, 1).meta("E"),
      to::field("restrict-layouts", &o::restrict_layouts,
                "with --problem (tensoropt-problem/2): fast mode on the layouts of weighted-sum optima at N "
                "weights against fast mode on the whole problem")
          .range(1, 56)
          .meta("N"),
      to::field("memory-gib", &o::memory_gib, "with --restrict-layouts: the memory limit per device; 0 = none")
          .range(0, 1e6)
          .meta("G"),
      to::field("help", &o::help, "print this help"));
};

int main(int argc, char** argv) {
  search_bench_options o;
  try {
    const auto given = to::parse_command_line(argc, argv, o);
    const bool synthetic = given.has("layers") || given.has("configs") || given.has("layouts");
    if (synthetic && !(o.layers && o.configs && o.layouts))
      throw to::invalid_argument("--layers, --configs and --layouts go together (e.g. --layers 24 --configs 32 "
                                 "--layouts 8)");
    if (synthetic && !o.problem.empty())
      throw to::invalid_argument("give either --problem FILE or a synthetic problem (--layers ...), not both");
    if ((given.has("restrict-layouts") || given.has("memory-gib")) && o.problem.empty())
      throw to::invalid_argument("--restrict-layouts and --memory-gib need --problem FILE (a tensoropt-problem/2 file)");
    if (given.has("memory-gib") && !o.restrict_layouts)
      throw to::invalid_argument("--memory-gib goes with --restrict-layouts");
    if (synthetic && *o.configs % *o.layouts != 0)
      throw to::invalid_argument("--layouts must divide --configs (each layout has configs/layouts switch settings)");
    if (o.help) {
      std::fputs(to::command_line_help<search_bench_options>(
                     "search_bench [options]",
                     "Without options: the standard set of synthetic transformer-like problems.")
                     .c_str(),
                 stdout);
      return 0;
    }
    if (!o.problem.empty()) {
      std::string why;
      const auto text = to::read_input_file(o.problem, why);
      if (!text) throw to::invalid_argument("--problem: cannot open '" + o.problem + "' (" + why + ")");
      if (o.restrict_layouts) {
        const to::cost_t limit = o.memory_gib > 0 ? to::detail::checked_cost(o.memory_gib * double(1ull << 30), "--memory-gib")
                                                  : std::numeric_limits<to::cost_t>::max();
        report_restricted(o.problem.c_str(), to::read_problem_file(*text), std::size_t(*o.restrict_layouts), o.epsilon,
                          limit);
        return 0;
      }
      report(o.problem.c_str(), to::read_problem_json(*text), o.epsilon, "-");
      return 0;
    }
    if (synthetic) {
      run("custom", int(*o.layers), int(*o.configs), int(*o.layouts), o.epsilon, "-");
      return 0;
    }
  } catch (const to::error& e) {
    std::fprintf(stderr, "search_bench: %s\n", e.what());
    return 2;
  }
  run("gpt3-1.3b-like", 24, 32, 8, 0, "< 0.5 s");
  run("gpt3-1.3b-like", 24, 32, 8, 0.05, "-");
  run("gpt3-39b-like", 48, 100, 25, 0.05, "< 10 s");
  run("megatron-1t-like", 128, 100, 25, 0.05, "< 60 s");
}
