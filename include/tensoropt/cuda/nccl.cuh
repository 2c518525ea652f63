// NCCL, wrapped: an owning move-only communicator and a non-owning reference, a
// group guard, a unique id bootstrapped over any host communicator (the runtime's
// control plane: local threads or MPI; share_unique_id, nccl_communicator::join),
// sub-communicators per mesh group (split), the collectives the executor's
// redistributions map to (all-reduce, reduce-scatter, all-gather, grouped send /
// receive), and deadlines.
//
// Deadlines: NCCL collectives never time out by themselves; a rank that skips one
// leaves the others spinning forever. Communicators here are created non-blocking,
// each collective is named when enqueued, and wait() polls the stream and
// ncclCommGetAsyncError until the work finished, an asynchronous error appeared,
// or the deadline passed; then it aborts the communicator (ncclCommAbort releases
// the spinning kernels) and throws runtime_error naming the pending collectives and
// the group, as the CPU communicators do. An aborted communicator refuses further
// collectives.
//
// NCCL itself is loaded at run time (cuda/libraries.cuh: nccl_api()), by the first
// call that needs it; a missing libnccl is a library_error naming the fix.
//
// Public signatures never expose ncclComm_t (get() does, for glue code).
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>
#include "error.cuh"
#include "libraries.cuh"
#include "launch.cuh"
#include "stream.cuh"

namespace tensoropt::cuda {

/// The id every rank of a new communicator must share: rank 0 creates it, the
/// bytes travel over the host communicator, the others rebuild it from them.
struct nccl_unique_id {
  std::array<std::byte, NCCL_UNIQUE_ID_BYTES> bytes{};

  static nccl_unique_id create() {
    ncclUniqueId id;
    TENSOROPT_NCCL_CHECK(nccl_api().ncclGetUniqueId(&id));
    nccl_unique_id u;
    std::memcpy(u.bytes.data(), &id, sizeof id);
    return u;
  }
  /// From bytes received from rank 0; throws invalid_argument on a wrong length.
  static nccl_unique_id from_bytes(std::span<const std::byte> b) {
    if (b.size() != NCCL_UNIQUE_ID_BYTES)
      throw invalid_argument("NCCL unique id: got " + std::to_string(b.size()) + " bytes, expected " +
                             std::to_string(NCCL_UNIQUE_ID_BYTES));
    nccl_unique_id u;
    std::memcpy(u.bytes.data(), b.data(), b.size());
    return u;
  }
  ncclUniqueId get() const {
    ncclUniqueId id;
    std::memcpy(&id, bytes.data(), sizeof id);
    return id;
  }
  /// The bytes as 64 floats of 16 bits each (exact through any float transport).
  std::vector<float> to_floats() const {
    std::vector<float> f(NCCL_UNIQUE_ID_BYTES / 2);
    for (std::size_t i = 0; i < f.size(); ++i)
      f[i] = float(std::to_integer<unsigned>(bytes[2 * i]) | std::to_integer<unsigned>(bytes[2 * i + 1]) << 8);
    return f;
  }
  /// From to_floats()' output; throws invalid_argument on a wrong length or value.
  static nccl_unique_id from_floats(std::span<const float> f) {
    if (f.size() != NCCL_UNIQUE_ID_BYTES / 2)
      throw invalid_argument("NCCL unique id: got " + std::to_string(f.size()) + " values, expected " +
                             std::to_string(NCCL_UNIQUE_ID_BYTES / 2));
    nccl_unique_id u;
    for (std::size_t i = 0; i < f.size(); ++i) {
      if (!(f[i] >= 0.f && f[i] < 65536.f && f[i] == float(unsigned(f[i]))))
        throw invalid_argument("NCCL unique id: value " + std::to_string(f[i]) + " is not a 16-bit integer");
      const unsigned v = unsigned(f[i]);
      u.bytes[2 * i] = std::byte(v & 0xffu);
      u.bytes[2 * i + 1] = std::byte(v >> 8);
    }
    return u;
  }
};

/// Rank g[0]'s new unique id, on every rank of the group g, sent over a host
/// communicator (the runtime's control plane: local threads or MPI). HostComm
/// needs rank() and all_gather(group, span<const float>, span<float>) (as
/// runtime::communicator has); the 128 bytes travel as 64 floats of 16 bits each,
/// exact in any float transport. Collective over g.
template <class HostComm>
nccl_unique_id share_unique_id(HostComm& comm, const std::vector<int>& g) {
  if (g.empty()) throw invalid_argument("NCCL unique id: the group is empty");
  (void)nccl_api();  // every rank loads NCCL first: a missing library fails on all of them, none waits
  constexpr std::size_t n = NCCL_UNIQUE_ID_BYTES / 2;
  std::vector<float> mine(n, 0.f), all(n * g.size());
  if (comm.rank() == g[0]) mine = nccl_unique_id::create().to_floats();
  comm.all_gather(g, std::span<const float>(mine), std::span<float>(all));
  return nccl_unique_id::from_floats(std::span<const float>(all).first(n));
}

namespace detail {
template <class T>
constexpr ncclDataType_t nccl_type() {
  if constexpr (std::is_same_v<T, float>) return ncclFloat32;
  else if constexpr (std::is_same_v<T, bf16>) return ncclBfloat16;
  else if constexpr (std::is_same_v<T, double>) return ncclFloat64;
  else if constexpr (std::is_same_v<T, std::int64_t>) return ncclInt64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return ncclInt32;
  else static_assert(sizeof(T) == 0, "no NCCL data type for this element type");
}
/// Waits for a non-blocking communicator's pending operation (ncclInProgress).
inline ncclResult_t settle(ncclComm_t c, std::chrono::steady_clock::time_point until) {
  ncclResult_t r = ncclInProgress;
  while (nccl_api().ncclCommGetAsyncError(c, &r) == ncclSuccess && r == ncclInProgress &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::yield();
  return r;
}
}  // namespace detail

namespace detail {
/// What a communicator and all references to it share.
struct nccl_state {
  ncclComm_t comm = nullptr;
  int rank = 0, size = 0;
  std::string name;
  std::vector<std::string> pending;  ///< collectives enqueued since the last wait()
  std::chrono::milliseconds deadline{60000};
  bool aborted = false;
};
}  // namespace detail

/// A non-owning handle to a communicator: the collectives. Cheap to copy; the
/// owning nccl_communicator must outlive it.
class nccl_communicator_ref {
 public:
  nccl_communicator_ref() = default;
  explicit nccl_communicator_ref(detail::nccl_state* s) : st_(s) {}
  int rank() const { return st_->rank; }
  int size() const { return st_->size; }
  const std::string& name() const { return st_->name; }
  ncclComm_t get() const { return st_->comm; }
  bool aborted() const { return st_->aborted; }

  /// recv = sum over ranks of send (count elements; in place when send == recv).
  template <class T>
  void all_reduce(const T* send, T* recv, std::size_t count, cudaStream_t s) {
    check_open("all_reduce");
    enqueue("all_reduce", nccl_api().ncclAllReduce(send, recv, count, detail::nccl_type<T>(), ncclSum, st_->comm, s));
  }
  /// recv (recv_count elements) = this rank's block of the sum of send (size() * recv_count).
  template <class T>
  void reduce_scatter(const T* send, T* recv, std::size_t recv_count, cudaStream_t s) {
    check_open("reduce_scatter");
    enqueue("reduce_scatter",
            nccl_api().ncclReduceScatter(send, recv, recv_count, detail::nccl_type<T>(), ncclSum, st_->comm, s));
  }
  /// recv (size() * send_count elements) = every rank's send, in rank order.
  template <class T>
  void all_gather(const T* send, T* recv, std::size_t send_count, cudaStream_t s) {
    check_open("all_gather");
    enqueue("all_gather", nccl_api().ncclAllGather(send, recv, send_count, detail::nccl_type<T>(), st_->comm, s));
  }
  /// Point-to-point halves of a grouped exchange (call inside an nccl_group).
  template <class T>
  void send(const T* buf, std::size_t count, int peer, cudaStream_t s) {
    check_open("send");
    enqueue("send", nccl_api().ncclSend(buf, count, detail::nccl_type<T>(), peer, st_->comm, s));
  }
  template <class T>
  void recv(T* buf, std::size_t count, int peer, cudaStream_t s) {
    check_open("recv");
    enqueue("recv", nccl_api().ncclRecv(buf, count, detail::nccl_type<T>(), peer, st_->comm, s));
  }

  /// Blocks until the work enqueued on `s` finished. On an asynchronous NCCL error
  /// or past the deadline, aborts the communicator and throws runtime_error naming
  /// the pending collectives and the group.
  void wait(cudaStream_t s) {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const cudaError_t e = cudaStreamQuery(s);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) detail::throw_cuda(e, "cudaStreamQuery after NCCL", __FILE__, __LINE__);
      ncclResult_t r = ncclSuccess;
      if (st_->comm) (void)nccl_api().ncclCommGetAsyncError(st_->comm, &r);
      if (r != ncclSuccess && r != ncclInProgress)
        fail(std::string("failed asynchronously: ") + nccl_api().ncclGetErrorString(r));
      if (std::chrono::steady_clock::now() - start > st_->deadline)
        fail("did not finish within " + std::to_string(st_->deadline.count()) +
             " ms (a rank probably skipped it or died)");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    st_->pending.clear();
  }

 private:
  void check_open(const char* what) const {
    if (st_->aborted)
      throw runtime_error("NCCL " + std::string(what) + " on group " + st_->name +
                          ": the communicator was aborted after an earlier failure");
  }
  void enqueue(const char* what, ncclResult_t r) {
    detail::check_nccl(r, what, __FILE__, __LINE__);
    st_->pending.push_back(what);
    // A non-blocking communicator may still be enqueueing: no other NCCL call on
    // it until that settles (inside a group, at the group's end instead).
    if (r == ncclInProgress) {
      const ncclResult_t s = detail::settle(st_->comm, std::chrono::steady_clock::now() + st_->deadline);
      if (s == ncclInProgress) fail("could not be enqueued within the deadline");
      if (s != ncclSuccess) fail(std::string("failed while being enqueued: ") + nccl_api().ncclGetErrorString(s));
    }
  }
  [[noreturn]] void fail(const std::string& why) {
    std::string ops;
    for (auto& p : st_->pending) ops += (ops.empty() ? "" : ", ") + p;
    if (ops.empty()) ops = "work";
    if (st_->comm) (void)nccl_api().ncclCommAbort(st_->comm);  // releases the kernels spinning on a missing peer
    st_->comm = nullptr;
    st_->aborted = true;
    st_->pending.clear();
    throw runtime_error("NCCL " + ops + " on group " + st_->name + " (rank " + std::to_string(st_->rank) + " of " +
                        std::to_string(st_->size) + ") " + why + "; the communicator was aborted");
  }

  detail::nccl_state* st_ = nullptr;
};

/// An owning NCCL communicator (move-only): finalized and destroyed, or aborted
/// after a failure, on destruction.
class nccl_communicator {
 public:
  /// Joins the communicator of `id` as `rank` of `nranks` on `device` (collective:
  /// every rank calls it). `name` is the group's name in error messages.
  nccl_communicator(const nccl_unique_id& id, int nranks, int rank, int device, std::string name,
                    std::chrono::milliseconds deadline = std::chrono::seconds(60))
      : st_(new detail::nccl_state) {
    st_->name = std::move(name);
    st_->deadline = deadline;
    require_device(device);
    device_guard g(device);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t c = nullptr;
    TENSOROPT_NCCL_CHECK(nccl_api().ncclCommInitRankConfig(&c, nranks, id.get(), rank, &config));
    adopt(c, "ncclCommInitRankConfig");
  }
  /// The communicator of the ranks of g (this rank among them) on `device`, its
  /// id bootstrapped over the host communicator (share_unique_id). Collective over g.
  template <class HostComm>
  static nccl_communicator join(HostComm& comm, const std::vector<int>& g, int device, std::string name,
                                std::chrono::milliseconds deadline = std::chrono::seconds(60)) {
    int me = -1;
    for (std::size_t i = 0; i < g.size(); ++i)
      if (g[i] == comm.rank()) me = int(i);
    if (me < 0)
      throw invalid_argument("NCCL group " + name + ": rank " + std::to_string(comm.rank()) + " is not a member");
    const auto id = share_unique_id(comm, g);
    return nccl_communicator(id, int(g.size()), me, device, std::move(name), deadline);
  }
  nccl_communicator(nccl_communicator&& o) noexcept : st_(std::exchange(o.st_, nullptr)) {}
  nccl_communicator& operator=(nccl_communicator&& o) noexcept {
    nccl_communicator t(std::move(o));
    std::swap(st_, t.st_);
    return *this;
  }
  nccl_communicator(const nccl_communicator&) = delete;
  nccl_communicator& operator=(const nccl_communicator&) = delete;
  ~nccl_communicator() {
    if (!st_) return;
    if (ncclComm_t c = st_->comm) {
      const ncclResult_t f = nccl_api().ncclCommFinalize(c);
      if ((f == ncclSuccess || f == ncclInProgress) &&
          detail::settle(c, std::chrono::steady_clock::now() + st_->deadline) == ncclSuccess)
        (void)nccl_api().ncclCommDestroy(c);
      else (void)nccl_api().ncclCommAbort(c);
    }
    delete st_;
  }

  /// The sub-communicator of the ranks passing the same `color` (ordered by
  /// `key`), e.g. one per mesh group; collective over this communicator.
  nccl_communicator split(int color, int key, std::string name) const {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t c = nullptr;
    TENSOROPT_NCCL_CHECK(nccl_api().ncclCommSplit(st_->comm, color, key, &c, &config));
    (void)detail::settle(st_->comm, std::chrono::steady_clock::now() + st_->deadline);
    nccl_communicator sub;
    sub.st_->name = std::move(name);
    sub.st_->deadline = st_->deadline;
    sub.adopt(c, "ncclCommSplit");
    return sub;
  }

  nccl_communicator_ref handle() const { return nccl_communicator_ref(st_); }
  operator nccl_communicator_ref() const { return handle(); }
  void set_deadline(std::chrono::milliseconds d) { st_->deadline = d; }

 private:
  nccl_communicator() : st_(new detail::nccl_state) {}
  void adopt(ncclComm_t c, const char* what) {
    const ncclResult_t r = detail::settle(c, std::chrono::steady_clock::now() + st_->deadline);
    if (r != ncclSuccess) {
      (void)nccl_api().ncclCommAbort(c);
      detail::check_nccl(r == ncclInProgress ? ncclSystemError : r, what, __FILE__, __LINE__);
    }
    st_->comm = c;
    TENSOROPT_NCCL_CHECK(nccl_api().ncclCommUserRank(c, &st_->rank));
    TENSOROPT_NCCL_CHECK(nccl_api().ncclCommCount(c, &st_->size));
  }

  detail::nccl_state* st_ = nullptr;
};

/// ncclGroupStart for the guard's scope: the sends and receives of one grouped
/// exchange (or several collectives) launch together at end() / destruction.
class nccl_group {
 public:
  nccl_group() { TENSOROPT_NCCL_CHECK(nccl_api().ncclGroupStart()); }
  nccl_group(const nccl_group&) = delete;
  nccl_group& operator=(const nccl_group&) = delete;
  /// Ends the group now, throwing on failure.
  void end() {
    if (open_) {
      open_ = false;
      TENSOROPT_NCCL_CHECK(nccl_api().ncclGroupEnd());
    }
  }
  ~nccl_group() {
    if (open_) (void)nccl_api().ncclGroupEnd();
  }

 private:
  bool open_ = true;
};

}  // namespace tensoropt::cuda
