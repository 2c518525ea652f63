// Device specs (gpu:key=value): every GPU preset prints as the spec that rebuilds
// it exactly; bad specs name the key and its range or the valid keys.
#include <tensoropt/cost/device_spec.hpp>
#include <doctest/doctest.h>
#include <string>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace cost_device_spec_test_file {

using namespace tensoropt;

TEST_CASE("every GPU preset round-trips through its spec") {
  int n = 0;
  for (const device* p : gpus::all) {
    if (p == &gpus::cpu) continue;
    CAPTURE(p->name);
    const std::string spec = to_spec(*p);
    CHECK(make_device(parse_device_spec(spec), p->name) == *p);
    ++n;
  }
  CHECK(n == 6);
  CHECK(to_spec(gpus::a100_80gb) ==
        "gpu:memory-gib=80,bf16-tflops=312,fp32-tflops=19.5,hbm-gbs=2039,nvlink-gbs=240,network-gbs=25");
}

TEST_CASE("a device without a preset") {
  const auto d = make_device(parse_device_spec("gpu:memory-gib=24,bf16-tflops=165,fp32-tflops=82.6,hbm-gbs=1008,"
                                               "nvlink-gbs=32,network-gbs=3"),
                             "rtx-4090");
  CHECK(d.capacity.value == 24 * gib);
  CHECK(d.peak_half.value == 165e12);
  CHECK(d.memory_bw.value == 1008e9);
  CHECK(d.name == "rtx-4090");
}

TEST_CASE("bad device specs") {
  const std::string ok = "bf16-tflops=1,fp32-tflops=1,hbm-gbs=1,nvlink-gbs=1,network-gbs=1";
  CHECK_THROWS_WITH_AS(parse_device_spec("tpu:memory-gib=1"), doctest::Contains("expected gpu:KEY=VALUE,... with keys memory-gib, bf16-tflops"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse_device_spec("gpu:memory-gib=0," + ok),
                       doctest::Contains("gpu:memory-gib: expected a number in (0, 1048576], got '0'"), invalid_argument);
  CHECK_THROWS_WITH_AS(parse_device_spec("gpu:memory-gib=16GB," + ok),
                       doctest::Contains("gpu:memory-gib: expected a number"), invalid_argument);
  CHECK_THROWS_WITH_AS(parse_device_spec("gpu:" + ok), doctest::Contains("gpu: missing required key(s) memory-gib"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse_device_spec("gpu:memory-gib=8,tdp=300," + ok),
                       doctest::Contains("gpu: unknown key 'tdp'; valid keys: memory-gib"), invalid_argument);
}
}  // namespace cost_device_spec_test_file
