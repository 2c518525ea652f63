// GEMM efficiency by shape: how long the contraction of each of a linear op's three
// GEMMs is (forward, data gradient, weight gradient), and what that length costs.
//
// A tiled GEMM (cuBLAS, CUTLASS) gives each thread block an output tile and runs a
// main loop over the contraction dim K; around that loop every tile pays a fixed
// cost (filling the load pipeline, writing the tile out: the epilogue), so a GEMM
// of contraction length K runs at
//     efficiency(K) = E * K / (K + K0)
// of peak, where E is the device's large-GEMM efficiency (device::gemm_max_efficiency)
// and K0 the fixed cost per tile counted in steps of K (device::gemm_k0). The
// factor K / (K + K0) multiplies the device's efficiency curve over a GEMM's FLOPs
// (device::gemm_efficiency), which keeps small GEMMs' launch and wave effects.
//
// Source for K0: OpenXLA's measured cuBLAS matmul table for H100 (sm_90 entries of
// xla/service/gpu/model/matmul_interpolator_data.h, bf16, the largest M and N of
// the table): K = 256 -> 51 % of the 989 TFLOP/s peak (b=4, 4096x4096), 512 -> 63 %
// (b=4, 4096x4096), 1024 -> 69 % (b=2, 2048x4096), 2048 -> 77 % (b=2, 4096x4096),
// 4096 -> 79 % (4096^3). E * K / (K + K0) through those points gives K0 = 157 and
// E = 0.82 (the 4096 : 256 ratio fixes K0; the other three points then agree within
// 3 points). The presets take K0 = 157 on every GPU, an assumption: the cost is per
// tile in steps of K, and no such table for A100 or V100 was found. Were it instead
// a fixed time scaled by each SM's tensor throughput (989/132 TFLOP/s per SM on
// H100, 312/108 on A100, 125/80 on V100), A100's K0 would be 61 and V100's 33, and
// the published BERT rows on A100 would be predicted 2.4 points faster (-13.3 %
// instead of -10.9 %; cost_published_runs_test). The large-GEMM
// efficiency E stays the presets' 0.8. No published-run row was used to set K0
// (cost/published_runs.hpp); a calibrated device (measured GEMM rate) has K0 = 0.
//
// The three GEMMs of a linear y = x W (x: input dims, W: weight dims, y: output dims,
// each over the op's iteration dims, local extents under the config's splits):
//   forward         K = dims of x not in y (the input features),
//   data gradient   K = dims of y not in x (the output features),
//   weight gradient K = dims of x and y not in W (the tokens of the micro-batch).
// cost_op charges forward FLOPs at efficiency(K_fwd) and backward FLOPs (two GEMMs of
// equal FLOPs) at the harmonic mean of efficiency(K_dgrad) and efficiency(K_wgrad).
// K0 is counted in steps of the bf16/fp16 tensor-core main loop; a GEMM in another
// dtype runs its main loop at that dtype's peak, so the same per-tile cost is
// K0 * peak(dtype) / peak(bf16) of its steps (fp32 on V100's CUDA cores: K0 = 20).
// Only linear ops (cuBLAS) are shaped: convolutions run cuDNN's implicit GEMMs and
// keep the FLOPs curve alone; the attention core's batched GEMMs are memory-bound at
// the shapes the model zoo has (their score traffic is kernel_traffic.hpp's), and
// MoE experts hold two GEMMs in one op.
//
// A device calibrated with GEMM throughput by shape (device::gemm_measured, cost/
// gemm_table.hpp) has a measured factor per contraction length instead: the
// factors of its table for the GEMM's dtype replace K / (K + K0) where present.
#pragma once
#include <cstdint>
#include "../model/graph.hpp"
#include "config.hpp"
#include "device.hpp"
#include "gemm_table.hpp"

namespace tensoropt {

/// The contraction lengths of a linear op's three GEMMs on its local shard.
struct gemm_contractions {
  double forward = 0, data_grad = 0, weight_grad = 0;
};

namespace detail {
/// The op dims that tensor map `m` indexes (a bitmask over op dims).
constexpr std::uint32_t dims_of(const op_graph& g, const tensor_map& m) {
  std::uint32_t r = 0;
  for (int a = 0; a < g.tensors[m.tensor].rank; ++a)
    if (m.dim[a] >= 0) r |= 1u << m.dim[a];
  return r;
}
/// Product of the local extents of the dims in `mask` under `c` (1 for none).
constexpr double local_extent(const op_node& op, std::uint32_t mask, const op_config& c) {
  double e = 1;
  for (std::size_t d = 0; d < op.dims.size(); ++d)
    if (mask >> d & 1u) e *= double(op.dims[d].extent) / double(c.total_degree(int(d)));
  return e;
}
}  // namespace detail

/// Whether `op` is a linear whose GEMMs gemm_contractions describes: one input, the
/// weight as its first parameter, an output.
constexpr bool shaped_gemm(const op_graph& g, const op_node& op) {
  return op.kind == op_kind::linear && !op.inputs.empty() && !op.params.empty() && op.output.tensor >= 0 &&
         op.inputs[0].tensor >= 0 && op.params[0].tensor >= 0 && g.tensors[op.output.tensor].rank > 0;
}

/// The contraction lengths of linear `op` under `c` (see the file comment).
/// Precondition: shaped_gemm(g, op).
constexpr gemm_contractions contractions_of(const op_graph& g, const op_node& op, const op_config& c) {
  const std::uint32_t x = detail::dims_of(g, op.inputs[0]), w = detail::dims_of(g, op.params[0]),
                      y = detail::dims_of(g, op.output);
  return {detail::local_extent(op, x & ~y, c), detail::local_extent(op, y & ~x, c),
          detail::local_extent(op, x & y & ~w, c)};
}

/// The shape factors (each in (0, 1], or a measured table's) that divide a linear's forward and backward
/// FLOP rates: efficiency(K) / E for the forward GEMM, the harmonic mean of the two
/// backward GEMMs' for backward. Both are 1 for ops that are not shaped GEMMs.
struct gemm_shape_factors {
  double forward = 1, backward = 1;
};

/// `compute`: the dtype the GEMMs run in (K0 scales with its peak, file comment).
constexpr gemm_shape_factors shape_factors(const op_graph& g, const op_node& op, const op_config& c,
                                           const device& dev, dtype compute = dtype::bf16) {
  if (!shaped_gemm(g, op)) return {};
  const double half = dev.peak_half.value;
  const double rate = half > 0 ? dev.peak(compute).value / half : 1.0;
  const gemm_contractions k = contractions_of(g, op, c);
  const gemm_k_curve* measured = dev.gemm_measured ? dev.gemm_measured->of(compute) : nullptr;
  auto factor = [&](double kk) { return measured ? measured->at(kk, dev, rate) : dev.gemm_k_factor(kk, rate); };
  const double d = factor(k.data_grad), w = factor(k.weight_grad);
  return {factor(k.forward), 2 / (1 / d + 1 / w)};
}

}  // namespace tensoropt
