// The NCCL data plane: device buffers between ranks that are processes (MPI), one
// GPU each, through the NCCL wrappers of cuda/nccl.cuh.
//
// The world communicator is joined when the plane is made (its unique id travels
// over the control communicator, so the same code serves any host communicator);
// a collective over a group joins that group's sub-communicator the first time
// the group is used (every member reaches that call at the same SPMD point) and
// keeps it. A grouped exchange is one ncclGroupStart/End of sends and receives on
// the world communicator, then a wait with the deadline: a peer that skipped it
// makes the wait abort the communicator and throw an error naming the pending
// operations and the group (nccl.cuh). Sums are NCCL's (the same on every member,
// but not in the host communicators' group order: compare with a tolerance).
// Redistributions that are exactly one collective (collective_match.hpp) run as
// NCCL AllReduce / AllGather / ReduceScatter, the collectives the cost model
// prices them at; all-gathers are bit-exact, the sums equal the generic exchange's
// to rounding only (NCCL's reduction order).
//
// NCCL refuses two ranks of one communicator on one GPU: ranks that are threads of
// one process use cuda_data_plane.cuh instead (cuda_backend picks it).
//
// Memory: NCCL allocates its buffers when a communicator is made, outside the rank's
// pool; the device memory a join takes (free memory before minus after, on this
// process's own GPU) is registered in the pool's fixed reserve, one entry per
// communicator, so memory_report() keeps it apart from the plan's buffers.
#pragma once
#include <cuda_runtime.h>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <tensoropt/cuda/memory.cuh>
#include <tensoropt/cuda/nccl.cuh>
#include <vector>
#include "backend.hpp"
#include "data_plane.hpp"

namespace tensoropt::runtime {

/// The data plane of device buffers over NCCL (see the opening comment).
class cuda_nccl_data_plane final : public data_plane {
 public:
  /// Collective over every rank of `c`: joins the world communicator on `device`;
  /// `pool` (optional): the rank's pool, whose reserve records NCCL's buffers.
  cuda_nccl_data_plane(communicator& c, cudaStream_t s, int device, std::chrono::milliseconds timeout,
                       cuda::memory_pool* pool = nullptr)
      : comm_(c), stream_(s), device_(device), timeout_(timeout), pool_(pool),
        world_(join(c.world(), "world")) {}
  communicator& control() override { return comm_; }

  void exchange(std::span<const outgoing> sends, std::span<const incoming> recvs, const char* what) override {
    (void)comm_.next_tag();  // keeps the control plane's tag sequence that of the host plane
    auto ref = world_.handle();
    {
      cuda::nccl_group grp;
      for (const auto& s : sends) send(ref, *s.data, s.peer);
      for (const auto& r : recvs) recv(ref, *r.data, r.peer);
      grp.end();
    }
    wait(ref, what);
  }
  void all_reduce(const group& g, buffer& buf) override {
    if (g.size() <= 1) return;
    auto ref = sub(g);
    each(buf.type(), [&]<class T>(T) { ref.all_reduce(buf.as<T>(), buf.as<T>(), buf.size(), stream_); });
    wait(ref, "all_reduce");
  }
  void reduce_scatter(const group& g, const buffer& in, buffer& out) override {
    if (in.size() != out.size() * g.size())
      throw invalid_argument("reduce_scatter: buffer holds " + std::to_string(in.size()) + " elements, expected " +
                             std::to_string(out.size() * g.size()));
    auto ref = sub(g);
    each(in.type(), [&]<class T>(T) { ref.reduce_scatter(in.as<T>(), out.as<T>(), out.size(), stream_); });
    wait(ref, "reduce_scatter");
  }
  void all_gather(const group& g, const buffer& in, buffer& out) override {
    if (out.size() != in.size() * g.size())
      throw invalid_argument("all_gather: buffer holds " + std::to_string(out.size()) + " elements, expected " +
                             std::to_string(in.size() * g.size()));
    auto ref = sub(g);
    each(in.type(), [&]<class T>(T) { ref.all_gather(in.as<T>(), out.as<T>(), in.size(), stream_); });
    wait(ref, "all_gather");
  }
  void synchronize() override { TENSOROPT_CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  /// redistribute() maps all-reduce, all-gather and reduce-scatter layouts onto
  /// NCCL's collectives (collective_match.hpp), grouped send/recv otherwise.
  bool native_collectives() const override { return true; }

 private:
  template <class F>
  static void each(dtype t, F&& f) {
    if (t == dtype::fp32) f(float{});
    else if (t == dtype::bf16) f(cuda::bf16{});
    else throw invalid_argument("the NCCL data plane moves fp32 or bf16 buffers, not " + std::string(name_of(t)));
  }
  void send(cuda::nccl_communicator_ref ref, const buffer& b, int peer) {
    each(b.type(), [&]<class T>(T) { ref.send(b.as<T>(), b.size(), peer, stream_); });
  }
  void recv(cuda::nccl_communicator_ref ref, buffer& b, int peer) {
    each(b.type(), [&]<class T>(T) { ref.recv(b.as<T>(), b.size(), peer, stream_); });
  }
  void wait(cuda::nccl_communicator_ref ref, const char* what) {
    try {
      ref.wait(stream_);
    } catch (const runtime_error& e) {
      throw runtime_error(std::string(what) + " on rank " + std::to_string(comm_.rank()) + ": " + e.what());
    }
  }
  /// The communicator of group g (this rank among them), joined on first use.
  cuda::nccl_communicator_ref sub(const group& g) {
    if (g.size() == std::size_t(comm_.size())) return world_.handle();
    auto it = subs_.find(g);
    if (it == subs_.end())
      it = subs_.emplace(g, join(g, "ranks " + describe(g))).first;
    return it->second.handle();
  }
  /// Joins the communicator of `g`, recording the device memory it took in the reserve.
  cuda::nccl_communicator join(const group& g, const std::string& name) {
    const std::size_t before = free_bytes();
    auto c = cuda::nccl_communicator::join(comm_, g, device_, name, timeout_);
    const std::size_t after = free_bytes();
    if (pool_ && before > after) pool_->add_reserve("NCCL communicator " + name, before - after);
    return c;
  }
  std::size_t free_bytes() const {
    if (!pool_) return 0;
    cuda::device_guard dg(device_);
    std::size_t free = 0, total = 0;
    TENSOROPT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return free;
  }

  communicator& comm_;
  cudaStream_t stream_;
  int device_;
  std::chrono::milliseconds timeout_;
  cuda::memory_pool* pool_;
  cuda::nccl_communicator world_;
  std::map<group, cuda::nccl_communicator> subs_;
};

}  // namespace tensoropt::runtime
