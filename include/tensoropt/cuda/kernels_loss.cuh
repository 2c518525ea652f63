// CUDA softmax cross-entropy, forward and backward, with the CPU kernel's layout
// and saved state (runtime/kernels_dense.hpp): logits z[rows, classes] (the class
// dim possibly split over devices, this shard starting at class `clo`), labels as
// float class ids [rows], saved probabilities p[rows, classes], output one float:
// the mean over the global batch of -log softmax(z)[label].
//
// A split class dim needs the row maxima and the row sums of every shard, so the
// forward is three phases with the collectives done by the caller between them (as
// the CPU kernel calls its communicator):
//   xent_row_max -> [all-gather + xent_max_of_gathered] -> xent_exp_sums ->
//   [all-reduce sums] -> xent_finish (normalizes p, writes the loss)
// Row maxima, sums and probabilities are fp32 (the loss is computed once per step;
// its inputs may be bf16). The loss is summed over rows in double in row order by
// one block, as the CPU does: the result does not depend on the launch.
#pragma once
#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include "launch.cuh"

namespace tensoropt::cuda::kernels {

namespace detail {
using cuda::detail::block_max;
using cuda::detail::block_sum;

template <class T>
TENSOROPT_KERNEL void xent_row_max_kernel(const T* z, float* mx, std::int64_t cl) {
  __shared__ float scratch[32];
  const std::int64_t r = blockIdx.x;
  float m = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < cl; j += blockDim.x) m = fmaxf(m, load(z[r * cl + j]));
  m = block_max(m, scratch);
  if (threadIdx.x == 0) mx[r] = m;
}
template <int = 0>  // a template: defined in every translation unit without ODR clashes
TENSOROPT_KERNEL void xent_max_gathered_kernel(const float* all, float* mx, std::int64_t rows,
                                                      std::int64_t members) {
  for (std::int64_t r = cuda::detail::first_index(); r < rows; r += cuda::detail::grid_stride()) {
    float m = mx[r];
    for (std::int64_t i = 0; i < members; ++i) m = fmaxf(m, all[i * rows + r]);
    mx[r] = m;
  }
}
template <class T>
TENSOROPT_KERNEL void xent_exp_kernel(const T* z, const float* mx, float* p, float* sum, std::int64_t cl) {
  __shared__ float scratch[32];
  const std::int64_t r = blockIdx.x;
  float s = 0;
  for (std::int64_t j = threadIdx.x; j < cl; j += blockDim.x) {
    const float e = expf(load(z[r * cl + j]) - mx[r]);
    p[r * cl + j] = e;
    s += e;
  }
  s = block_sum(s, scratch);
  if (threadIdx.x == 0) sum[r] = s;
}
/// Normalizes p and writes the per-row loss term (double).
template <class T>
TENSOROPT_KERNEL void xent_normalize_kernel(const T* z, const float* labels, const float* mx, const float* sum,
                                            float* p, double* term, std::int64_t rows, std::int64_t cl,
                                            std::int64_t clo) {
  for (std::int64_t e = cuda::detail::first_index(); e < rows * cl; e += cuda::detail::grid_stride()) {
    const std::int64_t r = e / cl, j = e % cl;
    p[e] /= sum[r];
    if (j != 0) continue;
    double t = clo == 0 ? log(double(sum[r])) + double(mx[r]) : 0.0;
    const std::int64_t label = std::int64_t(labels[r]) - clo;
    if (label >= 0 && label < cl) t -= double(load(z[r * cl + label]));
    term[r] = t;
  }
}
/// One block: loss[0] = float(sum of terms in row order / count).
template <int = 0>  // a template: defined in every translation unit without ODR clashes
TENSOROPT_KERNEL void xent_loss_kernel(const double* term, float* loss, std::int64_t rows, double count) {
  if (threadIdx.x != 0) return;
  double l = 0;
  for (std::int64_t r = 0; r < rows; ++r) l += term[r];
  loss[0] = float(l / count);
}
template <class T>
TENSOROPT_KERNEL void xent_backward_kernel(const float* p, const float* labels, const float* dloss, double count,
                                           T* dz, std::int64_t rows, std::int64_t cl, std::int64_t clo) {
  const float s = float(double(dloss[0]) / count);
  for (std::int64_t e = cuda::detail::first_index(); e < rows * cl; e += cuda::detail::grid_stride()) {
    const std::int64_t r = e / cl, j = e % cl;
    const std::int64_t label = std::int64_t(labels[r]) - clo;
    dz[e] = store<T>(s * (p[e] - (j == label ? 1.f : 0.f)));
  }
}
}  // namespace detail

/// Phase 1: mx[r] = max of this shard's logits of row r.
template <Element T>
void xent_row_max(cudaStream_t s, const T* z, float* mx, std::int64_t rows, std::int64_t cl) {
  if (rows <= 0) return;
  detail::xent_row_max_kernel<T><<<unsigned(rows), cuda::detail::row_threads(cl), 0, s>>>(z, mx, cl);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// With a split class dim: mx = max(mx, every member's maxima) from the all-gather
/// `all` [members, rows].
inline void xent_max_of_gathered(cudaStream_t s, const float* all, float* mx, std::int64_t rows,
                                 std::int64_t members) {
  if (rows <= 0) return;
  detail::xent_max_gathered_kernel<><<<cuda::detail::grid_for(rows), cuda::detail::block_size, 0, s>>>(all, mx, rows,
                                                                                                     members);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Phase 2: p = exp(z - mx) (unnormalized), sum[r] = this shard's row sums.
template <Element T>
void xent_exp_sums(cudaStream_t s, const T* z, const float* mx, float* p, float* sum, std::int64_t rows,
                   std::int64_t cl) {
  if (rows <= 0) return;
  detail::xent_exp_kernel<T><<<unsigned(rows), cuda::detail::row_threads(cl), 0, s>>>(z, mx, p, sum, cl);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Phase 3 (sums all-reduced): p /= sum; loss[0] = (sum over rows of [clo == 0]
/// (log sum + mx) - z[label if here]) / count, count = the global number of rows.
/// `term` is a workspace of `rows` doubles.
template <Element T>
void xent_finish(cudaStream_t s, const T* z, const float* labels, const float* mx, const float* sum, float* p,
                 double* term, float* loss, std::int64_t rows, std::int64_t cl, std::int64_t clo, double count) {
  if (rows > 0) {
    detail::xent_normalize_kernel<T><<<cuda::detail::grid_for(rows * cl), cuda::detail::block_size, 0, s>>>(
        z, labels, mx, sum, p, term, rows, cl, clo);
    TENSOROPT_CUDA_CHECK_LAUNCH();
  }
  detail::xent_loss_kernel<><<<1, 32, 0, s>>>(term, loss, rows, count);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Backward: dz = dloss[0] / count * (p - onehot(label)) (dloss on the device).
template <Element T>
void xent_backward(cudaStream_t s, const float* p, const float* labels, const float* dloss, double count, T* dz,
                   std::int64_t rows, std::int64_t cl, std::int64_t clo) {
  if (rows <= 0) return;
  detail::xent_backward_kernel<T><<<cuda::detail::grid_for(rows * cl), cuda::detail::block_size, 0, s>>>(
      p, labels, dloss, count, dz, rows, cl, clo);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}

}  // namespace tensoropt::cuda::kernels
