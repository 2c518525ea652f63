// Command-line options of the planner program `tensoropt-plan`, parsed and validated.
#pragma once
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>
#include "../core/error.hpp"

namespace tensoropt {

struct plan_cli {
  std::string model = "gpt3-1.3b";
  bool model_given = false;
  long devices = -1;             ///< --devices N (one node); -1 = not given
  long nodes = -1;               ///< --nodes N; -1 = not given
  long gpus_per_node = -1;       ///< --gpus-per-node G; -1 = not given
  std::string gpu;               ///< empty: the model's default
  std::string precision = "bf16-mixed";
  long batch = -1;               ///< -1: the model's default
  long micro_batches = -1;       ///< -1: search every legal count
  double memory_budget_gib = 0;  ///< 0: none
  double epsilon = 0;
  std::vector<long> device_counts;
  double time_target = 0;        ///< seconds, with --device-counts
  std::string frontier_json, problem_json, solve, svg, html;
  std::string save_plan;          ///< write the chosen plan (tensoropt-plan/1)
  bool list_models = false, list_gpus = false, help = false, quiet = false, no_baselines = false;
};

inline constexpr std::string_view plan_cli_usage =
    "usage: tensoropt-plan [options]\n"
    "Computes the Pareto frontier of parallelization plans (memory per device vs\n"
    "iteration time) of a model on a cluster.\n"
    "\n"
    "  --model NAME            model of the zoo (default gpt3-1.3b); --list-models\n"
    "  --devices N             one node of N devices (default: the model's count, or 8)\n"
    "  --nodes N --gpus-per-node G   a cluster of N nodes of G devices\n"
    "  --gpu NAME              device preset (default: the model's); --list-gpus\n"
    "  --precision P           fp32 | bf16-mixed (default bf16-mixed)\n"
    "  --batch B               global batch (default: the model's)\n"
    "  --micro-batches K       fix the gradient-accumulation count (default: search all)\n"
    "  --memory-budget GIB     choose the fastest plan within GIB per device\n"
    "  --epsilon E             (1+E)-approximate frontier (default 0 = exact)\n"
    "  --device-counts L       comma list, e.g. 1,2,4,8: resource exploration\n"
    "  --time-target S         with --device-counts: fewest devices within S s/iteration\n"
    "  --frontier-json FILE    write the frontier (tensoropt-frontier/1)\n"
    "  --problem-json FILE     write the problem (tensoropt-problem/1; needs --micro-batches)\n"
    "  --save-plan FILE        write the chosen plan (tensoropt-plan/1): the fastest within\n"
    "                          --memory-budget, else the fastest that fits the device\n"
    "  --solve FILE            read a tensoropt-problem/1 file instead of a model\n"
    "  --svg FILE, --html FILE plot / report of the frontier\n"
    "  --no-baselines          skip the baselines\n"
    "  --quiet                 no progress on stderr\n"
    "  --help\n";

namespace detail {
inline long parse_long(std::string_view flag, const std::string& v) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0')
    throw invalid_argument(std::string(flag) + ": expected an integer, got '" + v + "'");
  return x;
}
inline double parse_double(std::string_view flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x))
    throw invalid_argument(std::string(flag) + ": expected a number, got '" + v + "'");
  return x;
}
}  // namespace detail

/// Parses argv. Throws invalid_argument naming the flag and the valid ones.
inline plan_cli parse_plan_cli(int argc, const char* const* argv) {
  plan_cli c;
  static constexpr std::string_view flags[] = {
      "--model", "--list-models", "--devices", "--nodes", "--gpus-per-node", "--gpu", "--list-gpus",
      "--precision", "--batch", "--micro-batches", "--memory-budget", "--epsilon", "--device-counts",
      "--time-target", "--frontier-json", "--problem-json", "--save-plan", "--solve", "--svg", "--html",
      "--no-baselines", "--quiet", "--help"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    bool has_inline = false;
    if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_inline = true;
    }
    auto value = [&]() -> std::string {
      if (has_inline) return v;
      if (i + 1 >= argc) throw invalid_argument(a + " needs a value; see --help");
      return argv[++i];
    };
    if (a == "--model") { c.model = value(); c.model_given = true; }
    else if (a == "--list-models") c.list_models = true;
    else if (a == "--devices") c.devices = detail::parse_long(a, value());
    else if (a == "--nodes") c.nodes = detail::parse_long(a, value());
    else if (a == "--gpus-per-node") c.gpus_per_node = detail::parse_long(a, value());
    else if (a == "--gpu") c.gpu = value();
    else if (a == "--list-gpus") c.list_gpus = true;
    else if (a == "--precision") c.precision = value();
    else if (a == "--batch") c.batch = detail::parse_long(a, value());
    else if (a == "--micro-batches") c.micro_batches = detail::parse_long(a, value());
    else if (a == "--memory-budget") c.memory_budget_gib = detail::parse_double(a, value());
    else if (a == "--epsilon") c.epsilon = detail::parse_double(a, value());
    else if (a == "--time-target") c.time_target = detail::parse_double(a, value());
    else if (a == "--device-counts") {
      std::string list = value(), item;
      for (std::size_t p = 0; p <= list.size(); ++p) {
        if (p == list.size() || list[p] == ',') {
          c.device_counts.push_back(detail::parse_long(a, item));
          item.clear();
        } else {
          item += list[p];
        }
      }
    }
    else if (a == "--frontier-json") c.frontier_json = value();
    else if (a == "--problem-json") c.problem_json = value();
    else if (a == "--save-plan") c.save_plan = value();
    else if (a == "--solve") c.solve = value();
    else if (a == "--svg") c.svg = value();
    else if (a == "--html") c.html = value();
    else if (a == "--no-baselines") c.no_baselines = true;
    else if (a == "--quiet") c.quiet = true;
    else if (a == "--help" || a == "-h") c.help = true;
    else {
      std::string valid;
      for (auto f : flags) valid += (valid.empty() ? "" : ", ") + std::string(f);
      throw invalid_argument("unknown option '" + a + "'; valid options: " + valid);
    }
  }
  // Validation that needs no zoo.
  auto positive = [](long v, const char* f) {
    if (v <= 0) throw invalid_argument(std::string(f) + " must be a positive integer, got " + std::to_string(v));
  };
  if (c.devices != -1) positive(c.devices, "--devices");
  if (c.nodes != -1 || c.gpus_per_node != -1) {
    if (c.devices != -1) throw invalid_argument("give either --devices or --nodes with --gpus-per-node, not both");
    if (c.nodes == -1 || c.gpus_per_node == -1)
      throw invalid_argument("--nodes and --gpus-per-node go together (e.g. --nodes 4 --gpus-per-node 8)");
    positive(c.nodes, "--nodes");
    positive(c.gpus_per_node, "--gpus-per-node");
  }
  if (c.batch != -1) positive(c.batch, "--batch");
  if (c.micro_batches != -1) positive(c.micro_batches, "--micro-batches");
  if (c.memory_budget_gib < 0) throw invalid_argument("--memory-budget must be positive (GiB per device)");
  if (c.epsilon < 0 || c.epsilon >= 1) throw invalid_argument("--epsilon must be in [0, 1), e.g. 0.01");
  if (c.time_target < 0) throw invalid_argument("--time-target must be positive (seconds)");
  for (long d : c.device_counts) positive(d, "--device-counts entries");
  if (!c.problem_json.empty() && c.micro_batches == -1 && c.solve.empty())
    throw invalid_argument("--problem-json writes one problem, which needs one micro-batch count: "
                           "add --micro-batches K (e.g. --micro-batches 1)");
  if (!c.save_plan.empty() && (!c.solve.empty() || !c.device_counts.empty()))
    throw invalid_argument("--save-plan writes a plan of a model on one cluster: drop --solve / --device-counts");
  if (!c.solve.empty() && c.model_given)
    throw invalid_argument("--solve reads a problem file instead of a model: drop --model");
  return c;
}

}  // namespace tensoropt
