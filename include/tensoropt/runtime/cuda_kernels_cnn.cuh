// The CUDA backend's glue for the CNN ops: conv2d (im2col + cuBLASLt GEMM), max and
// average pooling, global average pooling and batch norm, forward and backward,
// read from the op_context as the CPU kernels read it (kernels_conv.hpp). Buffers
// are fp32 or bf16 (statistics fp32); the kernel table is in cuda_kernels.cuh.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>
#include <tensoropt/cuda/kernels_conv.cuh>
#include <tensoropt/cuda/kernels_norm.cuh>
#include <tensoropt/cuda/kernels_pool.cuh>
#include <vector>
#include "cuda_glue.cuh"

namespace tensoropt::runtime::cuda_glue {

// ---- conv2d: dims [b, cout, cin, oh, ow, kh, kw]; x [b, cin, ih, iw]; attr stride, pad rows, pad columns ----
inline cuda::kernels::conv_geometry conv_of(const op_context& c) {
  const auto& x = c.graph.tensors[std::size_t(c.op.inputs[0].tensor)];
  cuda::kernels::conv_geometry d;
  d.b = c.len(0);
  d.co = c.len(1);
  d.ci = c.len(2);
  d.oh = c.len(3);
  d.ow = c.len(4);
  d.kh = c.len(5);
  d.kw = c.len(6);
  d.ih = x.extents[2];
  d.iw = x.extents[3];
  d.stride = c.op.attr[0];
  d.pad = c.op.attr[1];
  d.pad_w = c.op.attr[2];
  return d;
}
inline bool conv_bias_here(const op_context& c) { return (c.op.attr[3] & 1) && c.block(2) == 0; }
inline buffer conv2d_fwd(op_context& c, in_t in, in_t par, op_state&) {
  const auto d = conv_of(c);
  buffer y = c.zeros(std::size_t(d.b * d.co * d.oh * d.ow));
  buffer ws = c.be.scratch(std::size_t(d.workspace()), y.type());
  dispatch(y.type(), [&]<class T>(T) {
    cuda::kernels::conv2d_forward(dev(c).gemm(), d, in[0]->as<T>(), par[0]->as<T>(),
                                  conv_bias_here(c) ? par[1]->as<T>() : nullptr, y.as<T>(), ws.as<T>());
  });
  return y;
}
inline void conv2d_bwd(op_context& c, in_t in, in_t par, op_state&, const buffer& dy, std::vector<buffer>& din,
                       std::vector<buffer>& dpar) {
  const auto d = conv_of(c);
  buffer ws = c.be.scratch(std::size_t(d.workspace()), dy.type());
  dispatch(dy.type(), [&]<class T>(T) {
    cuda::kernels::conv2d_backward(dev(c).gemm(), d, in[0]->as<T>(), par[0]->as<T>(), dy.as<T>(),
                                   din[0].size() ? din[0].as<T>() : nullptr, dpar[0].as<T>(),
                                   conv_bias_here(c) ? dpar[1].as<T>() : nullptr, ws.as<T>());
  });
}

// ---- max / avg pool: dims [b, c, oh, ow, kh, kw]; attr stride, pad, kernel; saved: argmax (int64) ----
inline cuda::kernels::pool_geometry pool_of(const op_context& c) {
  const auto& xt = c.graph.tensors[std::size_t(c.op.inputs[0].tensor)];
  cuda::kernels::pool_geometry g;
  g.planes = c.len(0) * c.len(1);
  g.oh = c.len(2);
  g.ow = c.len(3);
  g.ih = xt.extents[2];
  g.iw = xt.extents[3];
  g.stride = c.op.attr[0];
  g.pad = c.op.attr[1];
  g.k = c.op.attr[2];
  return g;
}
inline buffer pool_fwd(op_context& c, in_t in, in_t, op_state& st) {
  const auto g = pool_of(c);
  const bool is_max = c.op.kind == op_kind::max_pool;
  buffer y = c.zeros(std::size_t(g.planes * g.oh * g.ow));
  // an int64 per output, counted: the CPU charges its argmax indices too (executor_state.hpp)
  buffer arg = c.be.allocate(is_max ? 2 * y.size() : 0, dtype::fp32);
  dispatch(y.type(), [&]<class T>(T) {
    cuda::kernels::pool_forward(dev(c).stream(), g, is_max, in[0]->as<T>(), y.as<T>(),
                                is_max ? static_cast<std::int64_t*>(arg.raw()) : nullptr);
  });
  st.saved.push_back(std::move(arg));
  return y;
}
inline void pool_bwd(op_context& c, in_t, in_t, op_state& st, const buffer& dy, std::vector<buffer>& din,
                     std::vector<buffer>&) {
  const auto g = pool_of(c);
  const bool is_max = c.op.kind == op_kind::max_pool;
  dispatch(dy.type(), [&]<class T>(T) {
    cuda::kernels::pool_backward(dev(c).stream(), g, is_max, dy.as<T>(),
                                 is_max ? static_cast<const std::int64_t*>(st.saved[0].raw()) : nullptr,
                                 din[0].as<T>());
  });
}

// ---- global average pool: dims [b, c, h, w]; y [b, c] partial over split h, w ----
inline buffer gap_fwd(op_context& c, in_t in, in_t, op_state&) {
  const index_t planes = c.len(0) * c.len(1), hw = c.len(2) * c.len(3);
  const float inv = 1.f / float(c.extent(2) * c.extent(3));
  buffer y = c.zeros(std::size_t(planes));
  dispatch(y.type(), [&]<class T>(T) {
    cuda::kernels::global_avg_pool_forward(dev(c).stream(), in[0]->as<T>(), y.as<T>(), planes, hw, inv);
  });
  return y;
}
inline void gap_bwd(op_context& c, in_t, in_t, op_state&, const buffer& dy, std::vector<buffer>& din,
                    std::vector<buffer>&) {
  const index_t planes = c.len(0) * c.len(1), hw = c.len(2) * c.len(3);
  const float inv = 1.f / float(c.extent(2) * c.extent(3));
  dispatch(dy.type(), [&]<class T>(T) {
    cuda::kernels::global_avg_pool_backward(dev(c).stream(), dy.as<T>(), din[0].as<T>(), planes, hw, inv);
  });
}

// ---- batch norm: dims [b, c, h, w]; statistics over b, h, w of every device (group c.over(0b1101)) ----
inline buffer batch_norm_fwd(op_context& c, in_t in, in_t par, op_state& st) {
  const index_t nb = c.len(0), ch = c.len(1), hw = c.len(2) * c.len(3);
  const double count = double(c.extent(0) * c.extent(2) * c.extent(3));
  const group g = c.over(0b1101u);
  const auto s = dev(c).stream();
  buffer sum = c.be.scratch(std::size_t(ch), dtype::fp32), sq = c.be.scratch(std::size_t(ch), dtype::fp32);
  buffer stat = c.be.allocate(std::size_t(2 * ch), dtype::fp32), y = c.zeros(in[0]->size());
  dispatch(y.type(), [&]<class T>(T) {
    const T* x = in[0]->as<T>();
    cuda::kernels::batch_norm_sums(s, x, sum.as<float>(), nb, ch, hw);
    if (g.size() > 1) c.dp->all_reduce(g, sum);
    cuda::kernels::batch_norm_centered_squares(s, x, sum.as<float>(), count, sq.as<float>(), nb, ch, hw);
    if (g.size() > 1) c.dp->all_reduce(g, sq);
    cuda::kernels::batch_norm_apply(s, x, sum.as<float>(), sq.as<float>(), count, par[0]->as<T>(), par[1]->as<T>(),
                                    y.as<T>(), stat.as<float>(), nb, ch, hw);
  });
  st.saved.push_back(std::move(stat));
  return y;
}
inline void batch_norm_bwd(op_context& c, in_t in, in_t par, op_state& st, const buffer& dy, std::vector<buffer>& din,
                           std::vector<buffer>& dpar) {
  const index_t nb = c.len(0), ch = c.len(1), hw = c.len(2) * c.len(3);
  const double count = double(c.extent(0) * c.extent(2) * c.extent(3));
  const auto s = dev(c).stream();
  buffer both = c.be.scratch(std::size_t(2 * ch), dtype::fp32);
  dispatch(dy.type(), [&]<class T>(T) {
    cuda::kernels::batch_norm_backward_sums(s, in[0]->as<T>(), st.saved[0].as<float>(), dy.as<T>(),
                                            both.as<float>(), dpar[0].as<T>(), dpar[1].as<T>(), nb, ch, hw);
    if (!din[0].size()) return;
    const group g = c.over(0b1101u);
    if (g.size() > 1) c.dp->all_reduce(g, both);
    cuda::kernels::batch_norm_backward_dx(s, in[0]->as<T>(), st.saved[0].as<float>(), dy.as<T>(), par[0]->as<T>(),
                                          both.as<float>(), count, din[0].as<T>(), nb, ch, hw);
  });
}

}  // namespace tensoropt::runtime::cuda_glue
