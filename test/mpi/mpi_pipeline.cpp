// Pipeline plans of the small GPT on 4 MPI processes (p = 4, and p = 2 x dp 2): the
// losses and weights after 3 steps equal a 1-device run (within 1e-5) and a 4-thread
// local run of the same plan (bit for bit); a checkpoint saved under p = 4 loads into
// a local p = 2 run; a stage that throws stops the other processes within about a second, each with
// an error naming that stage. Exit 0 = pass.
#include "mpi_test.hpp"

using namespace rt_test;

int main(int argc, char** argv) {
  mpi_test test(&argc, &argv);
  auto& comm = test.comm;
  auto expect = [&](bool ok, const std::string& what) { test.expect(ok, what); };
  return test.run([&] {
    const auto g = to::lower<gpt>();
    const std::string path = "mpi_pipeline.ckpt";
    const auto ref = run(g, data_parallel(g, 1, 4), 3);
    for (const auto& pp : {even_pipeline(g, 4, 4, random_plan(g, 1, 3, 4)), even_pipeline(g, 4, 2, random_plan(g, 2, 13, 4))}) {
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
        rt::pipeline_trainer t2(g, even_pipeline(g, 2, 2, data_parallel(g, 1, 4)), w);
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
    // A stage that throws (stage 2's batch is short) stops the others within about a second, each
    // with an error naming it. Last: after an abort the run is over.
    {
      const auto pp = even_pipeline(g, 4, 4, data_parallel(g, 1, 4));
      rt::pipeline_stage st(g, pp, comm);
      auto good = make_batch(g, 1), bad = good;
      bad[0].pop_back();
      const auto t0 = std::chrono::steady_clock::now();
      std::string msg = "no error";
      try {
        st.step(comm.rank() == 2 ? bad : good);
      } catch (const std::exception& e) {
        msg = e.what();
      }
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      expect(msg.find("pipeline stage 2 (ranks 2-2): ") != std::string::npos, "the error names stage 2: " + msg);
      expect(msg.find(comm.rank() == 2 ? "values; the model expects" : "aborted because rank 2 failed") != std::string::npos,
             "the error says why: " + msg);
      expect(waited < 15, "aborted after " + std::to_string(waited) + " s, not at the 30 s timeout");
      std::printf("rank %d: stage %d stopped after %.3f s: %s\n", comm.rank(), st.stage(), waited, msg.c_str());
    }
  });
}
