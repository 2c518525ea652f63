// One device of a pipeline-parallel run: its stage's share of the graph under a
// pipeline_plan (plan/pipeline_plan.hpp), stepped in the 1F1B order.
//
// Stage s owns ops [stage_begin[s], stage_begin[s + 1]) and runs on the d = devices/p
// ranks from stage_first_rank(s) on, as an SPMD executor over those ops
// (stage_executor.hpp) on a sub-communicator of those ranks and the stage's mesh.
// Each input op runs in every stage that reads it (the batch is on every device).
//
// Between stages, a tensor made in stage s and read in stage s' > s travels in
// shares (plan/stage_crossings.hpp): the receiving stage holds it in the layout the plan's
// receive config gives (else the layout its first reader wants), the member with
// local index i of s sends member i of s' that member's box of the wire layout (that
// layout split over its replicas: S / d floats each when it divides), and s' gathers
// what its layout replicates. Gradients travel back in the same shares and are summed
// in stage order when several later stages read the tensor. Tags come from a sequence per ordered pair of
// ranks: sender and receiver walk the same schedule, so they agree, and they never
// meet the sub-communicators' tags (those pairs lie inside one stage).
//
// Schedule (1F1B, PipeDream-Flush / Megatron-LM's non-interleaved schedule), for k
// micro-batches on p stages, stage s runs w = min(p - s - 1, k) forwards (warm-up),
// then k - w pairs "forward m + w, backward m" (steady state), then the w remaining
// backwards (cool-down). Sends never block, so the order cannot deadlock; a stage
// thus holds at most min(k, p - s) micro-batches' activations, the figure of the
// cost model. Gradients are synchronized within the stage once per step (the
// executor's finish_step). A parameter read in several stages (GPT's tied token
// table: embedding in the first, LM head in the last) keeps a copy in each; before
// the update, the holders exchange their whole summed gradients and add them in
// stage order, as Megatron-LM's embedding group does, so the copies stay equal.
// The loss is the last stage's (mean over micro-batches); it is sent to every rank.
//
// Failures: any error inside a stage is rethrown as "pipeline stage s (ranks a-b):
// ...". The first failure aborts the other devices' receives: on a
// local_world the world rethrows the failing stage's error; under MPI the failing
// rank sends its error to every other rank (communicator::abort_others), whose
// pending or next receive throws (within a second: mpi_comm.hpp) "... aborted
// because rank r failed: pipeline stage s (ranks a-b): ...", so every process
// names the stage that failed.
#pragma once
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "../plan/pipeline_plan.hpp"
#include "stage_executor.hpp"
#include "sub_communicator.hpp"

namespace tensoropt::runtime {

class pipeline_stage {
 public:
  /// This rank's stage of `pp` on `world` (all ranks of the plan). Throws
  /// invalid_argument when the plan is malformed for `g` or the world's size is not
  /// the plan's device count.
  pipeline_stage(const op_graph& g, const pipeline_plan& pp, communicator& world, optimizer_options opt = {},
                 std::uint64_t seed = 1234, const backend_options& bo = {})
      : pp_(pp), world_(world) {
    if (const auto e = pipeline_plan_error(pp, g.ops.size()); !e.empty())
      throw invalid_argument("pipeline plan for graph '" + g.name + "': " + e);
    if (world.size() != pp.mesh.devices())
      throw invalid_argument("the pipeline plan is for " + std::to_string(pp.mesh.devices()) + " devices (" +
                             pp.mesh.describe() + ") but the communicator has " + std::to_string(world.size()) +
                             "; run it on " + std::to_string(pp.mesh.devices()) + " devices");
    p_ = pp.degree;
    d_ = int(pp.mesh.devices()) / p_;
    stage_ = world.rank() / d_;
    local_ = world.rank() % d_;
    group members;
    for (int r = 0; r < d_; ++r) members.push_back(first_rank(stage_) + r);
    sub_ = std::make_unique<sub_communicator>(world, members);
    guard([&] {
      training_plan tp{pp.configs, pp.micro_batches, stage_mesh(pp.mesh, p_)};
      ex_ = std::make_unique<runtime::stage_executor>(g, std::move(tp), op_range{begin_of(stage_), begin_of(stage_ + 1)},
                                                      *sub_, make_backend(bo, *sub_), opt, seed);
      ex_->set_crossings(crossings_of(ex_->micro_graph(), pp, stage_));
    });
    route();
  }
  pipeline_stage(const pipeline_stage&) = delete;
  pipeline_stage& operator=(const pipeline_stage&) = delete;

  /// One training step on the global batch (every rank calls it); returns the loss,
  /// the same on every rank.
  float step(const batch& b) {
    const int k = pp_.micro_batches;
    double loss = 0;
    float out = 0;
    guard([&] {
      ex_->begin_step(b);
      const int w = std::min(p_ - stage_ - 1, k);
      for (int m = 0; m < w; ++m) loss += forward(b, m);
      for (int m = 0; m + w < k; ++m) {
        loss += forward(b, m + w);
        backward(m);
      }
      for (int m = k - w; m < k; ++m) backward(m);
      ex_->finish_step();
      out = float(loss / k);
      if (stage_ == p_ - 1)
        for (int s = 0; s + 1 < p_; ++s) send(s, std::vector<float>{out});
      else out = receive(p_ - 1, 1, "the loss")[0];
    });
    return out;
  }

  /// The whole parameter `name` on every rank (collective over the world).
  std::vector<float> gather(const std::string& name) {
    std::vector<float> v;
    guard([&] {
      const int t = ex_->param_index(name);
      const int h = holders_.at(std::size_t(t)).front();
      if (h == stage_) {
        v = ex_->gather(t, -1);
        for (int s = 0; s < p_; ++s)
          if (s != stage_) send(s, v);
      } else
        v = receive(h, std::size_t(ex_->graph().tensors[std::size_t(t)].size()), "parameter '" + name + "'");
    });
    return v;
  }

  int stage() const { return stage_; }
  int degree() const { return p_; }
  const pipeline_plan& plan() const { return pp_; }
  /// The stages whose ops read parameter tensor t, ascending.
  const std::vector<int>& holders(int t) const { return holders_.at(std::size_t(t)); }
  runtime::stage_executor& stage_executor() { return *ex_; }
  const runtime::stage_executor& stage_executor() const { return *ex_; }
  /// This device's memory: current bytes and the last step's peak.
  memory_stats memory() const { return ex_->memory(); }
  communicator& world() { return world_; }
  communicator& stage_comm() { return *sub_; }
  /// Member i of stage s, as a world rank.
  int first_rank(int s) const { return int(stage_first_rank(pp_.mesh, p_, s)); }

  /// Sends `v` to this rank's peer (same local index) in stage s / receives n floats
  /// from it; the tags follow the schedule (see the header comment).
  void send(int s, const std::vector<float>& v) {
    const int peer = first_rank(s) + local_;
    world_.send(peer, v, next_tag(world_.rank(), peer));
  }
  std::vector<float> receive(int s, std::size_t n, const std::string& what) {
    const int peer = first_rank(s) + local_;
    std::vector<float> v(n);
    world_.recv(peer, v, next_tag(peer, world_.rank()), what + " from pipeline stage " + std::to_string(s));
    return v;
  }

  /// Runs f, rethrowing its failure as this stage's (invalid_argument and
  /// format_error keep their type; anything else becomes runtime_error).
  template <class F>
  void guard(F&& f) {
    const std::string who = "pipeline stage " + std::to_string(stage_) + " (ranks " + std::to_string(first_rank(stage_)) +
                            "-" + std::to_string(first_rank(stage_) + d_ - 1) + "): ";
    auto tell = [&](const std::exception& e) {  // the first failure stops the other ranks
      if (!world_.aborted()) world_.abort_others(who + e.what());
    };
    try {
      f();
    } catch (const invalid_argument& e) {
      tell(e);
      throw invalid_argument(who + e.what());
    } catch (const format_error& e) {  // a checkpoint that does not fit
      tell(e);
      throw format_error(who + e.what());
    } catch (const std::exception& e) {
      tell(e);
      throw runtime_error(who + e.what());
    }
  }

 private:
  std::size_t begin_of(int s) const {
    return s < p_ ? pp_.stage_begin[std::size_t(s)] : std::size_t(pp_.configs.size());
  }
  int stage_of(int op) const { return stage_of_op(pp_, std::size_t(op)); }

  /// Where each boundary tensor comes from and goes to; which parameters are shared.
  void route() {
    const auto& g = ex_->graph();
    holders_.assign(g.tensors.size(), {});
    for (std::size_t j = 0; j < g.ops.size(); ++j)
      for (auto& m : g.ops[j].params) {
        auto& h = holders_[std::size_t(m.tensor)];
        if (std::find(h.begin(), h.end(), stage_of(int(j))) == h.end()) h.push_back(stage_of(int(j)));
      }
    std::vector<int> shared;
    for (std::size_t t = 0; t < holders_.size(); ++t) {
      std::sort(holders_[t].begin(), holders_[t].end());
      if (holders_[t].size() > 1 && std::count(holders_[t].begin(), holders_[t].end(), stage_)) shared.push_back(int(t));
    }
    ex_->set_shared_gradient_hook(shared, [this](int t, std::vector<float>& grad) {
      const auto& h = holders_[std::size_t(t)];
      for (int s : h)
        if (s != stage_) send(s, grad);
      std::vector<float> sum;
      for (int s : h) {
        std::vector<float> part =
            s == stage_ ? grad : receive(s, grad.size(), "the gradient of shared parameter '" + ex_->graph().tensors[std::size_t(t)].name + "'");
        if (sum.empty()) sum = std::move(part);
        else
          for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
      }
      grad = std::move(sum);
    });
  }

  /// The number of floats of crossing `x` this device sends or receives.
  std::size_t share(const crossing& x) const {
    return std::size_t(x.wire.box[std::size_t(local_)].size(ex_->micro_graph().tensors[std::size_t(x.tensor)].rank));
  }

  double forward(const batch& b, int m) {
    const auto& g = ex_->graph();
    const auto& cx = ex_->crossings();
    std::vector<std::vector<float>> in, out;
    for (const auto& x : cx.in)
      in.push_back(receive(x.from_stage, share(x),
                           "activation '" + g.tensors[std::size_t(x.tensor)].name + "' of micro-batch " + std::to_string(m)));
    const double loss = ex_->forward_micro(b, m, in, out);
    for (std::size_t i = 0; i < out.size(); ++i) send(cx.out[i].to_stage, out[i]);
    return loss;
  }

  void backward(int m) {
    const auto& g = ex_->graph();
    const auto& cx = ex_->crossings();
    std::vector<std::vector<float>> dout, din;
    for (const auto& x : cx.out)
      dout.push_back(receive(x.to_stage, share(x), "the gradient of '" + g.tensors[std::size_t(x.tensor)].name +
                                                       "' of micro-batch " + std::to_string(m)));
    ex_->backward_micro(m, dout, din);
    for (std::size_t i = 0; i < din.size(); ++i) send(cx.in[i].from_stage, din[i]);
  }

  int next_tag(int from, int to) { return seq_[{from, to}]++ & 0x3fffffff; }

  pipeline_plan pp_;
  communicator& world_;
  int p_ = 1, d_ = 1, stage_ = 0, local_ = 0;
  std::unique_ptr<sub_communicator> sub_;
  std::unique_ptr<runtime::stage_executor> ex_;
  std::vector<std::vector<int>> holders_;
  std::map<std::pair<int, int>, int> seq_;
};

}  // namespace tensoropt::runtime
