// The replay of one pipeline stage's buffers under 1F1B: what the runtime's stage
// executor (runtime/stage_executor.hpp) allocates and frees in one step, in its order,
// with the sizes of plan/stage_layout.hpp. plan/pipeline_peak.hpp describes what is
// modelled and reports the result.
//
// Micro-batches replayed. Stage s of p with k micro-batches runs w = min(p - s - 1, k)
// forwards, then k - w pairs (forward m + w, backward m), then w backwards. Every
// micro-batch allocates and frees the same buffers, so each pair starts from the same
// held set (the state and the kept buffers of w micro-batches) and reaches the same
// most; the warm-up and the cool-down do not depend on k once k > w. Replaying
// min(k, p - s) micro-batches (one pair when k > p - s - 1) therefore gives the peak of
// all k, and the peak's op and direction; only the rounding of the running sum can
// differ in its last bits (test/unit/plan_pipeline_peak_frontier_test.cpp holds it
// against the replay of all k). The replay costs O(min(k, p - s) x the stage's ops),
// not O(k x the model's ops).
#pragma once
#include <algorithm>
#include <vector>
#include "stage_layout.hpp"

namespace tensoropt {

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
class stage_replay : stage_layout {
 public:
  using stage_layout::stage_layout;

  /// Replays stage s; `micro_batches` > 0 replays that many instead of min(k, p - s)
  /// (the whole k, for tests).
  stage_memory_prediction run(int s, int micro_batches = 0) {
    stage_memory_prediction r;
    const int p = pp_.degree, k = micro_batches > 0 ? micro_batches : std::min(pp_.micro_batches, p - s);
    const int w = std::min(p - s - 1, k);
    r.in_flight = std::min(pp_.micro_batches, p - s);
    R_.current = state_bytes_;
    R_.most = R_.current;
    r.state = R_.current;
    act_.assign(g_.tensors.size(), -1);
    left_.assign(g_.tensors.size(), 0);
    for (std::size_t j : ops_) touched_.push_back(g_.ops[j].output.tensor);
    for (const auto& x : cross_.in) touched_.push_back(x.tensor);
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
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
  int make(double b) {
    const int id = R_.make(b);
    if (R_.current >= R_.most) peak_site_ = site_;
    return id;
  }
  /// Input s of op j, fetched from its producer's buffer `id`: shared when the layouts are equal.
  int fetch(std::size_t j, std::size_t s, int id) {
    return same_in_[j][s] ? R_.share(id) : make(box(in_[j][s], act_bytes(g_.ops[j].inputs[s].tensor)));
  }
  int param_copy(std::size_t j, std::size_t s) {
    return same_par_[j][s] ? -1 : make(box(par_[j][s], pr_.weight_bytes));
  }

  void forward(std::vector<saved>& S) {
    S.assign(ops_.size(), {});
    auto& act = act_;
    for (std::size_t j : ops_)
      for (auto& m : g_.ops[j].inputs) ++left_[std::size_t(m.tensor)];
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
    for (std::size_t j : ops_) {
      const auto& op = g_.ops[j];
      site_ = int(j);
      if (op.kind == op_kind::input) {
        act[std::size_t(op.output.tensor)] = make(box(out_[j], act_bytes(op.output.tensor)));
        continue;
      }
      auto& Sj = at(S, j);
      std::vector<int> src(op.inputs.size(), -1);
      for (std::size_t s = 0; s < op.inputs.size(); ++s) {
        const int t = op.inputs[s].tensor;
        Sj.in.push_back(fetch(j, s, act[std::size_t(t)]));
        if (keeps_shard(j, s)) src[s] = R_.share(act[std::size_t(t)]);
        if (--left_[std::size_t(t)] == 0) R_.drop(act[std::size_t(t)]);
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
          if (!detail::saves_input(op, int(s))) R_.drop(Sj.in[s]);
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
        if (x.tensor == op.output.tensor && !equal(&x.wire, out_[j])) {
          int wb = make(box(x.wire, act_bytes(x.tensor)));
          R_.drop(wb);
        }
      act[std::size_t(op.output.tensor)] = y;
    }
    for (int t : touched_) R_.drop(act[std::size_t(t)]);
  }

  void regather(std::vector<saved>& S, std::size_t j) {
    auto& Sj = at(S, j);
    for (std::size_t s = 0; s < Sj.shard.size(); ++s)
      if (Sj.shard[s] && Sj.in[s] >= 0) {
        const int x = make(box(in_[j][s], act_bytes(g_.ops[j].inputs[s].tensor)));
        R_.drop(Sj.in[s]);
        Sj.in[s] = x;
        Sj.shard[s] = false;
      }
  }
  int rebuilt_input(std::vector<saved>& S, std::size_t j, std::size_t s) {
    const auto q = std::size_t(producer(j, s));
    const int x = fetch(j, s, rebuild(S, q));
    if (--at(S, q).readers <= 0) R_.drop(at(S, q).out);
    return x;
  }
  int rebuild(std::vector<saved>& S, std::size_t p) {
    if (at(S, p).out >= 0) return at(S, p).out;
    regather(S, p);
    const auto& op = g_.ops[p];
    for (std::size_t s = 0; s < op.inputs.size(); ++s)
      if (at(S, p).in[s] < 0 && segment_input(p, s)) {
        const int x = rebuilt_input(S, p, s);
        at(S, p).in[s] = x;
      }
    auto& Sp = at(S, p);
    if (Sp.par.empty())
      for (std::size_t s = 0; s < op.params.size(); ++s) Sp.par.push_back(param_copy(p, s));
    R_.drop(Sp.state);
    Sp.out = make(box(out_[p], act_bytes(op.output.tensor)));
    Sp.state = make(state_[p]);
    Sp.rebuilt = true;
    Sp.readers = readers_[p];
    for (std::size_t s = 0; s < op.inputs.size(); ++s)
      if (!detail::saves_input(op, int(s))) R_.drop(Sp.in[s]);
    return Sp.out;
  }
  void clear(saved& Sj) {
    for (auto& b : Sj.in) R_.drop(b);
    for (auto& b : Sj.par) R_.drop(b);
    R_.drop(Sj.state);
    R_.drop(Sj.out);
    Sj = {};
  }

  void backward(std::vector<saved>& S) {
    auto& grad = act_;  // empty between micro-batches: every forward drops what it made
    auto add = [&](int t, int b) {
      if (grad[std::size_t(t)] < 0) grad[std::size_t(t)] = b;
      else R_.drop(b);
    };
    for (std::size_t j : ops_)
      if (g_.ops[j].kind == op_kind::softmax_xent) grad[std::size_t(g_.ops[j].output.tensor)] = make(4);
    for (const auto& x : cross_.out) {  // take_gradients
      const placement* to = dout_[std::size_t(producer(x.tensor))];
      int w = make(box(x.wire, act_bytes(x.tensor)));
      if (!equal(&x.wire, to)) {
        const int b = make(box(to, act_bytes(x.tensor)));
        R_.drop(w);
        w = b;
      }
      add(x.tensor, w);
    }
    for (std::size_t i = ops_.size(); i-- > 0;) {
      const std::size_t j = ops_[i];
      const auto& op = g_.ops[j];
      auto& Sj = at(S, j);
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
          if (Sj.in[s] < 0 && segment_input(j, s)) {
            const int x = rebuilt_input(S, j, s);
            Sj.in[s] = x;
          }
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
        if (!same_grad_[j][s]) {  // the gradient in the producer's layout: a new buffer
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
      if (grad[std::size_t(x.tensor)] >= 0 && !(x.wire == x.recv)) {
        int w = make(box(x.wire, act_bytes(x.tensor)));
        R_.drop(w);
      }
      R_.drop(grad[std::size_t(x.tensor)]);
    }
    for (int t : touched_) R_.drop(grad[std::size_t(t)]);
  }

  /// The gradient sync and update (executor's sync_and_update: each parameter's
  /// gradient buffers are released after its update and reallocated at the end).
  void update() {
    for (std::size_t t = 0; t < g_.tensors.size(); ++t) {
      if (users_[t] == 0) continue;
      const placement& op = *opt_place_[t];
      const double gb = box(op, pr_.grad_bytes);
      const std::size_t u = first_user(int(t));
      const std::size_t slot = std::size_t(std::find_if(g_.ops[u].params.begin(), g_.ops[u].params.end(),
                                                        [&](auto& m) { return m.tensor == int(t); }) -
                                           g_.ops[u].params.begin());
      const bool moved = sharded(int(t)) || (users_[t] == 1 && equal(dpar_[u][slot], &op));
      int g = moved ? -1 : make(gb);
      if (!moved)
        for (std::size_t j : ops_)
          for (std::size_t s = 0; s < g_.ops[j].params.size(); ++s)
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

  detail::buffer_replay R_;
  std::vector<int> act_, left_;  ///< per tensor: its live buffer (activation, then gradient); readers left
  std::vector<int> touched_;     ///< the tensors made or received here, ascending
  int site_ = -1, peak_site_ = -1;
};

}  // namespace detail
}  // namespace tensoropt
