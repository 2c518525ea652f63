// What every MPI test program shares: MPI set up for the process, the world
// communicator, a failure count with a check that reports by rank, and the exit code
// (0 = pass). Each program runs on 4 processes under mpirun (CMakeLists.txt).
#pragma once
#define DOCTEST_CONFIG_IMPLEMENT  // the shared helpers carry doctest checks (unused here)
#include <tensoropt/runtime/mpi_comm.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include "../unit/runtime_models.hpp"

namespace rt_test {

class mpi_test {
 public:
  mpi_test(int* argc, char*** argv, std::chrono::milliseconds timeout = std::chrono::seconds(30))
      : session_(argc, argv), comm(timeout) {}
  /// Counts a failure (and prints it with the rank) unless `ok`.
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    std::fprintf(stderr, "rank %d: FAILED: %s\n", comm.rank(), what.c_str());
    ++failures_;
  }
  /// Runs `body`; returns the process's exit code: 1 on a failure or an exception.
  template <class F>
  int run(F&& body) {
    try {
      expect(comm.size() == 4, "the test runs on 4 processes");
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: %s\n", comm.rank(), e.what());
      return 1;
    }
    std::printf("rank %d: %d failures\n", comm.rank(), failures_);
    return failures_ ? 1 : 0;
  }

 private:
  rt::mpi_session session_;

 public:
  rt::mpi_comm comm;

 private:
  int failures_ = 0;
};

/// p stages cut evenly by op count on n devices (one node), with `inner`'s configs.
inline to::pipeline_plan even_pipeline(const to::op_graph& g, int n, int p, const rt::training_plan& inner) {
  to::pipeline_plan pp;
  pp.degree = p;
  pp.micro_batches = inner.micro_batches;
  pp.mesh = to::device_mesh(1, n);
  pp.configs = inner.configs;
  for (int s = 0; s < p; ++s) pp.stage_begin.push_back(std::size_t(s) * g.ops.size() / std::size_t(p));
  return pp;
}

}  // namespace rt_test
