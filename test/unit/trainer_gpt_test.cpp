// Sharded training of the small gpt equals one device: data, tensor and random plans on 1-8 local devices.
#include <doctest/doctest.h>
#include "runtime_models.hpp"

using namespace rt_test;

TEST_CASE("gpt: every plan on 1, 2, 4, 8 devices trains like one device") {
  const auto g = to::lower<gpt>();
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

TEST_CASE("gpt: Adam on a random plan matches one device") {
  const auto g = to::lower<gpt>();
  rt::optimizer_options adam;
  adam.type = rt::optimizer_options::kind::adam;
  adam.lr = 1e-3f;
  // A larger eps: a weight whose true gradient is exactly zero (the attention key
  // bias, by softmax's shift invariance) gets rounding noise as gradient, which
  // Adam with a tiny eps would blow up to +-lr differently under each plan.
  adam.eps = 1e-3f;
  const auto ref = run(g, data_parallel(g, 1), 3, adam);
  check_against(g, ref, random_plan(g, 4, 21), "random plan, Adam", adam);
}
