// Host reference kernels for the CUDA kernel tests: the CPU kernels' loops of
// runtime/kernels_*.hpp on raw arrays (no op_context, no BLAS, so `.cu` tests need
// no OpenBLAS), with the element math of runtime/elementwise.hpp. Reductions
// accumulate in double. `q` rounds a value to the storage type under test (bf16:
// round to nearest even; fp32: identity) at the points where the CUDA kernels
// store an intermediate in that type, so bf16 results are compared with what bf16
// storage allows, not with an fp32 ideal.
#pragma once
#include <tensoropt/runtime/elementwise.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace ref {

using vec = std::vector<float>;
using i64 = std::int64_t;
namespace k = tensoropt::runtime::kernels;
namespace rt = tensoropt::runtime;

/// Rounds to bf16 (nearest even) when `bf`, else returns x.
inline float q(float x, bool bf) {
  if (!bf || std::isnan(x)) return x;
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}
inline vec q(vec v, bool bf) {
  for (auto& x : v) x = q(x, bf);
  return v;
}

/// C[m, n] = alpha op(A) op(B) + beta C, row-major, double accumulation, rounded.
inline void gemm(bool ta, bool tb, i64 m, i64 n, i64 kk, float alpha, const float* a, i64 lda, const float* b, i64 ldb,
                 float beta, float* c, i64 ldc, bool bf) {
  for (i64 i = 0; i < m; ++i)
    for (i64 j = 0; j < n; ++j) {
      double s = 0;
      for (i64 p = 0; p < kk; ++p) s += double(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = q(float(alpha * s + (beta == 0 ? 0.0 : double(beta) * c[i * ldc + j])), bf);
    }
}

// ---- linear: x[m, k], W[k, n] (or [n, k] when transposed) ----
inline void linear_fwd(const vec& x, const vec& w, const vec* bias, vec& y, i64 m, i64 kk, i64 n, bool wt, bool bf) {
  y.assign(std::size_t(m * n), 0.f);
  gemm(false, wt, m, n, kk, 1.f, x.data(), kk, w.data(), wt ? kk : n, 0.f, y.data(), n, !bias && bf);
  if (bias)
    for (i64 i = 0; i < m; ++i)
      for (i64 j = 0; j < n; ++j) y[std::size_t(i * n + j)] = q(y[std::size_t(i * n + j)] + (*bias)[std::size_t(j)], bf);
}
/// dx, dw overwritten; dbias accumulated.
inline void linear_bwd(const vec& x, const vec& w, const vec& dy, vec& dx, vec& dw, vec* dbias, i64 m, i64 kk, i64 n,
                       bool wt, bool bf) {
  dx.assign(std::size_t(m * kk), 0.f);
  dw.assign(w.size(), 0.f);
  gemm(false, !wt, m, kk, n, 1.f, dy.data(), n, w.data(), wt ? kk : n, 0.f, dx.data(), kk, bf);
  if (wt) gemm(true, false, n, kk, m, 1.f, dy.data(), n, x.data(), kk, 0.f, dw.data(), kk, bf);
  else gemm(true, false, kk, n, m, 1.f, x.data(), kk, dy.data(), n, 0.f, dw.data(), n, bf);
  if (!dbias) return;
  for (i64 j = 0; j < n; ++j) {
    double s = (*dbias)[std::size_t(j)];
    for (i64 i = 0; i < m; ++i) s += dy[std::size_t(i * n + j)];
    (*dbias)[std::size_t(j)] = q(float(s), bf);
  }
}

/// The global element index of local element i of a box (the CPU's for_each_global).
inline std::uint64_t global_index(const i64* ext, const i64* lo, const i64* len, int rank, i64 micro, i64 i) {
  i64 idx[8] = {}, total = 1, g = 0;
  for (int a = rank - 1; a >= 0; --a) {
    idx[a] = i % len[a];
    i /= len[a];
  }
  for (int a = 0; a < rank; ++a) {
    total *= ext[a];
    g = g * ext[a] + lo[a] + idx[a];
  }
  return std::uint64_t(micro * total + g);
}

// ---- layer norm [rows, h]: stat (mean, rstd) per row ----
inline void layer_norm_fwd(const vec& x, const vec& g, const vec& b, vec& y, vec& stat, i64 rows, i64 h, bool bf) {
  y.assign(x.size(), 0.f);
  stat.assign(std::size_t(2 * rows), 0.f);
  for (i64 r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * h;
    double mean = 0, var = 0;
    for (i64 i = 0; i < h; ++i) mean += xr[i];
    mean /= double(h);
    for (i64 i = 0; i < h; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const float rstd = float(1.0 / std::sqrt(var / double(h) + 1e-5f));
    stat[std::size_t(2 * r)] = float(mean);
    stat[std::size_t(2 * r + 1)] = rstd;
    for (i64 i = 0; i < h; ++i)
      y[std::size_t(r * h + i)] = q(k::norm_affine(xr[i], float(mean), rstd, g[std::size_t(i)], b[std::size_t(i)]), bf);
  }
}
inline void layer_norm_bwd(const vec& x, const vec& g, const vec& stat, const vec& dy, vec& dx, vec& dg, vec& db,
                           i64 rows, i64 h, bool bf) {
  dx.assign(x.size(), 0.f);
  std::vector<double> sg(std::size_t(h), 0), sb(std::size_t(h), 0);
  for (i64 r = 0; r < rows; ++r) {
    const float mean = stat[std::size_t(2 * r)], rstd = stat[std::size_t(2 * r + 1)];
    double s1 = 0, s2 = 0;
    for (i64 i = 0; i < h; ++i) {
      const std::size_t e = std::size_t(r * h + i);
      const double xh = (double(x[e]) - mean) * rstd, gg = double(dy[e]) * g[std::size_t(i)];
      sg[std::size_t(i)] += dy[e] * xh;
      sb[std::size_t(i)] += dy[e];
      s1 += gg;
      s2 += gg * xh;
    }
    for (i64 i = 0; i < h; ++i) {
      const std::size_t e = std::size_t(r * h + i);
      const double xh = (double(x[e]) - mean) * rstd, gg = double(dy[e]) * g[std::size_t(i)];
      dx[e] = q(float(rstd * (gg - s1 / double(h) - xh * s2 / double(h))), bf);
    }
  }
  for (i64 i = 0; i < h; ++i) {
    dg[std::size_t(i)] = q(float(dg[std::size_t(i)] + sg[std::size_t(i)]), bf);
    db[std::size_t(i)] = q(float(db[std::size_t(i)] + sb[std::size_t(i)]), bf);
  }
}

// ---- batch norm [nb, ch, hw], one device: count = nb * hw ----
inline void batch_norm_fwd(const vec& x, const vec& g, const vec& b, vec& y, vec& stat, i64 nb, i64 ch, i64 hw,
                           bool bf) {
  const double count = double(nb * hw);
  y.assign(x.size(), 0.f);
  stat.assign(std::size_t(2 * ch), 0.f);
  for (i64 c = 0; c < ch; ++c) {
    double s = 0, v = 0;
    for (i64 n = 0; n < nb; ++n)
      for (i64 i = 0; i < hw; ++i) s += x[std::size_t((n * ch + c) * hw + i)];
    const float mean = float(s / count);
    for (i64 n = 0; n < nb; ++n)
      for (i64 i = 0; i < hw; ++i) {
        const double d = x[std::size_t((n * ch + c) * hw + i)] - mean;
        v += d * d;
      }
    const float rstd = float(1.0 / std::sqrt(v / count + 1e-5f));
    stat[std::size_t(2 * c)] = mean;
    stat[std::size_t(2 * c + 1)] = rstd;
    for (i64 n = 0; n < nb; ++n)
      for (i64 i = 0; i < hw; ++i) {
        const std::size_t e = std::size_t((n * ch + c) * hw + i);
        y[e] = q(k::norm_affine(x[e], mean, rstd, g[std::size_t(c)], b[std::size_t(c)]), bf);
      }
  }
}
inline void batch_norm_bwd(const vec& x, const vec& g, const vec& stat, const vec& dy, vec& dx, vec& dg, vec& db,
                           i64 nb, i64 ch, i64 hw, bool bf) {
  const double count = double(nb * hw);
  dx.assign(x.size(), 0.f);
  for (i64 c = 0; c < ch; ++c) {
    const double mean = stat[std::size_t(2 * c)], rstd = stat[std::size_t(2 * c + 1)];
    double s1 = 0, s2 = 0;
    for (i64 n = 0; n < nb; ++n)
      for (i64 i = 0; i < hw; ++i) {
        const std::size_t e = std::size_t((n * ch + c) * hw + i);
        s1 += dy[e];
        s2 += dy[e] * (x[e] - mean) * rstd;
      }
    dg[std::size_t(c)] = q(float(dg[std::size_t(c)] + s2), bf);
    db[std::size_t(c)] = q(float(db[std::size_t(c)] + s1), bf);
    const double gk = g[std::size_t(c)] * rstd;
    for (i64 n = 0; n < nb; ++n)
      for (i64 i = 0; i < hw; ++i) {
        const std::size_t e = std::size_t((n * ch + c) * hw + i);
        dx[e] = q(float(gk * (dy[e] - s1 / count - (x[e] - mean) * rstd * s2 / count)), bf);
      }
  }
}

// ---- embedding: ids[rows], table[vl, h] (ids offset by vlo), pos[sl, h] ----
inline void embedding_fwd(const vec& ids, const vec& table, const vec* pos, vec& y, i64 rows, i64 vlo, i64 vl, i64 h,
                          i64 sl, bool bf) {
  y.assign(std::size_t(rows * h), 0.f);
  for (i64 r = 0; r < rows; ++r) {
    const i64 id = i64(ids[std::size_t(r)]) - vlo;
    for (i64 i = 0; i < h; ++i) {
      float v = id >= 0 && id < vl ? table[std::size_t(id * h + i)] : 0.f;
      if (pos) v += (*pos)[std::size_t((r % sl) * h + i)];
      y[std::size_t(r * h + i)] = q(v, bf);
    }
  }
}
/// Float accumulation in row order, as the CPU (the CUDA kernel matches it exactly).
inline void embedding_bwd(const vec& ids, const vec& dy, vec& dtable, vec* dpos, i64 rows, i64 vlo, i64 vl, i64 h,
                          i64 sl, bool bf) {
  vec acc = dtable;
  for (i64 r = 0; r < rows; ++r) {
    const i64 id = i64(ids[std::size_t(r)]) - vlo;
    if (id >= 0 && id < vl)
      for (i64 i = 0; i < h; ++i) acc[std::size_t(id * h + i)] += dy[std::size_t(r * h + i)];
  }
  dtable = q(acc, bf);
  if (!dpos) return;
  vec pacc = *dpos;
  for (i64 r = 0; r < rows; ++r)
    for (i64 i = 0; i < h; ++i) pacc[std::size_t((r % sl) * h + i)] += dy[std::size_t(r * h + i)];
  *dpos = q(pacc, bf);
}

// ---- softmax cross-entropy [rows, cl], one device (clo = 0) ----
inline float xent_fwd(const vec& z, const vec& labels, vec& p, i64 rows, i64 cl) {
  p.assign(z.size(), 0.f);
  double loss = 0;
  for (i64 r = 0; r < rows; ++r) {
    float mx = -std::numeric_limits<float>::infinity();
    for (i64 j = 0; j < cl; ++j) mx = std::max(mx, z[std::size_t(r * cl + j)]);
    double sum = 0;
    for (i64 j = 0; j < cl; ++j) sum += std::exp(double(z[std::size_t(r * cl + j)]) - mx);
    for (i64 j = 0; j < cl; ++j) p[std::size_t(r * cl + j)] = float(std::exp(double(z[std::size_t(r * cl + j)]) - mx) / sum);
    loss += std::log(sum) + mx - z[std::size_t(r * cl + i64(labels[std::size_t(r)]))];
  }
  return float(loss / double(rows));
}
inline void xent_bwd(const vec& p, const vec& labels, float dloss, vec& dz, i64 rows, i64 cl, bool bf) {
  dz.assign(p.size(), 0.f);
  const double s = double(dloss) / double(rows);
  for (i64 r = 0; r < rows; ++r)
    for (i64 j = 0; j < cl; ++j)
      dz[std::size_t(r * cl + j)] =
          q(float(s * (p[std::size_t(r * cl + j)] - (j == i64(labels[std::size_t(r)]) ? 1.0 : 0.0))), bf);
}

// ---- attention: qkv[b, s, 3, h, d] -> y[b, s, h, d]; prob[b, h, s, s] ----
struct attention_shape {
  i64 b, h, s, d, blo, hlo, heads, batch, micro;
  bool causal;
  rt::dropout_mask mask;
  float keep(i64 bi, i64 hi, i64 i, i64 j) const {
    return mask.scale(std::uint64_t((((micro * batch + blo + bi) * heads + hlo + hi) * s + i) * s + j));
  }
};
inline void attention_fwd(const attention_shape& a, const vec& qkv, vec& y, vec& prob, bool bf) {
  const i64 ld = 3 * a.h * a.d, ldy = a.h * a.d;
  const float scale = float(1.0 / std::sqrt(double(a.d)));
  y.assign(std::size_t(a.b * a.s * ldy), 0.f);
  prob.assign(std::size_t(a.b * a.h * a.s * a.s), 0.f);
  vec sc(std::size_t(a.s * a.s)), pd(sc.size());
  for (i64 bi = 0; bi < a.b; ++bi)
    for (i64 hi = 0; hi < a.h; ++hi) {
      const float* qp = qkv.data() + bi * a.s * ld + hi * a.d;
      gemm(false, true, a.s, a.s, a.d, scale, qp, ld, qp + a.h * a.d, ld, 0.f, sc.data(), a.s, bf);
      float* p = prob.data() + (bi * a.h + hi) * a.s * a.s;
      for (i64 i = 0; i < a.s; ++i) {
        const i64 valid = a.causal ? i + 1 : a.s;
        float mx = -std::numeric_limits<float>::infinity();
        for (i64 j = 0; j < valid; ++j) mx = std::max(mx, sc[std::size_t(i * a.s + j)]);
        double sum = 0;
        for (i64 j = 0; j < valid; ++j) sum += std::exp(double(sc[std::size_t(i * a.s + j)]) - mx);
        for (i64 j = 0; j < a.s; ++j) {
          const float pv = j < valid ? float(std::exp(double(sc[std::size_t(i * a.s + j)]) - mx) / sum) : 0.f;
          p[i * a.s + j] = q(pv, bf);
          pd[std::size_t(i * a.s + j)] = q(pv * a.keep(bi, hi, i, j), bf);
        }
      }
      gemm(false, false, a.s, a.d, a.s, 1.f, pd.data(), a.s, qp + 2 * a.h * a.d, ld, 0.f,
           y.data() + bi * a.s * ldy + hi * a.d, ldy, bf);
    }
}
inline void attention_bwd(const attention_shape& a, const vec& qkv, const vec& prob, const vec& dy, vec& dqkv, bool bf) {
  const i64 ld = 3 * a.h * a.d, ldy = a.h * a.d;
  const float scale = float(1.0 / std::sqrt(double(a.d)));
  dqkv.assign(qkv.size(), 0.f);
  vec pd(std::size_t(a.s * a.s)), dp(pd.size());
  for (i64 bi = 0; bi < a.b; ++bi)
    for (i64 hi = 0; hi < a.h; ++hi) {
      const float* qp = qkv.data() + bi * a.s * ld + hi * a.d;
      float* dq = dqkv.data() + bi * a.s * ld + hi * a.d;
      const float* g = dy.data() + bi * a.s * ldy + hi * a.d;
      const float* p = prob.data() + (bi * a.h + hi) * a.s * a.s;
      for (i64 i = 0; i < a.s; ++i)
        for (i64 j = 0; j < a.s; ++j) pd[std::size_t(i * a.s + j)] = q(p[i * a.s + j] * a.keep(bi, hi, i, j), bf);
      gemm(false, true, a.s, a.s, a.d, 1.f, g, ldy, qp + 2 * a.h * a.d, ld, 0.f, dp.data(), a.s, bf);
      gemm(true, false, a.s, a.d, a.s, 1.f, pd.data(), a.s, g, ldy, 0.f, dq + 2 * a.h * a.d, ld, bf);
      for (i64 i = 0; i < a.s; ++i) {
        double dot = 0;
        for (i64 j = 0; j < a.s; ++j) dot += double(dp[std::size_t(i * a.s + j)]) * a.keep(bi, hi, i, j) * p[i * a.s + j];
        for (i64 j = 0; j < a.s; ++j) {
          float& x = dp[std::size_t(i * a.s + j)];
          x = q(float(p[i * a.s + j] * (double(x) * a.keep(bi, hi, i, j) - dot)), bf);
        }
      }
      gemm(false, false, a.s, a.d, a.s, scale, dp.data(), a.s, qp + a.h * a.d, ld, 0.f, dq, ld, bf);
      gemm(true, false, a.s, a.d, a.s, scale, dp.data(), a.s, qp, ld, 0.f, dq + a.h * a.d, ld, bf);
    }
}

// ---- conv2d (one sample loop, im2col semantics written directly) ----
struct conv_shape {
  i64 b, co, ci, oh, ow, kh, kw, ih, iw, stride, pad, pad_w;
};
inline void conv_fwd(const conv_shape& d, const vec& x, const vec& w, const vec* bias, vec& y, bool bf) {
  y.assign(std::size_t(d.b * d.co * d.oh * d.ow), 0.f);
  for (i64 n = 0; n < d.b; ++n)
    for (i64 o = 0; o < d.co; ++o)
      for (i64 oy = 0; oy < d.oh; ++oy)
        for (i64 ox = 0; ox < d.ow; ++ox) {
          double s = 0;
          for (i64 c = 0; c < d.ci; ++c)
            for (i64 ki = 0; ki < d.kh; ++ki)
              for (i64 kj = 0; kj < d.kw; ++kj) {
                const i64 iy = oy * d.stride - d.pad + ki, ix = ox * d.stride - d.pad_w + kj;
                if (iy < 0 || iy >= d.ih || ix < 0 || ix >= d.iw) continue;
                s += double(w[std::size_t(((o * d.ci + c) * d.kh + ki) * d.kw + kj)]) *
                     x[std::size_t(((n * d.ci + c) * d.ih + iy) * d.iw + ix)];
              }
          float v = q(float(s), bf);
          if (bias) v = q(v + (*bias)[std::size_t(o)], bf);
          y[std::size_t(((n * d.co + o) * d.oh + oy) * d.ow + ox)] = v;
        }
}
/// The CPU kernel's structure: per sample, col = im2col(x[n]); dw += dy[n] col^T
/// (one rounding per sample, as a GEMM with beta 1); dcol = W^T dy[n] (rounded);
/// dx[n] = col2im(dcol) summed in float in (ki, kj) order. dbias accumulated once.
inline void conv_bwd(const conv_shape& d, const vec& x, const vec& w, const vec& dy, vec& dx, vec& dw, vec* dbias,
                     bool bf) {
  const i64 kk = d.ci * d.kh * d.kw, pix = d.oh * d.ow;
  vec col(std::size_t(kk * pix)), dcol(col.size());
  std::vector<double> ab(std::size_t(d.co), 0);
  dx.assign(x.size(), 0.f);
  for (i64 n = 0; n < d.b; ++n) {
    for (i64 r = 0; r < kk; ++r) {
      const i64 kj = r % d.kw, ki = (r / d.kw) % d.kh, c = r / (d.kw * d.kh);
      for (i64 p = 0; p < pix; ++p) {
        const i64 iy = (p / d.ow) * d.stride - d.pad + ki, ix = (p % d.ow) * d.stride - d.pad_w + kj;
        col[std::size_t(r * pix + p)] =
            iy >= 0 && iy < d.ih && ix >= 0 && ix < d.iw ? x[std::size_t(((n * d.ci + c) * d.ih + iy) * d.iw + ix)] : 0.f;
      }
    }
    const float* g = dy.data() + n * d.co * pix;
    gemm(false, true, d.co, kk, pix, 1.f, g, pix, col.data(), pix, 1.f, dw.data(), kk, bf);
    for (i64 o = 0; o < d.co; ++o)
      for (i64 p = 0; p < pix; ++p) ab[std::size_t(o)] += g[o * pix + p];
    gemm(true, false, kk, pix, d.co, 1.f, w.data(), kk, g, pix, 0.f, dcol.data(), pix, bf);
    vec acc(std::size_t(d.ci * d.ih * d.iw), 0.f);
    for (i64 r = 0; r < kk; ++r) {
      const i64 kj = r % d.kw, ki = (r / d.kw) % d.kh, c = r / (d.kw * d.kh);
      for (i64 p = 0; p < pix; ++p) {
        const i64 iy = (p / d.ow) * d.stride - d.pad + ki, ix = (p % d.ow) * d.stride - d.pad_w + kj;
        if (iy >= 0 && iy < d.ih && ix >= 0 && ix < d.iw) acc[std::size_t((c * d.ih + iy) * d.iw + ix)] += dcol[std::size_t(r * pix + p)];
      }
    }
    for (std::size_t i = 0; i < acc.size(); ++i) dx[std::size_t(n * d.ci * d.ih * d.iw) + i] = q(acc[i], bf);
  }
  if (dbias)
    for (i64 o = 0; o < d.co; ++o) (*dbias)[std::size_t(o)] = q(float((*dbias)[std::size_t(o)] + ab[std::size_t(o)]), bf);
}

// ---- pooling: x[planes, ih, iw] -> y[planes, oh, ow] ----
struct pool_shape {
  i64 planes, oh, ow, ih, iw, stride, pad, k;
};
inline void pool_fwd(const pool_shape& g, bool is_max, const vec& x, vec& y, std::vector<i64>& arg, bool bf) {
  y.assign(std::size_t(g.planes * g.oh * g.ow), 0.f);
  arg.assign(y.size(), -1);
  for (i64 p = 0; p < g.planes; ++p)
    for (i64 oy = 0; oy < g.oh; ++oy)
      for (i64 ox = 0; ox < g.ow; ++ox) {
        float acc = is_max ? -std::numeric_limits<float>::infinity() : 0.f;
        i64 best = -1;
        for (i64 ki = 0; ki < g.k; ++ki)
          for (i64 kj = 0; kj < g.k; ++kj) {
            const i64 iy = oy * g.stride - g.pad + ki, ix = ox * g.stride - g.pad + kj;
            if (iy < 0 || iy >= g.ih || ix < 0 || ix >= g.iw) continue;
            const i64 e = (p * g.ih + iy) * g.iw + ix;
            const float v = x[std::size_t(e)];
            if (!is_max) acc += v;
            else if (v > acc) {
              acc = v;
              best = e;
            }
          }
        const std::size_t o = std::size_t((p * g.oh + oy) * g.ow + ox);
        y[o] = q(is_max ? (best < 0 ? 0.f : acc) : acc / float(g.k * g.k), bf);
        arg[o] = is_max ? best : -1;
      }
}
/// dx accumulated onto its initial value, in output order (float, as the CPU).
inline void pool_bwd(const pool_shape& g, bool is_max, const vec& dy, const std::vector<i64>& arg, vec& dx, bool bf) {
  vec acc = dx;
  for (i64 p = 0; p < g.planes; ++p)
    for (i64 oy = 0; oy < g.oh; ++oy)
      for (i64 ox = 0; ox < g.ow; ++ox) {
        const std::size_t o = std::size_t((p * g.oh + oy) * g.ow + ox);
        if (is_max) {
          if (arg[o] >= 0) acc[std::size_t(arg[o])] += dy[o];
          continue;
        }
        for (i64 ki = 0; ki < g.k; ++ki)
          for (i64 kj = 0; kj < g.k; ++kj) {
            const i64 iy = oy * g.stride - g.pad + ki, ix = ox * g.stride - g.pad + kj;
            if (iy >= 0 && iy < g.ih && ix >= 0 && ix < g.iw)
              acc[std::size_t((p * g.ih + iy) * g.iw + ix)] += dy[o] / float(g.k * g.k);
          }
      }
  dx = q(acc, bf);
}

// ---- MoE ----
inline void moe_gate_fwd(const vec& z, vec& prob, vec& mask, vec& y, i64 t, i64 E, i64 el, i64 elo, i64 kk, bool bf) {
  prob.assign(std::size_t(t * E), 0.f);
  mask.assign(prob.size(), 0.f);
  y.assign(std::size_t(t * el), 0.f);
  std::vector<int> order(static_cast<std::size_t>(E));
  for (i64 r = 0; r < t; ++r) {
    const float* zr = z.data() + r * E;
    const float mx = *std::max_element(zr, zr + E);
    double sum = 0;
    for (i64 j = 0; j < E; ++j) sum += std::exp(double(zr[j]) - mx);
    for (i64 j = 0; j < E; ++j) prob[std::size_t(r * E + j)] = float(std::exp(double(zr[j]) - mx) / sum);
    for (i64 j = 0; j < E; ++j) order[std::size_t(j)] = int(j);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return zr[a] > zr[b]; });
    for (i64 j = 0; j < std::min(kk, E); ++j) mask[std::size_t(r * E + order[std::size_t(j)])] = 1.f;
    for (i64 j = 0; j < el; ++j)
      y[std::size_t(r * el + j)] = q(prob[std::size_t(r * E + elo + j)] * mask[std::size_t(r * E + elo + j)], bf);
  }
}
inline void moe_gate_bwd(const vec& p, const vec& m, const vec& dg, vec& dz, i64 t, i64 E, i64 el, i64 elo, bool bf) {
  dz.assign(std::size_t(t * el), 0.f);
  for (i64 r = 0; r < t; ++r) {
    double dot = 0;
    for (i64 j = 0; j < E; ++j) dot += double(p[std::size_t(r * E + j)]) * m[std::size_t(r * E + j)] * dg[std::size_t(r * E + j)];
    for (i64 j = 0; j < el; ++j) {
      const std::size_t e = std::size_t(r * E + elo + j);
      dz[std::size_t(r * el + j)] = q(float(p[e] * (m[e] * dg[e] - dot)), bf);
    }
  }
}
/// Slots [g, sl, e] from full gates [g, S, e] (the CPU's detail::routes).
inline std::vector<i64> moe_routes(const vec& full, i64 gl, i64 S, i64 el, i64 slo, i64 sl) {
  std::vector<i64> slot(std::size_t(gl * sl * el), -1);
  for (i64 gi = 0; gi < gl; ++gi)
    for (i64 e = 0; e < el; ++e) {
      i64 count = 0;
      for (i64 s = 0; s < S; ++s) {
        if (full[std::size_t((gi * S + s) * el + e)] == 0.f) continue;
        if (s >= slo && s < slo + sl) slot[std::size_t((gi * sl + s - slo) * el + e)] = count;
        ++count;
      }
    }
  return slot;
}
struct moe_shape {
  i64 g, s, e, c, h, clo;
};
inline void moe_dispatch_fwd(const moe_shape& m, const vec& x, const std::vector<i64>& slot, vec& y) {
  y.assign(std::size_t(m.e * m.g * m.c * m.h), 0.f);
  for (i64 gi = 0; gi < m.g; ++gi)
    for (i64 s = 0; s < m.s; ++s)
      for (i64 e = 0; e < m.e; ++e) {
        const i64 pos = slot[std::size_t((gi * m.s + s) * m.e + e)] - m.clo;
        if (pos < 0 || pos >= m.c) continue;
        std::copy_n(x.data() + (gi * m.s + s) * m.h, m.h, y.data() + ((e * m.g + gi) * m.c + pos) * m.h);
      }
}
inline void moe_dispatch_bwd(const moe_shape& m, const vec& dy, const std::vector<i64>& slot, vec& dx, bool bf) {
  vec acc = dx;
  for (i64 gi = 0; gi < m.g; ++gi)
    for (i64 s = 0; s < m.s; ++s)
      for (i64 e = 0; e < m.e; ++e) {
        const i64 pos = slot[std::size_t((gi * m.s + s) * m.e + e)] - m.clo;
        if (pos < 0 || pos >= m.c) continue;
        for (i64 i = 0; i < m.h; ++i)
          acc[std::size_t((gi * m.s + s) * m.h + i)] += dy[std::size_t(((e * m.g + gi) * m.c + pos) * m.h + i)];
      }
  dx = q(acc, bf);
}
inline void moe_combine_fwd(const moe_shape& m, const vec& y, const vec& gates, const std::vector<i64>& slot, vec& out,
                            bool bf) {
  std::vector<double> acc(std::size_t(m.g * m.s * m.h), 0);
  for (i64 gi = 0; gi < m.g; ++gi)
    for (i64 s = 0; s < m.s; ++s)
      for (i64 e = 0; e < m.e; ++e) {
        const i64 pos = slot[std::size_t((gi * m.s + s) * m.e + e)] - m.clo;
        if (pos < 0 || pos >= m.c) continue;
        const double w = gates[std::size_t((gi * m.s + s) * m.e + e)];
        for (i64 i = 0; i < m.h; ++i)
          acc[std::size_t((gi * m.s + s) * m.h + i)] += w * y[std::size_t(((e * m.g + gi) * m.c + pos) * m.h + i)];
      }
  out.assign(acc.size(), 0.f);
  for (std::size_t i = 0; i < acc.size(); ++i) out[i] = q(float(acc[i]), bf);
}
inline void moe_combine_bwd(const moe_shape& m, const vec& y, const vec& gates, const std::vector<i64>& slot,
                            const vec& dout, vec& dy, vec& dgates, bool bf) {
  for (i64 gi = 0; gi < m.g; ++gi)
    for (i64 s = 0; s < m.s; ++s)
      for (i64 e = 0; e < m.e; ++e) {
        const std::size_t ge = std::size_t((gi * m.s + s) * m.e + e);
        const i64 pos = slot[ge] - m.clo;
        if (pos < 0 || pos >= m.c) continue;
        double dot = 0;
        for (i64 i = 0; i < m.h; ++i) {
          const std::size_t yo = std::size_t(((e * m.g + gi) * m.c + pos) * m.h + i), o = std::size_t((gi * m.s + s) * m.h + i);
          dy[yo] = q(float(dy[yo] + double(gates[ge]) * dout[o]), bf);
          dot += double(dout[o]) * y[yo];
        }
        dgates[ge] = q(float(dgates[ge] + dot), bf);
      }
}

// ---- MoE experts: x[e, t, h], W1[e, h, f], W2[e, f, h]; saved H[e, t, f] ----
inline void experts_fwd(const vec& x, const vec& w1, const vec& w2, vec& hid, vec& y, i64 E, i64 t, i64 h, i64 f,
                        bool bf) {
  hid.assign(std::size_t(E * t * f), 0.f);
  y.assign(std::size_t(E * t * h), 0.f);
  vec a(hid.size());
  for (i64 e = 0; e < E; ++e)
    gemm(false, false, t, f, h, 1.f, x.data() + e * t * h, h, w1.data() + e * h * f, f, 0.f, hid.data() + e * t * f, f, bf);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = q(k::gelu(hid[i]), bf);
  for (i64 e = 0; e < E; ++e)
    gemm(false, false, t, h, f, 1.f, a.data() + e * t * f, f, w2.data() + e * f * h, h, 0.f, y.data() + e * t * h, h, bf);
}
inline void experts_bwd(const vec& x, const vec& w1, const vec& w2, const vec& hid, const vec& dy, vec& dx, vec& dw1,
                        vec& dw2, i64 E, i64 t, i64 h, i64 f, bool bf) {
  vec a(hid.size()), da(hid.size());
  dx.assign(x.size(), 0.f);
  dw1.assign(w1.size(), 0.f);
  dw2.assign(w2.size(), 0.f);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = q(k::gelu(hid[i]), bf);
  for (i64 e = 0; e < E; ++e) {
    gemm(false, true, t, f, h, 1.f, dy.data() + e * t * h, h, w2.data() + e * f * h, h, 0.f, da.data() + e * t * f, f, bf);
    gemm(true, false, f, h, t, 1.f, a.data() + e * t * f, f, dy.data() + e * t * h, h, 0.f, dw2.data() + e * f * h, h, bf);
  }
  for (std::size_t i = 0; i < da.size(); ++i) da[i] = q(da[i] * k::gelu_grad(hid[i]), bf);
  for (i64 e = 0; e < E; ++e) {
    gemm(true, false, h, f, t, 1.f, x.data() + e * t * h, h, da.data() + e * t * f, f, 0.f, dw1.data() + e * h * f, f, bf);
    gemm(false, true, t, h, f, 1.f, da.data() + e * t * f, f, w1.data() + e * h * f, f, 0.f, dx.data() + e * t * h, h, bf);
  }
}

}  // namespace ref
