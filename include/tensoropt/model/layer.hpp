// The layer protocol: what a layer type provides, how shapes flow through layers at
// compile time, and how a shape mismatch becomes exactly one readable error.
//
// A layer is an empty type deriving from `layer_base` with
//   static constexpr std::string_view kind_name;        // "linear", "residual", ...
//   template <class In> static constexpr bool accepts;  // quiet: never a hard error
//   template <class In> struct out_ { using type; };    // output shape, if accepted
//   template <class In> static constexpr void diagnose();  // static_asserts saying why not
//   template <class In> static constexpr int lower(detail::graph_builder&, int x);
//   static constexpr bool params_ok;   // its own sizes are valid (else a class
//                                      // static_assert already said why)
// Primitive layers get `infer` from `primitive_layer`; composites write their own
// `template <class In, bool Loud> struct infer { using type; }`.
//
// Diagnostics follow Boost.Hana's rule: one static_assert at the interface, then
// dispatch to something that does not cascade. `infer<In, /*Loud=*/true>` calls the
// layer's `diagnose<In>()` only when the layer rejects an input that is itself valid;
// the result is then `invalid_shape`, which every later layer passes on silently and
// lowering skips. So a model with a bad layer gives one error naming that layer (its
// template arguments and the input shape appear in the instantiation line) and the
// dims involved (GCC prints the failed comparison, e.g. '(64 == 128)').
#pragma once
#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include "../core/dims.hpp"

namespace tensoropt {

/// Integer token ids of shape S (the input of an embedding).
template <Shape S>
struct ids {
  using shape_type = S;
};

/// The output of a layer that rejected its input (already diagnosed).
struct invalid_shape {};

template <class T>
inline constexpr bool is_ids_v = false;
template <class S>
inline constexpr bool is_ids_v<ids<S>> = true;

/// What flows between layers: a real-valued shape or integer ids.
template <class T>
concept Tensor = Shape<T> || is_ids_v<T>;

template <class T>
inline constexpr bool is_valid_v = !std::is_same_v<T, invalid_shape>;

/// Base of every layer type.
struct layer_base {};

template <class L>
concept Layer = std::is_base_of_v<layer_base, L> && std::is_empty_v<L> && requires {
  { L::kind_name } -> std::convertible_to<std::string_view>;
};

/// The output shape of layer L on input In, diagnosing a rejection (one error).
template <Layer L, class In>
using output_t = typename L::template infer<In, true>::type;

/// True when L accepts In (no diagnostics, never a hard error).
template <class L, class In>
concept Accepts = Layer<L> && is_valid_v<In> &&
                  is_valid_v<typename L::template infer<In, false>::type>;

namespace detail {

/// Lazy `type` holder, so `std::conditional_t<ok, lazy, invalid_lazy>::type`
/// computes the output only when the layer accepted its input.
struct invalid_lazy {
  using type = invalid_shape;
};

}  // namespace detail

/// CRTP helper for primitive layers: derives `infer` from accepts/out_/diagnose.
template <class Derived>
struct primitive_layer : layer_base {
  static constexpr bool is_composite = false;
  /// False when the layer's own sizes are invalid (its class static_assert said so).
  static constexpr bool params_ok = true;
  template <class In, bool Loud>
  struct infer {
    static constexpr bool ok = [] {
      if constexpr (is_valid_v<In> && Derived::params_ok) return Derived::template accepts<In>;
      else return false;
    }();
    static consteval bool run_diagnose() {
      if constexpr (Loud && !ok && is_valid_v<In> && Derived::params_ok) Derived::template diagnose<In>();
      return true;
    }
    static_assert(run_diagnose());
    using type = typename std::conditional_t<ok, typename Derived::template out_<In>,
                                             detail::invalid_lazy>::type;
  };
};

// ---------------------------------------------------------------------------
// Shape helpers (pack manipulation; no recursion over the rank).

namespace detail {

template <class S>
struct axes_tuple;
template <class... A>
struct axes_tuple<shape<A...>> {
  using type = std::tuple<A...>;
};

template <class S, class Seq>
struct pick_impl;
template <class S, std::size_t... I>
struct pick_impl<S, std::index_sequence<I...>> {
  using type = shape<std::tuple_element_t<I, typename axes_tuple<S>::type>...>;
};
template <class S, std::size_t Offset, std::size_t... I>
auto shift(std::index_sequence<I...>) -> std::index_sequence<(I + Offset)...>;

template <class S1, class S2>
struct cat_impl;
template <class... A, class... B>
struct cat_impl<shape<A...>, shape<B...>> {
  using type = shape<A..., B...>;
};

}  // namespace detail

/// The first N axes of S.
template <class S, std::size_t N>
using take_t = typename detail::pick_impl<S, std::make_index_sequence<N>>::type;
/// S without its first N axes.
template <class S, std::size_t N>
using drop_t = typename detail::pick_impl<
    S, decltype(detail::shift<S, N>(std::make_index_sequence<S::rank - N>{}))>::type;
/// Concatenation of two shapes.
template <class S1, class S2>
using cat_t = typename detail::cat_impl<S1, S2>::type;
/// Axis I of S.
template <class S, std::size_t I>
using axis_t = std::tuple_element_t<I, typename detail::axes_tuple<S>::type>;

/// Product of the last N extents of S (0 if S has fewer than N axes).
template <class S>
constexpr index_t trailing_product(std::size_t n) {
  if (n > S::rank) return 0;
  index_t p = 1;
  for (std::size_t i = S::rank - n; i < S::rank; ++i) p *= S::extents[i];
  return p;
}

/// How many trailing axes of S multiply to exactly `features` (0 if none do).
template <class S>
constexpr std::size_t trailing_axes_for(index_t features) {
  index_t p = 1;
  for (std::size_t n = 1; n <= S::rank; ++n) {
    p *= S::extents[S::rank - n];
    if (p == features) return n;
    if (p > features) return 0;
  }
  return 0;
}

}  // namespace tensoropt
