// CUDA linear (dense) layer, forward and backward, with the CPU kernel's layouts
// (runtime/kernels_dense.hpp): x[m, k] (batch dims flattened into m, contracted dims
// into k), W[k, n] or, for a tied embedding table, W stored [n, k]; y[m, n] = x W
// (+ bias[n] on the shard whose contracted blocks are all 0).
//
// The GEMMs go through cuBLASLt (gemm.cuh), the bias through its epilogue. The bias
// gradient is a column sum of dy over m rows, computed without atomics in two
// passes (per fixed chunk of rows, then over the chunks in order), so it is the
// same bits on every run; the weight gradient overwrites dW, as the CPU's GEMM
// with beta 0 does.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>
#include "gemm.cuh"
#include "launch.cuh"

namespace tensoropt::cuda::kernels {

/// One linear shard: rows, contracted and output lengths; W stored [n, k]?
struct linear_geometry {
  std::int64_t m = 0, k = 0, n = 0;
  bool w_transposed = false;
};

namespace detail {
/// Pass 1: partial[c][j] = sum over the rows of chunk c of x[r][j], in row order.
template <class T>
TENSOROPT_KERNEL void column_partial_kernel(const T* x, float* partial, std::int64_t rows, std::int64_t cols,
                                            std::int64_t chunk) {
  const std::int64_t j = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x, c = blockIdx.y;
  if (j >= cols) return;
  float s = 0;
  const std::int64_t end = (c + 1) * chunk < rows ? (c + 1) * chunk : rows;
  for (std::int64_t r = c * chunk; r < end; ++r) s += load(x[r * cols + j]);
  partial[c * cols + j] = s;
}
/// Pass 2: out[j] += sum over chunks in order.
template <class T>
TENSOROPT_KERNEL void column_final_kernel(const float* partial, T* out, std::int64_t chunks, std::int64_t cols) {
  const std::int64_t j = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  float s = 0;
  for (std::int64_t c = 0; c < chunks; ++c) s += partial[c * cols + j];
  out[j] = store<T>(load(out[j]) + s);
}
inline std::int64_t column_chunks(std::int64_t rows) { return rows < 128 ? (rows > 0 ? rows : 1) : 128; }
}  // namespace detail

/// Floats of workspace column_sums (and linear_backward) need.
inline std::int64_t column_sums_workspace(std::int64_t rows, std::int64_t cols) {
  return detail::column_chunks(rows) * cols;
}

/// out[j] += sum over rows of x[r][j] (x is [rows, cols]), deterministic.
template <Element T>
void column_sums(cudaStream_t s, const T* x, T* out, std::int64_t rows, std::int64_t cols, float* workspace) {
  if (rows <= 0 || cols <= 0) return;
  const std::int64_t chunks = detail::column_chunks(rows), chunk = (rows + chunks - 1) / chunks;
  const unsigned blocks = unsigned((cols + 127) / 128);
  detail::column_partial_kernel<T><<<dim3(blocks, unsigned(chunks)), 128, 0, s>>>(x, workspace, rows, cols, chunk);
  TENSOROPT_CUDA_CHECK_LAUNCH();
  detail::column_final_kernel<T><<<blocks, 128, 0, s>>>(workspace, out, chunks, cols);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}

/// y = x W (+ bias when given), through cuBLASLt (bias as its epilogue).
template <Element T>
void linear_forward(gemm_engine& e, const linear_geometry& l, const T* x, const T* w, const T* bias, T* y) {
  e.run(gemm_args<T>{.trans_b = l.w_transposed, .m = l.m, .n = l.n, .k = l.k, .a = x, .b = w, .c = y,
                     .epilogue = bias ? epilogue::bias : epilogue::none, .bias = bias});
}

/// dx = dy W^T (when dx is given), dW = x^T dy (or dy^T x for W stored [n, k]),
/// dbias += column sums of dy (when dbias is given). `workspace` holds
/// column_sums_workspace(m, n) floats.
template <Element T>
void linear_backward(gemm_engine& e, const linear_geometry& l, const T* x, const T* w, const T* dy, T* dx, T* dw,
                     T* dbias, float* workspace) {
  if (dx)
    e.run(gemm_args<T>{.trans_b = !l.w_transposed, .m = l.m, .n = l.k, .k = l.n, .a = dy, .b = w, .c = dx});
  if (l.w_transposed)
    e.run(gemm_args<T>{.trans_a = true, .m = l.n, .n = l.k, .k = l.m, .a = dy, .b = x, .c = dw});
  else
    e.run(gemm_args<T>{.trans_a = true, .m = l.k, .n = l.n, .k = l.m, .a = x, .b = dy, .c = dw});
  if (dbias) column_sums(e.stream(), dy, dbias, l.m, l.n, workspace);
}

}  // namespace tensoropt::cuda::kernels
