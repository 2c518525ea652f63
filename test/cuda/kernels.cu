// Every CUDA kernel that needs no GEMM against the host reference of its CPU kernel
// (reference.hpp; attention and conv2d are in gemm.cu), in fp32 and bf16 storage,
// on random inputs with poisoned outputs; plus the
// promises of exactness: dropout masks and the gather-based backward passes
// (embedding, pooling) equal the CPU loops bit for bit in fp32, and the
// deterministic reductions give the same bits on every run. Needs no cuBLAS.
// Exits 77 (skipped) without a GPU.
#include <tensoropt/cuda/kernels_elementwise.cuh>
#include <tensoropt/cuda/kernels_embedding.cuh>
#include <tensoropt/cuda/kernels_loss.cuh>
#include <tensoropt/cuda/kernels_moe.cuh>
#include <tensoropt/cuda/kernels_norm.cuh>
#include <tensoropt/cuda/kernels_optimizer.cuh>
#include <tensoropt/cuda/kernels_pool.cuh>
#include <tensoropt/cuda/stream.cuh>
#include <algorithm>
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

struct context {
  cu::stream s{0};
};

template <class T>
void elementwise(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const i64 n = 10007;
  const vec x = random(std::size_t(n), -5.f, 5.f, bf, 1), dy = random(std::size_t(n), -1.f, 1.f, bf, 2);
  darray<T> dx_in(x), ddy(dy), y(static_cast<std::size_t>(n)), dx(static_cast<std::size_t>(n));
  for (auto op : {kc::unary_op::relu, kc::unary_op::gelu}) {
    const bool relu = op == kc::unary_op::relu;
    vec want(x.size()), wantd(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      want[i] = ref::q(relu ? ref::k::relu(x[i]) : ref::k::gelu(x[i]), bf);
      wantd[i] = ref::q(relu ? ref::k::relu_grad(x[i], dy[i]) : dy[i] * ref::k::gelu_grad(x[i]), bf);
    }
    y.poison();
    dx.poison();
    kc::unary_forward<T>(c.s, op, dx_in.data(), y.data(), n);
    kc::unary_backward<T>(c.s, op, dx_in.data(), ddy.data(), dx.data(), n);
    harness::close<T>(relu ? "relu" : "gelu", y.get(), want);
    harness::close<T>(relu ? "relu backward" : "gelu backward", dx.get(), wantd);
  }
  // residual add, copy, casts
  vec sum(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) sum[i] = ref::q(x[i] + dy[i], bf);
  y.poison();
  kc::add<T>(c.s, dx_in.data(), ddy.data(), y.data(), n);
  harness::close<T>("add", y.get(), sum);
  y.poison();
  kc::copy<T>(c.s, ddy.data(), y.data(), n);
  harness::same_bits("copy", y.get(), dy);
  darray<cu::bf16> half(static_cast<std::size_t>(n));
  darray<float> back(static_cast<std::size_t>(n));
  kc::cast<T, cu::bf16>(c.s, dx_in.data(), half.data(), n);
  kc::cast<cu::bf16, float>(c.s, half.data(), back.data(), n);
  harness::same_bits("cast to bf16 and back", back.get(), ref::q(x, true));
}

template <class T>
void dropout(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  cu::tensor_box box;
  box.rank = 3;
  const i64 ext[3] = {4, 6, 10}, lo[3] = {2, 0, 5}, len[3] = {2, 6, 5};
  for (int a = 0; a < 3; ++a) {
    box.extents[a] = ext[a];
    box.lo[a] = lo[a];
    box.len[a] = len[a];
  }
  box.micro = 3;
  const i64 n = box.local_size();
  const auto mask = rt::dropout_mask::make(1234, rt::dropout_stream(5, 7), 0.3);
  const vec x = random(std::size_t(n), -2.f, 2.f, bf, 3);
  vec want(x.size());
  int dropped = 0;
  for (i64 i = 0; i < n; ++i) {
    const float sc = mask.scale(ref::global_index(ext, lo, len, 3, box.micro, i));
    want[std::size_t(i)] = ref::q(x[std::size_t(i)] * sc, bf);
    dropped += sc == 0.f;
  }
  CHECK_TRUE(dropped > 0 && dropped < n);
  darray<T> dx(x), y(static_cast<std::size_t>(n));
  kc::dropout<T>(c.s, dx.data(), y.data(), box, mask);
  harness::same_bits("dropout (mask and scale equal the CPU's)", y.get(), want);
}

template <class T>
void concat(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const i64 outer = 5, inner = 3, w[3] = {2, 4, 1}, total = 7;
  const vec a = random(std::size_t(outer * w[0] * inner), -1, 1, bf, 4), b = random(std::size_t(outer * w[1] * inner), -1, 1, bf, 5),
            d = random(std::size_t(outer * w[2] * inner), -1, 1, bf, 6);
  vec want(std::size_t(outer * total * inner));
  for (i64 o = 0; o < outer; ++o) {
    i64 off = 0;
    const vec* parts[3] = {&a, &b, &d};
    for (int i = 0; i < 3; ++i) {
      for (i64 j = 0; j < w[i] * inner; ++j)
        want[std::size_t((o * total + off) * inner + j)] = (*parts[i])[std::size_t(o * w[i] * inner + j)];
      off += w[i];
    }
  }
  darray<T> da(a), db(b), dd(d), y(want.size());
  const T* ins[3] = {da.data(), db.data(), dd.data()};
  kc::concat_forward<T>(c.s, ins, w, y.data(), outer, inner);
  harness::same_bits("concat forward", y.get(), want);
  darray<T> ga(a.size()), gd(d.size());
  T* outs[3] = {ga.data(), nullptr, gd.data()};
  kc::concat_backward<T>(c.s, y.data(), w, outs, outer, inner);
  harness::same_bits("concat backward (first input)", ga.get(), a);
  harness::same_bits("concat backward (third input)", gd.get(), d);
}

template <class T>
void layer_norm(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const i64 rows = 37, h = 96;
  const vec x = random(std::size_t(rows * h), -2.f, 3.f, bf, 7), g = random(std::size_t(h), 0.5f, 1.5f, bf, 8),
            b = random(std::size_t(h), -0.5f, 0.5f, bf, 9), dy = random(std::size_t(rows * h), -1.f, 1.f, bf, 10),
            dg0 = random(std::size_t(h), -1.f, 1.f, bf, 11), db0 = random(std::size_t(h), -1.f, 1.f, bf, 12);
  vec y, stat, dx, dg = dg0, db = db0;
  ref::layer_norm_fwd(x, g, b, y, stat, rows, h, bf);
  ref::layer_norm_bwd(x, g, stat, dy, dx, dg, db, rows, h, bf);
  darray<T> dxin(x), dgain(g), dbias(b), dyy(y.size()), ddy(dy), ddx(dx.size()), ddg(dg0), ddb(db0);
  darray<float> dstat(stat.size()), ws(std::size_t(kc::layer_norm_backward_workspace(rows, h)));
  kc::layer_norm_forward<T>(c.s, dxin.data(), dgain.data(), dbias.data(), dyy.data(), dstat.data(), rows, h);
  harness::close<T>("layer norm forward", dyy.get(), y);
  harness::close("layer norm statistics (fp32)", dstat.get(), stat, 1e-5, 1e-6);
  darray<float> dstat2(stat.size());  // what backward recomputes: the same bits as forward's
  kc::layer_norm_stats<T>(c.s, dxin.data(), dstat2.data(), rows, h);
  harness::same_bits("layer norm statistics recomputed", dstat2.get(), dstat.get());
  kc::layer_norm_backward<T>(c.s, dxin.data(), dgain.data(), dstat.data(), ddy.data(), ddx.data(), ddg.data(),
                             ddb.data(), rows, h, ws.data());
  harness::close<T>("layer norm dx", ddx.get(), dx);
  harness::close<T>("layer norm dgain (accumulated)", ddg.get(), dg);
  harness::close<T>("layer norm dbias (accumulated)", ddb.get(), db);
  const auto first_g = ddg.get(), first_b = ddb.get();  // rerun: same bits (no atomics)
  ddg.upload(dg0);
  ddb.upload(db0);
  kc::layer_norm_backward<T>(c.s, dxin.data(), dgain.data(), dstat.data(), ddy.data(), nullptr, ddg.data(),
                             ddb.data(), rows, h, ws.data());
  harness::same_bits("layer norm dgain is deterministic", ddg.get(), first_g);
  harness::same_bits("layer norm dbias is deterministic", ddb.get(), first_b);
}

template <class T>
void batch_norm(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const i64 nb = 3, ch = 5, hw = 42;
  const double count = double(nb * hw);
  const vec x = random(std::size_t(nb * ch * hw), -1.f, 2.f, bf, 13), g = random(std::size_t(ch), 0.5f, 1.5f, bf, 14),
            b = random(std::size_t(ch), -0.5f, 0.5f, bf, 15), dy = random(x.size(), -1.f, 1.f, bf, 16),
            dg0 = random(std::size_t(ch), -1.f, 1.f, bf, 17), db0 = random(std::size_t(ch), -1.f, 1.f, bf, 18);
  vec y, stat, dx, dg = dg0, db = db0;
  ref::batch_norm_fwd(x, g, b, y, stat, nb, ch, hw, bf);
  ref::batch_norm_bwd(x, g, stat, dy, dx, dg, db, nb, ch, hw, bf);
  darray<T> dxin(x), dgain(g), dbias(b), dyy(y.size()), ddy(dy), ddx(x.size()), ddg(dg0), ddb(db0);
  darray<float> sum(static_cast<std::size_t>(ch)), sq(static_cast<std::size_t>(ch)), dstat(std::size_t(2 * ch)), both(std::size_t(2 * ch));
  kc::batch_norm_sums<T>(c.s, dxin.data(), sum.data(), nb, ch, hw);
  kc::batch_norm_centered_squares<T>(c.s, dxin.data(), sum.data(), count, sq.data(), nb, ch, hw);
  kc::batch_norm_apply<T>(c.s, dxin.data(), sum.data(), sq.data(), count, dgain.data(), dbias.data(), dyy.data(),
                          dstat.data(), nb, ch, hw);
  harness::close<T>("batch norm forward", dyy.get(), y);
  harness::close("batch norm statistics (fp32)", dstat.get(), stat, 1e-5, 1e-6);
  kc::batch_norm_backward_sums<T>(c.s, dxin.data(), dstat.data(), ddy.data(), both.data(), ddg.data(), ddb.data(), nb,
                                  ch, hw);
  kc::batch_norm_backward_dx<T>(c.s, dxin.data(), dstat.data(), ddy.data(), dgain.data(), both.data(), count,
                                ddx.data(), nb, ch, hw);
  harness::close<T>("batch norm dx", ddx.get(), dx);
  harness::close<T>("batch norm dgain", ddg.get(), dg);
  harness::close<T>("batch norm dbias", ddb.get(), db);
}

template <class T>
void embedding(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const i64 rows = 50, sl = 25, vlo = 10, vl = 20, h = 24;
  vec ids = random(std::size_t(rows), 0.f, 40.f, false, 19);
  for (auto& v : ids) v = std::floor(v);
  ids[3] = ids[7] = ids[30] = 12;  // repeated ids: several rows into one table row
  const vec table = random(std::size_t(vl * h), -1, 1, bf, 20), pos = random(std::size_t(sl * h), -1, 1, bf, 21),
            dy = random(std::size_t(rows * h), -1, 1, bf, 22), dt0 = random(table.size(), -1, 1, bf, 23),
            dp0 = random(pos.size(), -1, 1, bf, 24);
  vec y, dt = dt0, dp = dp0;
  ref::embedding_fwd(ids, table, &pos, y, rows, vlo, vl, h, sl, bf);
  ref::embedding_bwd(ids, dy, dt, &dp, rows, vlo, vl, h, sl, bf);
  darray<float> dids(ids);
  darray<T> dtab(table), dpos(pos), dyy(y.size()), ddy(dy), ddt(dt0), ddp(dp0);
  kc::embedding_forward<T>(c.s, dids.data(), dtab.data(), dpos.data(), dyy.data(), rows, vlo, vl, h, sl);
  harness::close<T>("embedding forward", dyy.get(), y);
  const std::size_t wsb = kc::embedding_backward_workspace(rows, vl);
  darray<float> ws((wsb + 3) / 4);
  kc::embedding_backward<T>(c.s, dids.data(), ddy.data(), ddt.data(), ddp.data(), rows, vlo, vl, h, sl, ws.data(), wsb);
  if constexpr (!bf) {
    harness::same_bits("embedding dtable equals the CPU loop bit for bit", ddt.get(), dt);
    harness::same_bits("embedding dpos equals the CPU loop bit for bit", ddp.get(), dp);
  } else {
    harness::close<T>("embedding dtable", ddt.get(), dt);
    harness::close<T>("embedding dpos", ddp.get(), dp);
  }
}

template <class T>
void cross_entropy(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const i64 rows = 33, cl = 50;
  const vec z = random(std::size_t(rows * cl), -4, 4, bf, 25);
  vec labels = random(std::size_t(rows), 0, float(cl), false, 26);
  for (auto& v : labels) v = std::floor(v);
  vec p, dz;
  const float loss = ref::xent_fwd(z, labels, p, rows, cl);
  ref::xent_bwd(p, labels, 2.f, dz, rows, cl, bf);
  darray<T> dzin(z), ddz(dz.size());
  darray<float> dl(labels), mx(static_cast<std::size_t>(rows)), sum(static_cast<std::size_t>(rows)), dp(p.size()), out(1), dloss(vec{2.f});
  darray<double> term(static_cast<std::size_t>(rows));
  kc::xent_row_max<T>(c.s, dzin.data(), mx.data(), rows, cl);
  kc::xent_exp_sums<T>(c.s, dzin.data(), mx.data(), dp.data(), sum.data(), rows, cl);
  kc::xent_finish<T>(c.s, dzin.data(), dl.data(), mx.data(), sum.data(), dp.data(), term.data(), out.data(), rows, cl,
                     0, double(rows));
  harness::close("cross-entropy loss", out.get(), vec{loss}, 1e-5, 1e-6);
  harness::close("cross-entropy probabilities (fp32)", dp.get(), p, 1e-5, 1e-6);
  kc::xent_backward<T>(c.s, dp.data(), dl.data(), dloss.data(), double(rows), ddz.data(), rows, cl, 0);
  harness::close<T>("cross-entropy dz", ddz.get(), dz);
}

/// The phase API with a split class dim: two shards of the classes, the
/// collectives done on the host between the phases, equal the unsplit reference.
template <class T>
void cross_entropy_split(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const i64 rows = 9, cl = 40, half = cl / 2;
  const vec z = random(std::size_t(rows * cl), -4, 4, bf, 27);
  vec labels = random(std::size_t(rows), 0, float(cl), false, 28);
  for (auto& v : labels) v = std::floor(v);
  vec p, dz;
  const float loss = ref::xent_fwd(z, labels, p, rows, cl);
  ref::xent_bwd(p, labels, 1.f, dz, rows, cl, bf);
  vec part[2], maxima(std::size_t(2 * rows));
  for (int i = 0; i < 2; ++i)
    for (i64 r = 0; r < rows; ++r)
      for (i64 j = 0; j < half; ++j) part[i].push_back(z[std::size_t(r * cl + i * half + j)]);
  darray<T> dz0(part[0]), dz1(part[1]), g0(part[0].size()), g1(part[1].size());
  darray<T>* zs[2] = {&dz0, &dz1};
  darray<T>* gs[2] = {&g0, &g1};
  darray<float> dl(labels), mx0(static_cast<std::size_t>(rows)), mx1(static_cast<std::size_t>(rows)),
      s0(static_cast<std::size_t>(rows)), s1(static_cast<std::size_t>(rows)), p0(part[0].size()), p1(part[1].size()),
      l0(1), l1(1), dloss(vec{1.f});
  darray<float>* mxs[2] = {&mx0, &mx1};
  darray<float>* ss[2] = {&s0, &s1};
  darray<float>* ps[2] = {&p0, &p1};
  darray<float>* ls[2] = {&l0, &l1};
  darray<double> term(static_cast<std::size_t>(rows));
  for (int i = 0; i < 2; ++i) kc::xent_row_max<T>(c.s, zs[i]->data(), mxs[i]->data(), rows, half);
  const vec m0 = mx0.get(), m1 = mx1.get();  // all-gather of the maxima
  std::copy(m0.begin(), m0.end(), maxima.begin());
  std::copy(m1.begin(), m1.end(), maxima.begin() + rows);
  darray<float> all(maxima);
  for (int i = 0; i < 2; ++i) {
    kc::xent_max_of_gathered(c.s, all.data(), mxs[i]->data(), rows, 2);
    kc::xent_exp_sums<T>(c.s, zs[i]->data(), mxs[i]->data(), ps[i]->data(), ss[i]->data(), rows, half);
  }
  vec sum = s0.get();  // all-reduce of the sums
  const vec sb = s1.get();
  for (std::size_t r = 0; r < sum.size(); ++r) sum[r] += sb[r];
  s0.upload(sum);
  s1.upload(sum);
  for (int i = 0; i < 2; ++i) {
    kc::xent_finish<T>(c.s, zs[i]->data(), dl.data(), mxs[i]->data(), ss[i]->data(), ps[i]->data(), term.data(),
                       ls[i]->data(), rows, half, i * half, double(rows));
    kc::xent_backward<T>(c.s, ps[i]->data(), dl.data(), dloss.data(), double(rows), gs[i]->data(), rows, half, i * half);
  }
  harness::close("split cross-entropy loss (sum of the shards' partial losses)", vec{l0.get()[0] + l1.get()[0]},
                 vec{loss}, 1e-5, 1e-5);
  for (int i = 0; i < 2; ++i) {
    vec want_p, want_dz;
    for (i64 r = 0; r < rows; ++r)
      for (i64 j = 0; j < half; ++j) {
        want_p.push_back(p[std::size_t(r * cl + i * half + j)]);
        want_dz.push_back(dz[std::size_t(r * cl + i * half + j)]);
      }
    harness::close("split cross-entropy probabilities", ps[i]->get(), want_p, 1e-5, 1e-6);
    harness::close<T>("split cross-entropy dz", gs[i]->get(), want_dz);
  }
}

/// Batch norm with the batch split in two: per-shard sums added on the host
/// between the phases equal the unsplit reference.
template <class T>
void batch_norm_split(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const i64 nb = 4, ch = 3, hw = 10, half = nb / 2, n = half * ch * hw;
  const double count = double(nb * hw);
  const vec x = random(std::size_t(nb * ch * hw), -1.f, 2.f, bf, 29), g = random(std::size_t(ch), 0.5f, 1.5f, bf, 30),
            b = random(std::size_t(ch), -0.5f, 0.5f, bf, 31), dy = random(x.size(), -1.f, 1.f, bf, 32);
  vec y, stat, dx, dg(std::size_t(ch), 0.f), db(std::size_t(ch), 0.f);
  ref::batch_norm_fwd(x, g, b, y, stat, nb, ch, hw, bf);
  ref::batch_norm_bwd(x, g, stat, dy, dx, dg, db, nb, ch, hw, bf);
  darray<T> dgain(g), dbias(b);
  auto shard = [&](const vec& v, int i) { return vec(v.begin() + i * n, v.begin() + (i + 1) * n); };
  darray<T> x0(shard(x, 0)), x1(shard(x, 1)), y0(static_cast<std::size_t>(n)), y1(static_cast<std::size_t>(n)), dy0(shard(dy, 0)),
      dy1(shard(dy, 1)), dx0(static_cast<std::size_t>(n)), dx1(static_cast<std::size_t>(n)), dg0(vec(std::size_t(ch), 0.f)),
      dg1(vec(std::size_t(ch), 0.f)), db0(vec(std::size_t(ch), 0.f)), db1(vec(std::size_t(ch), 0.f));
  darray<float> su0(static_cast<std::size_t>(ch)), su1(static_cast<std::size_t>(ch)), sq0(static_cast<std::size_t>(ch)),
      sq1(static_cast<std::size_t>(ch)), st0(std::size_t(2 * ch)), st1(std::size_t(2 * ch)), bo0(std::size_t(2 * ch)),
      bo1(std::size_t(2 * ch));
  auto add_both = [](darray<float>& a, darray<float>& b2) {  // all-reduce of two shards
    vec s = a.get();
    const vec t = b2.get();
    for (std::size_t i = 0; i < s.size(); ++i) s[i] += t[i];
    a.upload(s);
    b2.upload(s);
  };
  kc::batch_norm_sums<T>(c.s, x0.data(), su0.data(), half, ch, hw);
  kc::batch_norm_sums<T>(c.s, x1.data(), su1.data(), half, ch, hw);
  add_both(su0, su1);
  kc::batch_norm_centered_squares<T>(c.s, x0.data(), su0.data(), count, sq0.data(), half, ch, hw);
  kc::batch_norm_centered_squares<T>(c.s, x1.data(), su1.data(), count, sq1.data(), half, ch, hw);
  add_both(sq0, sq1);
  kc::batch_norm_apply<T>(c.s, x0.data(), su0.data(), sq0.data(), count, dgain.data(), dbias.data(), y0.data(),
                          st0.data(), half, ch, hw);
  kc::batch_norm_apply<T>(c.s, x1.data(), su1.data(), sq1.data(), count, dgain.data(), dbias.data(), y1.data(),
                          st1.data(), half, ch, hw);
  harness::close<T>("split batch norm forward, shard 0", y0.get(), shard(y, 0));
  harness::close<T>("split batch norm forward, shard 1", y1.get(), shard(y, 1));
  harness::close("split batch norm statistics", st1.get(), stat, 1e-5, 1e-6);
  kc::batch_norm_backward_sums<T>(c.s, x0.data(), st0.data(), dy0.data(), bo0.data(), dg0.data(), db0.data(), half, ch,
                                  hw);
  kc::batch_norm_backward_sums<T>(c.s, x1.data(), st1.data(), dy1.data(), bo1.data(), dg1.data(), db1.data(), half, ch,
                                  hw);
  add_both(bo0, bo1);
  kc::batch_norm_backward_dx<T>(c.s, x0.data(), st0.data(), dy0.data(), dgain.data(), bo0.data(), count, dx0.data(),
                                half, ch, hw);
  kc::batch_norm_backward_dx<T>(c.s, x1.data(), st1.data(), dy1.data(), dgain.data(), bo1.data(), count, dx1.data(),
                                half, ch, hw);
  harness::close<T>("split batch norm dx, shard 0", dx0.get(), shard(dx, 0));
  harness::close<T>("split batch norm dx, shard 1", dx1.get(), shard(dx, 1));
  vec gsum = dg0.get(), bsum = db0.get();  // partial parameter gradients, reduced by the executor
  const vec g1v = dg1.get(), b1v = db1.get();
  for (std::size_t i = 0; i < gsum.size(); ++i) {
    gsum[i] += g1v[i];
    bsum[i] += b1v[i];
  }
  harness::close<T>("split batch norm dgain (sum of partials)", gsum, dg);
  harness::close<T>("split batch norm dbias (sum of partials)", bsum, db);
}

template <class T>
void pooling(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const ref::pool_shape p{6, 5, 5, 9, 9, 2, 1, 3};
  const vec x = random(std::size_t(p.planes * p.ih * p.iw), -3, 3, bf, 35),
            dy = random(std::size_t(p.planes * p.oh * p.ow), -1, 1, bf, 36), dx0 = random(x.size(), -1, 1, bf, 37);
  const kc::pool_geometry g{p.planes, p.oh, p.ow, p.ih, p.iw, p.stride, p.pad, p.k};
  for (bool is_max : {true, false}) {
    vec y, dx = dx0;
    std::vector<i64> arg;
    ref::pool_fwd(p, is_max, x, y, arg, bf);
    ref::pool_bwd(p, is_max, dy, arg, dx, bf);
    darray<T> dxin(x), dyy(y.size()), ddy(dy), ddx(dx0);
    std::int64_t* darg = nullptr;
    TENSOROPT_CUDA_CHECK(cudaMalloc(&darg, arg.size() * sizeof(std::int64_t)));
    kc::pool_forward<T>(c.s, g, is_max, dxin.data(), dyy.data(), darg);
    harness::close<T>(is_max ? "max pool forward" : "avg pool forward", dyy.get(), y);
    if (is_max) {
      std::vector<i64> got(arg.size());
      TENSOROPT_CUDA_CHECK(cudaDeviceSynchronize());
      TENSOROPT_CUDA_CHECK(cudaMemcpy(got.data(), darg, got.size() * sizeof(i64), cudaMemcpyDeviceToHost));
      CHECK_TRUE(got == arg);
    }
    kc::pool_backward<T>(c.s, g, is_max, ddy.data(), darg, ddx.data());
    if constexpr (!bf) harness::same_bits(is_max ? "max pool backward (bitwise)" : "avg pool backward (bitwise)", ddx.get(), dx);
    else harness::close<T>(is_max ? "max pool backward" : "avg pool backward", ddx.get(), dx);
    (void)cudaFree(darg);
  }
  // global average pooling over 5 x 6 planes
  const i64 planes = 7, hw = 30;
  const vec gx = random(std::size_t(planes * hw), -1, 1, bf, 38), gdy = random(std::size_t(planes), -1, 1, bf, 39);
  vec gy(static_cast<std::size_t>(planes)), gdx(gx.size());
  for (i64 q = 0; q < planes; ++q) {
    double s = 0;
    for (i64 i = 0; i < hw; ++i) s += gx[std::size_t(q * hw + i)];
    gy[std::size_t(q)] = ref::q(float(s) * (1.f / float(hw)), bf);
    for (i64 i = 0; i < hw; ++i) gdx[std::size_t(q * hw + i)] = ref::q(gdy[std::size_t(q)] * (1.f / float(hw)), bf);
  }
  darray<T> dgx(gx), dgy(gy.size()), dgdy(gdy), dgdx(gx.size());
  kc::global_avg_pool_forward<T>(c.s, dgx.data(), dgy.data(), planes, hw, 1.f / float(hw));
  kc::global_avg_pool_backward<T>(c.s, dgdy.data(), dgdx.data(), planes, hw, 1.f / float(hw));
  harness::close<T>("global average pool forward", dgy.get(), gy);
  harness::close<T>("global average pool backward", dgdx.get(), gdx);
}

template <class T>
void moe(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const i64 gl = 2, sl = 12, E = 4, t = gl * sl, h = 8, k = 2;
  const vec z = random(std::size_t(t * E), -2, 2, bf, 40), dg = random(std::size_t(t * E), -1, 1, bf, 41);
  vec prob, mask, gates, dz;
  ref::moe_gate_fwd(z, prob, mask, gates, t, E, E, 0, k, bf);
  ref::moe_gate_bwd(prob, mask, dg, dz, t, E, E, 0, bf);
  darray<T> dzl(z), dgates(gates.size()), ddg(dg), ddz(dz.size());
  darray<float> dprob(prob.size()), dmask(mask.size());
  kc::moe_gate_forward<T>(c.s, dzl.data(), dprob.data(), dmask.data(), dgates.data(), t, E, E, 0, k, true);
  harness::close("gate probabilities (fp32)", dprob.get(), prob, 1e-5, 1e-6);
  harness::same_bits("gate top-k mask", dmask.get(), mask);
  harness::close<T>("gates", dgates.get(), gates);
  kc::moe_gate_backward<T>(c.s, dprob.data(), dmask.data(), ddg.data(), ddz.data(), t, E, E, 0);
  harness::close<T>("gate backward", ddz.get(), dz);

  // routes, dispatch and combine on the reference gates (capacity window [2, 8))
  const vec g = ref::q(gates, bf);
  const ref::moe_shape m{gl, sl, E, 6, h, 2};
  const auto slot = ref::moe_routes(g, gl, sl, E, 0, sl);
  const kc::moe_geometry mg{gl, sl, E, m.c, h, 0, m.clo, sl};
  darray<T> dg2(g);
  std::int64_t* dslot = nullptr;
  TENSOROPT_CUDA_CHECK(cudaMalloc(&dslot, slot.size() * sizeof(i64)));
  TENSOROPT_CUDA_CHECK(cudaMemset(dslot, 0x7f, slot.size() * sizeof(i64)));
  TENSOROPT_CUDA_CHECK(cudaDeviceSynchronize());
  kc::moe_routes<T>(c.s, mg, dg2.data(), dslot);
  std::vector<i64> got(slot.size());
  TENSOROPT_CUDA_CHECK(cudaDeviceSynchronize());
  TENSOROPT_CUDA_CHECK(cudaMemcpy(got.data(), dslot, got.size() * sizeof(i64), cudaMemcpyDeviceToHost));
  CHECK_TRUE(got == slot);
  const vec x = random(std::size_t(t * h), -1, 1, bf, 42), dxe = random(std::size_t(E * gl * m.c * h), -1, 1, bf, 43),
            dx0 = random(x.size(), -1, 1, bf, 44), dout = random(std::size_t(t * h), -1, 1, bf, 45),
            dyc0 = random(dxe.size(), -1, 1, bf, 46), dgc0 = random(g.size(), -1, 1, bf, 47);
  vec ye, dx = dx0, out, dyc = dyc0, dgc = dgc0;
  ref::moe_dispatch_fwd(m, x, slot, ye);
  ref::moe_dispatch_bwd(m, dxe, slot, dx, bf);
  ref::moe_combine_fwd(m, dxe, g, slot, out, bf);
  ref::moe_combine_bwd(m, dxe, g, slot, dout, dyc, dgc, bf);
  darray<T> dx_(x), dye(ye.size()), ddxe(dxe), ddx(dx0), dout_(dout), dcomb(out.size()), ddyc(dyc0), ddgc(dgc0);
  kc::moe_dispatch_forward<T>(c.s, mg, dx_.data(), dslot, dye.data());
  harness::same_bits("dispatch forward", dye.get(), ye);
  kc::moe_dispatch_backward<T>(c.s, mg, ddxe.data(), dslot, ddx.data());
  harness::close<T>("dispatch backward", ddx.get(), dx);
  kc::moe_combine_forward<T>(c.s, mg, ddxe.data(), dg2.data(), dslot, dcomb.data());
  harness::close<T>("combine forward", dcomb.get(), out);
  kc::moe_combine_backward<T>(c.s, mg, ddxe.data(), dg2.data(), dslot, dout_.data(), ddyc.data(), ddgc.data());
  harness::close<T>("combine backward (experts)", ddyc.get(), dyc);
  harness::close<T>("combine backward (gates)", ddgc.get(), dgc);
  (void)cudaFree(dslot);
}

template <class T>
void optimizers(context& c) {
  constexpr bool bf = harness::is_bf16<T>;
  const i64 n = 1000;
  const vec w0 = random(std::size_t(n), -1, 1, false, 48), v0 = random(std::size_t(n), 0, 1e-3f, false, 49);
  for (bool adam : {false, true}) {
    vec w = w0, m = w0, v = v0;
    for (auto& x : m) x *= 0.1f;
    darray<float> dw(w), dm(m), dv(v);
    darray<cu::bf16> copy(static_cast<std::size_t>(n));
    for (int t = 1; t <= 3; ++t) {
      const vec g = random(std::size_t(n), -1, 1, bf, 50u + unsigned(t));
      const auto st = rt::optimizer_step::at(0.01f, 0.9f, 0.9f, 0.999f, 1e-8f, t);
      for (i64 i = 0; i < n; ++i) {
        const std::size_t e = std::size_t(i);
        if (adam) rt::adam_element(st, w[e], m[e], v[e], g[e]);
        else rt::sgd_element(st, w[e], m[e], g[e]);
      }
      darray<T> dg(g);
      if (adam) kc::adam_update<T>(c.s, st, dw.data(), dm.data(), dv.data(), dg.data(), copy.data(), n);
      else kc::sgd_update<T>(c.s, st, dw.data(), dm.data(), dg.data(), copy.data(), n);
      TENSOROPT_CUDA_CHECK(cudaDeviceSynchronize());
    }
    harness::close(adam ? "adam master weights" : "sgd master weights", dw.get(), w, 1e-5, 1e-6);
    harness::close(adam ? "adam first moment" : "sgd momentum", dm.get(), m, 1e-5, 1e-6);
    if (adam) harness::close("adam second moment", dv.get(), v, 1e-5, 1e-6);
    harness::close("bf16 copy of the weights", copy.get(), ref::q(w, true), 1e-2, 1e-3);
  }
}

template <class T>
void all(context& c) {
  const std::string t = harness::type_name<T>();
  harness::run("elementwise " + t, [&] { elementwise<T>(c); });
  harness::run("dropout " + t, [&] { dropout<T>(c); });
  harness::run("concat " + t, [&] { concat<T>(c); });
  harness::run("layer norm " + t, [&] { layer_norm<T>(c); });
  harness::run("batch norm " + t, [&] { batch_norm<T>(c); });
  harness::run("embedding " + t, [&] { embedding<T>(c); });
  harness::run("softmax cross-entropy " + t, [&] { cross_entropy<T>(c); });
  harness::run("softmax cross-entropy, classes split in two " + t, [&] { cross_entropy_split<T>(c); });
  harness::run("batch norm, batch split in two " + t, [&] { batch_norm_split<T>(c); });
  harness::run("pooling " + t, [&] { pooling<T>(c); });
  harness::run("moe " + t, [&] { moe<T>(c); });
  harness::run("optimizers (gradients " + t + ")", [&] { optimizers<T>(c); });
}

}  // namespace

int main() {
  if (int r = harness::skip_without_device()) return r;
  context c;
  all<float>(c);
  all<cu::bf16>(c);
  return harness::finish();
}
