// Pipeline stages of an operator graph: where a graph may be cut, and the graph of one
// stage (a contiguous range of ops) as a model of its own.
//
// Cut points. A stage boundary sits before op c (0 < c < ops) when exactly one
// activation tensor produced by an op before c is read by an op at or after c: the
// stage-to-stage send is then one tensor per micro-batch and its gradient (Narayanan et
// al. 2021 cut GPT at layer boundaries, where the residual stream is that tensor).
// Parameters do not count: a parameter read on both sides (GPT's token table, tied to
// the LM head) is stored by each stage that reads it, as Megatron-LM keeps a copy of
// the word embeddings in the first and the last stage.
//
// The stage graph of ops [begin, end) holds, first, one `input` op per activation
// that crosses into the range (named "recv.<tensor>", its dims the producer's dims of
// each axis, so a batch axis stays a batch axis and the receiving layout may split it),
// then the range's ops in order, with the tensors they read and write. Repeat
// instances are renumbered from 0 inside the stage, so a stage of n identical layers
// is a repeat<> of n instances (costed once, composed by powering). `op_of[j]` is the
// original op of stage op j, or -1 for a received input.
#pragma once
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>
#include "graph.hpp"

namespace tensoropt {

/// The ops c where a stage may start (0 < c < ops), ascending (see the file comment).
constexpr std::vector<std::size_t> cut_points(const op_graph& g) {
  const std::size_t n = g.ops.size();
  std::vector<std::ptrdiff_t> last_reader(g.tensors.size(), -1);
  for (std::size_t j = 0; j < n; ++j)
    for (auto& in : g.ops[j].inputs) last_reader[std::size_t(in.tensor)] = std::ptrdiff_t(j);
  // crossing[c] = activations produced before c and read at or after c
  std::vector<int> diff(n + 1, 0);
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    const int p = g.tensors[t].producer;
    if (g.tensors[t].parameter || p < 0 || last_reader[t] <= p) continue;
    ++diff[std::size_t(p) + 1];
    --diff[std::size_t(last_reader[t]) + 1];
  }
  std::vector<std::size_t> cuts;
  int crossing = 0;
  for (std::size_t c = 1; c < n; ++c) {
    crossing += diff[c];
    if (crossing == 1) cuts.push_back(c);
  }
  return cuts;
}

/// The activation crossing into op c (a cut point), or -1 when c is not one.
constexpr int cut_tensor(const op_graph& g, std::size_t c) {
  std::vector<std::ptrdiff_t> last_reader(g.tensors.size(), -1);
  for (std::size_t j = c; j < g.ops.size(); ++j)
    for (auto& in : g.ops[j].inputs) last_reader[std::size_t(in.tensor)] = std::ptrdiff_t(j);
  int found = -1, count = 0;
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    const int p = g.tensors[t].producer;
    if (g.tensors[t].parameter || p < 0 || std::size_t(p) >= c || last_reader[t] < 0) continue;
    found = int(t);
    ++count;
  }
  return count == 1 ? found : -1;
}

/// The `input` op that stands for activation `t` received by a stage (named
/// "recv.<tensor>", its dims the producer's dims of each axis; its output reads `t`).
constexpr op_node received_op(const op_graph& g, int t) {
  const auto& ti = g.tensors[std::size_t(t)];
  const op_node& prod = g.ops[std::size_t(ti.producer)];
  op_node r;
  r.name = "recv." + ti.name;
  r.kind = op_kind::input;
  r.attr[0] = ti.integer ? 1 : 0;
  r.output.tensor = t;
  r.output.dim.fill(-1);
  for (int a = 0; a < ti.rank; ++a) {
    const int d = prod.output.dim[std::size_t(a)];
    op_dim od = d >= 0 ? prod.dims[std::size_t(d)] : op_dim{"x", ti.extents[std::size_t(a)], false, false};
    od.extent = ti.extents[std::size_t(a)];
    r.output.dim[std::size_t(a)] = std::int8_t(r.dims.size());
    r.dims.push_back(od);
  }
  return r;
}

/// The first activation ops [begin, end) of `g` read that an op before `begin` makes (the
/// stage graph's first op receives it), or -1.
constexpr int first_received(const op_graph& g, std::size_t begin, std::size_t end) {
  for (std::size_t j = begin; j < end; ++j)
    for (auto& in : g.ops[j].inputs) {
      const int p = g.tensors[std::size_t(in.tensor)].producer;
      if (p >= 0 && std::size_t(p) < begin) return in.tensor;
    }
  return -1;
}

struct stage_subgraph {
  op_graph graph;
  std::vector<int> op_of;  ///< original op of each stage op (-1: a received input)
};

/// The graph of ops [begin, end) of `g` (see the file comment). Throws invalid_argument
/// for an empty or out-of-range range.
constexpr stage_subgraph stage_graph(const op_graph& g, std::size_t begin, std::size_t end) {
  detail::require(begin < end && end <= g.ops.size(), "stage_graph: the op range is empty or out of range");
  stage_subgraph s;
  s.graph.name = g.name;
  s.graph.batch = g.batch;
  std::vector<int> remap(g.tensors.size(), -1);
  auto take = [&](int t) {
    if (remap[std::size_t(t)] < 0) {
      remap[std::size_t(t)] = int(s.graph.tensors.size());
      s.graph.tensors.push_back(g.tensors[std::size_t(t)]);
    }
    return remap[std::size_t(t)];
  };
  // received activations first, in order of first use
  for (std::size_t j = begin; j < end; ++j)
    for (auto& in : g.ops[j].inputs) {
      const auto& t = g.tensors[std::size_t(in.tensor)];
      if (t.producer < 0 || std::size_t(t.producer) >= begin || remap[std::size_t(in.tensor)] >= 0) continue;
      op_node r = received_op(g, in.tensor);
      r.output.tensor = take(in.tensor);
      s.graph.tensors[std::size_t(r.output.tensor)].producer = int(s.graph.ops.size());
      s.graph.ops.push_back(std::move(r));
      s.op_of.push_back(-1);
    }
  std::vector<int> first_index;  // per repeat id: the smallest instance index in the range
  for (std::size_t j = begin; j < end; ++j) {
    const auto& op = g.ops[j];
    if (op.repeat_id < 0) continue;
    if (std::size_t(op.repeat_id) >= first_index.size()) first_index.resize(std::size_t(op.repeat_id) + 1, -1);
    int& f = first_index[std::size_t(op.repeat_id)];
    if (f < 0 || op.repeat_index < f) f = op.repeat_index;
  }
  for (std::size_t j = begin; j < end; ++j) {
    op_node op = g.ops[j];
    for (auto& m : op.inputs) m.tensor = take(m.tensor);
    for (auto& m : op.params) m.tensor = take(m.tensor);
    if (op.output.tensor >= 0) {
      op.output.tensor = take(op.output.tensor);
      s.graph.tensors[std::size_t(op.output.tensor)].producer = int(s.graph.ops.size());
    }
    if (op.repeat_id >= 0) op.repeat_index -= first_index[std::size_t(op.repeat_id)];
    s.graph.ops.push_back(std::move(op));
    s.op_of.push_back(int(j));
  }
  return s;
}

}  // namespace tensoropt
