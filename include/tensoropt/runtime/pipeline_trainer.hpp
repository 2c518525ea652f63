// The pipeline trainer: a graph, a pipeline_plan and devices; `step(batch)` returns
// the loss. The pipeline counterpart of trainer.hpp, with checkpoints that move
// between pipeline degrees.
//
// On a local_world it holds one pipeline_stage (pipeline.hpp) per device and runs
// each step on all of them; on any other communicator (MPI) it is this process's
// device, and every process calls the same methods.
//
// Checkpoints use the format of checkpoint.hpp (whole tensors by name), so a file
// saved under p stages loads under any other degree, or into an ordinary trainer,
// and the other way round. Saving: each stage gathers the parameters it is the
// first holder of (a parameter shared by stages is saved once, from the first), the
// first member of each stage sends them to world rank 0, which writes the file in
// graph order. Loading: every stage reads the file and takes the tensors it holds.
#pragma once
#include <memory>
#include <string>
#include <vector>
#include "checkpoint.hpp"
#include "pipeline.hpp"
#include "trainer.hpp"

namespace tensoropt::runtime {

/// Saves the whole weights and optimizer state of a pipeline run (collective over
/// the world; world rank 0 writes).
inline void save_checkpoint(pipeline_stage& st, const std::string& path) {
  executor& ex = st.stage_executor();
  const auto& g = ex.graph();
  const int states = ex.optimizer().states();
  // per parameter tensor: weight, then states (whole), for those this stage saves
  std::vector<std::vector<std::vector<float>>> mine(g.tensors.size());
  st.guard([&] {
    for (int t : ex.parameters())
      if (st.holders(t).front() == st.stage()) {
        mine[std::size_t(t)].push_back(ex.gather(t, -1));
        for (int s = 0; s < states; ++s) mine[std::size_t(t)].push_back(ex.gather(t, s));
      }
    const bool first_member = ex.comm().rank() == 0;
    if (first_member && st.stage() > 0)
      for (auto& rec : mine)
        for (auto& v : rec) st.send(0, v);
    if (st.world().rank() == 0) {
      for (int s = 1; s < st.degree(); ++s)
        for (std::size_t t = 0; t < g.tensors.size(); ++t)
          if (g.tensors[t].parameter && st.holders(int(t)).front() == s)
            for (int k = 0; k <= states; ++k)
              mine[t].push_back(st.receive(s, std::size_t(g.tensors[t].size()), "checkpoint tensor '" + g.tensors[t].name + "'"));
      std::vector<std::pair<std::string, std::vector<float>>> recs;
      std::vector<std::vector<index_t>> shapes;
      for (std::size_t t = 0; t < g.tensors.size(); ++t) {
        const auto& ti = g.tensors[t];
        if (!ti.parameter) continue;
        const std::vector<index_t> shape(ti.extents.begin(), ti.extents.begin() + ti.rank);
        for (int k = 0; k <= states; ++k) {
          recs.push_back({k == 0 ? ti.name : ti.name + "@" + detail::state_name(ex.optimizer(), k - 1),
                          std::move(mine[t].at(std::size_t(k)))});
          shapes.push_back(shape);
        }
      }
      detail::write_checkpoint(path, g, ex.steps(), ex.optimizer(), recs, shapes);
    }
    st.world().barrier();
  });
}

/// Loads a checkpoint saved under any plan (pipelined or not) into a pipeline run
/// (collective). Throws as load_checkpoint(executor&) does.
inline void load_checkpoint(pipeline_stage& st, const std::string& path) {
  st.guard([&] { load_checkpoint(st.stage_executor(), path, false); });
}

/// One pipeline_stage per device (trainer.hpp's basic_trainer); parameter(name)
/// comes from the first stage that holds it.
using pipeline_trainer = basic_trainer<pipeline_stage, pipeline_plan>;

}  // namespace tensoropt::runtime
