// Composition of layers: named<>, seq<>, residual<>, branches<> (concat or add
// merge) and repeat<>, with compile-time shape checks and lowering.
//
// Naming: a primitive op is named after its kind ("linear", "relu", ...) unless
// named<"fc1", L> names it; a composite inside named<"attn", C> puts its ops in the
// scope "attn" ("attn.qkv"). seq<> and residual<> add no scope; repeat<> puts copy
// i in scope "i" (so named<"layers", repeat<B, N>> gives "layers.3.ln1"); unnamed
// branches of branches<> get scopes "0", "1", ... Names that would repeat in a
// scope get a "_1", "_2", ... suffix.
#pragma once
#include <string>
#include <type_traits>
#include "graph.hpp"
#include "layer.hpp"
#include "lowering.hpp"

namespace tensoropt {

namespace detail {
/// True when shapes A and B have the same rank and extents (axis names may differ).
template <class A, class B>
constexpr bool same_extents() {
  if constexpr (!Shape<A> || !Shape<B>) return std::is_same_v<A, B>;
  else if constexpr (A::rank != B::rank) return false;
  else return A::extents == B::extents;
}
}  // namespace detail

/// Gives layer L a name: the op's name for a primitive, a scope for a composite.
template <fixed_string Name, Layer L>
struct named : layer_base {
  static_assert(Name.size() > 0, "tensoropt::named<Name, L>: the name must not be empty");
  static constexpr std::string_view kind_name = L::kind_name;
  static constexpr std::string_view name = Name.view();
  static constexpr bool is_composite = L::is_composite;
  using layer = L;
  template <class In, bool Loud>
  struct infer {
    using type = typename L::template infer<In, Loud>::type;
  };
  template <class In>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    if constexpr (L::is_composite) {
      const auto saved = b.enter(Name.view());
      const int y = detail::lower_layer<L, In>(b, x);
      b.leave(saved);
      return y;
    } else {
      b.name_next(Name.view());
      return detail::lower_layer<L, In>(b, x);
    }
  }
};

template <class T>
inline constexpr bool is_named_v = false;
template <fixed_string N, class L>
inline constexpr bool is_named_v<named<N, L>> = true;

namespace detail {
template <class In, bool Loud, class... Ls>
struct seq_fold {
  using type = In;
};
template <class In, bool Loud, class L, class... Rest>
struct seq_fold<In, Loud, L, Rest...> {
  using type = typename seq_fold<typename L::template infer<In, Loud>::type, Loud, Rest...>::type;
};
template <class In, class L, class... Rest>
TENSOROPT_FLATTEN constexpr int lower_seq(graph_builder& b, int x) {
  const int y = lower_layer<L, In>(b, x);
  if constexpr (sizeof...(Rest) == 0) return y;
  else return lower_seq<typename L::template infer<In, false>::type, Rest...>(b, y);
}
}  // namespace detail

/// Layers applied one after the other.
template <Layer... Ls>
struct seq : layer_base {
  static_assert(sizeof...(Ls) > 0, "tensoropt::seq<...>: a sequence needs at least one layer");
  static constexpr std::string_view kind_name = "seq";
  static constexpr bool is_composite = true;
  template <class In, bool Loud>
  struct infer {
    using type = typename detail::seq_fold<In, Loud, Ls...>::type;
  };
  template <class In>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_seq<In, Ls...>(b, x);
  }
};

namespace detail {
template <class In, class BodyOut>
consteval void residual_mismatch() {
  static_assert(same_extents<In, BodyOut>(),
                "tensoropt::residual<Body>: residual shape mismatch: the body's output shape "
                "(BodyOut) must equal its input shape (In)");
}
/// The `add` op of a residual or an add-merge: dims = the axes of S.
TENSOROPT_NOINLINE constexpr int lower_add(graph_builder& b, const std::vector<int>& xs, const shape_desc& s,
                        std::string_view fallback) {
  op_node op;
  op.kind = op_kind::add;
  append_axes(op.dims, s);
  for (int x : xs) op.inputs.push_back(tmap_iota(x, s.rank));
  op.fwd_flops_per_point = double(xs.size() - 1);
  op.bwd_flops_per_point = 0;
  return b.emit(std::move(op), b.op_name(fallback), extents_of(s), tmap_iota(-1, s.rank));
}
/// The `concat` op of a concat-merge along axis k of the output shape s.
TENSOROPT_NOINLINE constexpr int lower_concat(graph_builder& b, const std::vector<int>& xs, const shape_desc& s, int k) {
  op_node op;
  op.kind = op_kind::concat;
  append_axes(op.dims, s);
  op.dims[k].splittable = false;
  op.attr[0] = k;
  for (int y : xs) {
    tensor_map m = tmap_iota(y, s.rank);
    m.dim[k] = -1;
    op.inputs.push_back(m);
  }
  return b.emit(std::move(op), b.op_name("concat"), extents_of(s), tmap_iota(-1, s.rank));
}
}  // namespace detail

/// x + Body(x). The body must keep the shape. The add op (inputs: x, Body(x)) is
/// called AddName.
template <Layer Body, fixed_string AddName = "add">
struct residual : layer_base {
  static constexpr std::string_view kind_name = "residual";
  static constexpr bool is_composite = true;
  template <class In, bool Loud>
  struct infer {
    using body_out = typename Body::template infer<In, Loud>::type;
    static constexpr bool ok = is_valid_v<In> && is_valid_v<body_out> && detail::same_extents<In, body_out>();
    static consteval bool run_diagnose() {
      if constexpr (Loud && !ok && is_valid_v<body_out>) detail::residual_mismatch<In, body_out>();
      return true;
    }
    static_assert(run_diagnose());
    using type = std::conditional_t<ok, In, invalid_shape>;
  };
  template <class In>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    const int y = detail::lower_layer<Body, In>(b, x);
    return detail::lower_add(b, {x, y}, detail::desc_v<In>, AddName.view());
  }
};

namespace merge {
/// Merge branches by concatenation along the axis called Axis.
template <fixed_string Axis = "c">
struct concat {
  static constexpr std::string_view axis = Axis.view();
  static constexpr bool is_concat = true;
};
/// Merge branches by elementwise sum.
struct add {
  static constexpr bool is_concat = false;
};
}  // namespace merge

namespace detail {
template <class Merge, class O1, class... Os>
constexpr bool merge_ok() {
  if constexpr (!(Shape<O1> && ... && Shape<Os>)) return false;
  else if constexpr (!Merge::is_concat) return (same_extents<O1, Os>() && ...);
  else {
    constexpr int k = O1::find(Merge::axis);
    if constexpr (k < 0 || !((Os::rank == O1::rank) && ...)) return false;
    else {
      auto agree = [](auto a, auto b) {
        for (std::size_t i = 0; i < a.size(); ++i)
          if (int(i) != k && a[i] != b[i]) return false;
        return true;
      };
      return (agree(O1::extents, Os::extents) && ...);
    }
  }
}
template <class Merge, class... Outs>
consteval void merge_mismatch() {
  if constexpr (Merge::is_concat)
    static_assert(merge_ok<Merge, Outs...>(),
                  "tensoropt::branches<merge::concat<Axis>, ...>: concat mismatch: the branches' "
                  "outputs (Outs) must have the concat axis and agree on every other axis");
  else
    static_assert(merge_ok<Merge, Outs...>(),
                  "tensoropt::branches<merge::add, ...>: add mismatch: the branches' outputs (Outs) "
                  "must have one shape");
}
template <class Merge, class O1, class... Os>
struct merged {
  using type = O1;
};
template <fixed_string Axis, class O1, class... Os>
struct merged<merge::concat<Axis>, O1, Os...> {
  static constexpr std::size_t k = std::size_t(O1::find(Axis.view()));
  using type = cat_t<take_t<O1, k>, cat_t<shape<axis<Axis, (O1::extents[k] + ... + Os::extents[k])>>,
                                          drop_t<O1, k + 1>>>;
};
template <class B>
TENSOROPT_FLATTEN constexpr int lower_branch(graph_builder& b, int x, int i, auto in_tag) {
  using In = typename decltype(in_tag)::type;
  if constexpr (is_named_v<B>) return lower_layer<B, In>(b, x);
  const auto saved = b.enter(index_t(i));
  const int y = lower_layer<B, In>(b, x);
  b.leave(saved);
  return y;
}
}  // namespace detail

/// Runs every branch on the input and merges the outputs (merge::concat<"c"> as in
/// Inception, or merge::add as in a ResNet block with a projection shortcut).
template <class Merge, Layer... Bs>
struct branches : layer_base {
  static_assert(sizeof...(Bs) >= 2, "tensoropt::branches<Merge, ...>: needs at least two branches");
  static constexpr std::string_view kind_name = "branches";
  static constexpr bool is_composite = true;
  template <class In, bool Loud>
  struct infer {
    static constexpr bool outs_valid = (is_valid_v<typename Bs::template infer<In, Loud>::type> && ...);
    static constexpr bool ok = [] {
      if constexpr (!outs_valid || !is_valid_v<In>) return false;
      else return detail::merge_ok<Merge, typename Bs::template infer<In, false>::type...>();
    }();
    static consteval bool run_diagnose() {
      if constexpr (Loud && !ok && outs_valid && is_valid_v<In>)
        detail::merge_mismatch<Merge, typename Bs::template infer<In, false>::type...>();
      return true;
    }
    static_assert(run_diagnose());
    using type = typename std::conditional_t<
        ok, detail::merged<Merge, typename Bs::template infer<In, false>::type...>,
        detail::invalid_lazy>::type;
  };
  template <class In>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    std::vector<int> ys;
    int i = 0;
    ((ys.push_back(detail::lower_branch<Bs>(b, x, i++, std::type_identity<In>{}))), ...);
    using O = typename infer<In, false>::type;
    if constexpr (!Merge::is_concat) return detail::lower_add(b, ys, detail::desc_v<O>, "add");
    else return detail::lower_concat(b, ys, detail::desc_v<O>, O::find(Merge::axis));
  }
};

namespace detail {
template <class In, class BlockOut>
consteval void repeat_mismatch() {
  static_assert(same_extents<In, BlockOut>(),
                "tensoropt::repeat<Block, N>: the block's output shape (BlockOut) must equal its "
                "input shape (In) to be repeated");
}
}  // namespace detail

/// N copies of Block in sequence (N >= 1); Block must keep the shape. Copies are
/// marked with one repeat_id and repeat_index = 0..N-1 (the innermost repeat wins
/// for nested repeats), so the search can cost the block once.
template <Layer Block, index_t N>
struct repeat : layer_base {
  static_assert(N >= 1, "tensoropt::repeat<Block, N>: the repeat count N must be at least 1");
  static constexpr std::string_view kind_name = "repeat";
  static constexpr bool is_composite = true;
  static constexpr index_t count = N;
  template <class In, bool Loud>
  struct infer {
    using block_out = typename Block::template infer<In, Loud>::type;
    static constexpr bool ok = N >= 1 && is_valid_v<In> && is_valid_v<block_out> &&
                               detail::same_extents<In, block_out>();
    static consteval bool run_diagnose() {
      if constexpr (Loud && N >= 1 && !ok && is_valid_v<block_out>) detail::repeat_mismatch<In, block_out>();
      return true;
    }
    static_assert(run_diagnose());
    using type = std::conditional_t<ok, In, invalid_shape>;
  };
  template <class In>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    const int saved_id = b.repeat_id, saved_index = b.repeat_index;
    const int id = b.repeat_count++;
    for (index_t i = 0; i < N; ++i) {
      const auto saved = b.enter(i);
      b.repeat_id = id;
      b.repeat_index = int(i);
      x = detail::lower_layer<Block, In>(b, x);
      b.leave(saved);
    }
    b.repeat_id = saved_id;
    b.repeat_index = saved_index;
    return x;
  }
};

}  // namespace tensoropt
