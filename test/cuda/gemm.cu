// cuBLASLt and the kernels built on it: row-major GEMMs (transposes, strided
// batches, bias / GELU epilogues, bf16 and fp32 with TF32 off) against a host
// reference, plan caching, misaligned operands refused, the workspace counted in
// the pool's reserve; linear, attention, conv2d and the MoE experts (forward and
// backward) against the host references of their CPU kernels (reference.hpp) in
// fp32 and bf16 with poisoned outputs. Exits 77 (skipped) without a GPU.
#include <tensoropt/cuda/gemm.cuh>
#include <tensoropt/cuda/kernels_attention.cuh>
#include <tensoropt/cuda/kernels_conv.cuh>
#include <tensoropt/cuda/kernels_experts.cuh>
#include <tensoropt/cuda/kernels_linear.cuh>
#include <tensoropt/cuda/memory.cuh>
#include <tensoropt/cuda/stream.cuh>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>
#include "harness.cuh"
#include "reference.hpp"

namespace cu = tensoropt::cuda;
namespace kc = tensoropt::cuda::kernels;
namespace rt = tensoropt::runtime;
using harness::darray;
using harness::random;
using ref::i64;
using ref::vec;

namespace {

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

struct context {
  cu::stream s{0};
  cu::memory_pool pool{0};
  cu::gemm_engine gemm{pool, s};
};

template <class T>
void gemm_case(cu::gemm_engine& e, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch,
               cu::epilogue ep, float beta) {
  constexpr bool bf = harness::is_bf16<T>;
  const vec a = random(std::size_t(batch * m * k), -1, 1, bf, 1), b = random(std::size_t(batch * k * n), -1, 1, bf, 2),
            c0 = random(std::size_t(batch * m * n), -1, 1, bf, 3), bias = random(std::size_t(n), -1, 1, bf, 4);
  vec want = c0;
  const std::int64_t lda = ta ? m : k, ldb = tb ? k : n;
  for (std::int64_t i = 0; i < batch; ++i) {
    ref::gemm(ta, tb, m, n, k, 1.f, a.data() + i * m * k, lda, b.data() + i * k * n, ldb, beta,
              want.data() + i * m * n, n, false);
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t j = 0; j < n; ++j) {
        float& v = want[std::size_t(i * m * n + r * n + j)];
        if (ep == cu::epilogue::bias || ep == cu::epilogue::bias_gelu) v += bias[std::size_t(j)];
        if (ep == cu::epilogue::gelu || ep == cu::epilogue::bias_gelu)
          v = float(0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * double(v) * v * v))));
        v = ref::q(v, bf);
      }
  }
  darray<T> da(a), db(b), dc(c0), dbias(bias);
  if (beta == 0.f) dc.poison();
  e.run(cu::gemm_args<T>{.trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k, .a = da.data(), .b = db.data(),
                         .beta = beta, .c = dc.data(), .batch = batch, .stride_a = m * k, .stride_b = k * n,
                         .stride_c = m * n, .epilogue = ep, .bias = dbias.data()});
  // Error bound scaled by sum |a| |b| + |beta c| (the rounding of any summation
  // order): fp32 with TF32 would be off by ~5e-4 of it at k = 256 and fails 1e-5.
  vec mag(want.size());
  {
    vec aa(a), bb(b), cc(c0);
    for (auto* v : {&aa, &bb, &cc})
      for (auto& x : *v) x = std::fabs(x);
    for (std::int64_t i = 0; i < batch; ++i)
      ref::gemm(ta, tb, m, n, k, 1.f, aa.data() + i * m * k, lda, bb.data() + i * k * n, ldb, std::fabs(beta),
                cc.data() + i * m * n, n, false);
    for (std::size_t i = 0; i < mag.size(); ++i) mag[i] = std::max(cc[i], std::fabs(want[i]));
  }
  const bool gelu = ep == cu::epilogue::gelu || ep == cu::epilogue::bias_gelu;
  const double rt = harness::rtol<T> * (gelu && !bf ? 10 : 1), at = harness::atol<T>;
  const vec got = dc.get();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(double(got[i]) - want[i]) <= at + rt * mag[i])) ++bad;
  if (bad) std::printf("  %zu of %zu values off (m %lld n %lld k %lld batch %lld)\n", bad, got.size(), (long long)m,
                       (long long)n, (long long)k, (long long)batch);
  CHECK_TRUE(bad == 0);
}

template <class T>
void gemms(context& c) {
  cu::gemm_engine& e = c.gemm;
  CHECK_TRUE(c.pool.reserve_entries().size() == 2);  // the context and this workspace
  CHECK_TRUE(c.pool.reserve_entries()[1].bytes == cu::gemm_engine::default_workspace);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) gemm_case<T>(e, ta, tb, 37, 29, 256, 1, cu::epilogue::none, 0.f);
  const auto plans = e.cached_plans();
  gemm_case<T>(e, false, false, 37, 29, 256, 1, cu::epilogue::none, 0.f);
  CHECK_TRUE(e.cached_plans() == plans);  // same shape: the cached algorithm
  gemm_case<T>(e, false, true, 16, 24, 40, 5, cu::epilogue::none, 1.f);  // strided batch, accumulate
  gemm_case<T>(e, false, false, 32, 48, 64, 1, cu::epilogue::bias, 0.f);
  gemm_case<T>(e, false, false, 32, 48, 64, 1, cu::epilogue::bias_gelu, 0.f);
  gemm_case<T>(e, true, false, 7, 5, 3, 1, cu::epilogue::none, 0.f);  // odd sizes: less than 16-byte alignment
  darray<T> buf(4096);
  const T* off = reinterpret_cast<const T*>(reinterpret_cast<const char*>(buf.data()) + 1);
  try {
    e.run(cu::gemm_args<T>{.m = 4, .n = 4, .k = 4, .a = off, .b = buf.data(), .c = buf.data()});
    CHECK_TRUE(false);
  } catch (const tensoropt::invalid_argument& x) {
    CHECK_TRUE(contains(x.what(), "operand A is not aligned"));
  }
}

template <class T>
void attention(context& c, bool causal, double p) {
  constexpr bool bf = harness::is_bf16<T>;
  ref::attention_shape a{2, 3, 17, 8, 1, 2, 6, 4, 1, causal, rt::dropout_mask::make(99, rt::dropout_stream(2, 11), p)};
  const vec qkv = random(std::size_t(a.b * a.s * 3 * a.h * a.d), -1, 1, bf, 27),
            dy = random(std::size_t(a.b * a.s * a.h * a.d), -1, 1, bf, 28);
  vec y, prob, dqkv;
  ref::attention_fwd(a, qkv, y, prob, bf);
  ref::attention_bwd(a, qkv, prob, dy, dqkv, bf);
  kc::attention_geometry g;
  g.b = a.b, g.h = a.h, g.s = a.s, g.d = a.d, g.blo = a.blo, g.hlo = a.hlo, g.heads = a.heads, g.batch = a.batch;
  g.micro = a.micro, g.causal = causal, g.mask = a.mask;
  darray<T> dq(qkv), dyy(y.size()), dprob(prob.size()), ddy(dy), ddq(qkv.size()), ws(std::size_t(g.workspace()));
  kc::attention_forward<T>(c.gemm, g, dq.data(), dyy.data(), dprob.data(), ws.data());
  harness::close<T>("attention probabilities", dprob.get(), prob);
  harness::close<T>("attention forward", dyy.get(), y);
  kc::attention_backward<T>(c.gemm, g, dq.data(), dprob.data(), ddy.data(), ddq.data(), ws.data());
  harness::close<T>("attention backward", ddq.get(), dqkv);
}

template <class T>
void convolution(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const ref::conv_shape d{2, 4, 3, 5, 4, 3, 2, 9, 8, 2, 1, 0};
  const vec x = random(std::size_t(d.b * d.ci * d.ih * d.iw), -1, 1, bf, 29),
            w = random(std::size_t(d.co * d.ci * d.kh * d.kw), -1, 1, bf, 30), bias = random(std::size_t(d.co), -1, 1, bf, 31),
            dy = random(std::size_t(d.b * d.co * d.oh * d.ow), -1, 1, bf, 32), dw0 = random(w.size(), -1, 1, bf, 33),
            db0 = random(bias.size(), -1, 1, bf, 34);
  vec y, dx, dw = dw0, db = db0;
  ref::conv_fwd(d, x, w, &bias, y, bf);
  ref::conv_bwd(d, x, w, dy, dx, dw, &db, bf);
  const kc::conv_geometry g{d.b, d.co, d.ci, d.oh, d.ow, d.kh, d.kw, d.ih, d.iw, d.stride, d.pad, d.pad_w};
  darray<T> dxin(x), dwt(w), dbias(bias), dyy(y.size()), ddy(dy), ddx(vec(x.size(), 0.f)), ddw(dw0), ddb(db0),
      ws(std::size_t(g.workspace()));
  kc::conv2d_forward<T>(c.gemm, g, dxin.data(), dwt.data(), dbias.data(), dyy.data(), ws.data());
  harness::close<T>("conv2d forward", dyy.get(), y);
  kc::conv2d_backward<T>(c.gemm, g, dxin.data(), dwt.data(), ddy.data(), ddx.data(), ddw.data(), ddb.data(), ws.data());
  harness::close<T>("conv2d dx", ddx.get(), dx);
  harness::close<T>("conv2d dw (accumulated)", ddw.get(), dw);
  harness::close<T>("conv2d dbias (accumulated)", ddb.get(), db);
}

template <class T>
void linear(context& c, bool wt) {
  constexpr bool bf = harness::is_bf16<T>;
  const i64 m = 24, kk = 40, n = 32;
  const vec x = random(std::size_t(m * kk), -1, 1, bf, 60), w = random(std::size_t(kk * n), -1, 1, bf, 61),
            bias = random(std::size_t(n), -1, 1, bf, 62), dy = random(std::size_t(m * n), -1, 1, bf, 63),
            db0 = random(std::size_t(n), -1, 1, bf, 64);
  vec y, dx, dw, db = db0;
  ref::linear_fwd(x, w, &bias, y, m, kk, n, wt, bf);
  ref::linear_bwd(x, w, dy, dx, dw, &db, m, kk, n, wt, bf);
  const kc::linear_geometry l{m, kk, n, wt};
  darray<T> dxin(x), dwt(w), dbias(bias), dyy(y.size()), ddy(dy), ddx(dx.size()), ddw(dw.size()), ddb(db0);
  darray<float> ws(static_cast<std::size_t>(kc::column_sums_workspace(m, n)));
  kc::linear_forward<T>(c.gemm, l, dxin.data(), dwt.data(), dbias.data(), dyy.data());
  harness::close<T>("linear forward (bias epilogue)", dyy.get(), y);
  kc::linear_backward<T>(c.gemm, l, dxin.data(), dwt.data(), ddy.data(), ddx.data(), ddw.data(), ddb.data(), ws.data());
  harness::close<T>("linear dx", ddx.get(), dx);
  harness::close<T>("linear dW", ddw.get(), dw);
  harness::close<T>("linear dbias (accumulated)", ddb.get(), db);
  const auto first = ddb.get();  // rerun: same bits (no atomics)
  ddb.upload(db0);
  kc::column_sums<T>(c.s, ddy.data(), ddb.data(), m, n, ws.data());
  harness::same_bits("linear dbias is deterministic", ddb.get(), first);
}

template <class T>
void experts(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const kc::experts_geometry d{3, 20, 16, 24};
  const vec x = random(std::size_t(d.e * d.t * d.h), -1, 1, bf, 70), w1 = random(std::size_t(d.e * d.h * d.f), -1, 1, bf, 71),
            w2 = random(std::size_t(d.e * d.f * d.h), -1, 1, bf, 72), dy = random(std::size_t(d.e * d.t * d.h), -1, 1, bf, 73);
  vec hid, y, dx, dw1, dw2;
  ref::experts_fwd(x, w1, w2, hid, y, d.e, d.t, d.h, d.f, bf);
  ref::experts_bwd(x, w1, w2, hid, dy, dx, dw1, dw2, d.e, d.t, d.h, d.f, bf);
  darray<T> dxin(x), dw1in(w1), dw2in(w2), dhid(hid.size()), dyy(y.size()), ddy(dy), dda(hid.size()), ddx(dx.size()),
      ddw1(dw1.size()), ddw2(dw2.size()), ws(static_cast<std::size_t>(d.workspace()));
  kc::experts_forward_first<T>(c.gemm, d, dxin.data(), dw1in.data(), dhid.data());
  harness::close<T>("experts pre-activation", dhid.get(), hid);
  kc::experts_forward_second<T>(c.gemm, d, dhid.data(), dw2in.data(), dyy.data(), ws.data());
  harness::close<T>("experts forward", dyy.get(), y);
  kc::experts_backward_first<T>(c.gemm, d, dhid.data(), dw2in.data(), ddy.data(), dda.data(), ddw2.data(), ws.data());
  kc::experts_backward_second<T>(c.gemm, d, dxin.data(), dw1in.data(), dhid.data(), dda.data(), ddw1.data(), ddx.data());
  harness::close<T>("experts dW2", ddw2.get(), dw2);
  harness::close<T>("experts dW1", ddw1.get(), dw1);
  harness::close<T>("experts dx", ddx.get(), dx);
}

template <class T>
void all(context& c) {
  const std::string t = harness::type_name<T>();
  harness::run("cuBLASLt GEMM " + t + (harness::is_bf16<T> ? "" : " (TF32 off: k = 256 within 1e-5)"), [&] { gemms<T>(c); });
  harness::run("linear " + t, [&] { linear<T>(c, false); });
  harness::run("linear, tied (W stored [n, k]) " + t, [&] { linear<T>(c, true); });
  harness::run("attention causal, dropout " + t, [&] { attention<T>(c, true, 0.1); });
  harness::run("attention full, no dropout " + t, [&] { attention<T>(c, false, 0.0); });
  harness::run("conv2d " + t, [&] { convolution<T>(c); });
  harness::run("moe experts " + t, [&] { experts<T>(c); });
}

}  // namespace

int main() {
  if (int r = harness::skip_without_device()) return r;
  context c;
  all<float>(c);
  all<cu::bf16>(c);
  return harness::finish();
}
