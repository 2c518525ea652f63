// Many weighted-sum optima in one pass: variable elimination (min-sum) over the problem's
// factor graph with a vector of values per cell, one lane per weight.
//
// Lane s scores a strategy a_s x memory + b_s x time. Each cell of a factor holds one value
// per lane; eliminating v takes, per cell of the new factor and per lane, the least sum over
// v's configs, and keeps which config gave it, so each lane's optimum is recovered from the
// back-pointers at the end. The lanes share every index computation and memory access, and
// their loops are straight vector code (AVX2 where the processor has it, chosen at run
// time). An elimination whose joined factors are made of the same costs in the same shape
// as those of one of the last 64 (the same op of another identical layer; matched by two
// 64-bit hashes, of an original factor's costs and of each elimination's inputs) shares that
// one's output instead of computing it again; the others first copy their joined factors into
// dense tables with v's config just outside the lanes, so a cell reads each factor's rows in
// order. The tables it holds count against a limit, as the frontier search's do.
//
// Values are floats: a lane's optimum is the least score up to float rounding
// (`multi_weight_slack` bounds it), which is what its callers need (search/layout_restriction.hpp: the layouts that
// optima take); exact single-objective optima come from search/solve.hpp on a scalar problem
// (detail/scalar_problem.hpp). The order is the exact search's (detail/elimination_order.hpp),
// so series-parallel graphs make factors over at most two nodes.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>
#include "../problem.hpp"
#include "../solve_options.hpp"
#include "elimination_order.hpp"

#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && defined(__x86_64__) && defined(__linux__)
#define TENSOROPT_LANES_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TENSOROPT_LANES_CLONES
#endif

namespace tensoropt::detail {

/// One lane: a strategy scores a x memory + b x time (a, b >= 0, not both 0).
struct weight_lane {
  double a = 1, b = 0;
};

/// How far, relatively, a lane's optimum found by multi_weight_optima on `p` may lie above
/// the exact one: a lane sums at most nodes + edges non-negative float terms, each rounded
/// in conversion, product and sum (within 4 n 2^-24 of exact for n terms), and the found
/// strategy's float score is at most the exact optimum's float score, so the exact optimum
/// lies at most twice that below the found strategy's exact score.
inline double multi_weight_slack(const problem& p) {
  return 8.0 * double(p.nodes.size() + p.edges.size() + 1) * std::ldexp(1.0, -24);
}

/// The cells of one elimination with SP lanes (a multiple of 8): `tab[j]` is joined factor j
/// as a dense table [its other nodes' cells][dv][SP]; `stride[j * K + k]` the step of node
/// k of the new scope in it (in rows of dv x SP floats, 0 where the factor lacks the node).
/// Per cell of the new factor (its scope's odometer, last node fastest) and lane: the least
/// sum over cv, and the cv that gave it (ties: the smaller).
template <std::size_t SP>
TENSOROPT_LANES_CLONES void lane_cells(const float* const* tab, std::size_t J, const std::size_t* stride,
                                       const std::size_t* dims, std::size_t K, std::size_t dv, float* out,
                                       std::uint16_t* args) {
  std::size_t cells = 1;
  for (std::size_t k = 0; k < K; ++k) cells *= dims[k];
  std::vector<std::size_t> coord(K, 0), base(J, 0);
  const std::size_t row = dv * SP;
  alignas(64) float acc[SP], best[SP];
  alignas(64) std::uint32_t arg[SP];
  for (std::size_t cell = 0; cell < cells; ++cell) {
    for (std::size_t s = 0; s < SP; ++s) {
      best[s] = std::numeric_limits<float>::infinity();
      arg[s] = 0;
    }
    // the rows: one fused pass per config of v over the lanes (sum, compare, keep), the
    // joined factors' rows read in order (v's config is their second-fastest index)
    const float* a = tab[0] + base[0] * row;
    const float* b = J > 1 ? tab[1] + base[1] * row : nullptr;
    const float* c = J > 2 ? tab[2] + base[2] * row : nullptr;
    auto keep = [&](std::size_t s, float x, std::uint32_t here) {
      const bool less = x < best[s];
      best[s] = less ? x : best[s];
      arg[s] = less ? here : arg[s];
    };
    if (J == 1) {
      for (std::size_t cv = 0; cv < dv; ++cv, a += SP)
        for (std::size_t s = 0; s < SP; ++s) keep(s, a[s], std::uint32_t(cv));
    } else if (J == 2) {
      for (std::size_t cv = 0; cv < dv; ++cv, a += SP, b += SP)
        for (std::size_t s = 0; s < SP; ++s) keep(s, a[s] + b[s], std::uint32_t(cv));
    } else if (J == 3) {
      for (std::size_t cv = 0; cv < dv; ++cv, a += SP, b += SP, c += SP)
        for (std::size_t s = 0; s < SP; ++s) keep(s, a[s] + b[s] + c[s], std::uint32_t(cv));
    } else {
      for (std::size_t cv = 0; cv < dv; ++cv, a += SP, b += SP, c += SP) {
        for (std::size_t s = 0; s < SP; ++s) acc[s] = a[s] + b[s] + c[s];
        for (std::size_t j = 3; j < J; ++j) {
          const float* d = tab[j] + base[j] * row + cv * SP;
          for (std::size_t s = 0; s < SP; ++s) acc[s] += d[s];
        }
        for (std::size_t s = 0; s < SP; ++s) keep(s, acc[s], std::uint32_t(cv));
      }
    }
    for (std::size_t s = 0; s < SP; ++s) {
      out[cell * SP + s] = best[s];
      args[cell * SP + s] = std::uint16_t(arg[s]);
    }
    for (std::size_t k = K; k-- > 0;) {
      for (std::size_t j = 0; j < J; ++j) base[j] += stride[j * K + k];
      if (++coord[k] < dims[k]) break;
      for (std::size_t j = 0; j < J; ++j) base[j] -= stride[j * K + k] * dims[k];
      coord[k] = 0;
    }
  }
}

/// multi_weight_optima with exactly SP lanes.
template <std::size_t SP>
std::vector<std::vector<int>> multi_weight_lanes(const problem& p, const std::vector<weight_lane>& lanes,
                                                 std::size_t max_bytes) {
  const std::size_t n = p.nodes.size();
  std::vector<std::size_t> dom(n);
  for (std::size_t v = 0; v < n; ++v) {
    dom[v] = p.nodes[v].configs.size();
    require(dom[v] <= std::size_t(std::numeric_limits<std::uint16_t>::max()) + 1,
            "multi_weight_optima: a node has more than 65,536 configs");
  }
  // lane scale: scores near 1, so that floats keep their relative precision
  double big_m = 1, big_t = 1;
  for (const auto& nd : p.nodes)
    for (const auto& c : nd.configs) {
      big_m = std::max(big_m, double(c.memory));
      big_t = std::max(big_t, double(c.time));
    }
  alignas(64) float fa[SP], fb[SP];
  for (std::size_t s = 0; s < SP; ++s) {
    const double scale = lanes[s].a * big_m + lanes[s].b * big_t;
    require(lanes[s].a >= 0 && lanes[s].b >= 0 && scale > 0,
            "multi_weight_optima: a lane's weights must be >= 0 and not both 0");
    fa[s] = float(lanes[s].a / scale);
    fb[s] = float(lanes[s].b / scale);
  }
  struct mfactor {
    std::vector<int> scope;  // ascending
    std::vector<std::size_t> dims;
    std::shared_ptr<const std::vector<float>> val;  // cells x SP, row-major over scope, lanes innermost
    int edge = -1, node = -1;  // an original factor, valued when first joined
    bool alive = true;
    std::uint64_t h1 = 0, h2 = 0;  // what the values are made of (equal values: equal hashes)
  };
  // hashes: an original factor's of its costs, a made one's of its elimination (the joined
  // factors' hashes and the shape), so equal hashes mean equal values without reading them
  auto mix = [](std::uint64_t& h1, std::uint64_t& h2, std::uint64_t x) {
    h1 = (h1 ^ x) * 0x100000001b3ull;
    h2 = (h2 ^ (x + 0x9e3779b97f4a7c15ull + (h2 << 6) + (h2 >> 2))) * 0xff51afd7ed558ccdull;
  };
  std::vector<mfactor> fs;
  fs.reserve(2 * n + p.edges.size());
  for (std::size_t v = 0; v < n; ++v) {
    mfactor f{{int(v)}, {dom[v]}, {}, -1, int(v), true, 0xcbf29ce484222325ull, 1};
    for (const auto& c : p.nodes[v].configs) {
      mix(f.h1, f.h2, std::uint64_t(c.time));
      mix(f.h1, f.h2, std::uint64_t(c.memory));
    }
    fs.push_back(std::move(f));
  }
  for (std::size_t e = 0; e < p.edges.size(); ++e) {
    const auto& ed = p.edges[e];
    mfactor f;
    f.edge = int(e);
    f.h1 = 0x84222325cbf29ce4ull;
    f.h2 = 2;
    mix(f.h1, f.h2, std::uint64_t(ed.from > ed.to) | std::uint64_t(ed.from == ed.to) << 1);
    mix(f.h1, f.h2, dom[std::size_t(ed.from)]);
    mix(f.h1, f.h2, dom[std::size_t(ed.to)]);
    for (std::size_t x = 0; x < ed.time.size(); ++x) {
      mix(f.h1, f.h2, std::uint64_t(ed.time[x]));
      mix(f.h1, f.h2, std::uint64_t(ed.memory[x]));
    }
    if (ed.from == ed.to) {
      f.scope = {ed.from};
      f.dims = {dom[std::size_t(ed.from)]};
    } else {
      f.scope = {std::min(ed.from, ed.to), std::max(ed.from, ed.to)};
      f.dims = {dom[std::size_t(f.scope[0])], dom[std::size_t(f.scope[1])]};
    }
    fs.push_back(std::move(f));
  }
  // the order: the exact search's plan on the scopes alone
  std::vector<factor> shapes(fs.size());
  for (std::size_t i = 0; i < fs.size(); ++i) {
    shapes[i].scope = fs[i].scope;
    shapes[i].dims = fs[i].dims;
  }
  const elimination_order plan = plan_elimination(shapes, dom, std::vector<bool>(n, false));
  // bytes of back-pointers and live tables (a table shared by factors and the replay
  // record counts once, until its last holder lets it go)
  std::size_t held = 0;
  auto charge = [&](std::size_t bytes) {
    held += bytes;
    if (held > max_bytes)
      throw runtime_error("search stopped: the weighted-sum optima's tables reached " + std::to_string(held >> 20) +
                          " MiB, past the search's limit of " + std::to_string(max_bytes >> 20) +
                          " MiB; use --all-layouts, fewer micro-batch counts, or a machine with more memory");
  };
  auto let_go = [&](std::shared_ptr<const std::vector<float>>& t) {
    if (t && t.use_count() == 1) held -= std::min(held, t->size() * sizeof(float));
    t.reset();
  };
  auto put = [&](float* out, cost_t t, cost_t m) {
    const float ft = float(t), fm = float(m);
    for (std::size_t s = 0; s < SP; ++s) out[s] = fa[s] * fm + fb[s] * ft;
  };
  auto value = [&](mfactor& f) {
    if (f.val || (f.edge < 0 && f.node < 0)) return;
    std::size_t cells = 1;
    for (auto d : f.dims) cells *= d;
    charge(cells * SP * sizeof(float));
    auto table = std::make_shared<std::vector<float>>(cells * SP, 0.0f);
    f.val = table;
    if (f.node >= 0) {
      const auto& cs = p.nodes[std::size_t(f.node)].configs;
      for (std::size_t c = 0; c < cs.size(); ++c) put(&(*table)[c * SP], cs[c].time, cs[c].memory);
      return;
    }
    const auto& ed = p.edges[std::size_t(f.edge)];
    const std::size_t da = dom[std::size_t(ed.from)], db = dom[std::size_t(ed.to)];
    for (std::size_t i = 0; i < da; ++i)
      for (std::size_t j = 0; j < db; ++j) {
        const std::size_t x = i * db + j;
        std::size_t cell = x;
        if (ed.from == ed.to) {
          if (i != j) continue;  // a self-edge: both ends are the node's one config
          cell = i;
        } else if (ed.from > ed.to) {
          cell = j * da + i;  // scope ascending: (to, from)
        }
        put(&(*table)[cell * SP], ed.time[x], ed.memory[x]);
      }
  };
  std::vector<std::vector<std::size_t>> in(n);  // the factors over each node
  for (std::size_t i = 0; i < fs.size(); ++i)
    for (int u : fs[i].scope) in[std::size_t(u)].push_back(i);
  struct step {
    int v;
    std::vector<int> scope;
    std::vector<std::size_t> dims;
    std::shared_ptr<const std::vector<std::uint16_t>> arg;  // cells x SP: the config of v
  };
  std::vector<step> steps;
  steps.reserve(n);
  // the last eliminations' keys and outputs (replay)
  struct memo {
    std::uint64_t h1, h2;
    std::shared_ptr<const std::vector<float>> val;
    std::shared_ptr<const std::vector<std::uint16_t>> arg;
  };
  std::vector<memo> memos;
  std::size_t next_memo = 0;
  constexpr std::size_t kept_memos = 64;
  for (int v : plan.order) {
    std::vector<std::size_t> join;
    for (std::size_t i : in[std::size_t(v)])
      if (fs[i].alive) join.push_back(i);
    std::vector<int> scope;
    for (std::size_t i : join) {
      value(fs[i]);
      for (int u : fs[i].scope)
        if (u != v) scope.push_back(u);
    }
    std::sort(scope.begin(), scope.end());
    scope.erase(std::unique(scope.begin(), scope.end()), scope.end());
    const std::size_t K = scope.size(), J = join.size(), dv = dom[std::size_t(v)];
    std::vector<std::size_t> dims(K);
    std::size_t cells = 1;
    for (std::size_t k = 0; k < K; ++k) cells *= (dims[k] = dom[std::size_t(scope[k])]);
    // the elimination's hash: its shape and its joined factors' hashes with their places
    std::uint64_t h1 = 0x6c62272e07bb0142ull ^ dv, h2 = 0x9e3779b97f4a7c15ull ^ (K << 8) ^ J;
    for (std::size_t k = 0; k < K; ++k) mix(h1, h2, dims[k]);
    // each joined factor's hash and place, and the step of each node of the new scope in its
    // dense table [its other nodes' cells][dv][SP] (rows of dv x SP floats)
    std::vector<std::size_t> stride(J * K, 0);
    std::vector<std::vector<std::size_t>> dsts(J);  // per joined factor, its non-v nodes' steps
    for (std::size_t j = 0; j < J; ++j) {
      const auto& f = fs[join[j]];
      const std::size_t w = f.scope.size();
      mix(h1, h2, f.h1);
      mix(h1, h2, f.h2);
      auto& dst = dsts[j];
      dst.assign(w, 0);
      std::size_t rest = 1;
      for (std::size_t q = w; q-- > 0;) {
        if (f.scope[q] == v) continue;
        dst[q] = rest;
        rest *= f.dims[q];
        const auto pos = std::size_t(std::lower_bound(scope.begin(), scope.end(), f.scope[q]) - scope.begin());
        stride[j * K + pos] = dst[q];
        mix(h1, h2, 0x100000 + pos * 64 + q);
      }
    }
    std::shared_ptr<const std::vector<float>> val;
    std::shared_ptr<const std::vector<std::uint16_t>> arg;
    for (const auto& m : memos)
      if (m.h1 == h1 && m.h2 == h2 && m.val->size() == cells * SP) {
        val = m.val;
        arg = m.arg;
        break;
      }
    if (!val) {
      // the dense tables: a factor's own where v is its last node, else a copy
      std::vector<std::vector<float>> dense(J);
      std::vector<const float*> tabs(J);
      for (std::size_t j = 0; j < J; ++j) {
        const auto& f = fs[join[j]];
        const auto& fv = *f.val;
        if (f.scope.back() == v) {
          tabs[j] = fv.data();
          continue;
        }
        const std::size_t w = f.scope.size();
        const auto& dst = dsts[j];
        dense[j].resize(fv.size());
        std::vector<std::size_t> at(w, 0);
        for (std::size_t x = 0; x * SP < fv.size(); ++x) {
          std::size_t r = 0, cv = 0;
          for (std::size_t q = 0; q < w; ++q) {
            if (f.scope[q] == v) cv = at[q];
            else r += at[q] * dst[q];
          }
          std::memcpy(&dense[j][(r * dv + cv) * SP], &fv[x * SP], SP * sizeof(float));
          for (std::size_t q = w; q-- > 0;) {
            if (++at[q] < f.dims[q]) break;
            at[q] = 0;
          }
        }
        tabs[j] = dense[j].data();
      }
      charge(cells * SP * (sizeof(float) + sizeof(std::uint16_t)));
      auto out = std::make_shared<std::vector<float>>(cells * SP);
      auto args = std::make_shared<std::vector<std::uint16_t>>(cells * SP);
      lane_cells<SP>(tabs.data(), J, stride.data(), dims.data(), K, dv, out->data(), args->data());
      val = out;
      arg = args;
      memo m{h1, h2, val, arg};
      if (memos.size() < kept_memos) {
        memos.push_back(std::move(m));
      } else {
        auto& old = memos[next_memo++ % kept_memos];
        let_go(old.val);
        old = std::move(m);
      }
    }
    for (std::size_t i : join) {
      fs[i].alive = false;
      let_go(fs[i].val);
    }
    mfactor nf;
    nf.scope = scope;
    nf.dims = dims;
    nf.val = std::move(val);
    nf.h1 = h1;
    nf.h2 = h2;
    fs.push_back(std::move(nf));
    for (int u : scope) in[std::size_t(u)].push_back(fs.size() - 1);
    steps.push_back({v, std::move(scope), std::move(dims), std::move(arg)});
  }
  // each lane's strategy: the steps backwards, each node's config from its back-pointers
  std::vector<std::vector<int>> choice(SP, std::vector<int>(n, 0));
  for (std::size_t k = steps.size(); k-- > 0;) {
    const auto& st = steps[k];
    for (std::size_t s = 0; s < SP; ++s) {
      std::size_t cell = 0;
      for (std::size_t q = 0; q < st.scope.size(); ++q)
        cell = cell * st.dims[q] + std::size_t(choice[s][std::size_t(st.scope[q])]);
      choice[s][std::size_t(st.v)] = (*st.arg)[cell * SP + s];
    }
  }
  return choice;
}

/// For each lane of `lanes` (1 to 64), a strategy of `p` (valid) of least score up to float
/// rounding (multi_weight_slack). `max_bytes` bounds the tables and back-pointers it holds (0:
/// three quarters of the machine's memory, as solve's): past it, or where the allocator
/// refuses, runtime_error names the sizes instead of std::bad_alloc.
inline std::vector<std::vector<int>> multi_weight_optima(const problem& p, std::vector<weight_lane> lanes,
                                                         std::size_t max_bytes = 0) {
  require(!lanes.empty() && lanes.size() <= 64, "multi_weight_optima: give 1 to 64 lanes");
  if (max_bytes == 0) max_bytes = default_max_bytes();
  const std::size_t asked = lanes.size(), padded = (asked + 7) / 8 * 8;
  lanes.resize(padded, lanes.back());  // whole vectors: the extra lanes repeat the last
  std::vector<std::vector<int>> r;
  try {
    switch (padded / 8) {
      case 1: r = multi_weight_lanes<8>(p, lanes, max_bytes); break;
      case 2: r = multi_weight_lanes<16>(p, lanes, max_bytes); break;
      case 3: r = multi_weight_lanes<24>(p, lanes, max_bytes); break;
      case 4: r = multi_weight_lanes<32>(p, lanes, max_bytes); break;
      case 5: r = multi_weight_lanes<40>(p, lanes, max_bytes); break;
      case 6: r = multi_weight_lanes<48>(p, lanes, max_bytes); break;
      case 7: r = multi_weight_lanes<56>(p, lanes, max_bytes); break;
      default: r = multi_weight_lanes<64>(p, lanes, max_bytes); break;
    }
  } catch (const std::bad_alloc&) {
    throw runtime_error("search stopped: out of memory (the allocator refused) in the weighted-sum optima, with a "
                        "limit of " + std::to_string(max_bytes >> 20) +
                        " MiB; use --all-layouts, fewer micro-batch counts, or a machine with more memory");
  }
  r.resize(asked);
  return r;
}

}  // namespace tensoropt::detail
