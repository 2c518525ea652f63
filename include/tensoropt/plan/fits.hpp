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
//   "a strategy degree does not divide"       (a dim's extent)
//   "need more devices than the mesh has"     (explicit degrees)
//   "a strategy rule is malformed"            (explicit rules)
// Model: a type with `static constexpr op_graph graph()`, or one that
// tensoropt::lower<Model>() lowers (see model/). MeshOrCluster: tensoropt::mesh<G, N>
// or a type whose static value() returns a device_mesh or a cluster.
#pragma once
#include <concepts>
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
  static_assert(result.error != strategy_error::not_divisible,
                "tensoropt::fits: a strategy degree does not divide the extent of the op dim it splits (or the "
                "dim cannot be split); pick degrees that divide the model's dims");
  static_assert(result.error != strategy_error::too_many,
                "tensoropt::fits: the strategy's degrees for some op need more devices than the mesh has");
  static_assert(result.error != strategy_error::bad_rule,
                "tensoropt::fits: a strategy rule is malformed or splits no dim of any op "
                "(write \"prefix:dim=degree,...\")");
  static constexpr bytes memory = bytes(result.memory);
  // A rejected strategy already failed one static_assert above; `value` is then
  // true so that the user's own static_assert does not add a second error.
  static constexpr bool value =
      result.bad_micro_batches || result.error != strategy_error::none || result.memory <= Budget.value;
};

/// True when `Strategy` applies to `Model` on the mesh and its per-device memory is
/// at most `Budget`; a strategy that does not apply is a compile error.
template <class Model, class Strategy, class MeshOrCluster, bytes Budget>
inline constexpr bool fits = fits_check<Model, Strategy, MeshOrCluster, Budget>::value;

}  // namespace tensoropt
