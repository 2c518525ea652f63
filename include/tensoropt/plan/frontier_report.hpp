// The data of a frontier report: its points (with the strategy of each and, for a pipeline
// plan, its stages), the baselines placed against it, the chosen plan's per-op (or per-stage)
// rows, and what the reports show of it.
// plan/report.hpp formats it as a table, report_svg.hpp and report_html.hpp draw it.
#pragma once
#include <cstddef>
#include <string>
#include <vector>
#include "../search/cover.hpp"

namespace tensoropt {

/// A baseline strategy on the same cost model.
struct baseline_result {
  std::string name;            ///< "data parallel", "megatron tp 2 x dp 4", ...
  double time = 0, memory = 0;
  bool valid = true;           ///< false: the strategy does not apply (reason in summary)
  std::string summary;
};

/// One op of the chosen plan.
struct op_row {
  std::string op, config;
  double time = 0, memory = 0;
  std::string collectives;     ///< e.g. "all-reduce grads 64 MiB (dp 8)"
};

/// The data every report of a frontier shows (table, SVG, HTML): plain values, so the
/// planner, the benchmarks and tools reading a frontier JSON all print the same way.
struct frontier_report {
  /// One frontier point, ready to report.
  struct point {
    double time = 0;             ///< seconds per iteration
    double memory = 0;           ///< bytes per device (the runtime peak where predicted)
    int micro_batches = 1;       ///< gradient-accumulation count k
    std::vector<int> choice;     ///< config index per problem node
    std::vector<std::string> labels;
    std::string summary;         ///< "dp 4 x tp 2, recompute 12/24 layers"
    double mfu = 0;              ///< predicted model FLOPs utilization (0.3 = 30 %); 0 = not known
    double additive = 0;         ///< the search's additive memory where it differs from `memory`; 0 = same
    int pipeline_degree = 1;     ///< p: pipeline stages (1: none)
    std::vector<std::size_t> stage_begin{};  ///< first op (index into op_names) of each stage when p > 1
  };
  std::string model, cluster, precision;
  double samples = 0;          ///< samples (global batch) per iteration
  double capacity = 0;         ///< device memory, bytes (0 = unknown)
  double budget = 0;           ///< memory budget, bytes (0 = none)
  std::vector<point> points;   ///< memory ascending, time descending
  std::vector<baseline_result> baselines;
  int chosen = -1;             ///< index into points, or -1
  std::vector<op_row> chosen_ops;
  std::string chosen_ops_title = "per op";  ///< what the rows of chosen_ops are ("per stage" for a pipeline)
  double search_seconds = 0;
  std::string notes;           ///< e.g. "epsilon 0.01: within 1 % of exact"
  std::vector<std::string> op_names;  ///< name of each op (problem node) the labels refer to; may be empty
  double display_tolerance = default_display_tolerance;  ///< the cover shown; 0 = every point
  std::size_t max_shown = 300;       ///< most rows before the tolerance steps up
};

/// Whether any point of `r` has pipeline stages (the reports then show each point's degree).
inline bool has_stages(const frontier_report& r) {
  for (const auto& p : r.points)
    if (p.pipeline_degree > 1) return true;
  return false;
}

}  // namespace tensoropt
