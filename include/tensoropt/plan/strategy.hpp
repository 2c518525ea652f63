// Named strategies (data parallel, Megatron tensor parallel + data parallel,
// explicit per-op degrees): the op_config of every op, and the strategy's cost.
//
// Megatron of degree t (t inside a node, data parallel over the rest of the node
// and over all nodes on each op's first batch dim):
//   linear: column-parallel when an output dim is heads, f, v or classes (qkv,
//     fc1, LM head: split it by t), else row-parallel when a contracted dim is
//     heads or f (proj, fc2: split it), else replicated over t;
//   attention: heads; embedding: v (vocab-parallel); softmax_xent: its class dim;
//   moe_experts: e; other ops: a dim named f or heads if they have one (the gelu
//     between fc1 and fc2), else s under sequence parallelism, else replicated.
// Data parallel = Megatron with t = 1. Explicit rules "prefix:dim=deg,dim=deg"
// give total degrees to the dims of every op whose name starts with prefix ("*"
// or "" = every op; later rules win); a degree fills the intra-node level first
// (the largest part dividing what is left of it), the rest goes between nodes;
// dims no rule names stay unsplit.
#pragma once
#include <numeric>
#include <string>
#include <string_view>
#include <vector>
#include "../cost/enumerate.hpp"
#include "../cost/op_cost.hpp"
#include "build_problem.hpp"

namespace tensoropt {

/// A strategy as a value. `devices` pins the device count (0 = any).
struct strategy {
  enum class kind : std::uint8_t { data_parallel, megatron, explicit_degrees };
  kind k = kind::data_parallel;
  index_t tensor_parallel = 1;
  bool sequence_parallel = false;
  bool recompute = false;         ///< recompute every op where meaningful
  bool shard_optimizer = false;   ///< shard optimizer state wherever params replicate
  index_t devices = 0;
  std::vector<std::string_view> rules;  ///< explicit_degrees: "prefix:dim=deg,..."
};

/// Why a strategy does not apply (codes let compile-time checks pick one message).
enum class strategy_error : std::uint8_t {
  none,
  mesh_mismatch,   ///< pinned device count or tensor-parallel degree vs the mesh
  not_divisible,   ///< a degree does not divide the dim it splits
  too_many,        ///< an op's degrees need more devices than the mesh has
  bad_rule,        ///< an explicit rule is malformed or names no op's dim
};

struct resolved_strategy {
  std::vector<op_config> configs;  ///< one per op
  strategy_error error = strategy_error::none;
  std::string message;             ///< what is wrong and how to fix it
};

namespace detail {
constexpr bool named(std::string_view n, std::initializer_list<std::string_view> names) {
  for (auto x : names)
    if (n == x) return true;
  return false;
}
constexpr int first_batch_dim(const op_node& op) {
  for (std::size_t d = 0; d < op.dims.size(); ++d)
    if (op.dims[d].batch && op.dims[d].splittable) return int(d);
  return -1;
}
/// The dim Megatron splits by t in `op`, or -1.
constexpr int megatron_dim(const op_node& op, bool sp) {
  auto find = [&](std::size_t lo, std::size_t hi, std::initializer_list<std::string_view> names) {
    for (std::size_t d = lo; d < hi && d < op.dims.size(); ++d)
      if (named(op.dims[d].name, names)) return int(d);
    return -1;
  };
  const std::size_t nd = op.dims.size();
  switch (op.kind) {
    case op_kind::linear: {
      const std::size_t b = std::size_t(op.attr[0]), c = b + std::size_t(op.attr[1]), o = c + std::size_t(op.attr[2]);
      const int col = find(c, o, {"heads", "f", "v", "classes"});
      if (col >= 0) return col;
      return find(b, c, {"heads", "f"});
    }
    case op_kind::attention: return find(0, nd, {"heads"});
    case op_kind::embedding: return find(0, nd, {"v"});
    case op_kind::softmax_xent: return nd ? find(nd - 1, nd, {"v", "classes"}) : -1;
    case op_kind::moe_experts: return find(0, nd, {"e"});
    case op_kind::input: return -1;
    default: {
      const int d = find(0, nd, {"f", "heads"});
      if (d >= 0) return d;
      return sp ? find(0, nd, {"s"}) : -1;
    }
  }
}
constexpr bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
constexpr bool parse_int(std::string_view s, index_t& v) {
  if (s.empty()) return false;
  v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + (ch - '0');
    if (v > max_devices) return false;
  }
  return true;
}
}  // namespace detail

/// The op_config of every op of `g` under `s` on `mesh`, or the reason it fails.
constexpr resolved_strategy resolve(const strategy& s, const op_graph& g, const device_mesh& mesh) {
  resolved_strategy r;
  auto fail = [&](strategy_error e, std::string msg) {
    r.error = e;
    r.message = msg;
    r.configs.clear();
    return r;
  };
  if (s.devices != 0 && s.devices != mesh.devices())
    return fail(strategy_error::mesh_mismatch, detail::cat({"the strategy is pinned to ", detail::int_str(s.devices),
                                                                " devices but the mesh has ",
                                                                detail::int_str(mesh.devices())}));
  const index_t t = s.k == strategy::kind::megatron ? s.tensor_parallel : 1;
  if (s.k != strategy::kind::explicit_degrees && (t < 1 || mesh.gpus_per_node % t != 0))
    return fail(strategy_error::mesh_mismatch, detail::cat({"tensor-parallel degree ", detail::int_str(t), " does not divide the ",
                                                                detail::int_str(mesh.gpus_per_node),
                                                                " devices per node; use a divisor of it"}));
  std::vector<bool> rule_used(s.rules.size(), false);
  for (const auto& op : g.ops) {
    op_config c;
    if (s.k != strategy::kind::explicit_degrees) {
      const int bd = detail::first_batch_dim(op);
      const int td = t > 1 ? detail::megatron_dim(op, s.sequence_parallel) : -1;
      if (bd >= 0) {
        c.degree[0][bd] = std::int32_t(mesh.nodes);
        c.degree[1][bd] = std::int32_t(mesh.gpus_per_node / t);
      }
      if (td >= 0 && td != bd) c.degree[1][td] = std::int32_t(t);
    } else {
      index_t want[max_op_dims] = {1, 1, 1, 1, 1, 1, 1, 1};
      for (std::size_t ri = 0; ri < s.rules.size(); ++ri) {
        const std::string_view rule = s.rules[ri];
        const auto colon = rule.find(':');
        if (colon == std::string_view::npos)
          return fail(strategy_error::bad_rule, detail::cat({"strategy rule '", rule, "' has no ':'; write \"prefix:dim=degree,...\""}));
        const std::string_view prefix = rule.substr(0, colon);
        if (!(prefix == "*" || detail::starts_with(op.name, prefix))) continue;
        std::string_view rest = rule.substr(colon + 1);
        while (!rest.empty()) {
          const auto comma = rest.find(',');
          const std::string_view item = rest.substr(0, comma);
          rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
          const auto eq = item.find('=');
          index_t deg = 0;
          if (eq == std::string_view::npos || !detail::parse_int(item.substr(eq + 1), deg) || deg < 1)
            return fail(strategy_error::bad_rule, detail::cat({"strategy rule '", rule, "': write each split as dim=degree with degree >= 1"}));
          const int d = op.dim_index(item.substr(0, eq));
          if (d >= 0) {
            want[d] = deg;
            rule_used[ri] = true;
          }
        }
      }
      index_t left1 = mesh.gpus_per_node, left0 = mesh.nodes;
      for (std::size_t d = 0; d < op.dims.size(); ++d) {
        if (want[d] == 1) continue;
        if (!op.dims[d].splittable || op.dims[d].extent % want[d] != 0)
          return fail(strategy_error::not_divisible,
                      detail::cat({"op '", op.name, "': degree ", detail::int_str(want[d]), " does not divide dim '",
                                   op.dims[d].name, "' of extent ", detail::int_str(op.dims[d].extent),
                                   op.dims[d].splittable ? "; pick a divisor" : " (it cannot be split)"}));
        const index_t l1 = std::gcd(want[d], left1);
        const index_t l0 = want[d] / l1;
        if (left0 % l0 != 0)
          return fail(strategy_error::too_many, detail::cat({"op '", op.name, "': the degrees need more devices than the mesh (",
                                                             detail::int_str(mesh.nodes), " x ",
                                                             detail::int_str(mesh.gpus_per_node), ") has; lower them"}));
        left1 /= l1;
        left0 /= l0;
        c.degree[1][d] = std::int32_t(l1);
        c.degree[0][d] = std::int32_t(l0);
      }
    }
    for (std::size_t d = 0; d < op.dims.size(); ++d)
      if (c.total_degree(int(d)) > 1 &&
          (!op.dims[d].splittable || op.dims[d].extent % c.total_degree(int(d)) != 0))
        return fail(strategy_error::not_divisible,
                    detail::cat({"op '", op.name, "': degree ", detail::int_str(c.total_degree(int(d))), " does not divide dim '",
                                 op.dims[d].name, "' of extent ", detail::int_str(op.dims[d].extent),
                                 op.dims[d].splittable ? "; pick a divisor" : " (it cannot be split)"}));
    c.recompute = s.recompute && can_recompute(op);
    c.shard_optimizer = s.shard_optimizer && params_replicated(g, op, c, mesh);
    r.configs.push_back(c);
  }
  for (std::size_t ri = 0; ri < s.rules.size(); ++ri)
    if (!rule_used[ri])
      return fail(strategy_error::bad_rule, detail::cat({"strategy rule '", s.rules[ri],
                                                             "' splits no dim of any op; check the op name prefix "
                                                             "and dim names"}));
  return r;
}

/// resolve(), throwing invalid_argument with the reason on failure.
constexpr std::vector<op_config> configs_of(const strategy& s, const op_graph& g, const device_mesh& mesh) {
  auto r = resolve(s, g, mesh);
  if (r.error != strategy_error::none) {
    if (std::is_constant_evaluated()) throw invalid_argument("strategy does not apply to this graph and mesh");
    throw invalid_argument(r.message);
  }
  return r.configs;
}

/// (time in ps, memory in bytes) of per-op `configs` on `cl`, rounded exactly as
/// build_problem rounds (per op and per edge), plus the reserve: equal to cost_of()
/// on the built problem whenever every config is in it.
constexpr strategy_cost evaluate(const op_graph& g, const std::vector<op_config>& configs, const cluster& cl,
                                 const build_options& o = {}) {
  detail::require(configs.size() == g.ops.size(), "evaluate: one op_config per op is needed");
  const cost_options co = o.cost();
  const auto facts = analyze(g);
  strategy_cost s{0, detail::round_cost(o.reserve.value)};
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const op_cost k = cost_op(g, int(i), configs[i], cl, co, facts[i]);
    s.time += detail::round_cost(k.time().value * ps_per_second);
    s.memory += detail::round_cost(k.memory().value);
  }
  for (const auto& e : g.edges()) {
    s.time += detail::round_cost(edge_time(g, e, configs[e.from], configs[e.to], cl, co).value * ps_per_second);
    s.memory += detail::round_cost(edge_memory(g, e, configs[e.from], configs[e.to], co).value);
  }
  return s;
}

/// The strategy's cost on the full-batch graph `g` with o.micro_batches micro-batches.
constexpr strategy_cost evaluate(const strategy& s, const op_graph& g, const cluster& cl, const build_options& o = {}) {
  detail::require(o.micro_batches >= 1 && g.batch % o.micro_batches == 0,
                  "evaluate: the micro-batch count must be at least 1 and divide the global batch");
  const op_graph mg = with_batch(g, g.batch / o.micro_batches);
  return evaluate(mg, configs_of(s, mg, cl.mesh), cl, o);
}

/// Compile-time strategy types (for fits<> and baselines): each has value().
namespace strategies {
struct data_parallel {
  static constexpr strategy value() { return {}; }
};
/// Megatron tensor parallel of degree T inside each node, data parallel over the
/// rest; SP = sequence parallel; Devices pins the device count (0 = any).
template <index_t T, bool SP = false, index_t Devices = 0>
struct megatron {
  static_assert(T >= 1, "tensoropt::strategies::megatron: the tensor-parallel degree must be at least 1");
  static constexpr strategy value() {
    strategy s;
    s.k = strategy::kind::megatron;
    s.tensor_parallel = T;
    s.sequence_parallel = SP;
    s.devices = Devices;
    return s;
  }
};
/// Explicit per-op degrees: `explicit_degrees<"*:b=4", "layers.0.mlp:f=2">`.
template <fixed_string... Rules>
struct explicit_degrees {
  static constexpr strategy value() {
    strategy s;
    s.k = strategy::kind::explicit_degrees;
    (s.rules.push_back(Rules.view()), ...);
    return s;
  }
};
/// Adds recompute and/or optimizer sharding to a strategy type.
template <class S, bool Recompute, bool ShardOptimizer = false>
struct with_switches {
  static constexpr strategy value() {
    strategy s = S::value();
    s.recompute = Recompute;
    s.shard_optimizer = ShardOptimizer;
    return s;
  }
};
/// Runs S with the global batch as K micro-batches (gradient accumulation).
template <class S, index_t K>
struct micro_batched : S {
  static_assert(K >= 1, "tensoropt::strategies::micro_batched: the micro-batch count must be at least 1");
  static constexpr index_t micro_batches = K;
};
/// Runs S under precision policy P (e.g. precisions::fp32).
template <class S, const precision& P>
struct with_precision : S {
  static constexpr tensoropt::precision precision = P;
};
}  // namespace strategies

}  // namespace tensoropt
