// Where a pipeline's stages begin: the legal pipeline degrees of a mesh for a graph, the
// balanced partition of a model's identical layers into p stages, and the sends between
// the stages of a partition.
//
// Balanced partition. The model's largest repeat<> of L identical layers (the one fast
// mode powers, plan/search_mode.hpp) is cut into p stages of L / p layers; the L mod p
// stages just before the last get one layer more (the last stage also holds the head and
// the loss, the first the embedding: the first stage keeps the most micro-batches in
// flight, so it gets no extra layer). Every stage after the first must start at a cut
// point (model/stage_graph.hpp), which a transformer's layer boundary is. Megatron-LM
// cuts its models the same way (Narayanan et al. 2021: layers / p per stage).
#pragma once
#include <algorithm>
#include <string>
#include <vector>
#include "../cost/pipeline_cost.hpp"
#include "../model/stage_graph.hpp"
#include "pipeline_plan.hpp"
#include "search_mode.hpp"

namespace tensoropt {

/// Every legal pipeline degree of `cl`'s mesh for `g`: p divides the devices as
/// pipeline_degree_error allows and leaves a stage per cut (p <= cut points + 1).
inline std::vector<index_t> legal_pipeline_degrees(const op_graph& g, const device_mesh& m) {
  const std::size_t cuts = cut_points(g).size();
  std::vector<index_t> ps;
  for (index_t p = 1; p <= m.devices() && std::size_t(p) <= cuts + 1; ++p)
    if (pipeline_degree_error(m, p).empty()) ps.push_back(p);
  return ps;
}

/// The balanced partition of `g` into p stages (see the file comment): the first op of
/// each stage, and the stage's layer count. `why_not` says why there is none.
struct balanced_partition {
  std::vector<std::size_t> starts, layers;
  std::string why_not;
};

inline balanced_partition balance_stages(const op_graph& g, index_t p) {
  balanced_partition r;
  const repeated_block rb = largest_repeat(g);
  const std::size_t L = rb.instances.size();
  if (L == 0 && p > 1) {
    r.why_not = "the model has no repeat<> of 3 or more identical layers to balance";
    return r;
  }
  if (std::size_t(p) > std::max<std::size_t>(L, 1)) {
    r.why_not = "pipeline degree " + std::to_string(p) + " exceeds the " + std::to_string(L) + " layers";
    return r;
  }
  const auto cuts = cut_points(g);
  std::size_t layer = 0;
  const std::size_t P = std::size_t(p), extra = L % P;
  for (std::size_t i = 0; i < P; ++i) {
    const std::size_t n = std::max<std::size_t>(L / P, 0) + (i + 1 + extra >= P && i + 1 < P ? 1 : 0);
    r.layers.push_back(n);
    if (i == 0) {
      r.starts.push_back(0);
    } else {
      const int first = *std::min_element(rb.instances[layer].begin(), rb.instances[layer].end());
      if (!std::binary_search(cuts.begin(), cuts.end(), std::size_t(first))) {
        r.why_not = "layer " + std::to_string(layer) + " does not start at a cut point (more than one tensor crosses)";
        return r;
      }
      r.starts.push_back(std::size_t(first));
    }
    layer += n;
  }
  return r;
}

/// The sends of the boundaries `starts` (first op of each stage) of micro-batch graph `micro`.
inline cost_t pipeline_sends(const op_graph& micro, const cluster& cl, index_t p, const std::vector<std::size_t>& starts,
                             const precision& pr) {
  cost_t s = 0;
  for (std::size_t b = 1; b < starts.size(); ++b) {
    const int t = cut_tensor(micro, starts[b]);
    detail::require(t >= 0, "pipeline_sends: op " + std::to_string(starts[b]) + " is not a cut point");
    s += stage_send_time(micro.tensors[std::size_t(t)], cl, p, index_t(b) - 1, pr);
  }
  return s;
}

}  // namespace tensoropt
