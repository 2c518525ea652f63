// Which GPU a cuda-backend rank uses (runtime/device_choice.hpp), what a pipeline
// stage's sub-communicator tells it (its world's local rank, the kind of its root),
// and a local world's abort as the device data plane sees it (communicator::aborted).
#include <doctest/doctest.h>
#include <tensoropt/runtime/device_choice.hpp>
#include <tensoropt/runtime/sub_communicator.hpp>
#include <atomic>
#include <stdexcept>
#include <thread>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace runtime_device_choice_test_file {

namespace rt = tensoropt::runtime;

TEST_CASE("device choice: threads share GPUs round robin from the requested one") {
  CHECK(rt::choose_device(1, -1, 0, false) == 0);
  CHECK(rt::choose_device(1, -1, 3, false) == 0);  // four rank threads on one GPU
  CHECK(rt::choose_device(2, -1, 3, false) == 1);
  CHECK(rt::choose_device(4, 1, 2, false) == 3);
  CHECK(rt::choose_device(4, 3, 2, false) == 1);   // wraps around
  CHECK(rt::choose_device(8, -1, 5, true) == 5);   // processes: one GPU each
  CHECK(rt::choose_device(8, 2, 5, true) == 7);
}

TEST_CASE("device choice: no GPU, a device that does not exist, too many processes") {
  CHECK_THROWS_WITH_AS(rt::choose_device(0, -1, 0, false), doctest::Contains("no CUDA device found"),
                       tensoropt::runtime_error);
  CHECK_THROWS_WITH_AS(rt::choose_device(2, 2, 0, false),
                       "CUDA device 2 does not exist: this machine has 2 GPU(s); pick --device 0..1",
                       tensoropt::runtime_error);
  // NCCL refuses two processes of one communicator on one GPU: say so before it does
  CHECK_THROWS_WITH_AS(rt::choose_device(2, -1, 2, true),
                       doctest::Contains("process 2 on this machine needs GPU 2, but the machine has 2 GPU(s): NCCL "
                                         "needs one GPU per process; start at most 2 process(es) per machine"),
                       tensoropt::runtime_error);
  CHECK_THROWS_WITH_AS(rt::choose_device(4, 3, 1, true), doctest::Contains("4 GPU(s) from device 3 on"),
                       tensoropt::runtime_error);
  CHECK_THROWS_WITH_AS(rt::choose_device(4, 3, 1, true), doctest::Contains("ppr:1:node"), tensoropt::runtime_error);
  CHECK(rt::choose_device(4, 3, 0, true) == 3);
}

TEST_CASE("a stage's sub-communicator: the world's local rank and the world it is made over") {
  rt::local_world w(4);
  std::atomic<int> checked = 0;
  w.run([&](rt::communicator& c) {
    const int first = c.rank() < 2 ? 0 : 2;
    rt::sub_communicator stage(c, {first, first + 1});
    CHECK(stage.rank() == c.rank() - first);
    CHECK(stage.local_rank() == c.local_rank());  // the GPU the rank would use in the whole run
    rt::sub_communicator inner(stage, {stage.rank()});
    CHECK(&rt::root_of(inner) == &c);
    CHECK(&rt::root_of(c) == &c);
    CHECK(dynamic_cast<rt::local_comm*>(&rt::root_of(stage)) != nullptr);
    ++checked;
  });
  CHECK(checked == 4);
}

TEST_CASE("a local world's failure is visible to the other ranks as aborted()") {
  rt::local_world w(2, std::chrono::seconds(10));
  std::atomic<bool> saw_abort = false;
  CHECK_THROWS_WITH_AS(w.run([&](rt::communicator& c) {
                         if (c.rank() == 0) {
                           CHECK_FALSE(c.aborted());
                           throw tensoropt::runtime_error("rank 0 fails");
                         }
                         rt::sub_communicator stage(c, {1});
                         const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                         while (!stage.aborted() && std::chrono::steady_clock::now() < until)
                           std::this_thread::sleep_for(std::chrono::milliseconds(1));
                         saw_abort = stage.aborted();
                       }),
                       "rank 0 fails", tensoropt::runtime_error);
  CHECK(saw_abort);
  // a later run starts clean
  w.run([&](rt::communicator& c) { CHECK_FALSE(c.aborted()); });
}

}  // namespace runtime_device_choice_test_file
