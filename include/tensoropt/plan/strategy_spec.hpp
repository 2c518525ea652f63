// A hand-written strategy from the command line (`--strategy SPEC`) and its
// evaluation on the cost model: time, memory, model FLOPs utilization and a per-op
// breakdown, so one plan can be checked against a measured run without a search.
//
// SPEC is comma-separated key=value: pp (pipeline degree, default 1: pp > 1 makes a
// pipeline plan, plan/pipeline_spec.hpp), dp (data-parallel degree; default: the devices
// left over by tp and pp), tp (Megatron tensor-parallel degree, default 1), sp=0|1
// (sequence parallelism), recompute=none|selective|full (selective = the attention
// cores, as in Korthikanti et al. 2022; full = every op where meaningful, which
// keeps each layer's input), zero=0|1 (optimizer-state sharding over the replicas).
// dp * tp must equal the device count; tp must divide the devices per node (the
// Megatron layout keeps tensor parallelism inside a node). Anything else is an
// invalid_argument naming the key and what is valid.
//
// Model FLOPs utilization (Chowdhery et al. 2022, PaLM appendix B) =
//   model FLOPs per iteration / (iteration time * devices * peak FLOP/s),
// with model FLOPs = 3 * the forward FLOPs of the graph (forward + 2x backward),
// recomputation not counted, and the peak of the compute dtype (bf16 tensor cores
// for bf16-mixed, FP32 units for fp32).
#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>
#include "build_problem.hpp"
#include "strategy.hpp"

namespace tensoropt {

struct strategy_spec {
  enum class recompute_kind : std::uint8_t { none, selective, full };
  index_t dp = 0;  ///< 0: the devices left over by tp (and pp)
  index_t tp = 1;
  index_t pp = 1;  ///< pipeline stages (plan/pipeline_spec.hpp)
  bool sp = false;
  recompute_kind recompute = recompute_kind::none;
  bool zero = false;
};

namespace detail {
inline index_t spec_int(std::string_view key, std::string_view v) {
  index_t x = 0;
  if (!parse_int(v, x) || x < 1)
    throw invalid_argument("--strategy: " + std::string(key) + "=" + std::string(v) +
                           " is not a positive integer");
  return x;
}
inline bool spec_bool(std::string_view key, std::string_view v) {
  if (v == "0") return false;
  if (v == "1") return true;
  throw invalid_argument("--strategy: " + std::string(key) + "=" + std::string(v) + "; write " + std::string(key) +
                         "=0 or " + std::string(key) + "=1");
}
}  // namespace detail

/// Parses SPEC (see the file comment). Throws invalid_argument on an unknown key, a
/// bad value or a repeated key, listing the valid ones.
inline strategy_spec parse_strategy_spec(std::string_view spec) {
  strategy_spec s;
  std::vector<std::string> seen;
  std::string_view rest = spec;
  if (rest.empty()) throw invalid_argument("--strategy: empty SPEC; write e.g. tp=2,sp=1,recompute=selective");
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      throw invalid_argument("--strategy: '" + std::string(item) + "' is not key=value; valid keys: pp, dp, tp, sp, "
                             "recompute, zero");
    const std::string_view k = item.substr(0, eq), v = item.substr(eq + 1);
    if (std::find(seen.begin(), seen.end(), std::string(k)) != seen.end())
      throw invalid_argument("--strategy: key '" + std::string(k) + "' is given twice");
    seen.emplace_back(k);
    if (k == "dp") s.dp = detail::spec_int(k, v);
    else if (k == "pp") s.pp = detail::spec_int(k, v);
    else if (k == "tp") s.tp = detail::spec_int(k, v);
    else if (k == "sp") s.sp = detail::spec_bool(k, v);
    else if (k == "zero") s.zero = detail::spec_bool(k, v);
    else if (k == "recompute") {
      if (v == "none") s.recompute = strategy_spec::recompute_kind::none;
      else if (v == "selective") s.recompute = strategy_spec::recompute_kind::selective;
      else if (v == "full") s.recompute = strategy_spec::recompute_kind::full;
      else
        throw invalid_argument("--strategy: recompute=" + std::string(v) + "; valid: none, selective, full");
    } else
      throw invalid_argument("--strategy: unknown key '" + std::string(k) + "'; valid keys: pp, dp, tp, sp, recompute, "
                             "zero");
  }
  return s;
}

/// The per-op configs of `s` on `mesh` for graph `g` (a micro-batch graph). Throws
/// invalid_argument when the degrees do not fit the mesh or do not divide the dims.
inline std::vector<op_config> configs_of(const strategy_spec& s, const op_graph& g, const device_mesh& mesh) {
  if (s.pp > 1)
    throw invalid_argument("--strategy: pp=" + std::to_string(s.pp) +
                           " makes a pipeline plan; evaluate it with plan_from_spec / evaluate_pipeline");
  const index_t n = mesh.devices();
  const index_t dp = s.dp ? s.dp : n / s.tp;
  if (s.tp > n || n % s.tp != 0 || dp * s.tp != n)
    throw invalid_argument("--strategy: dp=" + std::to_string(dp) + " x tp=" + std::to_string(s.tp) + " = " +
                           std::to_string(dp * s.tp) + " devices, but the cluster has " + std::to_string(n) +
                           "; make dp * tp equal the device count");
  if (mesh.gpus_per_node % s.tp != 0)
    throw invalid_argument("--strategy: tp=" + std::to_string(s.tp) + " does not divide the " +
                           std::to_string(mesh.gpus_per_node) + " devices per node; pick a divisor of it");
  if (s.sp && s.tp == 1) throw invalid_argument("--strategy: sp=1 needs tp > 1 (it splits the sequence over tp)");
  strategy st;
  st.k = strategy::kind::megatron;
  st.tensor_parallel = s.tp;
  st.sequence_parallel = s.sp;
  st.recompute = s.recompute == strategy_spec::recompute_kind::full;
  st.shard_optimizer = s.zero;
  auto r = resolve(st, g, mesh);
  if (r.error != strategy_error::none) throw invalid_argument("--strategy: " + r.message);
  if (s.recompute == strategy_spec::recompute_kind::selective)
    for (std::size_t i = 0; i < g.ops.size(); ++i) r.configs[i].recompute = g.ops[i].kind == op_kind::attention;
  return r.configs;
}

/// One op's share of a strategy's cost (time in seconds, memory in bytes; the
/// op's incoming edges are counted with it).
struct op_breakdown {
  std::string name;
  double time = 0, memory = 0;
};

/// A strategy evaluated on the cost model.
struct spec_evaluation {
  std::vector<op_config> configs;  ///< on the micro-batch graph
  double time = 0;                 ///< seconds per iteration
  double memory = 0;               ///< bytes per device (incl. the reserve)
  double mfu = 0;                  ///< model FLOPs utilization, 0..1
  std::vector<op_breakdown> ops;
};

/// Model FLOPs utilization of an iteration of `time` seconds of full-batch graph `g`
/// on `cl` (see the file comment).
inline double model_flops_utilization(const op_graph& g, double time, const cluster& cl, const precision& p) {
  if (time <= 0) return 0;
  return 3 * g.fwd_flops() / (time * double(cl.mesh.devices()) * cl.gpu_spec.peak(p.compute).value);
}

/// Evaluates `s` on the full-batch graph `g` with o.micro_batches micro-batches.
inline spec_evaluation evaluate_spec(const strategy_spec& s, const op_graph& g, const cluster& cl,
                                     const build_options& o = {}) {
  const op_graph mg = with_batch(g, g.batch / o.micro_batches);
  spec_evaluation r;
  r.configs = configs_of(s, mg, cl.mesh);
  const auto c = evaluate(mg, r.configs, cl, o);
  r.time = double(c.time) / ps_per_second;
  r.memory = double(c.memory);
  r.mfu = model_flops_utilization(g, r.time, cl, o.prec);
  const cost_options co = o.cost();
  const auto facts = analyze(mg);
  for (std::size_t i = 0; i < mg.ops.size(); ++i) {
    const op_cost k = cost_op(mg, int(i), r.configs[i], cl, co, facts[i]);
    r.ops.push_back({mg.ops[i].name, k.time().value, k.memory().value});
  }
  for (const auto& e : mg.edges()) {
    r.ops[std::size_t(e.to)].time += edge_time(mg, e, r.configs[e.from], r.configs[e.to], cl, co).value;
    r.ops[std::size_t(e.to)].memory += edge_memory(mg, e, r.configs[e.from], r.configs[e.to], co).value;
  }
  return r;
}

}  // namespace tensoropt
