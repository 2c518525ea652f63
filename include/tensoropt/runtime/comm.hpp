// Communicators: the collective operations of the SPMD runtime over a group of
// ranks, and the `local` communicator (N devices = N threads of one process).
//
// Design: a communicator implements only point-to-point `send`/`recv` (plus rank and
// size); every collective is written once here on top of them, with a fixed
// reduction order (group order), so a collective gives bitwise the same result on
// every rank and on every communicator (local threads and MPI agree bit for bit).
// The groups of the runtime are small (the devices that differ in a few mesh digits),
// so the direct algorithms (every member sends to every other) cost little more than
// rings at these sizes. A receive that does not complete within the timeout throws
// tensoropt::runtime_error naming the operation and the ranks still missing: a
// failing device never leaves the others waiting forever.
#pragma once
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>
#include "../core/error.hpp"

namespace tensoropt::runtime {

/// A group of ranks, in ascending order; it must contain the calling rank.
using group = std::vector<int>;

inline std::string describe(const group& g) {
  std::string s = "{";
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(g[i]);
  }
  return s + "}";
}

/// Collectives over groups of ranks, built on the point-to-point operations a
/// concrete communicator provides. Buffers are fp32.
class communicator {
 public:
  virtual ~communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// This rank's index among the ranks that share its machine (which GPU it uses by
  /// default). Ranks of one process's local world are all on one machine.
  virtual int local_rank() const { return rank(); }
  /// Sends `data` to `peer` (never blocks on the receiver).
  virtual void send(int peer, std::span<const float> data, int tag) = 0;
  /// Receives exactly data.size() floats from `peer`; throws runtime_error on
  /// timeout or size mismatch, naming `what`.
  virtual void recv(int peer, std::span<float> data, int tag, const std::string& what) = 0;
  /// Ranks of `g` (other than this one) from which a message with `tag` has not arrived.
  virtual group missing(const group& g, int tag) = 0;
  /// Tells every other rank that this one failed (`why`), so that their receives
  /// stop with an error that names it instead of waiting for the timeout. A
  /// local_world does this by itself (run() sees the failure): nothing to do here.
  virtual void abort_others(const std::string& /*why*/) {}
  /// Whether another rank's abort_others reached this one.
  virtual bool aborted() const { return false; }

  group world() const {
    group g(size());
    for (int i = 0; i < size(); ++i) g[i] = i;
    return g;
  }

  /// Elementwise sum over the group, summed in group order; every rank gets the same bits.
  void all_reduce(const group& g, std::span<float> buf) {
    if (g.size() <= 1) return;
    const int tag = next_tag();
    for (int p : g)
      if (p != rank()) send(p, buf, tag);
    std::vector<float> acc, tmp(buf.size());
    bool first = true;
    for (int p : g) {
      std::span<const float> part = buf;
      if (p != rank()) {
        receive(g, p, tmp, tag, "all_reduce");
        part = tmp;
      }
      if (first) acc.assign(part.begin(), part.end());
      else
        for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += part[i];
      first = false;
    }
    std::copy(acc.begin(), acc.end(), buf.begin());
  }
  /// out[i * n .. (i + 1) * n) = member i's `in` (n = in.size()).
  void all_gather(const group& g, std::span<const float> in, std::span<float> out) {
    check_size(out.size(), in.size() * g.size(), "all_gather");
    const int tag = next_tag();
    for (int p : g)
      if (p != rank()) send(p, in, tag);
    for (std::size_t i = 0; i < g.size(); ++i) {
      auto dst = out.subspan(i * in.size(), in.size());
      if (g[i] == rank()) {
        for (std::size_t k = 0; k < in.size(); ++k) dst[k] = in[k];
      }
      else receive(g, g[i], dst, tag, "all_gather");
    }
  }
  /// out = sum over members (in group order) of their in[my_index * n .. +n), n = out.size().
  void reduce_scatter(const group& g, std::span<const float> in, std::span<float> out) {
    check_size(in.size(), out.size() * g.size(), "reduce_scatter");
    const int tag = next_tag();
    const std::size_t n = out.size();
    for (std::size_t i = 0; i < g.size(); ++i)
      if (g[i] != rank()) send(g[i], in.subspan(i * n, n), tag);
    const std::size_t me = index_in(g);
    std::vector<float> tmp(n);
    bool first = true;
    for (int p : g) {
      std::span<const float> part = in.subspan(me * n, n);
      if (p != rank()) {
        receive(g, p, tmp, tag, "reduce_scatter");
        part = tmp;
      }
      for (std::size_t i = 0; i < n; ++i) out[i] = first ? part[i] : out[i] + part[i];
      first = false;
    }
  }
  /// out[i * n .. +n) = member i's in[my_index * n .. +n), n = in.size() / group size.
  void all_to_all(const group& g, std::span<const float> in, std::span<float> out) {
    check_size(in.size(), out.size(), "all_to_all");
    check_size(in.size() % g.size(), 0, "all_to_all (size not divisible by the group)");
    const int tag = next_tag();
    const std::size_t n = in.size() / g.size();
    for (std::size_t i = 0; i < g.size(); ++i)
      if (g[i] != rank()) send(g[i], in.subspan(i * n, n), tag);
    const std::size_t me = index_in(g);
    for (std::size_t i = 0; i < g.size(); ++i) {
      auto dst = out.subspan(i * n, n);
      if (g[i] == rank()) std::copy_n(in.begin() + me * n, n, dst.begin());
      else receive(g, g[i], dst, tag, "all_to_all");
    }
  }
  /// Returns when every member of the group has entered the barrier.
  void barrier(const group& g) {
    const int tag = next_tag();
    for (int p : g)
      if (p != rank()) send(p, {}, tag);
    for (int p : g)
      if (p != rank()) receive(g, p, {}, tag, "barrier");
  }
  void barrier() { barrier(world()); }
  /// A fresh tag for an exchange every rank performs in the same order (SPMD).
  int next_tag() { return tag_counter_++ & 0x3fffffff; }
  /// Restarts the tag sequence (every rank at once, e.g. after a failed run).
  void reset_tags() { tag_counter_ = 1; }

 protected:
  void receive(const group& g, int peer, std::span<float> dst, int tag, const char* op) {
    try {
      recv(peer, dst, tag, op);
    } catch (const runtime_error& e) {
      group m = missing(g, tag);  // members before `peer` were received already
      std::erase_if(m, [&](int q) { return q < peer; });
      if (m.empty()) throw;
      throw runtime_error(std::string(e.what()) + "; over ranks " + describe(g) + " still missing rank(s) " +
                          describe(m));
    }
  }

 private:
  static void check_size(std::size_t got, std::size_t want, const char* op) {
    if (got != want)
      throw invalid_argument(std::string(op) + ": buffer holds " + std::to_string(got) + " floats, expected " +
                             std::to_string(want));
  }
  std::size_t index_in(const group& g) const {
    auto it = std::find(g.begin(), g.end(), rank());
    if (it == g.end()) throw invalid_argument("collective over " + describe(g) + " called by rank " +
                                              std::to_string(rank()) + ", which is not in the group");
    return std::size_t(it - g.begin());
  }
  int tag_counter_ = 1;
};

class local_world;

/// One device of a local_world (a thread of this process).
class local_comm final : public communicator {
 public:
  local_comm(local_world& w, int rank) : world_(&w), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override;
  void send(int peer, std::span<const float> data, int tag) override;
  void recv(int peer, std::span<float> data, int tag, const std::string& what) override;
  group missing(const group& g, int tag) override;
  /// Whether another device of the world has failed (its run() rethrows that error).
  bool aborted() const override;

 private:
  local_world* world_;
  int rank_;
};

/// N devices as N threads of one process, with shared-memory mailboxes.
/// `run(f)` runs f(comm) on every device in its own thread and rethrows the first
/// failure; when one device fails the others' pending receives fail promptly.
///
/// The device threads are persistent: rank 0 runs on the calling thread and ranks
/// 1..n-1 on worker threads started by the first run and reused by every later run
/// (a step of a small model takes a few ms, and the threads' allocation caches of
/// backend.hpp stay warm; with both, a 1-device train_gpt step spent 91 % instead
/// of 87 % of its time in kernels). The workers end with the world. run() must
/// not be called from inside a run.
class local_world {
 public:
  /// Throws invalid_argument unless 1 <= n <= 1024.
  explicit local_world(int n, std::chrono::milliseconds timeout = std::chrono::seconds(30))
      : n_(n), timeout_(timeout) {
    if (n < 1 || n > 1024)
      throw invalid_argument("local_world: " + std::to_string(n) + " devices requested; use 1 to 1024");
    boxes_.resize(std::size_t(n) * n);
    cvs_ = std::make_unique<std::condition_variable[]>(std::size_t(n));
    for (int r = 0; r < n; ++r) comms_.push_back(std::make_unique<local_comm>(*this, r));
  }
  local_world(const local_world&) = delete;
  local_world& operator=(const local_world&) = delete;
  ~local_world() {
    {
      std::lock_guard lk(pool_mu_);
      stop_ = true;
    }
    pool_cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return n_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  local_comm& comm(int r) { return *comms_.at(std::size_t(r)); }

  /// Runs f(communicator&) on every device concurrently; rethrows the first exception.
  void run(const std::function<void(communicator&)>& f) {
    {
      std::lock_guard lk(mu_);
      for (auto& b : boxes_) b.clear();
      failed_rank_ = -1;
    }
    for (auto& c : comms_) c->reset_tags();
    errors_.assign(static_cast<std::size_t>(n_), nullptr);
    start_workers();
    {
      std::lock_guard lk(pool_mu_);
      job_ = &f;
      pending_ = n_ - 1;
      ++generation_;
    }
    pool_cv_.notify_all();
    run_rank(0, f);
    {
      std::unique_lock lk(pool_mu_);
      done_cv_.wait(lk, [&] { return pending_ == 0; });
      job_ = nullptr;
    }
    // The first failure is the cause; the others are usually its consequence.
    int first = -1;
    {
      std::lock_guard lk(mu_);
      first = failed_rank_;
    }
    if (first >= 0) std::rethrow_exception(errors_[std::size_t(first)]);
  }

 private:
  friend class local_comm;
  struct message {
    int tag;
    std::vector<float> data;
  };
  std::deque<message>& box(int from, int to) { return boxes_[std::size_t(from) * n_ + to]; }

  void run_rank(int r, const std::function<void(communicator&)>& f) {
    try {
      f(*comms_[std::size_t(r)]);
    } catch (...) {
      errors_[std::size_t(r)] = std::current_exception();
      std::lock_guard lk(mu_);
      if (failed_rank_ < 0) failed_rank_ = r;
      for (int q = 0; q < n_; ++q) cvs_[std::size_t(q)].notify_all();
    }
  }
  void start_workers() {
    if (!workers_.empty() || n_ == 1) return;
    for (int r = 1; r < n_; ++r)
      workers_.emplace_back([this, r] {
        std::uint64_t seen = 0;
        for (;;) {
          const std::function<void(communicator&)>* job = nullptr;
          {
            std::unique_lock lk(pool_mu_);
            pool_cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            job = job_;
          }
          run_rank(r, *job);
          std::lock_guard lk(pool_mu_);
          if (--pending_ == 0) done_cv_.notify_all();
        }
      });
  }

  int n_;
  std::chrono::milliseconds timeout_;
  std::vector<std::unique_ptr<local_comm>> comms_;
  std::vector<std::deque<message>> boxes_;
  std::mutex mu_;
  std::unique_ptr<std::condition_variable[]> cvs_;  // one per receiving device
  int failed_rank_ = -1;
  // The persistent device threads (ranks 1..n-1) and the job they run.
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> workers_;
  std::mutex pool_mu_;
  std::condition_variable pool_cv_, done_cv_;
  const std::function<void(communicator&)>* job_ = nullptr;
  std::uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

inline int local_comm::size() const { return world_->size(); }

inline void local_comm::send(int peer, std::span<const float> data, int tag) {
  if (peer < 0 || peer >= size())
    throw invalid_argument("send: rank " + std::to_string(peer) + " does not exist (" + std::to_string(size()) +
                           " devices)");
  std::lock_guard lk(world_->mu_);
  world_->box(rank_, peer).push_back({tag, std::vector<float>(data.begin(), data.end())});
  world_->cvs_[std::size_t(peer)].notify_all();
}

inline void local_comm::recv(int peer, std::span<float> data, int tag, const std::string& what) {
  if (peer < 0 || peer >= size())
    throw invalid_argument("recv: rank " + std::to_string(peer) + " does not exist (" + std::to_string(size()) +
                           " devices)");
  std::unique_lock lk(world_->mu_);
  auto& q = world_->box(peer, rank_);
  auto find = [&] { return std::find_if(q.begin(), q.end(), [&](const auto& m) { return m.tag == tag; }); };
  const auto deadline = std::chrono::steady_clock::now() + world_->timeout_;
  while (find() == q.end()) {
    if (world_->failed_rank_ >= 0 && world_->failed_rank_ != rank_)
      throw runtime_error(what + " on rank " + std::to_string(rank_) + ": aborted because rank " +
                          std::to_string(world_->failed_rank_) + " failed");
    if (world_->cvs_[std::size_t(rank_)].wait_until(lk, deadline) == std::cv_status::timeout && find() == q.end())
      throw runtime_error(what + " on rank " + std::to_string(rank_) + ": timed out after " +
                          std::to_string(world_->timeout_.count()) + " ms waiting for rank " + std::to_string(peer));
  }
  auto it = find();
  if (it->data.size() != data.size())
    throw runtime_error(what + " on rank " + std::to_string(rank_) + ": rank " + std::to_string(peer) + " sent " +
                        std::to_string(it->data.size()) + " floats, expected " + std::to_string(data.size()) +
                        " (the devices are not running the same program)");
  std::copy(it->data.begin(), it->data.end(), data.begin());
  q.erase(it);
}

inline bool local_comm::aborted() const {
  std::lock_guard lk(world_->mu_);
  return world_->failed_rank_ >= 0 && world_->failed_rank_ != rank_;
}

inline group local_comm::missing(const group& g, int tag) {
  std::lock_guard lk(world_->mu_);
  group m;
  for (int p : g) {
    if (p == rank_) continue;
    auto& q = world_->box(p, rank_);
    if (std::none_of(q.begin(), q.end(), [&](const auto& msg) { return msg.tag == tag; })) m.push_back(p);
  }
  return m;
}

}  // namespace tensoropt::runtime
