// The problem builder: op graph + cluster + options -> the search problem
// (search/problem.hpp), plus the side table from each problem config to its op_config.
//
// Costs are rounded to the nearest integer picosecond and byte, per node config and
// per edge pair (so a strategy's problem cost is the sum of rounded terms; evaluate()
// in plan/strategy.hpp rounds the same way). Configs dominated locally are dropped:
// config c of an op is dropped when a kept config c' of the same op has the same
// layouts and the same recompute switch (so every edge entry of c' equals c's: edge
// time depends only on layouts, edge memory on layouts and recompute) and is no
// worse in both time and memory; of equal configs the first is kept. This is exact.
// Ops of a repeated block with the same shape as their copy in the block's first
// instance reuse its configs and costs; edges whose ends map to the same first-
// instance ops reuse the edge matrices; within one edge, times are computed once
// per distinct (producer layout, consumer layout) pair.
#pragma once
#include <algorithm>
#include <vector>
#include "../cost/cluster.hpp"
#include "../cost/enumerate.hpp"
#include "../cost/op_cost.hpp"
#include "../search/problem.hpp"

namespace tensoropt {

struct build_options {
  precision prec = precisions::bf16_mixed;
  index_t micro_batches = 1;     ///< k: the global batch runs as k micro-batches
  enumerate_options configs{};   ///< which configs each op gets (bounding rules)
  bytes reserve{};               ///< workspace + communication buffers: memory_offset
  bool drop_dominated = true;
  attention_kernel attention = attention_kernel::materialized;  ///< how attention cores run
  bool regenerate_dropout = false;  ///< see cost_options (true for the CPU runtime)
  bool local_batch_norm = false;    ///< see cost_options (published runs without SyncBN)
  bool fused_bn_relu = false;       ///< see cost_options (stacks fusing BN with the ReLU after it)
  bool linear_bias_pass = false;    ///< see cost_options (stacks adding a linear's bias in a pass of its own)
  bool overlap_grad_sync = false;   ///< see cost_options (stacks reducing gradients while backward goes on)
  index_t accumulated_micro_batches = 0;  ///< see cost_options (0: micro_batches; k under 1F1B)
  constexpr cost_options cost() const {
    return {prec,           micro_batches,    attention,         regenerate_dropout, local_batch_norm,
            fused_bn_relu,  linear_bias_pass, overlap_grad_sync, accumulated_micro_batches};
  }
};

/// The problem and what each of its configs means.
struct built_problem {
  problem prob;
  std::vector<std::vector<op_config>> configs;  ///< configs[node][config index]
  op_graph graph;                                ///< the micro-batch graph the costs are for
  cluster cl;
  build_options options;
  /// Plans at or above this time (ps per iteration) are not searched: configs slower on
  /// their own are dropped and redistribution times are capped at it, so that no sum the
  /// search forms can leave the exact integer range (search/problem.hpp's 2^62 bound over
  /// every node's slowest config plus every edge's slowest cell). Every strategy faster
  /// than the cap keeps its exact cost, so the frontier below the cap is exact; the
  /// planner drops points at or above it. The cap is the largest c with the sum over
  /// nodes of min(slowest config, c) within 2^61 (and the same over edges with what is
  /// left of 2^62), so only the few terms that are huge on their own are cut: no cap
  /// (max_problem_cost) when every sum fits uncut. A uniform cap of 2^62 ps over the
  /// number of terms (1,381 s on megatron-1t) cut every plan of it that fits 80 GB.
  cost_t time_cap = max_problem_cost;
};

namespace detail {
constexpr cost_t round_cost(double x) {
  require(x >= 0 && x < 9.0e18, "build_problem: a cost is negative, NaN or too large to represent");
  return cost_t(x + 0.5);
}
constexpr bool same_map_shape(const op_graph& g, const tensor_map& a, const tensor_map& b) {
  if ((a.tensor < 0) != (b.tensor < 0)) return false;
  if (a.tensor < 0) return true;
  const auto& ta = g.tensors[a.tensor];
  const auto& tb = g.tensors[b.tensor];
  return a.dim == b.dim && ta.extents == tb.extents && ta.rank == tb.rank && ta.integer == tb.integer &&
         ta.parameter == tb.parameter;
}
/// Whether ops a and b cost the same under every config (all but the name).
constexpr bool same_cost_shape(const op_graph& g, const std::vector<op_facts>& f, int a, int b) {
  const op_node& x = g.ops[a];
  const op_node& y = g.ops[b];
  if (x.kind != y.kind || x.dims != y.dims || x.attr != y.attr || x.saved != y.saved ||
      x.fwd_flops_per_point != y.fwd_flops_per_point || x.bwd_flops_per_point != y.bwd_flops_per_point ||
      x.inputs.size() != y.inputs.size() || x.params.size() != y.params.size() ||
      f[a].owned_params != f[b].owned_params || (f[a].readers == 0) != (f[b].readers == 0))
    return false;
  for (std::size_t i = 0; i < x.inputs.size(); ++i)
    if (!same_map_shape(g, x.inputs[i], y.inputs[i])) return false;
  for (std::size_t i = 0; i < x.params.size(); ++i)
    if (!same_map_shape(g, x.params[i], y.params[i])) return false;
  return same_map_shape(g, x.output, y.output);
}
/// For every op, the op of the first repeat instance it can reuse (or itself).
constexpr std::vector<int> canonical_ops(const op_graph& g, const std::vector<op_facts>& f) {
  const int n = int(g.ops.size());
  std::vector<int> canon(n);
  std::vector<std::vector<int>> first;  // [repeat_id][position] -> op of instance 0
  std::vector<int> pos(n, 0);
  int cur_id = -2, cur_index = -1, count = 0;
  for (int i = 0; i < n; ++i) {
    canon[i] = i;
    const auto& op = g.ops[i];
    if (op.repeat_id < 0) continue;
    if (op.repeat_id != cur_id || op.repeat_index != cur_index) {
      cur_id = op.repeat_id;
      cur_index = op.repeat_index;
      count = 0;
    }
    pos[i] = count++;
    if (std::size_t(op.repeat_id) >= first.size()) first.resize(std::size_t(op.repeat_id) + 1);
    auto& v = first[op.repeat_id];
    if (op.repeat_index == 0) {
      if (std::size_t(pos[i]) >= v.size()) v.resize(std::size_t(pos[i]) + 1, -1);
      v[pos[i]] = i;
    } else if (std::size_t(pos[i]) < v.size() && v[pos[i]] >= 0 && same_cost_shape(g, f, v[pos[i]], i)) {
      canon[i] = v[pos[i]];
    }
  }
  return canon;
}
/// The largest c with sum over v of min(v_i, c) <= budget (max_problem_cost when the
/// whole sum fits): the cap that cuts only the largest terms.
constexpr cost_t water_level(std::vector<cost_t> v, cost_t budget) {
  std::sort(v.begin(), v.end());
  cost_t below = 0;  // sum of v[0..i)
  for (std::size_t i = 0; i < v.size(); ++i) {
    const cost_t rest = cost_t(v.size() - i);
    // every term from i on is cut at c: below + rest * c <= budget
    if (v[i] > (budget - below) / rest) return (budget - below) / rest;
    below += v[i];
  }
  return max_problem_cost;
}
struct edge_key {
  int from = -1, to = -1, slot = 0;
  bool same_instance = false;
  int edge = -1;  ///< the problem edge holding the matrices
};
}  // namespace detail

/// Builds the problem (see the file comment). `graph` is the FULL-batch graph
/// (as lowered): the builder itself splits it into o.micro_batches micro-batches
/// (with_batch) and keeps the micro-batch graph in the result; do not pass an
/// already micro-batched graph with micro_batches > 1. Throws invalid_argument
/// unless the micro-batch count is at least 1 and divides the batch of every batch
/// dim, unless the reserve is non-negative, and unless every op has a config.
constexpr built_problem build_problem(const op_graph& graph, const cluster& cl, const build_options& o = {}) {
  detail::require(o.micro_batches >= 1 && graph.batch % o.micro_batches == 0,
                  "build_problem: the micro-batch count must be at least 1 and divide the global batch");
  detail::require(o.reserve.value >= 0, "build_problem: the memory reserve must be non-negative");
  detail::require(o.accumulated_micro_batches >= 0,
                  "build_problem: the accumulated micro-batch count must be non-negative (0: the micro-batch count)");
  built_problem out;
  out.graph = with_batch(graph, graph.batch / o.micro_batches);
  out.cl = cl;
  out.options = o;
  const op_graph& g = out.graph;
  const cost_options co = o.cost();
  const auto facts = analyze(g);
  const auto canon = detail::canonical_ops(g, facts);
  const int n = int(g.ops.size());
  out.prob.memory_offset = detail::round_cost(o.reserve.value);
  out.prob.nodes.resize(n);
  out.configs.resize(n);
  for (int i = 0; i < n; ++i) {
    auto& node = out.prob.nodes[i];
    node.name = g.ops[i].name;
    if (canon[i] != i) {
      node.configs = out.prob.nodes[canon[i]].configs;
      out.configs[i] = out.configs[canon[i]];
      continue;
    }
    const auto all = enumerate_configs(g, g.ops[i], cl.mesh, o.configs);
    std::vector<problem_config> pc;
    for (auto& c : all) {
      const op_cost k = cost_op(g, i, c, cl, co, facts[i]);
      pc.push_back({label_of(g.ops[i], c, cl.mesh), detail::round_cost(k.time().value * ps_per_second),
                    detail::round_cost(k.memory().value)});
    }
    for (std::size_t a = 0; a < all.size(); ++a) {
      bool dominated = false;
      if (o.drop_dominated)
        for (std::size_t b = 0; b < all.size() && !dominated; ++b) {
          if (a == b || !all[a].same_layout(all[b]) || all[a].recompute != all[b].recompute) continue;
          const bool no_worse = pc[b].time <= pc[a].time && pc[b].memory <= pc[a].memory;
          const bool equal = pc[b].time == pc[a].time && pc[b].memory == pc[a].memory;
          dominated = no_worse && (!equal || b < a);
        }
      if (!dominated) {
        node.configs.push_back(pc[a]);
        out.configs[i].push_back(all[a]);
      }
    }
    detail::require(!node.configs.empty(), "build_problem: an op has no legal config on this mesh; relax the "
                                           "enumerate_options bounds or change the device count");
  }
  // The time cap over the nodes (see built_problem::time_cap): configs at or above it are
  // dropped, unless that leaves an op none (then all stay and validate says why).
  {
    std::vector<cost_t> slowest;
    for (auto& node : out.prob.nodes) {
      cost_t t = 0;
      for (auto& c : node.configs) t = std::max(t, c.time);
      slowest.push_back(t);
    }
    out.time_cap = detail::water_level(std::move(slowest), max_problem_cost / 2);
    for (int i = 0; i < n && out.time_cap < max_problem_cost; ++i) {
      auto& node = out.prob.nodes[i];
      bool any = false;
      for (auto& c : node.configs) any = any || c.time < out.time_cap;
      if (!any) continue;
      std::size_t w = 0;
      for (std::size_t a = 0; a < node.configs.size(); ++a)
        if (node.configs[a].time < out.time_cap) {
          node.configs[w] = node.configs[a];
          out.configs[i][w++] = out.configs[i][a];
        }
      node.configs.resize(w);
      out.configs[i].resize(w);
    }
  }

  std::vector<detail::edge_key> done;
  for (const auto& e : g.edges()) {
    problem_edge pe;
    pe.from = e.from;
    pe.to = e.to;
    const bool same = detail::same_instance(g.ops[e.from], g.ops[e.to]);
    int reuse = -1;
    for (auto& k : done)
      if (k.from == canon[e.from] && k.to == canon[e.to] && k.slot == e.slot && k.same_instance == same) reuse = k.edge;
    if (reuse >= 0) {
      pe.time = out.prob.edges[reuse].time;
      pe.memory = out.prob.edges[reuse].memory;
      out.prob.edges.push_back(std::move(pe));
      continue;
    }
    const auto& cu = out.configs[e.from];
    const auto& cv = out.configs[e.to];
    // layout classes: configs with equal degrees have equal layouts
    auto classes = [](const std::vector<op_config>& cs, std::vector<int>& rep) {
      std::vector<int> cls(cs.size());
      for (std::size_t i = 0; i < cs.size(); ++i) {
        int c = -1;
        for (std::size_t r = 0; r < rep.size() && c < 0; ++r)
          if (cs[rep[r]].same_layout(cs[i])) c = int(r);
        if (c < 0) {
          c = int(rep.size());
          rep.push_back(int(i));
        }
        cls[i] = c;
      }
      return cls;
    };
    std::vector<int> ru, rv;
    const auto clu = classes(cu, ru);
    const auto clv = classes(cv, rv);
    std::vector<cost_t> times(ru.size() * rv.size());
    for (std::size_t a = 0; a < ru.size(); ++a)
      for (std::size_t b = 0; b < rv.size(); ++b)
        times[a * rv.size() + b] = std::min(
            max_problem_cost, detail::round_cost(edge_time(g, e, cu[ru[a]], cv[rv[b]], cl, co).value * ps_per_second));
    pe.time.resize(cu.size() * cv.size());
    pe.memory.resize(cu.size() * cv.size());
    for (std::size_t a = 0; a < cu.size(); ++a)
      for (std::size_t b = 0; b < cv.size(); ++b) {
        pe.time[a * cv.size() + b] = times[std::size_t(clu[a]) * rv.size() + std::size_t(clv[b])];
        pe.memory[a * cv.size() + b] = detail::round_cost(edge_memory(g, e, cu[a], cv[b], co).value);
      }
    done.push_back({canon[e.from], canon[e.to], e.slot, same, int(out.prob.edges.size())});
    out.prob.edges.push_back(std::move(pe));
  }
  // The time cap over the edges, from what the nodes leave of 2^62: cells at or above it
  // are cut to it (a plan holding one takes at least the cap and is dropped).
  {
    cost_t used = 0;
    for (auto& node : out.prob.nodes) {
      cost_t t = 0;
      for (auto& c : node.configs) t = std::max(t, c.time);
      used = std::min(max_problem_cost, used + t);
    }
    std::vector<cost_t> slowest;
    for (auto& pe : out.prob.edges) slowest.push_back(pe.time.empty() ? 0 : *std::max_element(pe.time.begin(), pe.time.end()));
    const cost_t cap = detail::water_level(std::move(slowest), max_problem_cost - used);
    if (cap < max_problem_cost && used < max_problem_cost) {  // (else validate says the nodes alone are too large)
      for (auto& pe : out.prob.edges)
        for (auto& t : pe.time) t = std::min(t, cap);
      out.time_cap = std::min(out.time_cap, cap);
    }
  }
  return out;
}

/// Index of `c` among node `node`'s configs, or -1 (e.g. dropped as dominated).
constexpr int config_index(const built_problem& b, int node, const op_config& c) {
  for (std::size_t i = 0; i < b.configs[node].size(); ++i)
    if (b.configs[node][i] == c) return int(i);
  return -1;
}

}  // namespace tensoropt
