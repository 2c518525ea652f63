// Placements under the device-placement rule and redistribution between any two of them, partial sums included.
#include <doctest/doctest.h>
#include <tensoropt/runtime/cpu_backend.hpp>
#include <tensoropt/runtime/sharding.hpp>
#include <random>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace runtime_sharding_test_file {

namespace to = tensoropt;
namespace rt = tensoropt::runtime;

namespace {
// An op with dims [a, b, c, k] over a tensor t[a, b, c]; k is a contraction (the tensor never follows it).
struct fixture {
  to::op_graph g;
  fixture() {
    to::tensor_info t;
    t.name = "t";
    t.rank = 3;
    t.extents = {4, 6, 8};
    g.tensors.push_back(t);
    to::op_node op;
    op.name = "op";
    op.kind = to::op_kind::add;
    op.dims = {{"a", 4}, {"b", 6}, {"c", 8}, {"k", 4}};
    op.output.tensor = 0;
    op.output.dim = {0, 1, 2, -1, -1, -1};
    g.ops.push_back(op);
  }
};
float term_value(const to::index_t* x, int term) { return float((x[0] * 48 + x[1] * 8 + x[2]) % 13 + 3 * term); }
float global_value(const to::index_t* x, int terms) {
  float s = 0;
  for (int t = 0; t < terms; ++t) s += term_value(x, t);
  return s;
}
std::vector<to::op_config> all_configs(const to::op_node& op, int n, int nodes) {
  std::vector<to::op_config> out;
  to::op_config c;
  const int per[2] = {nodes, n / nodes};
  auto rec = [&](auto& self, int level, std::size_t d, int left) -> void {
    if (d == op.dims.size()) {
      if (level == 0) self(self, 1, 0, per[1]);
      else out.push_back(c);
      return;
    }
    for (int k = 1; k <= left; ++k) {
      if (left % k || op.dims[d].extent % (k * c.degree[0][d])) continue;
      c.degree[std::size_t(level)][d] = k;
      self(self, level, d + 1, left / k);
    }
    c.degree[std::size_t(level)][d] = 1;
  };
  rec(rec, 0, 0, per[0]);
  return out;
}
}  // namespace

TEST_CASE("placement follows the mixed-radix rule: nodes take the outer blocks") {
  fixture f;
  const to::device_mesh mesh(2, 2);
  to::op_config c;
  c.degree[0][0] = 2;  // a split across nodes
  c.degree[1][0] = 2;  // and within a node
  const auto p = rt::place(f.g.ops[0], f.g.ops[0].output, f.g.tensors[0], c, mesh, false);
  for (int r = 0; r < 4; ++r) {
    CHECK(p.box[std::size_t(r)].len[0] == 1);
    CHECK(p.box[std::size_t(r)].lo[0] == r);  // block = node * 2 + gpu = rank
  }
  to::op_config k;
  k.degree[1][3] = 2;  // split the contraction: partial terms
  const auto q = rt::place(f.g.ops[0], f.g.ops[0].output, f.g.tensors[0], k, mesh, true);
  CHECK(q.box[0].terms == 2);
  CHECK(q.box[0].term == 0);
  CHECK(q.box[1].term == 1);
}

TEST_CASE("redistribution between random placements (split, replicated, partial) is exact") {
  fixture f;
  const auto& op = f.g.ops[0];
  const auto& t = f.g.tensors[0];
  std::mt19937 rng(3);
  for (auto [n, nodes] : {std::pair{2, 1}, {4, 1}, {4, 2}, {8, 2}}) {
    const to::device_mesh mesh(nodes, n / nodes);
    const auto configs = all_configs(op, n, nodes);
    REQUIRE(configs.size() > 4);
    rt::local_world w(n);
    for (int trial = 0; trial < 25; ++trial) {
      const auto& cf = configs[rng() % configs.size()];
      const auto& ct = configs[rng() % configs.size()];
      const auto from = rt::place(op, op.output, t, cf, mesh, true);
      const bool to_replicated = trial % 5 == 0;
      const auto to_p = to_replicated ? rt::replicated(t, n) : rt::place(op, op.output, t, ct, mesh, false);
      int bad = 0;
      w.run([&](rt::communicator& c) {
        rt::cpu_backend be;
        const auto& b = from.box[std::size_t(c.rank())];
        rt::buffer local = be.allocate(std::size_t(b.size(3)));
        std::size_t i = 0;
        for (to::index_t x = 0; x < b.len[0]; ++x)
          for (to::index_t y = 0; y < b.len[1]; ++y)
            for (to::index_t z = 0; z < b.len[2]; ++z) {
              const to::index_t g[3] = {b.lo[0] + x, b.lo[1] + y, b.lo[2] + z};
              local[i++] = term_value(g, b.term);
            }
        const rt::buffer out = rt::redistribute(c, from, local, to_p, be);
        const auto& tb = to_p.box[std::size_t(c.rank())];
        i = 0;
        for (to::index_t x = 0; x < tb.len[0]; ++x)
          for (to::index_t y = 0; y < tb.len[1]; ++y)
            for (to::index_t z = 0; z < tb.len[2]; ++z) {
              const to::index_t g[3] = {tb.lo[0] + x, tb.lo[1] + y, tb.lo[2] + z};
              if (out[i++] != global_value(g, b.terms)) ++bad;
            }
        if (out.size() != std::size_t(tb.size(3))) ++bad;
      });
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("validate refuses configs that do not fit the op or the mesh") {
  fixture f;
  const to::device_mesh mesh(1, 4);
  to::op_config c;
  c.degree[1][1] = 4;  // b = 6 is not divisible by 4
  CHECK_THROWS_WITH_AS(rt::validate(f.g.ops[0], c, mesh), doctest::Contains("cannot be split 4 ways"),
                       tensoropt::invalid_argument);
  to::op_config d;
  d.degree[1][5] = 2;  // the op has 4 dims
  CHECK_THROWS_WITH_AS(rt::validate(f.g.ops[0], d, mesh), doctest::Contains("another graph"),
                       tensoropt::invalid_argument);
  to::op_config e;
  e.degree[1][0] = 4;
  e.degree[1][2] = 2;  // 8 ways on 4 devices
  CHECK_THROWS_WITH_AS(rt::validate(f.g.ops[0], e, mesh), doctest::Contains("does not divide"),
                       tensoropt::invalid_argument);
}
}  // namespace runtime_sharding_test_file
