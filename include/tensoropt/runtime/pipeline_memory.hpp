// The predicted peak memory of one device of a pipeline stage under 1F1B: a replay of
// the buffers the stage's executor (stage_executor.hpp) allocates and frees in one
// step, with the cost model's sizes, to hold the runtime's measured peak against.
//
// plan/memory_peak.hpp replays one micro-batch of an ordinary plan. A stage differs in
// three ways, and the replay follows the runtime in each:
//  - persistent state: the parameters the stage's ops read, each in its first
//    stage-user's layout (a parameter another stage also reads, GPT's tied token
//    table, is held by both), its optimizer state (split over its replicas under
//    shard_optimizer) and gradient buffers; plus the cost model's reserve;
//  - crossings (stage_boundary.hpp): a received input arrives as this device's box of
//    the wire layout and is moved into the received layout (both held for a moment);
//    its readers fetch it from there like any producer's output, and its gradient is
//    summed in that layout until the micro-batch's backward ends, then cut to the
//    wire box. An output another stage reads is moved into each crossing's wire layout
//    (held while it is handed out); its gradient shares arrive in the wire layout and
//    are moved into the producer's gradient layout;
//  - 1F1B order (pipeline.hpp): stage s of p with k micro-batches runs
//    w = min(p - s - 1, k) forwards, then k - w pairs (forward m + w, backward m),
//    then w backwards. Each micro-batch's kept buffers (saved inputs, the producer's
//    shard of a gathered input, kernel state) live from its forward to its backward,
//    so at most f = min(k, p - s) are held at once (Narayanan et al., SC'21, sec.
//    2.2.1: stage s holds p - s micro-batches), next to the working set of the op
//    that runs.
// Then the update: per parameter, the gradient in the optimizer's layout, the parts
// of other users, a shared parameter's whole summed gradient, and under
// shard_optimizer the local slice and the gathered weights.
//
// Buffer sizes come from the placements the runtime uses (sharding.hpp, the same
// degrees as the cost model's local shards), precision bytes from the build options,
// and each op's kernel state from cost_op's kernel_state. Every member of a stage has
// the same shard sizes, so the replay is of member 0. What is not modelled: the
// communicator's message copies (host memory, not charged to the device) and the
// scratch buffers of a redistribution (uncounted in the runtime too).
#pragma once
#include <algorithm>
#include <vector>
#include "../plan/memory_peak.hpp"
#include "../plan/pipeline_plan.hpp"
#include "stage_boundary.hpp"

namespace tensoropt::runtime {

/// One stage's predicted memory per device (bytes).
struct stage_memory_prediction {
  int in_flight = 1;     ///< f = min(k, p - s) micro-batches held at once
  double state = 0;      ///< parameters, gradient buffers, optimizer state + reserve
  double kept = 0;       ///< what one micro-batch keeps from its forward to its backward
  double replayed = 0;   ///< the most held at any moment of the step
  int op = -1;           ///< the op whose forward or backward reaches it (-1: a crossing or the update)
  bool backward = false; ///< whether at its backward
  double peak() const { return replayed; }
};

namespace detail {
/// The replay of stage_executor's buffers (see the file comment).
class stage_replay {
 public:
  stage_replay(const op_graph& mg, const pipeline_plan& pp, int s, const cluster& scl, const build_options& o)
      : g_(mg), pp_(pp), cfg_(pp.configs), mesh_(scl.mesh), pr_(o.prec), n_(mg.ops.size()) {
    const auto ro = ops_of_range(g_, op_range{pp.stage_begin[std::size_t(s)],
                                              s + 1 < pp.degree ? pp.stage_begin[std::size_t(s) + 1] : n_});
    here_ = ro.runs;
    cross_ = crossings_of(g_, pp, s);
    const auto facts = analyze(g_);
    const cost_options co = o.cost();
    state_.assign(n_, 0.0);
    in_.resize(n_);
    din_.resize(n_);
    out_.resize(n_);
    dout_.resize(n_);
    for (std::size_t j = 0; j < n_; ++j) {
      const op_node& op = g_.ops[j];
      for (auto& m : op.inputs) {
        in_[j].push_back(place(op, m, tensor(m.tensor), cfg_[j], mesh_, false));
        din_[j].push_back(place(op, m, tensor(m.tensor), cfg_[j], mesh_, true));
      }
      out_[j] = place(op, op.output, tensor(op.output.tensor), cfg_[j], mesh_, true);
      dout_[j] = place(op, op.output, tensor(op.output.tensor), cfg_[j], mesh_, false);
      if (here_[j] && op.kind != op_kind::input) state_[j] = cost_op(g_, int(j), cfg_[j], scl, co, facts[j]).kernel_state.value;
    }
    for (const auto& x : cross_.in) out_[std::size_t(producer(x.tensor))] = dout_[std::size_t(producer(x.tensor))] = x.recv;
    R_.current = o.reserve.value;
    parameters();
  }

  stage_memory_prediction run(int s) {
    stage_memory_prediction r;
    const int p = pp_.degree, k = pp_.micro_batches, w = std::min(p - s - 1, k);
    r.in_flight = std::min(k, p - s);
    r.state = R_.current;
    std::vector<std::vector<saved>> flight(static_cast<std::size_t>(k));
    auto fwd = [&](int m) {
      const double before = R_.current;
      forward(flight[std::size_t(m)]);
      r.kept = std::max(r.kept, R_.current - before);
    };
    for (int m = 0; m < w; ++m) fwd(m);
    for (int m = 0; m + w < k; ++m) {
      fwd(m + w);
      backward(flight[std::size_t(m)]);
    }
    for (int m = k - w; m < k; ++m) backward(flight[std::size_t(m)]);
    site_ = -1;
    update();
    r.replayed = std::max(R_.most, r.state);
    r.op = peak_site_ < 0 ? -1 : peak_site_ % int(n_);
    r.backward = peak_site_ >= int(n_);
    return r;
  }

 private:
  struct saved {
    std::vector<int> in, par;
    std::vector<bool> shard;
    int state = -1, out = -1, readers = 0;
    bool rebuilt = false;
  };
  const tensor_info& tensor(int t) const { return g_.tensors[std::size_t(t)]; }
  int producer(int t) const { return tensor(t).producer; }
  int producer(std::size_t j, std::size_t s) const { return producer(g_.ops[j].inputs[s].tensor); }
  double box(const placement& pl, double bytes) const { return double(pl.box[0].size(pl.rank)) * bytes; }
  double act_bytes(int t) const { return tensor(t).integer ? 4.0 : double(pr_.activation_bytes()); }
  int make(double b) {
    const int id = R_.make(b);
    if (R_.current >= R_.most) peak_site_ = site_;
    return id;
  }
  bool keeps_shard(std::size_t j, std::size_t s) const {
    const int p = producer(j, s);
    return here_[std::size_t(p)] && tensoropt::detail::kept_shard_ratio(g_, {p, int(j), g_.ops[j].inputs[s].tensor, int(s)},
                                                                        cfg_[std::size_t(p)], cfg_[j]) < 1;
  }
  bool segment_input(std::size_t j, std::size_t s) const {
    const auto& op = g_.ops[j];
    const int p = producer(j, s);
    const auto& po = g_.ops[std::size_t(p)];
    return here_[std::size_t(p)] && cfg_[j].recompute && cfg_[std::size_t(p)].recompute && po.kind != op_kind::input &&
           op.repeat_id >= 0 && tensoropt::detail::same_instance(po, op);
  }
  int fetch(const placement& from, int id, const placement& to, int t) {
    return from == to ? R_.share(id) : make(box(to, act_bytes(t)));
  }
  int param_copy(std::size_t j, std::size_t s) {
    const auto& m = g_.ops[j].params[s];
    return par_place_[std::size_t(m.tensor)] == par_[j][s] ? -1 : make(box(par_[j][s], pr_.weight_bytes));
  }

  void parameters() {
    par_.resize(n_);
    dpar_.resize(n_);
    par_place_.assign(g_.tensors.size(), {});
    opt_place_.assign(g_.tensors.size(), {});
    users_.assign(g_.tensors.size(), 0);
    for (std::size_t j = 0; j < n_; ++j)
      for (auto& m : g_.ops[j].params) {
        par_[j].push_back(place(g_.ops[j], m, tensor(m.tensor), cfg_[j], mesh_, false));
        dpar_[j].push_back(place(g_.ops[j], m, tensor(m.tensor), cfg_[j], mesh_, true));
      }
    shared_.assign(g_.tensors.size(), false);
    for (std::size_t t = 0; t < g_.tensors.size(); ++t) {  // held by another stage too
      std::vector<int> st;
      for (std::size_t j = 0; j < n_; ++j)
        for (auto& m : g_.ops[j].params)
          if (m.tensor == int(t) && std::find(st.begin(), st.end(), stage_of_op(pp_, j)) == st.end())
            st.push_back(stage_of_op(pp_, j));
      shared_[t] = st.size() > 1;
    }
    for (std::size_t j = 0; j < n_; ++j) {
      if (!here_[j]) continue;
      for (std::size_t s = 0; s < g_.ops[j].params.size(); ++s) {
        const int t = g_.ops[j].params[s].tensor;
        if (users_[std::size_t(t)]++ == 0) {
          par_place_[std::size_t(t)] = opt_place_[std::size_t(t)] = par_[j][s];
          if (cfg_[j].shard_optimizer) split_over_replicas(opt_place_[std::size_t(t)]);
          R_.current += box(par_[j][s], pr_.weight_bytes) + box(opt_place_[std::size_t(t)], pr_.optimizer_bytes);
        }
      }
    }
    grad_bufs_.assign(g_.tensors.size(), 0.0);
    for (std::size_t j = 0; j < n_; ++j)  // the gradient buffers (executor's ensure_grad_buffers)
      for (std::size_t s = 0; s < g_.ops[j].params.size() && here_[j]; ++s) {
        const int t = g_.ops[j].params[s].tensor;
        if (!sharded(t)) grad_bufs_[std::size_t(t)] += box(dpar_[j][s], pr_.grad_bytes);
        else if (first_user(t) == j) grad_bufs_[std::size_t(t)] = box(opt_place_[std::size_t(t)], pr_.grad_bytes);
      }
    for (double b : grad_bufs_) R_.current += b;
    R_.most = R_.current;
  }
  std::size_t first_user(int t) const {
    for (std::size_t j = 0; j < n_; ++j)
      for (auto& m : g_.ops[j].params)
        if (here_[j] && m.tensor == t) return j;
    return n_;
  }
  bool sharded(int t) const { return !(opt_place_[std::size_t(t)] == par_place_[std::size_t(t)]); }

  void forward(std::vector<saved>& S) {
    S.assign(n_, {});
    std::vector<int> act(g_.tensors.size(), -1), left(g_.tensors.size(), 0);
    for (std::size_t j = 0; j < n_; ++j)
      for (auto& m : g_.ops[j].inputs)
        if (here_[j]) ++left[std::size_t(m.tensor)];
    site_ = -1;
    for (const auto& x : cross_.in) {  // take_inputs
      int w = make(box(x.wire, act_bytes(x.tensor)));
      if (!(x.wire == x.recv)) {
        const int r = make(box(x.recv, act_bytes(x.tensor)));
        R_.drop(w);
        w = r;
      }
      act[std::size_t(x.tensor)] = w;
    }
    for (std::size_t j = 0; j < n_; ++j) {
      if (!here_[j]) continue;
      const auto& op = g_.ops[j];
      site_ = int(j);
      if (op.kind == op_kind::input) {
        act[std::size_t(op.output.tensor)] = make(box(out_[j], act_bytes(op.output.tensor)));
        continue;
      }
      auto& Sj = S[j];
      std::vector<int> src(op.inputs.size(), -1);
      for (std::size_t s = 0; s < op.inputs.size(); ++s) {
        const int t = op.inputs[s].tensor;
        Sj.in.push_back(fetch(out_[std::size_t(producer(t))], act[std::size_t(t)], in_[j][s], t));
        if (keeps_shard(j, s)) src[s] = R_.share(act[std::size_t(t)]);
        if (--left[std::size_t(t)] == 0) R_.drop(act[std::size_t(t)]);
      }
      for (std::size_t s = 0; s < op.params.size(); ++s) Sj.par.push_back(param_copy(j, s));
      const int y = make(box(out_[j], act_bytes(op.output.tensor)));
      Sj.state = make(state_[j]);
      if (op.kind == op_kind::softmax_xent) {  // the loss, gathered to read it
        int one = make(double(tensor(op.output.tensor).size()) * act_bytes(op.output.tensor));
        R_.drop(one);
      }
      if (cfg_[j].recompute) {
        R_.drop(Sj.state);
        for (auto& b : Sj.par) R_.drop(b);
        Sj.par.clear();
        for (std::size_t s = 0; s < op.inputs.size(); ++s)
          if (segment_input(j, s)) R_.drop(Sj.in[s]);
      } else
        for (std::size_t s = 0; s < op.inputs.size(); ++s)
          if (!tensoropt::detail::saves_input(op, int(s))) R_.drop(Sj.in[s]);
      Sj.shard.assign(op.inputs.size(), false);
      for (std::size_t s = 0; s < op.inputs.size(); ++s) {
        if (Sj.in[s] >= 0 && keeps_shard(j, s)) {
          R_.drop(Sj.in[s]);
          Sj.in[s] = R_.share(src[s]);
          Sj.shard[s] = true;
        }
        R_.drop(src[s]);
      }
      for (const auto& x : cross_.out)  // made: handed out in the wire layout
        if (x.tensor == op.output.tensor && !(x.wire == out_[j])) {
          int wb = make(box(x.wire, act_bytes(x.tensor)));
          R_.drop(wb);
        }
      act[std::size_t(op.output.tensor)] = y;
    }
    for (auto& a : act) R_.drop(a);
  }

  void regather(std::vector<saved>& S, std::size_t j) {
    for (std::size_t s = 0; s < S[j].shard.size(); ++s)
      if (S[j].shard[s] && S[j].in[s] >= 0) {
        const int x = make(box(in_[j][s], act_bytes(g_.ops[j].inputs[s].tensor)));
        R_.drop(S[j].in[s]);
        S[j].in[s] = x;
        S[j].shard[s] = false;
      }
  }
  int readers_of(std::size_t p) const {
    int r = 0;
    for (std::size_t j = p + 1; j < n_; ++j)
      for (std::size_t s = 0; s < g_.ops[j].inputs.size(); ++s)
        if (std::size_t(producer(j, s)) == p && segment_input(j, s)) ++r;
    return r;
  }
  int rebuilt_input(std::vector<saved>& S, std::size_t j, std::size_t s) {
    const auto q = std::size_t(producer(j, s));
    const int x = fetch(out_[q], rebuild(S, q), in_[j][s], g_.ops[j].inputs[s].tensor);
    if (--S[q].readers <= 0) R_.drop(S[q].out);
    return x;
  }
  int rebuild(std::vector<saved>& S, std::size_t p) {
    if (S[p].out >= 0) return S[p].out;
    regather(S, p);
    const auto& op = g_.ops[p];
    for (std::size_t s = 0; s < op.inputs.size(); ++s)
      if (S[p].in[s] < 0 && segment_input(p, s)) S[p].in[s] = rebuilt_input(S, p, s);
    if (S[p].par.empty())
      for (std::size_t s = 0; s < op.params.size(); ++s) S[p].par.push_back(param_copy(p, s));
    R_.drop(S[p].state);
    S[p].out = make(box(out_[p], act_bytes(op.output.tensor)));
    S[p].state = make(state_[p]);
    S[p].rebuilt = true;
    S[p].readers = readers_of(p);
    for (std::size_t s = 0; s < op.inputs.size(); ++s)
      if (!tensoropt::detail::saves_input(op, int(s))) R_.drop(S[p].in[s]);
    return S[p].out;
  }
  void clear(saved& Sj) {
    for (auto& b : Sj.in) R_.drop(b);
    for (auto& b : Sj.par) R_.drop(b);
    R_.drop(Sj.state);
    R_.drop(Sj.out);
    Sj = {};
  }

  void backward(std::vector<saved>& S) {
    std::vector<int> grad(g_.tensors.size(), -1);
    auto add = [&](int t, int b) {
      if (grad[std::size_t(t)] < 0) grad[std::size_t(t)] = b;
      else R_.drop(b);
    };
    for (std::size_t j = 0; j < n_; ++j)
      if (here_[j] && g_.ops[j].kind == op_kind::softmax_xent) grad[std::size_t(g_.ops[j].output.tensor)] = make(4);
    for (const auto& x : cross_.out) {  // take_gradients
      const auto& to = dout_[std::size_t(producer(x.tensor))];
      int w = make(box(x.wire, act_bytes(x.tensor)));
      if (!(x.wire == to)) {
        const int b = make(box(to, act_bytes(x.tensor)));
        R_.drop(w);
        w = b;
      }
      add(x.tensor, w);
    }
    for (std::size_t j = n_; j-- > 0;) {
      if (!here_[j]) continue;
      const auto& op = g_.ops[j];
      auto& Sj = S[j];
      int dy = grad[std::size_t(op.output.tensor)];
      grad[std::size_t(op.output.tensor)] = -1;
      site_ = int(n_ + j);
      if (op.kind == op_kind::input || dy < 0) {
        clear(Sj);
        R_.drop(dy);
        continue;
      }
      regather(S, j);
      if (cfg_[j].recompute && !Sj.rebuilt) {
        for (std::size_t s = 0; s < op.inputs.size(); ++s)
          if (Sj.in[s] < 0 && segment_input(j, s)) Sj.in[s] = rebuilt_input(S, j, s);
        for (std::size_t s = 0; s < op.params.size(); ++s) Sj.par.push_back(param_copy(j, s));
        Sj.state = make(state_[j]);
        int y = make(box(out_[j], act_bytes(op.output.tensor)));  // the re-run's output, unused
        R_.drop(y);
      }
      R_.drop(Sj.out);
      std::vector<int> din(op.inputs.size(), -1), dpar(op.params.size(), -1);
      for (std::size_t s = 0; s < op.inputs.size(); ++s)
        if (!tensor(op.inputs[s].tensor).integer) din[s] = make(box(in_[j][s], act_bytes(op.inputs[s].tensor)));
      for (std::size_t s = 0; s < op.params.size(); ++s) dpar[s] = make(box(dpar_[j][s], pr_.grad_bytes));
      clear(Sj);
      R_.drop(dy);
      for (std::size_t s = 0; s < op.inputs.size(); ++s) {
        const int t = op.inputs[s].tensor;
        const auto p = std::size_t(producer(t));
        if (tensor(t).integer || g_.ops[p].kind == op_kind::input) continue;
        int x = din[s];
        din[s] = -1;
        if (!(din_[j][s] == dout_[p])) {  // the gradient in the producer's layout: a new buffer
          const int b = make(box(dout_[p], act_bytes(t)));
          R_.drop(x);
          x = b;
        }
        add(t, x);
      }
      for (std::size_t s = 0; s < op.params.size(); ++s) {
        const int t = op.params[s].tensor;
        if (sharded(t)) {  // reduce-scattered into the shard
          int part = make(box(opt_place_[std::size_t(t)], pr_.grad_bytes));
          R_.drop(dpar[s]);
          R_.drop(part);
        }
        R_.drop(dpar[s]);
      }
      for (auto& b : din) R_.drop(b);
    }
    site_ = -1;
    for (const auto& x : cross_.in) {  // give_gradients: cut to the wire box
      if (grad[std::size_t(x.tensor)] >= 0 && !(x.recv == x.wire)) {
        int w = make(box(x.wire, act_bytes(x.tensor)));
        R_.drop(w);
      }
      R_.drop(grad[std::size_t(x.tensor)]);
    }
    for (auto& b : grad) R_.drop(b);
  }

  /// The gradient sync and update (executor's sync_and_update: each parameter's
  /// gradient buffers are released after its update and reallocated at the end).
  void update() {
    for (std::size_t t = 0; t < g_.tensors.size(); ++t) {
      if (users_[t] == 0) continue;
      const placement& op = opt_place_[t];
      const double gb = box(op, pr_.grad_bytes);
      const std::size_t u = first_user(int(t));
      const std::size_t slot = std::size_t(std::find_if(g_.ops[u].params.begin(), g_.ops[u].params.end(),
                                                        [&](auto& m) { return m.tensor == int(t); }) -
                                           g_.ops[u].params.begin());
      const bool moved = sharded(int(t)) || (users_[t] == 1 && dpar_[u][slot] == op);
      int g = moved ? -1 : make(gb);
      if (!moved)
        for (std::size_t j = 0; j < n_; ++j)
          for (std::size_t s = 0; s < g_.ops[j].params.size() && here_[j]; ++s)
            if (g_.ops[j].params[s].tensor == int(t)) {  // its part in the optimizer's layout; the accumulator goes
              int part = make(gb);
              R_.current -= box(dpar_[j][s], pr_.grad_bytes);
              R_.drop(part);
            }
      if (shared_[t]) {  // the whole summed gradient, exchanged with the other holders
        const double whole = double(tensor(int(t)).size()) * pr_.grad_bytes;
        int a = make(whole);
        if (!(box(op, 1) == double(tensor(int(t)).size()))) {
          int b = make(gb);
          R_.drop(b);
        }
        R_.drop(a);
      }
      if (sharded(int(t))) {
        int w = make(box(op, pr_.weight_bytes));
        int v = make(box(par_place_[t], pr_.weight_bytes));
        R_.drop(v);
        R_.drop(w);
      }
      R_.drop(g);
      if (moved) R_.current -= grad_bufs_[t];  // the accumulator was the gradient
    }
    for (double b : grad_bufs_) R_.current += b;
  }

  const op_graph& g_;
  const pipeline_plan& pp_;
  const std::vector<op_config>& cfg_;
  device_mesh mesh_;
  precision pr_;
  std::size_t n_;
  std::vector<bool> here_, shared_;
  stage_crossings cross_;
  std::vector<double> state_;
  std::vector<std::vector<placement>> in_, din_, par_, dpar_;
  std::vector<placement> out_, dout_, par_place_, opt_place_;
  std::vector<int> users_;
  std::vector<double> grad_bufs_;  ///< per parameter: its gradient buffers here
  tensoropt::detail::buffer_replay R_;
  int site_ = -1, peak_site_ = -1;
};
}  // namespace detail

/// The prediction for stage s of `pp` on graph `g` (the global-batch graph), with the
/// cluster `cl` of the whole plan and the planner's build options (their micro-batch
/// count is taken from the plan). Throws invalid_argument for a malformed plan.
inline stage_memory_prediction predicted_stage_peak(const op_graph& g, const pipeline_plan& pp, int s,
                                                    const cluster& cl, build_options o = {}) {
  if (const auto e = pipeline_plan_error(pp, g.ops.size()); !e.empty()) throw invalid_argument(e);
  if (s < 0 || s >= pp.degree)
    throw invalid_argument("stage " + std::to_string(s) + " of a " + std::to_string(pp.degree) + "-stage plan");
  o.micro_batches = pp.micro_batches;
  const op_graph mg = with_batch(g, g.batch / pp.micro_batches);
  cluster scl = cl;
  scl.mesh = stage_mesh(cl.mesh, pp.degree);
  return detail::stage_replay(mg, pp, s, scl, o).run(s);
}

}  // namespace tensoropt::runtime
