// A sub-communicator: a subset of a communicator's ranks seen as a communicator of
// its own (ranks 0 .. members - 1), e.g. the devices of one pipeline stage.
//
// It forwards point-to-point messages to the parent, translating ranks, so it works
// over any communicator (local threads, MPI) and inherits the parent's timeouts and
// abort-on-failure: a receive from a member that failed fails like the parent's. Its
// collectives draw tags from its own sequence (every member runs the same
// collectives in the same order, SPMD within the group). Messages of two
// sub-communicators, or of a sub-communicator and its parent, must not share a pair
// of parent ranks unless their tags differ: disjoint groups (pipeline stages) and
// cross-group traffic with its own tags (pipeline.hpp) never do.
#pragma once
#include <algorithm>
#include <span>
#include <string>
#include "../core/error.hpp"
#include "comm.hpp"

namespace tensoropt::runtime {

class sub_communicator final : public communicator {
 public:
  /// The group `members` (parent ranks, ascending, including the caller's) of
  /// `parent`. Throws invalid_argument when the caller is not a member, a member
  /// does not exist, or the list is not ascending.
  sub_communicator(communicator& parent, group members) : parent_(parent), members_(std::move(members)) {
    for (std::size_t i = 0; i < members_.size(); ++i) {
      if (members_[i] < 0 || members_[i] >= parent.size())
        throw invalid_argument("sub-communicator: rank " + std::to_string(members_[i]) + " does not exist (" +
                               std::to_string(parent.size()) + " ranks)");
      if (i && members_[i] <= members_[i - 1])
        throw invalid_argument("sub-communicator: members " + describe(members_) + " are not strictly ascending");
    }
    auto it = std::find(members_.begin(), members_.end(), parent.rank());
    if (it == members_.end())
      throw invalid_argument("sub-communicator: rank " + std::to_string(parent.rank()) + " is not in " +
                             describe(members_));
    rank_ = int(it - members_.begin());
  }
  int rank() const override { return rank_; }
  int size() const override { return int(members_.size()); }
  /// The parent's: a member uses the GPU its rank in the whole run would use.
  int local_rank() const override { return parent_.local_rank(); }
  void send(int peer, std::span<const float> data, int tag) override { parent_.send(parent_rank(peer), data, tag); }
  void recv(int peer, std::span<float> data, int tag, const std::string& what) override {
    parent_.recv(parent_rank(peer), data, tag, what);
  }
  group missing(const group& g, int tag) override {
    group in_parent;
    for (int r : g) in_parent.push_back(parent_rank(r));
    group m;
    for (int r : parent_.missing(in_parent, tag)) m.push_back(int(std::find(members_.begin(), members_.end(), r) - members_.begin()));
    return m;
  }
  void abort_others(const std::string& why) override { parent_.abort_others(why); }
  bool aborted() const override { return parent_.aborted(); }
  /// The parent rank of member `r`.
  int parent_rank(int r) const {
    if (r < 0 || r >= size())
      throw invalid_argument("sub-communicator " + describe(members_) + ": member " + std::to_string(r) +
                             " does not exist");
    return members_[std::size_t(r)];
  }
  const group& members() const { return members_; }
  communicator& parent() { return parent_; }

 private:
  communicator& parent_;
  group members_;
  int rank_ = 0;
};

/// The communicator `c` is made over: `c` itself, or the root of its parents when it
/// is a sub-communicator (what kind of ranks these are: threads, processes).
inline communicator& root_of(communicator& c) {
  communicator* r = &c;
  while (auto* s = dynamic_cast<sub_communicator*>(r)) r = &s->parent();
  return *r;
}

}  // namespace tensoropt::runtime
