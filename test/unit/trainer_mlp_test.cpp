// Sharded training of the MLP equals one device: data, tensor, random plans on 1-8 local devices.
#include <doctest/doctest.h>
#include "runtime_models.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace trainer_mlp_test_file {

using namespace rt_test;

TEST_CASE("mlp: every plan on 1, 2, 4, 8 devices trains like one device") {
  const auto g = to::lower<mlp>();
  const auto ref = run(g, data_parallel(g, 1), 3);
  CHECK(ref.losses[2] != ref.losses[0]);  // the weights moved
  auto check = [&](const rt::training_plan& p, const char* what) {
    INFO(what << " on " << p.mesh.devices() << " devices, " << p.micro_batches << " micro-batches");
    const auto r = run(g, p, 3);
    for (int s = 0; s < 3; ++s) CHECK(std::fabs(r.losses[s] - ref.losses[s]) <= 1e-5 * std::fabs(ref.losses[s]));
    for (std::size_t i = 0; i < r.params.size(); ++i) CHECK(rel_diff(ref.params[i], r.params[i]) <= 1e-5);
  };
  for (int n : {2, 4, 8}) {
    check(data_parallel(g, n), "data parallel");
    check(tensor_parallel(g, n), "tensor parallel");
    for (unsigned s = 0; s < 3; ++s) check(random_plan(g, n, s), "random plan");
  }
  check(data_parallel(g, 2, 2), "data parallel + 2 micro-batches");
  check(random_plan(g, 4, 7, 2), "random plan + 2 micro-batches");
}

TEST_CASE("mlp: training on 4 devices lowers the loss") {
  const auto g = to::lower<mlp>();
  rt::local_world world(4);
  rt::optimizer_options sgd;
  sgd.lr = 0.1f;
  rt::trainer tr(g, random_plan(g, 4, 5), world, sgd);
  const auto b = make_batch(g, 1);
  const float first = tr.step(b);
  float last = first;
  for (int s = 0; s < 30; ++s) last = tr.step(b);
  CHECK(last < 0.5f * first);
}
}  // namespace trainer_mlp_test_file
