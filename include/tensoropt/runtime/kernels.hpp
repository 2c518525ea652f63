// The CPU kernel table: forward and backward of every op_kind of model/graph.hpp
// (what cpu_backend::kernel_of returns).
#pragma once
#include <string>
#include "kernels_attention.hpp"
#include "kernels_conv.hpp"
#include "kernels_dense.hpp"
#include "kernels_moe.hpp"

namespace tensoropt::runtime::kernels {

using runtime::backward_fn;
using runtime::forward_fn;
using runtime::kernel;
using runtime::backward_reads_input;

/// The forward/backward pair of an op kind (op_kind::input has none: the executor
/// feeds the batch). Throws invalid_argument for an unknown kind.
inline kernel kernel_of(op_kind k) {
  switch (k) {
    case op_kind::input: return {};
    case op_kind::linear: return {linear_fwd, linear_bwd};
    case op_kind::conv2d: return {conv2d_fwd, conv2d_bwd};
    case op_kind::max_pool:
    case op_kind::avg_pool: return {pool_fwd, pool_bwd};
    case op_kind::global_avg_pool: return {gap_fwd, gap_bwd};
    case op_kind::batch_norm: return {batch_norm_fwd, batch_norm_bwd};
    case op_kind::layer_norm: return {layer_norm_fwd, layer_norm_bwd};
    case op_kind::embedding: return {embedding_fwd, embedding_bwd};
    case op_kind::attention: return {attention_fwd, attention_bwd};
    case op_kind::gelu:
    case op_kind::relu:
    case op_kind::dropout: return {unary_fwd, unary_bwd};
    case op_kind::add: return {add_fwd, add_bwd};
    case op_kind::concat: return {concat_fwd, concat_bwd};
    case op_kind::softmax_xent: return {softmax_xent_fwd, softmax_xent_bwd};
    case op_kind::moe_gate: return {moe_gate_fwd, moe_gate_bwd};
    case op_kind::moe_dispatch: return {moe_dispatch_fwd, moe_dispatch_bwd};
    case op_kind::moe_experts: return {moe_experts_fwd, moe_experts_bwd};
    case op_kind::moe_combine: return {moe_combine_fwd, moe_combine_bwd};
  }
  throw invalid_argument("no CPU kernel for op kind #" + std::to_string(int(k)));
}

}  // namespace tensoropt::runtime::kernels
