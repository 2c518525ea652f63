// The device data plane of ranks that are threads of one process: every rank has
// its own stream and pool (possibly on one GPU), and buffers move between ranks as
// device-to-device copies ordered by CUDA events. This is how multi-rank plans run
// on a one-GPU machine: NCCL refuses two ranks of one communicator on one device.
//
// How an exchange works: the sender records an event on its stream once its
// packed buffer is ready and posts (pointer, bytes, event) to a mailbox shared by
// the world; the receiver waits on the host for the post (with a deadline), makes
// its stream wait for the event, copies the bytes into its own buffer on its
// stream and records a second event; the sender, before returning, waits until its
// posts were taken and makes its stream wait for those events, so a packed buffer
// is never freed (stream-ordered, on the sender's stream) while a peer reads it.
// Collectives are exchanges followed by sums in group order, so every member gets
// the same bits, as the host communicators give.
//
// The mailbox is found by a bootstrap over the control plane (rank 0 creates it
// and sends its id to the others), as an NCCL unique id would be; it is therefore
// limited to ranks of one process (a local world, or a sub-communicator of one: a
// pipeline stage). Staging buffers (collective parts, sums) come from the rank's own
// memory pool, uncounted, as the host planes' std::vector staging is. A post or take
// that does not complete within the timeout throws runtime_error naming the
// operation, the group, the rank and the peer; a wait stops early, with an error
// that says so, once another rank of the world has failed (communicator::aborted()).
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tensoropt/cuda/error.cuh>
#include <tensoropt/cuda/kernels_elementwise.cuh>
#include <vector>
#include "backend.hpp"
#include "cuda_glue.cuh"
#include "data_plane.hpp"

namespace tensoropt::runtime {

namespace cuda_detail {

/// The mailbox of one world of rank threads.
struct device_mailbox {
  struct post {
    int from, to, tag;
    const void* data;
    std::size_t bytes;
    cudaEvent_t ready;            // recorded by the sender after packing
    cudaEvent_t taken = nullptr;  // recorded by the receiver after its copy
    bool done = false;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<post>> posts;

  /// The mailbox registry of this process: id -> mailbox (weak: the ranks own it).
  static std::shared_ptr<device_mailbox> find_or_make(std::uint64_t& id, bool make) {
    static std::mutex reg_mu;
    static std::map<std::uint64_t, std::weak_ptr<device_mailbox>> reg;
    static std::uint64_t next = 1;
    std::lock_guard lk(reg_mu);
    if (make) {
      auto m = std::make_shared<device_mailbox>();
      id = next++;
      reg[id] = m;
      return m;
    }
    auto it = reg.find(id);
    return it == reg.end() ? nullptr : it->second.lock();
  }
};

/// 16 bits per float: exact in fp32.
inline std::vector<float> encode_id(std::uint64_t id) {
  return {float(id & 0xffff), float(id >> 16 & 0xffff), float(id >> 32 & 0xffff), float(id >> 48 & 0xffff)};
}
inline std::uint64_t decode_id(const std::vector<float>& v) {
  std::uint64_t id = 0;
  for (int i = 3; i >= 0; --i) id = id << 16 | std::uint64_t(v[std::size_t(i)]);
  return id;
}

}  // namespace cuda_detail

/// The data plane of device buffers between rank threads of one process.
class cuda_local_data_plane final : public data_plane {
 public:
  /// Collective over `c` (every rank of the world makes its plane together); moves
  /// buffers on the stream of `be`, the rank's backend, and stages in its pool.
  /// Throws invalid_argument when the ranks are not threads of one process.
  cuda_local_data_plane(communicator& c, cuda_backend_base& be, std::chrono::milliseconds timeout)
      : comm_(c), be_(be), stream_(be.stream()), timeout_(timeout) {
    std::uint64_t id = 0;
    if (c.rank() == 0) {
      box_ = cuda_detail::device_mailbox::find_or_make(id, true);
      const auto msg = cuda_detail::encode_id(id);
      const int tag = c.next_tag();
      for (int r = 1; r < c.size(); ++r) c.send(r, msg, tag);
    } else {
      std::vector<float> msg(4);
      const int tag = c.next_tag();
      c.recv(0, msg, tag, "cuda data plane bootstrap");
      id = cuda_detail::decode_id(msg);
      box_ = cuda_detail::device_mailbox::find_or_make(id, false);
      if (!box_)
        throw invalid_argument("the cuda backend's device data plane joins ranks that are threads of one process "
                               "(a local_world); rank " + std::to_string(c.rank()) +
                               " is in another process: run the ranks as threads of one process");
    }
  }
  communicator& control() override { return comm_; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }

  void exchange(std::span<const outgoing> sends, std::span<const incoming> recvs, const char* what) override {
    exchange_in(sends, recvs, what, comm_.world());
  }
  void all_reduce(const group& g, buffer& buf) override {
    if (g.size() <= 1) return;
    auto parts = gather_parts(g, buf, "all_reduce");
    sum_in_order(g, parts, buf, buf);
  }
  void reduce_scatter(const group& g, const buffer& in, buffer& out) override {
    const std::size_t n = out.size(), es = std::size_t(size_of(in.type()));
    if (in.size() != n * g.size())
      throw invalid_argument("reduce_scatter: buffer holds " + std::to_string(in.size()) + " elements, expected " +
                             std::to_string(n * g.size()));
    const std::size_t me = index_in(g);
    std::vector<buffer> slices, got;
    std::vector<outgoing> sends;
    std::vector<incoming> recvs;
    slices.reserve(g.size());
    got.reserve(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (g[i] == comm_.rank()) continue;
      slices.push_back(scratch(n, in.type()));
      copy_bytes(slices.back().raw(), static_cast<const char*>(in.raw()) + i * n * es, n * es);
      sends.push_back({g[i], &slices.back()});
      got.push_back(scratch(n, in.type()));
      recvs.push_back({g[i], &got.back()});
    }
    exchange_in(sends, recvs, "reduce_scatter", g);
    // sum in group order: this rank's own slice sits at its position in the group
    buffer own = scratch(n, in.type());
    copy_bytes(own.raw(), static_cast<const char*>(in.raw()) + me * n * es, n * es);
    std::vector<const buffer*> parts;
    std::size_t k = 0;
    for (int p : g) parts.push_back(p == comm_.rank() ? &own : &got[k++]);
    sum_parts(parts, out);
  }
  void all_gather(const group& g, const buffer& in, buffer& out) override {
    const std::size_t n = in.size(), es = std::size_t(size_of(in.type()));
    if (out.size() != n * g.size())
      throw invalid_argument("all_gather: buffer holds " + std::to_string(out.size()) + " elements, expected " +
                             std::to_string(n * g.size()));
    auto parts = gather_parts(g, in, "all_gather");
    std::size_t k = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      const void* src = g[i] == comm_.rank() ? in.raw() : parts[k++].raw();
      copy_bytes(static_cast<char*>(out.raw()) + i * n * es, src, n * es);
    }
  }
  void synchronize() override { TENSOROPT_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  /// exchange() for the members `g` of a collective (named in its errors).
  void exchange_in(std::span<const outgoing> sends, std::span<const incoming> recvs, const char* what,
                   const group& g) {
    const int me = comm_.rank(), tag = comm_.next_tag();
    std::vector<std::shared_ptr<cuda_detail::device_mailbox::post>> mine;
    for (const auto& s : sends) {
      auto p = std::make_shared<cuda_detail::device_mailbox::post>();
      *p = {me, s.peer, tag, s.data->raw(), s.data->bytes(), nullptr};
      TENSOROPT_CUDA_CHECK(cudaEventCreateWithFlags(&p->ready, cudaEventDisableTiming));
      TENSOROPT_CUDA_CHECK(cudaEventRecord(p->ready, stream_));
      mine.push_back(p);
      std::lock_guard lk(box_->mu);
      box_->posts.push_back(p);
    }
    if (!mine.empty()) box_->cv.notify_all();
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (const auto& r : recvs) {
      std::shared_ptr<cuda_detail::device_mailbox::post> p;
      {
        std::unique_lock lk(box_->mu);
        auto find = [&] {
          return std::find_if(box_->posts.begin(), box_->posts.end(),
                              [&](const auto& q) { return q->from == r.peer && q->to == me && q->tag == tag; });
        };
        while (find() == box_->posts.end())
          if (!wait_step(lk, deadline, what, g) && find() == box_->posts.end())
            throw runtime_error(where(what, g) + ": timed out after " + std::to_string(timeout_.count()) +
                                " ms waiting for rank " + std::to_string(r.peer) + " (device data plane)");
        auto it = find();
        p = *it;
        box_->posts.erase(it);
      }
      if (p->bytes != r.data->bytes())
        throw runtime_error(where(what, g) + ": rank " + std::to_string(r.peer) + " sent " +
                            std::to_string(p->bytes) + " bytes, expected " +
                            std::to_string(r.data->bytes()) + " (the devices are not running the same program)");
      TENSOROPT_CUDA_CHECK(cudaStreamWaitEvent(stream_, p->ready, 0));
      if (p->bytes)
        TENSOROPT_CUDA_CHECK(cudaMemcpyAsync(r.data->raw(), p->data, p->bytes, cudaMemcpyDeviceToDevice, stream_));
      cudaEvent_t taken = nullptr;
      TENSOROPT_CUDA_CHECK(cudaEventCreateWithFlags(&taken, cudaEventDisableTiming));
      TENSOROPT_CUDA_CHECK(cudaEventRecord(taken, stream_));
      {
        std::lock_guard lk(box_->mu);
        p->taken = taken;
        p->done = true;
      }
      box_->cv.notify_all();
    }
    // Keep the packed buffers alive (in stream order) until every peer copied them.
    for (auto& p : mine) {
      {
        std::unique_lock lk(box_->mu);
        while (!p->done)
          if (!wait_step(lk, deadline, what, g) && !p->done)
            throw runtime_error(where(what, g) + ": timed out after " + std::to_string(timeout_.count()) +
                                " ms: rank " + std::to_string(p->to) + " did not take its message (device data plane)");
      }
      TENSOROPT_CUDA_CHECK(cudaStreamWaitEvent(stream_, p->taken, 0));
      (void)cudaEventDestroy(p->ready);
      (void)cudaEventDestroy(p->taken);
    }
  }
  /// Waits on the mailbox until `deadline`, in slices, so that a failure elsewhere in
  /// the world stops the wait (throws runtime_error naming `what` and `g`); false at
  /// the deadline.
  bool wait_step(std::unique_lock<std::mutex>& lk, std::chrono::steady_clock::time_point deadline, const char* what,
                 const group& g) {
    if (comm_.aborted())
      throw runtime_error(where(what, g) + ": aborted because another rank failed (device data plane)");
    const auto slice = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(20));
    return box_->cv.wait_until(lk, slice) == std::cv_status::no_timeout || std::chrono::steady_clock::now() < deadline;
  }
  /// "WHAT over ranks {..} on rank r": how this plane's errors begin.
  std::string where(const char* what, const group& g) const {
    return std::string(what) + " over ranks " + describe(g) + " on rank " + std::to_string(comm_.rank());
  }
  /// Staging: uncounted device memory from the rank's pool.
  buffer scratch(std::size_t n, dtype t) { return be_.scratch(n, t); }
  void copy_bytes(void* dst, const void* src, std::size_t bytes) {
    if (bytes) TENSOROPT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  std::size_t index_in(const group& g) const {
    auto it = std::find(g.begin(), g.end(), comm_.rank());
    if (it == g.end())
      throw invalid_argument("collective over " + describe(g) + " called by rank " + std::to_string(comm_.rank()) +
                             ", which is not in the group");
    return std::size_t(it - g.begin());
  }
  /// Every other member's copy of `b` (in group order, without this rank's).
  std::vector<buffer> gather_parts(const group& g, const buffer& b, const char* what) {
    (void)index_in(g);
    std::vector<buffer> got;
    std::vector<outgoing> sends;
    std::vector<incoming> recvs;
    got.reserve(g.size());
    for (int p : g) {
      if (p == comm_.rank()) continue;
      sends.push_back({p, &b});
      got.push_back(scratch(b.size(), b.type()));
      recvs.push_back({p, &got.back()});
    }
    exchange_in(sends, recvs, what, g);
    return got;
  }
  void sum_in_order(const group& g, std::vector<buffer>& parts, const buffer& own, buffer& out) {
    std::vector<const buffer*> ordered;
    std::size_t k = 0;
    for (int p : g) ordered.push_back(p == comm_.rank() ? &own : &parts[k++]);
    buffer acc = scratch(out.size(), out.type());
    copy_bytes(acc.raw(), ordered[0]->raw(), acc.bytes());
    for (std::size_t i = 1; i < ordered.size(); ++i) add(acc, *ordered[i]);
    copy_bytes(out.raw(), acc.raw(), acc.bytes());
  }
  void sum_parts(const std::vector<const buffer*>& parts, buffer& out) {
    copy_bytes(out.raw(), parts[0]->raw(), out.bytes());
    for (std::size_t i = 1; i < parts.size(); ++i) add(out, *parts[i]);
  }
  void add(buffer& acc, const buffer& x) {
    const auto n = std::int64_t(acc.size());
    if (acc.type() == dtype::fp32) cuda::kernels::add(stream_, acc.as<float>(), x.as<float>(), acc.as<float>(), n);
    else cuda::kernels::add(stream_, acc.as<cuda::bf16>(), x.as<cuda::bf16>(), acc.as<cuda::bf16>(), n);
  }

  communicator& comm_;
  cuda_backend_base& be_;
  cudaStream_t stream_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<cuda_detail::device_mailbox> box_;
};

}  // namespace tensoropt::runtime
