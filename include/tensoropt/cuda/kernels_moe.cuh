// CUDA kernels of the mixture-of-experts ops (GShard), forward and backward, with
// the CPU kernels' layouts and saved state (runtime/kernels_moe.hpp):
//   gate:     logits[t, E] (after the caller's all-reduce over a split h and
//             gather over split experts) -> softmax prob[t, E] and top-k mask[t, E]
//             (saved, fp32), gates[t, el] = prob * mask of this shard's experts;
//   routes:   the slot of every local (group, token, expert) in its expert's queue
//             (the token's rank among the group's tokens routed there), or -1,
//             from the gates of the whole token dim (int64, as the CPU's op_state);
//   dispatch: x[g, s, h] -> y[e, g, c, h], the rows of routed tokens at their slots;
//   combine:  y[e, g, c, h], gates[g, s, e] -> out[g, s, h] = sum_e gate * y[slot].
// The expert FFN is two GEMMs and a GELU: gemm.cuh and kernels_elementwise.cuh.
// Every output element is written by one thread that visits its terms in the CPU's
// order (no atomics): the scatters of dispatch and combine backward are gathers.
// The caller moves the cross-device pieces (all-gathers of gates and logits) and
// reassembles them with assemble_tokens / assemble_columns.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>
#include "launch.cuh"

namespace tensoropt::cuda::kernels {

/// One MoE shard: local groups, tokens, experts, capacity, hidden; the first local
/// token and capacity slot; global tokens per group.
struct moe_geometry {
  std::int64_t g = 0, s = 0, e = 0, c = 0, h = 0;
  std::int64_t slo = 0, clo = 0, tokens = 0;
};

namespace detail {
using cuda::detail::first_index;
using cuda::detail::grid_stride;

/// One thread per token row: softmax over E, top-k by (logit desc, index asc).
template <class T>
TENSOROPT_KERNEL void moe_gate_kernel(const T* z, float* prob, float* mask, T* y, std::int64_t t, std::int64_t E,
                                      std::int64_t el, std::int64_t elo, std::int64_t k, bool write) {
  for (std::int64_t r = first_index(); r < t; r += grid_stride()) {
    const T* zr = z + r * E;
    float mx = load(zr[0]), sum = 0;
    for (std::int64_t j = 1; j < E; ++j) mx = load(zr[j]) > mx ? load(zr[j]) : mx;
    for (std::int64_t j = 0; j < E; ++j) sum += prob[r * E + j] = expf(load(zr[j]) - mx);
    for (std::int64_t j = 0; j < E; ++j) {
      prob[r * E + j] /= sum;
      std::int64_t rank = 0;
      for (std::int64_t q = 0; q < E; ++q)
        rank += load(zr[q]) > load(zr[j]) || (q < j && load(zr[q]) == load(zr[j]));
      mask[r * E + j] = rank < k ? 1.f : 0.f;
    }
    for (std::int64_t j = 0; j < el; ++j)
      y[r * el + j] = store<T>(write ? prob[r * E + elo + j] * mask[r * E + elo + j] : 0.f);
  }
}
template <class T>
TENSOROPT_KERNEL void moe_gate_backward_kernel(const float* p, const float* m, const T* dg, T* dz, std::int64_t t,
                                               std::int64_t E, std::int64_t el, std::int64_t elo) {
  for (std::int64_t r = first_index(); r < t; r += grid_stride()) {
    double dot = 0;
    for (std::int64_t j = 0; j < E; ++j) dot += double(p[r * E + j]) * m[r * E + j] * load(dg[r * E + j]);
    for (std::int64_t j = 0; j < el; ++j) {
      const std::int64_t e = r * E + elo + j;
      dz[r * el + j] = store<T>(p[e] * (m[e] * load(dg[e]) - float(dot)));
    }
  }
}
/// One thread per (group, expert): walks the group's tokens in order.
template <class T>
TENSOROPT_KERNEL void moe_routes_kernel(moe_geometry m, const T* full, std::int64_t* slot) {
  for (std::int64_t q = first_index(); q < m.g * m.e; q += grid_stride()) {
    const std::int64_t gi = q / m.e, e = q % m.e;
    std::int64_t count = 0;
    for (std::int64_t s = 0; s < m.tokens; ++s) {
      const bool routed = load(full[(gi * m.tokens + s) * m.e + e]) != 0.f;
      if (s >= m.slo && s < m.slo + m.s) slot[(gi * m.s + s - m.slo) * m.e + e] = routed ? count : -1;
      count += routed;
    }
  }
}
template <class T>
TENSOROPT_KERNEL void moe_dispatch_kernel(moe_geometry m, const T* x, const std::int64_t* slot, T* y) {
  for (std::int64_t q = first_index(); q < m.g * m.s * m.e * m.h; q += grid_stride()) {
    const std::int64_t i = q % m.h, e = (q / m.h) % m.e, tok = q / (m.h * m.e), gi = tok / m.s;
    const std::int64_t pos = slot[tok * m.e + e] - m.clo;
    if (pos >= 0 && pos < m.c) y[((e * m.g + gi) * m.c + pos) * m.h + i] = x[tok * m.h + i];
  }
}
template <class T>
TENSOROPT_KERNEL void moe_dispatch_backward_kernel(moe_geometry m, const T* dy, const std::int64_t* slot, T* dx) {
  for (std::int64_t q = first_index(); q < m.g * m.s * m.h; q += grid_stride()) {
    const std::int64_t i = q % m.h, tok = q / m.h, gi = tok / m.s;
    float acc = load(dx[q]);
    for (std::int64_t e = 0; e < m.e; ++e) {
      const std::int64_t pos = slot[tok * m.e + e] - m.clo;
      if (pos >= 0 && pos < m.c) acc += load(dy[((e * m.g + gi) * m.c + pos) * m.h + i]);
    }
    dx[q] = store<T>(acc);
  }
}
template <class T>
TENSOROPT_KERNEL void moe_combine_kernel(moe_geometry m, const T* y, const T* gates, const std::int64_t* slot,
                                         T* out) {
  for (std::int64_t q = first_index(); q < m.g * m.s * m.h; q += grid_stride()) {
    const std::int64_t i = q % m.h, tok = q / m.h, gi = tok / m.s;
    float acc = 0;
    for (std::int64_t e = 0; e < m.e; ++e) {
      const std::int64_t pos = slot[tok * m.e + e] - m.clo;
      if (pos >= 0 && pos < m.c) acc += load(gates[tok * m.e + e]) * load(y[((e * m.g + gi) * m.c + pos) * m.h + i]);
    }
    out[q] = store<T>(acc);
  }
}
/// dy_experts[slot] += gate * dout (one writer per slot); dgates += dout . y[slot].
template <class T>
TENSOROPT_KERNEL void moe_combine_backward_kernel(moe_geometry m, const T* y, const T* gates,
                                                  const std::int64_t* slot, const T* dout, T* dy, T* dgates) {
  for (std::int64_t q = first_index(); q < m.g * m.s * m.e; q += grid_stride()) {
    const std::int64_t e = q % m.e, tok = q / m.e, gi = tok / m.s;
    const std::int64_t pos = slot[q] - m.clo;
    if (pos < 0 || pos >= m.c) continue;
    const float w = load(gates[q]);
    double dot = 0;
    for (std::int64_t i = 0; i < m.h; ++i) {
      const std::int64_t yo = ((e * m.g + gi) * m.c + pos) * m.h + i, o = tok * m.h + i;
      if (dy) dy[yo] = store<T>(load(dy[yo]) + w * load(dout[o]));
      dot += double(load(dout[o])) * load(y[yo]);
    }
    if (dgates) dgates[q] = store<T>(load(dgates[q]) + float(dot));
  }
}
}  // namespace detail

/// Reassembles an all-gather over the token dim: all [members, g, s, w] ->
/// full [g, members * s, w] (strided copies).
template <Element T>
void assemble_tokens(cudaStream_t s, const T* all, T* full, std::int64_t members, std::int64_t g, std::int64_t sl,
                     std::int64_t w) {
  const std::size_t row = std::size_t(sl * w) * sizeof(T);
  for (std::int64_t i = 0; i < members && row && g; ++i)
    TENSOROPT_CUDA_CHECK(cudaMemcpy2DAsync(full + i * sl * w, std::size_t(members) * row, all + i * g * sl * w, row, row,
                                           std::size_t(g), cudaMemcpyDeviceToDevice, s));
}
/// Reassembles an all-gather of per-member [rows, w] blocks into [rows, members * w].
template <Element T>
void assemble_columns(cudaStream_t s, const T* all, T* full, std::int64_t members, std::int64_t rows, std::int64_t w) {
  assemble_tokens(s, all, full, members, rows, 1, w);
}

/// Gate forward: prob, mask [t, E] (fp32, saved) and gates y [t, el] from the full
/// logits z [t, E]; `write` false (a shard with h block != 0) writes zero gates.
template <Element T>
void moe_gate_forward(cudaStream_t s, const T* z, float* prob, float* mask, T* y, std::int64_t t, std::int64_t E,
                      std::int64_t el, std::int64_t elo, std::int64_t k, bool write) {
  if (t <= 0 || E <= 0) return;
  detail::moe_gate_kernel<T><<<cuda::detail::grid_for(t, 64), 64, 0, s>>>(z, prob, mask, y, t, E, el, elo,
                                                                         k < 1 ? 1 : k, write);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Gate backward to the logits of this shard: dz [t, el] from the gathered dgates
/// dg [t, E]. The GEMMs to dx and dWg follow (gemm.cuh).
template <Element T>
void moe_gate_backward(cudaStream_t s, const float* prob, const float* mask, const T* dg, T* dz, std::int64_t t,
                       std::int64_t E, std::int64_t el, std::int64_t elo) {
  if (t <= 0) return;
  detail::moe_gate_backward_kernel<T><<<cuda::detail::grid_for(t, 64), 64, 0, s>>>(prob, mask, dg, dz, t, E, el, elo);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Slots [g, s, e] (int64, -1 = not routed here) from the gates of all m.tokens
/// tokens of each local group, full [g, tokens, e].
template <Element T>
void moe_routes(cudaStream_t s, const moe_geometry& m, const T* full, std::int64_t* slot) {
  if (m.g * m.e <= 0) return;
  detail::moe_routes_kernel<T><<<cuda::detail::grid_for(m.g * m.e, 64), 64, 0, s>>>(m, full, slot);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Dispatch forward: y [e, g, c, h] (zeroed here) gets each routed token's row.
template <Element T>
void moe_dispatch_forward(cudaStream_t s, const moe_geometry& m, const T* x, const std::int64_t* slot, T* y) {
  const std::int64_t n = m.e * m.g * m.c * m.h;
  if (n <= 0) return;
  TENSOROPT_CUDA_CHECK(cudaMemsetAsync(y, 0, std::size_t(n) * sizeof(T), s));
  detail::moe_dispatch_kernel<T><<<cuda::detail::grid_for(m.g * m.s * m.e * m.h), cuda::detail::block_size, 0, s>>>(
      m, x, slot, y);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Dispatch backward: dx [g, s, h] += the slots' gradients, experts in order.
template <Element T>
void moe_dispatch_backward(cudaStream_t s, const moe_geometry& m, const T* dy, const std::int64_t* slot, T* dx) {
  const std::int64_t n = m.g * m.s * m.h;
  if (n <= 0) return;
  detail::moe_dispatch_backward_kernel<T><<<cuda::detail::grid_for(n), cuda::detail::block_size, 0, s>>>(m, dy, slot,
                                                                                                         dx);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Combine forward: out [g, s, h] = sum over experts of gate * y[slot].
template <Element T>
void moe_combine_forward(cudaStream_t s, const moe_geometry& m, const T* y, const T* gates, const std::int64_t* slot,
                         T* out) {
  const std::int64_t n = m.g * m.s * m.h;
  if (n <= 0) return;
  detail::moe_combine_kernel<T><<<cuda::detail::grid_for(n), cuda::detail::block_size, 0, s>>>(m, y, gates, slot, out);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Combine backward: dy [e, g, c, h] += gate * dout at each slot, dgates [g, s, e]
/// += dout . y[slot]; either may be null (no gradient wanted).
template <Element T>
void moe_combine_backward(cudaStream_t s, const moe_geometry& m, const T* y, const T* gates, const std::int64_t* slot,
                          const T* dout, T* dy, T* dgates) {
  const std::int64_t n = m.g * m.s * m.e;
  if (n <= 0) return;
  detail::moe_combine_backward_kernel<T><<<cuda::detail::grid_for(n, 64), 64, 0, s>>>(m, y, gates, slot, dout, dy,
                                                                                      dgates);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}

}  // namespace tensoropt::cuda::kernels
