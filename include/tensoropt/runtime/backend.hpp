// The backend interface: what the executor needs from one device (memory, kernels,
// element operations, a data plane), chosen at run time by name ("cpu", "cuda").
//
// Why run-time dispatch: one program (train_gpt, a user's trainer) built by g++
// trains on the CPU or on GPUs by a flag. The executor is written once against
// this interface; the CPU backend (cpu_backend.hpp, CBLAS) and the CUDA backend (a
// factory compiled by nvcc, reached through the registry below) implement it. The
// executor never touches an element of a buffer itself: filling, accumulating,
// packing and the optimizer update are backend calls, so buffers may live in
// device memory and hold bf16.
//
// Buffers are allocated by role, and the backend picks the dtype of each role from
// its precision: fp32 keeps everything fp32; bf16-mixed keeps activations, weights
// and gradients in bf16 and the optimizer state in fp32, plus one more fp32 state
// array per parameter, the master weights (extra_states() == 1): 2 + 2 + 12 bytes
// per parameter with Adam, as cost/ assumes.
//
// Backends register a factory under their name (register_backend); the CPU backend
// registers itself when cpu_backend.hpp is included, the CUDA backend when the .cu
// source of the tensoropt::cuda target is linked. make_backend() names the missing
// piece when a backend is not in the program.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>
#include "../core/dtype.hpp"
#include "../model/graph.hpp"
#include "buffer.hpp"
#include "data_plane.hpp"
#include "optimizer.hpp"
#include "shard_box.hpp"

namespace tensoropt::runtime {

struct op_context;
struct op_state;

/// The buffers a kernel reads (inputs or params), in the op's slot order.
using kernel_inputs = std::span<const buffer* const>;
using forward_fn = buffer (*)(op_context&, kernel_inputs, kernel_inputs, op_state&);
using backward_fn = void (*)(op_context&, kernel_inputs, kernel_inputs, op_state&, const buffer&,
                             std::vector<buffer>&, std::vector<buffer>&);
/// The forward/backward pair of one op kind on one backend.
struct kernel {
  forward_fn forward = nullptr;
  backward_fn backward = nullptr;
};

/// Whether the backward of `k` reads input `slot` (else the executor frees it after
/// forward, as the cost model's saved buffers assume). The same for every backend.
inline bool backward_reads_input(op_kind k, std::size_t slot) {
  switch (k) {
    case op_kind::add:
    case op_kind::concat:
    case op_kind::dropout:
    case op_kind::max_pool:
    case op_kind::avg_pool:
    case op_kind::global_avg_pool:
    case op_kind::moe_dispatch: return false;
    case op_kind::softmax_xent: return slot == 1;  // the labels; the probabilities are saved
    default: return true;
  }
}

/// What a buffer holds, which decides its dtype under the backend's precision.
enum class buffer_role : std::uint8_t {
  activation,  ///< activations, their gradients, saved state (compute dtype)
  weight,      ///< a parameter's working copy (compute dtype)
  gradient,    ///< a parameter's gradient (compute dtype)
  state,       ///< optimizer state and master weights (always fp32)
};

/// Which backend to make and how: `kind` "cpu" or "cuda"; `precision` fp32 or
/// bf16-mixed (the CPU backend runs fp32 only); `device` the GPU ordinal for rank
/// 0 of this process (-1: rank r of a local world uses GPU r mod the GPU count);
/// `timeout` how long a device data plane waits for a peer (the host
/// communicators have their own).
struct backend_options {
  std::string kind = "cpu";
  precision prec = precisions::fp32;
  int device = -1;
  std::chrono::milliseconds timeout = std::chrono::seconds(30);
};

/// One device's bytes as a backend sees them: the requested bytes (memory_stats,
/// comparable across backends and with the cost model), the caching pool's own
/// high-water mark, and the fixed reserve outside the pool (context, library
/// workspaces, communication buffers). The last two are 0 on the CPU.
struct device_memory {
  std::int64_t requested_peak = 0;
  std::int64_t pool_peak = 0;
  std::int64_t reserve = 0;
};

/// One device's memory and kernels (see the opening comment).
class backend {
 public:
  virtual ~backend() = default;
  virtual std::string name() const = 0;
  virtual memory_space space() const = 0;
  const precision& prec() const { return prec_; }
  /// The dtype this backend stores buffers of `r` in.
  dtype type_of(buffer_role r) const { return r == buffer_role::state ? dtype::fp32 : prec_.compute; }

  /// `n` zeroed elements of dtype `t`, charged to memory() when `counted` (else
  /// scratch for packing and staging).
  virtual buffer make_buffer(std::size_t n, dtype t, bool counted) = 0;
  /// `n` zeroed elements for role `r`, charged to memory().
  buffer allocate(std::size_t n, buffer_role r = buffer_role::activation) { return make_buffer(n, type_of(r), true); }
  /// `n` zeroed elements of dtype `t`, charged to memory().
  buffer allocate(std::size_t n, dtype t) { return make_buffer(n, t, true); }
  /// `n` zeroed uncounted elements of dtype `t`.
  buffer scratch(std::size_t n, dtype t = dtype::fp32) { return make_buffer(n, t, false); }
  /// A counted buffer of role `r` holding `host` (converted to the role's dtype).
  virtual buffer upload(std::span<const float> host, buffer_role r = buffer_role::activation) = 0;
  /// The elements of `b` as fp32 on the host.
  virtual std::vector<float> download(const buffer& b) = 0;
  /// Overwrites `dst` (of host.size() elements) with `host`.
  virtual void write(buffer& dst, std::span<const float> host) = 0;
  /// A counted copy of `b` (same dtype and space).
  virtual buffer copy(const buffer& b) = 0;
  /// acc[i] += x[i], elementwise in index order.
  virtual void accumulate(buffer& acc, const buffer& x) = 0;
  /// Copies (add: adds) the region [lo, lo + len) of a tensor from `src`, which
  /// holds box `sb`, into `dst`, which holds box `db`.
  virtual void copy_region(const buffer& src, const shard_box& sb, buffer& dst, const shard_box& db,
                           const extents_t& lo, const extents_t& len, int rank, bool add) = 0;
  /// The kernels of op kind `k`; throws invalid_argument when this backend has none.
  virtual kernel kernel_of(op_kind k) = 0;
  /// One optimizer update of `w` with gradient `g` at step `t` (1-based); `state`
  /// holds o.states() + extra_states() arrays of role state.
  virtual void optimizer_update(const optimizer_options& o, std::int64_t t, buffer& w, const buffer& g,
                                std::vector<buffer>& state) = 0;
  /// State arrays per parameter beyond the optimizer's (1 under bf16-mixed: the
  /// fp32 master weights, the last array, which optimizer_update keeps and
  /// rounds into w).
  virtual int extra_states() const { return 0; }
  /// The data plane for this backend's buffers over control communicator `c`.
  virtual std::unique_ptr<data_plane> make_data_plane(communicator& c) = 0;
  /// Waits for every operation issued on this device (no-op on the CPU).
  virtual void synchronize() {}
  /// Makes this device current on the calling thread (a rank thread of a local
  /// world calls it before using the backend; no-op on the CPU).
  virtual void bind() {}
  /// Requested bytes (this device's memory_stats), pool high-water mark, reserve.
  virtual device_memory memory_report() const { return {stats_.peak, 0, 0}; }
  /// Resets the peaks (requested and pool) to the current figures.
  virtual void reset_peak() { stats_.reset_peak(); }

  const memory_stats& memory() const { return stats_; }
  memory_stats& memory() { return stats_; }

 protected:
  explicit backend(precision p = precisions::fp32) : prec_(p) {}
  memory_stats stats_;
  precision prec_;
};

/// Makes the backend of rank `c.rank()` of a run over control communicator `c`.
using backend_factory = std::unique_ptr<backend> (*)(const backend_options&, communicator& c);

namespace detail {
struct backend_registry {
  std::mutex mu;
  std::map<std::string, backend_factory> factories;
  static backend_registry& get() {
    static backend_registry r;
    return r;
  }
};
}  // namespace detail

/// Registers `f` as the backend `name` (a later registration of the name wins).
/// Returns true, so a namespace-scope `inline const bool` can register at start-up.
inline bool register_backend(const std::string& name, backend_factory f) {
  auto& r = detail::backend_registry::get();
  std::lock_guard lk(r.mu);
  r.factories[name] = f;
  return true;
}

/// Whether backend `name` is in this program.
inline bool has_backend(const std::string& name) {
  auto& r = detail::backend_registry::get();
  std::lock_guard lk(r.mu);
  return r.factories.count(name) != 0;
}

/// The backend `o.kind` for rank `c.rank()`. Throws invalid_argument naming what
/// to include or link when that backend is not part of this program.
inline std::unique_ptr<backend> make_backend(const backend_options& o, communicator& c) {
  backend_factory f = nullptr;
  {
    auto& r = detail::backend_registry::get();
    std::lock_guard lk(r.mu);
    if (auto it = r.factories.find(o.kind); it != r.factories.end()) f = it->second;
  }
  if (f) return f(o, c);
  if (o.kind == "cpu")
    throw invalid_argument("the cpu backend is not in this program; include <tensoropt/runtime/cpu_backend.hpp> "
                           "and link tensoropt::runtime");
  if (o.kind == "cuda")
    throw invalid_argument("the cuda backend is not in this program; link the CMake target tensoropt::cuda "
                           "(configure where nvcc and the CUDA toolkit exist)");
  throw invalid_argument("unknown backend '" + o.kind + "'; valid backends: cpu, cuda");
}

/// Parses a backend name ("cpu" or "cuda"); throws invalid_argument otherwise.
inline std::string parse_backend(const std::string& s) {
  if (s == "cpu" || s == "cuda") return s;
  throw invalid_argument("unknown backend '" + s + "'; valid backends: cpu, cuda");
}

}  // namespace tensoropt::runtime
