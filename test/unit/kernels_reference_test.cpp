// The host references the CUDA kernel tests compare against (test/cuda/reference.hpp)
// equal the CPU kernels, op by op, on the ops of the test models, whole and sharded:
// so a CUDA kernel that matches its reference on a GPU matches the CPU kernel.
// Runs on the CPU in CI.
#include <doctest/doctest.h>
#include <cstring>
#include <span>
#include "../cuda/reference.hpp"
#include "runtime_models.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace kernels_reference_test_file {

using namespace rt_test;
namespace k = tensoropt::runtime::kernels;

namespace {

/// One op of a lowered model on one rank of an n-device plan, with random
/// inputs, parameters and output gradient, and the CPU kernel's results.
struct op_case {
  const to::op_graph& g;
  const rt::training_plan& plan;
  int j;
  rt::local_world world;
  rt::cpu_backend be;
  rt::op_context c;
  std::vector<rt::buffer> in, par;
  std::vector<const rt::buffer*> inp, parp;
  rt::op_state st;
  rt::buffer y;
  std::vector<rt::buffer> din, dpar;
  ref::vec dy;

  op_case(const to::op_graph& graph, const rt::training_plan& p, int op, int rank, std::uint32_t seed)
      : g(graph), plan(p), j(op), world(int(p.mesh.devices())),
        c(graph, op, p.configs[std::size_t(op)], p.mesh, world.comm(rank), be) {
    c.seed = 77;
    c.step = 3;
    c.micro = 0;
    std::uint32_t s = seed;
    for (auto& m : c.op.inputs) in.push_back(be.copy(harness_random(std::size_t(c.local_size(m)), s++)));
    for (auto& m : c.op.params) par.push_back(be.copy(harness_random(std::size_t(c.local_size(m)), s++)));
  }
  static ref::vec harness_random(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    ref::vec v(n);
    for (auto& x : v) x = u(rng);
    return v;
  }
  /// Input slot i holds integer ids in [0, n).
  void ids(std::size_t i, index_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    for (auto& x : in[i].span()) x = float(std::int64_t(rng() % std::uint32_t(n)));
  }
  void forward() {
    for (auto& b : in) inp.push_back(&b);
    for (auto& b : par) parp.push_back(&b);
    y = k::kernel_of(c.op.kind).forward(c, inp, parp, st);
  }
  void backward(std::uint32_t seed) {
    dy = harness_random(y.size(), seed);
    const rt::buffer d = be.copy(dy);
    for (std::size_t i = 0; i < c.op.inputs.size(); ++i) din.push_back(be.allocate(std::size_t(c.local_size(c.op.inputs[i]))));
    for (auto& m : c.op.params) dpar.push_back(be.allocate(std::size_t(c.local_size(m))));
    k::kernel_of(c.op.kind).backward(c, inp, parp, st, d, din, dpar);
  }
  ref::vec vec_of(const rt::buffer& b) const { return {b.span().begin(), b.span().end()}; }
};

void close(const char* what, const ref::vec& got, const ref::vec& want, double rt = 1e-5, double at = 1e-6) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) bad += !(std::fabs(double(got[i]) - want[i]) <= at + rt * std::fabs(double(want[i])));
  INFO(what);
  CHECK(bad == 0);
}
void same(const char* what, const ref::vec& a, const ref::vec& b) {
  INFO(what);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

std::vector<int> ops_of(const to::op_graph& g, to::op_kind kind) {
  std::vector<int> out;
  for (std::size_t j = 0; j < g.ops.size(); ++j)
    if (g.ops[j].kind == kind) out.push_back(int(j));
  return out;
}

}  // namespace

TEST_CASE("reference layer norm, attention, embedding and cross-entropy equal the CPU kernels (GPT, 1 and 2 devices)") {
  const auto g = to::lower<gpt>();
  for (auto plan : {data_parallel(g, 1), tensor_parallel(g, 2)})
    for (int rank = 0; rank < int(plan.mesh.devices()); ++rank) {
      CAPTURE(rank);
      for (int j : ops_of(g, to::op_kind::layer_norm)) {
        op_case t(g, plan, j, rank, 10);
        t.forward();
        t.backward(11);
        const index_t rows = t.c.len_range(0, int(t.c.op.dims.size()) - 1), h = t.c.len(int(t.c.op.dims.size()) - 1);
        ref::vec y, stat, dx, dg(std::size_t(h), 0.f), db(std::size_t(h), 0.f);
        ref::layer_norm_fwd(t.vec_of(t.in[0]), t.vec_of(t.par[0]), t.vec_of(t.par[1]), y, stat, rows, h, false);
        ref::layer_norm_bwd(t.vec_of(t.in[0]), t.vec_of(t.par[0]), stat, t.dy, dx, dg, db, rows, h, false);
        close("layer norm y", t.vec_of(t.y), y);
        CHECK(t.st.saved.empty());  // backward recomputes the statistics from the input
        close("layer norm dx", t.vec_of(t.din[0]), dx, 1e-5, 1e-5);
        close("layer norm dgain", t.vec_of(t.dpar[0]), dg, 1e-5, 1e-5);
        close("layer norm dbias", t.vec_of(t.dpar[1]), db, 1e-5, 1e-5);
      }
      for (int j : ops_of(g, to::op_kind::attention)) {
        op_case t(g, plan, j, rank, 20);
        t.forward();
        t.backward(21);
        const auto a = k::attention_of(t.c);
        const ref::attention_shape s{a.b, a.h, a.s, a.d, a.blo, a.hlo, a.heads, a.batch, t.c.micro, a.causal,
                                     rt::dropout_mask::make(t.c.seed, rt::dropout_stream(t.c.step, std::uint64_t(j)), a.p)};
        CHECK(a.p > 0);  // the models' attention drops weights: the mask is compared too
        ref::vec y, prob, dqkv;
        ref::attention_fwd(s, t.vec_of(t.in[0]), y, prob, false);
        ref::attention_bwd(s, t.vec_of(t.in[0]), prob, t.dy, dqkv, false);
        close("attention probabilities", t.vec_of(t.st.saved[0]), prob);
        close("attention y", t.vec_of(t.y), y);
        close("attention dqkv", t.vec_of(t.din[0]), dqkv, 1e-5, 1e-5);
      }
      for (int j : ops_of(g, to::op_kind::embedding)) {
        op_case t(g, plan, j, rank, 30);
        const int nb = int(t.c.op.dims.size()) - 2;
        t.ids(0, t.c.extent(nb), 31);
        t.forward();
        t.backward(32);
        const index_t rows = t.c.len_range(0, nb), vlo = t.c.lo(nb), vl = t.c.len(nb), h = t.c.len(nb + 1),
                      sl = t.c.len(nb - 1);
        const bool pos = t.c.op.attr[0] && vlo == 0;
        ref::vec y, dt(t.dpar[0].size(), 0.f), dp(t.par.size() > 1 ? t.par[1].size() : 0, 0.f);
        const ref::vec pv = t.par.size() > 1 ? t.vec_of(t.par[1]) : ref::vec{};
        ref::embedding_fwd(t.vec_of(t.in[0]), t.vec_of(t.par[0]), pos ? &pv : nullptr, y, rows, vlo, vl, h, sl, false);
        ref::embedding_bwd(t.vec_of(t.in[0]), t.dy, dt, pos ? &dp : nullptr, rows, vlo, vl, h, sl, false);
        same("embedding y", t.vec_of(t.y), y);
        same("embedding dtable", t.vec_of(t.dpar[0]), dt);
        if (pos) same("embedding dpos", t.vec_of(t.dpar[1]), dp);
      }
    }
  // cross-entropy on one device (the split class dim needs collectives: the CUDA phases take them from the caller)
  const auto plan = data_parallel(g, 1);
  for (int j : ops_of(g, to::op_kind::softmax_xent)) {
    op_case t(g, plan, j, 0, 40);
    const int nb = int(t.c.op.dims.size()) - 1;
    t.ids(1, t.c.extent(nb), 41);
    t.forward();
    t.dy = {1.5f};
    const rt::buffer d = t.be.copy(t.dy);
    t.din.push_back(t.be.allocate(t.in[0].size()));
    t.din.push_back(t.be.allocate(t.in[1].size()));
    k::kernel_of(t.c.op.kind).backward(t.c, t.inp, t.parp, t.st, d, t.din, t.dpar);
    const index_t rows = t.c.len_range(0, nb), cl = t.c.len(nb);
    ref::vec p, dz;
    const float loss = ref::xent_fwd(t.vec_of(t.in[0]), t.vec_of(t.in[1]), p, rows, cl);
    ref::xent_bwd(p, t.vec_of(t.in[1]), 1.5f, dz, rows, cl, false);
    CHECK(t.y[0] == doctest::Approx(loss).epsilon(1e-6));
    close("cross-entropy probabilities", t.vec_of(t.st.saved[0]), p);
    close("cross-entropy dz", t.vec_of(t.din[0]), dz);
  }
}

TEST_CASE("reference linear equals the CPU kernel (MLP layers and GPT's tied head, 1 and 2 devices)") {
  int n = 0, tied = 0;
  auto check = [&](const to::op_graph& g, const rt::training_plan& plan) {
    for (int rank = 0; rank < int(plan.mesh.devices()); ++rank)
      for (int j : ops_of(g, to::op_kind::linear)) {
        op_case t(g, plan, j, rank, 100 + std::uint32_t(j));
        t.forward();
        t.backward(101);
        const auto l = k::linear_of(t.c);
        const bool bias = (t.c.op.attr[3] & 1) && l.bias_here;
        ref::vec y, dx, dw, db(bias ? t.dpar[1].size() : 0, 0.f);
        const ref::vec bv = bias ? t.vec_of(t.par[1]) : ref::vec{};
        ref::linear_fwd(t.vec_of(t.in[0]), t.vec_of(t.par[0]), bias ? &bv : nullptr, y, l.m, l.k, l.n, l.w_transposed,
                        false);
        ref::linear_bwd(t.vec_of(t.in[0]), t.vec_of(t.par[0]), t.dy, dx, dw, bias ? &db : nullptr, l.m, l.k, l.n,
                        l.w_transposed, false);
        close("linear y", t.vec_of(t.y), y, 1e-5, 1e-5);
        close("linear dx", t.vec_of(t.din[0]), dx, 1e-5, 1e-5);
        close("linear dW", t.vec_of(t.dpar[0]), dw, 1e-5, 1e-5);
        if (bias) close("linear dbias", t.vec_of(t.dpar[1]), db, 1e-5, 1e-5);
        ++n;
        tied += l.w_transposed;
      }
  };
  const auto m = to::lower<mlp>();
  check(m, data_parallel(m, 1));
  check(m, tensor_parallel(m, 2));
  const auto g = to::lower<gpt>();
  check(g, data_parallel(g, 1));
  CHECK(n >= 9);
  CHECK(tied >= 1);
}

TEST_CASE("reference conv2d, pooling and batch norm equal the CPU kernels (CNN, one device)") {
  const auto g = to::lower<cnn>();
  const auto plan = data_parallel(g, 1);
  int n = 0;
  for (int j : ops_of(g, to::op_kind::conv2d)) {
    op_case t(g, plan, j, 0, 50 + std::uint32_t(j));
    t.forward();
    t.backward(51);
    const auto d = k::conv_of(t.c);
    const ref::conv_shape s{d.b, d.co, d.ci, d.oh, d.ow, d.kh, d.kw, d.ih, d.iw, d.stride, d.pad, d.pad_w};
    const bool bias = t.c.op.attr[3] & 1;
    ref::vec y, dx, dw(t.dpar[0].size(), 0.f), db(bias ? t.dpar[1].size() : 0, 0.f);
    const ref::vec bv = bias ? t.vec_of(t.par[1]) : ref::vec{};
    ref::conv_fwd(s, t.vec_of(t.in[0]), t.vec_of(t.par[0]), bias ? &bv : nullptr, y, false);
    ref::conv_bwd(s, t.vec_of(t.in[0]), t.vec_of(t.par[0]), t.dy, dx, dw, bias ? &db : nullptr, false);
    close("conv2d y", t.vec_of(t.y), y);
    if (t.din[0].size()) close("conv2d dx", t.vec_of(t.din[0]), dx, 1e-5, 1e-5);
    close("conv2d dw", t.vec_of(t.dpar[0]), dw, 1e-5, 1e-5);
    if (bias) close("conv2d dbias", t.vec_of(t.dpar[1]), db, 1e-5, 1e-5);
    ++n;
  }
  for (auto kind : {to::op_kind::max_pool, to::op_kind::avg_pool})
    for (int j : ops_of(g, kind)) {
      op_case t(g, plan, j, 0, 60);
      t.forward();
      t.backward(61);
      const auto& xt = g.tensors[std::size_t(t.c.op.inputs[0].tensor)];
      const ref::pool_shape s{t.c.len(0) * t.c.len(1), t.c.len(2), t.c.len(3), xt.extents[2], xt.extents[3],
                              t.c.op.attr[0], t.c.op.attr[1], t.c.op.attr[2]};
      const bool is_max = kind == to::op_kind::max_pool;
      ref::vec y, dx(t.din[0].size(), 0.f);
      std::vector<ref::i64> arg;
      ref::pool_fwd(s, is_max, t.vec_of(t.in[0]), y, arg, false);
      ref::pool_bwd(s, is_max, t.dy, arg, dx, false);
      same(is_max ? "max pool y" : "avg pool y", t.vec_of(t.y), y);
      if (is_max) CHECK(t.st.ints == arg);
      same(is_max ? "max pool dx" : "avg pool dx", t.vec_of(t.din[0]), dx);
      ++n;
    }
  for (int j : ops_of(g, to::op_kind::batch_norm)) {
    op_case t(g, plan, j, 0, 70);
    t.forward();
    t.backward(71);
    const index_t nb = t.c.len(0), ch = t.c.len(1), hw = t.c.len(2) * t.c.len(3);
    ref::vec y, stat, dx, dg(std::size_t(ch), 0.f), db(std::size_t(ch), 0.f);
    ref::batch_norm_fwd(t.vec_of(t.in[0]), t.vec_of(t.par[0]), t.vec_of(t.par[1]), y, stat, nb, ch, hw, false);
    ref::batch_norm_bwd(t.vec_of(t.in[0]), t.vec_of(t.par[0]), stat, t.dy, dx, dg, db, nb, ch, hw, false);
    close("batch norm y", t.vec_of(t.y), y, 1e-5, 1e-5);
    close("batch norm statistics", t.vec_of(t.st.saved[0]), stat);
    close("batch norm dx", t.vec_of(t.din[0]), dx, 1e-4, 1e-5);
    close("batch norm dgain", t.vec_of(t.dpar[0]), dg, 1e-5, 1e-5);
    close("batch norm dbias", t.vec_of(t.dpar[1]), db, 1e-5, 1e-5);
    ++n;
  }
  CHECK(n >= 7);
}

TEST_CASE("reference MoE gate, experts, routing, dispatch and combine equal the CPU kernels (one device)") {
  const auto g = to::lower<moe>();
  const auto plan = data_parallel(g, 1);
  const int gate = ops_of(g, to::op_kind::moe_gate).at(0);
  op_case t(g, plan, gate, 0, 80);
  t.forward();
  t.backward(81);
  const index_t tok = t.c.len(0) * t.c.len(1), E = t.c.extent(2), h = t.c.len(3), kk = std::max<std::int64_t>(1, t.c.op.attr[0]);
  ref::vec z(std::size_t(tok * E));
  ref::gemm(false, false, tok, E, h, 1.f, t.in[0].data(), h, t.par[0].data(), E, 0.f, z.data(), E, false);
  ref::vec prob, mask, gates, dz;
  ref::moe_gate_fwd(z, prob, mask, gates, tok, E, E, 0, kk, false);
  ref::moe_gate_bwd(prob, mask, t.dy, dz, tok, E, E, 0, false);
  close("gate probabilities", t.vec_of(t.st.saved[0]), prob);
  same("gate top-k mask", t.vec_of(t.st.saved[1]), mask);
  close("gates", t.vec_of(t.y), gates);
  ref::vec dx(std::size_t(tok * h)), dwg(std::size_t(h * E));  // the CPU's two GEMMs after dz
  ref::gemm(false, true, tok, h, E, 1.f, dz.data(), E, t.par[0].data(), E, 0.f, dx.data(), h, false);
  ref::gemm(true, false, h, E, tok, 1.f, t.in[0].data(), h, dz.data(), E, 0.f, dwg.data(), E, false);
  close("gate dx", t.vec_of(t.din[0]), dx, 1e-5, 1e-5);
  close("gate dWg", t.vec_of(t.dpar[0]), dwg, 1e-5, 1e-5);

  {
    const int j = ops_of(g, to::op_kind::moe_experts).at(0);
    op_case u(g, plan, j, 0, 95);
    u.forward();
    u.backward(96);
    const index_t E = u.c.len(0), tk = u.c.len(1) * u.c.len(2), h = u.c.len(3), f = u.c.len(4);
    ref::vec hid, y, dx, dw1, dw2;
    ref::experts_fwd(u.vec_of(u.in[0]), u.vec_of(u.par[0]), u.vec_of(u.par[1]), hid, y, E, tk, h, f, false);
    ref::experts_bwd(u.vec_of(u.in[0]), u.vec_of(u.par[0]), u.vec_of(u.par[1]), hid, u.dy, dx, dw1, dw2, E, tk, h, f,
                     false);
    close("experts pre-activation", u.vec_of(u.st.saved[0]), hid, 1e-5, 1e-5);
    close("experts y", u.vec_of(u.y), y, 1e-5, 1e-5);
    close("experts dx", u.vec_of(u.din[0]), dx, 1e-5, 1e-5);
    close("experts dW1", u.vec_of(u.dpar[0]), dw1, 1e-5, 1e-5);
    close("experts dW2", u.vec_of(u.dpar[1]), dw2, 1e-5, 1e-5);
  }
  for (auto kind : {to::op_kind::moe_dispatch, to::op_kind::moe_combine}) {
    const int j = ops_of(g, kind).at(0);
    op_case u(g, plan, j, 0, 90);
    std::copy(t.y.span().begin(), t.y.span().end(), u.in[1].data());  // the gate's gates: input 1 of both
    u.forward();
    u.backward(91);
    const ref::moe_shape m{u.c.len(0), u.c.len(1), u.c.len(2), u.c.len(3), u.c.len(4), u.c.lo(3)};
    const auto slot = ref::moe_routes(u.vec_of(u.in[1]), m.g, u.c.extent(1), m.e, u.c.lo(1), m.s);
    CHECK(u.st.ints == slot);
    if (kind == to::op_kind::moe_dispatch) {
      ref::vec y, dx(u.din[0].size(), 0.f);
      ref::moe_dispatch_fwd(m, u.vec_of(u.in[0]), slot, y);
      ref::moe_dispatch_bwd(m, u.dy, slot, dx, false);
      same("dispatch y", u.vec_of(u.y), y);
      same("dispatch dx", u.vec_of(u.din[0]), dx);
    } else {
      ref::vec out, dy(u.din[0].size(), 0.f), dgates(u.din[1].size(), 0.f);
      ref::moe_combine_fwd(m, u.vec_of(u.in[0]), u.vec_of(u.in[1]), slot, out, false);
      ref::moe_combine_bwd(m, u.vec_of(u.in[0]), u.vec_of(u.in[1]), slot, u.dy, dy, dgates, false);
      close("combine out", u.vec_of(u.y), out);
      close("combine dy", u.vec_of(u.din[0]), dy);
      close("combine dgates", u.vec_of(u.din[1]), dgates, 1e-5, 1e-5);
    }
  }
}
}  // namespace kernels_reference_test_file
