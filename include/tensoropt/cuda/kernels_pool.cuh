// CUDA pooling, forward and backward, with the CPU kernels' layouts and saved state
// (runtime/kernels_conv.hpp): max and average pooling over [planes, ih, iw] (max
// saves the flat input index of each output's maximum, -1 when its window is all
// padding, as int64: the CPU's op_state ints), and global average pooling.
//
// The backward passes, scatters on the CPU, are gathers here: each input element
// adds the gradients of the windows that cover it (max: whose argmax it is), in
// ascending output order, which is the order the CPU's scatter adds them in. So no
// atomics are needed and fp32 gradients equal the CPU's bit for bit for the same
// inputs (checked by the GPU test).
#pragma once
#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include "launch.cuh"

namespace tensoropt::cuda::kernels {

/// One pooling shard: planes (batch x channels), output plane, input plane,
/// stride, padding, window size.
struct pool_geometry {
  std::int64_t planes = 0, oh = 0, ow = 0, ih = 0, iw = 0, stride = 1, pad = 0, k = 1;
};

namespace detail {
using cuda::detail::first_index;
using cuda::detail::grid_stride;

template <class T>
TENSOROPT_KERNEL void pool_forward_kernel(pool_geometry g, bool is_max, const T* x, T* y, std::int64_t* arg) {
  const std::int64_t n = g.planes * g.oh * g.ow;
  for (std::int64_t o = first_index(); o < n; o += grid_stride()) {
    const std::int64_t ox = o % g.ow, oy = (o / g.ow) % g.oh, p = o / (g.ow * g.oh);
    float acc = is_max ? -INFINITY : 0.f;
    std::int64_t best = -1;
    for (std::int64_t ki = 0; ki < g.k; ++ki)
      for (std::int64_t kj = 0; kj < g.k; ++kj) {
        const std::int64_t iy = oy * g.stride - g.pad + ki, ix = ox * g.stride - g.pad + kj;
        if (iy < 0 || iy >= g.ih || ix < 0 || ix >= g.iw) continue;
        const std::int64_t e = (p * g.ih + iy) * g.iw + ix;
        const float v = load(x[e]);
        if (!is_max) acc += v;
        else if (v > acc) {
          acc = v;
          best = e;
        }
      }
    y[o] = store<T>(is_max ? (best < 0 ? 0.f : acc) : acc / float(g.k * g.k));
    if (is_max) arg[o] = best;
  }
}
/// dx[e] += the dy of the windows covering e (max: those whose argmax is e), in
/// ascending output order.
template <class T>
TENSOROPT_KERNEL void pool_backward_kernel(pool_geometry g, bool is_max, const T* dy, const std::int64_t* arg, T* dx) {
  const std::int64_t n = g.planes * g.ih * g.iw;
  for (std::int64_t e = first_index(); e < n; e += grid_stride()) {
    const std::int64_t ix = e % g.iw, iy = (e / g.iw) % g.ih, p = e / (g.iw * g.ih);
    float acc = load(dx[e]);
    const std::int64_t ty = iy + g.pad, tx = ix + g.pad;
    const std::int64_t y0 = ty - g.k + 1 > 0 ? (ty - g.k + 1 + g.stride - 1) / g.stride : 0;
    const std::int64_t x0 = tx - g.k + 1 > 0 ? (tx - g.k + 1 + g.stride - 1) / g.stride : 0;
    for (std::int64_t oy = y0; oy <= ty / g.stride && oy < g.oh; ++oy)
      for (std::int64_t ox = x0; ox <= tx / g.stride && ox < g.ow; ++ox) {
        const std::int64_t o = (p * g.oh + oy) * g.ow + ox;
        if (!is_max) acc += load(dy[o]) / float(g.k * g.k);
        else if (arg[o] == e) acc += load(dy[o]);
      }
    dx[e] = store<T>(acc);
  }
}
template <class T>
TENSOROPT_KERNEL void gap_forward_kernel(const T* x, T* y, std::int64_t hw, float inv) {
  __shared__ float scratch[32];
  const std::int64_t p = blockIdx.x;
  float s = 0;
  for (std::int64_t i = threadIdx.x; i < hw; i += blockDim.x) s += load(x[p * hw + i]);
  s = cuda::detail::block_sum(s, scratch);
  if (threadIdx.x == 0) y[p] = store<T>(s * inv);
}
template <class T>
TENSOROPT_KERNEL void gap_backward_kernel(const T* dy, T* dx, std::int64_t n, std::int64_t hw, float inv) {
  for (std::int64_t e = first_index(); e < n; e += grid_stride()) dx[e] = store<T>(load(dy[e / hw]) * inv);
}
}  // namespace detail

/// Max or average pooling forward; `arg` (max only: planes * oh * ow int64) saves
/// each output's argmax as a flat input index, -1 for an all-padding window.
template <Element T>
void pool_forward(cudaStream_t s, const pool_geometry& g, bool is_max, const T* x, T* y, std::int64_t* arg) {
  const std::int64_t n = g.planes * g.oh * g.ow;
  if (n <= 0) return;
  detail::pool_forward_kernel<T><<<cuda::detail::grid_for(n), cuda::detail::block_size, 0, s>>>(g, is_max, x, y, arg);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Pooling backward: dx += the gradients of the windows (max: of the argmax).
template <Element T>
void pool_backward(cudaStream_t s, const pool_geometry& g, bool is_max, const T* dy, const std::int64_t* arg, T* dx) {
  const std::int64_t n = g.planes * g.ih * g.iw;
  if (n <= 0) return;
  detail::pool_backward_kernel<T><<<cuda::detail::grid_for(n), cuda::detail::block_size, 0, s>>>(g, is_max, dy, arg,
                                                                                                  dx);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Global average pooling: y[p] = sum of the plane's hw values * inv, inv = 1 /
/// (global height * width) (a split plane gives partial sums).
template <Element T>
void global_avg_pool_forward(cudaStream_t s, const T* x, T* y, std::int64_t planes, std::int64_t hw, float inv) {
  if (planes <= 0) return;
  detail::gap_forward_kernel<T><<<unsigned(planes), cuda::detail::row_threads(hw), 0, s>>>(x, y, hw, inv);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// Its backward: dx[p, i] = dy[p] * inv.
template <Element T>
void global_avg_pool_backward(cudaStream_t s, const T* dy, T* dx, std::int64_t planes, std::int64_t hw, float inv) {
  const std::int64_t n = planes * hw;
  if (n <= 0) return;
  detail::gap_backward_kernel<T><<<cuda::detail::grid_for(n), cuda::detail::block_size, 0, s>>>(dy, dx, n, hw, inv);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}

}  // namespace tensoropt::cuda::kernels
