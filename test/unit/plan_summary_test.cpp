// plan/summary.hpp: the one-line summary names the main split, the other splits, and the
// recomputed and optimizer-sharded layers.
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/model/model.hpp>
#include <tensoropt/plan/summary.hpp>
#include <doctest/doctest.h>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_summary_test_file {

using namespace tensoropt;

namespace {
using tiny_gpt = models::gpt<{.layers = 3, .hidden = 64, .heads = 8, .seq = 32, .vocab = 128, .batch = 8}>;

/// Every op with a batch dim split `dp` ways on it.
std::vector<op_config> data_parallel(const op_graph& g, int dp) {
  std::vector<op_config> c(g.ops.size());
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    for (std::size_t d = 0; d < g.ops[i].dims.size(); ++d)
      if (g.ops[i].dims[d].batch) {
        c[i].degree[0][d] = dp;
        break;
      }
  return c;
}
}  // namespace

TEST_CASE("the summary names the main split, the other splits and the switches per layer") {
  const op_graph g = lower<tiny_gpt>();
  const auto dp = data_parallel(g, 4);
  CHECK(summarize(g, std::vector<op_config>(g.ops.size())) == "replicated");
  CHECK(summarize(g, dp) == "dp 4");

  // The layer norms split on the sequence dim instead: named, with their count.
  auto sp = dp;
  std::size_t norms = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (g.ops[i].kind == op_kind::layer_norm) {
      const int s = g.ops[i].dim_index("s");
      REQUIRE(s >= 0);
      sp[i] = op_config{};
      sp[i].degree[0][std::size_t(s)] = 4;
      ++norms;
    }
  REQUIRE(norms >= 3);
  CHECK(summarize(g, sp) == "dp 4 (s4 on " + std::to_string(norms) + " ops)");
  // One more op on yet another split: counted apart.
  std::size_t other = 0;
  while (g.ops[other].kind == op_kind::input || g.ops[other].kind == op_kind::layer_norm) ++other;
  sp[other] = op_config{};
  CHECK(summarize(g, sp) == "dp 4 (s4 on " + std::to_string(norms) + " ops, 1 other)");

  // Recompute every op of layer 1 and shard the optimizer state of layers 0 and 2.
  auto rc = dp;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if (g.ops[i].repeat_id < 0) continue;
    rc[i].recompute = g.ops[i].repeat_index == 1;
    rc[i].shard_optimizer = g.ops[i].repeat_index != 1;
  }
  CHECK(summarize(g, rc) == "dp 4, recompute 1/3 layers, zero 2/3 layers");
  CHECK(summarize(g, std::vector<op_config>(2)) == "?");
}

TEST_CASE("split_name writes the split dims as config labels do") {
  const op_graph g = lower<tiny_gpt>();
  for (const auto& op : g.ops) {
    if (op.kind != op_kind::linear) continue;
    op_config c;
    CHECK(split_name(op, c) == "replicated");
    c.degree[0][0] = 2;
    c.degree[1][0] = 2;
    CHECK(split_name(op, c) == std::string(op.dims[0].name) + "4");
    break;
  }
}
}  // namespace plan_summary_test_file
