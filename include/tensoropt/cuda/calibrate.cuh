// The GPU calibration's measurements (runtime/gpu_calibration.hpp describes what
// is measured and how it becomes a device preset file): cuBLASLt GEMM rates of a
// few shapes in bf16 and fp32, the GEMM table by contraction length (the device
// file's "gemm-shapes"), device-to-device copy bandwidth, the launch cost of an
// empty kernel, the device's memory and, with >= 2 GPUs, NCCL all-reduce bus
// bandwidth. src/tensoropt_cuda.cu registers measure_gpu with
// runtime::register_gpu_calibrator so g++ programs reach it.
//
// Timing: each figure is the best, over 5 samples, of the event-timed duration of
// a batch of calls divided by the batch size; the batch is sized from one warm-up
// call so that the 5 samples take about `seconds_per_test` (at least 1 call per
// sample). Buffers are filled (cudaMemset) before timing so that no page is touched
// for the first time inside a sample.
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>
#include "../runtime/gpu_calibration.hpp"
#include "error.cuh"
#include "gemm.cuh"
#include "libraries.cuh"
#include "launch.cuh"
#include "memory.cuh"
#include "stream.cuh"

namespace tensoropt::cuda {

namespace detail {
template <int>
__global__ void calibrate_empty_kernel() {}

/// Seconds per call of `f` (which enqueues on `s`): see the file comment.
template <class F>
double seconds_per_call(cudaStream_t s, double budget, F&& f) {
  event a(true), b(true);
  f();  // warm-up (plans, caches)
  TENSOROPT_CUDA_CHECK(cudaStreamSynchronize(s));
  a.record(s);
  f();
  b.record(s);
  b.synchronize();
  const double one = std::max(1e-7, double(event::elapsed_ms(a, b)) * 1e-3);
  const long calls = std::clamp(long(budget / 5 / one), 1L, 100000L);
  double best = 1e30;
  for (int sample = 0; sample < 5; ++sample) {
    a.record(s);
    for (long i = 0; i < calls; ++i) f();
    b.record(s);
    b.synchronize();
    best = std::min(best, double(event::elapsed_ms(a, b)) * 1e-3 / double(calls));
  }
  return best;
}

template <Element T>
double gemm_rate(memory_pool& pool, gemm_engine& e, cudaStream_t s, long m, long n, long k, double budget) {
  device_buffer<T> a(pool, std::size_t(m) * k, s), b(pool, std::size_t(k) * n, s), c(pool, std::size_t(m) * n, s);
  TENSOROPT_CUDA_CHECK(cudaMemsetAsync(a.data(), 0, a.bytes(), s));
  TENSOROPT_CUDA_CHECK(cudaMemsetAsync(b.data(), 0, b.bytes(), s));
  gemm_args<T> g;
  g.m = m, g.n = n, g.k = k;
  g.a = a.data(), g.b = b.data(), g.c = c.data();
  const double t = seconds_per_call(s, budget, [&] { e.run(g); });
  return 2.0 * double(m) * double(n) * double(k) / t;
}

#ifdef TENSOROPT_HAS_NCCL
/// All-reduce bus bandwidth over devices 0..n-1 (one process), bytes/s per device.
inline double all_reduce_busbw(int n, std::size_t bytes, double budget) {
  std::vector<ncclComm_t> comms(n);
  std::vector<int> devs(n);
  for (int i = 0; i < n; ++i) devs[i] = i;
  TENSOROPT_NCCL_CHECK(nccl_api().ncclCommInitAll(comms.data(), n, devs.data()));
  const std::size_t count = bytes / sizeof(float);
  std::vector<float*> bufs(n, nullptr);
  std::vector<cudaStream_t> streams(n, nullptr);
  auto release = [&] {
    for (int i = 0; i < n; ++i) {
      (void)cudaSetDevice(i);
      if (streams[i]) (void)cudaStreamSynchronize(streams[i]), (void)cudaStreamDestroy(streams[i]);
      if (bufs[i]) (void)cudaFree(bufs[i]);
      (void)nccl_api().ncclCommDestroy(comms[i]);
    }
  };
  try {
    for (int i = 0; i < n; ++i) {
      TENSOROPT_CUDA_CHECK(cudaSetDevice(i));
      TENSOROPT_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
      TENSOROPT_CUDA_CHECK(cudaMalloc(&bufs[i], count * sizeof(float)));
      TENSOROPT_CUDA_CHECK(cudaMemsetAsync(bufs[i], 0, count * sizeof(float), streams[i]));
    }
    auto once = [&] {
      TENSOROPT_NCCL_CHECK(nccl_api().ncclGroupStart());
      for (int i = 0; i < n; ++i)
        TENSOROPT_NCCL_CHECK(
            nccl_api().ncclAllReduce(bufs[i], bufs[i], count, ncclFloat, ncclSum, comms[i], streams[i]));
      TENSOROPT_NCCL_CHECK(nccl_api().ncclGroupEnd());
      for (int i = 0; i < n; ++i) {
        TENSOROPT_CUDA_CHECK(cudaSetDevice(i));
        TENSOROPT_CUDA_CHECK(cudaStreamSynchronize(streams[i]));
      }
    };
    using clock = std::chrono::steady_clock;
    once();  // warm-up: connections
    double best = 1e30, spent = 0;
    for (int r = 0; r < 20 && (r < 3 || spent < budget); ++r) {
      const auto t0 = clock::now();
      once();
      const double dt = std::chrono::duration<double>(clock::now() - t0).count();
      best = std::min(best, dt);
      spent += dt;
    }
    release();
    return 2.0 * double(n - 1) / double(n) * double(count * sizeof(float)) / best;
  } catch (...) {
    release();
    throw;
  }
}
#endif
}  // namespace detail

/// The GEMM shapes measured (m, n, k): square, and a GPT layer's QKV / MLP GEMMs
/// (tokens x hidden x 3 hidden, tokens x 4 hidden x hidden at hidden 4096).
inline constexpr long calibration_shapes[][3] = {
    {1024, 1024, 1024}, {4096, 4096, 4096}, {8192, 12288, 4096}, {8192, 4096, 16384}};

/// The device file's GEMM table (m = n = calibration_table_mn, k from 128 to 16384):
/// one shape per contraction length, large enough in m and n that the waves of
/// tiles fill the GPU, so the rate tracks the per-tile cost over k.
inline constexpr long calibration_table_mn = 8192;
inline constexpr long calibration_table_k[] = {128, 256, 512, 1024, 2048, 4096, 8192, 16384};

/// Measures device `o.device` (see runtime/gpu_calibration.hpp). Returns false with
/// `why` when there is no GPU; throws cuda_error when a measurement fails.
inline bool measure_gpu(const runtime::gpu_calibrate_options& o, runtime::gpu_calibration& c, std::string& why) {
  c = {};
  c.gpus = device_count();
  if (c.gpus == 0) {
    why = "no CUDA device found (no GPU or no NVIDIA driver): nothing measured";
    return false;
  }
  require_device(o.device);
  device_guard guard(o.device);
  cudaDeviceProp prop{};
  TENSOROPT_CUDA_CHECK(cudaGetDeviceProperties(&prop, o.device));
  c.name = prop.name;
  std::size_t free_b = 0, total_b = 0;
  TENSOROPT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  c.capacity_bytes = double(total_b);
  const double budget = std::max(1e-3, o.seconds_per_test);
  {
    stream s(o.device);
    memory_pool pool(o.device);
    gemm_engine e(pool, s);
    for (const auto& sh : calibration_shapes) {
      const double bf = detail::gemm_rate<bf16>(pool, e, s, sh[0], sh[1], sh[2], budget);
      const double fp = detail::gemm_rate<float>(pool, e, s, sh[0], sh[1], sh[2], budget);
      c.gemms.push_back({"bf16", sh[0], sh[1], sh[2], bf});
      c.gemms.push_back({"fp32", sh[0], sh[1], sh[2], fp});
      c.bf16_flops = std::max(c.bf16_flops, bf);
      c.fp32_flops = std::max(c.fp32_flops, fp);
    }
    for (const long k : calibration_table_k) {
      const long mn = calibration_table_mn;
      const double bf = detail::gemm_rate<bf16>(pool, e, s, mn, mn, k, budget);
      const double fp = detail::gemm_rate<float>(pool, e, s, mn, mn, k, budget);
      c.shape_table.push_back({"bf16", mn, mn, k, bf});
      c.shape_table.push_back({"fp32", mn, mn, k, fp});
      c.bf16_flops = std::max(c.bf16_flops, bf);
      c.fp32_flops = std::max(c.fp32_flops, fp);
    }
    const std::size_t bytes = std::min(o.copy_bytes, free_b / 4) & ~std::size_t(255);
    if (bytes < (std::size_t(1) << 20)) throw cuda_error("GPU calibration: under 4 MiB of free device memory");
    device_buffer<std::uint8_t> src(pool, bytes, s), dst(pool, bytes, s);
    TENSOROPT_CUDA_CHECK(cudaMemsetAsync(src.data(), 1, bytes, s));
    TENSOROPT_CUDA_CHECK(cudaMemsetAsync(dst.data(), 0, bytes, s));
    const double t = detail::seconds_per_call(s, budget, [&] {
      TENSOROPT_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, s));
    });
    c.copy_bandwidth = 2.0 * double(bytes) / t;
    // launch cost: host wall time per back-to-back launch (what the CPU spends and
    // the GPU's gap between two tiny kernels, whichever is larger)
    constexpr int launches = 2000;
    auto burst = [&] {
      for (int i = 0; i < launches; ++i) detail::calibrate_empty_kernel<0><<<1, 1, 0, s>>>();
      TENSOROPT_CUDA_CHECK_LAUNCH();
      s.synchronize();
    };
    burst();
    double best = 1e30;
    for (int r = 0; r < 5; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      burst();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    c.launch_seconds = best / launches;
  }
#ifdef TENSOROPT_HAS_NCCL
  if (c.gpus >= 2) c.all_reduce_busbw = detail::all_reduce_busbw(c.gpus, o.all_reduce_bytes, budget);
#endif
  return true;
}

}  // namespace tensoropt::cuda
