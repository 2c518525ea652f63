// Published measurements of real training runs that the strategy space can express,
// kept as a table so the cost model is checked against hardware it has never run on
// (unit test cost_published_runs_test: every row's predicted step time within 15 %
// of the measured one, the median within 5 %).
//
// A row is one run: a GPT configuration, the cluster (nodes x GPUs per node and the
// device preset), the strategy as a `--strategy` SPEC (plan/strategy_spec.hpp), the
// software-stack switches the run used (attention kernel), and the measured figure
// with its source. Only runs without pipeline parallelism are kept; tensoropt has no
// pipeline stages, so every PP > 1 row of the sources is left out (Narayanan et al.
// Table 1 from 39.1B on; Korthikanti et al. 175B, 530B and 1T).
//
// Sources
// - Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
//   Clusters Using Megatron-LM" (SC'21, arXiv:2104.04473), Table 1 (weak scaling on
//   Selene, DGX A100 80 GB nodes, 8 GPUs each, 8 x 200 Gb/s HDR per node): achieved
//   teraFLOP/s per GPU for GPT with vocabulary 51200 and sequence 2048. The paper
//   counts FLOPs with activation recomputation (its eq. 3):
//     F = 96 B s l h^2 (1 + s / (6h) + V / (16 l h)),
//   so the measured step time is F / (TFLOP/s per GPU * GPUs); that is what
//   measured_seconds() returns for those rows. Table 1 gives no micro-batch size;
//   the rows assume micro-batches of one sequence, i.e. as many micro-batches as
//   sequences per replica. With one micro-batch per replica instead, every
//   prediction is 3-5 points lower and the median error would be 7.5 %, over the
//   5 % target: the assumption matters, and the test prints both. Full recomputation, as the paper used.
// - Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
//   Models" (arXiv:2205.05198): the 22B model of Table 3 (64 heads, hidden 6144,
//   48 layers, TP 8, PP 1, 8 GPUs, global batch 4, micro-batch 4) and its iteration
//   times of Table 5: 1.42 s with full recomputation, 1.10 s with selective
//   recomputation + sequence parallelism. (Cross-check: 1.10 s gives the 41.5 % MFU
//   the same table prints, with the 72 B s l h^2 (...) FLOPs of a step without
//   recomputation on 8 x 312 TFLOP/s.)
//
// Software stack of every row: Megatron-LM, bf16/fp16 mixed precision, fused
// scale-mask-softmax but no FlashAttention (the scores are written to memory:
// attention_kernel::materialized), the data-parallel gradient all-reduce not
// overlapped with the backward pass (the cost model has no overlap term either).
//
// Calibration: no constant of the cost model was fitted to these rows; every row is
// a check row (fit_row = false). A row used to fit a constant must set fit_row, and
// the test reports the error on fit rows and on check rows separately.
//
// Rows left out, and why: MLPerf Training BERT-large / ResNet-50 results on DGX
// A100 and V100 (their submissions use fused multi-head attention, CUDA graphs,
// DALI and per-submission hyper-parameters that the table could not state exactly
// from a source at hand; a row that cannot be sourced exactly is not kept).
#pragma once
#include <array>
#include <string_view>
#include "device.hpp"
#include "op_cost.hpp"

namespace tensoropt {

/// One published training run (see the file comment).
struct published_run {
  std::string_view name;
  // the model: a GPT (models::gpt_config fields)
  index_t layers = 0, hidden = 0, heads = 0, seq = 0, vocab = 0;
  index_t global_batch = 0;  ///< sequences per iteration
  index_t micro_batch = 0;   ///< sequences per micro-batch and replica
  // the cluster
  index_t nodes = 0, gpus_per_node = 0;
  std::string_view device;  ///< a gpus:: preset name
  // the strategy and software stack
  std::string_view strategy;  ///< a --strategy SPEC
  attention_kernel attention = attention_kernel::materialized;
  // what was measured
  enum class figure : std::uint8_t { tflops_per_gpu, seconds };
  figure reported_as = figure::seconds;
  double reported = 0;  ///< TFLOP/s per GPU (Megatron eq. 3 FLOPs) or seconds per iteration
  std::string_view source;
  bool fit_row = false;  ///< used to fit a cost-model constant

  constexpr index_t gpus() const { return nodes * gpus_per_node; }
  /// Data-parallel replicas: GPUs / tp, tp read from the SPEC's "tp=" (1 if absent).
  constexpr index_t tp() const {
    const auto at = strategy.find("tp=");
    if (at == std::string_view::npos) return 1;
    index_t t = 0;
    for (std::size_t i = at + 3; i < strategy.size() && strategy[i] >= '0' && strategy[i] <= '9'; ++i)
      t = 10 * t + (strategy[i] - '0');
    return t;
  }
  constexpr index_t replicas() const { return gpus() / tp(); }
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

/// The measured seconds per iteration of `r` (converted from TFLOP/s per GPU where
/// the source reports that).
constexpr double measured_seconds(const published_run& r) {
  if (r.reported_as == published_run::figure::seconds) return r.reported;
  return megatron_flops_with_recompute(r) / (r.reported * 1e12 * double(r.gpus()));
}

namespace detail {
constexpr published_run narayanan_row(std::string_view name, index_t heads, index_t hidden, index_t layers,
                                      index_t gpus, index_t batch, std::string_view spec, double tflops) {
  published_run r;
  r.name = name;
  r.layers = layers;
  r.hidden = hidden;
  r.heads = heads;
  r.seq = 2048;
  r.vocab = 51200;
  r.global_batch = batch;
  r.micro_batch = 1;
  r.nodes = gpus / 8;
  r.gpus_per_node = 8;
  r.device = "a100-80gb";
  r.strategy = spec;
  r.attention = attention_kernel::materialized;
  r.reported_as = published_run::figure::tflops_per_gpu;
  r.reported = tflops;
  r.source = "Narayanan et al. 2021 (arXiv:2104.04473), Table 1";
  return r;
}
constexpr published_run korthikanti_22b(std::string_view name, std::string_view spec, double seconds) {
  published_run r;
  r.name = name;
  r.layers = 48;
  r.hidden = 6144;
  r.heads = 64;
  r.seq = 2048;
  r.vocab = 51200;
  r.global_batch = 4;
  r.micro_batch = 4;
  r.nodes = 1;
  r.gpus_per_node = 8;
  r.device = "a100-80gb";
  r.strategy = spec;
  r.attention = attention_kernel::materialized;
  r.reported_as = published_run::figure::seconds;
  r.reported = seconds;
  r.source = "Korthikanti et al. 2022 (arXiv:2205.05198), Tables 3 and 5";
  return r;
}
}  // namespace detail

/// The table (see the file comment for sources, switches and what is left out).
inline constexpr std::array<published_run, 6> published_runs = {
    detail::narayanan_row("megatron-1.7b", 24, 2304, 24, 32, 512, "tp=1,recompute=full", 137),
    detail::narayanan_row("megatron-3.6b", 32, 3072, 30, 64, 512, "tp=2,recompute=full", 138),
    detail::narayanan_row("megatron-7.5b", 32, 4096, 36, 128, 512, "tp=4,recompute=full", 142),
    detail::narayanan_row("megatron-18.4b", 48, 6144, 40, 256, 1024, "tp=8,recompute=full", 135),
    detail::korthikanti_22b("korthikanti-22b-full", "tp=8,recompute=full", 1.42),
    detail::korthikanti_22b("korthikanti-22b-selective-sp", "tp=8,sp=1,recompute=selective", 1.10),
};

}  // namespace tensoropt
