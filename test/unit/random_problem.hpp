// The random search problems shared by the search, JSON and fuzz tests: chains, trees,
// series-parallel graphs, DAGs and forests, with small or realistic costs; problems with
// repeated blocks (`random_repeated`) and their brute-force frontiers.
#pragma once
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>
#include <tensoropt/search/problem.hpp>
#include <tensoropt/search/detail/repeated_split.hpp>

namespace rand_problem {
namespace to = tensoropt;

// The sanitizer build runs about 10x slower: the brute-force loops of the repeated-block
// tests run a third of their random problems there (the Release build runs all of them).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr int brute_force_share = 3;
#else
inline constexpr int brute_force_share = 1;
#endif

struct shape_kind {
  enum value { chain, tree, series_parallel, dag, forest, modules };
};

inline std::string label(char prefix, int i) {
  std::string s = std::to_string(i);
  s.insert(s.begin(), prefix);
  return s;
}

// A random problem of the given kind (`modules`: a chain of Inception-like modules). Costs are small integers (many ties and zeros) or
// "real" picosecond/byte values (up to max_time / max_memory); some configs duplicate another's edge rows so that
// grouping into layout-configs is exercised.
inline to::problem random_problem(std::mt19937_64& rng, int kind, int nodes, int max_configs, bool real,
                                  std::int64_t max_time = 2'000'000'000, std::int64_t max_memory = 1ll << 36) {
  auto uni = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  to::problem p;
  p.memory_offset = uni(0, 1) ? uni(0, 1000) : 0;
  std::vector<std::pair<int, int>> edges;
  if (kind == shape_kind::chain) {
    for (int i = 1; i < nodes; ++i) edges.push_back({i - 1, i});
  } else if (kind == shape_kind::tree) {
    for (int i = 1; i < nodes; ++i) {
      const int parent = int(uni(0, i - 1));
      if (uni(0, 1)) edges.push_back({parent, i});
      else edges.push_back({i, parent});
    }
  } else if (kind == shape_kind::series_parallel) {
    // two-terminal SP: subdivide an edge (series) or add a path or edge beside it (parallel)
    nodes = std::max(nodes, 2);
    int count = 2;
    edges.push_back({0, 1});
    while (count < nodes) {
      const auto e = edges[std::size_t(uni(0, std::int64_t(edges.size()) - 1))];
      const auto r = uni(0, 2);
      if (r == 2) edges.push_back(e);  // parallel edge
      const int w = count++;
      if (r == 0) {
        edges.erase(std::find(edges.begin(), edges.end(), e));
      }
      edges.push_back({e.first, w});
      edges.push_back({w, e.second});
    }
  } else if (kind == shape_kind::dag) {
    for (int j = 1; j < nodes; ++j) {
      edges.push_back({int(uni(0, j - 1)), j});
      for (int i = 0; i < j; ++i)
        if (uni(0, 99) < 30) edges.push_back({i, j});
    }
  } else if (kind == shape_kind::modules) {
    // Inception-like: a chain of modules, each 2-4 parallel branches of 0-2 nodes from the
    // module's input to its output (the search joins the branches' factors over (input,
    // output) before it eliminates either)
    nodes = std::max(nodes, 2);
    int in = 0, count = 1;
    while (count < nodes) {
      const int out = count++;
      const int branches = int(uni(2, 4));
      for (int b = 0; b < branches; ++b) {
        int at = in;
        const int len = int(uni(0, 2));
        for (int l = 0; l < len && count < nodes; ++l) {
          const int w = count++;
          edges.push_back({at, w});
          at = w;
        }
        edges.push_back({at, out});
      }
      in = out;
    }
  } else {  // forest: several components, some isolated nodes
    for (int i = 1; i < nodes; ++i)
      if (uni(0, 2) > 0) edges.push_back({int(uni(0, i - 1)), i});
  }
  auto cost = [&](bool memory) -> std::int64_t {
    if (!real) return uni(0, 5);
    if (uni(0, 9) == 0) return 0;
    return memory ? uni(1, max_memory) : uni(1, max_time);
  };
  std::vector<int> m(std::size_t(nodes), 0);
  for (int i = 0; i < nodes; ++i) {
    m[std::size_t(i)] = int(uni(1, max_configs));
    to::problem_node n{label('n', i), {}};
    for (int c = 0; c < m[std::size_t(i)]; ++c)
      n.configs.push_back({label('c', c), cost(false), cost(true)});
    p.nodes.push_back(n);
  }
  // dup[i][c]: config c of node i copies the edge rows of this config
  std::vector<std::vector<int>> dup(static_cast<std::size_t>(nodes));
  for (int i = 0; i < nodes; ++i)
    for (int c = 0; c < m[std::size_t(i)]; ++c)
      dup[std::size_t(i)].push_back(c > 0 && uni(0, 3) == 0 ? int(uni(0, c - 1)) : c);
  for (auto [a, b] : edges) {
    to::problem_edge e{a, b, {}, {}};
    const int ra = m[std::size_t(a)], rb = m[std::size_t(b)];
    e.time.resize(std::size_t(ra * rb));
    e.memory.resize(std::size_t(ra * rb));
    for (int x = 0; x < ra; ++x)
      for (int y = 0; y < rb; ++y) {
        const int dx = dup[std::size_t(a)][std::size_t(x)], dy = dup[std::size_t(b)][std::size_t(y)];
        const std::size_t k = std::size_t(x * rb + y);
        if (dx != x || dy != y) {
          e.time[k] = e.time[std::size_t(dx * rb + dy)];
          e.memory[k] = e.memory[std::size_t(dx * rb + dy)];
        } else {
          e.time[k] = cost(false);
          e.memory[k] = uni(0, 2) == 0 ? 0 : cost(true);
        }
      }
    p.edges.push_back(e);
  }
  return p;
}

// A (time, memory) pair of a brute-force frontier.
struct cost_pair {
  std::int64_t time, memory;
  bool operator==(const cost_pair&) const = default;
};

// A problem with L instances of one block, and the block (search/repeated.hpp's input).
struct generated {
  to::problem p;
  to::repeated_block rb;
  int boundary = 0;  // position of o in a block
};

// prefix (0..pre-1), L instances of an m-node block (node m-1 of each is o, fed to
// random positions of the next instance), suffix fed by random nodes of the last instance.
// `near`: the first and last instances get their own node costs.
inline generated random_repeated(std::mt19937_64& rng, int pre, int L, int m, int suf, int max_configs, bool near) {
  auto uni = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  auto cost = [&](bool small) { return small ? uni(0, 6) : uni(1, 1'000'000); };
  const bool small = uni(0, 1) == 1;
  generated g;
  g.boundary = m - 1;
  std::vector<int> cfg(static_cast<std::size_t>(m));
  for (auto& c : cfg) c = int(uni(1, max_configs));
  std::vector<std::vector<to::problem_config>> block_cfg(static_cast<std::size_t>(m));
  for (int j = 0; j < m; ++j)
    for (int c = 0; c < cfg[std::size_t(j)]; ++c) block_cfg[std::size_t(j)].push_back({"c", cost(small), cost(small)});
  auto add_node = [&](std::vector<to::problem_config> c) {
    g.p.nodes.push_back({"n" + std::to_string(g.p.nodes.size()), std::move(c)});
    return int(g.p.nodes.size() - 1);
  };
  auto random_configs = [&](int count) {
    std::vector<to::problem_config> c;
    for (int i = 0; i < count; ++i) c.push_back({"c", cost(small), cost(small)});
    return c;
  };
  auto matrix = [&](int a, int b) {
    to::problem_edge e{a, b, {}, {}};
    const std::size_t k = g.p.nodes[std::size_t(a)].configs.size() * g.p.nodes[std::size_t(b)].configs.size();
    for (std::size_t i = 0; i < k; ++i) {
      e.time.push_back(cost(small));
      e.memory.push_back(uni(0, 2) ? 0 : cost(small));
    }
    return e;
  };
  std::vector<int> prefix;
  for (int i = 0; i < pre; ++i) prefix.push_back(add_node(random_configs(int(uni(1, max_configs)))));
  for (int i = 1; i < pre; ++i) g.p.edges.push_back(matrix(prefix[std::size_t(i - 1)], prefix[std::size_t(i)]));
  // block shape: a chain plus a few extra forward edges; entry positions from the previous o
  std::vector<std::pair<int, int>> intra;
  for (int j = 1; j < m; ++j) intra.push_back({j - 1, j});
  for (int j = 2; j < m; ++j)
    if (uni(0, 2) == 0) intra.push_back({int(uni(0, j - 2)), j});
  std::vector<int> entries{0};
  for (int j = 1; j < m; ++j)
    if (uni(0, 2) == 0) entries.push_back(j);
  std::vector<to::problem_edge> intra_m, inter_m;
  for (int l = 0; l < L; ++l) {
    std::vector<int> inst;
    for (int j = 0; j < m; ++j) {
      auto c = block_cfg[std::size_t(j)];
      if (near && (l == 0 || l == L - 1))
        for (auto& x : c) x.time += uni(0, 3);
      inst.push_back(add_node(c));
    }
    for (std::size_t k = 0; k < intra.size(); ++k) {
      if (l == 0) intra_m.push_back(matrix(inst[std::size_t(intra[k].first)], inst[std::size_t(intra[k].second)]));
      auto e = intra_m[k];
      e.from = inst[std::size_t(intra[k].first)];
      e.to = inst[std::size_t(intra[k].second)];
      g.p.edges.push_back(e);
    }
    if (l == 0) {
      for (int v : prefix.empty() ? std::vector<int>{} : std::vector<int>{prefix.back()})
        for (int j : entries) g.p.edges.push_back(matrix(v, inst[std::size_t(j)]));
    } else {
      const int prev = g.rb.instances.back()[std::size_t(m - 1)];
      for (std::size_t k = 0; k < entries.size(); ++k) {
        if (l == 1) inter_m.push_back(matrix(prev, inst[std::size_t(entries[k])]));
        auto e = inter_m[k];
        e.from = prev;
        e.to = inst[std::size_t(entries[k])];
        g.p.edges.push_back(e);
      }
    }
    g.rb.instances.push_back(inst);
  }
  for (int i = 0; i < suf; ++i) {
    const int v = add_node(random_configs(int(uni(1, max_configs))));
    g.p.edges.push_back(matrix(g.rb.instances.back()[std::size_t(uni(0, m - 1))], v));
  }
  return g;
}

// The boundary layout classes: configs of o in a middle instance with equal incident rows.
inline std::vector<int> layout_classes(const generated& g) {
  const int o1 = g.rb.instances[1][std::size_t(g.boundary)];
  const std::size_t mo = g.p.nodes[std::size_t(o1)].configs.size();
  std::vector<std::vector<std::int64_t>> sig(mo);
  for (auto& e : g.p.edges)
    for (std::size_t c = 0; c < mo; ++c) {
      if (e.from == o1) {
        const std::size_t cols = g.p.nodes[std::size_t(e.to)].configs.size();
        for (std::size_t j = 0; j < cols; ++j) sig[c].insert(sig[c].end(), {e.time[c * cols + j], e.memory[c * cols + j]});
      }
      if (e.to == o1) {
        const std::size_t rows = g.p.nodes[std::size_t(e.from)].configs.size();
        for (std::size_t i = 0; i < rows; ++i) sig[c].insert(sig[c].end(), {e.time[i * mo + c], e.memory[i * mo + c]});
      }
    }
  std::vector<int> cls(mo);
  for (std::size_t c = 0; c < mo; ++c) {
    cls[c] = int(c);
    for (std::size_t d = 0; d < c; ++d)
      if (sig[d] == sig[c]) { cls[c] = cls[d]; break; }
  }
  return cls;
}

// Brute force: every strategy that `admit(choice)` accepts, costed with cost_of, then the
// Pareto staircase (memory ascending, time strictly descending).
template <class Admit>
std::vector<cost_pair> brute_force(const to::problem& p, Admit&& admit) {
  std::vector<int> choice(p.nodes.size(), 0);
  std::vector<cost_pair> all;
  while (true) {
    if (admit(choice)) {
      const auto c = to::cost_of(p, choice);
      all.push_back({c.time, c.memory});
    }
    std::size_t i = 0;
    for (; i < choice.size(); ++i) {
      if (++choice[i] < int(p.nodes[i].configs.size())) break;
      choice[i] = 0;
    }
    if (i == choice.size()) break;
  }
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.memory != b.memory ? a.memory < b.memory : a.time < b.time; });
  std::vector<cost_pair> f;
  for (auto& c : all)
    if (f.empty() || c.time < f.back().time) f.push_back(c);
  return f;
}

// Brute force over every strategy of `p`.
inline std::vector<cost_pair> brute_force(const to::problem& p) {
  return brute_force(p, [](const std::vector<int>&) { return true; });
}

// Brute force over every strategy; `restricted`: only those with o_0..o_{L-2} in one class.
inline std::vector<cost_pair> brute_force(const generated& g, bool restricted) {
  const auto cls = layout_classes(g);
  return brute_force(g.p, [&](const std::vector<int>& choice) {
    if (!restricted) return true;
    const int c0 = cls[std::size_t(choice[std::size_t(g.rb.instances[0][std::size_t(g.boundary)])])];
    for (std::size_t l = 1; l + 1 < g.rb.instances.size(); ++l)
      if (cls[std::size_t(choice[std::size_t(g.rb.instances[l][std::size_t(g.boundary)])])] != c0) return false;
    return true;
  });
}

}  // namespace rand_problem
