// Sharded training of the mlp with a batch of 16 equals one device: on two-level meshes (2 x 2, 2 x 4, 4 x 2) and on one node of 2-8 devices.
#include <doctest/doctest.h>
#include "runtime_two_level.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace trainer_two_level_mlp_test_file {

using namespace rt_test;

TEST_CASE("mlp: two-level plans on 2 x 2, 2 x 4 and 4 x 2 devices train like one device") {
  check_two_level(to::lower<mlp16>());
}

TEST_CASE("mlp: with a batch of 16, data parallelism on 8 devices of one node splits it and trains like one device") {
  const auto g = to::lower<mlp16>();
  check_against(g, run(g, data_parallel(g, 1), 3), data_parallel_2l(g, 1, 8), "data parallel, 2 samples per device");
  check_every_plan(g);
}
}  // namespace trainer_two_level_mlp_test_file
