// The CUDA backend: one rank's GPU as the executor sees it (backend.hpp), built
// from the components of cuda/*.cuh: a stream, a caching memory pool, a cuBLASLt
// engine, the device kernels (through cuda_kernels.cuh and, for the MoE ops,
// cuda_kernels_moe.cuh) and a device data plane.
//
// Precision: fp32 (everything fp32, TF32 off in the GEMMs, for equivalence with
// the CPU backend) or bf16-mixed (bf16 activations, weights and gradients; fp32
// optimizer state plus an fp32 master copy of each weight shard, the last state
// array, which the fused SGD/Adam kernels update and round into the bf16 weights).
//
// Memory: every buffer is charged to memory() with the bytes it requested, which
// for an fp32 plan is exactly what the CPU backend charges; memory_report() adds
// the pool's high-water mark and the fixed reserve (context, cuBLASLt workspace)
// kept apart, so predicted and measured memory compare like with like.
//
// Devices: rank r uses GPU (options.device + l) mod the GPU count, where l is r's
// local rank (communicator::local_rank(): its index among the ranks on its machine,
// so every node of an mpirun starts at GPU 0; options.device < 0: from 0;
// device_choice.hpp), so N ranks of a local world share one GPU on a one-GPU machine,
// each with its own stream, pool and cuBLASLt handle, and move buffers through the
// device data plane (cuda_data_plane.cuh); ranks that are processes (MPI) use the
// NCCL data plane (cuda_nccl_plane.cuh), one GPU each. A pipeline stage's
// sub-communicator is looked through to the world it is part of, for both choices.
// Errors are one line: no GPU, out of memory (from the pool), a device that does not
// exist, more processes on a machine than it has GPUs.
#pragma once
#include <cuda_runtime.h>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <tensoropt/cuda/error.cuh>
#include <tensoropt/cuda/gemm.cuh>
#include <tensoropt/cuda/kernels_elementwise.cuh>
#include <tensoropt/cuda/kernels_optimizer.cuh>
#include <tensoropt/cuda/memory.cuh>
#include <tensoropt/cuda/stream.cuh>
#include <vector>
#include "backend.hpp"
#include "cuda_data_plane.cuh"
#include "cuda_kernels.cuh"
#include "cuda_kernels_moe.cuh"
#include "cuda_nccl_plane.cuh"
#include "device_choice.hpp"
#include "sub_communicator.hpp"

namespace tensoropt::runtime {

namespace cuda_detail {

/// Zeroed memory from a rank's pool, in stream order on its stream.
class pool_allocator final : public device_allocator {
 public:
  pool_allocator(cuda::memory_pool& p, cudaStream_t s) : pool_(p), s_(s) {}
  void* allocate(std::size_t bytes) override {
    void* p = pool_.allocate(bytes, s_);
    if (p) TENSOROPT_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, s_));
    return p;
  }
  void deallocate(void* p, std::size_t bytes) noexcept override { pool_.deallocate(p, bytes, s_); }

 private:
  cuda::memory_pool& pool_;
  cudaStream_t s_;
};

/// A region copy as a kernel parameter (std::array is host-only).
struct region_geometry {
  int rank = 0;
  bool add = false;
  std::int64_t slo[max_tensor_rank], slen[max_tensor_rank], dlo[max_tensor_rank], dlen[max_tensor_rank],
      lo[max_tensor_rank], len[max_tensor_rank];
};

/// dst box <- (or +=) src box over the region: detail::copy_region of shard_box.hpp on the device.
template <class T>
TENSOROPT_KERNEL void region_kernel(const T* src, T* dst, region_geometry g, std::int64_t n) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t rest = i, so = 0, dof = 0, stride_s = 1, stride_d = 1;
    for (int a = g.rank - 1; a >= 0; --a) {
      const std::int64_t idx = rest % g.len[a] + g.lo[a];
      rest /= g.len[a];
      so += (idx - g.slo[a]) * stride_s;
      dof += (idx - g.dlo[a]) * stride_d;
      stride_s *= g.slen[a];
      stride_d *= g.dlen[a];
    }
    dst[dof] = g.add ? cuda::store<T>(cuda::load(dst[dof]) + cuda::load(src[so])) : src[so];
  }
}

}  // namespace cuda_detail

/// One rank's GPU (see the opening comment).
class cuda_backend final : public cuda_backend_base {
 public:
  /// The backend of the rank whose local rank is `rank` (device chosen as described at the
  /// top); `processes`: the ranks are processes (one GPU each), not threads of one
  /// process. Throws cuda::cuda_error when there is no GPU, the device does not exist or
  /// processes outnumber the GPUs.
  cuda_backend(const backend_options& o, int rank, bool processes = false)
      : cuda_backend_base(o.prec), device_(pick_device(o, rank, processes)), stream_(device_), pool_(device_),
        alloc_(pool_, stream_.get()), gemm_(pool_, stream_.get()), timeout_(o.timeout) {
    if (o.prec.compute != dtype::fp32 && o.prec.compute != dtype::bf16)
      throw invalid_argument("the cuda backend runs fp32 or bf16-mixed, not " + std::string(o.prec.name));
  }
  ~cuda_backend() override { (void)cudaStreamSynchronize(stream_.get()); }

  std::string name() const override { return "cuda"; }
  memory_space space() const override { return memory_space::device; }
  cudaStream_t stream() const override { return stream_.get(); }
  cuda::gemm_engine& gemm() override { return gemm_; }
  int device() const { return device_; }
  cuda::memory_pool& pool() { return pool_; }

  buffer make_buffer(std::size_t n, dtype t, bool counted) override {
    return buffer(n, t, alloc_, counted ? &stats_ : nullptr);
  }
  buffer upload(std::span<const float> host, buffer_role r = buffer_role::activation) override {
    buffer b = allocate(host.size(), r);
    write(b, host);
    return b;
  }
  std::vector<float> download(const buffer& b) override {
    std::vector<float> host(b.size());
    if (b.space() == memory_space::host) {
      if (b.size()) std::copy_n(b.data(), b.size(), host.data());
      return host;
    }
    if (b.type() == dtype::fp32) {
      TENSOROPT_CUDA_CHECK(cudaMemcpyAsync(host.data(), b.raw(), b.bytes(), cudaMemcpyDeviceToHost, stream()));
    } else {
      buffer f = scratch(b.size(), dtype::fp32);
      cuda::kernels::cast(stream(), b.as<cuda::bf16>(), f.as<float>(), std::int64_t(b.size()));
      TENSOROPT_CUDA_CHECK(cudaMemcpyAsync(host.data(), f.raw(), f.bytes(), cudaMemcpyDeviceToHost, stream()));
      TENSOROPT_CUDA_CHECK(cudaStreamSynchronize(stream()));
    }
    TENSOROPT_CUDA_CHECK(cudaStreamSynchronize(stream()));
    return host;
  }
  void write(buffer& dst, std::span<const float> host) override {
    if (dst.size() != host.size())
      throw invalid_argument("cuda backend write: " + std::to_string(host.size()) + " values into a buffer of " +
                             std::to_string(dst.size()));
    if (host.empty()) return;
    if (dst.type() == dtype::fp32) {
      TENSOROPT_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), host.data(), dst.bytes(), cudaMemcpyHostToDevice, stream()));
    } else {
      buffer f = scratch(host.size(), dtype::fp32);
      TENSOROPT_CUDA_CHECK(cudaMemcpyAsync(f.raw(), host.data(), f.bytes(), cudaMemcpyHostToDevice, stream()));
      cuda::kernels::cast(stream(), f.as<float>(), dst.as<cuda::bf16>(), std::int64_t(host.size()));
    }
    TENSOROPT_CUDA_CHECK(cudaStreamSynchronize(stream()));  // the host span may go away
  }
  buffer copy(const buffer& b) override {
    buffer out = make_buffer(b.size(), b.type(), true);
    if (b.bytes())
      TENSOROPT_CUDA_CHECK(cudaMemcpyAsync(out.raw(), b.raw(), b.bytes(), cudaMemcpyDeviceToDevice, stream()));
    return out;
  }
  void accumulate(buffer& acc, const buffer& x) override {
    if (acc.size() != x.size() || acc.type() != x.type())
      throw invalid_argument("cuda backend accumulate: buffers differ in size or dtype");
    cuda_glue::dispatch(acc.type(), [&]<class T>(T) {
      cuda::kernels::add(stream(), acc.as<T>(), x.as<T>(), acc.as<T>(), std::int64_t(acc.size()));
    });
  }
  void copy_region(const buffer& src, const shard_box& sb, buffer& dst, const shard_box& db, const extents_t& lo,
                   const extents_t& len, int rank, bool add) override {
    std::int64_t n = 1;
    for (int a = 0; a < rank; ++a) n *= len[a];
    if (n <= 0) return;
    cuda_detail::region_geometry g;
    g.rank = rank;
    g.add = add;
    for (int a = 0; a < max_tensor_rank; ++a) {
      g.slo[a] = sb.lo[a];
      g.slen[a] = sb.len[a];
      g.dlo[a] = db.lo[a];
      g.dlen[a] = db.len[a];
      g.lo[a] = lo[a];
      g.len[a] = len[a];
    }
    cuda_glue::dispatch(dst.type(), [&]<class T>(T) {
      cuda_detail::region_kernel<T><<<unsigned(std::min<std::int64_t>((n + 255) / 256, 65535)), 256, 0, stream()>>>(
          src.as<T>(), dst.as<T>(), g, n);
      TENSOROPT_CUDA_CHECK_LAUNCH();
    });
  }
  kernel kernel_of(op_kind k) override {
    if (const kernel moe = cuda_glue::moe_kernel_of(k); moe.forward) return moe;
    return cuda_glue::kernel_of(k);
  }
  int extra_states() const override { return prec_.compute == dtype::fp32 ? 0 : 1; }
  void optimizer_update(const optimizer_options& o, std::int64_t t, buffer& w, const buffer& g,
                        std::vector<buffer>& state) override {
    const auto st = optimizer_step::at(o.lr, o.momentum, o.beta1, o.beta2, o.eps, t);
    const bool mixed = extra_states() > 0;
    float* master = mixed ? state.back().as<float>() : w.as<float>();
    cuda::bf16* copy = mixed ? w.as<cuda::bf16>() : nullptr;
    const auto n = std::int64_t(w.size());
    cuda_glue::dispatch(g.type(), [&]<class G>(G) {
      if (o.type == optimizer_options::kind::sgd)
        cuda::kernels::sgd_update(stream(), st, master, state[0].as<float>(), g.as<G>(), copy, n);
      else
        cuda::kernels::adam_update(stream(), st, master, state[0].as<float>(), state[1].as<float>(), g.as<G>(), copy,
                                   n);
    });
  }
  /// Ranks that are threads of one process (a local world, any number per GPU, or a
  /// sub-communicator of one): the device data plane; processes (MPI): NCCL, one GPU
  /// per rank.
  std::unique_ptr<data_plane> make_data_plane(communicator& c) override {
    if (threads_of_one_process(c)) return std::make_unique<cuda_local_data_plane>(c, *this, timeout_);
    return std::make_unique<cuda_nccl_data_plane>(c, stream(), device_, timeout_, &pool_);
  }
  /// Whether the ranks of `c` are threads of one process (a local world).
  static bool threads_of_one_process(communicator& c) { return dynamic_cast<local_comm*>(&root_of(c)) != nullptr; }
  void synchronize() override { stream_.synchronize(); }
  void bind() override { TENSOROPT_CUDA_CHECK(cudaSetDevice(device_)); }
  device_memory memory_report() const override {
    return {stats_.peak, std::int64_t(pool_.high_water()), std::int64_t(pool_.reserve())};
  }
  void reset_peak() override {
    stats_.reset_peak();
    pool_.reset_peak();
  }
  /// How long the device data plane waits for a peer before it throws.
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }

 private:
  static int pick_device(const backend_options& o, int rank, bool processes) {
    int d = 0;
    try {
      d = choose_device(cuda::device_count(), o.device, rank, processes);
    } catch (const runtime_error& e) {
      throw cuda::cuda_error(e.what());
    }
    TENSOROPT_CUDA_CHECK(cudaSetDevice(d));
    return d;
  }

  int device_;
  cuda::stream stream_;
  cuda::memory_pool pool_;
  cuda_detail::pool_allocator alloc_;
  cuda::gemm_engine gemm_;
  std::chrono::milliseconds timeout_;
};

/// The factory make_backend() calls for "cuda" (registered by the tensoropt::cuda
/// target's source, src/tensoropt_cuda.cu).
inline std::unique_ptr<backend> make_cuda_backend(const backend_options& o, communicator& c) {
  return std::make_unique<cuda_backend>(o, c.local_rank(), !cuda_backend::threads_of_one_process(c));
}

}  // namespace tensoropt::runtime
