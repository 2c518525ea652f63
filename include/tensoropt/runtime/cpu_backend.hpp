// The CPU backend: host fp32 buffers from a per-thread cache, the reference
// kernels of kernels.hpp (GEMMs through CBLAS), host element operations and the
// host data plane (the communicator's own messages).
//
// It is the reference every other backend is compared with: its results are the
// ones the executor produced before backends were chosen at run time (the element
// loops below are the executor's former loops, in the same order), so any plan on
// any device count gives the bits it gave before. Including this header registers
// the backend under the name "cpu" (make_backend), and only the CPU backend
// includes CBLAS (cpu_gemm.hpp): link tensoropt::runtime.
#pragma once
#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include "backend.hpp"
#include "cpu_gemm.hpp"
#include "kernels.hpp"
#include "optimizer.hpp"

namespace tensoropt::runtime {

/// The CPU backend of one device (fp32 only).
class cpu_backend final : public backend {
 public:
  /// Throws invalid_argument for a precision other than fp32.
  explicit cpu_backend(precision p = precisions::fp32) : backend(p) {
    if (p.compute != dtype::fp32)
      throw invalid_argument("the cpu backend runs fp32 only, not " + std::string(p.name) +
                             "; use --precision fp32 or the cuda backend");
    single_threaded_blas();
  }
  std::string name() const override { return "cpu"; }
  memory_space space() const override { return memory_space::host; }

  buffer make_buffer(std::size_t n, dtype, bool counted) override { return buffer(n, counted ? &stats_ : nullptr); }
  buffer upload(std::span<const float> host, buffer_role = buffer_role::activation) override {
    return buffer(host, &stats_);
  }
  std::vector<float> download(const buffer& b) override { return {b.span().begin(), b.span().end()}; }
  void write(buffer& dst, std::span<const float> host) override {
    check_size(dst.size(), host.size(), "write");
    std::copy(host.begin(), host.end(), dst.data());
  }
  buffer copy(const buffer& b) override { return buffer(b.span(), &stats_); }
  /// A counted buffer holding `v` (the same as upload).
  buffer copy(std::span<const float> v) { return buffer(v, &stats_); }
  void accumulate(buffer& acc, const buffer& x) override {
    check_size(acc.size(), x.size(), "accumulate");
    for (std::size_t i = 0; i < x.size(); ++i) acc[i] += x[i];
  }
  void copy_region(const buffer& src, const shard_box& sb, buffer& dst, const shard_box& db, const extents_t& lo,
                   const extents_t& len, int rank, bool add) override {
    detail::copy_region(src.data(), sb, dst.data(), db, lo, len, rank, add);
  }
  kernel kernel_of(op_kind k) override { return kernels::kernel_of(k); }
  void optimizer_update(const optimizer_options& o, std::int64_t t, buffer& w, const buffer& g,
                        std::vector<buffer>& state) override {
    runtime::optimizer_update(o, t, w, g, state);
  }
  std::unique_ptr<data_plane> make_data_plane(communicator& c) override {
    return std::make_unique<host_data_plane>(c);
  }

 private:
  static void check_size(std::size_t a, std::size_t b, const char* what) {
    if (a != b)
      throw invalid_argument(std::string("cpu backend ") + what + ": sizes differ (" + std::to_string(a) + " vs " +
                             std::to_string(b) + " elements)");
  }
};

namespace detail {
inline std::unique_ptr<backend> make_cpu_backend(const backend_options& o, communicator&) {
  return std::make_unique<cpu_backend>(o.prec);
}
inline const bool cpu_backend_registered = register_backend("cpu", make_cpu_backend);
}  // namespace detail

}  // namespace tensoropt::runtime
