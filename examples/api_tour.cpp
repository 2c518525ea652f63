// The README's API tour: a typed model, a compile-time strategy check, the frontier,
// queries on it, and its reports. Built and run by the tests.
#include <tensoropt/tensoropt.hpp>
#include <cstdio>

namespace to = tensoropt;
using namespace to::literals;

// A GPT whose every tensor shape is a compile-time value: a shape error is a compile error.
using gpt = to::models::gpt<{.layers = 4, .hidden = 512, .heads = 8, .seq = 512, .vocab = 8192, .batch = 64}>;

// A strategy pinned in the source is checked by the compiler, memory model included.
static_assert(to::fits<gpt, to::strategies::data_parallel, to::mesh<8>, 80_GiB>);
static_assert(!to::fits<gpt, to::strategies::data_parallel, to::mesh<8>, 256_MiB>);

int main() {
  // The operator graph is a constexpr value.
  constexpr auto ops = to::lower<gpt>().ops.size();
  std::printf("%zu ops, %.1fM parameters\n", ops, to::lower<gpt>().parameter_count() / 1e6);

  // Every Pareto-optimal plan on one node of 8 x A100-80GB, over all micro-batch counts.
  const auto cluster = to::cluster::nodes(1).gpus_per_node(8).gpu(to::gpus::a100_80gb);
  to::planner_options options;
  options.micro_batches = {1, 2, 4};
  const auto frontier = to::plan_frontier(to::lower<gpt>(), cluster, options);

  // Pick one: the fastest plan within 100 MiB per device.
  const int chosen = to::fastest_within_index(frontier, double(100_MiB .value));
  if (chosen < 0) {
    std::printf("nothing fits 100 MiB; the least memory is %s\n",
                to::format_bytes(double(frontier.points.front().memory)).c_str());
    return 1;
  }
  const auto& plan = frontier.points[std::size_t(chosen)];
  std::printf("%zu plans; fastest within 100 MiB: #%d, %s per iteration, %s per device, k = %d\n  %s\n",
              frontier.points.size(), chosen, to::format_seconds(double(plan.time) / to::ps_per_second).c_str(),
              to::format_bytes(double(plan.memory)).c_str(), plan.micro_batches, frontier.summary(std::size_t(chosen)).c_str());

  // The per-op configs the runtime executes, and the reports.
  const std::vector<to::op_config> configs = frontier.op_configs(std::size_t(chosen));
  const auto report = to::make_report(frontier, "tour-gpt", chosen, double(100_MiB .value));
  std::fputs(to::format_table(report, 12).c_str(), stdout);
  const std::string svg = to::to_svg(report), json = to::write_frontier_json(frontier.points);
  std::printf("%zu op configs, %zu-byte SVG, %zu-byte frontier JSON\n", configs.size(), svg.size(), json.size());
  return configs.size() == ops ? 0 : 1;
}
