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
#include <limits>
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
  /// The replay stopped at the first site that held at least the `stop_at` it was given:
  /// `ordered` is then what that site held, a lower bound of the peak (fwd and bwd hold the
  /// sites replayed, `op` and `backward` name the last).
  bool cut = false;
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
namespace detail {
/// Each op's sizes under one config: its output's bytes in its layout, per input (ops in
/// order, each op's inputs in order) its bytes in the op's layout, per parameter (the same
/// order) its local elements, its layout, the replicas its optimizer state is sharded
/// over when the op is the parameter's first user (1: not sharded) and the elements of
/// that shard (local elements / replicas). A replayer of many plans keeps them for every
/// config of every op (plan/peak_frontier.hpp) and looks them up.
struct peak_sizes {
  std::vector<double> out_bytes, in_bytes, param_elements, param_shards, param_shard_elements;
  std::vector<tensor_layout> param_layout;
};

/// The sizes of op `j` under `c`, appended to `in`.
constexpr void append_op_sizes(const op_graph& g, std::size_t j, const op_config& c, const precision& pr,
                               const device_mesh& mesh, peak_sizes& in) {
  const auto& op = g.ops[j];
  auto bytes = [&](const tensor_map& t) {
    return local_elements(g, op, t, c) * elem_bytes(g.tensors[std::size_t(t.tensor)], pr);
  };
  in.out_bytes.push_back(bytes(op.output));
  for (auto& t : op.inputs) in.in_bytes.push_back(bytes(t));
  for (auto& t : op.params) {
    in.param_elements.push_back(local_elements(g, op, t, c));
    in.param_layout.push_back(layout_of(op, t, g.tensors[std::size_t(t.tensor)].rank, c, mesh, false));
    const auto& l = in.param_layout.back();
    const std::int64_t r = std::int64_t(l.replicate[0]) * l.replicate[1];
    in.param_shards.push_back(c.shard_optimizer && r > 1 && detail::shardable(g, t, c, r) ? double(r) : 1.0);
    in.param_shard_elements.push_back(in.param_elements.back() / in.param_shards.back());
  }
}

/// What the replay reads of the graph alone, found once per graph (a replayer of many plans
/// keeps it): per op its first input and first parameter in the flat per-input and
/// per-parameter arrays, per input its producer, whether the op saves it, whether it is
/// a recompute segment's inside edge when both ops recompute (the producer is no input op
/// and both are one instance of a repeated block) and whether its tensor is integer (no
/// gradient), per tensor a parameter's first user and slot, how many inputs read it and
/// how many parameter slots use it.
struct peak_shape {
  std::vector<std::size_t> ins, pars;
  std::vector<int> producer;
  std::vector<unsigned char> saves, in_segment, integer;
  std::vector<int> owner, owner_slot, readers, users;

  constexpr explicit peak_shape(const op_graph& g) {
    const std::size_t n = g.ops.size(), nt = g.tensors.size();
    ins.assign(n + 1, 0);
    pars.assign(n + 1, 0);
    owner.assign(nt, -1);
    owner_slot.assign(nt, -1);
    readers.assign(nt, 0);
    users.assign(nt, 0);
    for (std::size_t j = 0; j < n; ++j) {
      const auto& op = g.ops[j];
      ins[j + 1] = ins[j] + op.inputs.size();
      pars[j + 1] = pars[j] + op.params.size();
      for (std::size_t s = 0; s < op.inputs.size(); ++s) {
        const auto t = std::size_t(op.inputs[s].tensor);
        const int p = g.tensors[t].producer;
        const auto& po = g.ops[std::size_t(p)];
        producer.push_back(p);
        saves.push_back(saves_input(op, int(s)) ? 1 : 0);
        in_segment.push_back(po.kind != op_kind::input && op.repeat_id >= 0 && same_instance(po, op) ? 1 : 0);
        integer.push_back(g.tensors[t].integer ? 1 : 0);
        ++readers[t];
      }
      for (std::size_t s = 0; s < op.params.size(); ++s) {
        const auto t = std::size_t(op.params[s].tensor);
        ++users[t];
        if (owner[t] >= 0) continue;
        owner[t] = int(j);
        owner_slot[t] = int(s);
      }
    }
  }
};

/// What an op keeps between its forward and its backward: its inputs' and parameter
/// copies' buffers (spans into peak_scratch's flat arrays; -1: none), whether an input
/// is the producer's shard, whether the parameter copies are made (a recomputed op drops
/// them after its forward).
struct saved_op {
  std::span<int> in, par;
  char* shard = nullptr;
  int state = -1, out = -1, readers = 0;
  bool rebuilt = false, par_made = false;
};

/// The replay's working arrays, kept between the replays of one thread.
struct peak_scratch {
  buffer_replay R;
  std::vector<int> in_ids, par_ids, act, left, grad, segment_readers, src, din, dpar;
  std::vector<char> shard_of, sharded, has_grad;
  std::vector<saved_op> S;
};

/// A replay's stop (replay_peak's `stop_at`) that never comes.
struct never_stop {
  constexpr double operator()() const { return std::numeric_limits<double>::infinity(); }
};

/// The replay of the file comment for one plan. `v` gives what depends on the plan's
/// configs: recompute(j) (whether op j's config recomputes), out_bytes(j), in_bytes(j, s),
/// param_elements(j, s), param_layout(j, s), param_shards(j, s), param_shard_elements(j, s),
/// kernel_state(j) (cost_op's kernel_state) and
/// input_flags(j, s) (bit 0: op j reads input s in its producer's layout,
/// detail::same_split; bit 1: it keeps only the producer's shard, detail::kept_shard_ratio
/// < 1); `kept` is the plan's additive memory.
/// The replay stops at the first site that holds at least `stop_at()` (memory_peak::cut;
/// asked after each site, so a value that falls meanwhile is seen): a caller that only
/// asks whether the peak reaches a value is told so sooner.
template <class Plan, class StopAt = never_stop>
constexpr memory_peak replay_peak(const op_graph& g, const peak_shape& sh, const Plan& v, const build_options& o,
                                  double kept, peak_scratch& w, StopAt&& stop_at = {}) {
  memory_peak m;
  m.kept = kept;
  auto stop = [&](double held, int op, bool backward) {
    m.ordered = held;
    m.op = op;
    m.backward = backward;
    m.cut = true;
    m.transient = m.ordered - m.kept;
    return m;
  };
  const cost_options co = o.cost();
  const precision& pr = co.prec;
  const std::size_t n = g.ops.size(), nt = g.tensors.size();
  const auto& ins = sh.ins;
  const auto& pars = sh.pars;
  auto producer = [&](int j, std::size_t s) { return sh.producer[ins[std::size_t(j)] + s]; };
  auto same_in = [&](int j, std::size_t s) { return (v.input_flags(std::size_t(j), s) & 1) != 0; };
  auto keeps_shard = [&](int j, std::size_t s) { return (v.input_flags(std::size_t(j), s) & 2) != 0; };
  auto recompute = [&](int j) { return v.recompute(std::size_t(j)); };
  auto segment_input = [&](int j, std::size_t s) {
    return sh.in_segment[ins[std::size_t(j)] + s] && recompute(j) && recompute(producer(j, s));
  };
  // parameters: whether the first user shards its optimizer state
  auto& sharded = w.sharded;
  sharded.assign(nt, 0);
  detail::buffer_replay& R = w.R;
  R.live.clear();
  R.live.reserve(8 * n);  // about six buffers per op
  R.current = o.reserve.value;
  for (std::size_t j = 0; j < n; ++j) {
    const auto& op = g.ops[j];
    for (std::size_t s = 0; s < op.params.size(); ++s) {
      const auto t = std::size_t(op.params[s].tensor);
      if (sh.owner[t] != int(j) || sh.owner_slot[t] != int(s)) continue;
      const double local = v.param_elements(j, s);
      sharded[t] = v.param_shards(j, s) > 1;
      const double part = v.param_shard_elements(j, s);  // local / the shards
      R.current += local * pr.weight_bytes + part * pr.optimizer_bytes;
      if (sharded[t]) R.current += part * pr.grad_bytes;
    }
    for (std::size_t s = 0; s < op.params.size(); ++s)  // one accumulator per unsharded user
      if (!sharded[std::size_t(op.params[s].tensor)]) R.current += v.param_elements(j, s) * pr.grad_bytes;
  }
  auto param_copy = [&](int j, std::size_t s) {  // a parameter read in another layout than its first user's
    const auto t = std::size_t(g.ops[std::size_t(j)].params[s].tensor);
    const int u = sh.owner[t];
    const bool same =
        v.param_layout(std::size_t(j), s) == v.param_layout(std::size_t(u), std::size_t(sh.owner_slot[t]));
    return same ? -1 : R.make(v.param_elements(std::size_t(j), s) * pr.weight_bytes);
  };
  R.most = R.current;
  const double persistent = R.current;
  if (persistent >= stop_at()) return stop(persistent, -1, false);

  w.in_ids.assign(ins[n], -1);
  w.par_ids.assign(pars[n], -1);
  w.shard_of.assign(ins[n], 0);
  auto& S = w.S;
  S.assign(n, saved_op{});
  for (std::size_t j = 0; j < n; ++j) {
    S[j].in = std::span<int>(w.in_ids.data() + ins[j], ins[j + 1] - ins[j]);
    S[j].par = std::span<int>(w.par_ids.data() + pars[j], pars[j + 1] - pars[j]);
    S[j].shard = w.shard_of.data() + ins[j];
  }
  auto make_params = [&](saved_op& Sx, int j) {
    for (std::size_t s = 0; s < Sx.par.size(); ++s) Sx.par[s] = param_copy(j, s);
    Sx.par_made = true;
  };
  auto& act = w.act;
  auto& left = w.left;
  act.assign(nt, -1);
  left.assign(sh.readers.begin(), sh.readers.end());
  m.fwd.assign(n, 0.0);
  m.bwd.assign(n, 0.0);
  auto& src = w.src;
  auto& din = w.din;
  auto& dpar = w.dpar;
  // forward
  for (std::size_t j = 0; j < n; ++j) {
    const auto& op = g.ops[j];
    R.most = R.current;
    if (op.kind == op_kind::input) {
      act[std::size_t(op.output.tensor)] = R.make(v.out_bytes(j));
      m.fwd[j] = R.most;
      if (R.most >= stop_at()) return stop(R.most, int(j), false);
      continue;
    }
    auto& Sj = S[j];
    src.assign(op.inputs.size(), -1);
    for (std::size_t s = 0; s < op.inputs.size(); ++s) {
      const int t = op.inputs[s].tensor;
      Sj.in[s] = same_in(int(j), s) ? R.share(act[std::size_t(t)]) : R.make(v.in_bytes(j, s));
      if (keeps_shard(int(j), s)) src[s] = R.share(act[std::size_t(t)]);
      if (--left[std::size_t(t)] == 0) R.drop(act[std::size_t(t)]);
    }
    make_params(Sj, int(j));
    int y = R.make(v.out_bytes(j));
    Sj.state = R.make(v.kernel_state(j));
    if (op.kind == op_kind::softmax_xent) {  // the loss, gathered to read it
      int one = R.make(double(g.tensors[std::size_t(op.output.tensor)].size()) * pr.activation_bytes());
      R.drop(one);
    }
    if (recompute(int(j))) {
      R.drop(Sj.state);
      for (auto& p : Sj.par) R.drop(p);
      Sj.par_made = false;
      for (std::size_t s = 0; s < op.inputs.size(); ++s)
        if (segment_input(int(j), s)) R.drop(Sj.in[s]);
    } else
      for (std::size_t s = 0; s < op.inputs.size(); ++s)
        if (!sh.saves[ins[j] + s]) R.drop(Sj.in[s]);
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
    if (R.most >= stop_at()) return stop(R.most, int(j), false);
  }
  for (auto& a : act)
    if (a >= 0) R.drop(a);

  // backward
  auto regather = [&](int j) {
    auto& Sj = S[std::size_t(j)];
    for (std::size_t s = 0; s < Sj.in.size(); ++s)
      if (Sj.shard[s] && Sj.in[s] >= 0) {
        int x = R.make(v.in_bytes(std::size_t(j), s));
        R.drop(Sj.in[s]);
        Sj.in[s] = x;
        Sj.shard[s] = 0;
      }
  };
  // the readers of each op's output inside a recompute segment (ops come in topological
  // order, so every reader comes after its producer), counted in one pass
  auto& segment_readers = w.segment_readers;
  segment_readers.assign(n, 0);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t s = 0; s < g.ops[j].inputs.size(); ++s)
      if (segment_input(int(j), s)) ++segment_readers[std::size_t(producer(int(j), s))];
  auto rebuild = [&](auto& self, int p) -> int {
    auto& Sp = S[std::size_t(p)];
    if (Sp.out >= 0) return Sp.out;
    regather(p);
    const auto& op = g.ops[std::size_t(p)];
    for (std::size_t s = 0; s < op.inputs.size(); ++s)
      if (Sp.in[s] < 0 && segment_input(p, s)) {
        const int q = producer(p, s);
        const int x = self(self, q);
        Sp.in[s] = same_in(p, s) ? R.share(x) : R.make(v.in_bytes(std::size_t(p), s));
        if (--S[std::size_t(q)].readers <= 0) R.drop(S[std::size_t(q)].out);
      }
    if (!Sp.par_made) make_params(Sp, p);
    Sp.out = R.make(v.out_bytes(std::size_t(p)));
    Sp.state = R.make(v.kernel_state(std::size_t(p)));
    Sp.rebuilt = true;
    Sp.readers = segment_readers[std::size_t(p)];
    for (std::size_t s = 0; s < op.inputs.size(); ++s)
      if (!sh.saves[ins[std::size_t(p)] + s]) R.drop(Sp.in[s]);
    return Sp.out;
  };
  auto& grad = w.grad;
  auto& has_grad = w.has_grad;
  grad.assign(nt, -1);
  has_grad.assign(nt, 0);
  for (std::size_t j = 0; j < n; ++j)
    if (g.ops[j].kind == op_kind::softmax_xent) {
      grad[std::size_t(g.ops[j].output.tensor)] = R.make(4);
      has_grad[std::size_t(g.ops[j].output.tensor)] = 1;
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
      if (R.most >= stop_at()) return stop(R.most, j, true);
      continue;
    }
    regather(j);
    if (recompute(j) && !Sj.rebuilt) {
      for (std::size_t s = 0; s < op.inputs.size(); ++s)
        if (Sj.in[s] < 0 && segment_input(j, s)) {
          const int q = producer(j, s);
          const int x = rebuild(rebuild, q);
          Sj.in[s] = same_in(j, s) ? R.share(x) : R.make(v.in_bytes(jj, s));
          if (--S[std::size_t(q)].readers <= 0) R.drop(S[std::size_t(q)].out);
        }
      make_params(Sj, j);
      Sj.state = R.make(v.kernel_state(jj));
      int y = R.make(v.out_bytes(jj));  // the re-run's output, unused
      R.drop(y);
    }
    R.drop(Sj.out);
    din.assign(op.inputs.size(), -1);
    dpar.assign(op.params.size(), -1);
    for (std::size_t s = 0; s < op.inputs.size(); ++s)
      if (!sh.integer[ins[jj] + s]) din[s] = R.make(v.in_bytes(jj, s));
    for (std::size_t s = 0; s < op.params.size(); ++s) dpar[s] = R.make(v.param_elements(jj, s) * pr.grad_bytes);
    for (auto& b : Sj.in) R.drop(b);
    for (auto& b : Sj.par) R.drop(b);
    R.drop(Sj.state);
    R.drop(dy);
    for (std::size_t s = 0; s < op.inputs.size(); ++s) {
      const int t = op.inputs[s].tensor;
      const int p = producer(j, s);
      if (sh.integer[ins[jj] + s] || g.ops[std::size_t(p)].kind == op_kind::input) continue;
      int x = din[s];
      din[s] = -1;
      if (!same_in(j, s)) {  // the gradient in the producer's layout: a new buffer
        const int y = R.make(v.out_bytes(std::size_t(p)));
        R.drop(x);
        x = y;
      }
      if (!has_grad[std::size_t(t)]) {
        grad[std::size_t(t)] = x;
        has_grad[std::size_t(t)] = 1;
      } else R.drop(x);
    }
    for (std::size_t s = 0; s < op.params.size(); ++s) {
      const auto t = std::size_t(op.params[s].tensor);
      if (sharded[t]) {  // reduce-scattered into the shard as soon as it exists
        const auto u = std::size_t(sh.owner[t]), us = std::size_t(sh.owner_slot[t]);
        int part = R.make(v.param_shard_elements(u, us) * pr.grad_bytes);
        R.drop(dpar[s]);
        R.drop(part);
      }
      R.drop(dpar[s]);
    }
    for (auto& b : din) R.drop(b);
    m.bwd[jj] = R.most;
    if (R.most >= stop_at()) return stop(R.most, j, true);
  }
  for (auto& b : grad)
    if (b >= 0) R.drop(b);

  // gradient sync and update: per parameter, the gradient in the optimizer's layout
  // (a new buffer, or the accumulator itself) plus, per other user, its
  // redistributed part; under shard_optimizer the local slice and the new weights
  R.most = R.current;
  for (std::size_t t = 0; t < nt; ++t) {
    if (sh.owner[t] < 0) continue;
    const auto u = std::size_t(sh.owner[t]), us = std::size_t(sh.owner_slot[t]);
    const double local = v.param_elements(u, us);
    if (sharded[t]) {
      int wt = R.make(v.param_shard_elements(u, us) * pr.weight_bytes);
      int nw = R.make(local * pr.weight_bytes);
      R.drop(wt);
      R.drop(nw);
      continue;
    }
    if (sh.users[t] == 1) continue;  // the accumulator is the optimizer's gradient
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

/// A plan given as its configs, with what the replay reads of it computed here.
struct listed_plan {
  const std::vector<op_config>* configs = nullptr;
  const peak_shape* shape = nullptr;
  peak_sizes sizes;
  std::vector<double> state;          // per op: kernel state
  std::vector<unsigned char> flags;   // per input
  constexpr double out_bytes(std::size_t j) const { return sizes.out_bytes[j]; }
  constexpr double in_bytes(std::size_t j, std::size_t s) const { return sizes.in_bytes[shape->ins[j] + s]; }
  constexpr double param_elements(std::size_t j, std::size_t s) const {
    return sizes.param_elements[shape->pars[j] + s];
  }
  constexpr const tensor_layout& param_layout(std::size_t j, std::size_t s) const {
    return sizes.param_layout[shape->pars[j] + s];
  }
  constexpr double param_shards(std::size_t j, std::size_t s) const { return sizes.param_shards[shape->pars[j] + s]; }
  constexpr double param_shard_elements(std::size_t j, std::size_t s) const {
    return sizes.param_shard_elements[shape->pars[j] + s];
  }
  constexpr bool recompute(std::size_t j) const { return (*configs)[j].recompute; }
  constexpr double kernel_state(std::size_t j) const { return state[j]; }
  constexpr unsigned char input_flags(std::size_t j, std::size_t s) const { return flags[shape->ins[j] + s]; }
};
}  // namespace detail

/// The memory of `configs` on the micro-batch graph `g` (see the file comment). A caller
/// replaying many plans of one graph looks up what depends on one op's config instead
/// (plan/peak_frontier.hpp's peak_replayer).
constexpr memory_peak predicted_peak(const op_graph& g, const std::vector<op_config>& configs, const cluster& cl,
                                     const build_options& o = {}) {
  const auto facts = analyze(g);
  const cost_options co = o.cost();
  const detail::peak_shape sh(g);
  detail::listed_plan v;
  v.configs = &configs;
  v.shape = &sh;
  for (std::size_t j = 0; j < g.ops.size(); ++j) {
    v.state.push_back(cost_op(g, int(j), configs[j], cl, co, facts[j]).kernel_state.value);
    detail::append_op_sizes(g, j, configs[j], co.prec, cl.mesh, v.sizes);
    for (std::size_t s = 0; s < g.ops[j].inputs.size(); ++s) {
      const int p = sh.producer[sh.ins[j] + s];
      const graph_edge e{p, int(j), g.ops[j].inputs[s].tensor, int(s)};
      const auto& cu = configs[std::size_t(p)];
      v.flags.push_back((unsigned char)((detail::same_split(g, e, cu, configs[j]) ? 1 : 0) |
                                        (detail::kept_shard_ratio(g, e, cu, configs[j]) < 1 ? 2 : 0)));
    }
  }
  detail::peak_scratch w;
  return detail::replay_peak(g, sh, v, o, double(evaluate(g, configs, cl, o).memory), w);
}

}  // namespace tensoropt
