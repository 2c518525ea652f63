// Small models, plans and batches shared by the runtime tests.
#pragma once
#include <doctest/doctest.h>
#include <tensoropt/model/model.hpp>
#include <tensoropt/runtime.hpp>
#include "runtime_model_types.hpp"
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace rt_test {
namespace to = tensoropt;
namespace rt = tensoropt::runtime;
using to::axis;
using to::shape;
using to::index_t;

/// Losses of `steps` steps and the parameters after them.
struct run_result {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;
};
inline run_result run(const to::op_graph& g, const rt::training_plan& plan, int steps, rt::optimizer_options opt = {}) {
  rt::local_world world(int(plan.mesh.devices()), std::chrono::seconds(20));
  rt::trainer tr(g, plan, world, opt);
  run_result r;
  for (int s = 0; s < steps; ++s) r.losses.push_back(tr.step(make_batch(g, 100)));
  for (auto& t : g.tensors)
    if (t.parameter) r.params.push_back(tr.parameter(t.name));
  return r;
}

/// Checks losses and weights of `p` against the 1-device reference `ref0` (or, for
/// a plan with micro-batches, the 1-device run with as many micro-batches: batch
/// norm statistics are per micro-batch).
inline void check_against(const to::op_graph& g, const run_result& ref0, const rt::training_plan& p, const char* what,
                          rt::optimizer_options opt = {}) {
  const auto ref = p.micro_batches == 1 ? ref0 : run(g, data_parallel(g, 1, p.micro_batches), int(ref0.losses.size()), opt);
  INFO(std::string(what) << " on " << p.mesh.devices() << " devices, " << p.micro_batches << " micro-batches");
  const auto r = run(g, p, int(ref.losses.size()), opt);
  for (std::size_t s = 0; s < r.losses.size(); ++s)
    CHECK(std::fabs(r.losses[s] - ref.losses[s]) <= 1e-5 * std::fabs(ref.losses[s]));
  std::vector<std::string> names;
  for (auto& t : g.tensors)
    if (t.parameter) names.push_back(t.name);
  for (std::size_t i = 0; i < r.params.size(); ++i) {
    INFO("parameter " << names[i]);
    CHECK(rel_diff(ref.params[i], r.params[i]) <= 1e-5);
  }
}

/// The shared body of the per-model equivalence tests: data-parallel, tensor-parallel
/// and random plans on 2, 4 and 8 devices, and two micro-batch plans, each against
/// the 1-device run after 3 steps.
inline void check_every_plan(const to::op_graph& g) {
  const auto ref = run(g, data_parallel(g, 1), 3);
  CHECK(ref.losses[2] != ref.losses[0]);  // the weights moved
  for (int n : {2, 4, 8}) {
    check_against(g, ref, data_parallel(g, n), "data parallel");
    check_against(g, ref, tensor_parallel(g, n), "tensor parallel");
    for (unsigned s = 0; s < 3; ++s) check_against(g, ref, random_plan(g, n, s), "random plan");
  }
  check_against(g, ref, data_parallel(g, 2, 2), "data parallel + 2 micro-batches");
  check_against(g, ref, random_plan(g, 4, 7, 2), "random plan + 2 micro-batches");
}

/// Adam on a random 4-device plan against the 1-device run. The eps is larger than
/// usual: a weight whose true gradient is exactly zero (the attention key bias, by
/// softmax's shift invariance) gets rounding noise as gradient, which Adam with a
/// tiny eps would blow up to +-lr differently under each plan.
inline void check_adam(const to::op_graph& g) {
  rt::optimizer_options adam;
  adam.type = rt::optimizer_options::kind::adam;
  adam.lr = 1e-3f;
  adam.eps = 1e-3f;
  const auto ref = run(g, data_parallel(g, 1), 3, adam);
  check_against(g, ref, random_plan(g, 4, 21), "random plan, Adam", adam);
}

}  // namespace rt_test
