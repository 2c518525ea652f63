// Sharded training of the gpt on two-level meshes (2 x 2, 2 x 4, 4 x 2) equals one device, with a batch 8 devices split.
#include <doctest/doctest.h>
#include "runtime_two_level.hpp"

using namespace rt_test;

TEST_CASE("gpt: two-level plans on 2 x 2, 2 x 4 and 4 x 2 devices train like one device") {
  check_two_level(to::lower<gpt16>());
}
