// One published training run as the cost model checks it: the model, the cluster,
// the strategy and software-stack switches, the measured figure and its source
// (struct published_run), and the conversions of a reported figure into seconds per
// iteration (Megatron's FLOPs formula for TFLOP/s per GPU, the global batch for
// samples per second). The table of runs and what is known about each is
// cost/published_runs.hpp.
#pragma once
#include <cstdint>
#include <string_view>
#include "../core/units.hpp"
#include "kernel_traffic.hpp"

namespace tensoropt {

/// The model family of a published run.
enum class published_model : std::uint8_t {
  gpt,       ///< models::gpt_config, transformer_kind::gpt
  bert,      ///< the same fields, transformer_kind::bert
  resnet50,  ///< models::resnet50's layers (224x224, 1000 classes) at the row's batch
};

/// One published training run (see the file comment).
struct published_run {
  std::string_view name;
  published_model model = published_model::gpt;
  // a GPT / BERT (models::gpt_config fields; unused for ResNet-50)
  index_t layers = 0, hidden = 0, heads = 0, seq = 0, vocab = 0;
  index_t global_batch = 0;  ///< samples (sequences, images) per iteration
  index_t micro_batch = 0;   ///< samples per micro-batch and replica
  // the cluster
  index_t nodes = 0, gpus_per_node = 0;
  std::string_view device;  ///< a gpus:: preset name
  std::string_view precision = "bf16-mixed";  ///< parse_precision name (fp16 mixed runs are bf16-mixed here)
  // the strategy and software stack
  std::string_view strategy;  ///< a --strategy SPEC
  attention_kernel attention = attention_kernel::materialized;
  bool local_batch_norm = false;  ///< per-device batch-norm statistics (cost_options::local_batch_norm)
  bool fused_bn_relu = false;     ///< BN fused with the ReLU / residual add after it (cost_options::fused_bn_relu)
  bool linear_bias_pass = false;  ///< a linear's bias added by a pass of its own (cost_options::linear_bias_pass)
  bool overlap_grad_sync = false;  ///< gradients reduced while backward goes on (cost_options::overlap_grad_sync)
  index_t mlm_predictions = 0;  ///< BERT: masked positions the MLM head runs on (0: every token)
  index_t computed_seq_bound = 0;  ///< binned batches: bound on mean tokens computed per sequence (0: seq)
  // what was measured
  enum class figure : std::uint8_t { tflops_per_gpu, seconds, samples_per_second };
  figure reported_as = figure::seconds;
  double reported = 0;  ///< TFLOP/s per GPU (Megatron eq. 3 FLOPs), seconds per iteration, or samples/s
  std::string_view source;
  bool confirmed = true;  ///< figure and configuration checked against a stored copy of the source
  bool fit_row = false;   ///< used to fit a cost-model constant
  std::string_view note;  ///< assumptions, what is unconfirmed, or why the run is outside the model

  constexpr index_t gpus() const { return nodes * gpus_per_node; }
  constexpr bool transformer() const { return model != published_model::resnet50; }
  /// The SPEC's value of `key` ("tp", "pp"; 1 if absent).
  constexpr index_t spec_degree(std::string_view key) const {
    std::size_t at = 0;
    while (true) {  // key at the start or after a comma, then '='
      at = strategy.find(key, at);
      if (at == std::string_view::npos) return 1;
      if ((at == 0 || strategy[at - 1] == ',') && at + key.size() < strategy.size() &&
          strategy[at + key.size()] == '=')
        break;
      ++at;
    }
    index_t t = 0;
    for (std::size_t i = at + key.size() + 1; i < strategy.size() && strategy[i] >= '0' && strategy[i] <= '9'; ++i)
      t = 10 * t + (strategy[i] - '0');
    return t;
  }
  constexpr index_t tp() const { return spec_degree("tp"); }
  constexpr index_t pp() const { return spec_degree("pp"); }
  /// Data-parallel replicas: GPUs / (tp x pp).
  constexpr index_t replicas() const { return gpus() / (tp() * pp()); }
  /// Micro-batches per iteration: global batch / (replicas * micro-batch).
  constexpr index_t micro_batches() const { return global_batch / (replicas() * micro_batch); }
};

/// FLOPs of one iteration as Megatron counts them (Narayanan et al. 2021, eq. 3),
/// with activation recomputation: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
constexpr double megatron_flops_with_recompute(const published_run& r) {
  const double B = double(r.global_batch), s = double(r.seq), l = double(r.layers), h = double(r.hidden),
               V = double(r.vocab);
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

/// The measured seconds per iteration of `r` (converted from TFLOP/s per GPU or from
/// samples per second where the source reports that).
constexpr double measured_seconds(const published_run& r) {
  if (r.reported_as == published_run::figure::seconds) return r.reported;
  if (r.reported_as == published_run::figure::samples_per_second) return double(r.global_batch) / r.reported;
  return megatron_flops_with_recompute(r) / (r.reported * 1e12 * double(r.gpus()));
}

}  // namespace tensoropt
