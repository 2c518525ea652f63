// Image layer templates on [b, c, y, x] tensors: conv2d, max/avg pooling, global
// average pooling, batch normalization.
//
// Output spatial size: (in + 2 * pad - kernel) / stride + 1 (floor), at least 1.
// FLOPs per point: conv2d 2 / 4 (points = b cout cin oh ow kh kw); pooling 1 / 1
// (points include the window); global pooling 1 / 1; batch_norm 5 / 10.
// Saved for backward: conv2d its input; max_pool the argmax of each output (an
// int64 index); batch_norm its input and two statistics per channel; avg and
// global pooling nothing.
#pragma once
#include "graph.hpp"
#include "layer.hpp"
#include "layers.hpp"
#include "lowering.hpp"

namespace tensoropt {

namespace detail {
constexpr index_t conv_out(index_t in, index_t k, index_t stride, index_t pad) {
  return in + 2 * pad < k ? 0 : (in + 2 * pad - k) / stride + 1;
}
template <class S>
constexpr bool is_image_v = [] {
  if constexpr (Shape<S>) return S::rank == 4;
  else return false;
}();

TENSOROPT_NOINLINE constexpr int lower_conv(graph_builder& b, int x, const shape_desc& s, index_t cin, index_t cout, index_t kh,
                         index_t kw, index_t stride, index_t ph, index_t pw, bool bias) {
  const index_t oh = conv_out(s.extents[2], kh, stride, ph), ow = conv_out(s.extents[3], kw, stride, pw);
  op_node op;
  op.kind = op_kind::conv2d;
  op.dims = {make_dim(s.names[0], s.extents[0]), make_dim("cout", cout), make_dim("cin", cin),
             make_dim("oh", oh, false), make_dim("ow", ow, false), make_dim("kh", kh, false),
             make_dim("kw", kw, false)};
  op.attr = {stride, ph, pw, bias ? 1 : 0};
  op.inputs.push_back(tmap(x, {0, 2, -1, -1}));
  const std::string name = b.op_name("conv");
  op.params.push_back(b.param(name, "weight", {cout, cin, kh, kw}, tmap(-1, {1, 2, 5, 6})));
  if (bias) op.params.push_back(b.param(name, "bias", {cout}, tmap(-1, {1})));
  op.fwd_flops_per_point = 2;
  op.bwd_flops_per_point = 4;
  save(op, dim_mask({0, 2}), 0, 0, double(s.extents[2] * s.extents[3]));
  return b.emit(std::move(op), name, {s.extents[0], cout, oh, ow}, tmap(-1, {0, 1, 3, 4}));
}

TENSOROPT_NOINLINE constexpr int lower_pool(graph_builder& b, int x, const shape_desc& s, op_kind kind, index_t k, index_t stride,
                         index_t pad) {
  const index_t oh = conv_out(s.extents[2], k, stride, pad), ow = conv_out(s.extents[3], k, stride, pad);
  op_node op;
  op.kind = kind;
  op.dims = {make_dim(s.names[0], s.extents[0]), make_dim(s.names[1], s.extents[1]), make_dim("oh", oh, false),
             make_dim("ow", ow, false), make_dim("kh", k, false), make_dim("kw", k, false)};
  op.attr = {stride, pad, k, 0};
  op.inputs.push_back(tmap(x, {0, 1, -1, -1}));
  op.fwd_flops_per_point = 1;
  op.bwd_flops_per_point = 1;
  if (kind == op_kind::max_pool) save(op, dim_mask({0, 1}), 8, -1, double(oh * ow));  // argmax per output (int64)
  return b.emit(std::move(op), b.op_name(kind == op_kind::max_pool ? "max_pool" : "avg_pool"),
                {s.extents[0], s.extents[1], oh, ow}, tmap(-1, {0, 1, 2, 3}));
}

TENSOROPT_NOINLINE constexpr int lower_global_pool(graph_builder& b, int x, const shape_desc& s) {
  op_node op;
  op.kind = op_kind::global_avg_pool;
  append_axes(op.dims, s);
  op.inputs.push_back(tmap_iota(x, 4));
  op.fwd_flops_per_point = 1;
  op.bwd_flops_per_point = 1;
  return b.emit(std::move(op), b.op_name("pool"), extents_of(s, 0, 2), tmap_iota(-1, 2));
}

TENSOROPT_NOINLINE constexpr int lower_batch_norm(graph_builder& b, int x, const shape_desc& s) {
  const index_t c = s.extents[1];
  op_node op;
  op.kind = op_kind::batch_norm;
  const std::string name = b.op_name("bn");
  op.params.push_back(b.param(name, "gamma", {c}, tmap(-1, {1})));
  op.params.push_back(b.param(name, "beta", {c}, tmap(-1, {1})));
  op.fwd_flops_per_point = 5;
  op.bwd_flops_per_point = 10;
  save(op, low_mask(4), 0, 0);
  save(op, dim_mask({1}), 4, -1, 2.0);  // mean and inverse deviation per channel (fp32)
  return lower_elementwise(b, x, s, std::move(op), name);
}
}  // namespace detail

/// 2-D convolution, kernel KH x KW, one stride, padding PadH (rows) and PadW
/// (columns). x[b, Cin, y, x] -> [b, Cout, oh, ow]; weight [Cout, Cin, KH, KW].
template <index_t Cin, index_t Cout, index_t KH, index_t KW, index_t Stride = 1, index_t PadH = 0,
          index_t PadW = PadH, bool Bias = false>
struct conv2d_rect : primitive_layer<conv2d_rect<Cin, Cout, KH, KW, Stride, PadH, PadW, Bias>> {
  static_assert(Cin > 0 && Cout > 0 && KH > 0 && KW > 0 && Stride > 0,
                "tensoropt::conv2d<Cin, Cout, K, Stride>: channels, kernel and stride must be positive");
  static_assert(PadH >= 0 && PadW >= 0, "tensoropt::conv2d: padding must not be negative");
  static constexpr bool params_ok = Cin > 0 && Cout > 0 && KH > 0 && KW > 0 && Stride > 0 && PadH >= 0 && PadW >= 0;
  static constexpr std::string_view kind_name = "conv2d";
  template <class S>
  static constexpr bool accepts = [] {
    if constexpr (detail::is_image_v<S>)
      return S::extents[1] == Cin && detail::conv_out(S::extents[2], KH, Stride, PadH) > 0 &&
             detail::conv_out(S::extents[3], KW, Stride, PadW) > 0;
    else return false;
  }();
  template <class S>
  static consteval void diagnose() {
    if constexpr (!detail::is_image_v<S>)
      static_assert(detail::is_image_v<S>, "tensoropt::conv2d: the input must be an image [b, c, y, x]");
    else if constexpr (S::extents[1] != Cin)
      static_assert(S::extents[1] == Cin,
                    "tensoropt::conv2d<Cin, Cout, ...>: channel mismatch: the input's channel axis "
                    "(axis 1) must equal Cin");
    else
      static_assert(S::extents[2] + 2 * PadH >= KH && S::extents[3] + 2 * PadW >= KW,
                    "tensoropt::conv2d: the kernel is larger than the padded input");
  }
  template <class S>
  struct out_ {
    using type = shape<axis_t<S, 0>, axis<"c", Cout>, axis<"y", detail::conv_out(S::extents[2], KH, Stride, PadH)>,
                       axis<"x", detail::conv_out(S::extents[3], KW, Stride, PadW)>>;
  };
  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_conv(b, x, detail::desc_v<S>, Cin, Cout, KH, KW, Stride, PadH, PadW, Bias);
  }
};

/// Square-kernel convolution: conv2d<Cin, Cout, K, Stride, Pad, Bias>.
template <index_t Cin, index_t Cout, index_t K, index_t Stride = 1, index_t Pad = 0, bool Bias = false>
using conv2d = conv2d_rect<Cin, Cout, K, K, Stride, Pad, Pad, Bias>;

namespace detail {
template <op_kind Kind, index_t K, index_t Stride, index_t Pad>
struct pool_layer : primitive_layer<pool_layer<Kind, K, Stride, Pad>> {
  static_assert(K > 0 && Stride > 0 && Pad >= 0, "tensoropt::max_pool/avg_pool<K, Stride, Pad>: K and Stride must be positive, Pad not negative");
  static constexpr bool params_ok = K > 0 && Stride > 0 && Pad >= 0;
  static constexpr std::string_view kind_name = name_of(Kind);
  template <class S>
  static constexpr bool accepts = [] {
    if constexpr (is_image_v<S>)
      return conv_out(S::extents[2], K, Stride, Pad) > 0 && conv_out(S::extents[3], K, Stride, Pad) > 0;
    else return false;
  }();
  template <class S>
  static consteval void diagnose() {
    if constexpr (!is_image_v<S>)
      static_assert(is_image_v<S>, "tensoropt::max_pool/avg_pool: the input must be an image [b, c, y, x]");
    else
      static_assert(S::extents[2] + 2 * Pad >= K && S::extents[3] + 2 * Pad >= K,
                    "tensoropt::max_pool/avg_pool: the window is larger than the padded input");
  }
  template <class S>
  struct out_ {
    using type = shape<axis_t<S, 0>, axis_t<S, 1>, axis<"y", conv_out(S::extents[2], K, Stride, Pad)>,
                       axis<"x", conv_out(S::extents[3], K, Stride, Pad)>>;
  };
  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(graph_builder& b, int x) {
    return lower_pool(b, x, desc_v<S>, Kind, K, Stride, Pad);
  }
};
}  // namespace detail

/// Max pooling with a K x K window. Saves its input.
template <index_t K, index_t Stride = K, index_t Pad = 0>
using max_pool = detail::pool_layer<op_kind::max_pool, K, Stride, Pad>;
/// Average pooling with a K x K window (padding counts as zeros).
template <index_t K, index_t Stride = K, index_t Pad = 0>
using avg_pool = detail::pool_layer<op_kind::avg_pool, K, Stride, Pad>;

/// Mean over the spatial axes: [b, c, y, x] -> [b, c].
struct global_avg_pool : primitive_layer<global_avg_pool> {
  static constexpr std::string_view kind_name = "global_avg_pool";
  template <class S>
  static constexpr bool accepts = detail::is_image_v<S>;
  template <class S>
  static consteval void diagnose() {
    static_assert(detail::is_image_v<S>, "tensoropt::global_avg_pool: the input must be an image [b, c, y, x]");
  }
  template <class S>
  struct out_ {
    using type = take_t<S, 2>;
  };
  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_global_pool(b, x, detail::desc_v<S>);
  }
};

/// Batch normalization over channels C of [b, C, y, x]; params gamma[C], beta[C].
template <index_t C>
struct batch_norm : primitive_layer<batch_norm<C>> {
  static_assert(C > 0, "tensoropt::batch_norm<C>: C must be positive");
  static constexpr bool params_ok = C > 0;
  static constexpr std::string_view kind_name = "batch_norm";
  template <class S>
  static constexpr bool accepts = [] {
    if constexpr (detail::is_image_v<S>) return S::extents[1] == C;
    else return false;
  }();
  template <class S>
  static consteval void diagnose() {
    if constexpr (!detail::is_image_v<S>)
      static_assert(detail::is_image_v<S>, "tensoropt::batch_norm<C>: the input must be an image [b, c, y, x]");
    else
      static_assert(S::extents[1] == C, "tensoropt::batch_norm<C>: channel mismatch: the input's axis 1 must equal C");
  }
  template <class S>
  struct out_ {
    using type = S;
  };
  template <class S>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_batch_norm(b, x, detail::desc_v<S>);
  }
};

}  // namespace tensoropt
