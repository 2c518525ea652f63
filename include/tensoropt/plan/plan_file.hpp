// The plan file "tensoropt-plan/2" (and "/1"): one chosen plan, written by the planner and run
// by a training program, possibly on another machine and long after planning.
//
// Format (units: seconds and bytes; JSON):
//   { "format": "tensoropt-plan/1",
//     "model": {"name": "<graph name>", "spec": "<model spec, or empty>", "batch": <global batch>,
//               "ops": <op count>, "parameters": <count>},
//     "cluster": {"nodes": <n>, "gpus_per_node": <g>, "gpu": "<device preset>"},
//     "precision": "fp32" | "bf16-mixed",
//     "stack": {"attention": "materialized" | "fused", "fused_bn_relu": <bool>,
//               "local_batch_norm": <bool>, "linear_bias_pass": <bool>,
//               "regenerate_dropout": <bool>, "overlap_grad_sync": <bool>},
//                                                (optional: the cost model's software stack;
//                                                 "overlap_grad_sync" optional in it, absent = false)
//     "micro_batches": <k>,
//     "time": <s per iteration, predicted>, "memory": <bytes per device, predicted: the runtime peak>,
//     "summary": "<one line>",
//     "ops": [ {"name": "<op>", "label": "<config label>",
//               "dims": {"<dim>": {"extent": <e>, "degrees": [<per mesh level: nodes, gpus>]}, ...},
//               "recompute": <bool>, "shard_optimizer": <bool>} ],
//     "pipeline": {"degree": <p>, "stage_begin": [<first op of each stage>],
//                  "receive": [<per stage after the first: the received input's
//                               "dims" object as an op's>]} }      (only in "/2")
//
// "/2" adds "pipeline": a pipeline_plan (plan/pipeline_plan.hpp) whose op degrees are
// for each stage's mesh. Without it a "/2" file is a one-stage plan as "/1" is.
// Every op is named, so a reader applies a config to the op of that name, and the
// dims carry their extents, so a plan for another model (other names, another batch
// or width) is refused naming the first difference rather than run with configs
// meant for other shapes. A plan is tied to its device mesh: running it on another
// device count is refused. Precision is checked by the runtime that runs it (the
// CPU backend runs fp32).
//
// "stack" (added as an optional field under both versions) records the software-stack
// switches the predicted time and memory assume (cost_options); a file without it was
// planned with the defaults (materialized attention, every switch off).
// Versioning: "/1" is the layout above without "pipeline"; "/2" adds it. Readers take
// both and refuse other formats; new
// optional fields may be added under the same version, and any change a reader
// of "/1" would misread gets a new number.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include <nlohmann/json.hpp>
#include "../core/input_file.hpp"
#include "../search/problem_json.hpp"
#include "plan.hpp"
#include "training_plan.hpp"

namespace tensoropt {

/// A plan file's contents.
struct plan_file {
  struct op_entry {
    std::string name, label;
    std::vector<std::string> dims;        ///< dim names, in the op's order
    std::vector<index_t> extents;         ///< per dim
    std::vector<std::array<std::int32_t, max_levels>> degrees;  ///< per dim: degree per mesh level
    bool recompute = false, shard_optimizer = false;
  };
  std::string model, spec;
  index_t batch = 1;
  std::size_t op_count = 0;
  double parameters = 0;
  index_t nodes = 1, gpus_per_node = 1;
  std::string gpu, precision;
  /// the software stack of the prediction ("stack"; cost_options)
  attention_kernel attention = attention_kernel::materialized;
  bool fused_bn_relu = false, local_batch_norm = false, linear_bias_pass = false, regenerate_dropout = false;
  bool overlap_grad_sync = false;
  int micro_batches = 1;
  seconds time{};
  bytes memory{};
  std::string summary;
  std::vector<op_entry> ops;
  /// "/2": pipeline stages (degree 1: none); receive[s - 1]: stage s's received input layout
  int pipeline_degree = 1;
  std::vector<std::size_t> stage_begin{};
  std::vector<op_entry> receive{};

  index_t devices() const { return nodes * gpus_per_node; }
  /// The software-stack switches of `b`.
  void set_stack(const build_options& b) {
    attention = b.attention;
    fused_bn_relu = b.fused_bn_relu;
    local_batch_norm = b.local_batch_norm;
    linear_bias_pass = b.linear_bias_pass;
    regenerate_dropout = b.regenerate_dropout;
    overlap_grad_sync = b.overlap_grad_sync;
  }
};

/// The plan file of `p`; `spec` names the model the way a user gave it (may be empty).
inline plan_file make_plan_file(const plan& p, std::string spec = {}) {
  const auto& g = p.graph();
  const auto& pf = p.frontier();
  plan_file f;
  f.model = g.name;
  f.spec = std::move(spec);
  f.batch = g.batch;
  f.op_count = g.ops.size();
  f.parameters = g.parameter_count();
  f.nodes = pf.cl.mesh.nodes;
  f.gpus_per_node = pf.cl.mesh.gpus_per_node;
  f.gpu = std::string(pf.cl.gpu_spec.name);
  f.precision = std::string(pf.build.prec.name);
  f.set_stack(pf.build);
  f.micro_batches = p.micro_batches();
  f.time = p.time();
  f.memory = p.memory();
  f.summary = p.summary();
  const auto configs = p.op_configs();
  const auto& labels = p.point().labels;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const auto& op = g.ops[i];
    plan_file::op_entry e;
    e.name = op.name;
    e.label = i < labels.size() ? labels[i] : std::string();
    for (std::size_t d = 0; d < op.dims.size(); ++d) {
      e.dims.emplace_back(op.dims[d].name);
      e.extents.push_back(op.dims[d].extent);
      std::array<std::int32_t, max_levels> deg{};
      for (int L = 0; L < max_levels; ++L) deg[std::size_t(L)] = configs[i].degree[std::size_t(L)][d];
      e.degrees.push_back(deg);
    }
    e.recompute = configs[i].recompute;
    e.shard_optimizer = configs[i].shard_optimizer;
    f.ops.push_back(std::move(e));
  }
  return f;
}

/// The plan file's text (one op per line).
inline std::string write_plan_json(const plan_file& f) {
  using oj = nlohmann::ordered_json;
  oj head;
  head["format"] = f.pipeline_degree > 1 ? "tensoropt-plan/2" : "tensoropt-plan/1";
  head["model"] = {{"name", f.model}, {"spec", f.spec}, {"batch", f.batch}, {"ops", f.op_count},
                   {"parameters", f.parameters}};
  head["cluster"] = {{"nodes", f.nodes}, {"gpus_per_node", f.gpus_per_node}, {"gpu", f.gpu}};
  head["precision"] = f.precision;
  head["stack"] = {{"attention", attention_kernel_name(f.attention)}, {"fused_bn_relu", f.fused_bn_relu},
                   {"local_batch_norm", f.local_batch_norm}, {"linear_bias_pass", f.linear_bias_pass},
                   {"regenerate_dropout", f.regenerate_dropout}, {"overlap_grad_sync", f.overlap_grad_sync}};
  head["micro_batches"] = f.micro_batches;
  head["time"] = f.time / seconds(1);
  head["memory"] = to_byte_count(f.memory);
  head["summary"] = f.summary;
  std::string s = head.dump();
  s.pop_back();  // the closing brace: the ops follow, one per line
  s += ",\n \"ops\": [";
  for (std::size_t i = 0; i < f.ops.size(); ++i) {
    const auto& e = f.ops[i];
    oj dims = oj::object();
    for (std::size_t d = 0; d < e.dims.size(); ++d)
      dims[e.dims[d]] = {{"extent", e.extents[d]}, {"degrees", e.degrees[d]}};
    oj op = {{"name", e.name}, {"label", e.label}, {"dims", dims}, {"recompute", e.recompute},
             {"shard_optimizer", e.shard_optimizer}};
    s += (i ? ",\n  " : "\n  ") + op.dump();
  }
  s += "]";
  if (f.pipeline_degree > 1) {
    oj rec = oj::array();
    for (const auto& e : f.receive) {
      oj dims = oj::object();
      for (std::size_t d = 0; d < e.dims.size(); ++d)
        dims[e.dims[d]] = {{"extent", e.extents[d]}, {"degrees", e.degrees[d]}};
      rec.push_back(dims);
    }
    oj pl = {{"degree", f.pipeline_degree}, {"stage_begin", f.stage_begin}, {"receive", rec}};
    s += ",\n \"pipeline\": " + pl.dump();
  }
  s += "}\n";
  return s;
}

namespace detail {
inline std::int64_t plan_json_int(const nlohmann::json& v, const std::string& at, std::int64_t lo, std::int64_t hi) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
    throw format_error(at + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                       "], got " + json_echo(v));
  return v.get<std::int64_t>();
}
inline bool plan_json_bool(const nlohmann::json& v, const std::string& at) {
  if (!v.is_boolean()) throw format_error(at + ": expected true or false, got " + json_echo(v));
  return v.get<bool>();
}
}  // namespace detail

namespace detail {
/// The "dims" object of an op entry (extents and degrees per dim) into `e`.
inline void read_plan_dims(const nlohmann::json& dims, const std::string& at, plan_file::op_entry& e) {
  if (!dims.is_object()) throw format_error(at + ": expected an object of dims");
  for (auto it = dims.begin(); it != dims.end(); ++it) {
    const std::string dat = at + "." + it.key();
    e.dims.push_back(it.key());
    e.extents.push_back(plan_json_int(json_field(*it, "extent", dat), dat + ".extent", 1, INT64_MAX));
    const auto& deg = json_array(json_field(*it, "degrees", dat), dat + ".degrees");
    if (deg.size() != std::size_t(max_levels))
      throw format_error(dat + ".degrees: expected " + std::to_string(max_levels) +
                         " degrees (one per mesh level: nodes, gpus), got " + std::to_string(deg.size()));
    std::array<std::int32_t, max_levels> d{};
    for (std::size_t L = 0; L < deg.size(); ++L)
      d[L] = std::int32_t(plan_json_int(deg[L], dat + ".degrees[" + std::to_string(L) + "]", 1, max_devices));
    e.degrees.push_back(d);
  }
}
/// The "pipeline" object of a "/2" file.
inline void read_plan_pipeline(const nlohmann::json& pl, plan_file& f) {
  if (!pl.is_object()) throw format_error("pipeline: expected an object");
  f.pipeline_degree = int(plan_json_int(json_field(pl, "degree", "pipeline"), "pipeline.degree", 1, max_devices));
  const auto& sb = json_array(json_field(pl, "stage_begin", "pipeline"), "pipeline.stage_begin");
  if (sb.size() != std::size_t(f.pipeline_degree))
    throw format_error("pipeline.stage_begin: expected " + std::to_string(f.pipeline_degree) + " stage starts, got " +
                       std::to_string(sb.size()));
  for (std::size_t s = 0; s < sb.size(); ++s)
    f.stage_begin.push_back(std::size_t(plan_json_int(sb[s], "pipeline.stage_begin[" + std::to_string(s) + "]", 0,
                                                      std::int64_t(f.op_count) - 1)));
  const auto& rec = json_array(json_field(pl, "receive", "pipeline"), "pipeline.receive");
  if (!rec.empty() && rec.size() + 1 != sb.size())
    throw format_error("pipeline.receive: expected " + std::to_string(sb.size() - 1) + " layouts (one per stage after "
                       "the first), got " + std::to_string(rec.size()));
  for (std::size_t s = 0; s < rec.size(); ++s) {
    plan_file::op_entry e;
    read_plan_dims(rec[s], "pipeline.receive[" + std::to_string(s) + "]", e);
    f.receive.push_back(std::move(e));
  }
}
}  // namespace detail

/// Reads a plan file's text, checking every field; throws format_error naming the
/// field.
inline plan_file read_plan_json(std::string_view text) {
  using detail::json_field, detail::json_path, detail::json_string, detail::plan_json_int;
  const nlohmann::json j = detail::parse_json_text(text, "plan");
  if (!j.is_object()) throw format_error(std::string("plan file: expected a JSON object, got ") + j.type_name());
  const auto& fmt = json_field(j, "format", "");
  const bool v2 = fmt.is_string() && fmt.get<std::string>() == "tensoropt-plan/2";
  if (!fmt.is_string() || (fmt.get<std::string>() != "tensoropt-plan/1" && !v2))
    throw format_error("format: expected \"tensoropt-plan/1\" or \"tensoropt-plan/2\", got " + detail::json_echo(fmt));
  plan_file f;
  const auto& m = json_field(j, "model", "");
  f.model = json_string(json_field(m, "name", "model"), "model.name");
  f.spec = json_string(json_field(m, "spec", "model"), "model.spec");
  f.batch = plan_json_int(json_field(m, "batch", "model"), "model.batch", 1, INT64_MAX);
  f.op_count = std::size_t(plan_json_int(json_field(m, "ops", "model"), "model.ops", 0, INT32_MAX));
  const auto& params = json_field(m, "parameters", "model");
  if (!params.is_number()) throw format_error("model.parameters: expected a number");
  f.parameters = params.get<double>();
  const auto& c = json_field(j, "cluster", "");
  f.nodes = plan_json_int(json_field(c, "nodes", "cluster"), "cluster.nodes", 1, max_devices);
  f.gpus_per_node = plan_json_int(json_field(c, "gpus_per_node", "cluster"), "cluster.gpus_per_node", 1, max_devices);
  f.gpu = json_string(json_field(c, "gpu", "cluster"), "cluster.gpu");
  f.precision = json_string(json_field(j, "precision", ""), "precision");
  try {
    (void)parse_precision(f.precision);
  } catch (const invalid_argument& e) {
    throw format_error(std::string("precision: ") + e.what());
  }
  if (j.contains("stack")) {  // optional (file comment)
    const auto& st = j["stack"];
    if (!st.is_object()) throw format_error("stack: expected an object of software-stack switches");
    try {
      f.attention = parse_attention_kernel(json_string(json_field(st, "attention", "stack"), "stack.attention"));
    } catch (const invalid_argument& e) {
      throw format_error(std::string("stack.attention: ") + e.what());
    }
    f.fused_bn_relu = detail::plan_json_bool(json_field(st, "fused_bn_relu", "stack"), "stack.fused_bn_relu");
    f.local_batch_norm = detail::plan_json_bool(json_field(st, "local_batch_norm", "stack"), "stack.local_batch_norm");
    f.linear_bias_pass = detail::plan_json_bool(json_field(st, "linear_bias_pass", "stack"), "stack.linear_bias_pass");
    f.regenerate_dropout =
        detail::plan_json_bool(json_field(st, "regenerate_dropout", "stack"), "stack.regenerate_dropout");
    if (st.contains("overlap_grad_sync"))  // added later: absent = off
      f.overlap_grad_sync = detail::plan_json_bool(st["overlap_grad_sync"], "stack.overlap_grad_sync");
  }
  f.micro_batches = int(plan_json_int(json_field(j, "micro_batches", ""), "micro_batches", 1, INT32_MAX));
  f.time = from_picoseconds(detail::json_seconds(json_field(j, "time", ""), "time"));
  f.memory = from_byte_count(detail::json_bytes(json_field(j, "memory", ""), "memory"));
  f.summary = json_string(json_field(j, "summary", ""), "summary");
  const auto& ops = detail::json_array(json_field(j, "ops", ""), "ops");
  if (ops.size() != f.op_count)
    throw format_error("ops: model.ops says " + std::to_string(f.op_count) + " ops, the list has " +
                       std::to_string(ops.size()));
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::string at = "ops[" + std::to_string(i) + "]";
    plan_file::op_entry e;
    e.name = json_string(json_field(ops[i], "name", at), json_path(at, "name"));
    e.label = json_string(json_field(ops[i], "label", at), json_path(at, "label"));
    const auto& dims = json_field(ops[i], "dims", at);
    if (!dims.is_object()) throw format_error(at + ".dims: expected an object of dims");
    for (auto it = dims.begin(); it != dims.end(); ++it) {
      const std::string dat = at + ".dims." + it.key();
      e.dims.push_back(it.key());
      e.extents.push_back(plan_json_int(json_field(*it, "extent", dat), dat + ".extent", 1, INT64_MAX));
      const auto& deg = detail::json_array(json_field(*it, "degrees", dat), dat + ".degrees");
      if (deg.size() != std::size_t(max_levels))
        throw format_error(dat + ".degrees: expected " + std::to_string(max_levels) +
                           " degrees (one per mesh level: nodes, gpus), got " + std::to_string(deg.size()));
      std::array<std::int32_t, max_levels> d{};
      for (std::size_t L = 0; L < deg.size(); ++L)
        d[L] = std::int32_t(plan_json_int(deg[L], dat + ".degrees[" + std::to_string(L) + "]", 1, max_devices));
      e.degrees.push_back(d);
    }
    e.recompute = detail::plan_json_bool(json_field(ops[i], "recompute", at), json_path(at, "recompute"));
    e.shard_optimizer =
        detail::plan_json_bool(json_field(ops[i], "shard_optimizer", at), json_path(at, "shard_optimizer"));
    f.ops.push_back(std::move(e));
  }
  if (v2 && j.contains("pipeline")) detail::read_plan_pipeline(j["pipeline"], f);
  return f;
}

/// Reads the plan file at `path`; throws format_error naming the file.
inline plan_file load_plan_file(const std::string& path) {
  std::string why;
  const auto text = read_input_file(path, why);
  if (!text) throw format_error("cannot open the plan file '" + path + "' (" + why + ")");
  try {
    return read_plan_json(*text);
  } catch (const format_error& e) {
    throw format_error("plan file '" + path + "': " + e.what());
  }
}

/// The training plan of `f` for graph `g`. Throws invalid_argument naming the first
/// difference when the plan was made for another model (name, batch, ops, dims) or
/// when its configs do not fit the mesh.
inline training_plan plan_for_graph(const plan_file& f, const op_graph& g) {
  auto refuse = [&](const std::string& why) {
    throw invalid_argument("the plan was made for another model: " + why);
  };
  if (f.model != g.name) refuse("model '" + f.model + "', this is '" + g.name + "'");
  if (f.batch != g.batch)
    refuse("global batch " + std::to_string(f.batch) + ", this model's is " + std::to_string(g.batch));
  if (f.ops.size() != g.ops.size())
    refuse(std::to_string(f.ops.size()) + " ops, this model has " + std::to_string(g.ops.size()));
  training_plan tp;
  tp.micro_batches = f.micro_batches;
  tp.mesh = device_mesh(f.nodes, f.gpus_per_node);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const auto& op = g.ops[i];
    const auto& e = f.ops[i];
    if (e.name != op.name) refuse("op " + std::to_string(i) + " is '" + e.name + "', here '" + op.name + "'");
    if (e.dims.size() != op.dims.size())
      refuse("op '" + op.name + "' has " + std::to_string(e.dims.size()) + " dims in the plan, " +
             std::to_string(op.dims.size()) + " here");
    op_config c;
    for (std::size_t d = 0; d < e.dims.size(); ++d) {
      const int k = op.dim_index(e.dims[d]);
      if (k < 0) refuse("op '" + op.name + "' has no dim '" + e.dims[d] + "' here");
      if (op.dims[std::size_t(k)].extent != e.extents[d])
        refuse("op '" + op.name + "' dim '" + e.dims[d] + "' is " + std::to_string(e.extents[d]) +
               " in the plan, " + std::to_string(op.dims[std::size_t(k)].extent) + " here");
      for (int L = 0; L < max_levels; ++L) c.degree[std::size_t(L)][std::size_t(k)] = e.degrees[d][std::size_t(L)];
    }
    for (int L = 0; L < max_levels; ++L)
      detail::require(tp.mesh.level_size(L) % c.split_product(L) == 0,
                      "plan file: op '" + op.name + "' splits mesh level " + std::to_string(L) + " (size " +
                          std::to_string(tp.mesh.level_size(L)) + ") " + std::to_string(c.split_product(L)) +
                          " ways; the degrees must divide the level");
    c.recompute = e.recompute;
    c.shard_optimizer = e.shard_optimizer;
    tp.configs.push_back(c);
  }
  return tp;
}

}  // namespace tensoropt
