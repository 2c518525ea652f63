// The exact frontier over (peak bound, time) by cap enumeration (plan/peak_search.hpp):
// equal to brute force over the same objective on small random problems (every graph
// shape, small costs with ties and real-sized ones) and on the runtime tests' models
// where the strategies are few enough to enumerate; under cap bucketing every reported
// memory is within (1 + epsilon) of its strategy's bound and every exact point is
// covered within that factor; a memory limit keeps exactly the points under it.
#include <doctest/doctest.h>
#include <tensoropt/plan/peak_search.hpp>
#include <random>
#include "random_problem.hpp"
#include "runtime_model_types.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_peak_search_test_file {

namespace to = tensoropt;

namespace {
struct bf_point {
  to::cost_t memory, time;
  constexpr bool operator==(const bf_point&) const = default;
};

/// Every strategy of `pb`, pruned to the frontier over (bound, time); empty past `limit` strategies.
std::vector<bf_point> brute_force(const to::peak_bound_problem& pb, to::cost_t memory_limit = to::max_problem_cost) {
  const auto& p = pb.kept;
  std::vector<int> choice(p.nodes.size(), 0);
  std::vector<bf_point> all;
  for (;;) {
    const auto c = to::cost_of(p, choice);
    const auto v = to::bound_of(pb, choice);
    if (v.bound() <= memory_limit) all.push_back({v.bound(), c.time});
    std::size_t i = 0;
    while (i < choice.size() && ++choice[i] == int(p.nodes[i].configs.size())) choice[i++] = 0;
    if (i == choice.size()) break;
  }
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.memory != b.memory ? a.memory < b.memory : a.time < b.time; });
  std::vector<bf_point> f;
  for (auto& x : all)
    if (f.empty() || x.time < f.back().time) f.push_back(x);
  return f;
}

std::vector<bf_point> points_of(const to::peak_bound_problem& pb, const to::peak_search_result& r) {
  std::vector<bf_point> v;
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& q = r.points[i];
    CHECK(to::cost_of(pb.kept, q.choice).time == q.time);  // the strategy attains the point
    const auto b = to::bound_of(pb, q.choice);
    if (r.epsilon == 0) CHECK(b.bound() == q.memory);
    CHECK(b.bound() <= q.memory);
    CHECK(double(q.memory) <= (1 + r.epsilon) * double(b.bound()));
    CHECK(r.cap[i] >= b.cap);
    v.push_back({q.memory, q.time});
  }
  return v;
}

to::peak_bound_problem random_bound_problem(std::mt19937_64& rng, int kind, bool real) {
  to::peak_bound_problem pb;
  const int nodes = int(rng() % 6) + 1;
  pb.kept = rand_problem::random_problem(rng, kind, nodes, 3, real, 1000, real ? 1 << 20 : 6);
  const std::int64_t hi = real ? 1 << 20 : 6;
  for (auto& n : pb.kept.nodes) {
    pb.node_cap.emplace_back();
    for (std::size_t c = 0; c < n.configs.size(); ++c) pb.node_cap.back().push_back(std::int64_t(rng() % std::uint64_t(hi)));
  }
  for (auto& e : pb.kept.edges) {
    pb.edge_cap.emplace_back();
    for (std::size_t c = 0; c < e.memory.size(); ++c)
      pb.edge_cap.back().push_back(rng() % 3 == 0 ? 0 : std::int64_t(rng() % std::uint64_t(hi)));
  }
  return pb;
}
}  // namespace

TEST_CASE("cap enumeration equals brute force on random problems") {
  std::mt19937_64 rng(7);
  int nonempty_caps = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int kind = trial % 5;
    const bool real = trial % 2;
    const auto pb = random_bound_problem(rng, kind, real);
    INFO("trial " << trial);
    const auto r = to::solve_peak_bound(pb);
    CHECK(r.exact);
    CHECK(points_of(pb, r) == brute_force(pb));
    nonempty_caps += r.caps > 1;
    // a memory limit: exactly the points under it
    const auto bf = brute_force(pb);
    if (bf.size() >= 2) {
      to::peak_search_options o;
      o.solve.memory_limit = bf[bf.size() / 2].memory;
      CHECK(points_of(pb, to::solve_peak_bound(pb, o)) == brute_force(pb, o.solve.memory_limit));
    }
  }
  CHECK(nonempty_caps > 200);
}

TEST_CASE("node groups end the walk over caps early and change no point") {
  std::mt19937_64 rng(29);
  int shorter = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const auto pb = random_bound_problem(rng, trial % 5, trial % 2);
    INFO("trial " << trial);
    to::peak_search_options o;
    const std::size_t n = pb.kept.nodes.size();
    o.groups.resize(1 + rng() % 2);
    for (std::size_t v = 0; v < n; ++v) {
      const std::size_t g = rng() % (o.groups.size() + 1);
      if (g < o.groups.size()) o.groups[g].push_back(int(v));
    }
    const auto plain = to::solve_peak_bound(pb);
    const auto grouped = to::solve_peak_bound(pb, o);
    CHECK(points_of(pb, grouped) == brute_force(pb));
    REQUIRE(grouped.points.size() == plain.points.size());
    for (std::size_t i = 0; i < plain.points.size(); ++i) {  // the same strategies
      CHECK(grouped.points[i].choice == plain.points[i].choice);
      CHECK(grouped.cap[i] == plain.cap[i]);
    }
    CHECK(grouped.solved <= plain.solved);
    shorter += grouped.solved < plain.solved;
    const auto bf = brute_force(pb);
    if (bf.size() >= 2) {  // under a memory limit as well
      o.solve.memory_limit = bf[bf.size() / 2].memory;
      CHECK(points_of(pb, to::solve_peak_bound(pb, o)) == brute_force(pb, o.solve.memory_limit));
    }
  }
  CHECK(shorter > 20);
}

TEST_CASE("cap bucketing: every memory within (1 + epsilon) of its bound, every exact point covered") {
  std::mt19937_64 rng(11);
  for (double eps : {0.05, 0.5}) {
    for (int trial = 0; trial < 200; ++trial) {
      const auto pb = random_bound_problem(rng, trial % 5, true);
      to::peak_search_options o;
      o.epsilon = eps;
      const auto r = to::solve_peak_bound(pb, o);
      const auto got = points_of(pb, r);
      const auto exact = brute_force(pb);
      CHECK(r.solved <= r.caps);
      for (auto& x : exact) {
        bool covered = false;
        for (auto& y : got) covered = covered || (y.time <= x.time && double(y.memory) <= (1 + eps) * double(x.memory));
        CHECK(covered);
      }
    }
  }
}

TEST_CASE("cap enumeration equals brute force on the runtime tests' models") {
  auto check = [](const to::op_graph& lowered, int devices, const char* name) {
    const auto g = to::with_global_batch(lowered, 16);
    to::build_options bo;
    bo.prec = to::precisions::fp32;
    bo.regenerate_dropout = true;
    const auto b = to::build_problem(g, to::cluster::nodes(1).gpus_per_node(devices), bo);
    double strategies = 1;
    for (auto& n : b.prob.nodes) strategies *= double(n.configs.size());
    if (strategies > 3e5) return false;
    const auto pb = to::make_peak_bound(b);
    const auto r = to::solve_peak_bound(pb);
    INFO(name << " on " << devices << " devices: " << strategies << " strategies, " << r.caps << " caps, "
              << r.solved << " solved");
    CHECK(points_of(pb, r) == brute_force(pb));
    CHECK(r.points.size() >= 2);
    MESSAGE(std::string(name), " on ", devices, " devices: ", strategies, " strategies, ", r.caps, " caps, ", r.solved,
            " solved, ", r.points.size(), " points");
    return true;
  };
  int checked = 0;
  for (int d : {1, 2, 3}) {
    checked += check(to::lower<rt_test::mlp_of<16>>(), d, "mlp");
    checked += check(to::lower<rt_test::moe_of<16>>(), d, "moe");
    checked += check(to::lower<rt_test::cnn_of<16>>(), d, "cnn");
    checked += check(to::lower<rt_test::gpt_of<16>>(), d, "gpt");
  }
  CHECK(checked >= 3);
}
}  // namespace plan_peak_search_test_file
