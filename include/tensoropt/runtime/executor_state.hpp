// What one device of the SPMD executor (executor.hpp) holds for a plan, and the work
// around the op loop: the placements of every op's inputs, outputs and parameters
// under its config, the parameters (deterministic init), their gradient buffers and
// optimizer state, gathering and setting whole parameters (checkpoints), the
// once-per-step gradient synchronization and update, and the checks of a plan and a
// batch.
//
// A parameter lives in the layout its first user needs; under that user's
// shard_optimizer its optimizer state (and the update) is further split over the
// replicas along the first axis that divides evenly (sharding.hpp's
// split_over_replicas). Param gradients accumulate locally over micro-batches in
// buffers that live for the whole run and are synchronized once per step into the
// optimizer's shards (an all-reduce); under shard_optimizer each micro-batch's
// gradient is reduce-scattered into this device's shard as soon as backward produces
// it (so only the shard is kept, ZeRO-2), and the updated shards are all-gathered
// into the weights after the update.
//
// Memory sites: every buffer is charged to the backend's memory_stats, and so is a
// host kernel's integer state (charge_ints / clear_state); the executor marks op j's
// forward as site j, its backward as site ops + j and the update as site 2 ops, so the
// stats name where a device peaked (plan/memory_peak.hpp and pipeline_memory.hpp
// replay this order to predict it).
//
// Over an op range (a pipeline stage) only the range's ops and the input ops they
// read are placed; another stage's op hands its output over replicated until the
// stage says otherwise (stage_executor.hpp), and only the range's parameters are
// held.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include "../plan/training_plan.hpp"
#include "../cost/op_cost.hpp"
#include "backend.hpp"
#include "data_plane.hpp"
#include "op_context.hpp"
#include "op_range.hpp"
#include "optimizer.hpp"
#include "sharding.hpp"

namespace tensoropt::runtime {

/// What the executor runs (plan/training_plan.hpp).
using tensoropt::training_plan;

/// One global batch: one array per input op of the graph, in op order, each the
/// whole (global) input tensor in row-major order (integer ids as exact floats).
using batch = std::vector<std::vector<float>>;

/// The state of one device of an executor (see the file comment); executor.hpp runs it.
class executor_state {
 public:
  executor_state(const executor_state&) = delete;  // buffers point at this device's memory_stats
  executor_state& operator=(const executor_state&) = delete;
  virtual ~executor_state() = default;

  /// The whole parameter `name` (collective: every device must call it).
  std::vector<float> gather(const std::string& name) { return gather(param_index(name), -1); }
  /// The whole tensor of parameter `t` (state < 0) or of its optimizer state array.
  /// Under a backend with master weights (bf16-mixed) the parameter is read from
  /// its fp32 master copy, so checkpoints and comparisons keep full precision.
  std::vector<float> gather(int t, int state) {
    if (state < 0 && be_->extra_states()) state = opt_.states();
    const auto& P = params_[std::size_t(t)];
    const placement full = replicated(graph_.tensors[std::size_t(t)], int(plan_.mesh.devices()));
    be_->bind();
    buffer out = state < 0 ? redistribute(*dp_, P.place, P.value, full, *be_)
                           : redistribute(*dp_, P.opt_place, P.state[std::size_t(state)], full, *be_);
    return be_->download(out);
  }
  /// Sets parameter `t` (state < 0) or its optimizer state from the whole tensor
  /// (a parameter also sets its master copy, where the backend keeps one).
  void scatter(int t, int state, std::span<const float> whole) {
    if (state < 0 && be_->extra_states()) scatter(t, opt_.states(), whole);
    auto& P = params_[std::size_t(t)];
    const auto& ti = graph_.tensors[std::size_t(t)];
    const placement& pl = state < 0 ? P.place : P.opt_place;
    shard_box all;
    all.len.fill(1);
    for (int a = 0; a < ti.rank; ++a) all.len[a] = ti.extents[a];
    const auto& mine = pl.box[std::size_t(comm_.rank())];
    buffer& dst = state < 0 ? P.value : P.state[std::size_t(state)];
    be_->bind();
    std::vector<float> host = be_->download(dst);
    detail::copy_region(whole.data(), all, host.data(), mine, mine.lo, mine.len, ti.rank, false);
    be_->write(dst, host);
  }
  int param_index(const std::string& name) const {
    for (std::size_t t = 0; t < graph_.tensors.size(); ++t)
      if (graph_.tensors[t].parameter && graph_.tensors[t].name == name) return int(t);
    throw invalid_argument("no parameter named '" + name + "' in graph '" + graph_.name + "'");
  }
  /// Parameter tensors this executor holds (indices into graph().tensors) in graph
  /// order: all of them, or those an op of its range reads.
  std::vector<int> parameters() const {
    std::vector<int> v;
    for (std::size_t t = 0; t < graph_.tensors.size(); ++t)
      if (graph_.tensors[t].parameter && !params_[t].users.empty()) v.push_back(int(t));
    return v;
  }
  const op_graph& graph() const { return full_; }
  const training_plan& plan() const { return plan_; }
  const optimizer_options& optimizer() const { return opt_; }
  std::int64_t steps() const { return step_; }
  void set_steps(std::int64_t s) { step_ = s; }
  communicator& comm() { return comm_; }
  /// Seconds this device spent inside kernels (forward, backward, recomputation;
  /// including the collectives inside them) since construction: the rest of a
  /// step is the executor's overhead and the redistributions.
  double kernel_seconds() const { return kernel_seconds_; }
  /// This device's memory: current bytes and the peak of the last step.
  const memory_stats& memory() const { return be_->memory(); }
  /// This device's backend (its name, precision and memory report).
  backend& device_backend() { return *be_; }
  const backend& device_backend() const { return *be_; }
  /// The number of state arrays per parameter (gather/scatter's `state`): the
  /// optimizer's, then the backend's (the fp32 master weights under bf16-mixed).
  int state_arrays() const { return opt_.states() + be_->extra_states(); }
  /// Whether op j runs here: in the range, or an input op that an op of it reads.
  bool runs(std::size_t j) const { return j < runs_.size() && runs_[j]; }

 protected:
  /// Places ops [ops.begin, ops.end) of `g` (all by default) under `plan` on `comm`
  /// and backend `be`. Throws invalid_argument when the plan does not belong to the
  /// graph or the communicator's size is not the plan's device count.
  executor_state(const op_graph& g, training_plan plan, op_range ops, communicator& comm, std::unique_ptr<backend> be,
                 optimizer_options opt, std::uint64_t seed)
      : full_(g), plan_(std::move(plan)), comm_(comm), opt_(opt), seed_(seed), be_(std::move(be)), range_(ops) {
    if (!be_) throw invalid_argument("executor: no backend given");
    be_->bind();
    dp_ = be_->make_data_plane(comm_);
    check_plan();
    graph_ = with_batch(full_, full_.batch / plan_.micro_batches);
    build();
  }

  /// The summed gradient `g` of parameter t (in placement `pl`) before its update.
  virtual void before_update(int, buffer&, const placement&) {}

  struct param_slot {
    placement place, opt_place;
    buffer value;
    std::vector<buffer> state;
    buffer grad;  // under optimizer sharding: this device's gradient shard, reduced per micro-batch
    std::vector<std::pair<int, int>> users;  // (op, param slot)
  };
  struct op_plan {
    std::vector<placement> in, din, par, dpar;
    placement out, dout;
  };
  struct saved_op {
    std::vector<std::shared_ptr<const buffer>> in, par;
    op_state state;
    bool rebuilt = false;                // forward re-run during backward (recompute)
    std::shared_ptr<const buffer> out;   // its output, for the recomputed consumers
    int readers = 0;                     // recomputed consumers yet to take `out`
    std::int64_t ints = 0;               // bytes of state.ints charged to the device
    std::vector<bool> shard;             // in[s] is the producer's shard: re-gather before use
  };

  /// A host kernel's integer state (argmax indices, MoE routes) is this device's
  /// memory too: charged while the state is kept, like its buffers.
  void charge_ints(saved_op& S) {
    if (be_->space() != memory_space::host) return;
    const auto b = std::int64_t(S.state.ints.size() * sizeof(std::int64_t));
    be_->memory().add(b - S.ints);
    S.ints = b;
  }
  void clear_state(saved_op& S) {
    be_->memory().add(-S.ints);
    S.ints = 0;
    S.state = {};
  }

  void check_plan() {
    if (plan_.configs.size() != full_.ops.size())
      throw invalid_argument("the plan has " + std::to_string(plan_.configs.size()) + " op configs but graph '" +
                             full_.name + "' has " + std::to_string(full_.ops.size()) +
                             " ops; is the plan for another model?");
    if (comm_.size() != plan_.mesh.devices())
      throw invalid_argument("the plan is for " + plan_.mesh.describe() + " (" +
                             std::to_string(plan_.mesh.devices()) + " devices) but the communicator has " +
                             std::to_string(comm_.size()) + "; run it on " + std::to_string(plan_.mesh.devices()) +
                             " devices");
    if (plan_.micro_batches < 1 || full_.batch % plan_.micro_batches != 0)
      throw invalid_argument("micro-batch count " + std::to_string(plan_.micro_batches) +
                             " does not divide the global batch " + std::to_string(full_.batch));
  }

  void build() {
    const int n = int(graph_.ops.size());
    plans_.resize(std::size_t(n));
    pacc_.resize(std::size_t(n));
    params_.resize(graph_.tensors.size());
    consumers_.assign(graph_.tensors.size(), 0);
    loss_op_ = -1;
    find_stage();
    for (int j = 0; j < n; ++j) {
      const auto& op = graph_.ops[std::size_t(j)];
      const auto& c = plan_.configs[std::size_t(j)];
      if (!runs(std::size_t(j))) {  // another stage's op: its output arrives whole
        plans_[std::size_t(j)].out = plans_[std::size_t(j)].dout =
            replicated(graph_.tensors[std::size_t(op.output.tensor)], int(plan_.mesh.devices()));
        continue;
      }
      validate(op, c, plan_.mesh);
      auto& P = plans_[std::size_t(j)];
      auto tensor = [&](const tensor_map& m) -> const tensor_info& { return graph_.tensors[std::size_t(m.tensor)]; };
      for (auto& m : op.inputs) {
        P.in.push_back(place(op, m, tensor(m), c, plan_.mesh, false));
        P.din.push_back(place(op, m, tensor(m), c, plan_.mesh, true));
        ++consumers_[std::size_t(m.tensor)];
      }
      for (std::size_t s = 0; s < op.params.size(); ++s) {
        const auto& m = op.params[s];
        P.par.push_back(place(op, m, tensor(m), c, plan_.mesh, false));
        P.dpar.push_back(place(op, m, tensor(m), c, plan_.mesh, true));
        pacc_[std::size_t(j)].emplace_back();  // allocated by the first backward that reaches it
        auto& ps = params_[std::size_t(m.tensor)];
        if (ps.users.empty()) init_param(j, int(s));
        ps.users.push_back({j, int(s)});
      }
      P.out = place(op, op.output, tensor(op.output), c, plan_.mesh, true);
      P.dout = place(op, op.output, tensor(op.output), c, plan_.mesh, false);
      if (op.kind == op_kind::softmax_xent) {
        if (loss_op_ >= 0)
          throw invalid_argument("graph '" + graph_.name + "' has two losses ('" + graph_.ops[std::size_t(loss_op_)].name +
                                 "' and '" + op.name + "'); the runtime trains one");
        loss_op_ = j;
      }
    }
    if (loss_op_ < 0 && staged()) {
      for (std::size_t j = 0; j < full_.ops.size() && loss_op_ < 0; ++j)
        if (full_.ops[j].kind == op_kind::softmax_xent) loss_op_ = -2;  // in another stage
    }
    if (loss_op_ == -2) loss_op_ = -1;
    else if (loss_op_ < 0) throw invalid_argument("graph '" + graph_.name + "' has no softmax_xent loss to train");
    ensure_grad_buffers();
    be_->memory().site_peak.assign(std::size_t(2 * n + 1), 0);  // memory_stats' sites
    for (std::size_t t = 0; t < graph_.tensors.size() && !staged(); ++t)
      if (graph_.tensors[t].parameter && params_[t].users.empty())
        throw invalid_argument("parameter '" + graph_.tensors[t].name + "' is used by no op");
  }

  std::size_t me() const { return std::size_t(comm_.rank()); }
  bool staged() const { return range_.begin > 0 || range_.end < graph_.ops.size(); }

  /// Which ops run here (op_range.hpp) and the input number of each input op.
  void find_stage() {
    auto ro = ops_of_range(graph_, range_);
    runs_ = std::move(ro.runs);
    bin_ = std::move(ro.inputs);
    bout_ = std::move(ro.outputs);
    input_no_.assign(graph_.ops.size(), -1);
    for (std::size_t j = 0, k = 0; j < graph_.ops.size(); ++j)
      if (graph_.ops[j].kind == op_kind::input) input_no_[j] = int(k++);
  }

  void init_param(int j, int s) {
    const int tensor = graph_.ops[std::size_t(j)].params[std::size_t(s)].tensor;
    const auto& t = graph_.tensors[std::size_t(tensor)];
    auto& P = params_[std::size_t(tensor)];
    P.place = plans_[std::size_t(j)].par[std::size_t(s)];
    P.opt_place = P.place;
    if (plan_.configs[std::size_t(j)].shard_optimizer) split_over_replicas(P.opt_place);
    for (int k = 0; k < opt_.states(); ++k)
      P.state.push_back(be_->allocate(std::size_t(P.opt_place.box[me()].size(t.rank)), buffer_role::state));
    // The values follow the parameter's first user in the whole graph: a pipeline
    // stage may hold only a later one (GPT's LM head reads the token table).
    for (int i = 0, found = 0; i < j && !found; ++i)
      for (std::size_t k = 0; k < graph_.ops[std::size_t(i)].params.size() && !found; ++k)
        if (graph_.ops[std::size_t(i)].params[k].tensor == tensor) {
          j = i;
          s = int(k);
          found = 1;
        }
    const auto& op = graph_.ops[std::size_t(j)];
    const auto& m = op.params[std::size_t(s)];
    // Deterministic init from the global element index: the same under any plan.
    float value = 0, scale = 0;
    const bool norm = op.kind == op_kind::layer_norm || op.kind == op_kind::batch_norm;
    const bool bias = (op.kind == op_kind::linear || op.kind == op_kind::conv2d) && s == 1;
    if (norm) value = s == 0 ? 1.f : 0.f;
    else if (!bias) {
      double fan_in = 1;
      for (int a = 0; a < t.rank; ++a) {
        bool in_out = false;
        for (int b = 0; b < max_tensor_rank; ++b) in_out = in_out || (m.dim[a] >= 0 && op.output.dim[b] == m.dim[a]);
        if (!in_out) fan_in *= double(t.extents[a]);
      }
      scale = float(1.0 / std::sqrt(fan_in));
    }
    auto init = [&](const shard_box& box) {
      std::vector<float> v(std::size_t(box.size(t.rank)));
      for_each_global(t.extents, box.lo, box.len, t.rank, 0, [&](index_t i, std::uint64_t gi) {
        v[std::size_t(i)] = scale == 0 ? value : (2.f * uniform01(seed_, std::uint64_t(m.tensor), gi) - 1.f) * scale;
      });
      return v;
    };
    P.value = be_->upload(init(P.place.box[me()]), buffer_role::weight);
    if (be_->extra_states())  // the fp32 master weights: the same values over the optimizer's shard
      P.state.push_back(be_->upload(init(P.opt_place.box[me()]), buffer_role::state));
  }

  /// Gradient buffers live for the whole run, zeroed after each update (as in
  /// Megatron's contiguous gradient buffer): the cost model's parameter state counts
  /// them next to every activation, so the runtime holds them from the first forward.
  void ensure_grad_buffers() {
    auto zeroed = [&](std::size_t n) { return be_->allocate(n, buffer_role::gradient); };
    for (std::size_t j = 0; j < graph_.ops.size(); ++j)
      for (std::size_t s = 0; s < graph_.ops[j].params.size() && runs(j); ++s) {
        const int t = graph_.ops[j].params[s].tensor;
        auto& P = params_[std::size_t(t)];
        const int rank = graph_.tensors[std::size_t(t)].rank;
        if (!(P.opt_place == P.place)) {
          if (P.grad.size() == 0) P.grad = zeroed(std::size_t(P.opt_place.box[me()].size(rank)));
        } else if (pacc_[j][s].size() == 0)
          pacc_[j][s] = zeroed(std::size_t(plans_[j].dpar[s].box[me()].size(rank)));
      }
  }

  void sync_and_update() {
    for (std::size_t t = 0; t < params_.size(); ++t) {
      auto& P = params_[t];
      if (P.users.empty()) continue;
      const int rank = graph_.tensors[t].rank;
      const bool sharded = !(P.opt_place == P.place);
      buffer g;
      if (sharded && P.grad.size()) g = std::move(P.grad);
      else if (!sharded && P.users.size() == 1 &&
               plans_[std::size_t(P.users[0].first)].dpar[std::size_t(P.users[0].second)] == P.opt_place &&
               pacc_[std::size_t(P.users[0].first)][std::size_t(P.users[0].second)].size())
        g = std::move(pacc_[std::size_t(P.users[0].first)][std::size_t(P.users[0].second)]);  // no copy
      else g = be_->allocate(std::size_t(P.opt_place.box[me()].size(rank)), buffer_role::gradient);
      P.grad = {};
      for (auto [j, s] : P.users) {
        if (sharded) break;  // reduced into the shard during backward
        auto& acc = pacc_[std::size_t(j)][std::size_t(s)];
        if (acc.size() == 0 && P.users.size() == 1 && g.size()) break;  // moved into g above
        if (acc.size() == 0)
          acc = be_->allocate(std::size_t(plans_[std::size_t(j)].dpar[std::size_t(s)].box[me()].size(rank)),
                              buffer_role::gradient);
        buffer part = redistribute(*dp_, plans_[std::size_t(j)].dpar[std::size_t(s)], acc, P.opt_place, *be_);
        acc = {};  // reallocated, zeroed, after the update
        be_->accumulate(g, part);
      }
      before_update(int(t), g, P.opt_place);
      if (P.opt_place == P.place) {
        be_->optimizer_update(opt_, step_ + 1, P.value, g, P.state);
        continue;
      }
      buffer w = redistribute(*dp_, P.place, P.value, P.opt_place, *be_);  // local slice
      be_->optimizer_update(opt_, step_ + 1, w, g, P.state);
      P.value = redistribute(*dp_, P.opt_place, w, P.place, *be_);  // all-gather of the updated shards
    }
    ensure_grad_buffers();
  }

  void check_batch(const batch& b) const {
    std::vector<int> inputs;
    for (std::size_t j = 0; j < full_.ops.size(); ++j)
      if (full_.ops[j].kind == op_kind::input) inputs.push_back(int(j));
    if (b.size() != inputs.size())
      throw invalid_argument("the batch has " + std::to_string(b.size()) + " arrays but graph '" + full_.name +
                             "' has " + std::to_string(inputs.size()) + " inputs");
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto& t = full_.tensors[std::size_t(full_.ops[std::size_t(inputs[i])].output.tensor)];
      if (index_t(b[i].size()) != t.size()) {
        std::string shape = "[";
        for (int a = 0; a < t.rank; ++a) {
          if (a) shape += ',';
          shape += std::to_string(t.extents[a]);
        }
        throw invalid_argument("batch input '" + t.name + "' has " + std::to_string(b[i].size()) +
                               " values; the model expects " + std::to_string(t.size()) + " (shape " + shape + "])");
      }
    }
  }

  op_graph full_, graph_;
  training_plan plan_;
  communicator& comm_;
  optimizer_options opt_;
  std::uint64_t seed_;
  std::unique_ptr<backend> be_;
  std::unique_ptr<data_plane> dp_;
  std::vector<op_plan> plans_;
  std::vector<param_slot> params_;
  std::vector<std::vector<buffer>> pacc_;
  std::vector<int> consumers_;
  int loss_op_ = -1;
  op_range range_;
  std::vector<bool> runs_;
  std::vector<int> input_no_, bin_, bout_;
  std::int64_t step_ = 0;
  double kernel_seconds_ = 0;
};

}  // namespace tensoropt::runtime
