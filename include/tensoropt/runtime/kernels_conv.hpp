// Forward and backward CPU kernels of the convolutional ops: conv2d (im2col + CBLAS
// GEMM), max and average pooling, global average pooling and batch norm with
// statistics synchronized over the devices that split batch or space.
#pragma once
#include <cmath>
#include <limits>
#include <vector>
#include "kernels_dense.hpp"

namespace tensoropt::runtime::kernels {

// ---- conv2d: dims [b, cout, cin, oh, ow, kh, kw]; x[b, cin, ih, iw]; attr stride, pad rows, pad columns ----
struct conv_dims {
  index_t b, co, ci, oh, ow, kh, kw, ih, iw, stride, pad, pad_w;
};
inline conv_dims conv_of(const op_context& c) {
  const auto& x = c.graph.tensors[std::size_t(c.op.inputs[0].tensor)];
  return {c.len(0), c.len(1), c.len(2), c.len(3), c.len(4), c.len(5), c.len(6), x.extents[2], x.extents[3],
          c.op.attr[0], c.op.attr[1], c.op.attr[2]};
}
/// col[(ci * kh + ki) * kw + kj][oy * ow + ox] <-> x[ci][iy][ix]; add = col2im.
inline void im2col(const conv_dims& d, const float* x, float* col, bool to_image) {
  for (index_t ci = 0; ci < d.ci; ++ci)
    for (index_t ki = 0; ki < d.kh; ++ki)
      for (index_t kj = 0; kj < d.kw; ++kj) {
        float* row = col + ((ci * d.kh + ki) * d.kw + kj) * d.oh * d.ow;
        for (index_t oy = 0; oy < d.oh; ++oy) {
          const index_t iy = oy * d.stride - d.pad + ki;
          for (index_t ox = 0; ox < d.ow; ++ox) {
            const index_t ix = ox * d.stride - d.pad_w + kj;
            const bool in = iy >= 0 && iy < d.ih && ix >= 0 && ix < d.iw;
            float& cv = row[oy * d.ow + ox];
            if (to_image) {
              if (in) const_cast<float*>(x)[(ci * d.ih + iy) * d.iw + ix] += cv;
            } else
              cv = in ? x[(ci * d.ih + iy) * d.iw + ix] : 0.f;
          }
        }
      }
}
inline buffer conv2d_fwd(op_context& c, inputs in, inputs par, op_state&) {
  const auto d = conv_of(c);
  const index_t kk = d.ci * d.kh * d.kw, pix = d.oh * d.ow;
  buffer y = c.zeros(std::size_t(d.b * d.co * pix));
  std::vector<float> col(static_cast<std::size_t>(kk * pix));
  const bool bias = (c.op.attr[3] & 1) && c.block(2) == 0;
  for (index_t n = 0; n < d.b; ++n) {
    im2col(d, in[0]->data() + n * d.ci * d.ih * d.iw, col.data(), false);
    float* yn = y.data() + n * d.co * pix;
    gemm(false, false, d.co, pix, kk, 1.f, par[0]->data(), col.data(), 0.f, yn);
    if (bias)
      for (index_t o = 0; o < d.co; ++o)
        for (index_t i = 0; i < pix; ++i) yn[o * pix + i] += (*par[1])[std::size_t(o)];
  }
  return y;
}
inline void conv2d_bwd(op_context& c, inputs in, inputs par, op_state&, const buffer& dy, std::vector<buffer>& din,
                       std::vector<buffer>& dpar) {
  const auto d = conv_of(c);
  const index_t kk = d.ci * d.kh * d.kw, pix = d.oh * d.ow;
  std::vector<float> col(static_cast<std::size_t>(kk * pix));
  const bool bias = (c.op.attr[3] & 1) && c.block(2) == 0;
  for (index_t n = 0; n < d.b; ++n) {
    const float* g = dy.data() + n * d.co * pix;
    im2col(d, in[0]->data() + n * d.ci * d.ih * d.iw, col.data(), false);
    gemm(false, true, d.co, kk, pix, 1.f, g, col.data(), 1.f, dpar[0].data());  // dW += dY col^T
    if (bias)
      for (index_t o = 0; o < d.co; ++o)
        for (index_t i = 0; i < pix; ++i) dpar[1][std::size_t(o)] += g[o * pix + i];
    if (din[0].size()) {
      gemm(true, false, kk, pix, d.co, 1.f, par[0]->data(), g, 0.f, col.data());  // dcol = W^T dY
      im2col(d, din[0].data() + n * d.ci * d.ih * d.iw, col.data(), true);
    }
  }
}

// ---- max / avg pool: dims [b, c, oh, ow, kh, kw]; attr stride, pad, kernel ----
inline buffer pool_fwd(op_context& c, inputs in, inputs, op_state& st) {
  const auto& xt = c.graph.tensors[std::size_t(c.op.inputs[0].tensor)];
  const index_t planes = c.len(0) * c.len(1), oh = c.len(2), ow = c.len(3), ih = xt.extents[2], iw = xt.extents[3];
  const index_t s = c.op.attr[0], pad = c.op.attr[1], k = c.op.attr[2];
  const bool is_max = c.op.kind == op_kind::max_pool;
  buffer y = c.zeros(std::size_t(planes * oh * ow));
  if (is_max) st.ints.assign(y.size(), -1);
  for (index_t p = 0; p < planes; ++p)
    for (index_t oy = 0; oy < oh; ++oy)
      for (index_t ox = 0; ox < ow; ++ox) {
        float acc = is_max ? -std::numeric_limits<float>::infinity() : 0.f;
        index_t arg = -1;
        for (index_t ki = 0; ki < k; ++ki)
          for (index_t kj = 0; kj < k; ++kj) {
            const index_t iy = oy * s - pad + ki, ix = ox * s - pad + kj;
            if (iy < 0 || iy >= ih || ix < 0 || ix >= iw) continue;
            const index_t e = (p * ih + iy) * iw + ix;
            const float v = (*in[0])[std::size_t(e)];
            if (!is_max) acc += v;
            else if (v > acc) {
              acc = v;
              arg = e;
            }
          }
        const std::size_t o = std::size_t((p * oh + oy) * ow + ox);
        y[o] = is_max ? (arg < 0 ? 0.f : acc) : acc / float(k * k);
        if (is_max) st.ints[o] = arg;
      }
  return y;
}
inline void pool_bwd(op_context& c, inputs, inputs, op_state& st, const buffer& dy, std::vector<buffer>& din,
                     std::vector<buffer>&) {
  const auto& xt = c.graph.tensors[std::size_t(c.op.inputs[0].tensor)];
  const index_t planes = c.len(0) * c.len(1), oh = c.len(2), ow = c.len(3), ih = xt.extents[2], iw = xt.extents[3];
  const index_t s = c.op.attr[0], pad = c.op.attr[1], k = c.op.attr[2];
  if (c.op.kind == op_kind::max_pool) {
    for (std::size_t o = 0; o < dy.size(); ++o)
      if (st.ints[o] >= 0) din[0][std::size_t(st.ints[o])] += dy[o];
    return;
  }
  for (index_t p = 0; p < planes; ++p)
    for (index_t oy = 0; oy < oh; ++oy)
      for (index_t ox = 0; ox < ow; ++ox) {
        const float g = dy[std::size_t((p * oh + oy) * ow + ox)] / float(k * k);
        for (index_t ki = 0; ki < k; ++ki)
          for (index_t kj = 0; kj < k; ++kj) {
            const index_t iy = oy * s - pad + ki, ix = ox * s - pad + kj;
            if (iy >= 0 && iy < ih && ix >= 0 && ix < iw) din[0][std::size_t((p * ih + iy) * iw + ix)] += g;
          }
      }
}

// ---- global average pool: dims [b, c, h, w]; y[b, c] partial over split h, w ----
inline buffer gap_fwd(op_context& c, inputs in, inputs, op_state&) {
  const index_t planes = c.len(0) * c.len(1), hw = c.len(2) * c.len(3);
  const float inv = 1.f / float(c.extent(2) * c.extent(3));
  buffer y = c.zeros(std::size_t(planes));
  for (index_t p = 0; p < planes; ++p) {
    float s = 0;
    for (index_t i = 0; i < hw; ++i) s += (*in[0])[std::size_t(p * hw + i)];
    y[std::size_t(p)] = s * inv;
  }
  return y;
}
inline void gap_bwd(op_context& c, inputs, inputs, op_state&, const buffer& dy, std::vector<buffer>& din,
                    std::vector<buffer>&) {
  const index_t planes = c.len(0) * c.len(1), hw = c.len(2) * c.len(3);
  const float inv = 1.f / float(c.extent(2) * c.extent(3));
  for (index_t p = 0; p < planes; ++p)
    for (index_t i = 0; i < hw; ++i) din[0][std::size_t(p * hw + i)] = dy[std::size_t(p)] * inv;
}

// ---- batch norm: dims [b, c, h, w]; statistics over b, h, w (all devices) ----
// saved: mean and rstd per channel.
inline void bn_channel_sums(const op_context& c, const float* a, const float* b, std::vector<float>& s1,
                            std::vector<float>& s2) {
  const index_t nb = c.len(0), ch = c.len(1), hw = c.len(2) * c.len(3);
  s1.assign(std::size_t(ch), 0.f);
  s2.assign(std::size_t(ch), 0.f);
  for (index_t n = 0; n < nb; ++n)
    for (index_t k = 0; k < ch; ++k)
      for (index_t i = 0; i < hw; ++i) {
        const index_t e = (n * ch + k) * hw + i;
        s1[std::size_t(k)] += a[e];
        if (b) s2[std::size_t(k)] += a[e] * b[e];
      }
}
inline buffer batch_norm_fwd(op_context& c, inputs in, inputs par, op_state& st) {
  const index_t nb = c.len(0), ch = c.len(1), hw = c.len(2) * c.len(3);
  const double count = double(c.extent(0) * c.extent(2) * c.extent(3));
  const group g = c.over(0b1101u);
  const buffer& x = *in[0];
  std::vector<float> s1, s2;
  bn_channel_sums(c, x.data(), nullptr, s1, s2);
  c.comm.all_reduce(g, s1);
  std::vector<float> mean(s1.size());
  for (std::size_t k = 0; k < s1.size(); ++k) mean[k] = float(s1[k] / count);
  std::vector<float> dev(x.size());
  for (index_t n = 0; n < nb; ++n)
    for (index_t k = 0; k < ch; ++k)
      for (index_t i = 0; i < hw; ++i) {
        const std::size_t e = std::size_t((n * ch + k) * hw + i);
        dev[e] = x[e] - mean[std::size_t(k)];
      }
  bn_channel_sums(c, dev.data(), dev.data(), s1, s2);
  c.comm.all_reduce(g, s2);
  buffer stat = c.zeros(std::size_t(2 * ch)), y = c.zeros(x.size());
  for (index_t k = 0; k < ch; ++k) {
    stat[std::size_t(2 * k)] = mean[std::size_t(k)];
    stat[std::size_t(2 * k + 1)] = float(1.0 / std::sqrt(s2[std::size_t(k)] / count + norm_eps));
  }
  for (index_t n = 0; n < nb; ++n)
    for (index_t k = 0; k < ch; ++k)
      for (index_t i = 0; i < hw; ++i) {
        const std::size_t e = std::size_t((n * ch + k) * hw + i);
        y[e] = dev[e] * stat[std::size_t(2 * k + 1)] * (*par[0])[std::size_t(k)] + (*par[1])[std::size_t(k)];
      }
  st.saved.push_back(std::move(stat));
  return y;
}
inline void batch_norm_bwd(op_context& c, inputs in, inputs par, op_state& st, const buffer& dy,
                           std::vector<buffer>& din, std::vector<buffer>& dpar) {
  const index_t nb = c.len(0), ch = c.len(1), hw = c.len(2) * c.len(3);
  const double count = double(c.extent(0) * c.extent(2) * c.extent(3));
  const buffer& x = *in[0];
  const buffer& stat = st.saved[0];
  std::vector<float> xhat(x.size());
  for (index_t n = 0; n < nb; ++n)
    for (index_t k = 0; k < ch; ++k)
      for (index_t i = 0; i < hw; ++i) {
        const std::size_t e = std::size_t((n * ch + k) * hw + i);
        xhat[e] = (x[e] - stat[std::size_t(2 * k)]) * stat[std::size_t(2 * k + 1)];
      }
  std::vector<float> sum_dy, sum_dyx;
  bn_channel_sums(c, dy.data(), xhat.data(), sum_dy, sum_dyx);
  for (index_t k = 0; k < ch; ++k) {
    dpar[0][std::size_t(k)] += sum_dyx[std::size_t(k)];
    dpar[1][std::size_t(k)] += sum_dy[std::size_t(k)];
  }
  if (!din[0].size()) return;
  std::vector<float> both(static_cast<std::size_t>(2 * ch));
  for (index_t k = 0; k < ch; ++k) {
    both[std::size_t(k)] = sum_dy[std::size_t(k)];
    both[std::size_t(ch + k)] = sum_dyx[std::size_t(k)];
  }
  c.comm.all_reduce(c.over(0b1101u), both);
  for (index_t n = 0; n < nb; ++n)
    for (index_t k = 0; k < ch; ++k) {
      const float gk = (*par[0])[std::size_t(k)] * stat[std::size_t(2 * k + 1)];
      const float m1 = float(both[std::size_t(k)] / count), m2 = float(both[std::size_t(ch + k)] / count);
      for (index_t i = 0; i < hw; ++i) {
        const std::size_t e = std::size_t((n * ch + k) * hw + i);
        din[0][e] = gk * (dy[e] - m1 - xhat[e] * m2);
      }
    }
}

}  // namespace tensoropt::runtime::kernels
