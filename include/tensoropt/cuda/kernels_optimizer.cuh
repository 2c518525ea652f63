// Fused optimizer updates on the GPU: SGD with momentum and Adam on fp32 master
// weights and fp32 state, reading the gradient in its storage type (fp32 or bf16)
// and writing the bf16 copy of the weights that the next forward reads, in one
// pass over memory (mixed precision: 4 + 4 + 4 (+ 4) bytes of master and state per
// parameter plus the 2-byte copy and gradient, the 16 bytes per parameter the cost
// model assumes for Adam).
//
// The per-element formulas are runtime/elementwise.hpp's sgd_element and
// adam_element, the ones the CPU optimizer calls, with the step's scalars
// (including Adam's bias corrections) computed once on the host by
// optimizer_step::at: fp32 updates match the CPU's within FMA contraction.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>
#include "../runtime/elementwise.hpp"
#include "launch.cuh"

namespace tensoropt::cuda::kernels {

namespace detail {
template <class G>
TENSOROPT_KERNEL void sgd_kernel(runtime::optimizer_step st, float* w, float* v, const G* g, bf16* copy,
                                 std::int64_t n) {
  for (std::int64_t i = cuda::detail::first_index(); i < n; i += cuda::detail::grid_stride()) {
    float wi = w[i], vi = v[i];
    runtime::sgd_element(st, wi, vi, load(g[i]));
    w[i] = wi;
    v[i] = vi;
    if (copy) copy[i] = store<bf16>(wi);
  }
}
template <class G>
TENSOROPT_KERNEL void adam_kernel(runtime::optimizer_step st, float* w, float* m, float* v, const G* g, bf16* copy,
                                  std::int64_t n) {
  for (std::int64_t i = cuda::detail::first_index(); i < n; i += cuda::detail::grid_stride()) {
    float wi = w[i], mi = m[i], vi = v[i];
    runtime::adam_element(st, wi, mi, vi, load(g[i]));
    w[i] = wi;
    m[i] = mi;
    v[i] = vi;
    if (copy) copy[i] = store<bf16>(wi);
  }
}
}  // namespace detail

/// SGD with momentum on n elements: v = momentum v + g; w -= lr v; copy = bf16(w)
/// when `copy` is given.
template <Element G>
void sgd_update(cudaStream_t s, const runtime::optimizer_step& st, float* w, float* v, const G* g, bf16* copy,
                std::int64_t n) {
  if (n <= 0) return;
  detail::sgd_kernel<G><<<cuda::detail::grid_for(n), cuda::detail::block_size, 0, s>>>(st, w, v, g, copy, n);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Adam on n elements (bias-corrected, st = optimizer_step::at(..., t)); copy =
/// bf16(w) when `copy` is given.
template <Element G>
void adam_update(cudaStream_t s, const runtime::optimizer_step& st, float* w, float* m, float* v, const G* g,
                 bf16* copy, std::int64_t n) {
  if (n <= 0) return;
  detail::adam_kernel<G><<<cuda::detail::grid_for(n), cuda::detail::block_size, 0, s>>>(st, w, m, v, g, copy, n);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}

}  // namespace tensoropt::cuda::kernels
