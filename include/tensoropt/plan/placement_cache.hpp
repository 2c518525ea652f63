// place() (cost/placement.hpp) memoized on one mesh, for the pipeline planner's stage
// replays (plan/stage_layout.hpp, plan/stage_crossings.hpp).
//
// A placement names a box per device of the stage, so building or comparing one costs
// O(d) (and splitting it over replicas, O(d^2)); on megatron-1t at pp 2 a stage has
// 1,536 devices. A stage's layers are identical blocks, so its placements repeat layer
// after layer and plan after plan: they are memoized by what place() reads, and equal
// placements are one object (interned by content).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include "../cost/placement.hpp"

namespace tensoropt::detail {

/// place() (cost/placement.hpp), memoized on one mesh; `split`: then split_over_replicas.
/// The placements returned stay valid as long as the cache. Equal placements are one
/// object (interned by content), so two placements from the cache are equal exactly when
/// they are the same pointer: comparing boxes costs O(devices) and the replay compares
/// layouts per op (perf on megatron-145.6b's pipeline peaks: memcmp 13 % and the keys'
/// map 2 % of a pp 4 run).
class placement_cache {
 public:
  explicit placement_cache(const device_mesh& mesh) : mesh_(mesh) {}
  const placement& get(const op_node& op, const tensor_map& m, const tensor_info& t, const op_config& c, bool partial,
                       bool split = false) {
    key_t key{};
    std::size_t at = 0;
    key[at++] = std::int64_t(op.dims.size()) | std::int64_t(t.rank) << 8 | std::int64_t(partial) << 16 |
                std::int64_t(split) << 17;
    for (const auto& d : op.dims) key[at++] = d.extent;
    at = 1 + max_op_dims;
    for (int L = 0; L < max_levels; ++L)
      for (int d = 0; d < max_op_dims; ++d) key[at++] = c.degree[std::size_t(L)][std::size_t(d)];
    for (int a = 0; a < t.rank; ++a) {
      key[at++] = t.extents[std::size_t(a)];
      key[at++] = m.dim[std::size_t(a)];
    }
    if (auto it = memo_.find(key); it != memo_.end()) return *it->second;
    placement pl = place(op, m, t, c, mesh_, partial);
    if (split) split_over_replicas(pl);
    std::size_t h = std::hash<int>{}(pl.rank);
    for (const auto& b : pl.box)
      for (int a = 0; a < pl.rank; ++a) h = h * 1000003u ^ std::size_t(b.lo[std::size_t(a)] * 31 + b.len[std::size_t(a)]);
    const placement* same = nullptr;
    for (auto [it, end] = by_content_.equal_range(h); it != end && !same; ++it)
      if (*it->second == pl) same = it->second;
    if (!same) {
      bytes_ += double(mesh_.devices()) * double(sizeof(shard_box));
      store_.push_back(std::move(pl));
      same = &store_.back();
      by_content_.emplace(h, same);
    }
    memo_.emplace(key, same);
    return *same;
  }
  const device_mesh& mesh() const { return mesh_; }
  /// About the bytes held; clearing invalidates every placement returned.
  double bytes() const { return bytes_; }
  void clear() {
    memo_.clear();
    by_content_.clear();
    store_.clear();
    bytes_ = 0;
  }

 private:
  // what place() reads: the op's dims, the config's degrees, the tensor's shape and map,
  // partial or not, split over replicas or not
  using key_t = std::array<std::int64_t, 1 + max_op_dims + max_levels * max_op_dims + 2 * max_tensor_rank>;
  struct key_hash {
    std::size_t operator()(const key_t& k) const {
      std::size_t h = 0;
      for (const auto v : k) h = h * 1000003u ^ std::size_t(v);
      return h;
    }
  };
  device_mesh mesh_;
  std::unordered_map<key_t, const placement*, key_hash> memo_;
  std::unordered_multimap<std::size_t, const placement*> by_content_;
  std::deque<placement> store_;
  double bytes_ = 0;
};

}  // namespace tensoropt::detail
