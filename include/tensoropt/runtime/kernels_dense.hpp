// Forward and backward CPU kernels on local shards: linear (CBLAS), elementwise ops,
// add, concat, layer norm, embedding and softmax cross-entropy.
//
// Every kernel reads its inputs and params in the layouts its config requires and
// writes its output as the config's (possibly partial) shard; backward writes input
// and param gradients as partial shards over the dims those tensors do not follow.
// Gradient buffers arrive zeroed and sized to the local shards.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>
#include "cpu_gemm.hpp"
#include "op_context.hpp"

namespace tensoropt::runtime::kernels {

using inputs = kernel_inputs;

// ---- linear: dims [batch..., contract..., out...] ----
struct linear_dims {
  int nb, nc, no;
  index_t m, k, n;
  bool w_transposed;  // W stored [out..., contract...] (a tied embedding table)
  bool bias_here;     // this device adds the bias (all contract blocks 0)
};
inline linear_dims linear_of(const op_context& c) {
  linear_dims l{int(c.op.attr[0]), int(c.op.attr[1]), int(c.op.attr[2]), 0, 0, 0, false, true};
  l.m = c.len_range(0, l.nb);
  l.k = c.len_range(l.nb, l.nb + l.nc);
  l.n = c.len_range(l.nb + l.nc, l.nb + l.nc + l.no);
  l.w_transposed = c.op.params[0].dim[0] >= l.nb + l.nc;
  for (int d = l.nb; d < l.nb + l.nc; ++d) l.bias_here = l.bias_here && c.block(d) == 0;
  return l;
}
inline buffer linear_fwd(op_context& c, inputs in, inputs par, op_state&) {
  const auto l = linear_of(c);
  buffer y = c.zeros(std::size_t(l.m * l.n));
  gemm(false, l.w_transposed, l.m, l.n, l.k, 1.f, in[0]->data(), par[0]->data(), 0.f, y.data());
  if ((c.op.attr[3] & 1) && l.bias_here)
    for (index_t i = 0; i < l.m; ++i)
      for (index_t j = 0; j < l.n; ++j) y[std::size_t(i * l.n + j)] += (*par[1])[std::size_t(j)];
  return y;
}
inline void linear_bwd(op_context& c, inputs in, inputs par, op_state&, const buffer& dy, std::vector<buffer>& din,
                       std::vector<buffer>& dpar) {
  const auto l = linear_of(c);
  if (din[0].size()) gemm(false, !l.w_transposed, l.m, l.k, l.n, 1.f, dy.data(), par[0]->data(), 0.f, din[0].data());
  if (l.w_transposed) gemm(true, false, l.n, l.k, l.m, 1.f, dy.data(), in[0]->data(), 0.f, dpar[0].data());
  else gemm(true, false, l.k, l.n, l.m, 1.f, in[0]->data(), dy.data(), 0.f, dpar[0].data());
  if ((c.op.attr[3] & 1) && l.bias_here)
    for (index_t i = 0; i < l.m; ++i)
      for (index_t j = 0; j < l.n; ++j) dpar[1][std::size_t(j)] += dy[std::size_t(i * l.n + j)];
}

// ---- elementwise ----
// fast_tanh, gelu, gelu_grad, relu: elementwise.hpp (shared with the CUDA kernels).
inline buffer unary_fwd(op_context& c, inputs in, inputs, op_state&) {
  const buffer& x = *in[0];
  buffer y = c.zeros(x.size());
  if (c.op.kind == op_kind::relu)
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = relu(x[i]);
  else if (c.op.kind == op_kind::gelu)
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = gelu(x[i]);
  else {  // dropout
    const auto& t = c.graph.tensors[std::size_t(c.op.output.tensor)];
    extents_t lo{}, len = c.local_shape(c.op.output);
    for (int a = 0; a < t.rank; ++a)
      if (c.op.output.dim[a] >= 0) lo[a] = c.lo(c.op.output.dim[a]);
    const double p = double(c.op.attr[1]) * 1e-6;
    for_each_global(t.extents, lo, len, t.rank, c.micro,
                    [&](index_t i, std::uint64_t gi) { y[std::size_t(i)] = x[std::size_t(i)] * dropout_scale(c, gi, p); });
  }
  return y;
}
inline void unary_bwd(op_context& c, inputs in, inputs, op_state&, const buffer& dy, std::vector<buffer>& din,
                      std::vector<buffer>&) {
  buffer& dx = din[0];
  if (c.op.kind == op_kind::relu) {
    const buffer& x = *in[0];
    for (std::size_t i = 0; i < x.size(); ++i) dx[i] = relu_grad(x[i], dy[i]);
  } else if (c.op.kind == op_kind::gelu) {
    const buffer& x = *in[0];
    for (std::size_t i = 0; i < x.size(); ++i) dx[i] = dy[i] * gelu_grad(x[i]);
  } else {  // dropout: the mask is recomputed from the counter-based hash
    const auto& t = c.graph.tensors[std::size_t(c.op.output.tensor)];
    extents_t lo{}, len = c.local_shape(c.op.output);
    for (int a = 0; a < t.rank; ++a)
      if (c.op.output.dim[a] >= 0) lo[a] = c.lo(c.op.output.dim[a]);
    const double p = double(c.op.attr[1]) * 1e-6;
    for_each_global(t.extents, lo, len, t.rank, c.micro,
                    [&](index_t i, std::uint64_t gi) { dx[std::size_t(i)] = dy[std::size_t(i)] * dropout_scale(c, gi, p); });
  }
}

inline buffer add_fwd(op_context& c, inputs in, inputs, op_state&) {
  buffer y = c.be.copy(*in[0]);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += (*in[1])[i];
  return y;
}
inline void add_bwd(op_context&, inputs, inputs, op_state&, const buffer& dy, std::vector<buffer>& din,
                    std::vector<buffer>&) {
  for (auto& d : din)
    if (d.size()) std::copy(dy.span().begin(), dy.span().end(), d.data());
}

// ---- concat (geometry: op_context.hpp's concat_geometry) ----
inline buffer concat_fwd(op_context& c, inputs in, inputs, op_state&) {
  index_t outer, inner;
  std::vector<index_t> w;
  concat_geometry(c, outer, inner, w);
  index_t total = 0;
  for (auto x : w) total += x;
  buffer y = c.zeros(std::size_t(outer * total * inner));
  for (index_t o = 0; o < outer; ++o) {
    index_t off = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      std::copy_n(in[i]->data() + o * w[i] * inner, w[i] * inner, y.data() + (o * total + off) * inner);
      off += w[i];
    }
  }
  return y;
}
inline void concat_bwd(op_context& c, inputs, inputs, op_state&, const buffer& dy, std::vector<buffer>& din,
                       std::vector<buffer>&) {
  index_t outer, inner;
  std::vector<index_t> w;
  concat_geometry(c, outer, inner, w);
  index_t total = 0;
  for (auto x : w) total += x;
  for (index_t o = 0; o < outer; ++o) {
    index_t off = 0;
    for (std::size_t i = 0; i < din.size(); ++i) {
      if (din[i].size()) std::copy_n(dy.data() + (o * total + off) * inner, w[i] * inner, din[i].data() + o * w[i] * inner);
      off += w[i];
    }
  }
}

// ---- layer norm: dims [batch..., h], h unsplit; saved: nothing but the input ----
// Backward recomputes each row's mean and rstd from the saved input (one read of
// x, the same arithmetic as forward, so the same bits): the op keeps its input
// only, as the cost model and Korthikanti et al.'s closed forms assume.
inline constexpr float norm_eps = 1e-5f;
inline void layer_norm_row_stats(const float* xr, index_t h, float& mean_out, float& rstd) {
  double mean = 0, var = 0;
  for (index_t i = 0; i < h; ++i) mean += xr[i];
  mean /= double(h);
  for (index_t i = 0; i < h; ++i) var += (xr[i] - mean) * (xr[i] - mean);
  rstd = float(1.0 / std::sqrt(var / double(h) + norm_eps));
  mean_out = float(mean);
}
inline buffer layer_norm_fwd(op_context& c, inputs in, inputs par, op_state&) {
  const int nd = int(c.op.dims.size());
  const index_t rows = c.len_range(0, nd - 1), h = c.len(nd - 1);
  const buffer& x = *in[0];
  buffer y = c.zeros(x.size());
  for (index_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * h;
    float mean, rstd;
    layer_norm_row_stats(xr, h, mean, rstd);
    for (index_t i = 0; i < h; ++i)
      y[std::size_t(r * h + i)] = (xr[i] - mean) * rstd * (*par[0])[std::size_t(i)] + (*par[1])[std::size_t(i)];
  }
  return y;
}
inline void layer_norm_bwd(op_context& c, inputs in, inputs par, op_state&, const buffer& dy,
                           std::vector<buffer>& din, std::vector<buffer>& dpar) {
  const int nd = int(c.op.dims.size());
  const index_t rows = c.len_range(0, nd - 1), h = c.len(nd - 1);
  const buffer& x = *in[0];
  for (index_t r = 0; r < rows; ++r) {
    float mean, rstd;
    layer_norm_row_stats(x.data() + r * h, h, mean, rstd);
    double s1 = 0, s2 = 0;
    for (index_t i = 0; i < h; ++i) {
      const std::size_t e = std::size_t(r * h + i);
      const float xh = (x[e] - mean) * rstd, g = dy[e] * (*par[0])[std::size_t(i)];
      dpar[0][std::size_t(i)] += dy[e] * xh;
      dpar[1][std::size_t(i)] += dy[e];
      s1 += g;
      s2 += g * xh;
    }
    if (!din[0].size()) continue;
    for (index_t i = 0; i < h; ++i) {
      const std::size_t e = std::size_t(r * h + i);
      const float xh = (x[e] - mean) * rstd, g = dy[e] * (*par[0])[std::size_t(i)];
      din[0][e] = rstd * (g - float(s1 / double(h)) - xh * float(s2 / double(h)));
    }
  }
}

// ---- embedding: dims [batch..., v, h]; ids[batch...], table[v, h] (+ pos[s, h], s = last batch dim) ----
inline buffer embedding_fwd(op_context& c, inputs in, inputs par, op_state&) {
  const int nb = int(c.op.dims.size()) - 2;
  const index_t rows = c.len_range(0, nb), vlo = c.lo(nb), vl = c.len(nb), h = c.len(nb + 1);
  buffer y = c.zeros(std::size_t(rows * h));
  for (index_t r = 0; r < rows; ++r) {
    const index_t id = index_t((*in[0])[std::size_t(r)]) - vlo;
    if (id >= 0 && id < vl) std::copy_n(par[0]->data() + id * h, h, y.data() + r * h);
  }
  if (c.op.attr[0] && vlo == 0) {  // learned positions [s, h], added once (v block 0)
    const index_t sl = c.len(nb - 1);
    for (index_t r = 0; r < rows; ++r)
      for (index_t i = 0; i < h; ++i) y[std::size_t(r * h + i)] += (*par[1])[std::size_t((r % sl) * h + i)];
  }
  return y;
}
inline void embedding_bwd(op_context& c, inputs in, inputs, op_state&, const buffer& dy, std::vector<buffer>&,
                          std::vector<buffer>& dpar) {
  const int nb = int(c.op.dims.size()) - 2;
  const index_t rows = c.len_range(0, nb), vlo = c.lo(nb), vl = c.len(nb), h = c.len(nb + 1);
  for (index_t r = 0; r < rows; ++r) {
    const index_t id = index_t((*in[0])[std::size_t(r)]) - vlo;
    if (id >= 0 && id < vl)
      for (index_t i = 0; i < h; ++i) dpar[0][std::size_t(id * h + i)] += dy[std::size_t(r * h + i)];
  }
  if (c.op.attr[0] && vlo == 0) {
    const index_t sl = c.len(nb - 1);
    for (index_t r = 0; r < rows; ++r)
      for (index_t i = 0; i < h; ++i) dpar[1][std::size_t((r % sl) * h + i)] += dy[std::size_t(r * h + i)];
  }
}

// ---- softmax cross-entropy: dims [batch..., classes]; saved: probabilities ----
inline buffer softmax_xent_fwd(op_context& c, inputs in, inputs, op_state& st) {
  const int nb = int(c.op.dims.size()) - 1;
  const index_t rows = c.len_range(0, nb), cl = c.len(nb), clo = c.lo(nb);
  double count = 1;
  for (int d = 0; d < nb; ++d) count *= double(c.extent(d));
  const buffer& z = *in[0];
  const group g = c.over(1u << nb);
  std::vector<float> mx(std::size_t(rows), -std::numeric_limits<float>::infinity()), sum(std::size_t(rows), 0.f);
  for (index_t r = 0; r < rows; ++r)
    for (index_t j = 0; j < cl; ++j) mx[std::size_t(r)] = std::max(mx[std::size_t(r)], z[std::size_t(r * cl + j)]);
  if (g.size() > 1) {  // the class dim is split: the max over all blocks
    std::vector<float> all(mx.size() * g.size());
    c.comm.all_gather(g, mx, all);
    for (std::size_t r = 0; r < mx.size(); ++r)
      for (std::size_t i = 0; i < g.size(); ++i) mx[r] = std::max(mx[r], all[i * mx.size() + r]);
  }
  buffer p = c.zeros(z.size());
  for (index_t r = 0; r < rows; ++r)
    for (index_t j = 0; j < cl; ++j) {
      const std::size_t e = std::size_t(r * cl + j);
      p[e] = std::exp(z[e] - mx[std::size_t(r)]);
      sum[std::size_t(r)] += p[e];
    }
  c.comm.all_reduce(g, sum);
  double loss = 0;
  for (index_t r = 0; r < rows; ++r) {
    for (index_t j = 0; j < cl; ++j) p[std::size_t(r * cl + j)] /= sum[std::size_t(r)];
    if (clo == 0) loss += std::log(double(sum[std::size_t(r)])) + mx[std::size_t(r)];
    const index_t label = index_t((*in[1])[std::size_t(r)]) - clo;
    if (label >= 0 && label < cl) loss -= z[std::size_t(r * cl + label)];
  }
  st.saved.push_back(std::move(p));
  buffer out = c.zeros(1);
  out[0] = float(loss / count);
  return out;
}
inline void softmax_xent_bwd(op_context& c, inputs in, inputs, op_state& st, const buffer& dy,
                             std::vector<buffer>& din, std::vector<buffer>&) {
  const int nb = int(c.op.dims.size()) - 1;
  const index_t rows = c.len_range(0, nb), cl = c.len(nb), clo = c.lo(nb);
  double count = 1;
  for (int d = 0; d < nb; ++d) count *= double(c.extent(d));
  const float s = float(double(dy[0]) / count);
  const buffer& p = st.saved[0];
  for (index_t r = 0; r < rows; ++r) {
    const index_t label = index_t((*in[1])[std::size_t(r)]) - clo;
    for (index_t j = 0; j < cl; ++j) {
      const std::size_t e = std::size_t(r * cl + j);
      din[0][e] = s * (p[e] - (j == label ? 1.f : 0.f));
    }
  }
}

}  // namespace tensoropt::runtime::kernels
