// Extra memory traffic of particular kernels, beyond the roofline of an op's
// inputs, parameters and output (op_cost.hpp), each tied to a switch of the software
// stack (cost_options) because the same op costs differently under different
// kernels: the attention core's score tensors, batch norm's second reads of its
// input, batch norm fused with the ReLU and residual add after it, a linear's bias
// and gradient accumulation over micro-batches. cost_op adds
// these passes at the device's streaming bandwidth (memory_bw * memory_efficiency).
//
// - Attention core, per implementation (cost_options::attention, a switch of the
//   software stack): with P = b * heads * s^2 local score elements and e bytes
//   per activation,
//     materialized (Megatron's unfused softmax path, what Korthikanti et al.
//     assume): the scores S = QK^T, the softmax, the dropout mask (1 byte) and
//     the dropout output are written to memory. Forward: write S, read S + write
//     softmax, read softmax + write dropout output and mask, read it in AV:
//     6Pe + P bytes (4Pe without dropout). Backward: read the dropout output
//     (dV), write its gradient, read it + the mask + write the softmax gradient,
//     read softmax + gradient + write dS, read dS twice (dQ, dK): 9Pe + P bytes
//     (7Pe without dropout). Charged as separate memory-bound passes added to
//     the GEMM roofline, with one launch per softmax / dropout pass.
//     fused (FlashAttention, Dao et al. 2022): no score traffic; backward
//     recomputes QK^T (+2 FLOPs per point, 10 instead of 8); saved buffers
//     indexed by the key dim are not kept, only the softmax statistics
//     (b * heads * s fp32 values).
// - Batch norm in training reads its input twice in forward (statistics, then
//   normalization) and x and dy twice in backward: one extra input pass forward,
//   two backward (cuDNN's and the reference kernels' structure).
// - Fused batch norm + ReLU (cost_options::fused_bn_relu, a switch of the software
//   stack: cuDNN's BN-ReLU and BN-add-ReLU kernels, MXNet's fuse-bn-relu /
//   fuse-bn-add-relu): a relu reading a batch norm's output, and a two-input add
//   reading one and read only by a relu (a bottleneck's residual), run no kernel
//   of their own. The batch norm reads its output once more in backward (the ReLU
//   mask); a fused add still costs the addend's read forward and its gradient's
//   write backward. Memory is charged as without the fusion.
// - Linear bias. A linear that owns its bias reduces dY over the tokens for the
//   bias gradient: one read of the output gradient in backward, a kernel of its
//   own in every stack modelled (PyTorch's addmm backward sums the gradient;
//   Megatron-LM's linear layers compute grad_output.sum(0)). Forward, stacks differ
//   (cost_options::linear_bias_pass): Megatron-LM adds biases inside its fused
//   bias-GELU and bias-dropout-add kernels (free here: those ops' passes are
//   charged anyway), cuBLASLt's bias epilogue adds it in the GEMM; PyTorch's
//   nn.Linear without the epilogue copies the broadcast bias into the output and
//   runs the GEMM with beta = 1 (aten addmm), or adds it in place after it: two
//   passes over the output (a write and a read), one launch.
// - Gradient accumulation. With k micro-batches each one after the first adds its
//   weight gradient into the accumulator: an in-place add reading both and writing
//   the sum, 3 x the gradient's bytes per local parameter element, k - 1 times per
//   iteration (PyTorch's AccumulateGrad; Megatron-LM's main_grad.add_, whose fp32
//   accumulator costs more than the model's gradient dtype charges).
//
// Sources: Korthikanti et al. 2022 (arXiv:2205.05198) for the materialized score
// tensors; Dao et al. 2022 (FlashAttention) for the fused core; the fused BN stack
// is the one DeepLearningExamples' MXNet ResNet-50 runner selects for float16
// (--fuse-bn-relu 1 --fuse-bn-add-relu 1; cost/published_runs.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../model/graph.hpp"
#include "config.hpp"

namespace tensoropt {

/// How the attention core runs (see the file comment).
enum class attention_kernel : std::uint8_t {
  materialized,  ///< scores, softmax and dropout written to memory (Megatron's unfused path)
  fused,         ///< FlashAttention: scores stay on chip; backward recomputes them
};

/// "materialized" or "fused": the name --attention takes.
constexpr std::string_view attention_kernel_name(attention_kernel k) {
  return k == attention_kernel::fused ? "fused" : "materialized";
}

/// The kernel named `s`; throws invalid_argument listing the valid names.
inline attention_kernel parse_attention_kernel(std::string_view s) {
  if (s == "materialized") return attention_kernel::materialized;
  if (s == "fused") return attention_kernel::fused;
  throw invalid_argument("unknown attention implementation '" + std::string(s) + "'; valid: materialized, fused");
}

namespace detail {
/// Bytes of the score tensors a materialized attention core moves (file comment).
struct score_bytes {
  double fwd = 0, bwd = 0;
  int passes = 0;  ///< memory-bound kernels per direction (softmax, dropout)
};
/// Local score elements of an attention core: b * heads * sq * sk over the splits.
constexpr double local_scores(const op_node& op, const op_config& c) {
  double P = 1;
  for (int d = 0; d < 4; ++d) P *= double(op.dims[d].extent) / double(c.total_degree(d));
  return P;
}
constexpr score_bytes score_traffic(const op_node& op, const op_config& c, const precision& pr) {
  const double P = local_scores(op, c);
  const double e = pr.activation_bytes();
  if (op.attr[1] > 0) return {P * (6 * e + 1), P * (9 * e + 1), 2};
  return {P * 4 * e, P * 7 * e, 1};
}
/// Whether `op` is a linear owning a bias parameter (the lowering's attr[3] == 1).
constexpr bool owns_bias(const op_node& op) {
  return op.kind == op_kind::linear && op.attr[3] == 1 && op.output.tensor >= 0;
}
/// Bytes one gradient accumulation moves for `n` local parameter elements: read the
/// accumulator and the new gradient, write the sum (file comment).
constexpr double accumulation_bytes(double n, const precision& pr) { return 3.0 * n * pr.grad_bytes; }
/// The kind of the op producing tensor `t` (op_kind::input for a graph input).
constexpr op_kind producer_kind(const op_graph& g, int t) {
  const int p = g.tensors[t].producer;
  return p < 0 ? op_kind::input : g.ops[p].kind;
}
/// The ops reading tensor `t`: how many, and whether all are relus.
struct readers_of {
  int count = 0;
  bool all_relu = true;
};
constexpr readers_of tensor_readers(const op_graph& g, int t) {
  readers_of r;
  for (const auto& o : g.ops)
    for (const auto& in : o.inputs)
      if (in.tensor == t) {
        ++r.count;
        r.all_relu = r.all_relu && o.kind == op_kind::relu;
      }
  return r;
}
/// A residual add fused into the batch norm before it (file comment: fused_bn_relu).
constexpr bool bn_fused_add(const op_graph& g, const op_node& op) {
  if (op.kind != op_kind::add || op.inputs.size() != 2 || op.output.tensor < 0) return false;
  // the batch norm's output must have no other reader (the fused kernel writes only
  // the sum's ReLU), and the sum only the relu
  const int slot = producer_kind(g, op.inputs[0].tensor) == op_kind::batch_norm ? 0 : 1;
  if (producer_kind(g, op.inputs[slot].tensor) != op_kind::batch_norm) return false;
  if (tensor_readers(g, op.inputs[slot].tensor).count != 1) return false;
  const auto rd = tensor_readers(g, op.output.tensor);
  return rd.count == 1 && rd.all_relu;
}
/// A relu fused into the batch norm (or fused residual add) before it.
constexpr bool bn_fused_relu(const op_graph& g, const op_node& op) {
  if (op.kind != op_kind::relu || op.inputs.empty()) return false;
  const int t = op.inputs[0].tensor, p = g.tensors[t].producer;
  if (p < 0) return false;
  if (g.ops[p].kind == op_kind::batch_norm) return tensor_readers(g, t).count == 1;
  return bn_fused_add(g, g.ops[p]);
}
/// The input of a fused residual add that the batch norm kernel produces (the first
/// one a batch norm writes); the other input is the addend it reads.
constexpr int fused_add_bn_slot(const op_graph& g, const op_node& add) {
  return producer_kind(g, add.inputs[0].tensor) == op_kind::batch_norm ? 0 : 1;
}
/// Whether batch norm `bn` runs fused with the ReLU (or add + ReLU) reading its
/// output: then its backward reads the output once more (the ReLU mask).
constexpr bool bn_runs_fused(const op_graph& g, const op_node& bn) {
  if (bn.kind != op_kind::batch_norm || bn.output.tensor < 0) return false;
  for (const auto& v : g.ops)
    for (std::size_t j = 0; j < v.inputs.size(); ++j) {
      if (v.inputs[j].tensor != bn.output.tensor) continue;
      if (bn_fused_relu(g, v)) return true;
      if (bn_fused_add(g, v) && int(j) == fused_add_bn_slot(g, v)) return true;
    }
  return false;
}
}  // namespace detail

}  // namespace tensoropt
