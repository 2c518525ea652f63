// One-line summaries of a strategy: "dp 4 x tp 2 (s8 on 96 ops), recompute 12/24 layers, zero".
//
// The summary names the split that carries most of the model's FLOPs: the degree on
// batch dims ("dp") and on all other dims ("tp"), weighted by each op's forward
// FLOPs. The ops that use another split are named by the split most of them share,
// written as in config labels (a dim name and its degree: "s4" = the sequence dim split
// 4 ways, as in sequence parallelism of the element-wise ops): "tp 4 (s4 on 146 ops)",
// or "(s4 on 120 ops, 26 others)" when they do not all share it. Recomputation and
// optimizer sharding are counted per repeated block ("layers") when the model has
// repeats, per op otherwise.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>
#include "../cost/config.hpp"
#include "../model/graph.hpp"

namespace tensoropt {

struct strategy_split {
  std::int64_t dp = 1;  ///< product of the degrees on batch dims
  std::int64_t tp = 1;  ///< product of the degrees on every other dim
  constexpr auto operator<=>(const strategy_split&) const = default;
};

constexpr strategy_split split_of(const op_node& op, const op_config& c) {
  strategy_split s;
  for (std::size_t d = 0; d < op.dims.size(); ++d)
    (op.dims[d].batch ? s.dp : s.tp) *= c.total_degree(int(d));
  return s;
}

/// "s4", "b2 h2": the dims `c` splits and their degrees (all mesh levels together);
/// "replicated" when it splits none.
inline std::string split_name(const op_node& op, const op_config& c) {
  std::string s;
  for (std::size_t d = 0; d < op.dims.size(); ++d)
    if (c.total_degree(int(d)) > 1)
      s += (s.empty() ? "" : " ") + std::string(op.dims[d].name) + std::to_string(c.total_degree(int(d)));
  return s.empty() ? "replicated" : s;
}

/// "dp 4 x tp 2 (s8 on 3 ops), recompute 12/24 layers, zero 24/24 layers" for `configs`
/// (one per op).
inline std::string summarize(const op_graph& g, const std::vector<op_config>& configs) {
  if (configs.size() != g.ops.size()) return "?";
  std::map<strategy_split, double> weight;
  double total = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const auto& op = g.ops[i];
    if (op.kind == op_kind::input) continue;
    const double w = op.fwd_flops_per_point * op.points() + 1;
    weight[split_of(op, configs[i])] += w;
    total += w;
  }
  strategy_split main{};
  double best = -1;
  for (auto& [s, w] : weight)
    if (w > best) { best = w; main = s; }
  std::string out;
  if (main.dp > 1) out += "dp " + std::to_string(main.dp);
  if (main.tp > 1) out += std::string(out.empty() ? "" : " x ") + "tp " + std::to_string(main.tp);
  if (out.empty()) out = "replicated";
  std::size_t others = 0;
  std::map<std::string, std::size_t> other_splits;
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (g.ops[i].kind != op_kind::input && split_of(g.ops[i], configs[i]) != main) {
      ++others;
      ++other_splits[split_name(g.ops[i], configs[i])];
    }
  if (others) {
    auto common = other_splits.begin();
    for (auto it = other_splits.begin(); it != other_splits.end(); ++it)
      if (it->second > common->second) common = it;
    out += " (" + common->first + " on " + std::to_string(common->second) + (common->second == 1 ? " op" : " ops");
    if (common->second < others)
      out += ", " + std::to_string(others - common->second) + (others - common->second == 1 ? " other" : " others");
    out += ")";
  }

  // Recompute / optimizer sharding, counted per repeated block when there are repeats.
  std::set<std::pair<int, int>> blocks, rc_blocks, zo_blocks;
  std::size_t ops = 0, rc_ops = 0, zo_ops = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const auto& op = g.ops[i];
    if (op.kind == op_kind::input) continue;
    ++ops;
    rc_ops += configs[i].recompute;
    zo_ops += configs[i].shard_optimizer;
    if (op.repeat_id >= 0) {
      const std::pair<int, int> b{op.repeat_id, op.repeat_index};
      blocks.insert(b);
      if (configs[i].recompute) rc_blocks.insert(b);
      if (configs[i].shard_optimizer) zo_blocks.insert(b);
    }
  }
  const bool per_block = !blocks.empty();
  const std::string unit = per_block ? " layers" : " ops";
  const std::size_t n = per_block ? blocks.size() : ops;
  const std::size_t rc = per_block ? rc_blocks.size() : rc_ops;
  const std::size_t zo = per_block ? zo_blocks.size() : zo_ops;
  if (rc) out += ", recompute " + std::to_string(rc) + "/" + std::to_string(n) + unit;
  if (zo) out += ", zero " + std::to_string(zo) + "/" + std::to_string(n) + unit;
  return out;
}

}  // namespace tensoropt
