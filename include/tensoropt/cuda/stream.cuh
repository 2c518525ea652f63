// RAII for the CUDA execution resources of one device: the current-device guard,
// streams and events (move-only owners; non-owning handles are the raw
// cudaStream_t / cudaEvent_t, passed by value to launchers).
//
// Every rank of the runtime owns one stream per device it drives; kernels and
// cuBLASLt calls of a step are enqueued there in op order, and events order that
// stream against the communication stream (record on one, wait on the other) and
// time steps (elapsed_ms). Streams are created non-blocking so they never
// serialize against the legacy default stream of other libraries.
#pragma once
#include <cuda_runtime.h>
#include <utility>
#include "error.cuh"

namespace tensoropt::cuda {

/// Makes `device` current for the guard's scope and restores the previous one.
class device_guard {
 public:
  explicit device_guard(int device) {
    TENSOROPT_CUDA_CHECK(cudaGetDevice(&previous_));
    if (device != previous_) TENSOROPT_CUDA_CHECK(cudaSetDevice(device));
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  ~device_guard() { (void)cudaSetDevice(previous_); }

 private:
  int previous_ = 0;
};

/// An owning, move-only CUDA stream on one device.
class stream {
 public:
  /// A new non-blocking stream on `device` (priority 0; lower numbers run first).
  explicit stream(int device = 0, int priority = 0) : device_(device) {
    require_device(device);
    device_guard g(device);
    TENSOROPT_CUDA_CHECK(cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, priority));
  }
  stream(stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)), device_(o.device_) {}
  stream& operator=(stream&& o) noexcept {
    stream t(std::move(o));
    std::swap(s_, t.s_);
    std::swap(device_, t.device_);
    return *this;
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  ~stream() {
    if (s_) {
      (void)cudaStreamSynchronize(s_);
      (void)cudaStreamDestroy(s_);
    }
  }
  cudaStream_t get() const { return s_; }
  operator cudaStream_t() const { return s_; }
  int device() const { return device_; }
  /// Blocks until everything enqueued so far finished; throws the first error.
  void synchronize() const { TENSOROPT_CUDA_CHECK(cudaStreamSynchronize(s_)); }
  /// Whether all enqueued work finished (never blocks).
  bool ready() const {
    const cudaError_t e = cudaStreamQuery(s_);
    if (e == cudaErrorNotReady) return false;
    TENSOROPT_CUDA_CHECK(e);
    return true;
  }

 private:
  cudaStream_t s_ = nullptr;
  int device_ = 0;
};

/// An owning, move-only CUDA event. Timing events measure elapsed time; the
/// default (timing off) is cheaper for pure ordering.
class event {
 public:
  explicit event(bool timing = false) {
    TENSOROPT_CUDA_CHECK(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  event(event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  event& operator=(event&& o) noexcept {
    event t(std::move(o));
    std::swap(e_, t.e_);
    return *this;
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  ~event() {
    if (e_) (void)cudaEventDestroy(e_);
  }
  cudaEvent_t get() const { return e_; }
  /// Captures the work enqueued on `s` so far.
  void record(cudaStream_t s) { TENSOROPT_CUDA_CHECK(cudaEventRecord(e_, s)); }
  /// Makes `s` wait (on the device) for the captured work.
  void wait(cudaStream_t s) const { TENSOROPT_CUDA_CHECK(cudaStreamWaitEvent(s, e_, 0)); }
  void synchronize() const { TENSOROPT_CUDA_CHECK(cudaEventSynchronize(e_)); }
  bool ready() const {
    const cudaError_t e = cudaEventQuery(e_);
    if (e == cudaErrorNotReady) return false;
    TENSOROPT_CUDA_CHECK(e);
    return true;
  }
  /// Milliseconds between two recorded timing events (both finished).
  static float elapsed_ms(const event& start, const event& stop) {
    float ms = 0;
    TENSOROPT_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, stop.e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace tensoropt::cuda
