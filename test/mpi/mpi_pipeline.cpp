// Pipeline plans of the small GPT on 4 MPI processes (p = 4, and p = 2 x dp 2): the
// losses and weights after 3 steps equal a 1-device run (within 1e-5) and a 4-thread
// local run of the same plan (bit for bit); a checkpoint saved under p = 4 loads into
// a local p = 2 run. Exit 0 = pass.
#define DOCTEST_CONFIG_IMPLEMENT  // the shared helpers carry doctest checks (unused here)
#include <tensoropt/runtime/mpi_comm.hpp>
#include <cstdio>
#include "../unit/runtime_models.hpp"

using namespace rt_test;

namespace {
to::pipeline_plan pipeline(const to::op_graph& g, int n, int p, const rt::training_plan& inner) {
  to::pipeline_plan pp;
  pp.degree = p;
  pp.micro_batches = inner.micro_batches;
  pp.mesh = to::device_mesh(1, n);
  pp.configs = inner.configs;
  for (int s = 0; s < p; ++s) pp.stage_begin.push_back(std::size_t(s) * g.ops.size() / std::size_t(p));
  return pp;
}
}  // namespace

int main(int argc, char** argv) {
  rt::mpi_session session(&argc, &argv);
  rt::mpi_comm comm(std::chrono::seconds(30));
  int failures = 0;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) {
      std::fprintf(stderr, "rank %d: FAILED: %s\n", comm.rank(), what.c_str());
      ++failures;
    }
  };
  try {
    const auto g = to::lower<gpt>();
    expect(comm.size() == 4, "the test runs on 4 processes");
    const std::string path = "mpi_pipeline.ckpt";
    const auto ref = run(g, data_parallel(g, 1, 4), 3);
    for (const auto& pp : {pipeline(g, 4, 4, random_plan(g, 1, 3, 4)), pipeline(g, 4, 2, random_plan(g, 2, 13, 4))}) {
      const std::string what = "p " + std::to_string(pp.degree) + ": ";
      rt::pipeline_trainer tr(g, pp, comm);
      std::vector<float> losses;
      for (int s = 0; s < 3; ++s) losses.push_back(tr.step(make_batch(g, 100)));
      std::vector<std::vector<float>> params;
      for (auto& t : g.tensors)
        if (t.parameter) params.push_back(tr.parameter(t.name));
      if (pp.degree == 4) tr.save(path);
      // the same plan on 4 local threads
      run_result local;
      {
        rt::local_world w(4, std::chrono::seconds(20));
        rt::pipeline_trainer lt(g, pp, w);
        for (int s = 0; s < 3; ++s) local.losses.push_back(lt.step(make_batch(g, 100)));
        for (auto& t : g.tensors)
          if (t.parameter) local.params.push_back(lt.parameter(t.name));
      }
      for (int s = 0; s < 3; ++s) {
        const auto i = std::size_t(s);
        expect(std::fabs(losses[i] - ref.losses[i]) <= 1e-5 * std::fabs(ref.losses[i]),
               what + "loss of step " + std::to_string(s) + " equals the 1-device loss");
        expect(losses[i] == local.losses[i], what + "loss of step " + std::to_string(s) + " equals the local run's bits");
      }
      for (std::size_t i = 0; i < params.size(); ++i) {
        expect(rel_diff(ref.params[i], params[i]) <= 1e-5, what + "parameter #" + std::to_string(i) + " equals 1 device");
        expect(params[i] == local.params[i], what + "parameter #" + std::to_string(i) + " equals the local run's bits");
      }
      if (pp.degree == 4 && comm.rank() == 0) {  // the p = 4 checkpoint under a local p = 2 plan
        rt::local_world w(2);
        rt::pipeline_trainer t2(g, pipeline(g, 2, 2, data_parallel(g, 1, 4)), w);
        t2.load(path);
        for (std::size_t i = 0, k = 0; i < g.tensors.size(); ++i)
          if (g.tensors[i].parameter)
            expect(t2.parameter(g.tensors[i].name) == params[k++], "checkpoint tensor " + g.tensors[i].name);
        std::remove(path.c_str());
      }
      std::printf("rank %d: %slosses %.6f %.6f %.6f\n", comm.rank(), what.c_str(), double(losses[0]),
                  double(losses[1]), double(losses[2]));
      comm.barrier();
    }
    std::printf("rank %d: %d failures\n", comm.rank(), failures);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", comm.rank(), e.what());
    return 1;
  }
  return failures ? 1 : 0;
}
