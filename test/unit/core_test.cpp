// Core: units and their formatting, precision policies, the device mesh, errors.
#include <tensoropt/core/dims.hpp>
#include <tensoropt/core/dtype.hpp>
#include <tensoropt/core/mesh.hpp>
#include <tensoropt/core/units.hpp>
#include <tensoropt/model/graph.hpp>
#include <doctest/doctest.h>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace core_test_file {

using namespace tensoropt;

TEST_CASE("the search's integer costs in and out of typed units") {
  CHECK(from_picoseconds(2'000'000'000'000) == 2_s);
  CHECK(from_picoseconds(1'500'000'000) / 1_ms == doctest::Approx(1.5));
  for (std::int64_t ps : {std::int64_t(0), std::int64_t(1), std::int64_t(123456789), std::int64_t(1) << 51})
    CHECK(to_picoseconds(from_picoseconds(ps)) == ps);
  CHECK(to_byte_count(3_MiB) == 3 << 20);
  CHECK(to_byte_count(bytes(7.9)) == 7);
  CHECK(from_byte_count(5) / 1_B == 5);
  CHECK(1536_KiB / 1_MiB == 1.5);
  CHECK(0.5_MiB == 512_KiB);
  static_assert(from_byte_count(1 << 20) == 1_MiB);
}

TEST_CASE("unit literals and arithmetic") {
  CHECK((2_GiB).value == 2.0 * 1024 * 1024 * 1024);
  CHECK((1.5_GiB).value == 1.5 * gib);
  CHECK((3_ms + 2_ms).value == doctest::Approx(5e-3));
  CHECK((bytes(1e9) / gb_per_s(100)).value == doctest::Approx(0.01));
  CHECK((flops(312e12) / tflop_per_s(312)).value == doctest::Approx(1.0));
  CHECK(format_bytes(23.4 * gib) == "23.4 GiB");
  CHECK(format_bytes(1.5 * gib) == "1.50 GiB");
  CHECK(format_bytes(16 * gib) == "16 GiB");
  CHECK(format_bytes(512 * mib) == "512 MiB");
  CHECK(format_bytes(1000.4 * mib) == "1000 MiB");
  CHECK(format_bytes(17) == "17 B");
  CHECK(format_bytes(105.3 * gib) == "105 GiB");
  // Three significant digits, rounding carried into the number of decimals.
  CHECK(format_seconds(1.5) == "1.50 s");
  CHECK(format_seconds(45) == "45.0 s");
  CHECK(format_seconds(9.996) == "10.0 s");
  CHECK(format_seconds(123.4) == "123 s");
  CHECK(format_seconds(0.0456) == "45.6 ms");
  CHECK(format_seconds(0.99996) == "1.00 s");
  CHECK(format_seconds(1.234e-3) == "1.23 ms");
  CHECK(format_seconds(7.8e-6) == "7.80 us");
  CHECK(format_seconds(0) == "0 s");
}

TEST_CASE("precision policies: 16 bytes of state per parameter") {
  CHECK(precisions::fp32.state_bytes_per_param() == 16);
  CHECK(precisions::bf16_mixed.state_bytes_per_param() == 16);
  CHECK(precisions::bf16_mixed.activation_bytes() == 2);
  CHECK(precisions::fp32.activation_bytes() == 4);
  CHECK(parse_precision("bf16-mixed") == precisions::bf16_mixed);
  CHECK_THROWS_WITH_AS(parse_precision("fp8"), doctest::Contains("valid precisions: fp32, bf16-mixed"),
                       invalid_argument);
}

TEST_CASE("device mesh: levels, ranks, bad sizes") {
  const device_mesh m(4, 8);
  CHECK(m.devices() == 32);
  CHECK(m.level_size(0) == 4);
  CHECK(m.level_size(1) == 8);
  CHECK(m.node_of(17) == 2);
  CHECK(device_mesh(1, 6).devices() == 6);  // not a power of two: handled by divisors
  CHECK_THROWS_WITH_AS(device_mesh(0, 8), doctest::Contains("node count must be at least 1"), invalid_argument);
  CHECK_THROWS_WITH_AS(device_mesh(1, -2), doctest::Contains("GPU count per node"), invalid_argument);
  CHECK_THROWS_AS(device_mesh(1 << 12, 1 << 12), invalid_argument);
  CHECK(mesh<8, 2>::value() == device_mesh(2, 8));
}

TEST_CASE("prime factors and divisors") {
  std::size_t n = 0;
  const auto f = prime_factors(360, n);
  REQUIRE(n == 6);
  CHECK(f[0] == 2);
  CHECK(f[3] == 3);
  CHECK(f[5] == 5);
  CHECK(count_divisors(12) == 6);
  CHECK(count_divisors(1) == 1);
}

TEST_CASE("with_batch scales batch dims and the tensors that follow them") {
  op_graph g;
  g.batch = 8;
  g.tensors.push_back({"x", {8, 16}, 2, false, false, 0});
  op_node in;
  in.name = "input";
  in.dims = {{"b", 8, true, true}, {"h", 16, true, false}};
  in.output = {0, {0, 1}};
  g.ops.push_back(in);
  const auto g2 = with_batch(g, 2);
  CHECK(g2.batch == 2);
  CHECK(g2.ops[0].dims[0].extent == 2);
  CHECK(g2.ops[0].dims[1].extent == 16);
  CHECK(g2.tensors[0].extents[0] == 2);
  CHECK(g2.tensors[0].extents[1] == 16);
  CHECK_THROWS_WITH_AS(with_batch(g, 3), doctest::Contains("must divide the global batch"), invalid_argument);
}
}  // namespace core_test_file
