// What the runtime executes: one op config per op of a graph, the micro-batch count
// and the device mesh the configs are for.
//
// A training plan comes from a chosen frontier point (`plan::training_plan()` in
// plan/plan.hpp), from a plan file (plan/plan_file.hpp) or, in tests, from a
// strategy written by hand. It is plain data: the runtime checks it against the
// graph and the world it runs on (one config per op, degrees that divide, the
// mesh's device count equal to the world's).
#pragma once
#include <vector>
#include "../core/mesh.hpp"
#include "../cost/config.hpp"

namespace tensoropt {

struct training_plan {
  std::vector<op_config> configs;  ///< configs[i] is op i's config (graph order)
  int micro_batches = 1;           ///< gradient-accumulation count k
  device_mesh mesh{1, 1};
};

}  // namespace tensoropt
