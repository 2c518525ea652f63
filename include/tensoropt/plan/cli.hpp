// Command-line options of the planner program `tensoropt-plan`: one reflected
// table (flag, member, help, range) from which parsing, range checks, --help and
// the error messages come (core/command_line.hpp), plus the rules that involve
// several flags (which go together, which exclude each other, which do not apply).
//
// Unset values are empty optionals, never a sentinel: `--devices -1` is an error,
// not "default".
#pragma once
#include <boost/hana/tuple.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "../core/command_line.hpp"
#include "../core/error.hpp"
#include "../core/reflect.hpp"
#include "build_problem.hpp"

namespace tensoropt {

struct plan_cli {
  std::string model = "gpt3-1.3b";      ///< zoo name or gpt:/bert: spec
  bool list_models = false;
  std::optional<long> devices;          ///< one node of N devices
  std::optional<long> nodes;
  std::optional<long> gpus_per_node;
  std::string gpu;                      ///< empty: the model's default
  std::string gpu_file;                 ///< a tensoropt-device/2 (or /1) file (plan/device_file.hpp)
  bool list_gpus = false;
  std::string precision = "bf16-mixed";
  std::optional<long> batch;            ///< global batch; unset: the model's
  std::optional<long> micro_batches;    ///< unset: search every legal count
  std::optional<double> memory_budget;  ///< GiB per device
  double epsilon = 0;
  std::string mode = "auto";            ///< search mode: auto, exact or fast
  std::optional<long> threads;          ///< unset: every core
  std::vector<long> device_counts;
  std::optional<double> time_target;    ///< seconds, with --device-counts
  std::string frontier_json, problem_json, solve, svg, html;
  std::string check_frontier;           ///< check this frontier file against --problem-json
  bool published_runs = false;          ///< check the cost model against the published runs
  std::string save_plan;                ///< write the chosen plan (tensoropt-plan/1)
  std::string strategy;                 ///< evaluate this SPEC instead of searching
  bool pipeline = false;                ///< search pipeline stages too (plan/pipeline_planner.hpp)
  bool no_baselines = false, quiet = false, help = false;
  bool all_points = false;  ///< table, plot and HTML show every point, not a 1 % cover
  bool all_layouts = false; ///< fast mode keeps every layout (planner_options::layout_lanes = 0)
  // the software stack the cost model assumes (cost_options)
  std::string attention = "materialized";  ///< attention cores: materialized or fused
  bool fused_bn_relu = false, local_batch_norm = false, linear_bias_pass = false, regenerate_dropout = false;
  bool overlap_grad_sync = false;

  given_flags given;  ///< the flags the command line named
  bool model_given() const { return given.has("model"); }
};

template <>
struct reflection<plan_cli> {
  using c = plan_cli;
  static constexpr auto fields = boost::hana::make_tuple(
      field("model", &c::model, "zoo model (--list-models) or a spec gpt:layers=..,hidden=..,heads=..,seq=..,"
                                "vocab=..,batch=..[,ffn=..,dropout=..], or bert:...")
          .meta("NAME|SPEC"),
      field("list-models", &c::list_models, "list the zoo with each model's spec"),
      field("devices", &c::devices, "one node of N devices; default: the model's count").range(1, 1 << 20).meta("N"),
      field("nodes", &c::nodes, "nodes, with --gpus-per-node").range(1, 1 << 20).meta("N"),
      field("gpus-per-node", &c::gpus_per_node, "devices per node, with --nodes").range(1, 1 << 16).meta("G"),
      field("gpu", &c::gpu, "device preset (--list-gpus) or a spec gpu:memory-gib=..,bf16-tflops=..,"
                            "fp32-tflops=..,hbm-gbs=..,nvlink-gbs=..,network-gbs=..; default: the model's")
          .meta("NAME|SPEC"),
      field("gpu-file", &c::gpu_file, "device preset file (tensoropt-device/2 or /1, written by gpu_calibrate) "
                                      "instead of --gpu").meta("FILE"),
      field("list-gpus", &c::list_gpus, "list the device presets"),
      field("precision", &c::precision, "training precision").one_of("fp32|bf16-mixed|bf16").meta("P"),
      field("batch", &c::batch, "global batch; default: the model's").range(1, 1L << 40).meta("B"),
      field("micro-batches", &c::micro_batches, "fix the gradient-accumulation count; default: search all")
          .range(1, 1L << 40).meta("K"),
      field("memory-budget", &c::memory_budget, "choose the fastest plan within GIB per device")
          .range_open_lo(0, 1e9).meta("GIB"),
      field("epsilon", &c::epsilon, "(1+E)-approximate frontier; 0 = exact").range_open_hi(0, 1).meta("E"),
      field("mode", &c::mode, "search mode: exact, fast (identical layers share one boundary layout, composed by "
                              "powering; the restriction is checked and printed) or auto (fast where exact is slow; "
                              "exact with --solve)")
          .one_of("auto|exact|fast").meta("M"),
      field("threads", &c::threads, "micro-batch counts computed at once (one waiting for another's bounds lets the "
                                    "next start); default: every core").range(1, 1 << 12).meta("N"),
      field("device-counts", &c::device_counts, "comma list, e.g. 1,2,4,8: fewest devices that fit")
          .range(1, 1 << 20).meta("LIST"),
      field("time-target", &c::time_target, "with --device-counts: fewest devices within S s/iteration")
          .range_open_lo(0, 1e12).meta("S"),
      field("frontier-json", &c::frontier_json, "write the frontier, tensoropt-frontier/2 (every point; with stages "
                                                "under --pipeline or --strategy pp=P)").meta("FILE"),
      field("problem-json", &c::problem_json, "write the problem, tensoropt-problem/1 (/2 with the model's repeated blocks; "
                                              "needs --micro-batches), or with "
                                              "--pipeline or --strategy pp=P the stage problems, "
                                              "tensoropt-pipeline-problem/1; with --check-frontier: the file to read")
          .meta("FILE"),
      field("save-plan", &c::save_plan, "write the chosen plan, tensoropt-plan/1: the fastest within "
                                        "--memory-budget, else the fastest that fits the device; with "
                                        "--strategy the evaluated plan (tensoropt-plan/2 with pp=P, P > 1)").meta("FILE"),
      field("strategy", &c::strategy, "evaluate one plan instead of searching: pp=..,dp=..,tp=..,sp=0|1,"
                                      "recompute=none|selective|full,zero=0|1 (dp default: devices / (tp pp))")
          .meta("SPEC"),
      field("pipeline", &c::pipeline, "search pipeline stages too: every legal pipeline degree, every split at "
                                      "cut points (balanced stages past 24 cut points), 1F1B; with the Megatron 3D baselines; --save-plan writes tensoropt-plan/2, "
                                      "--frontier-json and --problem-json the stages"),
      field("check-frontier", &c::check_frontier, "re-cost every point of a frontier file from the problem file "
                                                  "--problem-json names (tensoropt-problem/1, /2 or "
                                                  "tensoropt-pipeline-problem/1); fails on the first that differs")
          .meta("FILE"),
      field("published-runs", &c::published_runs,
            "check the cost model against the published training runs it ships with: each row's predicted and "
            "measured step time, what it is held to (15 % per held row, the main table's median 5 %) or why it is "
            "outside; with --svg, a plot; exits 1 when a held row misses"),
      field("solve", &c::solve, "read a tensoropt-problem/1 or /2 file (or a tensoropt-pipeline-problem/1 file: "
                                "the frontier over its partitions) instead of a model; exact unless --mode fast "
                                "(a /2 file's repeated block composed by powering)").meta("FILE"),
      field("svg", &c::svg, "plot of the frontier").meta("FILE"),
      field("html", &c::html, "report of the frontier").meta("FILE"),
      field("all-points", &c::all_points, "show every frontier point in the table, plot and HTML; default: a "
                                          "cover, every point within 1 % in time of a shown one with no more memory"),
      field("all-layouts", &c::all_layouts, "fast mode keeps every layout of every op; default: under --epsilon, "
                                            "where the parts outside the identical layers are large, each op keeps "
                                            "the layouts of weighted-sum optima (the mode line says so)"),
      field("attention", &c::attention, "software stack: attention cores materialized (scores, softmax and "
                                        "dropout written to memory) or fused (FlashAttention-style)")
          .one_of("materialized|fused").meta("KIND"),
      field("fused-bn-relu", &c::fused_bn_relu, "software stack: batch norm runs fused with the ReLU (and "
                                                "residual add) after it; default off"),
      field("local-batch-norm", &c::local_batch_norm, "software stack: batch norm keeps per-device statistics "
                                                      "(no all-reduce of its moments, no SyncBN); default off"),
      field("linear-bias-pass", &c::linear_bias_pass, "software stack: a linear's bias is added by a pass of its "
                                                      "own over the output (no cuBLASLt bias epilogue); default off"),
      field("regenerate-dropout", &c::regenerate_dropout, "software stack: dropout masks are regenerated in "
                                                          "backward instead of kept (the CPU runtime does); default off"),
      field("overlap-grad-sync", &c::overlap_grad_sync, "software stack: the data-parallel gradient sync runs "
                                                        "while backward goes on (PyTorch DDP, Horovod); only its "
                                                        "excess over each op's backward is charged; default off"),
      field("no-baselines", &c::no_baselines, "skip the baselines"),
      field("quiet", &c::quiet, "no progress on stderr"),
      field("help", &c::help, "print this help"));
};

/// The --help text of tensoropt-plan.
inline std::string plan_cli_usage() {
  return command_line_help<plan_cli>(
      "tensoropt-plan [options]",
      "Computes the Pareto frontier of parallelization plans (memory per device vs\n"
      "iteration time) of a model on a cluster, or of a problem file (--solve).");
}

/// Parses argv. Throws invalid_argument naming the flag and what is valid.
inline plan_cli parse_plan_cli(int argc, const char* const* argv) {
  plan_cli c;
  c.given = parse_command_line(argc, argv, c);
  const auto& g = c.given;
  if (g.has("devices") && (g.has("nodes") || g.has("gpus-per-node")))
    throw invalid_argument("give either --devices or --nodes with --gpus-per-node, not both");
  if (g.has("nodes") != g.has("gpus-per-node") && !g.has("device-counts"))
    throw invalid_argument("--nodes and --gpus-per-node go together (e.g. --nodes 4 --gpus-per-node 8)");
  if (g.has("gpu") && g.has("gpu-file"))
    throw invalid_argument("--gpu and --gpu-file both name the device: drop one");
  if (g.has("time-target") && !g.has("device-counts"))
    throw invalid_argument("--time-target picks the fewest devices among --device-counts: add --device-counts "
                           "LIST (e.g. 1,2,4,8)");
  if (!c.check_frontier.empty()) {
    if (c.problem_json.empty())
      throw invalid_argument("--check-frontier re-costs each point from a problem file: add --problem-json FILE");
    for (const auto& f : g.names)
      if (f != "check-frontier" && f != "problem-json" && f != "micro-batches" && f != "quiet")
        throw invalid_argument("--" + f + " does not apply to --check-frontier, which reads a frontier and a problem "
                               "file: drop --" + f);
    return c;
  }
  if (c.published_runs) {
    for (const auto& f : g.names)
      if (f != "published-runs" && f != "svg" && f != "quiet")
        throw invalid_argument("--" + f + " does not apply to --published-runs, which evaluates each published run "
                               "on its own model, cluster and stack: drop --" + f);
    return c;
  }
  if (!c.problem_json.empty() && !c.micro_batches && c.solve.empty() && c.strategy.empty() && !c.pipeline)
    throw invalid_argument("--problem-json writes one problem, which needs one micro-batch count: "
                           "add --micro-batches K (e.g. --micro-batches 1)");
  if (!c.solve.empty()) {
    static constexpr std::string_view model_flags[] = {
        "model",         "devices",    "nodes",        "gpus-per-node", "gpu",      "gpu-file",
        "precision",     "batch",      "device-counts", "time-target",  "problem-json", "no-baselines",
        "save-plan",     "strategy",   "attention",     "fused-bn-relu", "local-batch-norm", "linear-bias-pass",
        "regenerate-dropout", "overlap-grad-sync", "all-layouts"};
    for (auto f : model_flags)
      if (g.has(f))
        throw invalid_argument("--" + std::string(f) + " does not apply to --solve, which reads the problem "
                               "(model, cluster and precision are already in it): drop --" + std::string(f));
  }
  if (g.has("save-plan") && g.has("device-counts"))
    throw invalid_argument("--save-plan writes one plan of one cluster; --device-counts plans several: drop one");
  if (g.has("pipeline"))
    for (std::string_view f : {"strategy", "device-counts", "solve"})
      if (g.has(f))
        throw invalid_argument("--pipeline searches the frontier with stages of a model on one cluster; --" +
                               std::string(f) + " does not apply to it: drop one");
  if (g.has("strategy") && g.has("device-counts"))
    throw invalid_argument("--strategy evaluates one plan on one cluster: drop --device-counts (or --strategy)");
  if (g.has("device-counts") && (g.has("devices") || g.has("nodes")))
    throw invalid_argument("--device-counts plans each listed count (nodes of --gpus-per-node devices): "
                           "drop --devices/--nodes");
  return c;
}

/// Sets the software-stack switches of `b` (cost_options) from --attention,
/// --fused-bn-relu, --local-batch-norm, --linear-bias-pass, --regenerate-dropout and
/// --overlap-grad-sync.
/// Throws invalid_argument on an unknown --attention value.
inline void apply_stack(const plan_cli& c, build_options& b) {
  b.attention = parse_attention_kernel(c.attention);
  b.fused_bn_relu = c.fused_bn_relu;
  b.local_batch_norm = c.local_batch_norm;
  b.linear_bias_pass = c.linear_bias_pass;
  b.regenerate_dropout = c.regenerate_dropout;
  b.overlap_grad_sync = c.overlap_grad_sync;
}

}  // namespace tensoropt
