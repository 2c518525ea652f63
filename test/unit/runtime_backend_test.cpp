// The backend interface on the CPU: the registry names what is missing, buffers
// keep their dtype, space and requested bytes, the host data plane gives the
// communicator's results, and redistribute() over a data plane equals the
// communicator overload bit for bit.
#include <doctest/doctest.h>
#include <tensoropt/runtime.hpp>
#include <cstring>
#include <string>
#include <vector>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace runtime_backend_test_file {

namespace to = tensoropt;
namespace rt = tensoropt::runtime;

TEST_CASE("make_backend: cpu is registered; a missing or unknown backend is named with its fix") {
  CHECK(rt::has_backend("cpu"));
  rt::local_world w(1);
  w.run([](rt::communicator& c) {
    auto be = rt::make_backend({}, c);
    CHECK(be->name() == "cpu");
    CHECK(be->space() == rt::memory_space::host);
    if (!rt::has_backend("cuda"))
      CHECK_THROWS_WITH_AS(rt::make_backend({.kind = "cuda"}, c), doctest::Contains("link the CMake target tensoropt::cuda"),
                           to::invalid_argument);
    CHECK_THROWS_WITH_AS(rt::make_backend({.kind = "tpu"}, c), doctest::Contains("valid backends: cpu, cuda"),
                         to::invalid_argument);
    CHECK_THROWS_WITH_AS(rt::make_backend({.kind = "cpu", .prec = to::precisions::bf16_mixed}, c),
                         doctest::Contains("fp32 only"), to::invalid_argument);
  });
  CHECK_THROWS_WITH_AS(rt::parse_backend("gpu"), doctest::Contains("unknown backend 'gpu'"), to::invalid_argument);
}

TEST_CASE("buffers: requested bytes by dtype, counted and scratch allocations, roles") {
  rt::cpu_backend be;
  CHECK(be.type_of(rt::buffer_role::state) == to::dtype::fp32);
  {
    rt::buffer a = be.allocate(10);
    rt::buffer s = be.scratch(1000);
    CHECK(a.host_fp32());
    CHECK(a.bytes() == 40);
    CHECK(be.memory().current == 40);  // scratch is not charged
    rt::buffer b = be.upload(std::vector<float>{1, 2, 3}, rt::buffer_role::weight);
    CHECK(be.memory().current == 52);
    be.accumulate(b, b);
    CHECK(be.download(b) == std::vector<float>{2, 4, 6});
    be.write(b, std::vector<float>{7, 8, 9});
    CHECK(be.copy(b)[2] == 9.f);
    CHECK_THROWS_AS(be.write(b, std::vector<float>{1}), to::invalid_argument);
    CHECK(be.memory().peak == 64);
  }
  CHECK(be.memory().current == 0);
  CHECK(to::size_of(to::dtype::bf16) == 2);
}

TEST_CASE("the host data plane equals the communicator's collectives") {
  rt::local_world w(3);
  w.run([](rt::communicator& c) {
    rt::cpu_backend be;
    rt::host_data_plane dp(c);
    const rt::group g{0, 1, 2};
    std::vector<float> v(6);
    for (int i = 0; i < 6; ++i) v[std::size_t(i)] = float(c.rank() * 10 + i) / 3.f;
    rt::buffer x = be.upload(v);
    dp.all_reduce(g, x);
    c.all_reduce(g, v);
    CHECK(std::memcmp(x.data(), v.data(), v.size() * sizeof(float)) == 0);
    rt::buffer part = be.allocate(2), all = be.allocate(6);
    dp.reduce_scatter(g, x, part);
    dp.all_gather(g, part, all);
    std::vector<float> p2(2), a2(6);
    c.reduce_scatter(g, v, p2);
    c.all_gather(g, p2, a2);
    CHECK(std::memcmp(all.data(), a2.data(), a2.size() * sizeof(float)) == 0);
    // grouped exchange: every rank sends its rank to the next, receives from the previous
    rt::buffer mine = be.upload(std::vector<float>{float(c.rank())}), got = be.allocate(1);
    const rt::outgoing out[] = {{(c.rank() + 1) % 3, &mine}};
    const rt::incoming in[] = {{(c.rank() + 2) % 3, &got}};
    dp.exchange(out, in, "test exchange");
    CHECK(got[0] == float((c.rank() + 2) % 3));
  });
}

TEST_CASE("a rank that skips an exchange makes its peer time out naming the operation") {
  rt::local_world w(2, std::chrono::milliseconds(200));
  std::string what;
  try {
    w.run([](rt::communicator& c) {
      rt::cpu_backend be;
      rt::host_data_plane dp(c);
      rt::buffer x = be.allocate(4);
      if (c.rank() == 0) dp.all_reduce({0, 1}, x);
    });
  } catch (const to::runtime_error& e) {
    what = e.what();
  }
  CHECK(what.find("all_reduce on rank 0: timed out") != std::string::npos);
}
}  // namespace runtime_backend_test_file
