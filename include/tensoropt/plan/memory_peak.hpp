// The predicted peak memory of a plan on the runtime: a replay of the buffers the
// SPMD executor (runtime/executor.hpp) allocates and frees in one training step,
// with the cost model's sizes.
//
// The search optimizes the additive memory (parameters, gradients, optimizer state,
// saved activations, recompute checkpoints, the reserve: evaluate()). The runtime
// holds, at any moment, that state plus a transient working set; the peak is
//   peak = max over sites of (what is kept at the site + the site's working set),
// with one site per op's forward, per op's backward and the optimizer update. The
// replay walks the executor's order with the buffers' sharing (a consumer that
// reads its input in the producer's layout shares the producer's buffer):
//  - persistent: per parameter its value in its first user's layout (W = local
//    elements x weight bytes), the optimizer state (local / r x optimizer bytes
//    under shard_optimizer with r replicas that divide it), the gradient buffer
//    (the shard under shard_optimizer, else one accumulator per user in the
//    user's layout: a tied weight read in two layouts has two) + the reserve;
//  - forward of op j: the outputs not yet read by all their consumers, what ops
//    before j keep (saved inputs in the consumer's layout or the producer's shard
//    of a gathered input, saved kernel state), op j's inputs in its layout (a new
//    buffer where the layout differs; the producer's buffer is freed by its last
//    reader's fetch, except the shard a reader keeps), parameters read in another
//    layout than their first user's, the output and the kernel's saved state
//    (held during the kernel even under recompute, then dropped);
//  - backward of op j: the output gradient, the input and parameter gradients,
//    what ops up to j keep, the input gradients accumulated for earlier ops, and
//    an input gradient redistributed into its producer's layout (both copies at
//    once); under shard_optimizer a parameter gradient reduce-scattered into its
//    shard (both at once);
//  - recompute: a recomputed op keeps only its checkpoints; the backward of a
//    layer's last recomputed op rebuilds the segment (each rebuilt op's saved
//    state and the inputs its backward reads, plus the output being handed to its
//    consumer), which lives until each op's own backward;
//  - the update: per parameter the gradient summed into the optimizer's layout,
//    and under shard_optimizer the local slice and the gathered weights.
// The replay is exact in the runtime's own accounting (requested bytes per live
// buffer) where the kernels keep what op.saved declares; the tests hold it
// against the CPU runtime's measured peak on every configuration they cover.
// Measured (bench/memory_bench, every frontier point of the runtime tests' MLP,
// CNN, MoE and GPT on 1-8 devices and 2 x 2, 2,442 points): measured / predicted
// - 1 within -0.12 % .. +0.00 %. The additive sum of terms this replaced missed on
// 1,490 of 2,340 points (GPT up to +105 %: a rebuilt recompute segment held every
// op's output and inputs; the forward held a producer's buffer next to its
// redistributed copy; kernels kept state op.saved did not declare: MoE gate rows
// over all experts, int64 routes and argmax indices, norm statistics).
//
// The search's memory is `kept` (additive); `transient` = peak - kept is what the
// replay adds (negative where the additive memory over-counts, e.g. recompute
// working sets it spreads over the layers). A frontier point is checked against
// peak() on the runtime.
#pragma once
#include <algorithm>
#include <span>
#include <vector>
#include "build_problem.hpp"
#include "strategy.hpp"

namespace tensoropt {

/// A plan's memory on the runtime (bytes per device).
struct memory_peak {
  double kept = 0;       ///< the additive memory: evaluate(), what the search optimizes
  double ordered = 0;    ///< the replayed peak (file comment)
  double transient = 0;  ///< ordered - kept
  int op = -1;           ///< the op at whose forward or backward `ordered` is reached (-1: the update)
  bool backward = false; ///< whether at its backward
  std::vector<double> fwd, bwd;  ///< the most held during each op's forward / backward
  double update = 0;             ///< the most held during the gradient sync and update
  constexpr double peak() const { return ordered; }
};

namespace detail {
/// Live buffers of the replay, shared by reference count.
struct buffer_replay {
  struct buffer {
    double size;
    int refs;
  };
  std::vector<buffer> live;
  double current = 0, most = 0;
  constexpr int make(double b) {
    live.push_back({b, 1});
    current += b;
    most = std::max(most, current);
    return int(live.size()) - 1;
  }
  constexpr int share(int id) {
    if (id >= 0) ++live[std::size_t(id)].refs;
    return id;
  }
  constexpr void drop(int& id) {
    if (id >= 0 && --live[std::size_t(id)].refs == 0) current -= live[std::size_t(id)].size;
    id = -1;
  }
};
}  // namespace detail

/// What the replay reads besides the configs: each op's kernel state under its config
/// (cost_op's kernel_state) and the plan's additive memory (evaluate's). The plain
/// predicted_peak computes both (analyze, then cost_op per op twice); a caller replaying
/// many plans of one graph looks them up per config instead (plan/peak_frontier.hpp):
/// on gpt3-1.3b that was about half of each replay's time. The sizes below (each op's
/// output, inputs and parameters in its layout) likewise, and each op's saved buffers sit
/// in flat arrays instead of vectors per op: gpt3-1.3b's whole exact planning on 4 x
/// V100-16GB (`plan_bench --only gpt3-1.3b --threads 2 --mode exact`), whose replays of
/// 17,450 union points took 1.6 s of it on 2 threads, 4.6 -> 3.9 s together with the
/// bound search moved beside the jobs (plan/planner.hpp, which now runs it once no job is
/// left to start).
struct peak_inputs {
  std::vector<double> kernel_state;  ///< per op, bytes
  double kept = 0;
  /// Sizes that depend on one op's config, looked up per config by a replayer (empty:
  /// predicted_peak computes them): per op its output's bytes in its layout, per input (ops
  /// in order, each op's inputs in order) its bytes in the op's layout, per parameter (the
  /// same order) its local elements and its layout.
  std::vector<double> out_bytes{}, in_bytes{}, param_elements{};
  std::vector<tensor_layout> param_layout{};
  /// Optional, per input (the order of in_bytes): bit 0 whether the op reads it in its
  /// producer's layout (detail::same_split), bit 1 whether it keeps only the producer's
  /// shard (detail::kept_shard_ratio < 1), under the plan's configs. Empty: computed here.
  std::vector<unsigned char> input_flags{};
};

namespace detail {
/// peak_inputs' per-config sizes of op `j` under `c`, appended to `in`.
constexpr void append_op_sizes(const op_graph& g, std::size_t j, const op_config& c, const precision& pr,
                               const device_mesh& mesh, peak_inputs& in) {
  const auto& op = g.ops[j];
  auto bytes = [&](const tensor_map& t) {
    return local_elements(g, op, t, c) * elem_bytes(g.tensors[std::size_t(t.tensor)], pr);
  };
  in.out_bytes.push_back(bytes(op.output));
  for (auto& t : op.inputs) in.in_bytes.push_back(bytes(t));
  for (auto& t : op.params) {
    in.param_elements.push_back(local_elements(g, op, t, c));
    in.param_layout.push_back(layout_of(op, t, g.tensors[std::size_t(t.tensor)].rank, c, mesh, false));
  }
}
}  // namespace detail

/// The memory of `configs` on the micro-batch graph `g` (see the file comment), with `in`
/// computed for exactly these configs.
constexpr memory_peak predicted_peak(const op_graph& g, const std::vector<op_config>& configs, const cluster& cl,
                                     const build_options& o, const peak_inputs& in) {
  memory_peak m;
  m.kept = in.kept;
  const cost_options co = o.cost();
  const precision& pr = co.prec;
  const std::size_t n = g.ops.size(), nt = g.tensors.size();
  const auto& mesh = cl.mesh;
  auto cfg = [&](int j) -> const op_config& { return configs[std::size_t(j)]; };
  auto producer = [&](int j, std::size_t s) { return g.tensors[std::size_t(g.ops[std::size_t(j)].inputs[s].tensor)].producer; };
  auto edge = [&](int j, std::size_t s) {
    return graph_edge{producer(j, s), j, g.ops[std::size_t(j)].inputs[s].tensor, int(s)};
  };
  // per-op sizes (looked up by the caller, or computed here), and per input whether it
  // shares the producer's buffer and whether the op keeps only the producer's shard, each
  // found once: ins[j] is op j's first input, pars[j] its first parameter
  std::vector<std::size_t> ins(n + 1, 0), pars(n + 1, 0);
  for (std::size_t j = 0; j < n; ++j) {
    ins[j + 1] = ins[j] + g.ops[j].inputs.size();
    pars[j + 1] = pars[j] + g.ops[j].params.size();
  }
  peak_inputs own;
  const peak_inputs& sz = in.out_bytes.empty() ? own : in;
  if (in.out_bytes.empty())
    for (std::size_t j = 0; j < n; ++j) detail::append_op_sizes(g, j, configs[j], pr, mesh, own);
  std::vector<char> same(ins[n]), shard_kept(ins[n]);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t s = 0; s < g.ops[j].inputs.size(); ++s) {
      if (!in.input_flags.empty()) {
        same[ins[j] + s] = char(in.input_flags[ins[j] + s] & 1);
        shard_kept[ins[j] + s] = char(in.input_flags[ins[j] + s] >> 1 & 1);
        continue;
      }
      same[ins[j] + s] = detail::same_split(g, edge(int(j), s), cfg(producer(int(j), s)), cfg(int(j)));
      shard_kept[ins[j] + s] = detail::kept_shard_ratio(g, edge(int(j), s), cfg(producer(int(j), s)), cfg(int(j))) < 1;
    }
  auto out_bytes = [&](int j) { return sz.out_bytes[std::size_t(j)]; };
  auto in_bytes = [&](int j, std::size_t s) { return sz.in_bytes[ins[std::size_t(j)] + s]; };
  auto param_elements = [&](int j, std::size_t s) { return sz.param_elements[pars[std::size_t(j)] + s]; };
  auto param_layout = [&](int j, std::size_t s) -> const tensor_layout& { return sz.param_layout[pars[std::size_t(j)] + s]; };
  auto same_in = [&](int j, std::size_t s) { return same[ins[std::size_t(j)] + s] != 0; };
  auto keeps_shard = [&](int j, std::size_t s) { return shard_kept[ins[std::size_t(j)] + s] != 0; };
  auto segment_input = [&](int j, std::size_t s) {
    const auto& op = g.ops[std::size_t(j)];
    const int p = producer(j, s);
    const auto& po = g.ops[std::size_t(p)];
    return cfg(j).recompute && cfg(p).recompute && po.kind != op_kind::input && op.repeat_id >= 0 &&
           detail::same_instance(po, op);
  };
  // parameters: the first user, its layout, whether its optimizer state is sharded
  std::vector<int> owner(nt, -1), owner_slot(nt, -1);
  std::vector<bool> sharded(nt, false);
  detail::buffer_replay R;
  R.live.reserve(8 * n);  // about six buffers per op: one allocation, not dozens
  R.current = o.reserve.value;
  for (std::size_t j = 0; j < n; ++j) {
    const auto& op = g.ops[j];
    for (std::size_t s = 0; s < op.params.size(); ++s) {
      const int t = op.params[s].tensor;
      if (owner[std::size_t(t)] >= 0) continue;
      owner[std::size_t(t)] = int(j);
      owner_slot[std::size_t(t)] = int(s);
      const auto& l = param_layout(int(j), s);
      const std::int64_t r = std::int64_t(l.replicate[0]) * l.replicate[1];
      const double local = param_elements(int(j), s);
      sharded[std::size_t(t)] = configs[j].shard_optimizer && r > 1 && detail::shardable(g, op.params[s], configs[j], r);
      const double shard = sharded[std::size_t(t)] ? double(r) : 1.0;
      R.current += local * pr.weight_bytes + local / shard * pr.optimizer_bytes;
      if (sharded[std::size_t(t)]) R.current += local / shard * pr.grad_bytes;
    }
    for (std::size_t s = 0; s < op.params.size(); ++s)  // one accumulator per unsharded user
      if (!sharded[std::size_t(op.params[s].tensor)])
        R.current += param_elements(int(j), s) * pr.grad_bytes;
  }
  auto param_copy = [&](int j, std::size_t s) {  // a parameter read in another layout than its first user's
    const auto& op = g.ops[std::size_t(j)];
    const int t = op.params[s].tensor;
    const int u = owner[std::size_t(t)];
    const bool same = param_layout(j, s) == param_layout(u, std::size_t(owner_slot[std::size_t(t)]));
    return same ? -1 : R.make(param_elements(j, s) * pr.weight_bytes);
  };
  R.most = R.current;
  const double persistent = R.current;

  // what each op keeps: its inputs' and parameter copies' buffers (flat, at ins[j] and
  // pars[j]; -1: none), whether an input is the producer's shard, whether the parameter
  // copies are made (a recomputed op drops them after its forward)
  std::vector<int> in_ids(ins[n], -1), par_ids(pars[n], -1);
  std::vector<char> shard_of(ins[n], 0);
  struct saved_op {
    std::span<int> in, par;
    char* shard = nullptr;
    int state = -1, out = -1, readers = 0;
    bool rebuilt = false, par_made = false;
  };
  std::vector<saved_op> S(n);
  for (std::size_t j = 0; j < n; ++j) {
    S[j].in = std::span<int>(in_ids.data() + ins[j], ins[j + 1] - ins[j]);
    S[j].par = std::span<int>(par_ids.data() + pars[j], pars[j + 1] - pars[j]);
    S[j].shard = shard_of.data() + ins[j];
  }
  auto make_params = [&](saved_op& Sx, int j) {
    for (std::size_t s = 0; s < Sx.par.size(); ++s) Sx.par[s] = param_copy(j, s);
    Sx.par_made = true;
  };
  std::vector<int> act(nt, -1), left(nt, 0);
  for (auto& op : g.ops)
    for (auto& in : op.inputs) ++left[std::size_t(in.tensor)];
  m.fwd.assign(n, 0.0);
  m.bwd.assign(n, 0.0);
  std::vector<int> src, din, dpar;  // per op, reused
  // forward
  for (std::size_t j = 0; j < n; ++j) {
    const auto& op = g.ops[j];
    R.most = R.current;
    if (op.kind == op_kind::input) {
      act[std::size_t(op.output.tensor)] = R.make(out_bytes(int(j)));
      m.fwd[j] = R.most;
      continue;
    }
    auto& Sj = S[j];
    src.assign(op.inputs.size(), -1);
    for (std::size_t s = 0; s < op.inputs.size(); ++s) {
      const int t = op.inputs[s].tensor;
      Sj.in[s] = same_in(int(j), s) ? R.share(act[std::size_t(t)]) : R.make(in_bytes(int(j), s));
      if (keeps_shard(int(j), s)) src[s] = R.share(act[std::size_t(t)]);
      if (--left[std::size_t(t)] == 0) R.drop(act[std::size_t(t)]);
    }
    make_params(Sj, int(j));
    int y = R.make(out_bytes(int(j)));
    Sj.state = R.make(in.kernel_state[j]);
    if (op.kind == op_kind::softmax_xent) {  // the loss, gathered to read it
      int one = R.make(double(g.tensors[std::size_t(op.output.tensor)].size()) * pr.activation_bytes());
      R.drop(one);
    }
    if (cfg(int(j)).recompute) {
      R.drop(Sj.state);
      for (auto& p : Sj.par) R.drop(p);
      Sj.par_made = false;
      for (std::size_t s = 0; s < op.inputs.size(); ++s)
        if (segment_input(int(j), s)) R.drop(Sj.in[s]);
    } else
      for (std::size_t s = 0; s < op.inputs.size(); ++s)
        if (!detail::saves_input(op, int(s))) R.drop(Sj.in[s]);
    for (std::size_t s = 0; s < op.inputs.size(); ++s) {
      if (Sj.in[s] >= 0 && keeps_shard(int(j), s)) {
        R.drop(Sj.in[s]);
        Sj.in[s] = R.share(src[s]);
        Sj.shard[s] = 1;
      }
      R.drop(src[s]);
    }
    act[std::size_t(op.output.tensor)] = y;
    m.fwd[j] = R.most;
  }
  for (auto& a : act) R.drop(a);

  // backward
  auto regather = [&](int j) {
    auto& Sj = S[std::size_t(j)];
    for (std::size_t s = 0; s < Sj.in.size(); ++s)
      if (Sj.shard[s] && Sj.in[s] >= 0) {
        int x = R.make(in_bytes(j, s));
        R.drop(Sj.in[s]);
        Sj.in[s] = x;
        Sj.shard[s] = 0;
      }
  };
  // the readers of each op's output inside a recompute segment (ops come in topological
  // order, so every reader comes after its producer), counted in one pass
  std::vector<int> segment_readers(n, 0);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t s = 0; s < g.ops[j].inputs.size(); ++s)
      if (segment_input(int(j), s)) ++segment_readers[std::size_t(producer(int(j), s))];
  auto readers_of = [&](int p) { return segment_readers[std::size_t(p)]; };
  auto rebuild = [&](auto& self, int p) -> int {
    auto& Sp = S[std::size_t(p)];
    if (Sp.out >= 0) return Sp.out;
    regather(p);
    const auto& op = g.ops[std::size_t(p)];
    for (std::size_t s = 0; s < op.inputs.size(); ++s)
      if (Sp.in[s] < 0 && segment_input(p, s)) {
        const int q = producer(p, s);
        const int x = self(self, q);
        Sp.in[s] = same_in(p, s) ? R.share(x) : R.make(in_bytes(p, s));
        if (--S[std::size_t(q)].readers <= 0) R.drop(S[std::size_t(q)].out);
      }
    if (!Sp.par_made) make_params(Sp, p);
    Sp.out = R.make(out_bytes(p));
    Sp.state = R.make(in.kernel_state[std::size_t(p)]);
    Sp.rebuilt = true;
    Sp.readers = readers_of(p);
    for (std::size_t s = 0; s < op.inputs.size(); ++s)
      if (!detail::saves_input(op, int(s))) R.drop(Sp.in[s]);
    return Sp.out;
  };
  std::vector<int> grad(nt, -1);
  std::vector<bool> has_grad(nt, false);
  for (std::size_t j = 0; j < n; ++j)
    if (g.ops[j].kind == op_kind::softmax_xent) {
      grad[std::size_t(g.ops[j].output.tensor)] = R.make(4);
      has_grad[std::size_t(g.ops[j].output.tensor)] = true;
    }
  for (std::size_t jj = n; jj-- > 0;) {
    const int j = int(jj);
    const auto& op = g.ops[jj];
    auto& Sj = S[jj];
    R.most = R.current;
    int dy = grad[std::size_t(op.output.tensor)];
    grad[std::size_t(op.output.tensor)] = -1;
    if (op.kind == op_kind::input || dy < 0) {
      for (auto& b : Sj.in) R.drop(b);
      for (auto& b : Sj.par) R.drop(b);
      R.drop(Sj.state);
      R.drop(Sj.out);
      R.drop(dy);
      m.bwd[jj] = R.most;
      continue;
    }
    regather(j);
    if (cfg(j).recompute && !Sj.rebuilt) {
      for (std::size_t s = 0; s < op.inputs.size(); ++s)
        if (Sj.in[s] < 0 && segment_input(j, s)) {
          const int q = producer(j, s);
          const int x = rebuild(rebuild, q);
          Sj.in[s] = same_in(j, s) ? R.share(x) : R.make(in_bytes(j, s));
          if (--S[std::size_t(q)].readers <= 0) R.drop(S[std::size_t(q)].out);
        }
      make_params(Sj, j);
      Sj.state = R.make(in.kernel_state[jj]);
      int y = R.make(out_bytes(j));  // the re-run's output, unused
      R.drop(y);
    }
    R.drop(Sj.out);
    din.assign(op.inputs.size(), -1);
    dpar.assign(op.params.size(), -1);
    for (std::size_t s = 0; s < op.inputs.size(); ++s)
      if (!g.tensors[std::size_t(op.inputs[s].tensor)].integer) din[s] = R.make(in_bytes(j, s));
    for (std::size_t s = 0; s < op.params.size(); ++s)
      dpar[s] = R.make(param_elements(j, s) * pr.grad_bytes);
    for (auto& b : Sj.in) R.drop(b);
    for (auto& b : Sj.par) R.drop(b);
    R.drop(Sj.state);
    R.drop(dy);
    for (std::size_t s = 0; s < op.inputs.size(); ++s) {
      const int t = op.inputs[s].tensor;
      const int p = producer(j, s);
      if (g.tensors[std::size_t(t)].integer || g.ops[std::size_t(p)].kind == op_kind::input) continue;
      int x = din[s];
      din[s] = -1;
      if (!same_in(j, s)) {  // the gradient in the producer's layout: a new buffer
        const int y = R.make(out_bytes(p));
        R.drop(x);
        x = y;
      }
      if (!has_grad[std::size_t(t)]) {
        grad[std::size_t(t)] = x;
        has_grad[std::size_t(t)] = true;
      } else R.drop(x);
    }
    for (std::size_t s = 0; s < op.params.size(); ++s) {
      const int t = op.params[s].tensor;
      if (sharded[std::size_t(t)]) {  // reduce-scattered into the shard as soon as it exists
        const auto& l = param_layout(owner[std::size_t(t)], std::size_t(owner_slot[std::size_t(t)]));
        int part = R.make(param_elements(owner[std::size_t(t)], std::size_t(owner_slot[std::size_t(t)])) /
                          double(std::int64_t(l.replicate[0]) * l.replicate[1]) * pr.grad_bytes);
        R.drop(dpar[s]);
        R.drop(part);
      }
      R.drop(dpar[s]);
    }
    for (auto& b : din) R.drop(b);
    m.bwd[jj] = R.most;
  }
  for (auto& b : grad) R.drop(b);

  // gradient sync and update: per parameter, the gradient in the optimizer's layout
  // (a new buffer, or the accumulator itself) plus, per other user, its
  // redistributed part; under shard_optimizer the local slice and the new weights
  R.most = R.current;
  std::vector<int> users(nt, 0);
  for (auto& op : g.ops)
    for (auto& p : op.params) ++users[std::size_t(p.tensor)];
  for (std::size_t t = 0; t < nt; ++t) {
    if (owner[t] < 0) continue;
    const auto& l = param_layout(owner[t], std::size_t(owner_slot[t]));
    const double local = param_elements(owner[t], std::size_t(owner_slot[t]));
    if (sharded[t]) {
      const double r = double(std::int64_t(l.replicate[0]) * l.replicate[1]);
      int w = R.make(local / r * pr.weight_bytes);
      int v = R.make(local * pr.weight_bytes);
      R.drop(w);
      R.drop(v);
      continue;
    }
    if (users[t] == 1) continue;  // the accumulator is the optimizer's gradient
    int gsum = R.make(local * pr.grad_bytes);
    int part = R.make(local * pr.grad_bytes);
    R.drop(part);
    R.drop(gsum);
  }
  m.update = R.most;
  m.ordered = m.update;
  for (std::size_t j = 0; j < n; ++j) {
    if (m.fwd[j] > m.ordered) m.ordered = m.fwd[j], m.op = int(j), m.backward = false;
    if (m.bwd[j] > m.ordered) m.ordered = m.bwd[j], m.op = int(j), m.backward = true;
  }
  m.ordered = std::max(m.ordered, persistent);
  m.transient = m.ordered - m.kept;
  return m;
}

/// The memory of `configs` on the micro-batch graph `g` (see the file comment).
constexpr memory_peak predicted_peak(const op_graph& g, const std::vector<op_config>& configs, const cluster& cl,
                                     const build_options& o = {}) {
  const auto facts = analyze(g);
  peak_inputs in{{}, double(evaluate(g, configs, cl, o).memory)};
  const cost_options co = o.cost();
  for (std::size_t j = 0; j < g.ops.size(); ++j)
    in.kernel_state.push_back(cost_op(g, int(j), configs[j], cl, co, facts[j]).kernel_state.value);
  return predicted_peak(g, configs, cl, o, in);
}

}  // namespace tensoropt
