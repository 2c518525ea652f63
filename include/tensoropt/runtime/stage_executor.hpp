// One device's share of a pipeline stage: the SPMD executor (executor.hpp) over the
// stage's ops, stepped one micro-batch at a time by runtime/pipeline.hpp, with the
// tensors that cross the stage's edges in the layouts of stage_boundary.hpp.
//
// The executor runs the stage's ops as it runs a whole graph; this class fills its
// hooks:
//  - forward: each received input arrives as this device's box of the wire layout W
//    and is moved into the received layout R inside the stage (executor.hpp's
//    consumers then fetch it from R as from any producer); each output another stage
//    reads is moved from the producer's layout into that crossing's W and handed out;
//  - backward: each output's gradient share (W, one per reading stage, summed in
//    stage order) is moved into the producer's gradient layout and added; each
//    input's gradient, summed in R, is cut to W's box and handed out;
//  - update: a parameter another stage also holds (GPT's tied token table) has its
//    summed gradient exchanged whole through `set_shared_gradient_hook`.
// Micro-batches in flight keep what their backward needs until backward_micro runs
// (1F1B holds at most min(k, p - s) of them on stage s).
#pragma once
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "executor.hpp"
#include "stage_boundary.hpp"

namespace tensoropt::runtime {

class stage_executor final : public executor {
 public:
  /// Runs the ops of `ops` of `g` under `plan` (a plan of the stage's mesh) on the
  /// stage's communicator. Until set_crossings, every crossing travels whole.
  stage_executor(const op_graph& g, training_plan plan, op_range ops, communicator& comm, std::unique_ptr<backend> be,
                 optimizer_options opt = {}, std::uint64_t seed = 1234)
      : executor(g, std::move(plan), ops, comm, std::move(be), opt, seed) {
    stage_crossings c;
    for (int t : bin_) c.in.push_back(whole(t));
    for (int t : bout_) c.out.push_back(whole(t));
    set_crossings(std::move(c));
  }

  /// The ops this executor runs.
  const op_range& range() const { return range_; }
  /// The graph at the micro-batch size (the shapes of the crossings).
  const op_graph& micro_graph() const { return graph_; }
  /// The tensors this stage receives and sends, with their layouts.
  const stage_crossings& crossings() const { return cross_; }
  /// Sets the crossings' layouts (stage_boundary.hpp's crossings_of). Throws
  /// invalid_argument when they are not this stage's boundary tensors.
  void set_crossings(stage_crossings c) {
    const auto devices = std::size_t(comm_.size());
    auto bad = [&](const std::string& why) { throw invalid_argument("stage executor: the crossings " + why); };
    if (c.in.size() != bin_.size()) bad("list " + std::to_string(c.in.size()) + " inputs, the stage reads " + std::to_string(bin_.size()));
    for (std::size_t i = 0; i < c.in.size(); ++i)
      if (c.in[i].tensor != bin_[i]) bad("do not list the stage's inputs in tensor order");
    for (int t : bout_)
      if (std::none_of(c.out.begin(), c.out.end(), [&](const crossing& x) { return x.tensor == t; }))
        bad("send '" + graph_.tensors[std::size_t(t)].name + "' to no stage");
    for (const auto& x : c.out)
      if (std::find(bout_.begin(), bout_.end(), x.tensor) == bout_.end()) bad("send a tensor the stage does not make");
    for (const auto* list : {&c.in, &c.out})
      for (const auto& x : *list)
        if (x.recv.box.size() != devices || x.wire.box.size() != devices) bad("are for another device count");
    for (const auto& x : c.in) {  // the producer (another stage's op) hands its output over in R
      auto& P = plans_[std::size_t(graph_.tensors[std::size_t(x.tensor)].producer)];
      P.out = P.dout = x.recv;
    }
    cross_ = std::move(c);
  }

  /// Starts a step on global batch `b` (drops what a failed step left in flight).
  void begin_step(const batch& b) {
    inflight_.clear();
    check_batch(b);
    be_->bind();
    be_->reset_peak();
  }
  /// Forward of micro-batch m: `in[i]` is this device's box (of the wire layout) of
  /// crossings().in[i]; returns this micro-batch's loss (0 without the loss op) and
  /// fills `out[i]` with this device's box of crossings().out[i]. Keeps what
  /// backward needs.
  double forward_micro(const batch& b, int m, const std::vector<std::vector<float>>& in,
                       std::vector<std::vector<float>>& out) {
    if (in.size() != cross_.in.size())
      throw invalid_argument("forward_micro: " + std::to_string(in.size()) + " boundary inputs given, the stage reads " +
                             std::to_string(cross_.in.size()));
    in_ = &in;
    out_ = &out;
    out.assign(cross_.out.size(), {});
    std::vector<saved_op> saved;
    const double loss = forward(b, m, saved);
    inflight_.emplace_back(m, std::move(saved));
    return loss;
  }
  /// Backward of micro-batch m (after its forward_micro): `dout[i]` is this device's
  /// box of the gradient of crossings().out[i]; fills `din[i]` with that of
  /// crossings().in[i].
  void backward_micro(int m, const std::vector<std::vector<float>>& dout, std::vector<std::vector<float>>& din) {
    if (dout.size() != cross_.out.size())
      throw invalid_argument("backward_micro: " + std::to_string(dout.size()) +
                             " boundary gradients given, the stage sends " + std::to_string(cross_.out.size()));
    auto it = std::find_if(inflight_.begin(), inflight_.end(), [&](const auto& e) { return e.first == m; });
    if (it == inflight_.end())
      throw invalid_argument("backward of micro-batch " + std::to_string(m) + " before its forward");
    auto saved = std::move(it->second);
    inflight_.erase(it);
    dout_ = &dout;
    din_ = &din;
    din.assign(cross_.in.size(), {});
    backward(saved, m);
  }
  /// Gradient synchronization and the update; ends the step.
  void finish_step() {
    be_->memory().enter(2 * int(graph_.ops.size()));
    sync_and_update();
    be_->synchronize();
    be_->memory().enter(-1);
    ++step_;
  }
  /// Called in finish_step with the whole, summed gradient of each parameter of
  /// `tensors` (those another stage also holds) before its update; may change it.
  void set_shared_gradient_hook(std::vector<int> tensors, std::function<void(int, std::vector<float>&)> f) {
    shared_ = std::move(tensors);
    shared_hook_ = std::move(f);
  }

 private:
  crossing whole(int t) const {
    crossing x;
    x.tensor = t;
    x.recv = x.wire = replicated(graph_.tensors[std::size_t(t)], comm_.size());
    return x;
  }
  /// This device's box of `pl`, uploaded from `host` (checked against its size).
  buffer upload_box(const std::vector<float>& host, const placement& pl, int t) {
    const auto& ti = graph_.tensors[std::size_t(t)];
    const auto want = std::size_t(pl.box[me()].size(ti.rank));
    if (host.size() != want)
      throw invalid_argument("tensor '" + ti.name + "' arrived with " + std::to_string(host.size()) +
                             " values, this device's share is " + std::to_string(want));
    return be_->upload(host, buffer_role::activation);
  }
  std::vector<float> download_as(const buffer& data, const placement& from, const placement& to) {
    if (from == to) return be_->download(data);
    return be_->download(redistribute(*dp_, from, data, to, *be_));
  }

  void take_inputs(std::vector<std::shared_ptr<const buffer>>& act) override {
    for (std::size_t i = 0; i < cross_.in.size(); ++i) {
      const auto& x = cross_.in[i];
      buffer w = upload_box((*in_)[i], x.wire, x.tensor);
      act[std::size_t(x.tensor)] = std::make_shared<const buffer>(
          x.wire == x.recv ? std::move(w) : redistribute(*dp_, x.wire, w, x.recv, *be_));
    }
  }
  void made(int t, const buffer& y, const placement& pl) override {
    for (std::size_t i = 0; i < cross_.out.size(); ++i)
      if (cross_.out[i].tensor == t) (*out_)[i] = download_as(y, pl, cross_.out[i].wire);
  }
  void take_gradients(std::vector<std::unique_ptr<buffer>>& grad) override {
    for (std::size_t i = 0; i < cross_.out.size(); ++i) {
      const auto& x = cross_.out[i];
      const placement& to = plans_[std::size_t(graph_.tensors[std::size_t(x.tensor)].producer)].dout;
      buffer w = upload_box((*dout_)[i], x.wire, x.tensor);
      buffer g = x.wire == to ? std::move(w) : redistribute(*dp_, x.wire, w, to, *be_);
      auto& acc = grad[std::size_t(x.tensor)];
      if (!acc) acc = std::make_unique<buffer>(std::move(g));
      else be_->accumulate(*acc, g);
    }
  }
  void give_gradients(std::vector<std::unique_ptr<buffer>>& grad) override {
    for (std::size_t i = 0; i < cross_.in.size(); ++i) {
      const auto& x = cross_.in[i];
      if (grad[std::size_t(x.tensor)]) (*din_)[i] = download_as(*grad[std::size_t(x.tensor)], x.recv, x.wire);
      else  // not differentiated here (an integer tensor)
        (*din_)[i].assign(std::size_t(x.wire.box[me()].size(graph_.tensors[std::size_t(x.tensor)].rank)), 0.f);
      grad[std::size_t(x.tensor)].reset();
    }
  }
  void before_update(int t, buffer& g, const placement& pl) override {
    if (std::find(shared_.begin(), shared_.end(), t) == shared_.end()) return;
    const placement full = replicated(graph_.tensors[std::size_t(t)], comm_.size());
    std::vector<float> all = download_as(g, pl, full);
    shared_hook_(t, all);
    buffer w = be_->upload(all, buffer_role::gradient);
    g = pl == full ? std::move(w) : redistribute(*dp_, full, w, pl, *be_);
  }

  stage_crossings cross_;
  const std::vector<std::vector<float>>* in_ = nullptr;
  std::vector<std::vector<float>>* out_ = nullptr;
  const std::vector<std::vector<float>>* dout_ = nullptr;
  std::vector<std::vector<float>>* din_ = nullptr;
  std::vector<int> shared_;
  std::function<void(int, std::vector<float>&)> shared_hook_;
  std::vector<std::pair<int, std::vector<saved_op>>> inflight_;
};

}  // namespace tensoropt::runtime
