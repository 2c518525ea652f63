// One point of a frontier file: a frontier_point whose strategy is either one choice per
// node of one problem, or, for a pipeline plan, one choice per node of each stage's problem.
//
// A frontier file "tensoropt-frontier/2" (search/frontier_json.hpp) holds both kinds. A
// point of one problem keeps its strategy in frontier_point::choice and ::labels, indexing
// the nodes of a "tensoropt-problem/1" file, as in "/1". A pipeline point (p stages, k
// micro-batches) keeps it in `stages` instead, indexing a "tensoropt-pipeline-problem/1"
// file (search/pipeline_problem.hpp): `partition` names the file's partition (the stage
// cut, the stage problems, the in-flight counts and the sends), and choice[s] picks one
// config per node of stage s's problem. Its frontier_point::choice and ::labels are empty.
// `degree` and `stage_begin` repeat the partition's, so the file says where the stages
// are without the problem file; a check holds them equal.
//
// The search's own point type (search/frontier_point.hpp) stays as it is: stages are a
// property of a file's point, not of the algebra, which never sees them.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>
#include "frontier_point.hpp"

namespace tensoropt {

/// The strategy of a pipeline point: a partition of a pipeline problem and a choice per stage.
struct stage_choices {
  int degree = 1;                                 ///< p
  std::size_t partition = 0;                      ///< index into pipeline_problem::partitions
  std::vector<std::size_t> stage_begin;           ///< first op (of the model) of each stage
  std::vector<std::vector<int>> choice;           ///< choice[s][j]: config of node j of stage s's problem
  std::vector<std::vector<std::string>> labels;   ///< the same configs' labels
  bool operator==(const stage_choices&) const = default;
};

/// A point of a frontier file (see the file comment).
struct frontier_entry {
  frontier_point point;                 ///< cost, k, peak; choice and labels of a one-problem point
  std::optional<stage_choices> stages;  ///< a pipeline point's strategy; empty for a one-problem point
  bool operator==(const frontier_entry&) const = default;
};

/// The entries of one-problem points.
inline std::vector<frontier_entry> entries_of(const std::vector<frontier_point>& pts) {
  std::vector<frontier_entry> out;
  out.reserve(pts.size());
  for (const auto& q : pts) out.push_back({q, std::nullopt});
  return out;
}

}  // namespace tensoropt
