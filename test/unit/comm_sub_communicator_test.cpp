// Sub-communicators: a group of a world's ranks as a communicator of its own (the
// devices of one pipeline stage), its collectives, ranks, failures and bad groups.
#include <doctest/doctest.h>
#include <tensoropt/runtime/sub_communicator.hpp>
#include <chrono>
#include <string>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace comm_sub_communicator_test_file {

namespace rt = tensoropt::runtime;

TEST_CASE("two stages of two ranks: collectives stay inside each stage") {
  rt::local_world w(4);
  w.run([](rt::communicator& c) {
    const int stage = c.rank() / 2;
    rt::sub_communicator sub(c, stage == 0 ? rt::group{0, 1} : rt::group{2, 3});
    CHECK(sub.size() == 2);
    CHECK(sub.rank() == c.rank() % 2);
    CHECK(sub.parent_rank(sub.rank()) == c.rank());
    std::vector<float> v = {float(c.rank())};
    sub.all_reduce(sub.world(), v);
    CHECK(v[0] == (stage == 0 ? 1.f : 5.f));
    std::vector<float> out(2);
    sub.all_gather(sub.world(), std::vector<float>{float(10 * c.rank())}, out);
    CHECK(out[0] == float(20 * stage));
    CHECK(out[1] == float(20 * stage + 10));
    sub.barrier();
    // the parent still reaches across the stages
    if (c.rank() == 1) c.send(2, std::vector<float>{7.f}, 99);
    if (c.rank() == 2) {
      std::vector<float> got(1);
      c.recv(1, got, 99, "cross-stage");
      CHECK(got[0] == 7.f);
    }
  });
}

TEST_CASE("a failing member aborts the others' receives, naming the parent rank") {
  rt::local_world w(2, std::chrono::seconds(10));
  const auto t0 = std::chrono::steady_clock::now();
  std::string msg;
  try {
    w.run([](rt::communicator& c) {
      rt::sub_communicator sub(c, {0, 1});
      if (c.rank() == 1) throw tensoropt::runtime_error("rank 1 broke");
      std::vector<float> v(1);
      sub.all_reduce(sub.world(), v);
    });
  } catch (const std::exception& e) {
    msg = e.what();
  }
  CHECK(msg == "rank 1 broke");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
}

TEST_CASE("bad groups are refused with the reason") {
  rt::local_world w(3);
  w.run([](rt::communicator& c) {
    if (c.rank() != 0) return;
    CHECK_THROWS_WITH_AS(rt::sub_communicator(c, {1, 2}), doctest::Contains("rank 0 is not in {1,2}"),
                         tensoropt::invalid_argument);
    CHECK_THROWS_WITH_AS(rt::sub_communicator(c, {0, 5}), doctest::Contains("rank 5 does not exist"),
                         tensoropt::invalid_argument);
    CHECK_THROWS_WITH_AS(rt::sub_communicator(c, {1, 0}), doctest::Contains("not strictly ascending"),
                         tensoropt::invalid_argument);
  });
}
}  // namespace comm_sub_communicator_test_file
