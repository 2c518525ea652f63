// Which redistributions are one collective or all-reduce then all-gather
// (collective_match.hpp), and
// redistribute() through a data plane that opts into collectives gives the generic
// path's values on random placements (split, replicated, partial).
#include <doctest/doctest.h>
#include <tensoropt/runtime/cpu_backend.hpp>
#include <tensoropt/runtime/sharding.hpp>
#include <atomic>
#include <random>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace runtime_collective_match_test_file {

namespace to = tensoropt;
namespace rt = tensoropt::runtime;

namespace {
// An op with dims [a, b, c, k] over a tensor t[a, b, c]; k is a contraction.
to::op_node make_op() {
  to::op_node op;
  op.name = "op";
  op.kind = to::op_kind::add;
  op.dims = {{"a", 4}, {"b", 6}, {"c", 8}, {"k", 4}};
  op.output.tensor = 0;
  op.output.dim = {0, 1, 2, -1, -1, -1};
  return op;
}
to::tensor_info make_tensor() {
  to::tensor_info t;
  t.name = "t";
  t.rank = 3;
  t.extents = {4, 6, 8};
  return t;
}
rt::placement place(const to::op_node& op, const to::tensor_info& t, std::initializer_list<std::pair<int, int>> split,
                    int n, bool partial) {
  to::op_config c;
  for (auto [d, k] : split) c.degree[1][std::size_t(d)] = k;
  return rt::place(op, op.output, t, c, to::device_mesh(1, n), partial);
}
rt::collective_kind kind_of(const rt::placement& a, const rt::placement& b, int me = 0) {
  return rt::match_collective(a.box, b.box, a.rank, me).kind;
}

/// The host data plane, opting into collectives and counting which ones ran.
struct counting_plane final : rt::data_plane {
  explicit counting_plane(rt::communicator& c) : host(c) {}
  rt::communicator& control() override { return host.control(); }
  void exchange(std::span<const rt::outgoing> s, std::span<const rt::incoming> r, const char* w) override {
    ++exchanges;
    host.exchange(s, r, w);
  }
  void all_reduce(const rt::group& g, rt::buffer& b) override {
    ++collectives;
    host.all_reduce(g, b);
  }
  void reduce_scatter(const rt::group& g, const rt::buffer& in, rt::buffer& out) override {
    ++collectives;
    host.reduce_scatter(g, in, out);
  }
  void all_gather(const rt::group& g, const rt::buffer& in, rt::buffer& out) override {
    ++collectives;
    host.all_gather(g, in, out);
  }
  bool native_collectives() const override { return true; }
  rt::host_data_plane host;
  int exchanges = 0, collectives = 0;
};

float term_value(const to::index_t* x, int term) { return float((x[0] * 48 + x[1] * 8 + x[2]) % 13 + 3 * term); }
}  // namespace

TEST_CASE("the standard layout changes are matched to their collective") {
  const auto op = make_op();
  const auto t = make_tensor();
  using K = rt::collective_kind;
  const auto rep = rt::replicated(t, 4);
  // split over a (the outer axis) -> replicated: an all-gather over all four
  const auto split_a = place(op, t, {{0, 4}}, 4, false);
  CHECK(kind_of(split_a, rep) == K::all_gather);
  CHECK(rt::match_collective(split_a.box, rep.box, 3, 2).members == rt::group{0, 1, 2, 3});
  // split over b with a of length 4 outside it: slices are not contiguous
  CHECK(kind_of(place(op, t, {{1, 2}, {0, 2}}, 4, false), rep) == K::none);
  // partial over k -> replicated: an all-reduce
  const auto part = place(op, t, {{3, 4}}, 4, true);
  CHECK(kind_of(part, rep) == K::all_reduce);
  // partial over k -> split over a: a reduce-scatter
  CHECK(kind_of(part, split_a) == K::reduce_scatter);
  // two groups of two: partial over k in pairs, split over a between pairs -> replicated: not one collective
  const auto mixed = place(op, t, {{0, 2}, {3, 2}}, 4, true);
  CHECK(kind_of(mixed, rep) == K::none);
  // ... it is two steps: all-reduce within each pair, then all-gather across pairs
  const auto steps = rt::collective_steps(mixed.box, rep.box, 3, 1);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].kind == K::all_reduce);
  CHECK(steps[1].kind == K::all_gather);
  CHECK(steps[0].members.size() == 2);
  CHECK(steps[1].members.size() == 2);
  // ... but -> split over a in pairs: an all-reduce within each pair
  const auto a2 = place(op, t, {{0, 2}}, 4, false);
  const auto m = rt::match_collective(mixed.box, a2.box, 3, 3);
  CHECK(m.kind == K::all_reduce);
  CHECK(m.members.size() == 2);
  // a change of split axis is an all-to-all: the generic exchange
  CHECK(kind_of(split_a, place(op, t, {{2, 4}}, 4, false)) == K::none);
  // a finer split (a local slice) moves nothing: not a collective
  CHECK(kind_of(rep, split_a) == K::none);
}

TEST_CASE("redistribute through native collectives equals the generic exchange on random placements") {
  const auto op = make_op();
  const auto t = make_tensor();
  std::mt19937 rng(11);
  int used = 0, two_steps = 0;
  for (int n : {2, 4}) {
    std::vector<to::op_config> configs;
    for (int a = 1; a <= n; a *= 2)
      for (int b = 1; a * b <= n; b *= 2)
        for (int k = 1; a * b * k <= n; k *= 2) {
          if (6 % b) continue;
          to::op_config c;
          c.degree[1][0] = a;
          c.degree[1][1] = b;
          c.degree[1][3] = k;
          if (a * b * k == n) configs.push_back(c);
        }
    REQUIRE(configs.size() > 2);
    const to::device_mesh mesh(1, n);
    rt::local_world w(n);
    for (int trial = 0; trial < 40; ++trial) {
      const auto from = rt::place(op, op.output, t, configs[rng() % configs.size()], mesh, true);
      const auto to_p = trial % 3 == 0 ? rt::replicated(t, n)
                                       : rt::place(op, op.output, t, configs[rng() % configs.size()], mesh, false);
      std::atomic<int> bad = 0, coll = 0, two = 0;
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
        rt::host_data_plane plain(c);
        const rt::buffer want = rt::redistribute(plain, from, local, to_p, be);
        counting_plane native(c);
        const rt::buffer got = rt::redistribute(native, from, local, to_p, be);
        if (got.size() != want.size()) ++bad;
        for (std::size_t j = 0; j < got.size() && j < want.size(); ++j)
          if (got[j] != want[j]) ++bad;
        const auto steps = int(rt::collective_steps(from.box, to_p.box, 3, c.rank()).size());
        if (from == to_p ? native.collectives != 0
                         : steps != native.collectives || native.exchanges != (steps ? 0 : 1))
          ++bad;
        coll += native.collectives;
        two += steps == 2;
      });
      CHECK(bad == 0);
      used += coll;
      two_steps += two;
    }
  }
  CHECK(used > 0);       // some random layout changes were collectives
  CHECK(two_steps > 0);  // and some were all-reduce then all-gather
}
}  // namespace runtime_collective_match_test_file
