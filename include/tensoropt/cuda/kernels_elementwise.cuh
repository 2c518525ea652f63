// CUDA kernels of the element-wise ops, forward and backward: GELU, ReLU, dropout,
// residual add, concat, plus the casts between fp32 and bf16 that mixed precision
// needs. Same semantics as the CPU kernels (runtime/kernels_dense.hpp): the math is
// the host-device code of runtime/elementwise.hpp, and dropout draws its mask from
// the same counter-based stream at the same global indices, so masks equal the
// CPU's bit for bit under any sharding.
//
// Launchers take the stream and raw device pointers plus sizes; they enqueue and
// return (no synchronization). Backward kernels overwrite their gradient outputs
// (the CPU kernels write into zeroed buffers; writing is the same result).
#pragma once
#include <cuda_runtime.h>
#include <cstdint>
#include <span>
#include "../runtime/elementwise.hpp"
#include "launch.cuh"

namespace tensoropt::cuda::kernels {

enum class unary_op : std::uint8_t { relu, gelu };

namespace detail {
using cuda::detail::first_index;
using cuda::detail::grid_stride;

template <class T>
TENSOROPT_KERNEL void unary_forward_kernel(unary_op op, const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const float v = load(x[i]);
    y[i] = store<T>(op == unary_op::relu ? runtime::kernels::relu(v) : runtime::kernels::gelu(v));
  }
}
template <class T>
TENSOROPT_KERNEL void unary_backward_kernel(unary_op op, const T* x, const T* dy, T* dx, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const float v = load(x[i]), g = load(dy[i]);
    dx[i] = store<T>(op == unary_op::relu ? runtime::kernels::relu_grad(v, g) : g * runtime::kernels::gelu_grad(v));
  }
}
template <class T>
TENSOROPT_KERNEL void dropout_kernel(const T* x, T* y, tensor_box box, runtime::dropout_mask mask, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride())
    y[i] = store<T>(load(x[i]) * mask.scale(box.global_index(i)));
}
template <class T>
TENSOROPT_KERNEL void add_kernel(const T* a, const T* b, T* y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] = store<T>(load(a[i]) + load(b[i]));
}
template <class From, class To>
TENSOROPT_KERNEL void cast_kernel(const From* x, To* y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] = store<To>(load(x[i]));
}
}  // namespace detail

using cuda::detail::grid_for;
using cuda::detail::block_size;

/// y = relu(x) or gelu(x) over n elements.
template <Element T>
void unary_forward(cudaStream_t s, unary_op op, const T* x, T* y, std::int64_t n) {
  if (n <= 0) return;
  detail::unary_forward_kernel<T><<<grid_for(n), block_size, 0, s>>>(op, x, y, n);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// dx = dy * op'(x) over n elements.
template <Element T>
void unary_backward(cudaStream_t s, unary_op op, const T* x, const T* dy, T* dx, std::int64_t n) {
  if (n <= 0) return;
  detail::unary_backward_kernel<T><<<grid_for(n), block_size, 0, s>>>(op, x, dy, dx, n);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// y = x * mask.scale(global index) over the local box (also the backward, with
/// dy in and dx out: the mask is recomputed, never stored).
template <Element T>
void dropout(cudaStream_t s, const T* x, T* y, const tensor_box& box, const runtime::dropout_mask& mask) {
  const std::int64_t n = box.local_size();
  if (n <= 0) return;
  detail::dropout_kernel<T><<<grid_for(n), block_size, 0, s>>>(x, y, box, mask, n);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// y = a + b over n elements (the residual add). Its backward copies dy to each
/// input's gradient: copy().
template <Element T>
void add(cudaStream_t s, const T* a, const T* b, T* y, std::int64_t n) {
  if (n <= 0) return;
  detail::add_kernel<T><<<grid_for(n), block_size, 0, s>>>(a, b, y, n);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}
/// y = x over n elements.
template <Element T>
void copy(cudaStream_t s, const T* x, T* y, std::int64_t n) {
  if (n > 0) TENSOROPT_CUDA_CHECK(cudaMemcpyAsync(y, x, std::size_t(n) * sizeof(T), cudaMemcpyDeviceToDevice, s));
}
/// y = x converted element by element (fp32 <-> bf16).
template <Element From, Element To>
void cast(cudaStream_t s, const From* x, To* y, std::int64_t n) {
  if (n <= 0) return;
  detail::cast_kernel<From, To><<<grid_for(n), block_size, 0, s>>>(x, y, n);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}

namespace detail {
/// Copies the columns [off, off + w) of each row of y[outer, total, inner] to or from x[outer, w, inner].
template <class T>
void concat_columns(cudaStream_t s, const T* from, T* to, bool to_y, std::int64_t off, std::int64_t w,
                    std::int64_t total, std::int64_t outer, std::int64_t inner) {
  const std::size_t row = std::size_t(w * inner) * sizeof(T), pitch = std::size_t(total * inner) * sizeof(T);
  if (row == 0 || outer == 0) return;
  if (to_y)
    TENSOROPT_CUDA_CHECK(cudaMemcpy2DAsync(to + off * inner, pitch, from, row, row, std::size_t(outer),
                                           cudaMemcpyDeviceToDevice, s));
  else
    TENSOROPT_CUDA_CHECK(cudaMemcpy2DAsync(to, row, from + off * inner, pitch, row, std::size_t(outer),
                                           cudaMemcpyDeviceToDevice, s));
}
}  // namespace detail

/// Concat along one axis: input i is [outer, widths[i], inner], the output
/// [outer, sum(widths), inner]. Strided 2-D copies, no kernel.
template <Element T>
void concat_forward(cudaStream_t s, std::span<const T* const> x, std::span<const std::int64_t> widths, T* y,
                    std::int64_t outer, std::int64_t inner) {
  std::int64_t total = 0, off = 0;
  for (auto w : widths) total += w;
  for (std::size_t i = 0; i < x.size(); ++i) {
    detail::concat_columns(s, x[i], y, true, off, widths[i], total, outer, inner);
    off += widths[i];
  }
}
/// Its backward: input i's gradient is its columns of dy; null entries (inputs
/// without a gradient) are skipped.
template <Element T>
void concat_backward(cudaStream_t s, const T* dy, std::span<const std::int64_t> widths, std::span<T* const> dx,
                     std::int64_t outer, std::int64_t inner) {
  std::int64_t total = 0, off = 0;
  for (auto w : widths) total += w;
  for (std::size_t i = 0; i < dx.size(); ++i) {
    if (dx[i]) detail::concat_columns(s, dy, dx[i], false, off, widths[i], total, outer, inner);
    off += widths[i];
  }
}

}  // namespace tensoropt::cuda::kernels
