// Small models, plans and batches of the runtime tests, without a backend: shared
// by the CPU tests (runtime_models.hpp) and the GPU checks (test/gpu), which must
// not include the CPU backend.
#pragma once
#include <tensoropt/model/model.hpp>
#include <tensoropt/plan/pipeline_plan.hpp>
#include <tensoropt/runtime/executor.hpp>
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace rt_test {
namespace to = tensoropt;
namespace rt = tensoropt::runtime;
using to::axis;
using to::shape;
using to::index_t;

/// The runtime test models over a global batch of B (the default batch is what the
/// single-node tests use; runtime_two_level.hpp takes 16 so that 8-way data
/// parallelism really splits it).
template <to::index_t B = 8>
using mlp_of = to::model<"mlp", shape<axis<"b", B>, axis<"i", 12>>,
                         to::seq<to::linear<12, 16>, to::relu, to::linear<16, 16>, to::gelu, to::dropout<0.2>,
                                 to::linear<16, 8, "c">, to::softmax_cross_entropy<8>>>;
using mlp = mlp_of<8>;

using gpt_block = to::seq<to::residual<to::seq<to::layer_norm<16>, to::attention<4, true, 0.1, 0.1>>>,
                          to::residual<to::seq<to::layer_norm<16>, to::linear<16, 32>, to::gelu, to::linear<32, 16>,
                                               to::dropout<0.1>>>>;
template <to::index_t B = 4>
using gpt_of = to::model<"gpt", to::ids<shape<axis<"b", B>, axis<"s", 8>>>,
                         to::seq<to::embedding<32, 16, true>, to::repeat<gpt_block, 2>, to::layer_norm<16>,
                                 to::tied_linear<32, "embed.weight">, to::softmax_cross_entropy<32>>>;
using gpt = gpt_of<4>;

template <to::index_t B = 4>
using cnn_of = to::model<"cnn", shape<axis<"b", B>, axis<"c", 3>, axis<"y", 8>, axis<"x", 8>>,
                         to::seq<to::conv2d<3, 8, 3, 1, 1>, to::batch_norm<8>, to::relu,
                                 to::branches<to::merge::concat<"c">, to::conv2d<8, 4, 1, 1, 0, true>,
                                              to::seq<to::conv2d<8, 4, 3, 1, 1>, to::relu>,
                                              to::seq<to::avg_pool<3, 1, 1>, to::conv2d<8, 4, 1>>>,
                                 to::max_pool<2>, to::global_avg_pool, to::linear<12, 10, "k">,
                                 to::softmax_cross_entropy<10>>>;
using cnn = cnn_of<4>;

template <to::index_t B = 4>
using moe_of = to::model<"moe", shape<axis<"b", B>, axis<"s", 8>, axis<"h", 8>>,
                         to::seq<to::residual<to::moe<4, 16, 2, 2.0>>, to::linear<8, 6, "k">,
                                 to::softmax_cross_entropy<6>>>;
using moe = moe_of<4>;

/// Every legal config of an op on `n` devices (one level): degrees over splittable
/// dims whose product divides n and each divides its extent.
inline std::vector<to::op_config> legal_configs(const to::op_node& op, int n) {
  std::vector<to::op_config> out;
  to::op_config c;
  auto rec = [&](auto& self, std::size_t d, int left) -> void {
    if (d == op.dims.size()) {
      out.push_back(c);
      return;
    }
    for (int k = 1; k <= left; ++k) {
      if (left % k || op.dims[d].extent % k || (k > 1 && !op.dims[d].splittable)) continue;
      c.degree[1][d] = k;
      self(self, d + 1, left / k);
    }
    c.degree[1][d] = 1;
  };
  rec(rec, 0, n);
  return out;
}

/// Split the batch dim n ways everywhere it divides (data parallel).
inline rt::training_plan data_parallel(const to::op_graph& g, int n, int micro = 1) {
  rt::training_plan p{{}, micro, to::device_mesh(1, n)};
  for (auto& op : g.ops) {
    to::op_config c;
    for (std::size_t d = 0; d < op.dims.size(); ++d)
      if (op.dims[d].batch && op.dims[d].extent % (n * micro) == 0) {
        c.degree[1][d] = n;
        break;
      }
    p.configs.push_back(c);
  }
  return p;
}

/// Split, per op, the largest splittable non-batch dim that n divides (tensor parallel).
inline rt::training_plan tensor_parallel(const to::op_graph& g, int n) {
  rt::training_plan p{{}, 1, to::device_mesh(1, n)};
  for (auto& op : g.ops) {
    to::op_config c;
    int best = -1;
    for (std::size_t d = 0; d < op.dims.size(); ++d)
      if (!op.dims[d].batch && op.dims[d].splittable && op.dims[d].extent % n == 0 &&
          (best < 0 || op.dims[d].extent > op.dims[std::size_t(best)].extent))
        best = int(d);
    if (best >= 0) c.degree[1][std::size_t(best)] = n;
    p.configs.push_back(c);
  }
  return p;
}

/// A random legal config per op (with random recompute / shard_optimizer switches).
inline rt::training_plan random_plan(const to::op_graph& g, int n, unsigned seed, int micro = 1) {
  std::mt19937 rng(seed);
  rt::training_plan p{{}, micro, to::device_mesh(1, n)};
  const auto mg = to::with_batch(g, g.batch / micro);
  for (auto& op : mg.ops) {
    auto all = legal_configs(op, n);
    auto c = all[rng() % all.size()];
    c.recompute = rng() % 3 == 0;
    c.shard_optimizer = rng() % 2 == 0;
    p.configs.push_back(c);
  }
  return p;
}

/// p pipeline stages cut at `cuts` (or evenly by op count), with the configs of `inner`
/// (a plan for one stage's mesh) on n devices and its micro-batch count. Throws
/// invalid_argument when the plan is malformed for g.
inline to::pipeline_plan pipeline_of(const to::op_graph& g, int n, int p, const rt::training_plan& inner,
                                     std::vector<std::size_t> cuts = {}) {
  to::pipeline_plan pp;
  pp.degree = p;
  pp.micro_batches = inner.micro_batches;
  pp.mesh = to::device_mesh(1, n);
  pp.configs = inner.configs;
  if (cuts.empty())
    for (int s = 0; s < p; ++s) cuts.push_back(std::size_t(s) * g.ops.size() / std::size_t(p));
  pp.stage_begin = cuts;
  if (const auto e = to::pipeline_plan_error(pp, g.ops.size()); !e.empty())
    throw to::invalid_argument("pipeline_of: " + e);
  return pp;
}

/// A deterministic batch for graph g: token ids / labels in range, features in [-1, 1).
inline rt::batch make_batch(const to::op_graph& g, unsigned seed) {
  std::mt19937 rng(seed);
  rt::batch b;
  for (std::size_t j = 0; j < g.ops.size(); ++j) {
    const auto& op = g.ops[j];
    if (op.kind != to::op_kind::input) continue;
    const auto& t = g.tensors[std::size_t(op.output.tensor)];
    std::vector<float> v(std::size_t(t.size()));
    index_t range = 0;  // ids: the extent of the classes / vocab dim of the consumer
    if (t.integer)
      for (auto& o : g.ops)
        for (std::size_t s = 0; s < o.inputs.size(); ++s)
          if (o.inputs[s].tensor == op.output.tensor) {
            if (o.kind == to::op_kind::softmax_xent) range = o.dims.back().extent;
            if (o.kind == to::op_kind::embedding) range = o.dims[o.dims.size() - 2].extent;
          }
    for (auto& x : v) x = t.integer ? float(rng() % std::uint32_t(range)) : float(int(rng() % 2001) - 1000) / 1000.f;
    b.push_back(std::move(v));
  }
  return b;
}

/// max |a - b| / max |a| (0 when both are zero).
inline double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 1e30;
  double d = 0, m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, double(std::fabs(a[i] - b[i])));
    m = std::max(m, double(std::fabs(a[i])));
  }
  return m == 0 ? d : d / m;
}

}  // namespace rt_test
