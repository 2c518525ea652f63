// train_gpt: plans a character-level GPT (default: a small one; --model takes the
// planner's gpt: specs) on 4 devices, picks the fastest plan within a memory budget
// and trains it on the text in examples/data (4 local devices by default;
// `--comm mpi` under `mpirun -np 4` gives the same losses).
//
//   train_gpt [--model gpt:SPEC] [--comm local|mpi] [--steps N] [--budget-mib M] [--data FILE]
//             [--devices N] [--backend cpu|cuda] [--precision fp32|bf16-mixed]
//             [--plan FILE] [--save FILE] [--resume FILE] [--gpu-file FILE]
//             (--help lists the flags and their ranges)
//     --plan FILE     run a plan saved by `tensoropt-plan --model SPEC --gpu cpu --precision fp32
//                     --devices N --save-plan FILE` (SPEC: the model printed at start) instead of planning;
//                     a tensoropt-plan/2 file (tensoropt-plan --pipeline) runs its pipeline stages
//     --save FILE     write a checkpoint after the steps
//     --resume FILE   start from a checkpoint: the step count and the batches continue, so the
//                     losses are those of an uninterrupted run
//   (--backend cuda needs the program linked with tensoropt::cuda; N local devices
//   share the GPUs there are, each with its own stream and memory pool; --gpu-file
//   plans and predicts for the GPU a gpu_calibrate file describes)
//   train_gpt --compare      predicted vs measured step time and peak memory of the
//                            least-memory, a middle and the fastest frontier point
//   train_gpt --strategy SPEC [--micro-batches K]   train a hand-written plan
//                            (dp=..,tp=..,sp=0|1,recompute=none|selective|full,zero=0|1,pp=..)
//     pp=P runs P pipeline stages (1F1B, K >= P micro-batches, default K = P): the
//     planner's balanced stages (embedding in the first, head in the last), each with
//     the other keys' strategy on its devices/P devices.
#include <tensoropt/core/command_line.hpp>
#include <tensoropt/core/input_file.hpp>
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/device_file.hpp>
#include <tensoropt/plan/memory_peak.hpp>
#include <tensoropt/models/model_spec.hpp>
#include <tensoropt/plan/planner.hpp>
#include <tensoropt/plan/pipeline_spec.hpp>
#include <tensoropt/plan/strategy_spec.hpp>
#include <tensoropt/plan/pipeline_peak.hpp>
#include <tensoropt/runtime.hpp>
#ifdef TENSOROPT_EXAMPLE_MPI
#include <tensoropt/runtime/mpi_comm.hpp>
#endif
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace to = tensoropt;
namespace rt = tensoropt::runtime;
using namespace to::literals;

/// The default model: a 2-layer GPT small enough to train in seconds on a CPU.
constexpr to::models::gpt_config default_model{.layers = 2, .hidden = 64, .heads = 4, .seq = 32, .vocab = 64,
                                               .batch = 8, .dropout = 0.0};

/// The command line: one table gives parsing, range checks, --help and the errors.
struct train_gpt_options {
  std::string model = to::models::to_spec(default_model, to::models::transformer_kind::gpt);
  std::string comm = "local";
  long steps = 60;
  std::optional<double> budget_mib;
  std::string data = TENSOROPT_EXAMPLE_DATA "/tiny_corpus.txt";
  long devices = 4;
  bool compare = false;
  std::string strategy;               ///< a hand-written plan instead of the planner's
  std::optional<long> micro_batches;  ///< fix the gradient-accumulation count
  std::string backend = "cpu";
  std::string precision = "fp32";
  std::string plan, save, resume;
  std::string gpu_file;  ///< a tensoropt-device/2 (or /1) file: plan and predict for that GPU
  bool help = false;
};
template <>
struct to::reflection<train_gpt_options> {
  using o = train_gpt_options;
  static constexpr auto fields = boost::hana::make_tuple(
      to::field("model", &o::model, "the GPT to train, as the planner's spec (tensoropt-plan --model); "
                                    "vocab >= 64 for the character tokens")
          .meta("SPEC"),
      to::field("comm", &o::comm, "local threads, or MPI ranks under mpirun -np N").one_of("local|mpi").meta("KIND"),
      to::field("steps", &o::steps, "training steps").range(1, 1000000).meta("N"),
      to::field("budget-mib", &o::budget_mib, "fastest plan within M MiB per device; default: the geometric "
                                              "mean of the frontier's least and largest memory")
          .range_open_lo(0, 1e9).meta("M"),
      to::field("data", &o::data, "training text").meta("FILE"),
      to::field("devices", &o::devices, "local devices, one thread each").range(1, 1024).meta("N"),
      to::field("compare", &o::compare, "predicted vs measured step time and peak memory of 5 frontier points"),
      to::field("strategy", &o::strategy, "train this plan instead of the planner's: dp=..,tp=..,sp=0|1,"
                                          "recompute=none|selective|full,zero=0|1,pp=.. (pipeline stages)")
          .meta("SPEC"),
      to::field("micro-batches", &o::micro_batches, "gradient-accumulation count (default: the planner's choice, "
                                                    "1 with --strategy, P with pp=P)")
          .range(1, 1024).meta("K"),
      to::field("backend", &o::backend, "where the devices run: cpu threads, or GPUs (a build with "
                                        "tensoropt::cuda)").one_of("cpu|cuda").meta("KIND"),
      to::field("precision", &o::precision, "fp32, or bf16 mixed precision (cuda only)")
          .one_of("fp32|bf16-mixed").meta("P"),
      to::field("gpu-file", &o::gpu_file, "plan and predict for the GPU this tensoropt-device/2 (or /1) file describes "
                                          "(gpu_calibrate writes it on the GPU that runs the job; cuda only)")
          .meta("FILE"),
      to::field("plan", &o::plan, "run this tensoropt-plan/1 file (tensoropt-plan --model SPEC --gpu cpu "
                                  "--precision fp32 --devices N --save-plan FILE) instead of planning; a /2 file "
                                  "(--pipeline) runs its pipeline stages").meta("FILE"),
      to::field("save", &o::save, "write a checkpoint after the steps").meta("FILE"),
      to::field("resume", &o::resume, "start from a checkpoint; steps and batches continue from it").meta("FILE"),
      to::field("help", &o::help, "print this help"));
};

namespace {
int devices = 4;

/// Character -> token id: a-z, space, punctuation, digits; everything else is 63.
int token_of(char ch) {
  static const std::string alphabet = "abcdefghijklmnopqrstuvwxyz .,;:'!?-\n0123456789";
  if (ch >= 'A' && ch <= 'Z') ch = char(ch - 'A' + 'a');
  const auto p = alphabet.find(ch);
  return p == std::string::npos ? 63 : int(p);
}

/// The batch of global step `step`: random windows of the text, drawn from a stream
/// seeded by the step alone (a resumed run sees the batches of an uninterrupted one).
rt::batch make_batch(const std::vector<int>& text, const to::models::gpt_config& model, std::int64_t step) {
  const int b = int(model.batch), s = int(model.seq);
  std::seed_seq seed{7, int(step), int(step >> 31)};
  std::mt19937 rng(seed);
  rt::batch out(2, std::vector<float>(std::size_t(b * s)));
  for (int i = 0; i < b; ++i) {
    const std::size_t at = rng() % (text.size() - std::size_t(s) - 1);
    for (int j = 0; j < s; ++j) {
      out[0][std::size_t(i * s + j)] = float(text[at + std::size_t(j)]);
      out[1][std::size_t(i * s + j)] = float(text[at + std::size_t(j) + 1]);
    }
  }
  return out;
}

int fail(const std::string& msg) {
  std::fprintf(stderr, "train_gpt: %s\n", msg.c_str());
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  train_gpt_options o;
  try {
    to::parse_command_line(argc, argv, o);
  } catch (const to::error& e) {
    return fail(e.what());
  }
  if (o.help) {
    std::fputs(to::command_line_help<train_gpt_options>(
                   "train_gpt [options]",
                   "Plans a small GPT on local devices (or MPI ranks), picks the fastest plan within a memory\n"
                   "budget and trains it on a text file; --compare checks predicted against measured step time\n"
                   "and peak memory on five frontier points.")
                   .c_str(),
               stdout);
    return 0;
  }
  const std::string comm_kind = o.comm, data = o.data;
  to::models::gpt_config model;
  try {
    const auto spec = to::models::parse_model_spec(o.model);
    if (spec.kind != to::models::transformer_kind::gpt)
      return fail("--model: train_gpt trains GPT language models: give a gpt: spec, not " +
                  std::string(to::models::name_of(spec.kind)) + ":");
    if (spec.config.vocab < 64)
      return fail("--model: the character tokens of the training text need vocab >= 64, got vocab=" +
                  std::to_string(spec.config.vocab));
    model = spec.config;
  } catch (const to::error& e) {
    return fail(std::string("--model: ") + e.what());
  }
  const int steps = int(o.steps);
  const double budget_mib = o.budget_mib.value_or(0);
  const bool compare = o.compare;
  const std::string plan_path = o.plan, save_path = o.save, resume_path = o.resume;
  devices = int(o.devices);
  // the strategy (pp=P included) is checked before anything is printed
  to::strategy_spec strategy_parsed;
  try {
    if (!o.strategy.empty()) strategy_parsed = to::parse_strategy_spec(o.strategy);
  } catch (const to::error& e) {
    return fail(e.what());
  }
  const int pp = int(strategy_parsed.pp);
  const int pipeline_k = o.micro_batches ? int(*o.micro_batches) : pp;
  if (pp > 1) {
    if (const auto e = to::pipeline_degree_error(to::device_mesh(1, devices), pp); !e.empty())
      return fail("--strategy: " + e);
    if (pipeline_k < pp)
      return fail("--micro-batches " + std::to_string(pipeline_k) + ": 1F1B needs at least as many micro-batches as "
                  "stages (pp=" + std::to_string(pp) + ")");
    if (model.layers < pp)
      return fail("--strategy: pp=" + std::to_string(pp) + " needs at least " + std::to_string(pp) +
                  " layers, the model has " + std::to_string(model.layers) +
                  "; lower pp or give a --model with more layers");
    if (model.batch % pipeline_k != 0)
      return fail("--micro-batches " + std::to_string(pipeline_k) + " does not divide the batch " +
                  std::to_string(model.batch));
  }
  if (compare && !o.strategy.empty()) return fail("--compare checks frontier points; drop --strategy");
  rt::backend_options backend;
  backend.kind = o.backend;
  backend.prec = to::parse_precision(o.precision);
  if (backend.kind == "cpu" && backend.prec != to::precisions::fp32)
    return fail("the cpu backend trains in fp32; use --precision fp32 or --backend cuda");
  if (!o.gpu_file.empty() && backend.kind != "cuda")
    return fail("--gpu-file describes a GPU: use it with --backend cuda (the cpu backend plans for this machine)");
  std::optional<to::device> gpu_device;  // read before any work, so a bad file fails first
  if (!o.gpu_file.empty()) {
    try {
      gpu_device = to::device_of(to::load_device_file(o.gpu_file));
    } catch (const std::exception& e) {
      return fail(e.what());
    }
  }
#ifdef TENSOROPT_EXAMPLE_MPI
  std::unique_ptr<rt::mpi_session> session;
  std::unique_ptr<rt::mpi_comm> mpi;
  if (comm_kind == "mpi") {
    session = std::make_unique<rt::mpi_session>(&argc, &argv);
    mpi = std::make_unique<rt::mpi_comm>();
  }
#else
  if (comm_kind == "mpi") return fail("this build has no MPI; rebuild with MPI found, or use --comm local");
#endif
  const bool leader = comm_kind == "local" ||
#ifdef TENSOROPT_EXAMPLE_MPI
                      mpi->rank() == 0;
#else
                      true;
#endif
  auto say = [&](const char* fmt, auto... args) {
    if (leader) std::printf(fmt, args...);
  };
  try {
    std::string why;
    const auto raw = to::read_input_file(data, why);
    if (!raw) return fail("cannot read the training text '" + data + "' (" + why + "; pass --data FILE)");
    std::vector<int> text;
    for (char ch : *raw) text.push_back(token_of(ch));
    if (text.size() < 2 * std::size_t(model.seq) + 2) return fail("the training text '" + data + "' is too short");
    const std::string spec = to::models::to_spec(model, to::models::transformer_kind::gpt);
    say("model %s\n", spec.c_str());

    // Plan: the frontier on 4 CPU devices, then the fastest point within the budget.
    // --compare plans on the cpu device calibrated on this machine (cached).
    const auto g = to::models::lower_transformer(model, to::models::transformer_kind::gpt);
    auto cl = to::cluster::single_node(devices);
    rt::cpu_calibration cal;
    if (gpu_device) {
      cl = cl.gpu(*gpu_device);
    } else if (compare) {
      cal = rt::calibrate_cpu();
      cl = cl.gpu(cal.to_device());
    }
    to::planner_options po;
    po.baselines = false;
    po.micro_batches = {1, 2};
    if (o.micro_batches) {
      if (g.batch % *o.micro_batches != 0)
        return fail("--micro-batches " + std::to_string(*o.micro_batches) + " does not divide the batch " +
                    std::to_string(g.batch));
      po.micro_batches = {to::index_t(*o.micro_batches)};
    }
    po.build.prec = backend.prec;          // the CPU runtime trains in fp32 with Adam
    po.build.regenerate_dropout = true;    // the runtime regenerates dropout masks in backward
    // a plan's predicted peak (kept buffers in the order they live, plus the running op's working set)
    const auto predicted_peak_of = [&](const std::vector<to::op_config>& configs, int k) {
      auto bo = po.build;
      bo.micro_batches = k;
      return to::predicted_peak(to::with_batch(g, g.batch / k), configs, cl, bo).peak();
    };
    if (compare) {  // predicted vs measured for five frontier points, local devices
      const auto pf = to::plan_frontier(g, cl, po);
      if (pf.empty()) return fail("the planner found no plan");
      if (gpu_device)
        std::printf("device: %s (from %s)\n", std::string(cl.gpu_spec.name).c_str(), o.gpu_file.c_str());
      else
        std::printf("cpu calibration (%s, %s): sgemm %.1f GFLOP/s, triad %.1f GB/s, kernel launch %.2f us, "
                  "local message %.2f us\n",
                  cal.from_cache ? "cached" : "measured", cal.cpu_model.c_str(), cal.gemm_flops / 1e9,
                  cal.bandwidth / 1e9, cal.launch_seconds * 1e6, cal.local_latency * 1e6);
      std::printf("%d local devices on %u hardware threads; %d steps per point (median step time)\n", devices,
                  std::thread::hardware_concurrency(), steps);
      std::printf("memory target: measured peak within -10 %% .. +5 %% of predicted; time: ranking preserved\n");
      std::printf("%-6s %3s %10s %10s %8s %10s %10s %8s %7s  %s\n", "point", "k", "pred ms", "meas ms", "ratio",
                  "pred MiB", "meas MiB", "mem err", "target", "peak at (measured / predicted)");
      // where a device peaked: memory_stats' site (op j's forward j, its backward ops + j, the update 2 ops)
      const auto site_name = [&](int site) -> std::string {
        const int ops = int(g.ops.size());
        if (site < 0) return "-";
        if (site >= 2 * ops) return "update";
        const bool bwd = site >= ops;
        return std::string(g.ops[std::size_t(bwd ? site - ops : site)].name) + (bwd ? " bwd" : " fwd");
      };
      std::vector<double> pred_t, meas_t;
      int missed = 0;
      const std::size_t n = pf.size();
      for (std::size_t i : {std::size_t(0), n / 4, n / 2, (3 * n) / 4, n - 1}) {
        const auto p = pf.at(i);
        rt::local_world w(devices);
        rt::optimizer_options adam;
        adam.type = rt::optimizer_options::kind::adam;
        rt::trainer t(g, p.training_plan(), w, adam);
        std::vector<double> dt;
        std::int64_t peak = 0;
        int peak_site = -1;
        for (int s = 0; s <= steps; ++s) {
          const auto b = make_batch(text, model, s);
          const auto t0 = std::chrono::steady_clock::now();
          t.step(b);
          if (s > 0) dt.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
          for (auto& m : t.memory())
            if (m.peak >= peak) peak = m.peak, peak_site = m.peak_site;
        }
        std::sort(dt.begin(), dt.end());
        const double meas = dt[dt.size() / 2], pred = p.time() / 1_s;
        pred_t.push_back(pred);
        meas_t.push_back(meas);
        auto bo = po.build;
        bo.micro_batches = p.micro_batches();
        const auto pk = to::predicted_peak(to::with_batch(g, g.batch / p.micro_batches()), p.op_configs(), cl, bo);
        const double predicted = pk.peak();
        const double err = double(peak) / predicted - 1;
        const int ops = int(g.ops.size());
        std::printf("#%-5zu %3d %10.3f %10.3f %7.2fx %10.3f %10.3f %+7.1f%% %7s  %s / %s\n", i, p.micro_batches(),
                    1e3 * pred, 1e3 * meas, meas / pred, predicted / 1048576, to::from_byte_count(peak) / 1_MiB,
                    100 * err, err <= 0.05 && err >= -0.10 ? "met" : "MISSED", site_name(peak_site).c_str(),
                    site_name(pk.op < 0 ? 2 * ops : pk.op + (pk.backward ? ops : 0)).c_str());
        missed += !(err <= 0.05 && err >= -0.10);
      }
      int inversions = 0;
      for (std::size_t a = 0; a < pred_t.size(); ++a)
        for (std::size_t b = a + 1; b < pred_t.size(); ++b)
          if ((pred_t[a] < pred_t[b]) != (meas_t[a] < meas_t[b])) ++inversions;
      std::printf("step-time ranking: %d of %zu pairs inverted (predicted vs measured)\n", inversions,
                  pred_t.size() * (pred_t.size() - 1) / 2);
      if (missed) std::printf("memory target missed on %d point(s)\n", missed);
      return missed ? 1 : 0;
    }
    rt::chosen_plan chosen;
    to::pipeline_plan pipeline;
    if (pp > 1) {  // each stage's strategy on its devices; balanced stages (plan/pipeline_spec.hpp)
      if (!plan_path.empty()) return fail("--strategy and --plan both choose the plan; give one");
      pipeline = to::plan_from_spec(g, cl.mesh, strategy_parsed, pipeline_k);
      say("strategy %s: %s, %d micro-batches (1F1B), stages start at ops", o.strategy.c_str(),
          to::summarize_pipeline(g, pipeline).c_str(), pipeline_k);
      for (auto b : pipeline.stage_begin) say(" %zu", b);
      say("\n");
    } else if (!o.strategy.empty()) {
      if (!plan_path.empty()) return fail("--strategy and --plan both choose the plan; give one");
      auto bo = po.build;
      bo.micro_batches = po.micro_batches.size() == 1 ? po.micro_batches[0] : 1;
      const auto ev = to::evaluate_spec(strategy_parsed, g, cl, bo);
      chosen.plan = {ev.configs, int(bo.micro_batches), cl.mesh};
      chosen.time = ev.time * 1_s;
      chosen.memory = to::from_byte_count(std::int64_t(ev.memory));
      chosen.source = "strategy " + o.strategy;
      char mfu[64];
      std::snprintf(mfu, sizeof mfu, "predicted MFU %.1f %%", 100 * ev.mfu);
      chosen.summary = mfu;
    } else {
      std::optional<to::bytes> budget;
      if (budget_mib > 0) budget = budget_mib * 1_MiB;
      chosen = rt::choose_training_plan(g, cl, po, budget, plan_path, spec, backend);
      if (chosen.pipeline.degree > 1) {  // a tensoropt-plan/2 file with pipeline stages
        pipeline = chosen.pipeline;
        chosen.summary += ", stages start at ops";
        for (auto b : pipeline.stage_begin) chosen.summary += " " + std::to_string(b);
      }
    }
    const bool piped = pipeline.degree > 1;
    if (pp == 1)
      say("%s on %d devices: predicted %.3f ms/step, %.3f MiB per device, %d micro-batch(es)%s\n%s\n",
          chosen.source.c_str(), devices, chosen.time / 1_ms, chosen.memory / 1_MiB,
          piped ? pipeline.micro_batches : chosen.plan.micro_batches, piped ? " (1F1B)" : "", chosen.summary.c_str());
    // the runtime's peak: the replay of one step's buffers (per stage under 1F1B)
    double predicted_peak = 0;
    std::vector<double> stage_peaks;  // predicted, per pipeline stage
    if (!piped) predicted_peak = predicted_peak_of(chosen.plan.configs, chosen.plan.micro_batches);
    for (int s = 0; piped && s < pipeline.degree; ++s) {
      stage_peaks.push_back(to::predicted_stage_peak(g, pipeline, s, cl, po.build).peak());
      predicted_peak = std::max(predicted_peak, stage_peaks.back());
    }

    rt::training_options run;
    run.steps = steps;
    run.optimizer.type = rt::optimizer_options::kind::adam;
    run.optimizer.lr = 3e-3f;
    run.backend = backend;
    run.resume = resume_path;
    run.save = save_path;
    const double tokens = double(model.batch * model.seq);
    run.on_step = [&](std::int64_t step, float loss, double dt) {
      say("step %3lld  loss %.6f  %8.0f tokens/s\n", (long long)step, double(loss), tokens / dt);
    };
    const auto next = [&](std::int64_t step) { return make_batch(text, model, step); };
    rt::training_result r;
    if (comm_kind == "local") {
      rt::local_world world(devices);
      r = piped ? rt::train(g, pipeline, world, next, run) : rt::train(g, chosen.plan, world, next, run);
    } else {
#ifdef TENSOROPT_EXAMPLE_MPI
      r = piped ? rt::train(g, pipeline, *mpi, next, run) : rt::train(g, chosen.plan, *mpi, next, run);
#endif
    }
    if (!save_path.empty())
      say("saved checkpoint %s after step %lld\n", save_path.c_str(), (long long)(r.first_step + steps - 1));
    say("backend %s, %s\n", backend.kind.c_str(), std::string(backend.prec.name).c_str());
    say("%.0f tokens/s on average; device 0 spent %.1f %% of the step time in kernels\n", tokens * steps / r.seconds,
        100 * r.kernel_seconds / r.seconds);
    say("loss %.4f -> %.4f; peak memory of a device %.3f MiB (predicted %.3f MiB)\n", double(r.first_loss),
        double(r.last_loss), to::from_byte_count(r.peak_bytes) / 1_MiB, predicted_peak / 1048576);
    if (piped && r.device_peak_bytes.size() == std::size_t(devices)) {  // every stage's devices in this process
      const int d = devices / pipeline.degree;
      for (int s = 0; s < pipeline.degree; ++s) {
        std::int64_t measured = 0;
        for (int i = s * d; i < (s + 1) * d; ++i) measured = std::max(measured, r.device_peak_bytes[std::size_t(i)]);
        say("stage %d (ranks %d-%d): peak memory %.3f MiB, predicted %.3f MiB (%+.1f %%)\n", s, s * d, (s + 1) * d - 1,
            to::from_byte_count(measured) / 1_MiB, stage_peaks[std::size_t(s)] / 1048576,
            100 * (double(measured) / stage_peaks[std::size_t(s)] - 1));
      }
    }
    if (steps >= 20 && !(r.last_loss < 0.8f * r.first_loss)) {
      say("train_gpt: the loss did not fall clearly below the starting loss\n");
      return 1;
    }
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}
