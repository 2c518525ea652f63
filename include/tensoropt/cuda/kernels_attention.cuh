// CUDA attention core, forward and backward, with the CPU kernel's layouts and
// saved state (runtime/kernels_attention.hpp): qkv[b, s, 3, heads, d] ->
// y[b, s, heads, d], saving the softmax probabilities P[b, heads, s, s] (before
// dropout). Per batch row, the four GEMMs run strided-batched over the heads
// through cuBLASLt; the softmax (causal mask, dropout on the weights) and its
// backward are own kernels, one block per score row.
//
//   forward:  S = Q K^T / sqrt(d); P = softmax(mask(S)); Pd = P * keep; Y = Pd V
//   backward: Pd = P * keep; dPd = dY V^T; dV = Pd^T dY;
//             dS = P * (dPd * keep - rowsum(dPd * keep * P)); dQ = dS K / sqrt(d);
//             dK = dS^T Q / sqrt(d)
// The dropout keep-scale of weight (b, h, i, j) is the CPU's: counter-based at the
// global index (((micro * batch + b) * heads + h) * s + i) * s + j, so masks are
// equal bit for bit. The scaled scores and Pd live in a caller-provided workspace
// (attention_geometry::workspace() elements of T); d a multiple of 8 keeps every
// GEMM operand 16-byte aligned (the fast cuBLASLt kernels).
#pragma once
#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include "../runtime/elementwise.hpp"
#include "gemm.cuh"
#include "launch.cuh"

namespace tensoropt::cuda::kernels {

/// The local shape of one attention op and its place in the global one.
struct attention_geometry {
  std::int64_t b = 0, h = 0, s = 0, d = 0;  ///< local batch, heads, sequence, head dim
  std::int64_t blo = 0, hlo = 0;            ///< first global batch row and head of this shard
  std::int64_t heads = 0, batch = 0;        ///< global heads and batch
  std::int64_t micro = 0;                   ///< micro-batch index
  bool causal = true;
  runtime::dropout_mask mask;  ///< dropout on the attention weights

  /// Elements of T attention_forward / attention_backward need as workspace.
  std::int64_t workspace() const { return 2 * b * h * s * s; }
};

namespace detail {
using cuda::detail::block_max;
using cuda::detail::block_sum;

TENSOROPT_HOST_DEVICE inline std::uint64_t attention_index(const attention_geometry& g, std::int64_t bi,
                                                           std::int64_t hi, std::int64_t i, std::int64_t j) {
  return std::uint64_t((((g.micro * g.batch + g.blo + bi) * g.heads + g.hlo + hi) * g.s + i) * g.s + j);
}

/// One block per score row (bh, i): P = softmax of the valid prefix, Pd = P * keep.
template <class T>
TENSOROPT_KERNEL void attention_softmax_kernel(attention_geometry g, const T* scores, T* prob, T* pd) {
  __shared__ float scratch[32];
  const std::int64_t row = blockIdx.x, bh = row / g.s, i = row % g.s;
  const std::int64_t valid = g.causal ? i + 1 : g.s;
  const T* z = scores + row * g.s;
  float mx = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < valid; j += blockDim.x) mx = fmaxf(mx, load(z[j]));
  mx = block_max(mx, scratch);
  float sum = 0;
  for (std::int64_t j = threadIdx.x; j < valid; j += blockDim.x) sum += expf(load(z[j]) - mx);
  sum = block_sum(sum, scratch);
  for (std::int64_t j = threadIdx.x; j < g.s; j += blockDim.x) {
    const float p = j < valid ? expf(load(z[j]) - mx) / sum : 0.f;
    prob[row * g.s + j] = store<T>(p);
    pd[row * g.s + j] = store<T>(p * g.mask.scale(attention_index(g, bh / g.h, bh % g.h, i, j)));
  }
}
/// Pd = P * keep (backward recomputes the mask).
template <class T>
TENSOROPT_KERNEL void attention_dropout_kernel(attention_geometry g, const T* prob, T* pd, std::int64_t n) {
  for (std::int64_t e = cuda::detail::first_index(); e < n; e += cuda::detail::grid_stride()) {
    const std::int64_t j = e % g.s, i = (e / g.s) % g.s, bh = e / (g.s * g.s);
    pd[e] = store<T>(load(prob[e]) * g.mask.scale(attention_index(g, bh / g.h, bh % g.h, i, j)));
  }
}
/// One block per row: dS = P (x - sum_j x P), x = dPd * keep; in place on dp.
template <class T>
TENSOROPT_KERNEL void attention_softmax_backward_kernel(attention_geometry g, const T* prob, T* dp) {
  __shared__ float scratch[32];
  const std::int64_t row = blockIdx.x, bh = row / g.s, i = row % g.s;
  float dot = 0;
  for (std::int64_t j = threadIdx.x; j < g.s; j += blockDim.x) {
    const float x = load(dp[row * g.s + j]) * g.mask.scale(attention_index(g, bh / g.h, bh % g.h, i, j));
    dot += x * load(prob[row * g.s + j]);
  }
  dot = block_sum(dot, scratch);
  for (std::int64_t j = threadIdx.x; j < g.s; j += blockDim.x) {
    const float x = load(dp[row * g.s + j]) * g.mask.scale(attention_index(g, bh / g.h, bh % g.h, i, j));
    dp[row * g.s + j] = store<T>(load(prob[row * g.s + j]) * (x - dot));
  }
}
}  // namespace detail

/// Attention forward: y [b, s, h, d] from qkv [b, s, 3, h, d]; prob [b, h, s, s]
/// saved for the backward. `workspace` holds g.workspace() elements.
template <Element T>
void attention_forward(gemm_engine& e, const attention_geometry& g, const T* qkv, T* y, T* prob, T* workspace) {
  if (g.b * g.h * g.s == 0) return;
  const cudaStream_t s = e.stream();
  const std::int64_t ld_qkv = 3 * g.h * g.d, ld_y = g.h * g.d, ss = g.s * g.s;
  const float scale = float(1.0 / std::sqrt(double(g.d)));
  T* scores = workspace;
  T* pd = workspace + g.b * g.h * ss;
  for (std::int64_t bi = 0; bi < g.b; ++bi) {
    const T* q = qkv + bi * g.s * ld_qkv;
    e.run(gemm_args<T>{.trans_a = false, .trans_b = true, .m = g.s, .n = g.s, .k = g.d, .alpha = scale, .a = q,
                       .lda = ld_qkv, .b = q + g.h * g.d, .ldb = ld_qkv, .beta = 0.f, .c = scores + bi * g.h * ss,
                       .ldc = g.s, .batch = g.h, .stride_a = g.d, .stride_b = g.d, .stride_c = ss});
  }
  detail::attention_softmax_kernel<T><<<unsigned(g.b * g.h * g.s), cuda::detail::row_threads(g.s), 0, s>>>(
      g, scores, prob, pd);
  TENSOROPT_CUDA_CHECK_LAUNCH();
  for (std::int64_t bi = 0; bi < g.b; ++bi) {
    const T* v = qkv + bi * g.s * ld_qkv + 2 * g.h * g.d;
    e.run(gemm_args<T>{.m = g.s, .n = g.d, .k = g.s, .a = pd + bi * g.h * ss, .lda = g.s, .b = v, .ldb = ld_qkv,
                       .c = y + bi * g.s * ld_y, .ldc = ld_y, .batch = g.h, .stride_a = ss, .stride_b = g.d,
                       .stride_c = g.d});
  }
}

/// Attention backward: dqkv [b, s, 3, h, d] (overwritten) from dy and the saved
/// prob. `workspace` holds g.workspace() elements.
template <Element T>
void attention_backward(gemm_engine& e, const attention_geometry& g, const T* qkv, const T* prob, const T* dy, T* dqkv,
                        T* workspace) {
  if (g.b * g.h * g.s == 0) return;
  const cudaStream_t s = e.stream();
  const std::int64_t ld_qkv = 3 * g.h * g.d, ld_y = g.h * g.d, ss = g.s * g.s, n = g.b * g.h * ss;
  const float scale = float(1.0 / std::sqrt(double(g.d)));
  T* pd = workspace;
  T* dp = workspace + n;
  detail::attention_dropout_kernel<T><<<cuda::detail::grid_for(n), cuda::detail::block_size, 0, s>>>(g, prob, pd, n);
  TENSOROPT_CUDA_CHECK_LAUNCH();
  for (std::int64_t bi = 0; bi < g.b; ++bi) {
    const T* v = qkv + bi * g.s * ld_qkv + 2 * g.h * g.d;
    const T* gy = dy + bi * g.s * ld_y;
    T* dv = dqkv + bi * g.s * ld_qkv + 2 * g.h * g.d;
    e.run(gemm_args<T>{.trans_b = true, .m = g.s, .n = g.s, .k = g.d, .a = gy, .lda = ld_y, .b = v, .ldb = ld_qkv,
                       .c = dp + bi * g.h * ss, .ldc = g.s, .batch = g.h, .stride_a = g.d, .stride_b = g.d,
                       .stride_c = ss});  // dPd = dY V^T
    e.run(gemm_args<T>{.trans_a = true, .m = g.s, .n = g.d, .k = g.s, .a = pd + bi * g.h * ss, .lda = g.s, .b = gy,
                       .ldb = ld_y, .c = dv, .ldc = ld_qkv, .batch = g.h, .stride_a = ss, .stride_b = g.d,
                       .stride_c = g.d});  // dV = Pd^T dY
  }
  detail::attention_softmax_backward_kernel<T><<<unsigned(g.b * g.h * g.s), cuda::detail::row_threads(g.s), 0, s>>>(
      g, prob, dp);
  TENSOROPT_CUDA_CHECK_LAUNCH();
  for (std::int64_t bi = 0; bi < g.b; ++bi) {
    const T* q = qkv + bi * g.s * ld_qkv;
    T* dq = dqkv + bi * g.s * ld_qkv;
    e.run(gemm_args<T>{.m = g.s, .n = g.d, .k = g.s, .alpha = scale, .a = dp + bi * g.h * ss, .lda = g.s,
                       .b = q + g.h * g.d, .ldb = ld_qkv, .c = dq, .ldc = ld_qkv, .batch = g.h, .stride_a = ss,
                       .stride_b = g.d, .stride_c = g.d});  // dQ = dS K
    e.run(gemm_args<T>{.trans_a = true, .m = g.s, .n = g.d, .k = g.s, .alpha = scale, .a = dp + bi * g.h * ss,
                       .lda = g.s, .b = q, .ldb = ld_qkv, .c = dq + g.h * g.d, .ldc = ld_qkv, .batch = g.h,
                       .stride_a = ss, .stride_b = g.d, .stride_c = g.d});  // dK = dS^T Q
  }
}

}  // namespace tensoropt::cuda::kernels
