// Counted buffers of the runtime: an array with a dtype and a memory space (host
// or device), charged to one device's memory_stats.
//
// Every buffer the runtime allocates for a device is charged to that device's
// `memory_stats` with the bytes it requested (elements x dtype size), so after a
// step each device can report the most it held and the planner's prediction can be
// compared with it; a caching pool's own high-water mark is a different figure and
// is reported by the backend that owns the pool.
//
// Host fp32 buffers (the CPU backend's) come from a per-thread cache of freed arrays
// and are zero-initialized; device buffers come from an allocator the backend
// provides (e.g. a CUDA caching pool) and are released to it. A buffer never
// includes BLAS or CUDA headers: it is plain memory plus bookkeeping.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>
#include "../core/dtype.hpp"
#include "../core/error.hpp"

namespace tensoropt::runtime {

/// Where a buffer's bytes live.
enum class memory_space : std::uint8_t { host, device };

/// Bytes a device holds now and the most it held since the last reset; with the
/// site (what the device runs: the executor numbers the forward of op j as j, its
/// backward as ops + j, the gradient sync and update as 2 * ops) where the peak was
/// reached and the most held during each site, so a peak can be attributed.
struct memory_stats {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  int site = -1;       ///< what runs now (-1: not set)
  int peak_site = -1;  ///< where `peak` was reached
  std::vector<std::int64_t> site_peak;  ///< the most held during each site (sized by the executor)
  void add(std::int64_t b) {
    current += b;
    if (current > peak) {
      peak = current;
      peak_site = site;
    }
    note();
  }
  /// Marks the start of site `s`.
  void enter(int s) {
    site = s;
    note();
  }
  void reset_peak() {
    peak = current;
    peak_site = site;
    std::fill(site_peak.begin(), site_peak.end(), std::int64_t(0));
  }

 private:
  void note() {
    if (site >= 0 && std::size_t(site) < site_peak.size())
      site_peak[std::size_t(site)] = std::max(site_peak[std::size_t(site)], current);
  }
};

/// Where a backend's device buffers come from (a caching pool of one device).
class device_allocator {
 public:
  virtual ~device_allocator() = default;
  /// `bytes` of zeroed device memory; throws runtime_error when the device is full.
  virtual void* allocate(std::size_t bytes) = 0;
  /// Returns memory obtained from allocate() with the same size.
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
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
  static void put_local(float* p, std::size_t n) {
    if (auto* c = local()) c->put(p, n);
    else delete[] p;
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
}  // namespace detail

/// An array of `size()` elements of `type()` in `space()`, charged to one device's
/// memory_stats (move-only). Host fp32 buffers allow element access (`operator[]`,
/// `span()`); device buffers are read and written through their backend.
class buffer {
 public:
  buffer() = default;
  /// `n` zero-initialized host fp32 elements charged to `stats` (null: uncounted).
  buffer(std::size_t n, memory_stats* stats) : size_(n), stats_(stats) {
    data_ = n ? detail::float_cache::get_local(n) : nullptr;
    charge(+1);
  }
  buffer(std::span<const float> v, memory_stats* stats) : buffer(v.size(), stats) {
    std::copy(v.begin(), v.end(), data());
  }
  /// `n` elements of `t` from `alloc` (zeroed by it), charged to `stats`.
  buffer(std::size_t n, dtype t, device_allocator& alloc, memory_stats* stats)
      : size_(n), type_(t), space_(memory_space::device), stats_(stats), alloc_(&alloc) {
    data_ = n ? alloc.allocate(bytes()) : nullptr;
    charge(+1);
  }
  buffer(buffer&& o) noexcept { swap(o); }
  buffer& operator=(buffer&& o) noexcept {
    buffer t(std::move(o));
    swap(t);
    return *this;
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() { release(); }

  std::size_t size() const { return size_; }
  dtype type() const { return type_; }
  memory_space space() const { return space_; }
  /// Bytes requested (what memory_stats is charged).
  std::size_t bytes() const { return size_ * std::size_t(size_of(type_)); }
  memory_stats* stats() const { return stats_; }
  void* raw() { return data_; }
  const void* raw() const { return data_; }
  /// The elements as T (device pointers for device buffers).
  template <class T>
  T* as() {
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* as() const {
    return static_cast<const T*>(data_);
  }

  // Host fp32 access (the CPU backend and its kernels).
  float* data() { return static_cast<float*>(data_); }
  const float* data() const { return static_cast<const float*>(data_); }
  float& operator[](std::size_t i) { return data()[i]; }
  float operator[](std::size_t i) const { return data()[i]; }
  std::span<float> span() { return {data(), size_}; }
  std::span<const float> span() const { return {data(), size_}; }
  void fill(float v) { std::fill_n(data(), size_, v); }
  /// Whether element access is valid (host fp32).
  bool host_fp32() const { return space_ == memory_space::host && type_ == dtype::fp32; }

 private:
  void charge(int sign) {
    if (stats_) stats_->add(sign * std::int64_t(bytes()));
  }
  void release() noexcept {
    charge(-1);
    if (!data_) return;
    if (alloc_) alloc_->deallocate(data_, bytes());
    else detail::float_cache::put_local(static_cast<float*>(data_), size_);
    data_ = nullptr;
  }
  void swap(buffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(type_, o.type_);
    std::swap(space_, o.space_);
    std::swap(stats_, o.stats_);
    std::swap(alloc_, o.alloc_);
  }
  void* data_ = nullptr;
  std::size_t size_ = 0;
  dtype type_ = dtype::fp32;
  memory_space space_ = memory_space::host;
  memory_stats* stats_ = nullptr;
  device_allocator* alloc_ = nullptr;  // null: host float cache
};

}  // namespace tensoropt::runtime
