// cost/enumerate: config counts for known cases, legality of every config, bounds, labels.
#include <tensoropt/cost/enumerate.hpp>
#include <doctest/doctest.h>
#include "cost_test_graphs.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace cost_enumerate_test_file {

using namespace tensoropt;

namespace {
const op_graph g = testing::mlp(8, {4, 4});  // input [8, 4]; fc1: dims b=8, k=4, n=4
const op_node& fc1 = g.ops[1];

void check_all_legal(const op_graph& gr, const device_mesh& m, const enumerate_options& o = {}) {
  for (auto& op : gr.ops)
    for (auto& c : enumerate_configs(gr, op, m, o)) {
      CHECK(config_error(op, c, m) == "");
      for (std::size_t d = 0; d < op.dims.size(); ++d) CHECK(op.dims[d].extent % c.total_degree(int(d)) == 0);
      for (int L = 0; L < 2; ++L) CHECK(m.level_size(L) % c.split_product(L) == 0);
    }
}
}  // namespace

TEST_CASE("known config counts: a linear on one node of 4") {
  const device_mesh m(1, 4);
  // at most 2 split dims: none (1) + one dim at 2 or 4 (3 dims x 2) + two dims at 2x2 (3 pairs)
  CHECK(enumerate_layouts(fc1, m).size() == 10);
  // recompute doubles every layout; optimizer sharding applies where W[k, n] is
  // replicated: all layouts but k4, n4, k2 n2
  CHECK(enumerate_configs(g, fc1, m).size() == 10 * 2 + 7 * 2);
  enumerate_options no_switch;
  no_switch.recompute = no_switch.shard_optimizer = false;
  CHECK(enumerate_configs(g, fc1, m, no_switch).size() == 10);
  enumerate_options one_dim;
  one_dim.max_split_dims = {1, 1};
  CHECK(enumerate_layouts(fc1, m, one_dim).size() == 7);
  enumerate_options full;
  full.max_replication = {1, 1};
  CHECK(enumerate_layouts(fc1, m, full).size() == 6);  // b4 k4 n4 b2k2 b2n2 k2n2
  CHECK(enumerate_layouts(fc1, device_mesh(1, 1)).size() == 1);
}

TEST_CASE("known config counts: two nodes of 4") {
  const device_mesh m(2, 4);
  // nodes must be used fully by one dim (b2, k2 or n2); then per node 10, 9, 9 layouts
  CHECK(enumerate_layouts(fc1, m).size() == 28);
  enumerate_options free;
  free.max_replication = {0, 0};
  CHECK(enumerate_layouts(fc1, m, free).size() > 28);
  check_all_legal(g, m);
  check_all_legal(g, m, free);
}

TEST_CASE("levels of any size, and the fallback when no config fills a level") {
  const op_graph g6 = testing::mlp(12, {6, 10});
  check_all_legal(g6, device_mesh(3, 6));
  check_all_legal(g6, device_mesh(5, 3));
  // 7 nodes: no dim divides by 7, so the node level replicates (largest product 1)
  const auto l7 = enumerate_layouts(g6.ops[1], device_mesh(7, 2));
  CHECK(!l7.empty());
  for (auto& c : l7) CHECK(c.split_product(0) == 1);
}

TEST_CASE("unsplittable dims are never split; GPT layer ops stay bounded") {
  const op_graph gpt = testing::gpt_layers(8, 64, 64, 8);
  for (auto& op : gpt.ops)
    for (auto& c : enumerate_layouts(op, device_mesh(8, 8)))
      for (std::size_t d = 0; d < op.dims.size(); ++d)
        if (!op.dims[d].splittable) CHECK(c.total_degree(int(d)) == 1);
  std::size_t most = 0;
  for (auto& op : gpt.ops) most = std::max(most, enumerate_layouts(op, device_mesh(8, 8)).size());
  CHECK(most <= 200);
  CHECK(most >= 10);
}

TEST_CASE("skip_dims: the head dim is not split by default") {
  const op_graph gpt = testing::gpt_layers(8, 64, 64, 8);
  op_graph g = gpt;
  for (auto& op : g.ops)
    for (auto& d : op.dims) d.splittable = d.splittable || d.name == "d";
  const op_node& qkv = g.ops[2];
  REQUIRE(qkv.name == "layers.0.attn.qkv");
  const int d = qkv.dim_index("d");
  const auto def = enumerate_layouts(qkv, device_mesh(1, 8));
  for (auto& c : def) CHECK(c.total_degree(d) == 1);
  enumerate_options all;
  all.skip_dims = {};
  const auto more = enumerate_layouts(qkv, device_mesh(1, 8), all);
  // splittable b, s, h, heads (+ d): 1 + 4*3 + 6*3 = 31 layouts, with d 1 + 5*3 + 10*3 = 46
  CHECK(def.size() == 31);
  CHECK(more.size() == 46);
}

TEST_CASE("config_error names the problem") {
  const device_mesh m(1, 4);
  op_config c;
  c.degree[1][0] = 3;
  CHECK(config_error(fc1, c, m).find("does not divide the level size 4") != std::string::npos);
  c.degree[1][0] = 1;
  c.degree[0][2] = 8;
  CHECK(config_error(fc1, c, device_mesh(8, 1)).find("does not divide dim 'n' of extent 4") != std::string::npos);
}

TEST_CASE("labels") {
  op_config c;
  c.degree[1][0] = 2;
  c.degree[1][2] = 2;
  CHECK(label_of(fc1, c, device_mesh(1, 4)) == "b2 n2");
  CHECK(label_of(fc1, c, device_mesh(1, 8)) == "b2 n2 r2");
  c.recompute = c.shard_optimizer = true;
  CHECK(label_of(fc1, c, device_mesh(1, 4)) == "b2 n2 | rc zo");
  op_config d;
  d.degree[0][0] = 2;
  d.degree[1][1] = 4;
  CHECK(label_of(fc1, d, device_mesh(2, 4)) == "n:b2 g:k4");
  CHECK(label_of(fc1, op_config{}, device_mesh(2, 4)) == "n:r2 g:r4");
  CHECK(label_of(fc1, op_config{}, device_mesh(1, 1)) == "-");
  static_assert(label_of(testing::mlp(8, {4, 4}).ops[1], op_config{}, device_mesh(1, 2)) == "r2");
}

TEST_CASE("a node count with an odd factor may replicate by it, so weights can split across nodes") {
  // fc1: b = 12, k = 8, n = 16 on 6 nodes x 2: only b divides by 6, so with the node
  // level used fully every weight would stay whole on each node; 3-way replication
  // (6's odd part) lets k2 or n2 split the weight between nodes
  const op_graph g12 = testing::mlp(12, {8, 16});
  const op_node& op = g12.ops[1];
  const device_mesh m(6, 2);
  const auto ls = enumerate_layouts(op, m);
  bool weight_split = false;
  for (auto& c : ls) {
    CHECK(6 / c.split_product(0) <= 3);  // replication never above the odd part
    if (c.degree[0][0] == 1 && c.split_product(0) == 2) weight_split = true;
  }
  CHECK(weight_split);
  CHECK(detail::odd_part(384) == 3);
  CHECK(detail::odd_part(64) == 1);
  // a power-of-two node count keeps the full split
  for (auto& c : enumerate_layouts(op, device_mesh(4, 2))) CHECK(c.split_product(0) == 4);
  // an op without parameters (the relu) keeps the full split unless asked otherwise
  const op_node& relu = g12.ops[2];
  REQUIRE(relu.params.empty());
  for (auto& c : enumerate_layouts(relu, m)) CHECK(c.split_product(0) == 6);
  enumerate_options every;
  every.odd_part_all_ops = true;
  bool relu_replicated = false;
  for (auto& c : enumerate_layouts(relu, m, every)) relu_replicated = relu_replicated || c.split_product(0) == 2;
  CHECK(relu_replicated);
  check_all_legal(g12, m);
  check_all_legal(g12, m, every);
}
}  // namespace cost_enumerate_test_file
