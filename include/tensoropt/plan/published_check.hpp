// The cost model against the published training runs it ships with
// (cost/published_runs.hpp): each row's strategy evaluated on its model and cluster with
// its software stack, as `tensoropt-plan --strategy` evaluates it, and the predicted step
// time set against the measured one. `tensoropt-plan --published-runs` prints the result
// (and with --svg plots it); the unit test cost_published_runs_test holds it.
//
// Lists, each with what it is held to (published_list):
//   main         published_runs: every row within 15 %, the median |error| within 5 %;
//   fused_stack  fused_stack_runs (MXNet's fused batch norm): each within 15 %, out of
//                the median;
//   fp32         fp32_runs (BERT in FP32 on V100): each within 15 %, out of the median;
//   layer        layer_runs (one encoder layer timed alone): the rows marked held within
//                15 %; the others must be under-predicted (the model prices a layer no
//                higher than the fastest implementation's time);
//   outside      unmodelled_runs: printed with the reason they are outside the model,
//                held to nothing here.
//
// A row's prediction: evaluate_spec of its SPEC (a pipelined row: balanced stages under
// 1F1B, evaluate_pipeline), the micro-batch count the row's batches give, and for a
// BERT row whose MLM head runs on the masked positions only (mlm_predictions > 0, the
// source's dense_sequence_output) the head's and loss's share of the breakdown scaled by
// mlm_predictions / seq (the lowering runs them on every token). A layer row's:
// layer_seconds (plan/layer_time.hpp).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>
#include "../cost/published_runs.hpp"
#include "../models/cnn.hpp"
#include "../models/transformer.hpp"
#include "layer_time.hpp"
#include "pipeline_spec.hpp"
#include "strategy_spec.hpp"

namespace tensoropt {

/// What-if variants of the cost model for a row. `no_latency`: the links' per-message
/// latency set to 0 (collectives as a few fused calls would cost, e.g. Horovod's tensor
/// fusion, instead of one per parameter); `flat_gemm`: no contraction-length factor
/// (device::gemm_k0 = 0); `no_bias_pass`: the row's linear_bias_pass off.
struct published_variant {
  bool no_latency = false, flat_gemm = false, no_bias_pass = false;
};

/// The row's model as an op graph; `seq` > 0 replaces a transformer row's sequence length.
inline op_graph published_graph(const published_run& r, index_t seq = 0) {
  if (r.model == published_model::resnet50) {
    // one lowering at 12288 images (a multiple of every row's batch), cut to the row's
    static const op_graph resnet50 = lower<models::wide_resnet<50, 64, 1, 12288, "resnet50">>();
    return with_batch(resnet50, r.global_batch);
  }
  models::gpt_config c;
  c.layers = r.layers;
  c.hidden = r.hidden;
  c.heads = r.heads;
  c.seq = seq ? seq : r.seq;
  c.vocab = r.vocab;
  c.batch = r.global_batch;
  return lower_transformer(c, r.model == published_model::bert ? models::transformer_kind::bert
                                                                 : models::transformer_kind::gpt);
}

/// The row's strategy evaluated on its model and cluster with its stack's switches
/// (a pipelined row's per-op breakdown is left empty). `micro_batches` > 0 replaces the
/// row's count, `seq` > 0 its sequence length.
inline spec_evaluation evaluate_published(const published_run& r, index_t micro_batches = 0, index_t seq = 0,
                                          published_variant v = {}) {
  device d = gpus::find(r.device);
  if (v.no_latency) d.nvlink.latency = d.network.latency = seconds(0);
  if (v.flat_gemm) d.gemm_k0 = 0;
  const cluster cl(device_mesh(r.nodes, r.gpus_per_node), d);
  build_options bo;
  bo.prec = parse_precision(r.precision);
  bo.micro_batches = micro_batches ? micro_batches : r.micro_batches();
  bo.attention = r.attention;
  bo.local_batch_norm = r.local_batch_norm;
  bo.fused_bn_relu = r.fused_bn_relu;
  bo.linear_bias_pass = r.linear_bias_pass && !v.no_bias_pass;
  bo.overlap_grad_sync = r.overlap_grad_sync;
  const strategy_spec s = parse_strategy_spec(r.strategy);
  const op_graph g = published_graph(r, seq);
  if (s.pp == 1) return evaluate_spec(s, g, cl, bo);
  const pipeline_cost c = evaluate_pipeline(g, plan_from_spec(g, cl.mesh, s, bo.micro_batches), cl, bo);
  spec_evaluation e;
  e.time = double(c.time) / ps_per_second;
  e.memory = double(c.memory);
  e.mfu = model_flops_utilization(g, e.time, cl, bo.prec);
  return e;
}

/// The row's predicted seconds per iteration (see the file comment for the MLM head);
/// `full_head` leaves the head on every token.
inline double predict_published(const published_run& r, index_t micro_batches = 0, index_t seq = 0,
                                bool full_head = false, published_variant v = {}) {
  const auto e = evaluate_published(r, micro_batches, seq, v);
  if (!r.transformer() || r.mlm_predictions == 0 || full_head) return e.time;
  double head = 0;
  for (const auto& o : e.ops)
    if (o.name.rfind("head.", 0) == 0 || o.name == "loss") head += o.time;
  return e.time - head * (1 - double(r.mlm_predictions) / double(seq ? seq : r.seq));
}

/// One encoder layer's forward + backward as the model charges it, for a layer row:
/// BERT's layer at the row's shape and batch, with the implementation's bias pass and
/// activation dropout.
inline double predict_published_layer(const published_layer_run& r) {
  models::gpt_config c;
  c.hidden = r.hidden;
  c.heads = r.heads;
  c.seq = r.seq;
  c.vocab = 30528;
  c.batch = r.batch;
  build_options bo;
  bo.linear_bias_pass = r.linear_bias_pass;
  return layer_seconds(c, models::transformer_kind::bert, gpus::find(r.device), bo, r.activation_dropout);
}

/// Which list of cost/published_runs.hpp a row is from (see the file comment).
enum class published_list { main, fused_stack, fp32, layer, outside };

/// The lists in the order they are checked, printed and plotted.
inline constexpr published_list published_lists[] = {published_list::main, published_list::fused_stack,
                                                     published_list::fp32, published_list::layer,
                                                     published_list::outside};

inline const char* to_string(published_list l) {
  switch (l) {
    case published_list::main: return "main";
    case published_list::fused_stack: return "fused-stack";
    case published_list::fp32: return "fp32";
    case published_list::layer: return "layer";
    case published_list::outside: return "outside";
  }
  return "?";
}

/// The |error| a held row is held to, and the median the main list is held to.
inline constexpr double published_row_tolerance = 0.15;
inline constexpr double published_median_tolerance = 0.05;

/// One row checked: measured and predicted seconds (per iteration; per layer pass for a
/// layer row) and what it is held to.
struct published_check_row {
  std::string name, device, note, source;
  published_list list = published_list::main;
  double measured = 0, predicted = 0;
  bool held = true;       ///< held to published_row_tolerance; otherwise printed with `note`
  bool confirmed = true;  ///< figure and configuration checked against a stored copy of the source
  double error() const { return predicted / measured - 1; }
  /// Whether the row meets what it is held to: |error| within the tolerance when held; a
  /// layer row not held must be under-predicted; an outside row is held to nothing.
  bool ok() const {
    if (held) return std::abs(error()) <= published_row_tolerance;
    return list == published_list::layer ? predicted < measured : true;
  }
  /// What it is held to, in words ("within 15 %"; "under-predicted, printed: NOTE";
  /// "nothing, outside the model: NOTE").
  std::string held_to() const {
    if (held) return "within " + std::to_string(int(std::lround(100 * published_row_tolerance))) + " %";
    return (list == published_list::layer ? "under-predicted, printed: " : "nothing, outside the model: ") + note;
  }
};

/// Every row of every list, evaluated (see the file comment).
inline std::vector<published_check_row> check_published_runs() {
  std::vector<published_check_row> out;
  auto add = [&](std::string_view name, std::string_view device, std::string_view note, std::string_view source,
                 published_list l, double measured, double predicted, bool held, bool confirmed) {
    out.push_back({std::string(name), std::string(device), std::string(note), std::string(source), l, measured,
                   predicted, held, confirmed});
  };
  auto add_run = [&](const published_run& r, published_list l, bool held) {
    add(r.name, r.device, r.note, r.source, l, measured_seconds(r), predict_published(r), held, r.confirmed);
  };
  for (const auto& r : published_runs) add_run(r, published_list::main, true);
  for (const auto& r : fused_stack_runs) add_run(r, published_list::fused_stack, true);
  for (const auto& r : fp32_runs) add_run(r, published_list::fp32, true);
  for (const auto& r : layer_runs)
    add(r.name, r.device, r.note, r.source, published_list::layer, r.milliseconds / 1e3, predict_published_layer(r),
        r.held, true);
  for (const auto& r : unmodelled_runs) add_run(r, published_list::outside, false);
  return out;
}

namespace detail {
/// The median of `v` (0 for none).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
}  // namespace detail

/// A list's rows: how many, and the median and largest |error| over them (0 for none).
struct published_summary {
  std::size_t rows = 0;
  double median = 0, max = 0;
};

inline published_summary summarize(const std::vector<published_check_row>& rows, published_list l) {
  std::vector<double> e;
  for (const auto& r : rows)
    if (r.list == l) e.push_back(std::abs(r.error()));
  published_summary s;
  s.rows = e.size();
  s.max = e.empty() ? 0 : *std::max_element(e.begin(), e.end());
  s.median = detail::median(std::move(e));
  return s;
}

/// What misses what it is held to: the name of each row whose ok() is false, then "the
/// main table's median (x %)" when that median exceeds published_median_tolerance.
inline std::vector<std::string> published_check_misses(const std::vector<published_check_row>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows)
    if (!r.ok()) out.push_back(r.name);
  const double m = summarize(rows, published_list::main).median;
  if (m > published_median_tolerance) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "the main table's median (%.1f %%)", 100 * m);
    out.emplace_back(buf);
  }
  return out;
}

/// Whether every row meets what it is held to and the main list's median is within
/// published_median_tolerance.
inline bool published_check_passes(const std::vector<published_check_row>& rows) {
  return published_check_misses(rows).empty();
}

}  // namespace tensoropt
