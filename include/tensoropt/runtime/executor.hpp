// The SPMD executor: one device's share of a training step of an op graph under a
// plan (one op_config per op + the micro-batch count), on a communicator. What the
// device holds (placements, parameters, gradient buffers, optimizer state) and the
// work around the op loop (gradient synchronization and update, checks) are
// executor_state.hpp's; this header runs the ops.
//
// Forward, per op: redistribute each input (and param) from where it lives into the
// layout the op's config needs, run the local kernel, keep what backward needs (only
// the inputs under recompute, and not even those that a recomputed producer of the
// same layer can rebuild: backward re-runs such segments from their first input,
// keeping of each rebuilt op what its backward reads and releasing its output once
// its consumers took it; an input the edge all-gathered is kept as the producer's
// shard and re-gathered in backward, Megatron's sequence-parallel rule, as the cost
// model assumes). A producer's output is released by its last reader's fetch (not
// held through the kernel). Backward mirrors it: the output gradient arrives in the
// op's output layout (replicated over the dims it reduced), the kernel writes partial
// input and param gradients, which are reduced into the producer's layout; the param
// gradients go to executor_state's buffers.
//
// The executor owns a backend chosen at run time (backend.hpp: "cpu" or "cuda")
// and the data plane it makes; every kernel, element operation, allocation and
// transfer goes through them, so the same executor runs on host or device buffers.
//
// A pipeline stage (runtime/stage_executor.hpp) is an executor over a range of ops
// (`op_range`): it places and runs only those ops (and the input ops they read) and
// keeps only their parameters; the tensors that cross the range's edges come and go
// through the protected hooks below (take_inputs, made, take_gradients,
// give_gradients, and executor_state's before_update), which do nothing here. The
// whole range (the default) runs exactly the code path of an ordinary plan.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include "executor_state.hpp"

namespace tensoropt::runtime {

class executor : public executor_state {
 public:
  /// Runs on the backend `bo` names (default: the CPU backend, which the program
  /// must include: <tensoropt/runtime/cpu_backend.hpp> or <tensoropt/runtime.hpp>).
  /// Throws invalid_argument when the plan does not belong to the graph, the
  /// communicator's size is not the plan's device count, or the backend is not in
  /// this program.
  executor(const op_graph& g, training_plan plan, communicator& comm, optimizer_options opt = {},
           std::uint64_t seed = 1234, const backend_options& bo = {})
      : executor(g, std::move(plan), comm, make_backend(bo, comm), opt, seed) {}
  /// Runs on backend `be` (this device's, made for rank comm.rank()).
  executor(const op_graph& g, training_plan plan, communicator& comm, std::unique_ptr<backend> be,
           optimizer_options opt = {}, std::uint64_t seed = 1234)
      : executor(g, std::move(plan), op_range{}, comm, std::move(be), opt, seed) {}

  /// One training step on the global batch `b`: forward and backward over the
  /// micro-batches, gradient synchronization, optimizer update. Returns the loss
  /// (the same on every device). All devices must call it together.
  float step(const batch& b) {
    if (staged())
      throw invalid_argument("executor: ops [" + std::to_string(range_.begin) + ", " + std::to_string(range_.end) +
                             ") are a pipeline stage; step it with runtime::pipeline_stage");
    check_batch(b);
    be_->bind();
    be_->reset_peak();
    double loss = 0;
    for (int m = 0; m < plan_.micro_batches; ++m) loss += micro_step(b, m);
    be_->memory().enter(2 * int(graph_.ops.size()));
    sync_and_update();
    be_->synchronize();
    be_->memory().enter(-1);
    ++step_;
    return float(loss / plan_.micro_batches);
  }

 protected:
  /// Runs only the ops of `ops` (a pipeline stage; see the header comment).
  executor(const op_graph& g, training_plan plan, op_range ops, communicator& comm, std::unique_ptr<backend> be,
           optimizer_options opt = {}, std::uint64_t seed = 1234)
      : executor_state(g, std::move(plan), ops, comm, std::move(be), opt, seed) {}

  // ---- a pipeline stage's hooks (stage_executor.hpp); nothing happens here ----------
  /// Before a micro-batch's forward: puts the received boundary inputs into `act`.
  virtual void take_inputs(std::vector<std::shared_ptr<const buffer>>&) {}
  /// Op output tensor t was made (this device's part `y`, in placement `pl`).
  virtual void made(int, const buffer&, const placement&) {}
  /// Before a micro-batch's backward: adds the received boundary output gradients to `grad`.
  virtual void take_gradients(std::vector<std::unique_ptr<buffer>>&) {}
  /// After it: sends the gradients of the boundary inputs (in `grad`).
  virtual void give_gradients(std::vector<std::unique_ptr<buffer>>&) {}
  /// Whether op j keeps the producer's shard of input s (a pure all-gather edge) and
  /// re-gathers it in backward, as the cost model's edge memory assumes.
  bool keeps_shard(int j, std::size_t s) const {
    const int t = graph_.ops[std::size_t(j)].inputs[s].tensor;
    const int p = graph_.tensors[std::size_t(t)].producer;
    if (!runs(std::size_t(p))) return false;  // a boundary input arrives whole
    return tensoropt::detail::kept_shard_ratio(graph_, {p, j, t, int(s)}, plan_.configs[std::size_t(p)],
                                               plan_.configs[std::size_t(j)]) < 1;
  }
  void regather(saved_op& S, int j) {
    for (std::size_t s = 0; s < S.shard.size(); ++s)
      if (S.shard[s] && S.in[s]) {
        const int p = graph_.tensors[std::size_t(graph_.ops[std::size_t(j)].inputs[s].tensor)].producer;
        S.in[s] = fetch(plans_[std::size_t(p)].out, S.in[s], plans_[std::size_t(j)].in[s]);
        S.shard[s] = false;
      }
  }

  /// Whether input `s` of op `j` is dropped after forward and rebuilt in backward:
  /// j and its producer are both recomputed and in the same repeat instance (layer),
  /// as the cost model's recompute checkpoints assume.
  bool segment_input(int j, std::size_t s) const {
    const auto& op = graph_.ops[std::size_t(j)];
    const int p = graph_.tensors[std::size_t(op.inputs[s].tensor)].producer;
    const auto& po = graph_.ops[std::size_t(p)];
    return runs(std::size_t(p)) && plan_.configs[std::size_t(j)].recompute && plan_.configs[std::size_t(p)].recompute &&
           po.kind != op_kind::input && op.repeat_id >= 0 && po.repeat_id == op.repeat_id &&
           po.repeat_index == op.repeat_index;
  }

  /// Recomputed ops reading op p's output as a dropped segment input (see rebuild).
  int segment_readers(int p) const {
    int r = 0;
    for (std::size_t j = std::size_t(p) + 1; j < graph_.ops.size(); ++j)
      for (std::size_t s = 0; s < graph_.ops[j].inputs.size(); ++s)
        if (graph_.tensors[std::size_t(graph_.ops[j].inputs[s].tensor)].producer == p && segment_input(int(j), s)) ++r;
    return r;
  }
  /// Input s of op j, dropped after forward as a segment input, rebuilt from its
  /// producer q; q's rebuilt output is released once its last such reader took it,
  /// so a rebuilt segment holds its ops' saved state and inputs, not their outputs.
  std::shared_ptr<const buffer> rebuilt_input(std::vector<saved_op>& saved, int j, std::size_t s, int m) {
    const int q = graph_.tensors[std::size_t(graph_.ops[std::size_t(j)].inputs[s].tensor)].producer;
    auto x = fetch(plans_[std::size_t(q)].out, rebuild(saved, q, m), plans_[std::size_t(j)].in[s]);
    auto& Q = saved[std::size_t(q)];
    if (--Q.readers <= 0) Q.out.reset();
    return x;
  }

  /// Re-runs the forward of recomputed op `p` (and, first, of the recomputed
  /// producers of its dropped inputs); keeps its state (and the inputs its backward
  /// reads) for its backward and returns its output.
  std::shared_ptr<const buffer> rebuild(std::vector<saved_op>& saved, int p, int m) {
    auto& S = saved[std::size_t(p)];
    if (S.out) return S.out;
    regather(S, p);
    const auto& op = graph_.ops[std::size_t(p)];
    for (std::size_t s = 0; s < op.inputs.size(); ++s)
      if (!S.in[s] && segment_input(p, s)) S.in[s] = rebuilt_input(saved, p, s, m);
    if (S.par.empty())
      for (std::size_t s = 0; s < op.params.size(); ++s) S.par.push_back(fetch_param(p, int(s)));
    auto c = context(p, m);
    auto in = raw(S.in), par = raw(S.par);
    clear_state(S);
    const auto t0 = std::chrono::steady_clock::now();
    S.out = std::make_shared<const buffer>(be_->kernel_of(op.kind).forward(c, in, par, S.state));
    kernel_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    charge_ints(S);
    S.rebuilt = true;
    S.readers = segment_readers(p);
    for (std::size_t s = 0; s < S.in.size(); ++s)
      if (!backward_reads_input(op.kind, s)) S.in[s].reset();
    return S.out;
  }

  std::shared_ptr<const buffer> fetch(const placement& from, const std::shared_ptr<const buffer>& data,
                                      const placement& to) {
    if (from == to) return data;
    return std::make_shared<const buffer>(redistribute(*dp_, from, *data, to, *be_));
  }
  std::shared_ptr<const buffer> fetch_param(int j, int s) {
    const auto& m = graph_.ops[std::size_t(j)].params[std::size_t(s)];
    auto& P = params_[std::size_t(m.tensor)];
    const auto& want = plans_[std::size_t(j)].par[std::size_t(s)];
    if (P.place == want) return std::shared_ptr<const buffer>(&P.value, [](const buffer*) {});
    return std::make_shared<const buffer>(redistribute(*dp_, P.place, P.value, want, *be_));
  }

  /// This device's shard of micro-batch `m` of input op `j`'s tensor.
  std::shared_ptr<const buffer> feed(const batch& b, int input_no, int j, int m) {
    const auto& op = graph_.ops[std::size_t(j)];
    const auto& t = graph_.tensors[std::size_t(op.output.tensor)];
    const auto& full = full_.tensors[std::size_t(op.output.tensor)];
    shard_box mine = plans_[std::size_t(j)].out.box[me()];
    shard_box whole;
    whole.len.fill(1);
    for (int a = 0; a < t.rank; ++a) whole.len[a] = full.extents[a];
    if (plan_.micro_batches > 1) {
      int axis = -1;
      for (int a = 0; a < t.rank && axis < 0; ++a)
        if (op.output.dim[a] >= 0 && op.dims[std::size_t(op.output.dim[a])].batch) axis = a;
      if (axis < 0)
        throw invalid_argument("input '" + op.name + "' has no batch axis to split into micro-batches");
      mine.lo[axis] += m * t.extents[axis];
    }
    std::vector<float> host(std::size_t(mine.size(t.rank)));
    detail::copy_region(b[std::size_t(input_no)].data(), whole, host.data(), mine, mine.lo, mine.len, t.rank, false);
    // integer ids stay exact fp32 values whatever the compute dtype
    return std::make_shared<const buffer>(be_->upload(host, t.integer ? buffer_role::state : buffer_role::activation));
  }

  op_context context(int j, int m) {
    op_context c(graph_, j, plan_.configs[std::size_t(j)], plan_.mesh, comm_, *be_);
    c.dp = dp_.get();
    c.seed = seed_;
    c.step = std::uint64_t(step_);
    c.micro = m;
    return c;
  }

  static std::vector<const buffer*> raw(const std::vector<std::shared_ptr<const buffer>>& v) {
    std::vector<const buffer*> r;
    for (auto& p : v) r.push_back(p.get());
    return r;
  }

  double micro_step(const batch& b, int m) {
    std::vector<saved_op> saved;
    const double loss = forward(b, m, saved);
    backward(saved, m);
    return loss;
  }

  /// Forward of micro-batch m.
  double forward(const batch& b, int m, std::vector<saved_op>& saved) {
    const int n = int(graph_.ops.size());
    std::vector<std::shared_ptr<const buffer>> act(graph_.tensors.size());
    std::vector<int> left = consumers_;
    saved.clear();
    saved.resize(static_cast<std::size_t>(n));
    double loss = 0;
    take_inputs(act);
    for (int j = 0; j < n; ++j) {
      const auto& op = graph_.ops[std::size_t(j)];
      const auto& P = plans_[std::size_t(j)];
      if (!runs(std::size_t(j))) continue;
      be_->memory().enter(j);
      if (op.kind == op_kind::input) {
        act[std::size_t(op.output.tensor)] = feed(b, input_no_[std::size_t(j)], j, m);
        continue;
      }
      auto& S = saved[std::size_t(j)];
      std::vector<std::shared_ptr<const buffer>> src;
      for (std::size_t s = 0; s < op.inputs.size(); ++s) {
        const int t = op.inputs[s].tensor;
        const int p = graph_.tensors[std::size_t(t)].producer;
        S.in.push_back(fetch(plans_[std::size_t(p)].out, act[std::size_t(t)], P.in[s]));
        // the producer's buffer outlives the fetch only as a kept shard
        src.push_back(keeps_shard(j, s) ? act[std::size_t(t)] : nullptr);
        if (--left[std::size_t(t)] == 0) act[std::size_t(t)].reset();
      }
      for (std::size_t s = 0; s < op.params.size(); ++s) S.par.push_back(fetch_param(j, int(s)));
      auto c = context(j, m);
      auto k = be_->kernel_of(op.kind);
      auto in = raw(S.in), par = raw(S.par);
      const auto t0 = std::chrono::steady_clock::now();
      buffer y = k.forward(c, in, par, S.state);
      kernel_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      charge_ints(S);
      if (plan_.configs[std::size_t(j)].recompute) {
        clear_state(S);
        S.par.clear();
        for (std::size_t s = 0; s < S.in.size(); ++s)
          if (segment_input(j, s)) S.in[s].reset();
      } else
        for (std::size_t s = 0; s < S.in.size(); ++s)
          if (!backward_reads_input(op.kind, s)) S.in[s].reset();
      S.shard.assign(S.in.size(), false);
      for (std::size_t s = 0; s < S.in.size(); ++s)
        if (S.in[s] && keeps_shard(j, s)) {
          S.in[s] = std::move(src[s]);  // keep the producer's shard; backward re-gathers it
          S.shard[s] = true;
        }
      src.clear();
      if (j == loss_op_) {
        const placement one = replicated(graph_.tensors[std::size_t(op.output.tensor)], int(plan_.mesh.devices()));
        loss = be_->download(redistribute(*dp_, P.out, y, one, *be_))[0];
      }
      made(op.output.tensor, y, P.out);
      act[std::size_t(op.output.tensor)] = std::make_shared<const buffer>(std::move(y));
    }
    act.clear();
    return loss;
  }

  /// Backward of micro-batch m.
  void backward(std::vector<saved_op>& saved, int m) {
    const int n = int(graph_.ops.size());
    std::vector<std::unique_ptr<buffer>> grad(graph_.tensors.size());
    if (loss_op_ >= 0) {
      const float dl = 1.f / float(plan_.micro_batches);
      auto seed = std::make_unique<buffer>(be_->upload(std::span(&dl, 1), buffer_role::state));  // fp32
      grad[std::size_t(graph_.ops[std::size_t(loss_op_)].output.tensor)] = std::move(seed);
    }
    take_gradients(grad);
    for (int j = n - 1; j >= 0; --j) {
      const auto& op = graph_.ops[std::size_t(j)];
      auto& S = saved[std::size_t(j)];
      if (!runs(std::size_t(j))) continue;
      auto dy = std::move(grad[std::size_t(op.output.tensor)]);
      be_->memory().enter(n + j);
      if (op.kind == op_kind::input || !dy) {
        clear_state(S);
        S = {};
        continue;
      }
      const auto& P = plans_[std::size_t(j)];
      const auto& P_op = P;
      auto c = context(j, m);
      auto k = be_->kernel_of(op.kind);
      regather(S, j);
      if (plan_.configs[std::size_t(j)].recompute && !S.rebuilt) {
        for (std::size_t s = 0; s < op.inputs.size(); ++s)
          if (!S.in[s] && segment_input(j, s)) S.in[s] = rebuilt_input(saved, j, s, m);
        for (std::size_t s = 0; s < op.params.size(); ++s) S.par.push_back(fetch_param(j, int(s)));
        auto in = raw(S.in), par = raw(S.par);
        const auto t0 = std::chrono::steady_clock::now();
        k.forward(c, in, par, S.state);
        kernel_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        charge_ints(S);
      }
      S.out.reset();
      std::vector<buffer> din, dpar;
      for (auto& mp : op.inputs)
        din.push_back(graph_.tensors[std::size_t(mp.tensor)].integer ? buffer{}
                                                                       : be_->allocate(std::size_t(c.local_size(mp))));
      for (auto& mp : op.params) dpar.push_back(be_->allocate(std::size_t(c.local_size(mp)), buffer_role::gradient));
      auto in = raw(S.in), par = raw(S.par);
      const auto t0 = std::chrono::steady_clock::now();
      k.backward(c, in, par, S.state, *dy, din, dpar);
      kernel_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      clear_state(S);
      S = {};
      dy.reset();
      for (std::size_t s = 0; s < op.inputs.size(); ++s) {
        const int t = op.inputs[s].tensor;
        const int p = graph_.tensors[std::size_t(t)].producer;
        if (graph_.tensors[std::size_t(t)].integer || graph_.ops[std::size_t(p)].kind == op_kind::input) continue;
        // identical layouts: hand the buffer over (redistribute would copy it)
        buffer g = P.din[s] == plans_[std::size_t(p)].dout
                       ? std::move(din[s])
                       : redistribute(*dp_, P.din[s], din[s], plans_[std::size_t(p)].dout, *be_);
        din[s] = {};
        auto& acc = grad[std::size_t(t)];
        if (!acc) acc = std::make_unique<buffer>(std::move(g));
        else be_->accumulate(*acc, g);
      }
      for (std::size_t s = 0; s < op.params.size(); ++s) {
        auto& P = params_[std::size_t(op.params[s].tensor)];
        if (!(P.opt_place == P.place)) {  // ZeRO: reduce-scatter now, keep only the shard
          buffer part = redistribute(*dp_, P_op.dpar[s], dpar[s], P.opt_place, *be_);
          dpar[s] = {};
          if (P.grad.size() == 0) P.grad = std::move(part);
          else be_->accumulate(P.grad, part);
          continue;
        }
        auto& acc = pacc_[std::size_t(j)][s];
        if (acc.size() == 0) acc = std::move(dpar[s]);
        else be_->accumulate(acc, dpar[s]);
      }
    }
    give_gradients(grad);
  }
};

}  // namespace tensoropt::runtime
