// gpu_bench: trains a GPT layer stack on one GPU through the CUDA backend and
// prints tokens/s, model FLOPs utilization and predicted vs measured step time and
// peak memory. Not a test: figures, with the machine named in the output.
//
//   gpu_bench [--precision bf16-mixed|fp32] [--steps N] [--layers 8|2] [--gpu-file FILE] [--json FILE]
//             [--predict-only]
//
// Model: 8 layers, hidden 2048, 16 heads, seq 2048, vocab 50304, micro-batch 8 (no
// dropout, as the PyTorch reference bench/gpt_torch.py). Model FLOPs per token =
// 6 N + 12 L h s (N parameters, L layers, h hidden, s sequence: the matmuls of the
// forward and backward, and the attention scores and values; no recomputation);
// MFU = FLOPs per token x tokens/s / 989 TFLOP/s (H100/H200 dense bf16).
// Predicted figures: the planner's fastest plan on one GPU in the chosen precision,
// the GPU being the h200-141gb preset (cost/device.hpp) or, with --gpu-file, the device
// file gpu_calibrate measured on this machine (tensoropt-device/1 or /2, its GEMM
// table included); the run uses that plan, and the output names which device it was.
// The same device also prices the PyTorch reference's two variants, for the cost
// model against a real training run (scripts/gpu_check.sh sets them against
// gpt_torch.py's measured steps): one GPU, one micro-batch, bf16 mixed precision, the
// linears' biases in the GEMM epilogue (PyTorch's addmm), plain attention as a
// materialized core and SDPA as a fused one. What the reference runs beyond that is not
// charged: autocast's casts, softmax and the loss in fp32, and the plain path's
// separate scale and mask passes. The same for gpt_torch.py's BERT-large layer timed
// alone (plan/layer_time.hpp: forward + backward of one layer, no optimizer step) at 96 x
// 128 and 8 x 512: eager as a materialized core, SDPA as a fused one, biases in the
// epilogue. --predict-only prints the predictions and stops (no GPU needed).
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/device_file.hpp>
#include <tensoropt/plan/layer_time.hpp>
#include <tensoropt/plan/planner.hpp>
#include <tensoropt/plan/strategy_spec.hpp>
#include <tensoropt/runtime/trainer.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace to = tensoropt;
namespace rt = tensoropt::runtime;

namespace {
constexpr double peak_flops = 989e12;

/// The cost model's step for bench/gpt_torch.py on `cl` (see the file comment): plain
/// attention (a materialized core) and SDPA (a fused core).
struct torch_prediction {
  double plain = 0, sdpa = 0;
};
torch_prediction predict_torch(const to::op_graph& g, const to::cluster& cl) {
  to::build_options b;
  b.prec = to::precisions::bf16_mixed;  // gpt_torch.py: bf16 autocast, fp32 weights
  b.micro_batches = 1;
  const auto spec = to::parse_strategy_spec("tp=1");
  torch_prediction r;
  b.attention = to::attention_kernel::materialized;
  r.plain = to::evaluate_spec(spec, g, cl, b).time;
  b.attention = to::attention_kernel::fused;
  r.sdpa = to::evaluate_spec(spec, g, cl, b).time;
  return r;
}

/// The cost model's forward + backward of gpt_torch.py's BERT-large layer.
struct layer_prediction {
  int batch, seq;
  const char* attention;  ///< "eager" (materialized core) or "sdpa" (fused)
  double seconds;
};
std::vector<layer_prediction> predict_layers(const to::device& d) {
  std::vector<layer_prediction> r;
  for (auto [b, s] : {std::pair{96, 128}, std::pair{8, 512}})
    for (bool sdpa : {false, true}) {
      to::models::gpt_config c;
      c.hidden = 1024;
      c.heads = 16;
      c.seq = s;
      c.vocab = 30528;
      c.batch = b;
      to::build_options o;
      o.attention = sdpa ? to::attention_kernel::fused : to::attention_kernel::materialized;
      r.push_back({b, s, sdpa ? "sdpa" : "eager", to::layer_seconds(c, to::models::transformer_kind::bert, d, o)});
    }
  return r;
}

/// The JSON fields of the predictions: the PyTorch reference's, the layers', and which
/// device priced them.
std::string predictions_json(const torch_prediction& tp, const std::vector<layer_prediction>& layers,
                             const std::string& gpu_file) {
  std::ostringstream o;
  o << "\"torch_predicted_plain_s\": " << tp.plain << ", \"torch_predicted_sdpa_s\": " << tp.sdpa
    << ", \"layer_predictions\": [";
  for (std::size_t i = 0; i < layers.size(); ++i)
    o << (i ? ", " : "") << "{\"batch\": " << layers[i].batch << ", \"seq\": " << layers[i].seq
      << ", \"attention\": \"" << layers[i].attention << "\", \"step_s\": " << layers[i].seconds << "}";
  o << "], \"predicted_with\": \"" << (gpu_file.empty() ? "preset" : "calibrated") << "\"";
  return o.str();
}

template <class Model>
int run(const rt::backend_options& bo, int steps, const std::string& json, const std::string& gpu_file,
        bool predict_only) {
  constexpr auto c = Model::config;
  const auto g = to::lower<Model>();
  double params = 0;
  for (auto& t : g.tensors)
    if (t.parameter) params += double(t.size());
  const double tokens = double(c.batch * c.seq);
  const double flops_per_token = 6 * params + 12.0 * double(c.layers * c.hidden * c.seq);

  to::planner_options po;
  po.baselines = false;
  po.micro_batches = {1};
  po.build.prec = bo.prec;
  const auto gpu = gpu_file.empty() ? to::gpus::h200_141gb : to::device_of(to::load_device_file(gpu_file));
  const std::string gpu_name = gpu_file.empty() ? "h200-141gb preset" : "calibrated: " + gpu_file;
  const auto cl = to::cluster::single_node(1).gpu(gpu);
  const auto pf = to::plan_frontier(g, cl, po);
  if (pf.points.empty()) {
    std::fprintf(stderr, "gpu_bench: the planner found no plan\n");
    return 2;
  }
  const std::size_t chosen = pf.points.size() - 1;  // the fastest
  const auto& pt = pf.points[chosen];
  rt::training_plan plan{pf.op_configs(chosen), pt.micro_batches, cl.mesh};
  const torch_prediction tp = predict_torch(g, cl);
  std::printf("gpu_bench: cost model for bench/gpt_torch.py (%s): plain attention %.2f ms, SDPA %.2f ms\n",
              gpu_name.c_str(), 1e3 * tp.plain, 1e3 * tp.sdpa);
  const auto layers = predict_layers(gpu);
  for (const auto& l : layers)
    std::printf("gpu_bench: cost model for gpt_torch.py's bert-large layer %d x %d %-5s: forward + backward %.3f ms\n",
                l.batch, l.seq, l.attention, 1e3 * l.seconds);
  if (predict_only) {
    std::printf("gpu_bench: the planner's fastest plan for this run (%s): predicted step %.2f ms, %.0f MiB\n",
                gpu_name.c_str(), double(pt.time) / 1e9, double(pt.memory) / 1048576);
    if (!json.empty())
      std::ofstream(json) << "{\"predicted_step_s\": " << double(pt.time) / 1e12 << ", "
                          << predictions_json(tp, layers, gpu_file) << "}\n";
    return 0;
  }

  rt::local_world world(1, std::chrono::seconds(120));
  rt::optimizer_options adam;
  adam.type = rt::optimizer_options::kind::adam;
  adam.lr = 1e-4f;
  rt::trainer tr(g, plan, world, adam, 1234, bo);
  std::mt19937 rng(7);
  rt::batch b(2, std::vector<float>(std::size_t(c.batch * c.seq)));
  for (auto& v : b)
    for (auto& x : v) x = float(rng() % std::uint32_t(c.vocab));
  std::vector<double> dt;
  float loss = 0;
  for (int s = 0; s < steps + 2; ++s) {  // two warm-up steps (pool growth, cuBLASLt plans)
    const auto t0 = std::chrono::steady_clock::now();
    loss = tr.step(b);
    if (s >= 2) dt.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(dt.begin(), dt.end());
  const double step = dt[dt.size() / 2], tps = tokens / step, mfu = flops_per_token * tps / peak_flops;
  const auto mem = tr.device(0).device_backend().memory_report();
  const double pred = double(pt.time) / 1e12;
  std::printf("gpu_bench: GPT %lld layers, hidden %lld, %lld heads, seq %lld, vocab %lld, micro-batch %lld, %s\n",
              (long long)c.layers, (long long)c.hidden, (long long)c.heads, (long long)c.seq, (long long)c.vocab,
              (long long)c.batch, std::string(bo.prec.name).c_str());
  std::printf("  parameters N = %.1f M; model FLOPs per token = 6N + 12 L h s = %.3f GFLOP\n", params / 1e6,
              flops_per_token / 1e9);
  std::printf("  step %.2f ms (median of %d), %.0f tokens/s, MFU %.1f %% of 989 TFLOP/s; loss %.4f\n", 1e3 * step,
              steps, tps, 100 * mfu, double(loss));
  std::printf("  predicted step %.2f ms (%s): measured / predicted = %.2f\n", 1e3 * pred, gpu_name.c_str(),
              step / pred);
  std::printf("  memory: predicted %.0f MiB; requested peak %.0f MiB (%+.1f %%); pool high-water %.0f MiB; "
              "fixed reserve %.0f MiB\n",
              double(pt.memory) / 1048576, double(mem.requested_peak) / 1048576,
              100 * (double(mem.requested_peak) / double(pt.memory) - 1), double(mem.pool_peak) / 1048576,
              double(mem.reserve) / 1048576);
  if (!json.empty()) {
    std::ofstream o(json);
    o << "{\"precision\": \"" << bo.prec.name << "\", \"step_s\": " << step << ", \"tokens_per_s\": " << tps
      << ", \"mfu\": " << mfu << ", \"predicted_step_s\": " << pred << ", \"predicted_bytes\": " << double(pt.memory)
      << ", \"requested_peak_bytes\": " << mem.requested_peak << ", \"pool_peak_bytes\": " << mem.pool_peak
      << ", \"reserve_bytes\": " << mem.reserve << ", \"flops_per_token\": " << flops_per_token
      << ", " << predictions_json(tp, layers, gpu_file) << "}\n";
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  rt::backend_options bo{.kind = "cuda", .prec = to::precisions::bf16_mixed};
  int steps = 10, layers = 8;
  bool predict_only = false;
  std::string json, gpu_file;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw to::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--precision") bo.prec = to::parse_precision(value());
      else if (a == "--steps") steps = std::max(1, std::stoi(value()));
      else if (a == "--layers") layers = std::stoi(value());
      else if (a == "--json") json = value();
      else if (a == "--gpu-file") gpu_file = value();
      else if (a == "--predict-only") predict_only = true;
      else
        throw to::invalid_argument("unknown option '" + a +
                                   "'; use --precision P, --steps N, --layers 8|2, --gpu-file FILE, --json FILE, "
                                   "--predict-only");
    }
    if (layers == 2)  // a quick size for smoke runs
      return run<to::models::gpt<{.layers = 2, .hidden = 2048, .heads = 16, .seq = 2048, .vocab = 50304, .batch = 8,
                                  .dropout = 0.0}>>(bo, steps, json, gpu_file, predict_only);
    if (layers != 8) throw to::invalid_argument("--layers must be 8 (the bench) or 2 (a smoke run)");
    return run<to::models::gpt<{.layers = 8, .hidden = 2048, .heads = 16, .seq = 2048, .vocab = 50304, .batch = 8,
                                .dropout = 0.0}>>(bo, steps, json, gpu_file, predict_only);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_bench: %s\n", e.what());
    return 1;
  }
}
