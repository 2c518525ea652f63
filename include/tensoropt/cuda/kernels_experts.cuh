// CUDA expert FFN of the mixture-of-experts layer, forward and backward, with the
// CPU kernel's layouts and saved state (runtime/kernels_moe.hpp, moe_experts):
// x[e, t, h] (t = groups x capacity slots), W1[e, h, f], W2[e, f, h], y[e, t, h];
// the pre-activation H[e, t, f] is saved for the backward.
//
// Every product is one strided-batched cuBLASLt GEMM over the local experts. A
// split hidden dim h makes H and dA partial sums, so forward and backward are two
// phases each with the caller's all-reduce between them (as the CPU kernel calls
// its communicator):
//   forward:  H = x W1 -> [all-reduce H] -> y = gelu(H) W2
//   backward: dA = dy W2^T, dW2 = gelu(H)^T dy -> [all-reduce dA] ->
//             dA *= gelu'(H), dW1 = x^T dA, dx = dA W1^T
// GELU and its derivative are runtime/elementwise.hpp's, as on the CPU.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>
#include "gemm.cuh"
#include "kernels_elementwise.cuh"

namespace tensoropt::cuda::kernels {

/// One expert-FFN shard: local experts, tokens (groups x capacity), hidden, inner.
struct experts_geometry {
  std::int64_t e = 0, t = 0, h = 0, f = 0;
  /// Elements of T the second phases need as workspace (gelu(H)).
  std::int64_t workspace() const { return e * t * f; }
};

/// Forward phase 1: H[e] = x[e] W1[e] (this shard's partial sums over h).
template <Element T>
void experts_forward_first(gemm_engine& g, const experts_geometry& d, const T* x, const T* w1, T* hidden) {
  g.run(gemm_args<T>{.m = d.t, .n = d.f, .k = d.h, .a = x, .b = w1, .c = hidden, .batch = d.e,
                     .stride_a = d.t * d.h, .stride_b = d.h * d.f, .stride_c = d.t * d.f});
}
/// Forward phase 2 (H all-reduced): y[e] = gelu(H[e]) W2[e]; `workspace` holds d.workspace().
template <Element T>
void experts_forward_second(gemm_engine& g, const experts_geometry& d, const T* hidden, const T* w2, T* y,
                            T* workspace) {
  unary_forward<T>(g.stream(), unary_op::gelu, hidden, workspace, d.e * d.t * d.f);
  g.run(gemm_args<T>{.m = d.t, .n = d.h, .k = d.f, .a = workspace, .b = w2, .c = y, .batch = d.e,
                     .stride_a = d.t * d.f, .stride_b = d.f * d.h, .stride_c = d.t * d.h});
}
/// Backward phase 1: dA[e] = dy[e] W2[e]^T (partial over a split h), dW2[e] =
/// gelu(H[e])^T dy[e] (overwritten); `workspace` holds d.workspace().
template <Element T>
void experts_backward_first(gemm_engine& g, const experts_geometry& d, const T* hidden, const T* w2, const T* dy,
                            T* da, T* dw2, T* workspace) {
  unary_forward<T>(g.stream(), unary_op::gelu, hidden, workspace, d.e * d.t * d.f);
  g.run(gemm_args<T>{.trans_b = true, .m = d.t, .n = d.f, .k = d.h, .a = dy, .b = w2, .c = da, .batch = d.e,
                     .stride_a = d.t * d.h, .stride_b = d.f * d.h, .stride_c = d.t * d.f});
  g.run(gemm_args<T>{.trans_a = true, .m = d.f, .n = d.h, .k = d.t, .a = workspace, .b = dy, .c = dw2, .batch = d.e,
                     .stride_a = d.t * d.f, .stride_b = d.t * d.h, .stride_c = d.f * d.h});
}
/// Backward phase 2 (dA all-reduced): dA *= gelu'(H) in place; dW1[e] = x[e]^T dA[e]
/// (overwritten); dx[e] = dA[e] W1[e]^T when dx is given.
template <Element T>
void experts_backward_second(gemm_engine& g, const experts_geometry& d, const T* x, const T* w1, const T* hidden,
                             T* da, T* dw1, T* dx) {
  unary_backward<T>(g.stream(), unary_op::gelu, hidden, da, da, d.e * d.t * d.f);
  g.run(gemm_args<T>{.trans_a = true, .m = d.h, .n = d.f, .k = d.t, .a = x, .b = da, .c = dw1, .batch = d.e,
                     .stride_a = d.t * d.h, .stride_b = d.t * d.f, .stride_c = d.h * d.f});
  if (dx)
    g.run(gemm_args<T>{.trans_b = true, .m = d.t, .n = d.h, .k = d.f, .a = da, .b = w1, .c = dx, .batch = d.e,
                       .stride_a = d.t * d.f, .stride_b = d.h * d.f, .stride_c = d.t * d.h});
}

}  // namespace tensoropt::cuda::kernels
