// Forward and backward CPU kernels of the attention core (QK^T, causal mask,
// softmax, dropout on the weights, times V), GEMMs through CBLAS on strided views.
#pragma once
#include <cmath>
#include <limits>
#include <vector>
#include "kernels_dense.hpp"

namespace tensoropt::runtime::kernels {

// dims [b, heads, sq, sk, d]; qkv[b, s, 3, heads, d] -> y[b, s, heads, d];
// saved: the softmax probabilities P[b, heads, sq, sk] (before dropout).
struct attention_dims {
  index_t b, h, s, d, blo, hlo, heads, batch;
  double p;
  bool causal;
};
inline attention_dims attention_of(const op_context& c) {
  return {c.len(0), c.len(1), c.len(2), c.len(4), c.lo(0), c.lo(1), c.extent(1), c.extent(0),
          double(c.op.attr[1]) * 1e-6, c.op.attr[0] != 0};
}
/// Dropout scale of attention weight (bi, hi, i, j) (local indices).
inline float attention_keep(const op_context& c, const attention_dims& a, index_t bi, index_t hi, index_t i, index_t j) {
  const index_t gi = (((c.micro * a.batch + a.blo + bi) * a.heads + a.hlo + hi) * a.s + i) * a.s + j;
  return dropout_scale(c, std::uint64_t(gi), a.p);
}
inline buffer attention_fwd(op_context& c, inputs in, inputs, op_state& st) {
  const auto a = attention_of(c);
  const float scale = float(1.0 / std::sqrt(double(a.d)));
  const index_t ld_qkv = 3 * a.h * a.d, ld_y = a.h * a.d;
  buffer y = c.zeros(std::size_t(a.b * a.s * a.h * a.d));
  buffer prob = c.zeros(std::size_t(a.b * a.h * a.s * a.s));
  std::vector<float> pd(static_cast<std::size_t>(a.s * a.s));
  for (index_t bi = 0; bi < a.b; ++bi)
    for (index_t hi = 0; hi < a.h; ++hi) {
      const float* q = in[0]->data() + bi * a.s * ld_qkv + hi * a.d;
      const float* k = q + a.h * a.d;
      const float* v = k + a.h * a.d;
      float* p = prob.data() + (bi * a.h + hi) * a.s * a.s;
      gemm(false, true, a.s, a.s, a.d, scale, q, k, 0.f, p, ld_qkv, ld_qkv, a.s);
      for (index_t i = 0; i < a.s; ++i) {
        float* row = p + i * a.s;
        const index_t valid = a.causal ? i + 1 : a.s;
        float mx = -std::numeric_limits<float>::infinity();
        for (index_t j = 0; j < valid; ++j) mx = std::max(mx, row[j]);
        float sum = 0;
        for (index_t j = 0; j < valid; ++j) sum += row[j] = std::exp(row[j] - mx);
        for (index_t j = 0; j < a.s; ++j) {
          row[j] = j < valid ? row[j] / sum : 0.f;
          pd[std::size_t(i * a.s + j)] = row[j] * attention_keep(c, a, bi, hi, i, j);
        }
      }
      gemm(false, false, a.s, a.d, a.s, 1.f, pd.data(), v, 0.f, y.data() + bi * a.s * ld_y + hi * a.d, a.s, ld_qkv,
           ld_y);
    }
  st.saved.push_back(std::move(prob));
  return y;
}
inline void attention_bwd(op_context& c, inputs in, inputs, op_state& st, const buffer& dy, std::vector<buffer>& din,
                          std::vector<buffer>&) {
  const auto a = attention_of(c);
  const float scale = float(1.0 / std::sqrt(double(a.d)));
  const index_t ld_qkv = 3 * a.h * a.d, ld_y = a.h * a.d;
  std::vector<float> pd(static_cast<std::size_t>(a.s * a.s)), dp(std::size_t(a.s * a.s));
  for (index_t bi = 0; bi < a.b; ++bi)
    for (index_t hi = 0; hi < a.h; ++hi) {
      const float* q = in[0]->data() + bi * a.s * ld_qkv + hi * a.d;
      const float* k = q + a.h * a.d;
      const float* v = k + a.h * a.d;
      float* dq = din[0].data() + bi * a.s * ld_qkv + hi * a.d;
      float* dk = dq + a.h * a.d;
      float* dv = dk + a.h * a.d;
      const float* g = dy.data() + bi * a.s * ld_y + hi * a.d;
      const float* p = st.saved[0].data() + (bi * a.h + hi) * a.s * a.s;
      for (index_t i = 0; i < a.s; ++i)
        for (index_t j = 0; j < a.s; ++j)
          pd[std::size_t(i * a.s + j)] = p[i * a.s + j] * attention_keep(c, a, bi, hi, i, j);
      gemm(false, true, a.s, a.s, a.d, 1.f, g, v, 0.f, dp.data(), ld_y, ld_qkv, a.s);  // dPd = dY V^T
      gemm(true, false, a.s, a.d, a.s, 1.f, pd.data(), g, 0.f, dv, a.s, ld_y, ld_qkv);  // dV = Pd^T dY
      for (index_t i = 0; i < a.s; ++i) {
        double dot = 0;
        for (index_t j = 0; j < a.s; ++j) {
          float& x = dp[std::size_t(i * a.s + j)];
          x *= attention_keep(c, a, bi, hi, i, j);
          dot += double(x) * p[i * a.s + j];
        }
        for (index_t j = 0; j < a.s; ++j) {
          float& x = dp[std::size_t(i * a.s + j)];
          x = p[i * a.s + j] * (x - float(dot));
        }
      }
      gemm(false, false, a.s, a.d, a.s, scale, dp.data(), k, 0.f, dq, a.s, ld_qkv, ld_qkv);  // dQ = dS K
      gemm(true, false, a.s, a.d, a.s, scale, dp.data(), q, 0.f, dk, a.s, ld_qkv, ld_qkv);   // dK = dS^T Q
    }
}

}  // namespace tensoropt::runtime::kernels
