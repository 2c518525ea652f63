// CUDA conv2d, forward and backward, with the CPU kernel's layouts
// (runtime/kernels_conv.hpp): im2col + cuBLASLt GEMM per sample (x[b, cin, ih, iw],
// W[cout, cin * kh * kw], y[b, cout, oh, ow]). Pooling is in kernels_pool.cuh,
// batch norm in kernels_norm.cuh.
//
// The backward's col2im, a scatter on the CPU, is a gather here: each input element
// sums the columns that read it, in the (ki, kj) order the CPU's scatter visits
// them, so no atomics are needed. Parameter gradients accumulate (+=) as on the
// CPU: dw through GEMMs with beta = 1 per sample, dbias by one block per channel.
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

}  // namespace tensoropt::cuda::kernels
