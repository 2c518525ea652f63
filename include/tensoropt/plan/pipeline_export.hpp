// Pipeline plans as files an outside tool can check: the pipeline problem
// (search/pipeline_problem.hpp, "tensoropt-pipeline-problem/1") of a list of pipeline
// points, and the points as frontier entries (search/frontier_entry.hpp,
// "tensoropt-frontier/2") indexing it.
//
// The stage problems are rebuilt from the model, not taken from the search: stage s of a
// plan with p stages and k micro-batches is build_stage_problem of its ops (the builder
// the search used, plan/stage_problem.hpp) with one micro-batch in flight, and each config
// gets its activations, round(the op's activations) as build_stage_problem scales them
// (an op's memory with f in flight is round(memory) + (f - 1) round(activations), an
// edge's f times its memory); the test holds with_in_flight(problem, f) equal to
// build_stage_problem at every f. Stages whose graphs are equal but for names (the middle
// stages of a balanced pipeline) share one problem, named after the first of them; each
// stage's choice is found by looking its configs up in that problem, so a config the
// problem lacks is an error, never a silent substitute. Sends are stage_send_time of each
// boundary's cut tensor, as evaluate_pipeline charges them.
//
// With the same build options as the search, every point of plan_pipeline_frontier
// re-costs from the file to exactly its (time, memory); a hand-written plan (--strategy
// pp=P) needs drop_dominated = false so that its configs are in the problem.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>
#include "../search/frontier_entry.hpp"
#include "../search/pipeline_problem.hpp"
#include "pipeline_search.hpp"
#include "stage_problem.hpp"

namespace tensoropt {

/// A pipeline problem and the points that index it.
struct pipeline_export {
  pipeline_problem problem;
  std::vector<frontier_entry> points;
};

namespace detail {
/// Whether two stage graphs are equal but for op and tensor names.
inline bool same_stage_shape(const op_graph& x, const op_graph& y) {
  if (x.batch != y.batch || x.ops.size() != y.ops.size() || x.tensors.size() != y.tensors.size()) return false;
  for (std::size_t t = 0; t < x.tensors.size(); ++t) {
    const auto &a = x.tensors[t], &b = y.tensors[t];
    if (a.extents != b.extents || a.rank != b.rank || a.parameter != b.parameter || a.integer != b.integer ||
        a.producer != b.producer)
      return false;
  }
  for (std::size_t i = 0; i < x.ops.size(); ++i) {
    const auto &a = x.ops[i], &b = y.ops[i];
    if (a.kind != b.kind || a.dims != b.dims || a.inputs != b.inputs || a.params != b.params || !(a.output == b.output) ||
        a.fwd_flops_per_point != b.fwd_flops_per_point || a.bwd_flops_per_point != b.bwd_flops_per_point ||
        a.saved != b.saved || a.attr != b.attr || a.repeat_id != b.repeat_id || a.repeat_index != b.repeat_index)
      return false;
  }
  return true;
}

/// round(activations) of every config of a stage problem built with one micro-batch in flight.
inline config_activations stage_activations(const stage_problem& sp) {
  const op_graph& g = sp.built.graph;
  const auto facts = analyze(g);
  const auto canon = canonical_ops(g, facts);
  const cost_options co = sp.built.options.cost();
  config_activations acts(g.ops.size());
  for (std::size_t n = 0; n < g.ops.size(); ++n) {
    if (canon[n] != int(n)) {
      acts[n] = acts[std::size_t(canon[n])];
      continue;
    }
    for (const auto& c : sp.built.configs[n])
      acts[n].push_back(pipe_round(cost_op(g, int(n), c, sp.built.cl, co, facts[n]).activations.value));
  }
  return acts;
}
}  // namespace detail

/// The pipeline problem of `pts` (plans of the full-batch graph `g` on `cl`, built with
/// `bo`) and the points as frontier entries, in the same order (see the file comment).
/// Throws invalid_argument when a plan is malformed or a stage's config is not in its
/// stage problem.
inline pipeline_export export_pipeline(const op_graph& g, const cluster& cl, const build_options& bo,
                                       const std::vector<pipeline_point>& pts) {
  struct built_stage {  // one stage problem
    index_t p, k;
    op_graph shape;
    std::shared_ptr<const stage_problem> sp;
    std::size_t index;
    std::vector<std::map<std::string, int>> config_of;  ///< per node: config key -> index
  };
  struct stage_range {  // a stage's ops, and the problem it uses
    stage_subgraph sg;
    std::size_t built;
  };
  auto key_of = [](const op_config& c) {
    std::string k;
    for (const auto& level : c.degree)
      for (auto d : level) k.append(reinterpret_cast<const char*>(&d), sizeof d);
    return k + char(c.recompute) + char(c.shard_optimizer);
  };
  pipeline_export out;
  std::vector<built_stage> built;
  std::map<std::tuple<index_t, index_t, std::size_t, std::size_t>, stage_range> ranges;
  std::map<std::tuple<int, int, std::vector<std::size_t>>, std::size_t> partitions;
  std::map<index_t, op_graph> micro_of;
  for (const auto& q : pts) {
    const pipeline_plan& pl = q.plan;
    if (const std::string e = pipeline_plan_error(pl, g.ops.size()); !e.empty()) throw invalid_argument("export_pipeline: " + e);
    const index_t p = pl.degree, k = pl.micro_batches;
    if (!micro_of.count(k)) micro_of.emplace(k, with_batch(g, g.batch / k));
    const op_graph& micro = micro_of.at(k);
    const cluster scl = stage_cluster(cl, p);
    const cost_options co = stage_build_options(bo, k, p).cost();
    stage_choices st;
    st.degree = pl.degree;
    st.stage_begin = pl.stage_begin;
    const auto key = std::make_tuple(pl.degree, pl.micro_batches, pl.stage_begin);
    const bool fresh = !partitions.count(key);  // the sends of a partition are computed once
    pipeline_problem::partition pa;
    pa.degree = pl.degree;
    pa.micro_batches = pl.micro_batches;
    pa.stage_begin = pl.stage_begin;
    for (std::size_t s = 0; s < std::size_t(p); ++s) {
      const std::size_t a = pl.stage_begin[s], b = s + 1 < std::size_t(p) ? pl.stage_begin[s + 1] : g.ops.size();
      auto it = ranges.find({p, k, a, b});
      if (it == ranges.end()) {
        stage_range r{stage_graph(micro, a, b), built.size()};
        for (std::size_t x = 0; x < built.size() && r.built == built.size(); ++x)
          if (built[x].p == p && built[x].k == k && detail::same_stage_shape(built[x].shape, r.sg.graph)) r.built = x;
        if (r.built == built.size()) {
          auto sp = std::make_shared<const stage_problem>(build_stage_problem(micro, a, b, cl, bo, k, p, p - 1));
          out.problem.problems.push_back({sp->built.prob, detail::stage_activations(*sp)});
          built_stage bs{p, k, r.sg.graph, sp, out.problem.problems.size() - 1, {}};
          for (const auto& node : sp->built.configs) {
            bs.config_of.emplace_back();
            for (std::size_t c = 0; c < node.size(); ++c) bs.config_of.back().emplace(key_of(node[c]), int(c));
          }
          built.push_back(std::move(bs));
        }
        it = ranges.emplace(std::make_tuple(p, k, a, b), std::move(r)).first;
      }
      const stage_subgraph& sg = it->second.sg;
      const built_stage& bs = built[it->second.built];
      std::vector<op_config> cs(sg.graph.ops.size());
      for (std::size_t j = 0; j < cs.size(); ++j)
        if (sg.op_of[j] >= 0) cs[j] = pl.configs[std::size_t(sg.op_of[j])];
      if (s > 0) cs[0] = receive_config(pl, s, sg.graph, cs, scl, co);
      std::vector<int> choice;
      std::vector<std::string> labels;
      for (std::size_t j = 0; j < cs.size(); ++j) {
        const auto c = bs.config_of[j].find(key_of(cs[j]));
        if (c == bs.config_of[j].end())
          throw invalid_argument("export_pipeline: stage " + std::to_string(s) + " op '" + sg.graph.ops[j].name +
                                 "' has a config its stage problem does not hold (dropped as dominated or outside "
                                 "the enumeration bounds); build with drop_dominated = false");
        choice.push_back(c->second);
        labels.push_back(bs.sp->built.prob.nodes[j].configs[std::size_t(c->second)].label);
      }
      st.choice.push_back(std::move(choice));
      st.labels.push_back(std::move(labels));
      pa.stages.push_back({bs.index, in_flight(k, p, index_t(s))});
      if (s > 0 && fresh) {
        const int t = cut_tensor(micro, a);
        detail::require(t >= 0, "export_pipeline: stage " + std::to_string(s) + " starts at op " + std::to_string(a) +
                                    ", which is not a cut point");
        pa.sends.push_back(stage_send_time(micro.tensors[std::size_t(t)], cl, p, index_t(s) - 1, bo.prec));
      }
    }
    auto it = partitions.find(key);
    if (it == partitions.end()) {
      it = partitions.emplace(key, out.problem.partitions.size()).first;
      out.problem.partitions.push_back(std::move(pa));
    }
    st.partition = it->second;
    frontier_point fp;
    fp.time = q.time;
    fp.memory = q.memory;
    fp.peak = q.peak;  // the predicted runtime peak where the planner replayed it (0: not written)
    fp.micro_batches = pl.micro_batches;
    out.points.push_back({fp, std::move(st)});
  }
  return out;
}

}  // namespace tensoropt
