// The small pipeline frontiers several pipeline test files plan alike.
#pragma once
#include <tensoropt/plan/pipeline_planner.hpp>
#include <vector>

namespace tensoropt::testing {

/// The planner's options for a small frontier: the partitions searched, the micro-batch
/// counts, one thread; the additive memory the search optimizes (no runtime peak
/// replay), which is what the exported files and their re-solve hold.
inline pipeline_options small_pipeline_options(partition_search parts, std::vector<index_t> ks,
                                               std::size_t threads = 1) {
  pipeline_options o;
  o.partitions = parts;
  o.micro_batches = std::move(ks);
  o.threads = threads;
  o.runtime_peak = false;
  return o;
}

/// The frontier of `g` on `cl` over every partition (dynamic program), k = 2 and 4.
inline pipeline_frontier partition_frontier(const op_graph& g, const cluster& cl) {
  return plan_pipeline_frontier(g, cl, small_pipeline_options(partition_search::all, {2, 4}));
}

}  // namespace tensoropt::testing
