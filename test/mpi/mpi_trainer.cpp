// One plan of the small GPT on 4 MPI processes: the losses and weights after 3 steps
// equal a 1-device run (within 1e-5) and a 4-thread local run of the same plan (bit for
// bit); a checkpoint saved under MPI loads into a local 2-device run. Exit 0 = pass.
#include "mpi_test.hpp"

using namespace rt_test;

int main(int argc, char** argv) {
  mpi_test test(&argc, &argv);
  auto& comm = test.comm;
  auto expect = [&](bool ok, const std::string& what) { test.expect(ok, what); };
  return test.run([&] {
    const auto g = to::lower<gpt>();
    // All four processes run on this machine, so each one's local rank (the GPU it
    // would pick) is its world rank.
    expect(comm.local_rank() == comm.rank(), "local rank " + std::to_string(comm.local_rank()) + " of rank " +
                                                 std::to_string(comm.rank()) + " on one machine");
    const auto plan = random_plan(g, 4, 11);
    rt::trainer tr(g, plan, comm);
    std::vector<float> losses;
    for (int s = 0; s < 3; ++s) losses.push_back(tr.step(make_batch(g, 100)));
    std::vector<std::vector<float>> params;
    for (auto& t : g.tensors)
      if (t.parameter) params.push_back(tr.parameter(t.name));
    const std::string path = "mpi_trainer.ckpt";
    tr.device(0).comm().barrier();
    save_checkpoint(tr.device(0), path);
    const auto ref = run(g, data_parallel(g, 1), 3);
    const auto local = run(g, plan, 3);
    for (int s = 0; s < 3; ++s) {
      expect(std::fabs(losses[std::size_t(s)] - ref.losses[std::size_t(s)]) <= 1e-5 * std::fabs(ref.losses[std::size_t(s)]),
             "loss of step " + std::to_string(s) + " equals the 1-device loss");
      expect(losses[std::size_t(s)] == local.losses[std::size_t(s)], "loss of step " + std::to_string(s) + " equals the local run's bits");
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      expect(rel_diff(ref.params[i], params[i]) <= 1e-5, "parameter #" + std::to_string(i) + " equals 1 device");
      expect(params[i] == local.params[i], "parameter #" + std::to_string(i) + " equals the local run's bits");
    }
    if (comm.rank() == 0) {  // the MPI checkpoint continues under a local 2-device plan
      rt::local_world w(2);
      rt::trainer t2(g, tensor_parallel(g, 2), w);
      t2.load(path);
      for (std::size_t i = 0, k = 0; i < g.tensors.size(); ++i)
        if (g.tensors[i].parameter) expect(t2.parameter(g.tensors[i].name) == params[k++], "checkpoint tensor " + g.tensors[i].name);
      std::remove(path.c_str());
    }
    std::printf("rank %d: losses %.6f %.6f %.6f\n", comm.rank(), double(losses[0]), double(losses[1]),
                double(losses[2]));
  });
}
