// The MPI communicator: one process per device (OpenMPI), on one machine or many.
//
// Kept out of runtime.hpp so that users of tensoropt::runtime without MPI still
// build; link MPI::MPI_CXX. Sends are non-blocking (buffered until complete, so the
// runtime's send-all-then-receive exchanges never deadlock); receives poll with a
// timeout (yielding between polls: sleeping even 20 us made train_gpt 30x slower with
// 4 processes on 2 cores), so a collective whose peers are gone fails with a message
// instead of hanging. The collectives are the communicator base's, so MPI and local runs give
// the same bits. A rank that fails calls abort_others: a message on a tag of its own
// (32767; ordinary tags use 0 .. 32766) to every other rank, carrying its error, which
// their receives check for while they poll and rethrow, naming that rank. An abort
// can overtake ordinary messages sent before it (MPI orders messages per pair of ranks
// only): a rank that fails right after a barrier may have its abort arrive before
// another rank has received every barrier message. So a receive that sees an abort
// still waits up to abort_grace (1 s) for the message it wants before it throws;
// later receives throw at once. After an abort the ranks are out of step: the run is over.
#pragma once
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // the C API only: the deprecated C++ bindings warn
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#include <chrono>
#include <deque>
#include <list>
#include <string>
#include <thread>
#include <vector>
#include "comm.hpp"

namespace tensoropt::runtime {

/// Owns MPI initialization for the process (initializes unless already done;
/// finalizes on destruction if it initialized).
class mpi_session {
 public:
  mpi_session(int* argc, char*** argv) {
    int done = 0;
    MPI_Initialized(&done);
    if (!done) {
      MPI_Init(argc, argv);
      owner_ = true;
    }
  }
  mpi_session(const mpi_session&) = delete;
  mpi_session& operator=(const mpi_session&) = delete;
  ~mpi_session() {
    if (owner_) MPI_Finalize();
  }

 private:
  bool owner_ = false;
};

/// One device per MPI rank of MPI_COMM_WORLD (MPI must be initialized).
class mpi_comm final : public communicator {
 public:
  explicit mpi_comm(std::chrono::milliseconds timeout = std::chrono::seconds(60)) : timeout_(timeout) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm node = MPI_COMM_NULL;  // the ranks that share this rank's memory (its machine)
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) == MPI_SUCCESS &&
        node != MPI_COMM_NULL) {
      MPI_Comm_rank(node, &local_rank_);
      MPI_Comm_free(&node);
    } else {
      local_rank_ = rank_;
    }
  }
  mpi_comm(const mpi_comm&) = delete;
  mpi_comm& operator=(const mpi_comm&) = delete;
  ~mpi_comm() override { drain(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  void send(int peer, std::span<const float> data, int tag) override {
    check_peer(peer, "send");
    reap();
    pending_.push_back({std::vector<float>(data.begin(), data.end()), MPI_REQUEST_NULL});
    auto& p = pending_.back();
    MPI_Isend(p.data.data(), int(p.data.size()), MPI_FLOAT, peer, mpi_tag(tag), MPI_COMM_WORLD, &p.req);
  }

  void recv(int peer, std::span<float> data, int tag, const std::string& what) override {
    check_peer(peer, "recv");
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    int flag = 0;
    MPI_Status st;
    while (true) {
      MPI_Iprobe(peer, mpi_tag(tag), MPI_COMM_WORLD, &flag, &st);
      if (flag) break;
      check_abort(what);
      reap();
      if (std::chrono::steady_clock::now() > deadline)
        throw runtime_error(what + " on rank " + std::to_string(rank_) + ": timed out after " +
                            std::to_string(timeout_.count()) + " ms waiting for rank " + std::to_string(peer));
      std::this_thread::yield();
    }
    int count = 0;
    MPI_Get_count(&st, MPI_FLOAT, &count);
    if (std::size_t(count) != data.size())
      throw runtime_error(what + " on rank " + std::to_string(rank_) + ": rank " + std::to_string(peer) + " sent " +
                          std::to_string(count) + " floats, expected " + std::to_string(data.size()) +
                          " (the processes are not running the same program)");
    MPI_Recv(data.data(), count, MPI_FLOAT, peer, mpi_tag(tag), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }

  void abort_others(const std::string& why) override {
    if (aborted_) return;  // the first failure is the cause; its consequences stay local
    aborted_ = true;
    std::vector<float> text(why.begin(), why.end());
    for (int p = 0; p < size_; ++p)
      if (p != rank_) {
        pending_.push_back({text, MPI_REQUEST_NULL});
        MPI_Isend(pending_.back().data.data(), int(text.size()), MPI_FLOAT, p, abort_tag, MPI_COMM_WORLD,
                  &pending_.back().req);
      }
  }
  bool aborted() const override { return aborted_; }

  group missing(const group& g, int tag) override {
    group m;
    for (int p : g) {
      if (p == rank_) continue;
      int flag = 0;
      MPI_Iprobe(p, mpi_tag(tag), MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      if (!flag) m.push_back(p);
    }
    return m;
  }

 private:
  struct outgoing {
    std::vector<float> data;
    MPI_Request req;
  };
  static constexpr int abort_tag = 32767;                // MPI guarantees tags up to 32767
  static constexpr std::chrono::milliseconds abort_grace{1000};
  static int mpi_tag(int tag) { return tag % abort_tag; }
  /// Throws when another rank's abort_others message has arrived and abort_grace has
  /// passed since this rank first saw it (see the file comment).
  void check_abort(const std::string& what) {
    if (abort_from_ < 0) {
      int flag = 0;
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, abort_tag, MPI_COMM_WORLD, &flag, &st);
      if (!flag) return;
      int count = 0;
      MPI_Get_count(&st, MPI_FLOAT, &count);
      std::vector<float> text(std::size_t(count > 0 ? count : 0));
      MPI_Recv(text.data(), count, MPI_FLOAT, st.MPI_SOURCE, abort_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      abort_from_ = st.MPI_SOURCE;
      abort_why_.assign(text.begin(), text.end());
      abort_seen_ = std::chrono::steady_clock::now();
    }
    if (std::chrono::steady_clock::now() - abort_seen_ < abort_grace) return;
    aborted_ = true;
    throw runtime_error(what + " on rank " + std::to_string(rank_) + ": aborted because rank " +
                        std::to_string(abort_from_) + " failed: " + abort_why_);
  }
  void check_peer(int peer, const char* op) const {
    if (peer < 0 || peer >= size_)
      throw invalid_argument(std::string(op) + ": rank " + std::to_string(peer) + " does not exist (" +
                             std::to_string(size_) + " MPI processes)");
  }
  void reap() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->req, &done, MPI_STATUS_IGNORE);
      it = done ? pending_.erase(it) : std::next(it);
    }
  }
  /// Completes the pending sends; after an abort, gives up on those nobody receives
  /// once the timeout has passed (a failed run must not hang at exit).
  void drain() {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (!pending_.empty() && (!aborted_ || std::chrono::steady_clock::now() < deadline)) {
      reap();
      if (!pending_.empty()) std::this_thread::yield();
    }
    pending_.clear();
  }
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  bool aborted_ = false;
  int abort_from_ = -1;  // the rank whose abort arrived (-1: none yet), its error, when it arrived
  std::string abort_why_;
  std::chrono::steady_clock::time_point abort_seen_;
  std::chrono::milliseconds timeout_;
  std::list<outgoing> pending_;
};

}  // namespace tensoropt::runtime
