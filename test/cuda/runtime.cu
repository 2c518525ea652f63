// The CUDA runtime pieces, without cuBLAS or NCCL: core types work in device code;
// error checks name the call and where it failed; the caching pool reaches a
// steady state with no driver allocation, counts requested bytes exactly and
// reports out-of-memory in one actionable line; streams and events order and time
// work. Exits 77 (skipped) without a GPU.
#include <tensoropt/core/config.hpp>
#include <tensoropt/core/dtype.hpp>
#include <tensoropt/cuda/memory.cuh>
#include <tensoropt/cuda/stream.cuh>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>
#include "harness.cuh"

namespace cu = tensoropt::cuda;
using harness::darray;

namespace runtime_test {
TENSOROPT_KERNEL void scale(float* x, int n, float a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a * float(tensoropt::size_of(tensoropt::dtype::fp32));
}
}  // namespace runtime_test

namespace {

void core_types_on_device() {
  constexpr int n = 1 << 16;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[std::size_t(i)] = float(i);
  darray<float> d(h);
  runtime_test::scale<<<(n + 255) / 256, 256>>>(d.data(), n, 0.5f);
  TENSOROPT_CUDA_CHECK_LAUNCH();
  const auto got = d.get();
  for (int i = 0; i < n; ++i) CHECK_TRUE(got[std::size_t(i)] == 2.0f * float(i));
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

void errors() {
  try {
    TENSOROPT_CUDA_CHECK(cudaSetDevice(1 << 20));
    CHECK_TRUE(false);
  } catch (const cu::cuda_error& e) {
    const std::string m = e.what();
    CHECK_TRUE(contains(m, "cudaSetDevice(1 << 20)"));
    CHECK_TRUE(contains(m, "runtime.cu:"));
    CHECK_TRUE(contains(m, "cudaErrorInvalidDevice"));
  }
  CHECK_TRUE(cudaGetLastError() == cudaSuccess);  // the failed call left no error behind
  try {
    cu::require_device(cu::device_count());
    CHECK_TRUE(false);
  } catch (const cu::cuda_error& e) {
    CHECK_TRUE(contains(e.what(), "does not exist: this machine has"));
  }
}

void pool_steady_state() {
  cu::stream s(0);
  cu::memory_pool pool(0);
  const std::size_t sizes[] = {1000, 4096, 1 << 20, 123457, 4096, 64, 3 << 20, 999999, 8};
  std::int64_t live_peak = 0;
  auto step = [&] {  // a "training step": allocations that overlap, freed in another order
    std::vector<cu::device_buffer<float>> held;
    std::int64_t live = 0;
    for (std::size_t n : sizes) {
      held.emplace_back(pool, n, s.get());
      live += std::int64_t(n * sizeof(float));
      live_peak = std::max(live_peak, live);
      if (held.size() % 3 == 0) {
        live -= std::int64_t(held.front().bytes());
        held.erase(held.begin());
      }
    }
  };
  step();
  step();
  s.synchronize();
  const auto growths = pool.growth_count();
  const auto reserved = pool.reserved();
  CHECK_TRUE(growths > 0);
  for (int i = 0; i < 50; ++i) step();
  s.synchronize();
  CHECK_TRUE(pool.growth_count() == growths);  // no driver allocation in the steady state
  CHECK_TRUE(pool.reserved() == reserved);
  CHECK_TRUE(pool.requested().current == 0);
  CHECK_TRUE(pool.requested().peak == live_peak);  // requested bytes, exactly
  CHECK_TRUE(pool.high_water() >= std::size_t(live_peak));
  CHECK_TRUE(pool.reserve() > 0);  // the context
  CHECK_TRUE(pool.reserve_entries().size() == 1);
}

void pool_out_of_memory() {
  cu::stream s(0);
  cu::memory_pool pool(0);
  try {
    std::size_t free = 0, total = 0;
    TENSOROPT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    cu::device_buffer<char> huge(pool, total + (std::size_t(1) << 30), s.get());  // more than the device has
    CHECK_TRUE(false);
  } catch (const cu::out_of_memory& e) {
    const std::string m = e.what();
    CHECK_TRUE(contains(m, "out of memory allocating"));
    CHECK_TRUE(contains(m, "pick a plan that needs less memory"));
    CHECK_TRUE(m.find('\n') == std::string::npos);
  }
  CHECK_TRUE(pool.requested().current == 0);
  cu::device_buffer<float> ok = cu::device_buffer<float>::zeroed(pool, 1024, s.get());  // still usable
  std::vector<float> h(1024, 1.f);
  TENSOROPT_CUDA_CHECK(cudaMemcpyAsync(h.data(), ok.data(), ok.bytes(), cudaMemcpyDeviceToHost, s.get()));
  s.synchronize();
  CHECK_TRUE(std::all_of(h.begin(), h.end(), [](float v) { return v == 0.f; }));
}

void streams_and_events() {
  cu::stream a(0), b(0);
  cu::event start(true), stop(true), done;
  darray<float> x(std::size_t(1) << 22);
  start.record(a);
  TENSOROPT_CUDA_CHECK(cudaMemsetAsync(x.data(), 0, x.size() * sizeof(float), a));
  stop.record(a);
  done.record(a);
  done.wait(b);  // b runs after a's memset
  std::vector<float> h(16, 1.f);
  TENSOROPT_CUDA_CHECK(cudaMemcpyAsync(h.data(), x.data(), h.size() * sizeof(float), cudaMemcpyDeviceToHost, b));
  b.synchronize();
  CHECK_TRUE(stop.ready());
  CHECK_TRUE(cu::event::elapsed_ms(start, stop) >= 0.f);
  CHECK_TRUE(std::all_of(h.begin(), h.end(), [](float v) { return v == 0.f; }));
  cu::stream moved = std::move(a);
  CHECK_TRUE(moved.ready());
}

}  // namespace

int main() {
  if (int r = harness::skip_without_device()) return r;
  harness::run("core types in device code", core_types_on_device);
  harness::run("errors name the call and the place", errors);
  harness::run("memory pool: steady state, exact requested bytes", pool_steady_state);
  harness::run("memory pool: out of memory is one clear line", pool_out_of_memory);
  harness::run("streams and events", streams_and_events);
  return harness::finish();
}
