// The model type (name, input, body) and `tensoropt::lower<Model>()`, which turns
// it into the operator graph of graph.hpp as a constexpr-capable value.
//
// A model's input is a real tensor `shape<axis<"b", B>, ...>` or integer ids
// `ids<shape<axis<"b", B>, axis<"s", S>>>`; axis 0 is the global batch B. Lowering
// emits one `input` op ("tokens" for ids, "input" otherwise), then the body's ops
// in order. Building the model type checks every shape at compile time: a mismatch
// is one static_assert naming the layer (see layer.hpp).
#pragma once
#include <string_view>
#include "attention.hpp"
#include "compose.hpp"
#include "conv.hpp"
#include "graph.hpp"
#include "layer.hpp"
#include "layers.hpp"
#include "lowering.hpp"
#include "moe.hpp"

namespace tensoropt {

namespace detail {
template <class T>
struct shape_of_input {
  using type = T;
};
template <class S>
struct shape_of_input<ids<S>> {
  using type = S;
};
}  // namespace detail

/// A model: a name, an input (shape or ids; axis 0 named "b" is the global batch)
/// and a body layer.
template <fixed_string Name, Tensor Input, Layer Body>
struct model {
  using input = Input;
  using body = Body;
  using input_shape = typename detail::shape_of_input<Input>::type;
  static_assert(input_shape::rank >= 1 && input_shape::names[0] == "b",
                "tensoropt::model<Name, Input, Body>: the input's first axis must be the batch axis \"b\"");
  static constexpr std::string_view name = Name.view();
  /// The global batch (extent of the input's axis "b").
  static constexpr index_t batch = input_shape::extents[0];
  /// The body's output shape (shape<> for a loss); invalid_shape after a diagnosed error.
  using output = output_t<Body, Input>;
  static constexpr bool valid = is_valid_v<output>;
};

template <class T>
inline constexpr bool is_model_v = false;
template <fixed_string N, class I, class B>
inline constexpr bool is_model_v<model<N, I, B>> = true;

/// A model type: model<...> or a type deriving from one (the zoo's).
template <class M>
concept Model = requires {
  { M::name } -> std::convertible_to<std::string_view>;
  { M::batch } -> std::convertible_to<index_t>;
  typename M::input;
  typename M::body;
  requires Layer<typename M::body>;
};

namespace detail {
TENSOROPT_NOINLINE constexpr int lower_input(graph_builder& b, const shape_desc& s, bool integer) {
  op_node op;
  op.kind = op_kind::input;
  op.attr[0] = integer ? 1 : 0;
  append_axes(op.dims, s);
  return b.emit(std::move(op), b.op_name(integer ? "tokens" : "input"), extents_of(s), tmap_iota(-1, s.rank),
                integer);
}
}  // namespace detail

/// The operator graph of M for its global batch M::batch. Usable in constant
/// expressions (small models) and at run time (megatron-1t lowers in milliseconds).
template <Model M>
constexpr op_graph lower() {
  if constexpr (!M::valid) {
    return op_graph{};  // the shape error was already reported at compile time
  } else {
    detail::graph_builder b;
    detail::append(b.g.name, M::name);
    b.g.batch = M::batch;
    const int x = detail::lower_input(b, detail::desc_v<typename M::input_shape>, is_ids_v<typename M::input>);
    detail::lower_layer<typename M::body, typename M::input>(b, x);
    return std::move(b.g);
  }
}

}  // namespace tensoropt
