// Device memory: a caching pool per device (stream-ordered allocation from a CUDA
// memory pool whose release threshold is "never"), with three figures kept apart so
// predicted and measured memory compare like with like:
//   - requested bytes, current and peak: the sum of the sizes the runtime asked
//     for, exactly what the CPU backend's memory_stats counts for the same plan in
//     fp32 (the cost model predicts this figure);
//   - the pool's high-water mark: bytes the pool reserved from the driver (>= the
//     requested peak; the difference is fragmentation and rounding);
//   - the fixed reserve: memory that does not scale with the plan (the CUDA context
//     and whatever else held the device when the pool was created, cuBLASLt
//     workspaces, NCCL buffers), registered by name with add_reserve().
//
// Why cudaMallocFromPoolAsync on an own pool: a training step allocates and frees
// the same sizes every iteration; with cudaMemPoolAttrReleaseThreshold = UINT64_MAX
// freed blocks stay in the pool and later allocations of the step are served from
// it, so after the first step no allocation reaches the driver (no cudaMalloc, no
// implicit synchronization). growth_count() counts the allocations that made the
// pool reserve more memory, which is how the tests check the steady state. One
// pool per rank (several ranks may share one device), so each rank's accounting is
// its own. A pool is used from one host thread (its rank's).
#pragma once
#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>
#include "error.cuh"
#include "stream.cuh"

namespace tensoropt::cuda {

/// Bytes requested now and the most requested since the last reset.
struct device_memory_stats {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  void add(std::int64_t b) {
    current += b;
    if (current > peak) peak = current;
  }
  void reset_peak() { peak = current; }
};

/// One named piece of the fixed reserve.
struct reserve_entry {
  std::string what;
  std::size_t bytes = 0;
};

/// A caching device-memory pool with requested-bytes accounting (see the top).
/// Not copyable or movable: buffers refer to their pool.
class memory_pool {
 public:
  explicit memory_pool(int device = 0) : device_(device) {
    require_device(device);
    device_guard g(device);
    TENSOROPT_CUDA_CHECK(cudaFree(nullptr));  // create the context first: it belongs to the reserve
    std::size_t free = 0, total = 0;
    TENSOROPT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    reserve_.push_back({"CUDA context and other users of the device at pool creation", total - free});
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    TENSOROPT_CUDA_CHECK(cudaMemPoolCreate(&pool_, &props));
    std::uint64_t never = std::numeric_limits<std::uint64_t>::max();
    TENSOROPT_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &never));
  }
  memory_pool(const memory_pool&) = delete;
  memory_pool& operator=(const memory_pool&) = delete;
  ~memory_pool() {
    device_guard g(device_);
    (void)cudaDeviceSynchronize();
    (void)cudaMemPoolDestroy(pool_);
  }

  /// `bytes` of device memory, usable in stream order on `s`. Throws out_of_memory
  /// naming the device, the size and what the pool holds.
  void* allocate(std::size_t bytes, cudaStream_t s) {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    const cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool_, s);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      std::size_t free = 0, total = 0;
      (void)cudaMemGetInfo(&free, &total);
      if (e == cudaErrorMemoryAllocation)
        throw out_of_memory("CUDA device " + std::to_string(device_) + " is out of memory allocating " +
                            mib(bytes) + " (this rank has " + mib(std::size_t(stats_.current)) +
                            " requested, its pool reserves " + mib(reserved()) + ", the device has " + mib(free) +
                            " free of " + mib(total) + "); pick a plan that needs less memory per device");
      detail::throw_cuda(e, "cudaMallocFromPoolAsync", __FILE__, __LINE__);
    }
    stats_.add(std::int64_t(bytes));
    const std::size_t r = reserved();
    if (r > last_reserved_) {
      ++growths_;
      last_reserved_ = r;
    }
    return p;
  }
  /// Returns `p` (of `bytes`, as allocated) to the pool in stream order on `s`.
  void deallocate(void* p, std::size_t bytes, cudaStream_t s) noexcept {
    if (!p) return;
    (void)cudaFreeAsync(p, s);
    stats_.add(-std::int64_t(bytes));
  }

  /// Requested bytes (current and peak): the figure the CPU backend counts.
  const device_memory_stats& requested() const { return stats_; }
  void reset_peak() {
    stats_.reset_peak();
    std::uint64_t zero = 0;
    (void)cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &zero);
  }
  /// Bytes the pool holds from the driver now.
  std::size_t reserved() const { return attribute(cudaMemPoolAttrReservedMemCurrent); }
  /// The most the pool held from the driver since creation (or reset_peak()).
  std::size_t high_water() const { return attribute(cudaMemPoolAttrReservedMemHigh); }
  /// Allocations that made the pool grow (reserve memory from the driver).
  std::int64_t growth_count() const { return growths_; }

  /// Registers a fixed piece of device memory outside the pool (workspaces, NCCL).
  void add_reserve(std::string what, std::size_t bytes) { reserve_.push_back({std::move(what), bytes}); }
  const std::vector<reserve_entry>& reserve_entries() const { return reserve_; }
  std::size_t reserve() const {
    std::size_t n = 0;
    for (auto& e : reserve_) n += e.bytes;
    return n;
  }
  /// Gives unused pool memory back to the driver (after a step that peaked high).
  void trim() {
    TENSOROPT_CUDA_CHECK(cudaMemPoolTrimTo(pool_, 0));
    last_reserved_ = reserved();
  }
  int device() const { return device_; }
  cudaMemPool_t get() const { return pool_; }

 private:
  std::size_t attribute(cudaMemPoolAttr a) const {
    std::uint64_t v = 0;
    TENSOROPT_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, a, &v));
    return std::size_t(v);
  }
  static std::string mib(std::size_t b) { return std::to_string((b + (1u << 19)) >> 20) + " MiB"; }

  int device_ = 0;
  cudaMemPool_t pool_ = nullptr;
  device_memory_stats stats_;
  std::vector<reserve_entry> reserve_;
  std::size_t last_reserved_ = 0;
  std::int64_t growths_ = 0;
};

/// A typed device array from a pool, freed in order on the stream it was made on
/// (move-only). Contents are uninitialized unless zeroed().
template <class T>
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(memory_pool& pool, std::size_t n, cudaStream_t s)
      : pool_(&pool), data_(static_cast<T*>(pool.allocate(n * sizeof(T), s))), size_(n), stream_(s) {}
  device_buffer(device_buffer&& o) noexcept
      : pool_(std::exchange(o.pool_, nullptr)), data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)), stream_(o.stream_) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    device_buffer t(std::move(o));
    swap(t);
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() {
    if (pool_) pool_->deallocate(data_, size_ * sizeof(T), stream_);
  }
  /// n zero bytes-initialized elements.
  static device_buffer zeroed(memory_pool& pool, std::size_t n, cudaStream_t s) {
    device_buffer b(pool, n, s);
    if (n) TENSOROPT_CUDA_CHECK(cudaMemsetAsync(b.data_, 0, n * sizeof(T), s));
    return b;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  cudaStream_t stream() const { return stream_; }

 private:
  void swap(device_buffer& o) noexcept {
    std::swap(pool_, o.pool_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(stream_, o.stream_);
  }
  memory_pool* pool_ = nullptr;
  T* data_ = nullptr;
  std::size_t size_ = 0;
  cudaStream_t stream_ = nullptr;
};

}  // namespace tensoropt::cuda
