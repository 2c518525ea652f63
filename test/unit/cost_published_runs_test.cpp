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
// under-predicted (its reason). The evaluation is plan/published_check.hpp's, which
// `tensoropt-plan --published-runs` prints; the last case holds its verdict and plot.
#include <tensoropt/cost/published_runs.hpp>
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/published_check.hpp>
#include <tensoropt/plan/published_svg.hpp>
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
/// |a / b - 1| <= tol. (doctest::Approx adds a scale of 1 to its epsilon's base, so
/// for values near 1 it accepts about twice the stated relative error.)
bool within(double a, double b, double tol) { return std::abs(a / b - 1) <= tol; }

double median(std::vector<double> v) { return detail::median(std::move(v)); }

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
    const double meas = measured_seconds(r), pred = predict_published(r);
    std::printf("%-34s %9.3fs %9.3fs %+7.1f%%\n", std::string(r.name).c_str(), meas, pred,
                100 * (pred - meas) / meas);
    CHECK(std::abs(pred - meas) / meas <= 0.15);
    err.push_back(std::abs(pred - meas) / meas);
  }
  for (const auto& r : published_runs)
    err.push_back(std::abs(predict_published(r) - measured_seconds(r)) / measured_seconds(r));
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
    const double meas = measured_seconds(r), pred = predict_published(r);
    published_run unfused = r;
    unfused.fused_bn_relu = false;
    const double plain = predict_published(unfused);
    CHECK(pred < plain);
    std::printf("%-34s %9.3fs %9.3fs %+7.1f%% (unfused: %+7.1f%%)\n", std::string(r.name).c_str(), meas, pred,
                100 * (pred - meas) / meas, 100 * (plain - meas) / meas);
    CHECK(std::abs(pred - meas) / meas <= 0.15);
    err.push_back(std::abs(pred - meas) / meas);
  }
  std::printf("fused-stack rows: %zu, median |error| %.1f%%\n", err.size(), 100 * median(err));
  for (const auto& r : published_runs)
    err.push_back(std::abs(predict_published(r) - measured_seconds(r)) / measured_seconds(r));
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
    const double meas = measured_seconds(r), pred = predict_published(r);
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
        sum += (predict_published(r) - measured_seconds(r)) / measured_seconds(r);
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
    const double meas = measured_seconds(r), pred = predict_published(r);
    CHECK(pred > 0);
    std::printf("%-30s %9.3fs %9.3fs %+7.1f%% outside: %s\n", std::string(r.name).c_str(), meas, pred,
                100 * (pred - meas) / meas, std::string(r.note).c_str());
  }
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
    const double meas = r.milliseconds / 1e3, pred = predict_published_layer(r);
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
  const double with = predict_published_layer(r);
  r.activation_dropout = false;
  const double without = predict_published_layer(r);
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
    const double nominal = predict_published(r);
    const double at_bound = predict_published(r, 0, r.computed_seq_bound);
    CHECK(nominal > meas);
    CHECK(at_bound < meas);
    index_t lo = 64, hi = r.seq;  // prediction(lo) < meas < prediction(hi)
    while (hi - lo > 4) {
      const index_t mid = (lo + hi) / 2;
      (predict_published(r, 0, mid) < meas ? lo : hi) = mid;
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
  // uses the masked positions (predict_published()); printed: the error with the head on
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
    const double meas = measured_seconds(r), full = predict_published(r, 0, 0, true), dense = predict_published(r);
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
    const double predicted = predict_published(b) / predict_published(a);
    const published_variant fused{.no_latency = true};
    const double fused_calls = evaluate_published(b, 0, 0, fused).time / evaluate_published(a, 0, 0, fused).time;
    std::printf("%-34s / 1 GPU: measured %.3f, predicted %.3f (%+.1f%%)%s; without link latency %.3f\n",
                std::string(b.name).c_str(), measured, predicted, 100 * (predicted - measured) / measured,
                p.held ? "" : ", not held", fused_calls);
    CHECK(fused_calls <= predicted);
    if (p.held) CHECK(within(predicted, measured, 0.05));
    // the rows' overlap switch flipped (off for MXNet, on for PyTorch; file comment)
    auto flipped = [](published_run r) {
      r.overlap_grad_sync = !r.overlap_grad_sync;
      return evaluate_published(r).time;
    };
    const double fa = flipped(a), fb = flipped(b);
    std::printf("%-34s   overlap_grad_sync %s: step %+.1f%% against measured, ratio %.3f\n", std::string(b.name).c_str(),
                b.overlap_grad_sync ? "off" : "on", 100 * (fb - measured_seconds(b)) / measured_seconds(b), fb / fa);
    // overlap never costs time: hidden sync only comes off
    const double base = evaluate_published(b).time;
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
    const double meas = measured_seconds(r), as_row = predict_published(r), one = predict_published(r, 1);
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
    const double mem = evaluate_published(r).memory, cap = d.capacity.value;
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
    const double pred0 = predict_published(base) * double(base.gpus());
    for (std::size_t i = 1; i < 3; ++i) {
      const auto& r = find(gr[i]);
      CAPTURE(r.name);
      REQUIRE(r.global_batch == base.global_batch);
      REQUIRE(r.strategy == base.strategy);
      const double measured = measured_seconds(r) * double(r.gpus()) / meas0;
      const double predicted = predict_published(r) * double(r.gpus()) / pred0;
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
  const double predicted = predict_published(full) / predict_published(sel);
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
    const double meas = measured_seconds(r), all = predict_published(r);
    const double flat = predict_published(r, 0, 0, false, {.flat_gemm = true});
    const double no_pass = predict_published(r, 0, 0, false, {.no_bias_pass = true});
    const double neither = predict_published(r, 0, 0, false, {.flat_gemm = true, .no_bias_pass = true});
    std::printf("%-30s %+7.1f%%; without the K factor %+7.1f%%, without the bias pass %+7.1f%%, without both %+7.1f%%\n",
                std::string(r.name).c_str(), 100 * (all - meas) / meas, 100 * (flat - meas) / meas,
                100 * (no_pass - meas) / meas, 100 * (neither - meas) / meas);
    CHECK(all > flat);
    CHECK(all > no_pass);
    CHECK(std::abs(all - meas) < std::abs(neither - meas));
  }
}

TEST_CASE("published runs: the check tensoropt-plan --published-runs prints, and its plot") {
  // check_published_runs evaluates every list as the cases above do; what each row is
  // held to decides published_check_passes, and a row moved past its tolerance (or the
  // main median past 5 %) must fail it.
  const auto rows = check_published_runs();
  REQUIRE(rows.size() == published_runs.size() + fused_stack_runs.size() + fp32_runs.size() + layer_runs.size() +
                             unmodelled_runs.size());
  for (const auto& r : rows) {
    CAPTURE(r.name);
    CHECK(r.measured > 0);
    CHECK(r.predicted > 0);
    CHECK(r.ok());
    CHECK((r.held || !r.note.empty()));  // a row not held says why
  }
  CHECK(rows.front().name == published_runs[0].name);
  CHECK(rows.front().predicted == predict_published(published_runs[0]));
  CHECK(published_check_passes(rows));
  {
    const published_summary m = summarize(rows, published_list::main);
    CHECK(m.rows == published_runs.size());
    CHECK(m.median <= published_median_tolerance);
    CHECK(m.median <= m.max);
    CHECK(m.max <= published_row_tolerance);
    std::vector<double> e;
    for (const auto& r : published_runs) e.push_back(std::abs(predict_published(r) / measured_seconds(r) - 1));
    CHECK(m.median == median(e));
    CHECK(m.max == *std::max_element(e.begin(), e.end()));
    CHECK(summarize(rows, published_list::layer).rows == layer_runs.size());
  }
  for (const auto& r : rows) {  // what it is held to, in words: the tolerance, or the reason
    CAPTURE(r.name);
    if (r.held) CHECK(r.held_to() == "within 15 %");
    else CHECK(r.held_to().find(r.note) != std::string::npos);
  }
  {
    // the main row furthest off (above the median: moving it leaves the median) 16 % slow
    auto bad = rows;
    auto worst = bad.begin();
    for (auto it = bad.begin(); it != bad.end(); ++it)
      if (it->list == published_list::main && std::abs(it->error()) > std::abs(worst->error())) worst = it;
    worst->predicted = worst->measured * 1.16;
    CHECK_FALSE(worst->ok());
    CHECK_FALSE(published_check_passes(bad));
    CHECK(published_check_misses(bad) == std::vector<std::string>{worst->name});
  }
  {
    auto bad = rows;  // a layer row not held, over-predicted
    const auto it = std::find_if(bad.begin(), bad.end(),
                                 [](const published_check_row& r) { return r.list == published_list::layer && !r.held; });
    REQUIRE(it != bad.end());
    it->predicted = it->measured * 1.01;
    CHECK_FALSE(published_check_passes(bad));
    CHECK(published_check_misses(bad) == std::vector<std::string>{it->name});
  }
  {
    auto bad = rows;  // every main row 6 % fast: each within 15 %, the median not within 5 %
    for (auto& r : bad)
      if (r.list == published_list::main) r.predicted = r.measured * 0.94;
    CHECK(std::all_of(bad.begin(), bad.end(), [](const published_check_row& r) { return r.ok(); }));
    CHECK_FALSE(published_check_passes(bad));
    CHECK(published_check_misses(bad) == std::vector<std::string>{"the main table's median (6.0 %)"});
  }
  {
    auto any = rows;  // an outside row is held to nothing
    const auto it = std::find_if(any.begin(), any.end(),
                                 [](const published_check_row& r) { return r.list == published_list::outside; });
    REQUIRE(it != any.end());
    it->predicted = it->measured * 3;
    CHECK(published_check_passes(any));
  }

  // The plot: one mark per row, with its list and a tooltip; the band, the summary.
  const std::string svg = published_runs_svg(rows);
  const auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (auto at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(count("class=\"row\"") == rows.size());
  CHECK(count("<title>") == rows.size() + 1);  // the rows and the band
  CHECK(count("data-list=\"main\"") == published_runs.size());
  CHECK(count("data-list=\"outside\"") == unmodelled_runs.size());
  CHECK(count("data-list=\"layer\"") == layer_runs.size());
  CHECK(count("class=\"band\"") == 1);
  for (const auto& r : rows) CHECK(svg.find("data-name=\"" + r.name + "\"") != std::string::npos);
  CHECK(svg.find("MISSED") == std::string::npos);
  CHECK(svg.find(std::to_string(published_runs.size() + fused_stack_runs.size() + fp32_runs.size() + 2) +
                 " of ") != std::string::npos);  // every held row (two layer rows held) meets its tolerance
  {
    auto bad = rows;
    bad[0].predicted = bad[0].measured * 1.3;
    const std::string b = published_runs_svg(bad);
    CHECK(b.find("MISSED") != std::string::npos);
  }
  // a row far outside (+63 %) stretches the error axis to hold it: every mark's centre
  // lies inside the plot frame (y from 56 to 462 px)
  std::size_t marks = 0;
  for (std::size_t at = svg.find("class=\"row\""); at != std::string::npos; at = svg.find("class=\"row\"", at + 1)) {
    const std::string e = svg.substr(at, svg.find('>', at) - at);
    double y = 0;
    if (const auto c = e.find(" cy=\""); c != std::string::npos) y = std::stod(e.substr(c + 5));
    else if (const auto r = e.find(" y=\""); r != std::string::npos) y = std::stod(e.substr(r + 4)) + 4.5;
    else if (const auto d = e.find(" d=\"M"); d != std::string::npos) y = std::stod(e.substr(e.find(',', d) + 1)) + 6;
    CAPTURE(e);
    CHECK(y >= 56);
    CHECK(y <= 520 - 58);
    ++marks;
  }
  CHECK(marks == rows.size());
}
}  // namespace cost_published_runs_test_file
