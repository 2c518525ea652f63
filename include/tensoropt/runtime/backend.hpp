// The CPU backend: per-device memory accounting, counted fp32 buffers and the
// BLAS (CBLAS / OpenBLAS) GEMM every matrix product of the runtime goes through.
//
// A backend is memory plus kernels. Every buffer the runtime allocates for a device
// is charged to that device's `memory_stats` (current and peak bytes), so after a
// step each device can report the most it held and the planner's prediction can be
// compared with it. The CUDA backend provides the same two things.
#pragma once
#include <cblas.h>
#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>
#include "../core/error.hpp"

namespace tensoropt::runtime {

/// Bytes a device holds now and the most it held since the last reset.
struct memory_stats {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  void add(std::int64_t b) {
    current += b;
    peak = std::max(peak, current);
  }
  void reset_peak() { peak = current; }
};

namespace detail {
/// A per-thread cache of freed float arrays, by exact length: a training step
/// allocates the same sizes every time, and reusing warm memory avoids the page
/// faults of fresh allocations (measured: ~2 % of a 1-device train_gpt step in
/// page faults under memset). Bounded (64 MiB per thread); the accounting in
/// memory_stats is unchanged (it counts live buffers, not the cache).
class float_cache {
 public:
  float_cache() = default;
  float_cache(const float_cache&) = delete;
  float_cache& operator=(const float_cache&) = delete;
  ~float_cache() {
    for (auto& [n, v] : free_)
      for (float* p : v) delete[] p;
  }
  /// This thread's cache; null once the thread's cache was destroyed (at thread
  /// exit), when arrays are freed directly.
  static float_cache* local() {
    struct holder {
      float_cache c;
      bool alive = true;
      ~holder() { alive = false; }
    };
    thread_local holder h;
    return h.alive ? &h.c : nullptr;
  }
  static float* get_local(std::size_t n) {
    auto* c = local();
    return c ? c->get(n) : new float[n]();
  }
  /// n zeroed floats.
  float* get(std::size_t n) {
    auto it = free_.find(n);
    if (it == free_.end() || it->second.empty()) return new float[n]();
    float* p = it->second.back();
    it->second.pop_back();
    held_ -= n;
    std::fill_n(p, n, 0.f);
    return p;
  }
  void put(float* p, std::size_t n) {
    if (held_ + n > limit) {
      delete[] p;
      return;
    }
    free_[n].push_back(p);
    held_ += n;
  }
  static constexpr std::size_t limit = std::size_t(64) << 18;  // floats (64 MiB)

 private:
  std::unordered_map<std::size_t, std::vector<float*>> free_;
  std::size_t held_ = 0;
};
struct cached_delete {
  std::size_t n = 0;
  void operator()(float* p) const {
    if (auto* c = float_cache::local()) c->put(p, n);
    else delete[] p;
  }
};
}  // namespace detail

/// An fp32 array charged to one device's memory_stats (move-only).
class buffer {
 public:
  buffer() = default;
  /// `n` zero-initialized floats charged to `stats` (which may be null: uncounted).
  buffer(std::size_t n, memory_stats* stats)
      : data_(n ? detail::float_cache::get_local(n) : nullptr, detail::cached_delete{n}), size_(n), stats_(stats) {
    if (stats_) stats_->add(std::int64_t(n * sizeof(float)));
  }
  buffer(std::span<const float> v, memory_stats* stats) : buffer(v.size(), stats) {
    std::copy(v.begin(), v.end(), data_.get());
  }
  buffer(buffer&& o) noexcept { swap(o); }
  buffer& operator=(buffer&& o) noexcept {
    buffer t(std::move(o));
    swap(t);
    return *this;
  }
  ~buffer() {
    if (stats_) stats_->add(-std::int64_t(size_ * sizeof(float)));
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  float& operator[](std::size_t i) { return data_[i]; }
  float operator[](std::size_t i) const { return data_[i]; }
  std::span<float> span() { return {data_.get(), size_}; }
  std::span<const float> span() const { return {data_.get(), size_}; }
  memory_stats* stats() const { return stats_; }
  void fill(float v) { std::fill_n(data_.get(), size_, v); }

 private:
  void swap(buffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(stats_, o.stats_);
  }
  std::unique_ptr<float[], detail::cached_delete> data_;
  std::size_t size_ = 0;
  memory_stats* stats_ = nullptr;
};

/// A backend owns a device's memory accounting and allocates counted buffers.
template <class B>
concept Backend = requires(B& b, std::size_t n) {
  { b.allocate(n) } -> std::same_as<buffer>;
  { b.memory() } -> std::convertible_to<const memory_stats&>;
};

/// The CPU backend of one device: counted allocations; kernels are the functions of
/// kernels.hpp, GEMMs through CBLAS.
class cpu_backend {
 public:
  buffer allocate(std::size_t n) { return buffer(n, &stats_); }
  buffer copy(std::span<const float> v) { return buffer(v, &stats_); }
  const memory_stats& memory() const { return stats_; }
  memory_stats& memory() { return stats_; }

 private:
  memory_stats stats_;
};
static_assert(Backend<cpu_backend>);

/// Makes the BLAS single-threaded (once per process): the runtime already runs one
/// thread per device, and BLAS threads on top of them oversubscribe the cores
/// (measured: 6x slower steps of train_gpt on 2 cores with OpenBLAS's own threads).
inline void single_threaded_blas() {
#ifdef OPENBLAS_CONST  // OpenBLAS's cblas.h
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
#endif
}

/// C[m x n] = alpha * op(A) op(B) + beta * C, row-major, through CBLAS.
/// op(A) is m x k (A stored k x m when trans_a), op(B) is k x n (B stored n x k when
/// trans_b). lda/ldb/ldc default to the dense row strides.
inline void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                 const float* a, const float* b, float beta, float* c, std::int64_t lda = 0,
                 std::int64_t ldb = 0, std::int64_t ldc = 0) {
  if (m == 0 || n == 0) return;
  if (lda == 0) lda = trans_a ? m : k;
  if (ldb == 0) ldb = trans_b ? k : n;
  if (ldc == 0) ldc = n;
  if (k == 0) {
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.f : beta * c[i * ldc + j];
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

}  // namespace tensoropt::runtime
