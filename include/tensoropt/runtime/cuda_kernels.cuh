// The CUDA backend's kernel table: each op kind's forward and backward on one
// device, read from the op_context exactly as the CPU kernels read it (local
// ranges, partial-sum blocks, dropout streams, the groups a split reduces over),
// then handed to the device launchers of cuda/*.cuh.
//
// Every entry dispatches on the buffers' dtype (fp32, or bf16 under bf16-mixed);
// statistics, probabilities and the loss stay fp32, as on the CPU. Buffers the CPU
// kernels allocate through c.zeros() are allocated here the same way (counted), so
// the requested-bytes peak of a plan in fp32 is the CPU's; workspaces that the CPU
// kernels keep in std::vector are scratch (uncounted) here too, and the integer state
// the CPU keeps in op_state::ints (max-pool argmax, MoE routing slots), which its
// executor charges to the device, is a counted buffer here.
//
// Covered here: linear, relu, gelu, dropout, add, concat, layer_norm, embedding,
// attention and softmax_xent (the MLP and GPT models); conv2d, max/avg pooling,
// global average pooling and batch norm (the CNN models) are glued in
// cuda_kernels_cnn.cuh, the MoE kinds in cuda_kernels_moe.cuh, and the table
// below names them all; a kind none covers throws invalid_argument naming it.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>
#include <string>
#include <tensoropt/cuda/gemm.cuh>
#include <tensoropt/cuda/kernels_attention.cuh>
#include <tensoropt/cuda/kernels_elementwise.cuh>
#include <tensoropt/cuda/kernels_embedding.cuh>
#include <tensoropt/cuda/kernels_linear.cuh>
#include <tensoropt/cuda/kernels_loss.cuh>
#include <tensoropt/cuda/kernels_norm.cuh>
#include <vector>
#include "cuda_glue.cuh"
#include "cuda_kernels_cnn.cuh"

namespace tensoropt::runtime::cuda_glue {

// ---- linear: dims [batch..., contract..., out...] (kernels_dense.hpp's linear_of) ----
struct linear_geometry {
  index_t m, k, n;
  bool w_transposed, bias_here, has_bias;
};
inline linear_geometry linear_of(const op_context& c) {
  const int nb = int(c.op.attr[0]), nc = int(c.op.attr[1]), no = int(c.op.attr[2]);
  linear_geometry l{c.len_range(0, nb), c.len_range(nb, nb + nc), c.len_range(nb + nc, nb + nc + no), false, true,
                    (c.op.attr[3] & 1) != 0};
  l.w_transposed = c.op.params[0].dim[0] >= nb + nc;
  for (int d = nb; d < nb + nc; ++d) l.bias_here = l.bias_here && c.block(d) == 0;
  return l;
}
/// The launchers' geometry of this shard (cuda/kernels_linear.cuh).
inline cuda::kernels::linear_geometry launch_geometry(const linear_geometry& l) {
  return {.m = l.m, .k = l.k, .n = l.n, .w_transposed = l.w_transposed};
}
inline buffer linear_fwd(op_context& c, in_t in, in_t par, op_state&) {
  const auto l = linear_of(c);
  buffer y = c.zeros(std::size_t(l.m * l.n));
  dispatch(y.type(), [&]<class T>(T) {
    cuda::kernels::linear_forward<T>(dev(c).gemm(), launch_geometry(l), in[0]->as<T>(), par[0]->as<T>(),
                                     l.has_bias && l.bias_here ? par[1]->as<T>() : nullptr, y.as<T>());
  });
  return y;
}
// The bias gradient is the launchers' deterministic two-pass column sum (fixed row
// chunks, then the chunks in order): the same bits on every run, equal to the CPU's
// row-order sum to rounding.
inline void linear_bwd(op_context& c, in_t in, in_t par, op_state&, const buffer& dy, std::vector<buffer>& din,
                       std::vector<buffer>& dpar) {
  const auto l = linear_of(c);
  const bool bias = l.has_bias && l.bias_here && l.n > 0;
  buffer ws = c.be.scratch(bias ? std::size_t(cuda::kernels::column_sums_workspace(l.m, l.n)) : 0, dtype::fp32);
  dispatch(dy.type(), [&]<class T>(T) {
    cuda::kernels::linear_backward<T>(dev(c).gemm(), launch_geometry(l), in[0]->as<T>(), par[0]->as<T>(), dy.as<T>(),
                                      din[0].size() ? din[0].as<T>() : nullptr, dpar[0].as<T>(),
                                      bias ? dpar[1].as<T>() : nullptr, bias ? ws.as<float>() : nullptr);
  });
}

// ---- relu, gelu, dropout ----
inline cuda::tensor_box output_box(const op_context& c) {
  const auto& t = c.graph.tensors[std::size_t(c.op.output.tensor)];
  const auto len = c.local_shape(c.op.output);
  cuda::tensor_box b;
  b.rank = t.rank;
  b.micro = c.micro;
  for (int a = 0; a < t.rank; ++a) {
    b.extents[a] = t.extents[a];
    b.len[a] = len[a];
    b.lo[a] = c.op.output.dim[a] >= 0 ? c.lo(c.op.output.dim[a]) : 0;
  }
  return b;
}
inline runtime::dropout_mask mask_of(const op_context& c, double p) {
  return runtime::dropout_mask::make(c.seed, dropout_stream(c.step, std::uint64_t(c.op_index)), p);
}
inline buffer unary_fwd(op_context& c, in_t in, in_t, op_state&) {
  const buffer& x = *in[0];
  buffer y = c.zeros(x.size());
  const auto s = dev(c).stream();
  dispatch(x.type(), [&]<class T>(T) {
    if (c.op.kind == op_kind::dropout)
      cuda::kernels::dropout(s, x.as<T>(), y.as<T>(), output_box(c), mask_of(c, double(c.op.attr[1]) * 1e-6));
    else
      cuda::kernels::unary_forward(s, c.op.kind == op_kind::relu ? cuda::kernels::unary_op::relu
                                                                 : cuda::kernels::unary_op::gelu,
                                   x.as<T>(), y.as<T>(), std::int64_t(x.size()));
  });
  return y;
}
inline void unary_bwd(op_context& c, in_t in, in_t, op_state&, const buffer& dy, std::vector<buffer>& din,
                      std::vector<buffer>&) {
  const auto s = dev(c).stream();
  dispatch(dy.type(), [&]<class T>(T) {
    if (c.op.kind == op_kind::dropout)
      cuda::kernels::dropout(s, dy.as<T>(), din[0].as<T>(), output_box(c), mask_of(c, double(c.op.attr[1]) * 1e-6));
    else
      cuda::kernels::unary_backward(s, c.op.kind == op_kind::relu ? cuda::kernels::unary_op::relu
                                                                  : cuda::kernels::unary_op::gelu,
                                    in[0]->as<T>(), dy.as<T>(), din[0].as<T>(), std::int64_t(dy.size()));
  });
}

// ---- add ----
inline buffer add_fwd(op_context& c, in_t in, in_t, op_state&) {
  buffer y = c.zeros(in[0]->size());
  dispatch(y.type(), [&]<class T>(T) {
    cuda::kernels::add(dev(c).stream(), in[0]->as<T>(), in[1]->as<T>(), y.as<T>(), std::int64_t(y.size()));
  });
  return y;
}
inline void add_bwd(op_context& c, in_t, in_t, op_state&, const buffer& dy, std::vector<buffer>& din,
                    std::vector<buffer>&) {
  for (auto& d : din)
    if (d.size())
      dispatch(dy.type(), [&]<class T>(T) {
        cuda::kernels::copy(dev(c).stream(), dy.as<T>(), d.as<T>(), std::int64_t(dy.size()));
      });
}

// ---- layer norm: dims [batch..., h]; saved: nothing but the input (backward recomputes mean, rstd) ----
inline buffer layer_norm_fwd(op_context& c, in_t in, in_t par, op_state&) {
  const int nd = int(c.op.dims.size());
  const index_t rows = c.len_range(0, nd - 1), h = c.len(nd - 1);
  buffer y = c.zeros(in[0]->size());
  buffer stat = c.be.scratch(std::size_t(2 * rows), dtype::fp32);
  dispatch(y.type(), [&]<class T>(T) {
    cuda::kernels::layer_norm_forward(dev(c).stream(), in[0]->as<T>(), par[0]->as<T>(), par[1]->as<T>(), y.as<T>(),
                                      stat.as<float>(), rows, h);
  });
  return y;
}
inline void layer_norm_bwd(op_context& c, in_t in, in_t par, op_state&, const buffer& dy, std::vector<buffer>& din,
                           std::vector<buffer>& dpar) {
  const int nd = int(c.op.dims.size());
  const index_t rows = c.len_range(0, nd - 1), h = c.len(nd - 1);
  buffer stat = c.be.scratch(std::size_t(2 * rows), dtype::fp32);
  buffer ws = c.be.scratch(std::size_t(cuda::kernels::layer_norm_backward_workspace(rows, h)), dtype::fp32);
  dispatch(dy.type(), [&]<class T>(T) {
    cuda::kernels::layer_norm_stats(dev(c).stream(), in[0]->as<T>(), stat.as<float>(), rows, h);
    cuda::kernels::layer_norm_backward(dev(c).stream(), in[0]->as<T>(), par[0]->as<T>(), stat.as<float>(),
                                       dy.as<T>(), din[0].size() ? din[0].as<T>() : nullptr, dpar[0].as<T>(),
                                       dpar[1].as<T>(), rows, h, ws.as<float>());
  });
}

// ---- embedding: dims [batch..., v, h]; ids (fp32 values) [batch...], table [v, h], pos [s, h] ----
inline buffer embedding_fwd(op_context& c, in_t in, in_t par, op_state&) {
  const int nb = int(c.op.dims.size()) - 2;
  const index_t rows = c.len_range(0, nb), vlo = c.lo(nb), vl = c.len(nb), h = c.len(nb + 1), sl = c.len(nb - 1);
  buffer y = c.zeros(std::size_t(rows * h));
  const bool pos = c.op.attr[0] && vlo == 0;
  dispatch(y.type(), [&]<class T>(T) {
    cuda::kernels::embedding_forward(dev(c).stream(), in[0]->as<float>(), par[0]->as<T>(),
                                     pos ? par[1]->as<T>() : nullptr, y.as<T>(), rows, vlo, vl, h, sl);
  });
  return y;
}
inline void embedding_bwd(op_context& c, in_t in, in_t, op_state&, const buffer& dy, std::vector<buffer>&,
                          std::vector<buffer>& dpar) {
  const int nb = int(c.op.dims.size()) - 2;
  const index_t rows = c.len_range(0, nb), vlo = c.lo(nb), vl = c.len(nb), h = c.len(nb + 1), sl = c.len(nb - 1);
  const bool pos = c.op.attr[0] && vlo == 0;
  const std::size_t bytes = cuda::kernels::embedding_backward_workspace(rows, vl);
  buffer ws = c.be.scratch((bytes + 3) / 4, dtype::fp32);
  dispatch(dy.type(), [&]<class T>(T) {
    cuda::kernels::embedding_backward(dev(c).stream(), in[0]->as<float>(), dy.as<T>(), dpar[0].as<T>(),
                                      pos ? dpar[1].as<T>() : nullptr, rows, vlo, vl, h, sl, ws.raw(), ws.bytes());
  });
}

// ---- attention: dims [b, heads, sq, sk, d]; qkv [b, s, 3, heads, d] -> y [b, s, heads, d] ----
inline cuda::kernels::attention_geometry attention_of(const op_context& c) {
  cuda::kernels::attention_geometry g;
  g.b = c.len(0);
  g.h = c.len(1);
  g.s = c.len(2);
  g.d = c.len(4);
  g.blo = c.lo(0);
  g.hlo = c.lo(1);
  g.heads = c.extent(1);
  g.batch = c.extent(0);
  g.micro = c.micro;
  g.causal = c.op.attr[0] != 0;
  g.mask = mask_of(c, double(c.op.attr[1]) * 1e-6);
  return g;
}
inline buffer attention_fwd(op_context& c, in_t in, in_t, op_state& st) {
  const auto g = attention_of(c);
  buffer y = c.zeros(std::size_t(g.b * g.s * g.h * g.d));
  buffer prob = c.zeros(std::size_t(g.b * g.h * g.s * g.s));
  buffer ws = c.be.scratch(std::size_t(g.workspace()), y.type());
  dispatch(y.type(), [&]<class T>(T) {
    cuda::kernels::attention_forward(dev(c).gemm(), g, in[0]->as<T>(), y.as<T>(), prob.as<T>(), ws.as<T>());
  });
  st.saved.push_back(std::move(prob));
  return y;
}
inline void attention_bwd(op_context& c, in_t in, in_t, op_state& st, const buffer& dy, std::vector<buffer>& din,
                          std::vector<buffer>&) {
  const auto g = attention_of(c);
  buffer ws = c.be.scratch(std::size_t(g.workspace()), dy.type());
  dispatch(dy.type(), [&]<class T>(T) {
    cuda::kernels::attention_backward(dev(c).gemm(), g, in[0]->as<T>(), st.saved[0].as<T>(), dy.as<T>(),
                                      din[0].as<T>(), ws.as<T>());
  });
}

// ---- softmax cross-entropy: dims [batch..., classes]; saved: probabilities (fp32) ----
struct xent_geometry {
  int nb;
  index_t rows, cl, clo;
  double count;
};
inline xent_geometry xent_of(const op_context& c) {
  xent_geometry x{int(c.op.dims.size()) - 1, 0, 0, 0, 1};
  x.rows = c.len_range(0, x.nb);
  x.cl = c.len(x.nb);
  x.clo = c.lo(x.nb);
  for (int d = 0; d < x.nb; ++d) x.count *= double(c.extent(d));
  return x;
}
inline buffer softmax_xent_fwd(op_context& c, in_t in, in_t, op_state& st) {
  const auto x = xent_of(c);
  const group g = c.over(1u << x.nb);
  const auto s = dev(c).stream();
  buffer mx = c.be.scratch(std::size_t(x.rows), dtype::fp32), sum = c.be.scratch(std::size_t(x.rows), dtype::fp32);
  buffer p = c.be.allocate(in[0]->size(), dtype::fp32);
  buffer term = c.be.scratch(std::size_t(2 * std::max<index_t>(x.rows, 1)), dtype::fp32);  // rows doubles
  buffer out = c.be.allocate(1, dtype::fp32);
  dispatch(in[0]->type(), [&]<class T>(T) {
    const T* z = in[0]->as<T>();
    cuda::kernels::xent_row_max(s, z, mx.as<float>(), x.rows, x.cl);
    if (g.size() > 1) {  // the class dim is split: the max over all blocks
      buffer all = c.be.scratch(std::size_t(x.rows) * g.size(), dtype::fp32);
      c.dp->all_gather(g, mx, all);
      cuda::kernels::xent_max_of_gathered(s, all.as<float>(), mx.as<float>(), x.rows, std::int64_t(g.size()));
    }
    cuda::kernels::xent_exp_sums(s, z, mx.as<float>(), p.as<float>(), sum.as<float>(), x.rows, x.cl);
    if (g.size() > 1) c.dp->all_reduce(g, sum);
    cuda::kernels::xent_finish(s, z, in[1]->as<float>(), mx.as<float>(), sum.as<float>(), p.as<float>(),
                               reinterpret_cast<double*>(term.raw()), out.as<float>(), x.rows, x.cl, x.clo, x.count);
  });
  st.saved.push_back(std::move(p));
  return out;
}
inline void softmax_xent_bwd(op_context& c, in_t in, in_t, op_state& st, const buffer& dy, std::vector<buffer>& din,
                             std::vector<buffer>&) {
  const auto x = xent_of(c);
  if (dy.type() != dtype::fp32) throw invalid_argument("softmax_xent: the loss gradient must be fp32");
  dispatch(din[0].type(), [&]<class T>(T) {
    cuda::kernels::xent_backward(dev(c).stream(), st.saved[0].as<float>(), in[1]->as<float>(), dy.as<float>(),
                                 x.count, din[0].as<T>(), x.rows, x.cl, x.clo);
  });
}

// ---- concat (geometry: op_context.hpp's concat_geometry, as on the CPU) ----
inline buffer concat_fwd(op_context& c, in_t in, in_t, op_state&) {
  index_t outer, inner;
  std::vector<std::int64_t> w;
  concat_geometry(c, outer, inner, w);
  index_t total = 0;
  for (auto x : w) total += x;
  buffer y = c.zeros(std::size_t(outer * total * inner));
  dispatch(y.type(), [&]<class T>(T) {
    std::vector<const T*> xs;
    for (auto* b : in) xs.push_back(b->as<T>());
    cuda::kernels::concat_forward<T>(dev(c).stream(), xs, w, y.as<T>(), outer, inner);
  });
  return y;
}
inline void concat_bwd(op_context& c, in_t, in_t, op_state&, const buffer& dy, std::vector<buffer>& din,
                       std::vector<buffer>&) {
  index_t outer, inner;
  std::vector<std::int64_t> w;
  concat_geometry(c, outer, inner, w);
  dispatch(dy.type(), [&]<class T>(T) {
    std::vector<T*> dx;
    for (auto& d : din) dx.push_back(d.size() ? d.as<T>() : nullptr);
    cuda::kernels::concat_backward<T>(dev(c).stream(), dy.as<T>(), w, dx, outer, inner);
  });
}


/// The kernels of op kind `k` on the CUDA backend.
inline kernel kernel_of(op_kind k) {
  switch (k) {
    case op_kind::input: return {};
    case op_kind::linear: return {linear_fwd, linear_bwd};
    case op_kind::gelu:
    case op_kind::relu:
    case op_kind::dropout: return {unary_fwd, unary_bwd};
    case op_kind::add: return {add_fwd, add_bwd};
    case op_kind::concat: return {concat_fwd, concat_bwd};
    case op_kind::conv2d: return {conv2d_fwd, conv2d_bwd};
    case op_kind::max_pool:
    case op_kind::avg_pool: return {pool_fwd, pool_bwd};
    case op_kind::global_avg_pool: return {gap_fwd, gap_bwd};
    case op_kind::batch_norm: return {batch_norm_fwd, batch_norm_bwd};
    case op_kind::layer_norm: return {layer_norm_fwd, layer_norm_bwd};
    case op_kind::embedding: return {embedding_fwd, embedding_bwd};
    case op_kind::attention: return {attention_fwd, attention_bwd};
    case op_kind::softmax_xent: return {softmax_xent_fwd, softmax_xent_bwd};
    default: break;
  }
  throw invalid_argument("the cuda backend has no kernel glue for op kind #" + std::to_string(int(k)) +
                         " yet; train this model with --backend cpu");
}

}  // namespace tensoropt::runtime::cuda_glue
