// The README's API tour: a typed model, a compile-time strategy check, the frontier,
// typed queries on it, a training plan from the chosen point, and its reports.
// Built and run by the tests.
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

  // Pick one: the fastest plan within 200 MiB per device (no value when none fits).
  const auto plan = frontier.fastest_within(200_MiB);
  if (!plan) {
    std::printf("%s\n", frontier.no_fit_message(200_MiB).c_str());
    return 1;
  }
  std::printf("%zu plans; fastest within 200 MiB: #%zu, %s per iteration, %s per device, k = %d\n  %s\n",
              frontier.size(), plan->index(), to::format_seconds(plan->time()).c_str(),
              to::format_bytes(plan->memory()).c_str(), plan->micro_batches(), plan->summary().c_str());
  // Other questions: the least memory within 5 % of the fastest plan.
  const auto lean = frontier.least_memory_within(5);
  std::printf("least memory within 5 %% of the fastest: %.1f MiB, %.2f ms\n", lean->memory() / 1_MiB,
              lean->time() / 1_ms);

  // What the runtime executes, and the reports.
  const to::training_plan training = plan->training_plan();
  const auto report = to::make_report(frontier, "tour-gpt", plan, 200_MiB);
  std::fputs(to::format_table(report, 12).c_str(), stdout);
  const std::string svg = to::to_svg(report), json = to::write_frontier_json(frontier.points);
  std::printf("%zu op configs, %zu-byte SVG, %zu-byte frontier JSON\n", training.configs.size(), svg.size(),
              json.size());
  return training.configs.size() == ops && plan->memory() <= 200_MiB ? 0 : 1;
}
