// The CUDA runtime pieces: error checks name the call and where it failed; the
// caching pool reaches a steady state with no driver allocation, counts requested
// bytes exactly and reports out-of-memory in one actionable line; streams and
// events order and time work; cuBLASLt GEMMs (row-major, transposes, strided
// batches, bias / GELU epilogues, bf16 and fp32 with TF32 off) match a host
// reference, cache their plans and refuse misaligned operands.
// Exits 77 (skipped) without a GPU.
#include <tensoropt/cuda/gemm.cuh>
#include <tensoropt/cuda/memory.cuh>
#include <tensoropt/cuda/stream.cuh>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <string>
#include <vector>
#include "harness.cuh"
#include "reference.hpp"

namespace cu = tensoropt::cuda;
using harness::darray;
using harness::random;
using ref::vec;

namespace {

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
  {
    cu::gemm_engine g(pool, s.get());
    CHECK_TRUE(pool.reserve_entries().size() == 2);
    CHECK_TRUE(pool.reserve_entries()[1].bytes == cu::gemm_engine::default_workspace);
  }
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

template <class T>
void gemm_case(cu::gemm_engine& e, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch,
               cu::epilogue ep, float beta) {
  constexpr bool bf = harness::is_bf16<T>;
  const vec a = random(std::size_t(batch * m * k), -1, 1, bf, 1), b = random(std::size_t(batch * k * n), -1, 1, bf, 2),
            c0 = random(std::size_t(batch * m * n), -1, 1, bf, 3), bias = random(std::size_t(n), -1, 1, bf, 4);
  vec want = c0;
  const std::int64_t lda = ta ? m : k, ldb = tb ? k : n;
  for (std::int64_t i = 0; i < batch; ++i) {
    ref::gemm(ta, tb, m, n, k, 1.f, a.data() + i * m * k, lda, b.data() + i * k * n, ldb, beta,
              want.data() + i * m * n, n, false);
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t j = 0; j < n; ++j) {
        float& v = want[std::size_t(i * m * n + r * n + j)];
        if (ep == cu::epilogue::bias || ep == cu::epilogue::bias_gelu) v += bias[std::size_t(j)];
        if (ep == cu::epilogue::gelu || ep == cu::epilogue::bias_gelu)
          v = float(0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * double(v) * v * v))));
        v = ref::q(v, bf);
      }
  }
  darray<T> da(a), db(b), dc(c0), dbias(bias);
  if (beta == 0.f) dc.poison();
  e.run(cu::gemm_args<T>{.trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k, .a = da.data(), .b = db.data(),
                         .beta = beta, .c = dc.data(), .batch = batch, .stride_a = m * k, .stride_b = k * n,
                         .stride_c = m * n, .epilogue = ep, .bias = dbias.data()});
  // Error bound scaled by sum |a| |b| + |beta c| (the rounding of any summation
  // order): fp32 with TF32 would be off by ~5e-4 of it at k = 256 and fails 1e-5.
  vec mag(want.size());
  {
    vec aa(a), bb(b), cc(c0);
    for (auto* v : {&aa, &bb, &cc})
      for (auto& x : *v) x = std::fabs(x);
    for (std::int64_t i = 0; i < batch; ++i)
      ref::gemm(ta, tb, m, n, k, 1.f, aa.data() + i * m * k, lda, bb.data() + i * k * n, ldb, std::fabs(beta),
                cc.data() + i * m * n, n, false);
    for (std::size_t i = 0; i < mag.size(); ++i) mag[i] = std::max(cc[i], std::fabs(want[i]));
  }
  const bool gelu = ep == cu::epilogue::gelu || ep == cu::epilogue::bias_gelu;
  const double rt = harness::rtol<T> * (gelu && !bf ? 10 : 1), at = harness::atol<T>;
  const vec got = dc.get();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(double(got[i]) - want[i]) <= at + rt * mag[i])) ++bad;
  if (bad) std::printf("  %zu of %zu values off (m %lld n %lld k %lld batch %lld)\n", bad, got.size(), (long long)m,
                       (long long)n, (long long)k, (long long)batch);
  CHECK_TRUE(bad == 0);
}

template <class T>
void gemms() {
  cu::stream s(0);
  cu::memory_pool pool(0);
  cu::gemm_engine e(pool, s.get());
  for (bool ta : {false, true})
    for (bool tb : {false, true}) gemm_case<T>(e, ta, tb, 37, 29, 256, 1, cu::epilogue::none, 0.f);
  const auto plans = e.cached_plans();
  gemm_case<T>(e, false, false, 37, 29, 256, 1, cu::epilogue::none, 0.f);
  CHECK_TRUE(e.cached_plans() == plans);  // same shape: the cached algorithm
  gemm_case<T>(e, false, true, 16, 24, 40, 5, cu::epilogue::none, 1.f);  // strided batch, accumulate
  gemm_case<T>(e, false, false, 32, 48, 64, 1, cu::epilogue::bias, 0.f);
  gemm_case<T>(e, false, false, 32, 48, 64, 1, cu::epilogue::bias_gelu, 0.f);
  gemm_case<T>(e, true, false, 7, 5, 3, 1, cu::epilogue::none, 0.f);  // odd sizes: less than 16-byte alignment
  darray<T> buf(4096);
  const T* off = reinterpret_cast<const T*>(reinterpret_cast<const char*>(buf.data()) + 1);
  try {
    e.run(cu::gemm_args<T>{.m = 4, .n = 4, .k = 4, .a = off, .b = buf.data(), .c = buf.data()});
    CHECK_TRUE(false);
  } catch (const tensoropt::invalid_argument& x) {
    CHECK_TRUE(contains(x.what(), "operand A is not aligned"));
  }
}

}  // namespace

int main() {
  if (int r = harness::skip_without_device()) return r;
  harness::run("errors name the call and the place", errors);
  harness::run("memory pool: steady state, exact requested bytes", pool_steady_state);
  harness::run("memory pool: out of memory is one clear line", pool_out_of_memory);
  harness::run("streams and events", streams_and_events);
  harness::run("cuBLASLt GEMM fp32 (TF32 off: k = 256 within 1e-5)", gemms<float>);
  harness::run("cuBLASLt GEMM bf16", gemms<cu::bf16>);
  return harness::finish();
}
