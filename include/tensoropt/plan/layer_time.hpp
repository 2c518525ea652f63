// One transformer layer's forward + backward pass as the cost model charges it, for
// setting the model against a layer timed alone (published layer timings in
// cost/published_runs.hpp's layer_runs; bench/gpt_torch.py's layer on a GPU): the
// compute of the first layer's ops of a two-layer lowering of the configuration on one
// device, with one micro-batch of the configuration's batch and no optimizer step,
// gradient sync or edge (one device redistributes nothing).
//
// `activation_dropout` adds a dropout after the FFN's activation, which the lowering
// does not have (torch.nn.TransformerEncoderLayer has one): the layer's FFN-output
// dropout, hidden wide, scaled to the FFN's width, its two launches (forward and
// backward) kept as they are; a configuration with dropout 0 has no such op to scale
// (invalid_argument).
#pragma once
#include <string>
#include "../core/error.hpp"
#include "../models/transformer.hpp"
#include "strategy_spec.hpp"

namespace tensoropt {

/// Seconds of one layer's forward + backward (see the file comment). Throws
/// invalid_argument where `c` is not a valid configuration.
inline double layer_seconds(models::gpt_config c, models::transformer_kind kind, const device& d,
                            build_options o, bool activation_dropout = false) {
  c.layers = 2;
  o.micro_batches = 1;
  const op_graph g = lower_transformer(c, kind);
  const cluster cl(device_mesh(1, 1), d);
  const auto configs = configs_of(parse_strategy_spec("tp=1"), g, cl.mesh);
  const cost_options co = o.cost();
  const auto facts = analyze(g);
  const std::string prefix = "layers.0.", drop_name = prefix + "mlp.drop";
  double t = 0, drop = -1;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if (g.ops[i].name.rfind(prefix, 0) != 0) continue;
    const double k = cost_op(g, int(i), configs[i], cl, co, facts[i]).compute.value;
    t += k;
    if (g.ops[i].name == drop_name) drop = k;
  }
  if (activation_dropout) {
    if (drop < 0)
      throw invalid_argument("layer_seconds: an activation dropout needs the configuration's dropout > 0 (there is no '" +
                             drop_name + "' to scale)");
    const double launches = 2 * d.launch_overhead.value;
    t += (drop - launches) * double(c.ffn_size()) / double(c.hidden) + launches;
  }
  return t;
}

}  // namespace tensoropt
