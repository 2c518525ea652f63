// What every tensoropt kernel shares: the element types (fp32 and bf16 storage,
// fp32 math), launch geometry for grid-stride loops, and deterministic block
// reductions.
//
// Storage vs math: kernels are templated on the storage type T (float or
// __nv_bfloat16); they load T, compute in float and store T (round to nearest
// even), so bf16 mixed precision and the fp32 equivalence runs share one kernel.
// Reductions accumulate in float (or double where the CPU kernel does) in an
// order fixed by the launch geometry: the same inputs give the same bits on every
// run (no atomics on floats anywhere in the kernels).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include "../core/config.hpp"
#include "error.cuh"

namespace tensoropt::cuda {

using bf16 = __nv_bfloat16;

/// Storage types the kernels are instantiated for.
template <class T>
concept Element = std::is_same_v<T, float> || std::is_same_v<T, bf16>;

/// Loads a stored element as float.
TENSOROPT_HOST_DEVICE inline float load(float x) { return x; }
TENSOROPT_HOST_DEVICE inline float load(bf16 x) { return __bfloat162float(x); }
/// Converts a float to storage type T (round to nearest even for bf16).
template <class T>
TENSOROPT_HOST_DEVICE inline T store(float x) {
  if constexpr (std::is_same_v<T, float>) return x;
  else return __float2bfloat16_rn(x);
}

namespace detail {
inline constexpr int block_size = 256;  ///< threads per block of the element-wise kernels
inline constexpr int max_blocks = 65535 * 8;

/// Blocks of a grid-stride loop over n elements.
inline unsigned grid_for(std::int64_t n, int threads = block_size) {
  const std::int64_t b = (n + threads - 1) / threads;
  return unsigned(std::clamp<std::int64_t>(b, 1, max_blocks));
}

#if TENSOROPT_CUDA_COMPILATION()
/// The global index of this thread and the grid's stride, for `for (i = first; i < n; i += stride)`.
__device__ inline std::int64_t first_index() { return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline std::int64_t grid_stride() { return std::int64_t(gridDim.x) * blockDim.x; }

/// Sum over the threads of a block (blockDim.x a multiple of 32, at most 1024),
/// in a fixed order; every thread gets the result. `scratch` holds 32 values.
template <class A>
__device__ inline A block_sum(A v, A* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5, warps = int(blockDim.x) >> 5;
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : A(0);
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
/// Maximum over the threads of a block (same contract as block_sum).
__device__ inline float block_max(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5, warps = int(blockDim.x) >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
#endif

/// Threads per block for a row reduction over `n` elements: a power of two in [32, 1024].
inline int row_threads(std::int64_t n) {
  int t = 32;
  while (t < 1024 && t < n) t <<= 1;
  return t;
}
}  // namespace detail

/// Local box of a tensor inside its global shape (for counter-based randomness):
/// the global index of local element i, counting whole-batch elements, is
/// micro * prod(extents) + row-major index of (lo + local coordinates of i).
struct tensor_box {
  static constexpr int max_rank = 6;  ///< as model/graph.hpp's max_tensor_rank
  int rank = 0;
  std::int64_t extents[max_rank] = {};
  std::int64_t lo[max_rank] = {};
  std::int64_t len[max_rank] = {};
  std::int64_t micro = 0;

  /// Elements of the local box.
  TENSOROPT_HOST_DEVICE std::int64_t local_size() const {
    std::int64_t n = 1;
    for (int a = 0; a < rank; ++a) n *= len[a];
    return n;
  }
  /// The global index of local element i (see above).
  TENSOROPT_HOST_DEVICE std::uint64_t global_index(std::int64_t i) const {
    std::int64_t idx[max_rank] = {};
    for (int a = rank - 1; a >= 0; --a) {
      idx[a] = i % len[a];
      i /= len[a];
    }
    std::int64_t total = 1, g = 0;
    for (int a = 0; a < rank; ++a) {
      total *= extents[a];
      g = g * extents[a] + lo[a] + idx[a];
    }
    return std::uint64_t(micro * total + g);
  }
};

}  // namespace tensoropt::cuda
