// Where the buffers of one pipeline stage's memory replay live and how large they are:
// the layouts (cost/placement.hpp) of each op's inputs, output, parameters and their
// gradients on the stage's mesh, the crossings (plan/stage_crossings.hpp), the
// persistent state (parameters in their first stage-user's layout, optimizer state,
// gradient buffers, the reserve), and the per-tensor facts the replay asks for often
// (a parameter's first user here, whether another stage holds it, how many recompute
// readers rebuild an op's output). plan/stage_replay.hpp moves buffers along these
// layouts in the 1F1B order; plan/pipeline_peak.hpp is the public face.
//
// Cost. A placement names a box per device of the stage, so building or comparing one
// costs O(d) (and splitting it over replicas, O(d^2)); on megatron-1t at pp 2 a stage
// has 1,536 devices. A stage's layers are identical blocks, so its placements repeat
// layer after layer: they are memoized by what place() reads (the op's dims, the
// config's degrees, the tensor's shape and map, partial or not, split over replicas or
// not), shared by the stages of one plan (placement_cache), and every comparison the
// replay makes per micro-batch is made once here. Per-tensor facts come from one pass
// over the graph. Building a layout is then O(ops) plus O(d) per distinct placement
// (before: O(d) per placement of every op of the model and a scan of every op per
// tensor, O(ops x tensors), per stage).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>
#include "../cost/placement.hpp"
#include "memory_peak.hpp"
#include "placement_cache.hpp"
#include "pipeline_plan.hpp"
#include "stage_crossings.hpp"

namespace tensoropt::detail {

/// The buffers' layouts and sizes of stage s of `pp` on the micro-batch graph `mg`
/// (see the file comment). `facts` = analyze(mg) and `cache` (on the stage's mesh) are
/// shared by the stages of one plan.
class stage_layout {
 public:
  stage_layout(const op_graph& mg, const pipeline_plan& pp, int s, const cluster& scl, const build_options& o,
               const std::vector<op_facts>& facts, placement_cache& cache)
      : g_(mg), pp_(pp), cfg_(pp.configs), mesh_(scl.mesh), pr_(o.prec), n_(mg.ops.size()), cache_(cache) {
    const std::size_t begin = pp.stage_begin[std::size_t(s)];
    const std::size_t end = s + 1 < pp.degree ? pp.stage_begin[std::size_t(s) + 1] : n_;
    here_.assign(n_, false);
    for (std::size_t j = begin; j < end; ++j) {  // ops_of_range's runs: the range and the inputs it reads
      here_[j] = true;
      for (auto& m : g_.ops[j].inputs)
        if (g_.ops[std::size_t(producer(m.tensor))].kind == op_kind::input) here_[std::size_t(producer(m.tensor))] = true;
    }
    for (std::size_t j = 0; j < n_; ++j)
      if (here_[j]) ops_.push_back(j);
    pos_.assign(n_, -1);
    for (std::size_t i = 0; i < ops_.size(); ++i) pos_[ops_[i]] = int(i);
    cross_ = crossings_of(g_, pp, s, &cache_);
    const cost_options co = o.cost();
    state_.assign(n_, 0.0);
    in_.resize(n_);
    din_.resize(n_);
    out_.resize(n_);
    dout_.resize(n_);
    auto place_output = [&](std::size_t j) {
      if (out_[j]) return;
      const op_node& op = g_.ops[j];
      out_[j] = &cache_.get(op, op.output, tensor(op.output.tensor), cfg_[j], true);
      dout_[j] = &cache_.get(op, op.output, tensor(op.output.tensor), cfg_[j], false);
    };
    for (std::size_t j : ops_) {
      const op_node& op = g_.ops[j];
      for (auto& m : op.inputs) {
        in_[j].push_back(&cache_.get(op, m, tensor(m.tensor), cfg_[j], false));
        din_[j].push_back(&cache_.get(op, m, tensor(m.tensor), cfg_[j], true));
        place_output(std::size_t(producer(m.tensor)));
      }
      place_output(j);
      if (op.kind != op_kind::input) state_[j] = cost_op(g_, int(j), cfg_[j], scl, co, facts[j]).kernel_state.value;
    }
    for (const auto& x : cross_.in) out_[std::size_t(producer(x.tensor))] = dout_[std::size_t(producer(x.tensor))] = &x.recv;
    same_in_.resize(n_);
    same_grad_.resize(n_);
    for (std::size_t j : ops_)  // the comparisons the replay makes per micro-batch
      for (std::size_t q = 0; q < g_.ops[j].inputs.size(); ++q) {
        const auto p = std::size_t(producer(j, q));
        same_in_[j].push_back(equal(out_[p], in_[j][q]));
        same_grad_[j].push_back(equal(din_[j][q], dout_[p]));
      }
    readers_.assign(n_, 0);
    for (std::size_t j = 0; j < n_; ++j)  // rebuild's readers: recompute readers in the same instance
      for (std::size_t q = 0; q < g_.ops[j].inputs.size(); ++q)
        if (std::size_t(producer(j, q)) < j && segment_input(j, q)) ++readers_[std::size_t(producer(j, q))];
    state_bytes_ = o.reserve.value;
    parameters();
  }

 protected:
  struct saved {
    std::vector<int> in, par;
    std::vector<bool> shard;
    int state = -1, out = -1, readers = 0;
    bool rebuilt = false;
  };
  saved& at(std::vector<saved>& S, std::size_t j) const { return S[std::size_t(pos_[j])]; }

  const tensor_info& tensor(int t) const { return g_.tensors[std::size_t(t)]; }
  int producer(int t) const { return tensor(t).producer; }
  int producer(std::size_t j, std::size_t s) const { return producer(g_.ops[j].inputs[s].tensor); }
  static double box(const placement& pl, double bytes) { return double(pl.box[0].size(pl.rank)) * bytes; }
  static double box(const placement* pl, double bytes) { return box(*pl, bytes); }
  // placements from the cache are interned (one object per content); crossings' are not
  static bool equal(const placement* a, const placement* b) { return a == b || *a == *b; }
  double act_bytes(int t) const { return tensor(t).integer ? 4.0 : double(pr_.activation_bytes()); }
  bool keeps_shard(std::size_t j, std::size_t s) const {
    const int p = producer(j, s);
    return here_[std::size_t(p)] && detail::kept_shard_ratio(g_, {p, int(j), g_.ops[j].inputs[s].tensor, int(s)},
                                                                        cfg_[std::size_t(p)], cfg_[j]) < 1;
  }
  bool segment_input(std::size_t j, std::size_t s) const {
    const auto& op = g_.ops[j];
    const int p = producer(j, s);
    const auto& po = g_.ops[std::size_t(p)];
    return here_[std::size_t(p)] && cfg_[j].recompute && cfg_[std::size_t(p)].recompute && po.kind != op_kind::input &&
           op.repeat_id >= 0 && detail::same_instance(po, op);
  }
  std::size_t first_user(int t) const { return first_user_[std::size_t(t)]; }
  bool sharded(int t) const { return sharded_[std::size_t(t)]; }

  const op_graph& g_;
  const pipeline_plan& pp_;
  const std::vector<op_config>& cfg_;
  device_mesh mesh_;
  precision pr_;
  std::size_t n_;
  placement_cache& cache_;
  std::vector<bool> here_, shared_, sharded_;
  std::vector<std::size_t> ops_;  ///< the ops that run here, ascending
  std::vector<int> pos_;          ///< op -> index into ops_ (-1: not here)
  stage_crossings cross_;
  std::vector<double> state_;     ///< per op: its kernel state
  std::vector<std::vector<const placement*>> in_, din_, par_, dpar_;  ///< memoized (placement_cache)
  std::vector<const placement*> out_, dout_, par_place_, opt_place_;
  std::vector<std::vector<bool>> same_in_, same_grad_, same_par_;  ///< per op input / parameter: layouts equal
  std::vector<int> users_;         ///< per tensor: its parameter uses here
  std::vector<std::size_t> first_user_;  ///< per tensor: its first user here (n_: none)
  std::vector<int> readers_;       ///< per op: readers that rebuild it (recompute, same instance)
  std::vector<double> grad_bufs_;  ///< per parameter: its gradient buffers here
  double state_bytes_ = 0;         ///< the persistent state: reserve, parameters, optimizer, gradient buffers

 private:
  void parameters() {
    par_.resize(n_);
    dpar_.resize(n_);
    par_place_.assign(g_.tensors.size(), nullptr);
    opt_place_.assign(g_.tensors.size(), nullptr);
    sharded_.assign(g_.tensors.size(), false);
    users_.assign(g_.tensors.size(), 0);
    first_user_.assign(g_.tensors.size(), n_);
    shared_.assign(g_.tensors.size(), false);
    std::vector<int> holder(g_.tensors.size(), -1);  // a stage that reads the parameter
    for (std::size_t j = 0, st = 0; j < n_; ++j) {
      while (st + 1 < pp_.stage_begin.size() && pp_.stage_begin[st + 1] <= j) ++st;
      for (auto& m : g_.ops[j].params) {
        auto& h = holder[std::size_t(m.tensor)];
        if (h >= 0 && h != int(st)) shared_[std::size_t(m.tensor)] = true;  // held by another stage too
        h = int(st);
      }
    }
    for (std::size_t j : ops_)
      for (auto& m : g_.ops[j].params) {
        par_[j].push_back(&cache_.get(g_.ops[j], m, tensor(m.tensor), cfg_[j], false));
        dpar_[j].push_back(&cache_.get(g_.ops[j], m, tensor(m.tensor), cfg_[j], true));
      }
    for (std::size_t j : ops_)
      for (std::size_t s = 0; s < g_.ops[j].params.size(); ++s) {
        const auto& m = g_.ops[j].params[s];
        const auto t = std::size_t(m.tensor);
        if (users_[t]++ == 0) {
          first_user_[t] = j;
          par_place_[t] = opt_place_[t] = par_[j][s];
          if (cfg_[j].shard_optimizer) opt_place_[t] = &cache_.get(g_.ops[j], m, tensor(m.tensor), cfg_[j], false, true);
          sharded_[t] = !equal(opt_place_[t], par_place_[t]);
          state_bytes_ += box(par_[j][s], pr_.weight_bytes) + box(opt_place_[t], pr_.optimizer_bytes);
        }
      }
    same_par_.resize(n_);
    for (std::size_t j : ops_)
      for (std::size_t s = 0; s < g_.ops[j].params.size(); ++s)
        same_par_[j].push_back(equal(par_place_[std::size_t(g_.ops[j].params[s].tensor)], par_[j][s]));
    grad_bufs_.assign(g_.tensors.size(), 0.0);
    for (std::size_t j : ops_)  // the gradient buffers (executor's ensure_grad_buffers)
      for (std::size_t s = 0; s < g_.ops[j].params.size(); ++s) {
        const int t = g_.ops[j].params[s].tensor;
        if (!sharded(t)) grad_bufs_[std::size_t(t)] += box(dpar_[j][s], pr_.grad_bytes);
        else if (first_user(t) == j) grad_bufs_[std::size_t(t)] = box(opt_place_[std::size_t(t)], pr_.grad_bytes);
      }
    for (double b : grad_bufs_) state_bytes_ += b;
  }
};

}  // namespace tensoropt::detail
