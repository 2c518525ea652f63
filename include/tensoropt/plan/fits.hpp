// Compile-time strategy checks: static_assert(fits<Model, Strategy, Mesh, Budget>).
//
// The memory model (plan/strategy.hpp evaluate()) runs inside one constant
// expression on the model's operator graph, for the strategy type's static
// `micro_batches` (default 1: the whole global batch at once) and `precision`
// (default bf16-mixed); strategies::micro_batched<S, K> and with_precision<S, P>
// set them. A strategy that does not apply is one
// static_assert naming the reason (expected-compile-failure tests match each):
//   "the strategy does not match the mesh"    (pinned device count, or a
//                                              tensor-parallel degree that does not
//                                              divide the devices per node)
//   "a strategy degree does not divide"       (a dim's extent; the diagnostic's
//                                              "In instantiation of" line names
//                                              the op, the degree and the dim)
//   "need more devices than the mesh has"     (explicit degrees)
//   "a strategy rule is malformed"            (explicit rules)
// Model: a type with `static constexpr op_graph graph()`, or one that
// tensoropt::lower<Model>() lowers (see model/). MeshOrCluster: tensoropt::mesh<G, N>
// or a type whose static value() returns a device_mesh or a cluster. The three kinds
// are concepts (ModelOrGraph, StrategyType, MeshOrClusterType) constraining `fits`, so
// an argument of the wrong kind is one error naming the kind expected.
#pragma once
#include <concepts>
#include <cstddef>
#include <string>
#include "../core/mesh.hpp"
#include "../core/units.hpp"
#include "../cost/cluster.hpp"
#include "../model/model.hpp"
#include "strategy.hpp"

namespace tensoropt {

namespace detail {
template <class M>
concept graph_provider = requires {
  { M::graph() } -> std::convertible_to<op_graph>;
};
template <class M>
concept model_or_graph = graph_provider<M> || Model<M>;
template <class M>
constexpr op_graph graph_of() {
  if constexpr (graph_provider<M>)
    return M::graph();
  else
    return lower<M>();
}
template <class M>
concept mesh_provider = requires {
  { mesh_of(M::value()) } -> std::same_as<device_mesh>;
};
template <class S>
concept strategy_type = requires {
  { S::value() } -> std::convertible_to<strategy>;
};

template <class S>
constexpr precision precision_of() {
  if constexpr (requires { S::precision; })
    return S::precision;
  else
    return precisions::bf16_mixed;
}

template <class S>
constexpr index_t micro_batches_of() {
  if constexpr (requires { S::micro_batches; })
    return S::micro_batches;
  else
    return 1;
}

template <class C>
constexpr cluster cluster_of() {
  if constexpr (std::same_as<std::remove_cvref_t<decltype(C::value())>, cluster>)
    return C::value();
  else
    return cluster(C::value(), gpus::cpu);
}

struct fits_result {
  strategy_error error = strategy_error::none;
  bool bad_micro_batches = false;
  double memory = 0;  ///< bytes per device
};

// Why the strategy does not apply, as resolve() says it (names the op and the dim).
template <class Model, class Strategy, class MeshOrCluster>
constexpr std::string fits_reason() {
  const op_graph full = graph_of<Model>();
  constexpr index_t k = micro_batches_of<Strategy>();
  if (k < 1 || full.batch % k != 0) return "micro-batch count";
  const op_graph g = with_batch(full, full.batch / k);
  return resolve(Strategy::value(), g, cluster_of<MeshOrCluster>().mesh).message;
}

/// Characters as a structural type, so that a message computed at compile time can be
/// a template argument, which the compiler prints in the diagnostic.
template <std::size_t N>
struct fixed_chars {
  char text[N]{};
};

template <class Model, class Strategy, class MeshOrCluster>
inline constexpr std::size_t fits_reason_size = fits_reason<Model, Strategy, MeshOrCluster>().size() + 1;

template <class Model, class Strategy, class MeshOrCluster>
inline constexpr auto fits_reason_chars = [] {
  fixed_chars<fits_reason_size<Model, Strategy, MeshOrCluster>> f{};
  const std::string s = fits_reason<Model, Strategy, MeshOrCluster>();
  for (std::size_t i = 0; i < s.size(); ++i) f.text[i] = s[i];
  return f;
}();

template <class T>
inline constexpr bool dependent_false = false;

/// Instantiated only for a strategy a degree of which does not divide a dim: the one
/// error, whose "In instantiation of" line shows `Why` (the op, the degree, the dim).
template <fixed_chars Why>
struct degree_does_not_divide {
  static_assert(dependent_false<decltype(Why)>,
                "tensoropt::fits: a strategy degree does not divide the extent of the op dim it splits (or the "
                "dim cannot be split); the op and the dim are named in this struct's argument above; pick "
                "degrees that divide the model's dims");
  static constexpr bool value = true;
};

template <class Model, class Strategy, class MeshOrCluster>
constexpr fits_result fits_eval() {
  const op_graph full = graph_of<Model>();
  constexpr index_t k = micro_batches_of<Strategy>();
  if (k < 1 || full.batch % k != 0) return {strategy_error::none, true, 0};
  const op_graph g = with_batch(full, full.batch / k);
  const cluster cl = cluster_of<MeshOrCluster>();
  const auto r = resolve(Strategy::value(), g, cl.mesh);
  if (r.error != strategy_error::none) return {r.error, false, 0};
  build_options o;
  o.prec = precision_of<Strategy>();
  o.micro_batches = k;
  return {strategy_error::none, false, double(evaluate(g, r.configs, cl, o).memory)};
}
}  // namespace detail

/// Evaluates the check (see the file comment); `memory` is the per-device memory.
template <class Model, class Strategy, class MeshOrCluster, bytes Budget>
struct fits_check {
  static_assert(detail::model_or_graph<Model>,
                "tensoropt::fits: Model must be a model type (tensoropt::model<...>, the zoo's) or provide "
                "`static constexpr op_graph graph()`");
  static_assert(detail::strategy_type<Strategy>,
                "tensoropt::fits: Strategy must be a tensoropt::strategies type (static value() -> strategy)");
  static_assert(detail::mesh_provider<MeshOrCluster>,
                "tensoropt::fits: the third argument must be tensoropt::mesh<G, N> or a type whose value() "
                "returns a device_mesh or a cluster");
  static_assert(Budget.value > 0, "tensoropt::fits: the memory budget must be positive");
  static constexpr detail::fits_result result = detail::fits_eval<Model, Strategy, MeshOrCluster>();
  static_assert(!result.bad_micro_batches,
                "tensoropt::fits: the strategy's micro-batch count must divide the model's global batch");
  static_assert(result.error != strategy_error::mesh_mismatch,
                "tensoropt::fits: the strategy does not match the mesh (a pinned device count must equal the "
                "mesh's, and a tensor-parallel degree must divide the devices per node)");
  static constexpr bool divides = [] {
    if constexpr (result.error == strategy_error::not_divisible)
      return !detail::degree_does_not_divide<
          detail::fits_reason_chars<Model, Strategy, MeshOrCluster>>::value;
    else
      return true;
  }();
  static_assert(result.error != strategy_error::too_many,
                "tensoropt::fits: the strategy's degrees for some op need more devices than the mesh has");
  static_assert(result.error != strategy_error::bad_rule,
                "tensoropt::fits: a strategy rule is malformed or splits no dim of any op "
                "(write \"prefix:dim=degree,...\")");
  static constexpr bytes memory = bytes(result.memory);
  // A rejected strategy already failed one static_assert above; `value` is then
  // true so that the user's own static_assert does not add a second error.
  static constexpr bool value =
      !divides || result.bad_micro_batches || result.error != strategy_error::none || result.memory <= Budget.value;
};

/// The first argument of `fits`: a model type (tensoropt::model<...>, a zoo model) or a
/// type with `static constexpr op_graph graph()`.
template <class M>
concept ModelOrGraph = detail::model_or_graph<M>;
/// The second argument of `fits`: a tensoropt::strategies type (static value() -> strategy).
template <class S>
concept StrategyType = detail::strategy_type<S>;
/// The third argument of `fits`: tensoropt::mesh<G, N>, or a type whose static value()
/// returns a device_mesh or a cluster.
template <class M>
concept MeshOrClusterType = detail::mesh_provider<M>;

/// True when `Strategy` applies to `Model` on the mesh and its per-device memory is
/// at most `Budget`; a strategy that does not apply is a compile error. Arguments of
/// the wrong kind (e.g. the strategy and the mesh swapped) fail the concept that names
/// the kind expected, with one error.
template <ModelOrGraph Model, StrategyType Strategy, MeshOrClusterType Mesh, bytes Budget>
inline constexpr bool fits = fits_check<Model, Strategy, Mesh, Budget>::value;

}  // namespace tensoropt
