// Plans on two-level meshes (nodes x devices per node) for the runtime equivalence
// tests, and the models those tests train with batches that 8 devices really split.
//
// A two-level plan sets degree[0][d] (across nodes) and degree[1][d] (inside a node)
// for each op dim d; a level whose degrees multiply to less than its size replicates
// over the rest (runtime/sharding.hpp: nodes take the outer blocks of a split dim).
// The plans here cover the layouts a planner picks on such meshes:
//  - data parallel on both levels: the batch dim split nodes x devices-per-node
//    ways; built only when every batch dim divides, so a test cannot pass on a plan
//    that silently fell back to replication (the models' batch of 16 gives each of
//    8 devices 2 samples, or 1 with 2 micro-batches);
//  - hybrid: data parallel across nodes, tensor parallel inside a node (the largest
//    splittable non-batch dim), Megatron's usual placement;
//  - inverted: tensor parallel across nodes, data parallel inside a node;
//  - random: per op, random legal degrees on each level, with random recompute and
//    optimizer-sharding switches.
// Every plan is checked against the one-device run with check_against
// (runtime_models.hpp): losses and weights within 1e-5 relative after 3 steps.
#pragma once
#include "runtime_models.hpp"
#include <random>
#include <vector>

namespace rt_test {

/// The runtime test models with a global batch of 16 (runtime_model_types.hpp's
/// defaults are 4 or 8, which 8-way data parallelism cannot split).
using mlp16 = mlp_of<16>;
using gpt16 = gpt_of<16>;
using cnn16 = cnn_of<16>;
using moe16 = moe_of<16>;

/// Data parallel on both levels of `nodes` x `per_node`: each op's batch dim split
/// nodes ways across nodes and per_node ways inside. REQUIREs that every op with a
/// batch dim can be split so (the micro-batch's extent divides).
inline rt::training_plan data_parallel_2l(const to::op_graph& g, int nodes, int per_node, int micro = 1) {
  rt::training_plan p{{}, micro, to::device_mesh(nodes, per_node)};
  int split = 0, batched = 0;
  for (auto& op : g.ops) {
    to::op_config c;
    for (std::size_t d = 0; d < op.dims.size(); ++d)
      if (op.dims[d].batch) {
        ++batched;
        if (op.dims[d].extent % (index_t(nodes) * per_node * micro) == 0) {
          c.degree[0][d] = nodes;
          c.degree[1][d] = per_node;
          ++split;
        }
        break;
      }
    p.configs.push_back(c);
  }
  REQUIRE(batched > 0);
  REQUIRE(split == batched);  // every batch dim is really split over all devices
  return p;
}

/// The largest splittable non-batch dim of `op` whose extent `n` divides (after the
/// degrees already in `c`), or -1.
inline int widest_model_dim(const to::op_node& op, const to::op_config& c, int n) {
  int best = -1;
  for (std::size_t d = 0; d < op.dims.size(); ++d)
    if (!op.dims[d].batch && op.dims[d].splittable && op.dims[d].extent % (n * c.total_degree(int(d))) == 0 &&
        (best < 0 || op.dims[d].extent > op.dims[std::size_t(best)].extent))
      best = int(d);
  return best;
}

/// Batch split at level `batch_level`, the widest model dim at the other level
/// (ops without such a dim replicate there). hybrid: batch_level 0 (across nodes).
inline rt::training_plan mixed_2l(const to::op_graph& g, int nodes, int per_node, int batch_level) {
  rt::training_plan p{{}, 1, to::device_mesh(nodes, per_node)};
  const int size[2] = {nodes, per_node};
  const int model_level = 1 - batch_level;
  for (auto& op : g.ops) {
    to::op_config c;
    for (std::size_t d = 0; d < op.dims.size(); ++d)
      if (op.dims[d].batch && op.dims[d].extent % size[batch_level] == 0) {
        c.degree[std::size_t(batch_level)][d] = size[batch_level];
        break;
      }
    const int m = widest_model_dim(op, c, size[model_level]);
    if (m >= 0) c.degree[std::size_t(model_level)][std::size_t(m)] = size[model_level];
    p.configs.push_back(c);
  }
  return p;
}

/// Every legal two-level config of `op` on nodes x per_node: per level, degrees over
/// splittable dims whose product divides the level's size, the total per dim
/// dividing its extent.
inline std::vector<to::op_config> legal_configs_2l(const to::op_node& op, int nodes, int per_node) {
  std::vector<to::op_config> out;
  to::op_config c;
  const int size[2] = {nodes, per_node};
  auto rec = [&](auto& self, int level, std::size_t d, int used) -> void {
    if (d == op.dims.size()) {
      if (level == 0) self(self, 1, 0, 1);
      else out.push_back(c);
      return;
    }
    for (int k = 1; k <= size[level]; ++k) {
      if (size[level] % (used * k) != 0) continue;
      if (k > 1 && !op.dims[d].splittable) continue;
      if (op.dims[d].extent % (k * (level == 1 ? c.degree[0][d] : 1)) != 0) continue;
      c.degree[std::size_t(level)][d] = k;
      self(self, level, d + 1, used * k);
    }
    c.degree[std::size_t(level)][d] = 1;
  };
  rec(rec, 0, 0, 1);
  return out;
}

/// A random legal two-level config per op (of the micro-batch graph), with random
/// recompute and shard_optimizer switches.
inline rt::training_plan random_plan_2l(const to::op_graph& g, int nodes, int per_node, unsigned seed, int micro = 1) {
  std::mt19937 rng(seed);
  rt::training_plan p{{}, micro, to::device_mesh(nodes, per_node)};
  const auto mg = to::with_batch(g, g.batch / micro);
  for (auto& op : mg.ops) {
    const auto all = legal_configs_2l(op, nodes, per_node);
    auto c = all[rng() % all.size()];
    c.recompute = rng() % 3 == 0;
    c.shard_optimizer = rng() % 2 == 0;
    p.configs.push_back(c);
  }
  return p;
}

/// How many ops of `p` split something across nodes (level 0): a plan that never
/// does would test nothing of the second level.
inline int ops_split_across_nodes(const rt::training_plan& p) {
  int n = 0;
  for (auto& c : p.configs) n += c.split_product(0) > 1;
  return n;
}

/// The shared body of the per-model two-level tests: on 2 x 2, 2 x 4 and 4 x 2, data
/// parallel on both levels, hybrid, inverted and two random plans; on 2 x 4, data
/// parallel and a random plan with 2 micro-batches; Adam on a random 2 x 2 plan; each
/// against the one-device run.
inline void check_two_level(const to::op_graph& g) {
  REQUIRE(g.batch % 16 == 0);
  const auto ref = run(g, data_parallel(g, 1), 3);
  CHECK(ref.losses[2] != ref.losses[0]);  // the weights moved
  const int meshes[3][2] = {{2, 2}, {2, 4}, {4, 2}};
  int random_across = 0;
  for (auto& m : meshes) {
    const int nodes = m[0], per = m[1];
    const auto dp = data_parallel_2l(g, nodes, per);
    CHECK(ops_split_across_nodes(dp) > 0);
    check_against(g, ref, dp, "two-level data parallel");
    const auto hybrid = mixed_2l(g, nodes, per, 0), inverted = mixed_2l(g, nodes, per, 1);
    CHECK(ops_split_across_nodes(hybrid) > 0);
    CHECK(ops_split_across_nodes(inverted) > 0);
    check_against(g, ref, hybrid, "data parallel across nodes, tensor parallel inside");
    check_against(g, ref, inverted, "tensor parallel across nodes, data parallel inside");
    for (unsigned s = 0; s < 2; ++s) {
      const auto rp = random_plan_2l(g, nodes, per, 11 + s + 7u * unsigned(nodes));
      random_across += ops_split_across_nodes(rp);
      check_against(g, ref, rp, "two-level random plan");
    }
  }
  CHECK(random_across > 0);  // the random plans use the node level too
  check_against(g, ref, data_parallel_2l(g, 2, 4, 2), "two-level data parallel + 2 micro-batches");
  check_against(g, ref, random_plan_2l(g, 2, 4, 5, 2), "two-level random plan + 2 micro-batches");
  // Adam (eps as in check_adam: a weight whose true gradient is zero gets rounding
  // noise that a tiny eps would amplify differently under each plan)
  rt::optimizer_options adam;
  adam.type = rt::optimizer_options::kind::adam;
  adam.lr = 1e-3f;
  adam.eps = 1e-3f;
  const auto ref_adam = run(g, data_parallel(g, 1), 3, adam);
  check_against(g, ref_adam, random_plan_2l(g, 2, 2, 23), "two-level random plan, Adam", adam);
}

}  // namespace rt_test
