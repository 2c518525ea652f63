// CUDA kernels of the convolutional ops, forward and backward, with the CPU
// kernels' layouts and saved state (runtime/kernels_conv.hpp): conv2d as im2col +
// cuBLASLt GEMM per sample (x[b, cin, ih, iw], W[cout, cin * kh * kw],
// y[b, cout, oh, ow]), max / average pooling (max saves the flat input index of
// each output's maximum, -1 when its window is all padding, as int64), and global
// average pooling. Batch norm is in kernels_norm.cuh.
//
// Backward passes that the CPU writes as scatters (col2im, pooling) are written
// here as gathers: each input element sums the contributions of the columns or
// windows that cover it, in the same ascending order the CPU's scatter visits
// them, so no atomics are needed and fp32 results equal the CPU's bit for bit for
// the same inputs. Parameter gradients accumulate (+=) as on the CPU.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>
#include "gemm.cuh"
#include "launch.cuh"

namespace tensoropt::cuda::kernels {

/// One conv2d shard: local batch, output / input channels, output plane, kernel;
/// input plane (unsplit), stride and padding (rows, columns).
struct conv_geometry {
  std::int64_t b = 0, co = 0, ci = 0, oh = 0, ow = 0, kh = 0, kw = 0, ih = 0, iw = 0;
  std::int64_t stride = 1, pad = 0, pad_w = 0;
  /// Elements of T conv2d_forward / conv2d_backward need as workspace (one im2col matrix).
  std::int64_t workspace() const { return ci * kh * kw * oh * ow; }
};

/// One pooling shard: planes (batch x channels), output plane, input plane,
/// stride, padding, window size.
struct pool_geometry {
  std::int64_t planes = 0, oh = 0, ow = 0, ih = 0, iw = 0, stride = 1, pad = 0, k = 1;
};

namespace detail {
using cuda::detail::first_index;
using cuda::detail::grid_stride;

template <class T>
TENSOROPT_KERNEL void im2col_kernel(conv_geometry d, const T* x, T* col) {
  const std::int64_t pix = d.oh * d.ow, n = d.ci * d.kh * d.kw * pix;
  for (std::int64_t e = first_index(); e < n; e += grid_stride()) {
    const std::int64_t row = e / pix, p = e % pix, kj = row % d.kw, ki = (row / d.kw) % d.kh, c = row / (d.kw * d.kh);
    const std::int64_t iy = (p / d.ow) * d.stride - d.pad + ki, ix = (p % d.ow) * d.stride - d.pad_w + kj;
    col[e] = iy >= 0 && iy < d.ih && ix >= 0 && ix < d.iw ? x[(c * d.ih + iy) * d.iw + ix] : store<T>(0.f);
  }
}
/// dx[c][iy][ix] += the col entries that read it, in (ki, kj) order.
template <class T>
TENSOROPT_KERNEL void col2im_kernel(conv_geometry d, const T* col, T* dx) {
  const std::int64_t pix = d.oh * d.ow, n = d.ci * d.ih * d.iw;
  for (std::int64_t e = first_index(); e < n; e += grid_stride()) {
    const std::int64_t ix = e % d.iw, iy = (e / d.iw) % d.ih, c = e / (d.iw * d.ih);
    float acc = load(dx[e]);
    for (std::int64_t ki = 0; ki < d.kh; ++ki) {
      const std::int64_t ty = iy + d.pad - ki;
      if (ty < 0 || ty % d.stride || ty / d.stride >= d.oh) continue;
      for (std::int64_t kj = 0; kj < d.kw; ++kj) {
        const std::int64_t tx = ix + d.pad_w - kj;
        if (tx < 0 || tx % d.stride || tx / d.stride >= d.ow) continue;
        acc += load(col[((c * d.kh + ki) * d.kw + kj) * pix + (ty / d.stride) * d.ow + tx / d.stride]);
      }
    }
    dx[e] = store<T>(acc);
  }
}
template <class T>
TENSOROPT_KERNEL void channel_bias_kernel(T* y, const T* bias, std::int64_t n, std::int64_t ch, std::int64_t pix) {
  for (std::int64_t e = first_index(); e < n; e += grid_stride())
    y[e] = store<T>(load(y[e]) + load(bias[(e / pix) % ch]));
}
/// One block per channel o: dbias[o] += sum over samples and pixels of dy.
template <class T>
TENSOROPT_KERNEL void channel_bias_grad_kernel(const T* dy, T* dbias, std::int64_t nb, std::int64_t ch,
                                               std::int64_t pix) {
  __shared__ float scratch[32];
  const std::int64_t o = blockIdx.x;
  float s = 0;
  for (std::int64_t j = threadIdx.x; j < nb * pix; j += blockDim.x) s += load(dy[((j / pix) * ch + o) * pix + j % pix]);
  s = cuda::detail::block_sum(s, scratch);
  if (threadIdx.x == 0) dbias[o] = store<T>(load(dbias[o]) + s);
}

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

/// conv2d forward: y[n] = W col(x[n]) (+ bias[o] when `bias` is given: pass it only
/// on the shard whose input-channel block is 0). `workspace`: d.workspace() elements.
template <Element T>
void conv2d_forward(gemm_engine& e, const conv_geometry& d, const T* x, const T* w, const T* bias, T* y, T* workspace) {
  const cudaStream_t s = e.stream();
  const std::int64_t kk = d.ci * d.kh * d.kw, pix = d.oh * d.ow;
  if (d.b * d.co * pix == 0) return;
  for (std::int64_t n = 0; n < d.b; ++n) {
    detail::im2col_kernel<T><<<cuda::detail::grid_for(kk * pix), cuda::detail::block_size, 0, s>>>(
        d, x + n * d.ci * d.ih * d.iw, workspace);
    TENSOROPT_CUDA_CHECK_LAUNCH();
    e.run(gemm_args<T>{.m = d.co, .n = pix, .k = kk, .a = w, .b = workspace, .c = y + n * d.co * pix});
  }
  if (bias) {
    const std::int64_t n = d.b * d.co * pix;
    detail::channel_bias_kernel<T><<<cuda::detail::grid_for(n), cuda::detail::block_size, 0, s>>>(y, bias, n, d.co,
                                                                                                   pix);
    TENSOROPT_CUDA_CHECK_LAUNCH();
  }
}

/// conv2d backward: dw += sum_n dy[n] col(x[n])^T; dbias += sums of dy (when given);
/// dx[n] += col2im(W^T dy[n]) (when dx is given; dx arrives zeroed, as on the CPU).
template <Element T>
void conv2d_backward(gemm_engine& e, const conv_geometry& d, const T* x, const T* w, const T* dy, T* dx, T* dw,
                     T* dbias, T* workspace) {
  const cudaStream_t s = e.stream();
  const std::int64_t kk = d.ci * d.kh * d.kw, pix = d.oh * d.ow;
  if (d.b * d.co * pix == 0) return;
  for (std::int64_t n = 0; n < d.b; ++n) {
    const T* g = dy + n * d.co * pix;
    detail::im2col_kernel<T><<<cuda::detail::grid_for(kk * pix), cuda::detail::block_size, 0, s>>>(
        d, x + n * d.ci * d.ih * d.iw, workspace);
    TENSOROPT_CUDA_CHECK_LAUNCH();
    e.run(gemm_args<T>{.trans_b = true, .m = d.co, .n = kk, .k = pix, .a = g, .b = workspace, .beta = 1.f, .c = dw});
    if (!dx) continue;
    e.run(gemm_args<T>{.trans_a = true, .m = kk, .n = pix, .k = d.co, .a = w, .b = g, .c = workspace});
    const std::int64_t nx = d.ci * d.ih * d.iw;
    detail::col2im_kernel<T><<<cuda::detail::grid_for(nx), cuda::detail::block_size, 0, s>>>(d, workspace,
                                                                                              dx + n * nx);
    TENSOROPT_CUDA_CHECK_LAUNCH();
  }
  if (dbias) {
    detail::channel_bias_grad_kernel<T><<<unsigned(d.co), cuda::detail::row_threads(d.b * pix), 0, s>>>(
        dy, dbias, d.b, d.co, pix);
    TENSOROPT_CUDA_CHECK_LAUNCH();
  }
}

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
