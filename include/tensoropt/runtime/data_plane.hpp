// The data plane: how one device's buffers move to the others (grouped exchange,
// all-reduce, reduce-scatter, all-gather), as opposed to the control plane (the
// host communicator of comm.hpp, which starts runs, agrees on tags and reports
// failures).
//
// Why two planes: on the CPU both are the same host messages, but on GPUs the data
// must move between device buffers (NCCL, or device copies between rank threads of
// one GPU) while the control traffic (an NCCL unique id, a barrier, a failure)
// stays on the host. The executor and redistribute() speak only to this interface;
// a backend makes the data plane that fits its buffers (backend::make_data_plane).
//
// Contract of every implementation, so results do not depend on the plane:
//  - exchange(): all sends are posted before any receive is waited for (a grouped
//    send/recv: no deadlock whatever the order of peers); every rank of the world
//    calls it in the same SPMD order; each receive lands in its own buffer.
//  - collectives sum in group order (the order of `g`), so every member gets the
//    same bits, as comm.hpp's collectives do.
//  - a peer that never arrives makes the call throw runtime_error naming the
//    operation and the missing ranks within the control plane's timeout.
// The host plane below wraps the communicator's own operations, so the CPU
// backend's results are exactly those of the communicator.
#pragma once
#include <span>
#include <string>
#include <vector>
#include "buffer.hpp"
#include "comm.hpp"

namespace tensoropt::runtime {

/// One message of a grouped exchange: a whole (packed) buffer to or from `peer`.
struct outgoing {
  int peer;
  const buffer* data;
};
struct incoming {
  int peer;
  buffer* data;  ///< sized by the caller; filled by exchange()
};

/// Moves buffers between the devices of one world (see the contract above).
class data_plane {
 public:
  virtual ~data_plane() = default;
  /// The control plane this data plane was made over.
  virtual communicator& control() = 0;
  int rank() { return control().rank(); }
  int size() { return control().size(); }
  /// Posts every send, then completes every receive (in the order given).
  /// `what` names the operation in timeout and size-mismatch errors.
  virtual void exchange(std::span<const outgoing> sends, std::span<const incoming> recvs, const char* what) = 0;
  /// Elementwise sum over group `g` in group order, in place.
  virtual void all_reduce(const group& g, buffer& buf) = 0;
  /// out = member-order sum of every member's in[my_index * n .. + n), n = out.size().
  virtual void reduce_scatter(const group& g, const buffer& in, buffer& out) = 0;
  /// out[i * n .. + n) = member i's in (n = in.size()).
  virtual void all_gather(const group& g, const buffer& in, buffer& out) = 0;
  /// Waits until every transfer issued so far has completed (no-op on the host).
  virtual void synchronize() {}
  /// Whether redistribute() should use this plane's collectives for the layout
  /// changes that are exactly one collective (collective_match.hpp) instead of the
  /// generic exchange: planes whose collectives are native (NCCL).
  virtual bool native_collectives() const { return false; }
};

/// The data plane of host fp32 buffers: the communicator's own messages and
/// collectives (same results as calling the communicator directly).
class host_data_plane final : public data_plane {
 public:
  explicit host_data_plane(communicator& c) : comm_(c) {}
  communicator& control() override { return comm_; }
  void exchange(std::span<const outgoing> sends, std::span<const incoming> recvs, const char* what) override {
    const int tag = comm_.next_tag();
    for (const auto& s : sends) comm_.send(s.peer, host(*s.data, what).span(), tag);
    for (const auto& r : recvs) comm_.recv(r.peer, host(*r.data, what).span(), tag, what);
  }
  void all_reduce(const group& g, buffer& buf) override { comm_.all_reduce(g, host(buf, "all_reduce").span()); }
  void reduce_scatter(const group& g, const buffer& in, buffer& out) override {
    comm_.reduce_scatter(g, host(in, "reduce_scatter").span(), host(out, "reduce_scatter").span());
  }
  void all_gather(const group& g, const buffer& in, buffer& out) override {
    comm_.all_gather(g, host(in, "all_gather").span(), host(out, "all_gather").span());
  }

 private:
  template <class B>
  static B& host(B& b, const char* what) {
    if (!b.host_fp32() && b.size())
      throw invalid_argument(std::string(what) + ": the host data plane moves host fp32 buffers; this one is " +
                             (b.space() == memory_space::device ? "in device memory" : "not fp32") +
                             " (use the data plane of the buffer's backend)");
    return b;
  }
  communicator& comm_;
};

}  // namespace tensoropt::runtime
