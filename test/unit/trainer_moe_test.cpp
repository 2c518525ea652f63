// Sharded training of the small moe equals one device: data, tensor and random plans on 1-8 local devices.
#include <doctest/doctest.h>
#include "runtime_models.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace trainer_moe_test_file {

using namespace rt_test;

TEST_CASE("moe: every plan on 1, 2, 4, 8 devices trains like one device") { check_every_plan(to::lower<moe>()); }

TEST_CASE("moe: Adam on a random plan matches one device") { check_adam(to::lower<moe>()); }
}  // namespace trainer_moe_test_file
