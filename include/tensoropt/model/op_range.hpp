// A range of a graph's ops run by one executor (a pipeline stage), and the tensors
// that cross its edges.
//
// An executor over ops [begin, end) runs those ops and every input op they read
// (the batch is on every device, so each stage feeds its own inputs). A tensor read
// inside the range but made by a non-input op before it is a boundary input; one
// made inside and read after it a boundary output. Both travel between stages whole
// (runtime/pipeline.hpp); the planner's stage replay (plan/pipeline_peak.hpp) uses
// the same ranges. The default range is the whole graph: no boundary.
#pragma once
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>
#include "../core/error.hpp"
#include "graph.hpp"

namespace tensoropt {

/// The ops [begin, end) an executor runs (a pipeline stage); the default is all.
struct op_range {
  std::size_t begin = 0, end = std::size_t(-1);
  bool contains(std::size_t j) const { return j >= begin && j < end; }
};

/// What runs in a range and what crosses its edges (tensor indices, ascending).
struct range_ops {
  std::vector<bool> runs;    ///< runs[j]: op j runs here
  std::vector<int> inputs;   ///< boundary inputs
  std::vector<int> outputs;  ///< boundary outputs
};

/// Throws invalid_argument when `r` holds no op of `g`.
inline range_ops ops_of_range(const op_graph& g, const op_range& r) {
  const std::size_t n = g.ops.size();
  if (r.begin >= n || r.end <= r.begin)
    throw invalid_argument("executor: op range [" + std::to_string(r.begin) + ", " + std::to_string(r.end) +
                           ") holds no op of graph '" + g.name + "' (" + std::to_string(n) + " ops)");
  range_ops out;
  out.runs.assign(n, false);
  for (std::size_t j = r.begin; j < std::min(n, r.end); ++j) {
    out.runs[j] = true;
    for (auto& m : g.ops[j].inputs) {
      const int p = g.tensors[std::size_t(m.tensor)].producer;
      if (g.ops[std::size_t(p)].kind == op_kind::input) out.runs[std::size_t(p)] = true;
    }
  }
  std::vector<char> here(g.tensors.size(), 0), later(g.tensors.size(), 0);
  for (std::size_t j = 0; j < n; ++j)
    for (auto& m : g.ops[j].inputs) (r.contains(j) ? here : later)[std::size_t(m.tensor)] = 1;
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    const int p = g.tensors[t].producer;
    if (p < 0 || g.ops[std::size_t(p)].kind == op_kind::input) continue;
    if (here[t] && !r.contains(std::size_t(p))) out.inputs.push_back(int(t));
    if (later[t] && r.contains(std::size_t(p))) out.outputs.push_back(int(t));
  }
  return out;
}

}  // namespace tensoropt
