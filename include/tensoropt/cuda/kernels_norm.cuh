// CUDA kernels of layer norm and batch norm, forward and backward, with the CPU
// kernels' layouts and saved state (runtime/kernels_dense.hpp, kernels_conv.hpp):
// layer norm over the last dim of [rows, h], with (mean, rstd) per row written by
// forward and recomputed for backward by layer_norm_stats (the op keeps only its
// input, as the CPU kernel does); batch norm over (batch, height, width) of
// [b, c, hw], saving (mean, rstd) per channel.
//
// Statistics are fp32, two-pass (mean, then the mean square of the deviations),
// one block per row or channel, reduced in a fixed order. Parameter gradients are
// deterministic without atomics: layer norm's dgamma/dbeta sum each column over
// fixed chunks of rows into a workspace, then sum the chunks in order (two passes).
//
// Batch norm's statistics span every device that splits batch or space, so its
// forward and backward are phases with the all-reduce between them done by the
// caller (as the CPU kernel calls its communicator):
//   forward:  batch_norm_sums -> all-reduce(sum) -> batch_norm_centered_squares ->
//             all-reduce(sq) -> batch_norm_apply
//   backward: batch_norm_backward_sums -> all-reduce(both) -> batch_norm_backward_dx
#pragma once
#include <cuda_runtime.h>
#include <cstdint>
#include "launch.cuh"
#include "../runtime/elementwise.hpp"

namespace tensoropt::cuda::kernels {

/// The epsilon inside the square root of both norms (as the CPU's norm_eps).
inline constexpr float norm_epsilon = 1e-5f;

namespace detail {
using cuda::detail::block_sum;

template <class T>
TENSOROPT_KERNEL void layer_norm_forward_kernel(const T* x, const T* gain, const T* bias, T* y, float* stat,
                                                std::int64_t h) {
  __shared__ float scratch[32];
  const std::int64_t r = blockIdx.x;
  const T* xr = x + r * h;
  float s = 0;
  for (std::int64_t i = threadIdx.x; i < h; i += blockDim.x) s += load(xr[i]);
  const float mean = block_sum(s, scratch) / float(h);
  float v = 0;
  for (std::int64_t i = threadIdx.x; i < h; i += blockDim.x) {
    const float d = load(xr[i]) - mean;
    v += d * d;
  }
  v = block_sum(v, scratch);
  const float rstd = float(1.0 / sqrt(double(v) / double(h) + double(norm_epsilon)));
  if (threadIdx.x == 0) {
    stat[2 * r] = mean;
    stat[2 * r + 1] = rstd;
  }
  if (y == nullptr) return;  // layer_norm_stats: the statistics only
  for (std::int64_t i = threadIdx.x; i < h; i += blockDim.x)
    y[r * h + i] = store<T>(runtime::kernels::norm_affine(load(xr[i]), mean, rstd, load(gain[i]), load(bias[i])));
}

template <class T>
TENSOROPT_KERNEL void layer_norm_backward_dx_kernel(const T* x, const T* gain, const float* stat, const T* dy, T* dx,
                                                    std::int64_t h) {
  __shared__ float scratch[32];
  const std::int64_t r = blockIdx.x;
  const float mean = stat[2 * r], rstd = stat[2 * r + 1];
  float s1 = 0, s2 = 0;
  for (std::int64_t i = threadIdx.x; i < h; i += blockDim.x) {
    const float xh = (load(x[r * h + i]) - mean) * rstd, g = load(dy[r * h + i]) * load(gain[i]);
    s1 += g;
    s2 += g * xh;
  }
  s1 = block_sum(s1, scratch) / float(h);
  s2 = block_sum(s2, scratch) / float(h);
  for (std::int64_t i = threadIdx.x; i < h; i += blockDim.x) {
    const float xh = (load(x[r * h + i]) - mean) * rstd, g = load(dy[r * h + i]) * load(gain[i]);
    dx[r * h + i] = store<T>(rstd * (g - s1 - xh * s2));
  }
}

/// Pass 1 of dgamma/dbeta: partial[c][i] = sums over the rows of chunk c (in order).
template <class T>
TENSOROPT_KERNEL void layer_norm_param_partial_kernel(const T* x, const float* stat, const T* dy, float* partial,
                                                      std::int64_t rows, std::int64_t h, std::int64_t chunk) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x, c = blockIdx.y;
  if (i >= h) return;
  float dg = 0, db = 0;
  const std::int64_t end = (c + 1) * chunk < rows ? (c + 1) * chunk : rows;
  for (std::int64_t r = c * chunk; r < end; ++r) {
    const float g = load(dy[r * h + i]);
    dg += g * (load(x[r * h + i]) - stat[2 * r]) * stat[2 * r + 1];
    db += g;
  }
  partial[(2 * c) * h + i] = dg;
  partial[(2 * c + 1) * h + i] = db;
}
/// Pass 2: dgain[i] += sum over chunks (in order), same for dbias.
template <class T>
TENSOROPT_KERNEL void layer_norm_param_final_kernel(const float* partial, T* dgain, T* dbias, std::int64_t chunks,
                                                    std::int64_t h) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= h) return;
  float dg = 0, db = 0;
  for (std::int64_t c = 0; c < chunks; ++c) {
    dg += partial[(2 * c) * h + i];
    db += partial[(2 * c + 1) * h + i];
  }
  dgain[i] = store<T>(load(dgain[i]) + dg);
  dbias[i] = store<T>(load(dbias[i]) + db);
}

/// Batch-norm channel reductions; mode 0: sum x; 1: sum (x - mean)^2 with
/// mean = sum / count; 2: sums of dy and dy * xhat (backward).
template <class T>
TENSOROPT_KERNEL void batch_norm_reduce_kernel(int mode, const T* x, const T* dy, const float* aux, double count,
                                               float* out1, float* out2, T* dgain, T* dbias, std::int64_t nb,
                                               std::int64_t ch, std::int64_t hw) {
  __shared__ float scratch[32];
  const std::int64_t k = blockIdx.x;
  const float mean = mode == 1 ? float(double(aux[k]) / count) : mode == 2 ? aux[2 * k] : 0.f;
  const float rstd = mode == 2 ? aux[2 * k + 1] : 0.f;
  float a = 0, b = 0;
  for (std::int64_t j = threadIdx.x; j < nb * hw; j += blockDim.x) {
    const std::int64_t e = ((j / hw) * ch + k) * hw + j % hw;
    const float v = load(x[e]);
    if (mode == 0) a += v;
    else if (mode == 1) a += (v - mean) * (v - mean);
    else {
      const float g = load(dy[e]);
      a += g;
      b += g * ((v - mean) * rstd);
    }
  }
  a = block_sum(a, scratch);
  if (mode == 2) b = block_sum(b, scratch);
  if (threadIdx.x != 0) return;
  out1[k] = a;
  if (mode == 2) {
    out2[k] = b;
    dgain[k] = store<T>(load(dgain[k]) + b);
    dbias[k] = store<T>(load(dbias[k]) + a);
  }
}

template <class T>
TENSOROPT_KERNEL void batch_norm_apply_kernel(const T* x, const float* sum, const float* sq, double count,
                                              const T* gain, const T* bias, T* y, float* stat, std::int64_t n,
                                              std::int64_t ch, std::int64_t hw) {
  for (std::int64_t e = cuda::detail::first_index(); e < n; e += cuda::detail::grid_stride()) {
    const std::int64_t k = (e / hw) % ch;
    const float mean = float(double(sum[k]) / count);
    const float rstd = float(1.0 / sqrt(double(sq[k]) / count + double(norm_epsilon)));
    if (e % hw == 0 && e / (hw * ch) == 0) {
      stat[2 * k] = mean;
      stat[2 * k + 1] = rstd;
    }
    y[e] = store<T>(runtime::kernels::norm_affine(load(x[e]), mean, rstd, load(gain[k]), load(bias[k])));
  }
}

template <class T>
TENSOROPT_KERNEL void batch_norm_dx_kernel(const T* x, const float* stat, const T* dy, const T* gain,
                                           const float* both, double count, T* dx, std::int64_t n, std::int64_t ch,
                                           std::int64_t hw) {
  for (std::int64_t e = cuda::detail::first_index(); e < n; e += cuda::detail::grid_stride()) {
    const std::int64_t k = (e / hw) % ch;
    const float mean = stat[2 * k], rstd = stat[2 * k + 1];
    const float gk = load(gain[k]) * rstd;
    const float m1 = float(double(both[k]) / count), m2 = float(double(both[ch + k]) / count);
    const float xh = (load(x[e]) - mean) * rstd;
    dx[e] = store<T>(gk * (load(dy[e]) - m1 - xh * m2));
  }
}
}  // namespace detail

/// Layer norm forward over [rows, h]: y = (x - mean) rstd gain + bias; stat[2r] =
/// mean, stat[2r + 1] = rstd (fp32).
template <Element T>
void layer_norm_forward(cudaStream_t s, const T* x, const T* gain, const T* bias, T* y, float* stat, std::int64_t rows,
                        std::int64_t h) {
  if (rows <= 0 || h <= 0) return;
  detail::layer_norm_forward_kernel<T><<<unsigned(rows), cuda::detail::row_threads(h), 0, s>>>(x, gain, bias, y, stat, h);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}

/// Layer norm's statistics alone: stat[2r] = mean, stat[2r + 1] = rstd of row r,
/// the same arithmetic (and bits) as layer_norm_forward's.
template <Element T>
void layer_norm_stats(cudaStream_t s, const T* x, float* stat, std::int64_t rows, std::int64_t h) {
  if (rows <= 0 || h <= 0) return;
  detail::layer_norm_forward_kernel<T>
      <<<unsigned(rows), cuda::detail::row_threads(h), 0, s>>>(x, nullptr, nullptr, nullptr, stat, h);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}

/// Chunks of rows of the deterministic parameter-gradient reduction.
inline std::int64_t layer_norm_chunks(std::int64_t rows) { return rows < 128 ? (rows > 0 ? rows : 1) : 128; }
/// Floats of workspace layer_norm_backward needs.
inline std::int64_t layer_norm_backward_workspace(std::int64_t rows, std::int64_t h) {
  return 2 * layer_norm_chunks(rows) * h;
}

/// Layer norm backward: dx (overwritten; may be null: no input gradient), and
/// dgain, dbias accumulated (+=), deterministically. `workspace` holds
/// layer_norm_backward_workspace(rows, h) floats.
template <Element T>
void layer_norm_backward(cudaStream_t s, const T* x, const T* gain, const float* stat, const T* dy, T* dx, T* dgain,
                         T* dbias, std::int64_t rows, std::int64_t h, float* workspace) {
  if (rows <= 0 || h <= 0) return;
  if (dx) {
    detail::layer_norm_backward_dx_kernel<T><<<unsigned(rows), cuda::detail::row_threads(h), 0, s>>>(x, gain, stat,
                                                                                                     dy, dx, h);
    TENSOROPT_CUDA_CHECK_LAUNCH();
  }
  const std::int64_t chunks = layer_norm_chunks(rows), chunk = (rows + chunks - 1) / chunks;
  const unsigned cols = unsigned((h + 127) / 128);
  detail::layer_norm_param_partial_kernel<T><<<dim3(cols, unsigned(chunks)), 128, 0, s>>>(x, stat, dy, workspace,
                                                                                            rows, h, chunk);
  TENSOROPT_CUDA_CHECK_LAUNCH();
  detail::layer_norm_param_final_kernel<T><<<cols, 128, 0, s>>>(workspace, dgain, dbias, chunks, h);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}

/// Batch norm phase 1: sum[k] = sum of x over (batch, space) of channel k; x is [nb, ch, hw].
template <Element T>
void batch_norm_sums(cudaStream_t s, const T* x, float* sum, std::int64_t nb, std::int64_t ch, std::int64_t hw) {
  if (ch <= 0) return;
  detail::batch_norm_reduce_kernel<T><<<unsigned(ch), cuda::detail::row_threads(nb * hw), 0, s>>>(
      0, x, nullptr, nullptr, 1.0, sum, nullptr, nullptr, nullptr, nb, ch, hw);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Phase 2: sq[k] = sum of (x - mean)^2, mean = sum[k] / count (sum all-reduced,
/// count = global batch * height * width).
template <Element T>
void batch_norm_centered_squares(cudaStream_t s, const T* x, const float* sum, double count, float* sq, std::int64_t nb,
                                 std::int64_t ch, std::int64_t hw) {
  if (ch <= 0) return;
  detail::batch_norm_reduce_kernel<T><<<unsigned(ch), cuda::detail::row_threads(nb * hw), 0, s>>>(
      1, x, nullptr, sum, count, sq, nullptr, nullptr, nullptr, nb, ch, hw);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Phase 3: y = (x - mean) rstd gain + bias with sq all-reduced; writes stat[2k] =
/// mean, stat[2k + 1] = rstd.
template <Element T>
void batch_norm_apply(cudaStream_t s, const T* x, const float* sum, const float* sq, double count, const T* gain,
                      const T* bias, T* y, float* stat, std::int64_t nb, std::int64_t ch, std::int64_t hw) {
  const std::int64_t n = nb * ch * hw;
  if (n <= 0) return;
  detail::batch_norm_apply_kernel<T><<<cuda::detail::grid_for(n), cuda::detail::block_size, 0, s>>>(
      x, sum, sq, count, gain, bias, y, stat, n, ch, hw);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Backward phase 1: both[k] = sum dy, both[ch + k] = sum dy xhat over the local
/// shard; dgain += the second, dbias += the first (local sums, as the CPU).
template <Element T>
void batch_norm_backward_sums(cudaStream_t s, const T* x, const float* stat, const T* dy, float* both, T* dgain,
                              T* dbias, std::int64_t nb, std::int64_t ch, std::int64_t hw) {
  if (ch <= 0) return;
  detail::batch_norm_reduce_kernel<T><<<unsigned(ch), cuda::detail::row_threads(nb * hw), 0, s>>>(
      2, x, dy, stat, 1.0, both, both + ch, dgain, dbias, nb, ch, hw);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Backward phase 2 (after all-reducing `both`): dx = gain rstd (dy - m1 - xhat m2).
template <Element T>
void batch_norm_backward_dx(cudaStream_t s, const T* x, const float* stat, const T* dy, const T* gain,
                            const float* both, double count, T* dx, std::int64_t nb, std::int64_t ch, std::int64_t hw) {
  const std::int64_t n = nb * ch * hw;
  if (n <= 0) return;
  detail::batch_norm_dx_kernel<T><<<cuda::detail::grid_for(n), cuda::detail::block_size, 0, s>>>(
      x, stat, dy, gain, both, count, dx, n, ch, hw);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}

}  // namespace tensoropt::cuda::kernels
