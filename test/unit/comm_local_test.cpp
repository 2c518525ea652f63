// The local communicator: collectives over groups, deterministic sums, timeouts and failures that never hang.
#include <doctest/doctest.h>
#include <tensoropt/runtime/comm.hpp>
#include <atomic>
#include <chrono>
#include <string>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace comm_local_test_file {

namespace rt = tensoropt::runtime;

TEST_CASE("collectives over the world and over sub-groups") {
  rt::local_world w(4);
  w.run([](rt::communicator& c) {
    const int r = c.rank();
    std::vector<float> v = {float(r), float(10 * r)};
    c.all_reduce(c.world(), v);
    CHECK(v[0] == 6.f);
    CHECK(v[1] == 60.f);
    const rt::group pair = r < 2 ? rt::group{0, 1} : rt::group{2, 3};  // differ in the low digit
    std::vector<float> in = {float(r)}, out(2);
    c.all_gather(pair, in, out);
    CHECK(out[0] == float(pair[0]));
    CHECK(out[1] == float(pair[1]));
    std::vector<float> rs_in = {float(r), float(r + 100)}, rs_out(1);
    c.reduce_scatter(pair, rs_in, rs_out);
    CHECK(rs_out[0] == (r == pair[0] ? float(pair[0] + pair[1]) : float(pair[0] + pair[1] + 200)));
    std::vector<float> a2a_in(4), a2a_out(4);
    for (int i = 0; i < 4; ++i) a2a_in[std::size_t(i)] = float(10 * r + i);
    c.all_to_all(c.world(), a2a_in, a2a_out);
    for (int i = 0; i < 4; ++i) CHECK(a2a_out[std::size_t(i)] == float(10 * i + r));
    if (r == 0) c.send(3, std::vector<float>{42.f}, 7);
    if (r == 3) {
      std::vector<float> got(1);
      c.recv(0, got, 7, "test");
      CHECK(got[0] == 42.f);
    }
    c.barrier();
  });
}

TEST_CASE("all_reduce gives every rank the same bits, summed in group order") {
  rt::local_world w(8);
  std::vector<std::vector<float>> results(8);
  w.run([&](rt::communicator& c) {
    std::vector<float> v(64);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1.f / float(3 + c.rank() * 7 + int(i));
    c.all_reduce(c.world(), v);
    results[std::size_t(c.rank())] = v;
  });
  for (int r = 1; r < 8; ++r) CHECK(results[std::size_t(r)] == results[0]);
  float expect = 0;
  for (int r = 0; r < 8; ++r) expect += 1.f / float(3 + r * 7);
  CHECK(results[0][0] == expect);
}

TEST_CASE("a collective a rank never joins times out naming the collective and the missing rank") {
  rt::local_world w(4, std::chrono::milliseconds(200));
  std::string msg;
  try {
    w.run([](rt::communicator& c) {
      if (c.rank() == 2) return;  // rank 2 skips the collective
      std::vector<float> v(3, 1.f);
      c.all_reduce(c.world(), v);
    });
  } catch (const tensoropt::runtime_error& e) {
    msg = e.what();
  }
  CHECK(msg.find("all_reduce") != std::string::npos);
  CHECK(msg.find("still missing rank(s) {2}") != std::string::npos);
}

TEST_CASE("a failing device aborts the others' pending receives promptly") {
  rt::local_world w(3, std::chrono::seconds(30));
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(w.run([](rt::communicator& c) {
    if (c.rank() == 1) throw tensoropt::invalid_argument("device 1 is broken");
    c.barrier();
  }),
                       "device 1 is broken", tensoropt::invalid_argument);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  // The world is usable again afterwards.
  std::atomic<int> ok = 0;
  w.run([&](rt::communicator& c) {
    std::vector<float> v = {1.f};
    c.all_reduce(c.world(), v);
    if (v[0] == 3.f) ++ok;
  });
  CHECK(ok == 3);
}

TEST_CASE("bad arguments are refused") {
  CHECK_THROWS_AS(rt::local_world(0), tensoropt::invalid_argument);
  rt::local_world w(2);
  CHECK_THROWS_AS(w.run([](rt::communicator& c) {
    std::vector<float> in(2), out(3);
    c.all_gather(c.world(), in, out);
  }),
                  tensoropt::invalid_argument);
  CHECK_THROWS_AS(w.run([](rt::communicator& c) { c.send(5, {}, 0); }), tensoropt::invalid_argument);
}
}  // namespace comm_local_test_file
