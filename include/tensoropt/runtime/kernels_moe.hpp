// Forward and backward CPU kernels of the mixture-of-experts ops (GShard): top-k
// gating, dispatch of tokens to expert capacity slots, the per-expert FFN (CBLAS)
// and the gate-weighted combine. Routing is a token's rank among the tokens of its
// group routed to the same expert, so the kernels gather the gates over split
// token blocks; a split expert or hidden dim is reduced inside the op.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>
#include "kernels_dense.hpp"

namespace tensoropt::runtime::kernels {

namespace detail {
/// Reassembles an all-gather of per-member [rows x w] blocks into [rows x (members * w)].
inline std::vector<float> gather_columns(op_context& c, const group& g, std::span<const float> local, index_t rows,
                                         index_t w) {
  if (g.size() == 1) return {local.begin(), local.end()};
  std::vector<float> all(local.size() * g.size()), full(all.size());
  c.comm.all_gather(g, local, all);
  const index_t n = index_t(g.size());
  for (index_t i = 0; i < n; ++i)
    for (index_t r = 0; r < rows; ++r)
      std::copy_n(all.data() + (i * rows + r) * w, w, full.data() + (r * n + i) * w);
  return full;
}

/// Slot of every local (group, token, expert) in its expert's queue, or -1 when the
/// token is not routed there; from the gates of the whole token dim. dims [g, s, e, ...].
inline std::vector<std::int64_t> routes(op_context& c, const buffer& gates) {
  const index_t gl = c.len(0), sl = c.len(1), el = c.len(2), slo = c.lo(1), S = c.extent(1);
  const group g = c.over(1u << 1);
  std::vector<float> full(static_cast<std::size_t>(gl * S * el));
  if (g.size() == 1) std::copy(gates.span().begin(), gates.span().end(), full.begin());
  else {
    std::vector<float> all(gates.size() * g.size());
    c.comm.all_gather(g, gates.span(), all);
    for (std::size_t i = 0; i < g.size(); ++i)
      for (index_t gi = 0; gi < gl; ++gi)
        std::copy_n(all.data() + (index_t(i) * gl + gi) * sl * el, sl * el, full.data() + (gi * S + index_t(i) * sl) * el);
  }
  std::vector<std::int64_t> slot(std::size_t(gl * sl * el), -1);
  for (index_t gi = 0; gi < gl; ++gi)
    for (index_t e = 0; e < el; ++e) {
      std::int64_t count = 0;
      for (index_t s = 0; s < S; ++s) {
        if (full[std::size_t((gi * S + s) * el + e)] == 0.f) continue;
        if (s >= slo && s < slo + sl) slot[std::size_t((gi * sl + s - slo) * el + e)] = count;
        ++count;
      }
    }
  return slot;
}
}  // namespace detail

// ---- moe_gate: dims [g, s, e, h]; x[g, s, h], Wg[h, e] -> gates[g, s, e] ----
// saved: full probabilities and top-k mask [tokens x E].
inline buffer moe_gate_fwd(op_context& c, inputs in, inputs par, op_state& st) {
  const index_t t = c.len(0) * c.len(1), el = c.len(2), hl = c.len(3), E = c.extent(2), elo = c.lo(2);
  const index_t k = std::max<std::int64_t>(1, c.op.attr[0]);
  std::vector<float> logits(static_cast<std::size_t>(t * el));
  gemm(false, false, t, el, hl, 1.f, in[0]->data(), par[0]->data(), 0.f, logits.data());
  c.comm.all_reduce(c.over(1u << 3), logits);
  auto full = detail::gather_columns(c, c.over(1u << 2), logits, t, el);
  buffer prob = c.zeros(std::size_t(t * E)), mask = c.zeros(std::size_t(t * E));
  buffer y = c.zeros(std::size_t(t * el));
  std::vector<int> order(static_cast<std::size_t>(E));
  const bool write = c.block(3) == 0;  // gates are partial over split h: one term holds them
  for (index_t r = 0; r < t; ++r) {
    const float* z = full.data() + r * E;
    float mx = *std::max_element(z, z + E), sum = 0;
    for (index_t j = 0; j < E; ++j) sum += prob[std::size_t(r * E + j)] = std::exp(z[j] - mx);
    for (index_t j = 0; j < E; ++j) prob[std::size_t(r * E + j)] /= sum;
    for (index_t j = 0; j < E; ++j) order[std::size_t(j)] = int(j);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return z[a] > z[b]; });
    for (index_t j = 0; j < std::min(k, E); ++j) mask[std::size_t(r * E + order[std::size_t(j)])] = 1.f;
    for (index_t j = 0; j < el && write; ++j)
      y[std::size_t(r * el + j)] = prob[std::size_t(r * E + elo + j)] * mask[std::size_t(r * E + elo + j)];
  }
  st.saved.push_back(std::move(prob));
  st.saved.push_back(std::move(mask));
  return y;
}
inline void moe_gate_bwd(op_context& c, inputs in, inputs par, op_state& st, const buffer& dy,
                         std::vector<buffer>& din, std::vector<buffer>& dpar) {
  const index_t t = c.len(0) * c.len(1), el = c.len(2), hl = c.len(3), E = c.extent(2), elo = c.lo(2);
  auto dg = detail::gather_columns(c, c.over(1u << 2), dy.span(), t, el);
  const buffer &p = st.saved[0], &m = st.saved[1];
  std::vector<float> dz(static_cast<std::size_t>(t * el));
  for (index_t r = 0; r < t; ++r) {
    double dot = 0;
    for (index_t j = 0; j < E; ++j) {
      const std::size_t e = std::size_t(r * E + j);
      dot += double(p[e]) * m[e] * dg[e];
    }
    for (index_t j = 0; j < el; ++j) {
      const std::size_t e = std::size_t(r * E + elo + j);
      dz[std::size_t(r * el + j)] = p[e] * (m[e] * dg[e] - float(dot));
    }
  }
  if (din[0].size()) gemm(false, true, t, hl, el, 1.f, dz.data(), par[0]->data(), 0.f, din[0].data());
  gemm(true, false, hl, el, t, 1.f, in[0]->data(), dz.data(), 0.f, dpar[0].data());
}

// ---- moe_dispatch: dims [g, s, e, c, h]; x[g, s, h], gates[g, s, e] -> y[e, g, c, h] ----
inline buffer moe_dispatch_fwd(op_context& c, inputs in, inputs, op_state& st) {
  const index_t gl = c.len(0), sl = c.len(1), el = c.len(2), cl = c.len(3), hl = c.len(4), clo = c.lo(3);
  st.ints = detail::routes(c, *in[1]);
  buffer y = c.zeros(std::size_t(el * gl * cl * hl));
  for (index_t gi = 0; gi < gl; ++gi)
    for (index_t s = 0; s < sl; ++s)
      for (index_t e = 0; e < el; ++e) {
        const index_t pos = st.ints[std::size_t((gi * sl + s) * el + e)] - clo;
        if (pos < 0 || pos >= cl) continue;
        std::copy_n(in[0]->data() + (gi * sl + s) * hl, hl, y.data() + ((e * gl + gi) * cl + pos) * hl);
      }
  return y;
}
inline void moe_dispatch_bwd(op_context& c, inputs, inputs, op_state& st, const buffer& dy, std::vector<buffer>& din,
                             std::vector<buffer>&) {
  const index_t gl = c.len(0), sl = c.len(1), el = c.len(2), cl = c.len(3), hl = c.len(4), clo = c.lo(3);
  if (!din[0].size()) return;
  for (index_t gi = 0; gi < gl; ++gi)
    for (index_t s = 0; s < sl; ++s)
      for (index_t e = 0; e < el; ++e) {
        const index_t pos = st.ints[std::size_t((gi * sl + s) * el + e)] - clo;
        if (pos < 0 || pos >= cl) continue;
        for (index_t i = 0; i < hl; ++i)
          din[0][std::size_t((gi * sl + s) * hl + i)] += dy[std::size_t(((e * gl + gi) * cl + pos) * hl + i)];
      }
}

// ---- moe_combine: dims [g, s, e, c, h]; y[e, g, c, h], gates[g, s, e] -> out[g, s, h] ----
inline buffer moe_combine_fwd(op_context& c, inputs in, inputs, op_state& st) {
  const index_t gl = c.len(0), sl = c.len(1), el = c.len(2), cl = c.len(3), hl = c.len(4), clo = c.lo(3);
  st.ints = detail::routes(c, *in[1]);
  buffer out = c.zeros(std::size_t(gl * sl * hl));
  for (index_t gi = 0; gi < gl; ++gi)
    for (index_t s = 0; s < sl; ++s)
      for (index_t e = 0; e < el; ++e) {
        const index_t pos = st.ints[std::size_t((gi * sl + s) * el + e)] - clo;
        if (pos < 0 || pos >= cl) continue;
        const float w = (*in[1])[std::size_t((gi * sl + s) * el + e)];
        for (index_t i = 0; i < hl; ++i)
          out[std::size_t((gi * sl + s) * hl + i)] += w * (*in[0])[std::size_t(((e * gl + gi) * cl + pos) * hl + i)];
      }
  return out;
}
inline void moe_combine_bwd(op_context& c, inputs in, inputs, op_state& st, const buffer& dy, std::vector<buffer>& din,
                            std::vector<buffer>&) {
  const index_t gl = c.len(0), sl = c.len(1), el = c.len(2), cl = c.len(3), hl = c.len(4), clo = c.lo(3);
  for (index_t gi = 0; gi < gl; ++gi)
    for (index_t s = 0; s < sl; ++s)
      for (index_t e = 0; e < el; ++e) {
        const index_t pos = st.ints[std::size_t((gi * sl + s) * el + e)] - clo;
        if (pos < 0 || pos >= cl) continue;
        const std::size_t ge = std::size_t((gi * sl + s) * el + e);
        const float w = (*in[1])[ge];
        double dot = 0;
        for (index_t i = 0; i < hl; ++i) {
          const std::size_t yo = std::size_t(((e * gl + gi) * cl + pos) * hl + i), o = std::size_t((gi * sl + s) * hl + i);
          if (din[0].size()) din[0][yo] += w * dy[o];
          dot += double(dy[o]) * (*in[0])[yo];
        }
        if (din[1].size()) din[1][ge] += float(dot);
      }
}

// ---- moe_experts: dims [e, g, c, h, f]; x[e, g, c, h], W1[e, h, f], W2[e, f, h] ----
// saved: the pre-activation H[e, g*c, f] (reduced over split h).
inline buffer moe_experts_fwd(op_context& c, inputs in, inputs par, op_state& st) {
  const index_t el = c.len(0), t = c.len(1) * c.len(2), hl = c.len(3), fl = c.len(4);
  buffer h = c.zeros(std::size_t(el * t * fl)), y = c.zeros(std::size_t(el * t * hl));
  for (index_t e = 0; e < el; ++e)
    gemm(false, false, t, fl, hl, 1.f, in[0]->data() + e * t * hl, par[0]->data() + e * hl * fl, 0.f,
         h.data() + e * t * fl);
  c.comm.all_reduce(c.over(1u << 3), h.span());
  std::vector<float> a(h.size());
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = gelu(h[i]);
  for (index_t e = 0; e < el; ++e)
    gemm(false, false, t, hl, fl, 1.f, a.data() + e * t * fl, par[1]->data() + e * fl * hl, 0.f, y.data() + e * t * hl);
  st.saved.push_back(std::move(h));
  return y;
}
inline void moe_experts_bwd(op_context& c, inputs in, inputs par, op_state& st, const buffer& dy,
                            std::vector<buffer>& din, std::vector<buffer>& dpar) {
  const index_t el = c.len(0), t = c.len(1) * c.len(2), hl = c.len(3), fl = c.len(4);
  const buffer& h = st.saved[0];
  std::vector<float> a(h.size()), da(h.size());
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = gelu(h[i]);
  for (index_t e = 0; e < el; ++e) {
    gemm(false, true, t, fl, hl, 1.f, dy.data() + e * t * hl, par[1]->data() + e * fl * hl, 0.f, da.data() + e * t * fl);
    gemm(true, false, fl, hl, t, 1.f, a.data() + e * t * fl, dy.data() + e * t * hl, 0.f, dpar[1].data() + e * fl * hl);
  }
  c.comm.all_reduce(c.over(1u << 3), da);
  for (std::size_t i = 0; i < da.size(); ++i) da[i] *= gelu_grad(h[i]);
  for (index_t e = 0; e < el; ++e) {
    gemm(true, false, hl, fl, t, 1.f, in[0]->data() + e * t * hl, da.data() + e * t * fl, 0.f,
         dpar[0].data() + e * hl * fl);
    if (din[0].size())
      gemm(false, true, t, hl, fl, 1.f, da.data() + e * t * fl, par[0]->data() + e * hl * fl, 0.f,
           din[0].data() + e * t * hl);
  }
}

}  // namespace tensoropt::runtime::kernels
