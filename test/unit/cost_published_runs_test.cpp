// cost/published_runs: the cost model against published measurements of real runs.
// Every row's strategy is evaluated with evaluate_spec (a pipelined row: plan_from_spec
// and evaluate_pipeline) on the row's model and cluster; predicted / measured step time is printed per row, every row must be
// within 15 % and the median |error| within 5 %. Errors on rows used to fit a
// constant (none at present), on the other rows and on the confirmed rows alone are
// reported separately; the 22B pair also checks the predicted full / selective+SP
// speed-up against the measured one (5 %), and every run's predicted memory must fit its
// device (each ran). The runs outside the model are evaluated
// and printed, held to nothing, except what explains them: the BERT phase-2 rows
// must be over-predicted at the nominal 512 tokens and not at the binned bound.
// Single encoder layers timed alone (layer_runs) are charged their layer's ops without
// the optimizer step: the fused implementation within 15 %, PyTorch's eager layer
// under-predicted (its reason).
#include <tensoropt/cost/published_runs.hpp>
#include <tensoropt/models/cnn.hpp>
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/layer_time.hpp>
#include <tensoropt/plan/pipeline_spec.hpp>
#include <tensoropt/plan/strategy_spec.hpp>
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace cost_published_runs_test_file {

using namespace tensoropt;

namespace {
/// ResNet-50 at 12288 images (a multiple of every row's batch), cut to a row's batch
/// by with_batch.
const op_graph& resnet50_12288() {
  static const op_graph g = lower<models::wide_resnet<50, 64, 1, 12288, "resnet50">>();
  return g;
}

/// The row's graph; `seq` > 0 replaces a transformer row's sequence length.
op_graph graph_of(const published_run& r, index_t seq = 0) {
  if (r.model == published_model::resnet50) return with_batch(resnet50_12288(), r.global_batch);
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

/// Variants of the model for what-if prints. `no_latency`: the links' per-message
/// latency set to 0 (collectives as few fused calls would cost, e.g. Horovod's
/// tensor fusion, instead of one per parameter); `flat_gemm`: no contraction-length
/// factor (device::gemm_k0 = 0); `no_bias_pass`: the row's linear_bias_pass off.
struct variant {
  bool no_latency = false, flat_gemm = false, no_bias_pass = false;
};

spec_evaluation evaluate_row(const published_run& r, index_t micro_batches = 0, index_t seq = 0,
                             variant v = {}) {
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
  if (s.pp == 1) return evaluate_spec(s, graph_of(r, seq), cl, bo);
  // a pipeline row: balanced stages under 1F1B, as `tensoropt-plan --strategy pp=P,...`
  // evaluates them (the per-op breakdown is left empty: no pipelined row needs it)
  const op_graph g = graph_of(r, seq);
  const pipeline_cost c = evaluate_pipeline(g, plan_from_spec(g, cl.mesh, s, bo.micro_batches), cl, bo);
  spec_evaluation e;
  e.time = double(c.time) / ps_per_second;
  e.memory = double(c.memory);
  e.mfu = model_flops_utilization(g, e.time, cl, bo.prec);
  return e;
}

/// A row's predicted seconds per iteration. For a BERT row with mlm_predictions > 0
/// the MLM head and its loss run on the masked positions only (dense_sequence_output,
/// the source's default): the lowering runs them on every token, so their share of
/// the breakdown is scaled by mlm_predictions / seq (the head is per token); with
/// `full_head` it is left on every token. `seq` > 0 replaces the sequence length.
double predict(const published_run& r, index_t micro_batches = 0, index_t seq = 0, bool full_head = false,
               variant v = {}) {
  const auto e = evaluate_row(r, micro_batches, seq, v);
  if (!r.transformer() || r.mlm_predictions == 0 || full_head) return e.time;
  double head = 0;
  for (const auto& o : e.ops)
    if (o.name.rfind("head.", 0) == 0 || o.name == "loss") head += o.time;
  return e.time - head * (1 - double(r.mlm_predictions) / double(seq ? seq : r.seq));
}

double predicted_seconds(const published_run& r, index_t micro_batches = 0) { return predict(r, micro_batches); }

/// |a / b - 1| <= tol. (doctest::Approx adds a scale of 1 to its epsilon's base, so
/// for values near 1 it accepts about twice the stated relative error.)
bool within(double a, double b, double tol) { return std::abs(a / b - 1) <= tol; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void check_well_formed(const published_run& r) {
  CAPTURE(r.name);
  CHECK(r.gpus() > 0);
  const strategy_spec spec = parse_strategy_spec(r.strategy);  // the row's degrees are the SPEC's
  CHECK(spec.tp == r.tp());
  CHECK(spec.pp == r.pp());
  CHECK(r.gpus() % (r.tp() * r.pp()) == 0);
  CHECK(r.micro_batches() >= r.pp());  // 1F1B needs a micro-batch per stage
  CHECK(r.micro_batch > 0);
  CHECK(r.replicas() * r.micro_batch * r.micro_batches() == r.global_batch);
  if (r.transformer()) {
    CHECK(r.heads > 0);
    CHECK(r.hidden % r.heads == 0);
  }
  CHECK(!r.source.empty());
  CHECK((r.confirmed || !r.note.empty()));  // an unconfirmed row says what is missing
  CHECK(measured_seconds(r) > 0);
  if (r.pp() > 1) CHECK((r.transformer() && r.layers % r.pp() == 0));  // whole layers per stage
}
}  // namespace

TEST_CASE("published runs: the table is well formed") {
  for (const auto& r : published_runs) check_well_formed(r);
  for (const auto& r : unmodelled_runs) {
    check_well_formed(r);
    CHECK(!r.note.empty());  // the reason it is outside the model
  }
  for (const auto& r : fused_stack_runs) {
    check_well_formed(r);
    CHECK(r.fused_bn_relu);  // the stack's switch, from its runner
  }
  for (const auto& r : fp32_runs) {
    check_well_formed(r);
    CHECK(parse_precision(r.precision) == precisions::fp32);
  }
}

TEST_CASE("published runs: the BERT stack in FP32 on V100, each row within 15 %") {
  // No tensor cores: the GEMMs run on the CUDA cores (15.7 TFLOP/s), so these rows
  // check the FLOP count and the FP32 path of the same stack and release as the
  // mixed-precision BERT rows. Held per row; the main table's median with them is
  // printed, not held (file comment).
  std::vector<double> err;
  for (const auto& r : fp32_runs) {
    CAPTURE(r.name);
    const double meas = measured_seconds(r), pred = predicted_seconds(r);
    std::printf("%-34s %9.3fs %9.3fs %+7.1f%%\n", std::string(r.name).c_str(), meas, pred,
                100 * (pred - meas) / meas);
    CHECK(std::abs(pred - meas) / meas <= 0.15);
    err.push_back(std::abs(pred - meas) / meas);
  }
  for (const auto& r : published_runs)
    err.push_back(std::abs(predicted_seconds(r) - measured_seconds(r)) / measured_seconds(r));
  std::printf("main table with the FP32 rows: %zu rows, median |error| %.1f%% (not held)\n", err.size(),
              100 * median(err));
}

TEST_CASE("published runs: the MXNet fused batch-norm stack, each row within 15 %") {
  // The runner fuses BN + ReLU and BN + add + ReLU (switch fused_bn_relu): each row
  // is held to 15 %; the median is printed, not held (file comment: the rows stay out
  // of the main table's median). Without the switch the V100 rows are 18-27 % slow,
  // printed to show what the switch changes.
  std::vector<double> err;
  for (const auto& r : fused_stack_runs) {
    CAPTURE(r.name);
    const double meas = measured_seconds(r), pred = predicted_seconds(r);
    published_run unfused = r;
    unfused.fused_bn_relu = false;
    const double plain = predicted_seconds(unfused);
    CHECK(pred < plain);
    std::printf("%-34s %9.3fs %9.3fs %+7.1f%% (unfused: %+7.1f%%)\n", std::string(r.name).c_str(), meas, pred,
                100 * (pred - meas) / meas, 100 * (plain - meas) / meas);
    CHECK(std::abs(pred - meas) / meas <= 0.15);
    err.push_back(std::abs(pred - meas) / meas);
  }
  std::printf("fused-stack rows: %zu, median |error| %.1f%%\n", err.size(), 100 * median(err));
  for (const auto& r : published_runs)
    err.push_back(std::abs(predicted_seconds(r) - measured_seconds(r)) / measured_seconds(r));
  std::printf("main table with them: %zu rows, median |error| %.1f%% (not held)\n", err.size(), 100 * median(err));
}

TEST_CASE("published runs: Megatron's FLOPs formula reproduces the published MFU") {
  // Korthikanti et al. Table 5 prints 41.5 % model FLOPs utilization for the 22B run
  // at 1.10 s; model FLOPs exclude recomputation: 72/96 of eq. 3's count.
  const auto& r = published_runs[5];
  REQUIRE(r.name == "korthikanti-22b-selective-sp");
  const double mfu = 0.75 * megatron_flops_with_recompute(r) / (measured_seconds(r) * r.gpus() * 312e12);
  CHECK(within(mfu, 0.415, 0.005));
  // Narayanan et al. Table 1: 137 TFLOP/s per GPU is 44 % of the A100's 312.
  CHECK(within(published_runs[0].reported / 312, 0.44, 0.01));
  // Megatron-LM v1.0: 62.4 TFLOP/s at 1288 ms; eq. 3 without the logit term gives
  // 82.5 TFLOP for the assumed 1.2B shape, 2.5 % above 62.4 x 1.288 = 80.4: the
  // shape is plausible, not confirmed (the row says so).
  const auto& v = published_runs[6];
  REQUIRE(v.name == "megatron-v1-1.2b-v100");
  const double eq3_no_logits = 96.0 * 8 * 1024 * 40 * 1536.0 * 1536 * (1 + 1024.0 / (6 * 1536));
  CHECK(within(eq3_no_logits / (62.4e12 * measured_seconds(v)), 1.0, 0.03));
  // Megatron-Turing NLG: the source's 126 / 121 / 113 TFLOP/s per GPU at 60.1 / 50.2 /
  // 44.4 s are eq. 3's FLOPs at those times (the transcribed shape and batch are the run's).
  const double mtnlg_tflops[] = {126, 121, 113};
  int i = 0;
  for (const auto& r : unmodelled_runs) {
    if (r.name.rfind("mt-nlg", 0) != 0) continue;
    CAPTURE(r.name);
    REQUIRE(i < 3);
    CHECK(within(megatron_flops_with_recompute(r) / (measured_seconds(r) * double(r.gpus()) * 1e12), mtnlg_tflops[i],
                 0.005));
    ++i;
  }
  CHECK(i == 3);
}

TEST_CASE("published runs: predicted step time within 15 %, median within 5 %") {
  std::vector<double> fit_err, check_err, confirmed_err, all_err;
  std::printf("%-30s %10s %10s %8s %s\n", "run", "measured", "predicted", "error", "rows");
  for (const auto& r : published_runs) {
    CAPTURE(r.name);
    const double meas = measured_seconds(r), pred = predicted_seconds(r);
    const double err = (pred - meas) / meas;
    std::printf("%-30s %9.3fs %9.3fs %+7.1f%% %s%s\n", std::string(r.name).c_str(), meas, pred, 100 * err,
                r.fit_row ? "fit" : "check", r.confirmed ? "" : ", unconfirmed");
    (r.fit_row ? fit_err : check_err).push_back(std::abs(err));
    if (r.confirmed) confirmed_err.push_back(std::abs(err));
    all_err.push_back(std::abs(err));
    CHECK(std::abs(err) <= 0.15);
  }
  const auto report = [](const char* what, const std::vector<double>& e) {
    if (e.empty()) {
      std::printf("%s rows: none\n", what);
      return;
    }
    std::printf("%s rows: %zu, median |error| %.1f%%, max %.1f%%\n", what, e.size(), 100 * median(e),
                100 * *std::max_element(e.begin(), e.end()));
  };
  report("fit", fit_err);
  report("check", check_err);
  report("confirmed", confirmed_err);
  // Signed mean error per device preset: a bias shared by a device's rows points at
  // its efficiency figures rather than at one model's terms.
  for (const auto* d : gpus::all) {
    double sum = 0;
    int n = 0;
    for (const auto& r : published_runs)
      if (r.device == d->name) {
        sum += (predicted_seconds(r) - measured_seconds(r)) / measured_seconds(r);
        ++n;
      }
    if (n) std::printf("%s: %d rows, mean signed error %+.1f%%\n", std::string(d->name).c_str(), n, 100 * sum / n);
  }
  REQUIRE(!all_err.empty());
  CHECK(median(all_err) <= 0.05);
}

TEST_CASE("published runs: the runs outside the model, printed") {
  // Not held to the tolerance: each row's note says what the model lacks. Printed so
  // the gap stays visible; the test only checks that every row evaluates.
  for (const auto& r : unmodelled_runs) {
    CAPTURE(r.name);
    const double meas = measured_seconds(r), pred = predicted_seconds(r);
    CHECK(pred > 0);
    std::printf("%-30s %9.3fs %9.3fs %+7.1f%% outside: %s\n", std::string(r.name).c_str(), meas, pred,
                100 * (pred - meas) / meas, std::string(r.note).c_str());
  }
}

/// One encoder layer's forward + backward as the model charges it (plan/layer_time.hpp)
/// for a row: BERT's layer at the row's shape and batch, the implementation's bias
/// pass and activation dropout.
double predict_layer(const published_layer_run& r) {
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

TEST_CASE("published runs: encoder layers timed alone, per implementation") {
  // The same BERT-large layer on the same V100, timed by implementation (file comment):
  // the fused implementation is held to 15 %; the others are printed with their
  // reasons, and each must be slower than the prediction (the model prices the layer
  // no higher than the fastest implementation's time).
  int held = 0;
  for (const auto& r : layer_runs) {
    CAPTURE(r.name);
    REQUIRE(r.batch > 0);
    REQUIRE(!r.source.empty());
    REQUIRE(!r.note.empty());
    const double meas = r.milliseconds / 1e3, pred = predict_layer(r);
    const double err = (pred - meas) / meas;
    std::printf("%-32s %9.2fms %9.2fms %+7.1f%% %s: %s\n", std::string(r.name).c_str(), 1e3 * meas, 1e3 * pred,
                100 * err, r.held ? "held" : "outside", std::string(r.note).c_str());
    if (r.held) {
      CHECK(std::abs(err) <= 0.15);
      ++held;
    } else {
      CHECK(pred < meas);
    }
  }
  CHECK(held == 2);
  // the activation dropout adds one memory-bound 4h-wide pass: something, and a few
  // percent of the layer at most
  published_layer_run r = layer_runs[0];
  const double with = predict_layer(r);
  r.activation_dropout = false;
  const double without = predict_layer(r);
  CHECK(without < with);
  CHECK(with - without < 0.05 * without);
  // at dropout 0 there is no dropout op to scale: refused in words
  models::gpt_config c;
  c.dropout = 0;
  CHECK_THROWS_WITH_AS(layer_seconds(c, models::transformer_kind::bert, gpus::v100_16gb, {}, true),
                       doctest::Contains("dropout > 0"), invalid_argument);
  CHECK(layer_seconds(c, models::transformer_kind::bert, gpus::v100_16gb, {}) > 0);
}

TEST_CASE("published runs: BERT phase 2, binned sequences") {
  // Phase 2 pads each batch only to its 64-token length bin and more than half the
  // tokens of the padded-to-512 data are padding (file comment): the mean tokens
  // computed per nominal sequence are at most computed_seq_bound. The model must
  // over-predict at the nominal 512 (the symptom) and must not over-predict at the
  // bound (binning explains the over-prediction); the length at which the model
  // meets the measurement is printed (bisection on the sequence length).
  int rows = 0;
  for (const auto& r : unmodelled_runs) {
    if (r.computed_seq_bound == 0) continue;
    CAPTURE(r.name);
    ++rows;
    REQUIRE(r.computed_seq_bound < r.seq);
    const double meas = measured_seconds(r);
    const double nominal = predicted_seconds(r);
    const double at_bound = predict(r, 0, r.computed_seq_bound);
    CHECK(nominal > meas);
    CHECK(at_bound < meas);
    index_t lo = 64, hi = r.seq;  // prediction(lo) < meas < prediction(hi)
    while (hi - lo > 4) {
      const index_t mid = (lo + hi) / 2;
      (predict(r, 0, mid) < meas ? lo : hi) = mid;
    }
    std::printf("%-30s at %d tokens: %+7.1f%%, at %lld: %+7.1f%%; model meets the measurement at %lld-%lld tokens\n",
                std::string(r.name).c_str(), int(r.seq), 100 * (nominal - meas) / meas,
                static_cast<long long>(r.computed_seq_bound), 100 * (at_bound - meas) / meas,
                static_cast<long long>(lo), static_cast<long long>(hi));
  }
  CHECK(rows == 4);
}

TEST_CASE("published runs: BERT with the MLM head on the masked positions only") {
  // dense_sequence_output (the source's default) runs the MLM head and loss on 20 of
  // 128 (80 of 512) tokens; the lowering runs them on all. Every BERT prediction
  // uses the masked positions (predict()); printed: the error with the head on
  // every token too, which the source's stack does not run.
  std::vector<published_run> bert;
  for (const auto& r : published_runs)
    if (r.model == published_model::bert) bert.push_back(r);
  for (const auto& r : unmodelled_runs)
    if (r.model == published_model::bert) bert.push_back(r);
  CHECK(bert.size() == 8);
  for (const auto& r : bert) {
    CAPTURE(r.name);
    REQUIRE(r.mlm_predictions > 0);
    REQUIRE(r.mlm_predictions < r.seq);
    const double meas = measured_seconds(r), full = predict(r, 0, 0, true), dense = predicted_seconds(r);
    CHECK(dense < full);
    std::printf("%-30s head on every token: %+7.1f%%, on %lld masked positions: %+7.1f%%\n",
                std::string(r.name).c_str(), 100 * (full - meas) / meas, static_cast<long long>(r.mlm_predictions),
                100 * (dense - meas) / meas);
  }
}

TEST_CASE("published runs: data-parallel scaling of ResNet-50, N-GPU step over 1-GPU step") {
  // Same stack, same per-GPU batch, 1 and N GPUs: the ratio of step times cancels the
  // stack's kernel efficiency and leaves what data parallelism adds (gradient
  // all-reduce; the MXNet rows keep overlap_grad_sync off, file comment). MXNet's 8- and
  // 16-GPU runs are held to 5 %, like the 22B recompute ratio (with the stack's fused batch norm the DGX-2's
  // 16-GPU ratio is 4 % low; unfused it was 5.7 % low). Printed, not held:
  // PyTorch's (their 8-GPU loss is the host-side input pipeline, file comment).
  // Also printed: the ratio without per-message link latency, i.e. with the
  // gradient all-reduce as a few fused calls: the held match rests on the model's
  // one all-reduce per parameter (file comment).
  const auto find = [](std::string_view name) -> const published_run& {
    for (const auto& r : unmodelled_runs)
      if (r.name == name) return r;
    for (const auto& r : fused_stack_runs)
      if (r.name == name) return r;
    for (const auto& r : published_runs)
      if (r.name == name) return r;
    FAIL("no row " << name);
    return published_runs[0];
  };
  struct pair {
    std::string_view one, many;
    bool held;
  };
  const pair pairs[] = {
      {"mxnet-resnet50-a100-80gb", "mxnet-resnet50-a100-80gb-x8", true},
      {"mxnet-resnet50-v100-16gb", "mxnet-resnet50-v100-16gb-x8", true},
      {"mxnet-resnet50-dgx2-v100-32gb", "mxnet-resnet50-dgx2-v100-32gb-x8", true},
      {"mxnet-resnet50-dgx2-v100-32gb", "mxnet-resnet50-dgx2-v100-32gb-x16", true},
      {"mxnet2210-resnet50-a100-80gb", "mxnet2210-resnet50-a100-80gb-x8", true},
      {"resnet50-a100-80gb", "resnet50-a100-80gb-x8", false},
      {"resnet50-v100-16gb", "resnet50-v100-16gb-x8", false},
      {"resnet50-v100-32gb", "resnet50-v100-32gb-x8", false},
  };
  for (const auto& p : pairs) {
    const auto& a = find(p.one);
    const auto& b = find(p.many);
    CAPTURE(b.name);
    REQUIRE(a.micro_batch == b.micro_batch);  // same per-GPU batch
    REQUIRE(a.device == b.device);
    const double measured = measured_seconds(b) / measured_seconds(a);
    const double predicted = predicted_seconds(b) / predicted_seconds(a);
    const variant fused{.no_latency = true};
    const double fused_calls = evaluate_row(b, 0, 0, fused).time / evaluate_row(a, 0, 0, fused).time;
    std::printf("%-34s / 1 GPU: measured %.3f, predicted %.3f (%+.1f%%)%s; without link latency %.3f\n",
                std::string(b.name).c_str(), measured, predicted, 100 * (predicted - measured) / measured,
                p.held ? "" : ", not held", fused_calls);
    CHECK(fused_calls <= predicted);
    if (p.held) CHECK(within(predicted, measured, 0.05));
    // the rows' overlap switch flipped (off for MXNet, on for PyTorch; file comment)
    auto flipped = [](published_run r) {
      r.overlap_grad_sync = !r.overlap_grad_sync;
      return evaluate_row(r).time;
    };
    const double fa = flipped(a), fb = flipped(b);
    std::printf("%-34s   overlap_grad_sync %s: step %+.1f%% against measured, ratio %.3f\n", std::string(b.name).c_str(),
                b.overlap_grad_sync ? "off" : "on", 100 * (fb - measured_seconds(b)) / measured_seconds(b), fb / fa);
    // overlap never costs time: hidden sync only comes off
    const double base = evaluate_row(b).time;
    CHECK((b.overlap_grad_sync ? base <= fb * (1 + 1e-12) : fb <= base * (1 + 1e-12)));
  }
}

TEST_CASE("published runs: sensitivity to the assumed micro-batch size") {
  // Narayanan et al. Table 1 gives no micro-batch size; the rows assume one sequence.
  // With the whole replica batch as one micro-batch the prediction is lower (fewer,
  // larger kernels); printed so the assumption's weight is visible.
  for (const auto& r : published_runs) {
    // (a pipelined row needs a micro-batch per stage: one micro-batch is not a plan)
    if (r.micro_batches() == 1 || r.model != published_model::gpt || r.pp() > 1) continue;
    CAPTURE(r.name);
    const double meas = measured_seconds(r), as_row = predicted_seconds(r), one = predicted_seconds(r, 1);
    std::printf("%-30s one micro-batch: %9.3fs %+7.1f%% (row: %+7.1f%%)\n", std::string(r.name).c_str(), one,
                100 * (one - meas) / meas, 100 * (as_row - meas) / meas);
    CHECK(one < as_row);
  }
}

TEST_CASE("published runs: every run's predicted memory fits its device") {
  // Each row ran: its strategy fitted the device. The memory the model predicts for it
  // (the fullest device, the reserve included; a pipelined row's fullest stage) must
  // then fit too, or the planner would call a real run impossible.
  auto check = [](const published_run& r) {
    CAPTURE(r.name);
    const device d = gpus::find(r.device);
    const double mem = evaluate_row(r).memory, cap = d.capacity.value;
    std::printf("%-34s predicted %6.1f GiB of %5.1f GiB (%3.0f %%)\n", std::string(r.name).c_str(),
                mem / double(1 << 30), cap / double(1 << 30), 100 * mem / cap);
    CHECK(mem <= cap);
  };
  for (const auto& r : published_runs) check(r);
  for (const auto& r : unmodelled_runs) check(r);
  for (const auto& r : fused_stack_runs) check(r);
  for (const auto& r : fp32_runs) check(r);
}

TEST_CASE("published runs: the pipeline bubble as data parallelism grows (Narayanan et al. Table 2)") {
  // One model, one global batch, tp x pp fixed, data parallelism d = 2 to 16: each
  // pipeline runs m = B / d micro-batches, so the 1F1B bubble (p - 1) / m grows with d
  // and the GPU-seconds of an iteration with it (174.6B: 153 -> 141 TFLOP/s per GPU
  // from 384 to 1536 GPUs). The ratio of GPU-seconds to the smallest run's cancels the
  // kernels' efficiency and leaves the bubble and the data-parallel all-reduce: held to
  // 3 %. Without the bubble term the ratio would be that of the all-reduce alone.
  const auto find = [](std::string_view name) -> const published_run& {
    for (const auto& r : published_runs)
      if (r.name == name) return r;
    FAIL("no row " << name);
    return published_runs[0];
  };
  const std::string_view groups[][3] = {{"ptdp-174.6b-384", "ptdp-174.6b-768", "ptdp-174.6b-1536"},
                                        {"ptdp-529.6b-560", "ptdp-529.6b-1120", "ptdp-529.6b-2240"}};
  for (const auto& gr : groups) {
    const auto& base = find(gr[0]);
    REQUIRE(base.pp() > 1);
    const double meas0 = measured_seconds(base) * double(base.gpus());
    const double pred0 = predicted_seconds(base) * double(base.gpus());
    for (std::size_t i = 1; i < 3; ++i) {
      const auto& r = find(gr[i]);
      CAPTURE(r.name);
      REQUIRE(r.global_batch == base.global_batch);
      REQUIRE(r.strategy == base.strategy);
      const double measured = measured_seconds(r) * double(r.gpus()) / meas0;
      const double predicted = predicted_seconds(r) * double(r.gpus()) / pred0;
      const double bubble = double(r.pp() - 1) / double(r.micro_batches());
      std::printf("%-20s GPU-seconds over %-16s measured %.3f, predicted %.3f (%+.1f%%); bubble (p-1)/m %.3f\n",
                  std::string(r.name).c_str(), std::string(base.name).c_str(), measured, predicted,
                  100 * (predicted - measured) / measured, bubble);
      CHECK(measured > 1);  // the source's throughput falls as d grows
      CHECK(within(predicted, measured, 0.03));
    }
  }
}

TEST_CASE("published runs: the recomputation saving of Korthikanti et al. (22B)") {
  // Same model and cluster, two strategies: the measured speed-up of selective
  // recomputation + sequence parallelism over full recomputation (1.42 s / 1.10 s)
  // is a property of the recompute and sequence-parallel terms alone.
  const auto& full = published_runs[4];
  const auto& sel = published_runs[5];
  REQUIRE(full.name == "korthikanti-22b-full");
  REQUIRE(sel.name == "korthikanti-22b-selective-sp");
  const double measured = measured_seconds(full) / measured_seconds(sel);
  const double predicted = predicted_seconds(full) / predicted_seconds(sel);
  std::printf("22B full / selective+sp: measured %.3f, predicted %.3f\n", measured, predicted);
  CHECK(within(predicted, measured, 0.05));
}

TEST_CASE("published runs: BERT at sequence 128, what each term of the model adds") {
  // The seq-128 rows (phase 1, unbinned, full 128 tokens) were predicted 21-27 % fast
  // before two terms found in their stack's kernels (cost/published_runs.hpp): the
  // contraction-length factor of linears (K = 1024 for six of BERT-large's nine
  // GEMMs per layer; gemm_shape.hpp) and PyTorch's separate bias pass
  // (linear_bias_pass; kernel_traffic.hpp). Each must raise every seq-128 prediction
  // (all are below the measurement), and the two together must shrink every error;
  // the errors without each term are printed.
  std::vector<published_run> rows;
  for (const auto& r : published_runs)
    if (r.model == published_model::bert) rows.push_back(r);
  for (const auto& r : unmodelled_runs)
    if (r.model == published_model::bert && r.computed_seq_bound == 0) rows.push_back(r);
  CHECK(rows.size() == 4);
  for (const auto& r : rows) {
    CAPTURE(r.name);
    REQUIRE(r.linear_bias_pass);
    const double meas = measured_seconds(r), all = predicted_seconds(r);
    const double flat = predict(r, 0, 0, false, {.flat_gemm = true});
    const double no_pass = predict(r, 0, 0, false, {.no_bias_pass = true});
    const double neither = predict(r, 0, 0, false, {.flat_gemm = true, .no_bias_pass = true});
    std::printf("%-30s %+7.1f%%; without the K factor %+7.1f%%, without the bias pass %+7.1f%%, without both %+7.1f%%\n",
                std::string(r.name).c_str(), 100 * (all - meas) / meas, 100 * (flat - meas) / meas,
                100 * (no_pass - meas) / meas, 100 * (neither - meas) / meas);
    CHECK(all > flat);
    CHECK(all > no_pass);
    CHECK(std::abs(all - meas) < std::abs(neither - meas));
  }
}
}  // namespace cost_published_runs_test_file
