// CUDA embedding lookup, forward and a deterministic backward, with the CPU
// kernel's layout (runtime/kernels_dense.hpp): ids[rows] (float class ids, as the
// runtime stores them), table[vl, h] (this shard's vocabulary rows [vlo, vlo + vl)),
// optional learned positions pos[sl, h] added once (by the shard with vlo == 0) at
// position r mod sl; y[rows, h].
//
// The backward scatters dy rows into the table rows of their ids. Several rows may
// share an id, so a plain scatter needs float atomics, whose order (hence the bits)
// changes from run to run. Instead the (id, row) pairs are sorted by id with CUB's
// stable radix sort, and one thread per (run of equal ids, column) adds that run's
// rows in row order: the same sequence of additions as the CPU loop, so the fp32
// gradient equals the CPU's bit for bit, and every run gives the same bits.
// Position gradients are gathered per (position, column) in row order likewise.
#pragma once
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>
#include <cstdint>
#include "launch.cuh"

namespace tensoropt::cuda::kernels {

namespace detail {
template <class T>
TENSOROPT_KERNEL void embedding_forward_kernel(const float* ids, const T* table, const T* pos, T* y, std::int64_t rows,
                                               std::int64_t vlo, std::int64_t vl, std::int64_t h, std::int64_t sl) {
  for (std::int64_t e = cuda::detail::first_index(); e < rows * h; e += cuda::detail::grid_stride()) {
    const std::int64_t r = e / h, i = e % h, id = std::int64_t(ids[r]) - vlo;
    float v = id >= 0 && id < vl ? load(table[id * h + i]) : 0.f;
    if (pos) v += load(pos[(r % sl) * h + i]);
    y[e] = store<T>(v);
  }
}
/// key = local id (or vl: not here), value = row.
template <int = 0>  // a template: defined in every translation unit without ODR clashes
TENSOROPT_KERNEL void embedding_keys_kernel(const float* ids, int* keys, int* rows_of, std::int64_t rows,
                                                   std::int64_t vlo, std::int64_t vl) {
  for (std::int64_t r = cuda::detail::first_index(); r < rows; r += cuda::detail::grid_stride()) {
    const std::int64_t id = std::int64_t(ids[r]) - vlo;
    keys[r] = int(id >= 0 && id < vl ? id : vl);
    rows_of[r] = int(r);
  }
}
/// Thread (p, i) with p the first of a run of equal keys adds the run's dy rows.
template <class T>
TENSOROPT_KERNEL void embedding_table_grad_kernel(const int* keys, const int* rows_of, const T* dy, T* dtable,
                                                  std::int64_t rows, std::int64_t vl, std::int64_t h) {
  for (std::int64_t e = cuda::detail::first_index(); e < rows * h; e += cuda::detail::grid_stride()) {
    const std::int64_t p = e / h, i = e % h;
    const int key = keys[p];
    if (key >= vl || (p > 0 && keys[p - 1] == key)) continue;
    float acc = load(dtable[std::int64_t(key) * h + i]);
    for (std::int64_t q = p; q < rows && keys[q] == key; ++q) acc += load(dy[std::int64_t(rows_of[q]) * h + i]);
    dtable[std::int64_t(key) * h + i] = store<T>(acc);
  }
}
template <class T>
TENSOROPT_KERNEL void embedding_pos_grad_kernel(const T* dy, T* dpos, std::int64_t rows, std::int64_t sl,
                                                std::int64_t h) {
  for (std::int64_t e = cuda::detail::first_index(); e < sl * h; e += cuda::detail::grid_stride()) {
    const std::int64_t j = e / h, i = e % h;
    float acc = load(dpos[e]);
    for (std::int64_t r = j; r < rows; r += sl) acc += load(dy[r * h + i]);
    dpos[e] = store<T>(acc);
  }
}
inline int key_bits(std::int64_t vl) {
  int b = 1;
  while (b < 31 && (std::int64_t(1) << b) <= vl) ++b;
  return b;
}
}  // namespace detail

/// Embedding forward: y[r] = table[ids[r] - vlo] (0 when the id is not in this
/// shard) + pos[r mod sl] when `pos` is given (pass it only on the vlo == 0 shard).
template <Element T>
void embedding_forward(cudaStream_t s, const float* ids, const T* table, const T* pos, T* y, std::int64_t rows,
                       std::int64_t vlo, std::int64_t vl, std::int64_t h, std::int64_t sl) {
  if (rows * h <= 0) return;
  detail::embedding_forward_kernel<T><<<cuda::detail::grid_for(rows * h), cuda::detail::block_size, 0, s>>>(
      ids, table, pos, y, rows, vlo, vl, h, sl);
  TENSOROPT_CUDA_CHECK_LAUNCH();
}

/// Bytes of workspace embedding_backward needs for `rows` ids (a host query).
inline std::size_t embedding_backward_workspace(std::int64_t rows, std::int64_t vl) {
  std::size_t temp = 0;
  TENSOROPT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp, static_cast<const int*>(nullptr),
                                                       static_cast<int*>(nullptr), static_cast<const int*>(nullptr),
                                                       static_cast<int*>(nullptr), int(rows), 0,
                                                       detail::key_bits(vl)));
  return 4 * std::size_t(rows) * sizeof(int) + 256 + temp;  // 256: the alignment of CUB's part
}

/// Embedding backward: dtable[id - vlo] += dy[r] for the rows whose id is in this
/// shard, dpos[j] += sum of dy[r] with r mod sl = j (when `dpos` is given);
/// deterministic (see the top). `workspace` holds embedding_backward_workspace bytes.
template <Element T>
void embedding_backward(cudaStream_t s, const float* ids, const T* dy, T* dtable, T* dpos, std::int64_t rows,
                        std::int64_t vlo, std::int64_t vl, std::int64_t h, std::int64_t sl, void* workspace,
                        std::size_t workspace_bytes) {
  if (rows <= 0 || h <= 0) return;
  int* keys = static_cast<int*>(workspace);
  int* rows_of = keys + rows;
  int* keys_sorted = rows_of + rows;
  int* rows_sorted = keys_sorted + rows;
  const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(rows_sorted + rows);
  void* temp = reinterpret_cast<void*>((end + 255) / 256 * 256);
  std::size_t temp_bytes =
      workspace_bytes - (reinterpret_cast<std::uintptr_t>(temp) - reinterpret_cast<std::uintptr_t>(workspace));
  detail::embedding_keys_kernel<><<<cuda::detail::grid_for(rows), cuda::detail::block_size, 0, s>>>(ids, keys, rows_of,
                                                                                                 rows, vlo, vl);
  TENSOROPT_CUDA_CHECK_LAUNCH();
  TENSOROPT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys_sorted, rows_of, rows_sorted,
                                                       int(rows), 0, detail::key_bits(vl), s));
  detail::embedding_table_grad_kernel<T><<<cuda::detail::grid_for(rows * h), cuda::detail::block_size, 0, s>>>(
      keys_sorted, rows_sorted, dy, dtable, rows, vl, h);
  TENSOROPT_CUDA_CHECK_LAUNCH();
  if (dpos) {
    detail::embedding_pos_grad_kernel<T><<<cuda::detail::grid_for(sl * h), cuda::detail::block_size, 0, s>>>(
        dy, dpos, rows, sl, h);
    TENSOROPT_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace tensoropt::cuda::kernels
