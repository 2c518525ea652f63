// runtime_bench: tokens/s of the train_gpt model on 1, 2 and 4 local devices (data
// parallel and the planner's fastest plan), and the executor's overhead over the
// same kernels called directly in a plain loop on one device.
//
//   runtime_bench [--steps N] [--devices 1,2,4]
//
// The direct loop runs, per step, every op's forward kernel in graph order, every
// backward kernel in reverse order (summing the gradients of tensors read twice)
// and the optimizer update of every parameter: the work of an executor step on one
// device without its bookkeeping (placements, fetches, saved-state management,
// gradient accumulators, the loss gather). Overhead = executor step / direct - 1.
// Both start from the same weights and see the same batches (libm's tanh/exp take
// value-dependent time). Each figure is the median of the per-step times after one
// warm-up step.
#include <tensoropt/core/command_line.hpp>
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/plan/planner.hpp>
#include <tensoropt/runtime.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>
#include <string>

namespace to = tensoropt;
namespace rt = tensoropt::runtime;

using model = to::models::gpt<{.layers = 2, .hidden = 64, .heads = 4, .seq = 32, .vocab = 64, .batch = 8,
                               .dropout = 0.0}>;

namespace {
using clock_type = std::chrono::steady_clock;

rt::batch random_batch(std::mt19937& rng) {
  constexpr int n = int(model::config.batch * model::config.seq);
  rt::batch b(2, std::vector<float>(std::size_t(n)));
  for (auto& v : b)
    for (auto& x : v) x = float(rng() % model::config.vocab);
  return b;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median seconds per executor step of `plan` on `devices` local devices.
double executor_step(const to::op_graph& g, const rt::training_plan& plan, int devices, int steps) {
  rt::local_world w(devices);
  rt::optimizer_options adam;
  adam.type = rt::optimizer_options::kind::adam;
  rt::trainer t(g, plan, w, adam);
  std::mt19937 rng(1);
  std::vector<double> dt;
  for (int s = 0; s <= steps; ++s) {
    const auto b = random_batch(rng);
    const auto t0 = clock_type::now();
    t.step(b);
    if (s > 0) dt.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  return median(dt);
}

/// Median seconds per step of the kernels called directly on one device.
double direct_step(const to::op_graph& g, const std::vector<to::op_config>& cfg, int steps) {
  rt::local_world w(1);
  double result = 0;
  w.run([&](rt::communicator& comm) {
    rt::cpu_backend be;
    const to::device_mesh mesh(1, 1);
    rt::optimizer_options adam;
    adam.type = rt::optimizer_options::kind::adam;
    const std::size_t nt = g.tensors.size(), n = g.ops.size();
    std::vector<rt::buffer> params(nt);
    std::vector<std::vector<rt::buffer>> state(nt);
    std::vector<rt::op_context> ctx;
    for (std::size_t j = 0; j < n; ++j) ctx.emplace_back(g, int(j), cfg[j], mesh, comm, be);
    {  // the executor's initial weights, so both loops compute the same values
      rt::executor e(g, {cfg, 1, mesh}, comm, adam);
      for (std::size_t t = 0; t < nt; ++t)
        if (g.tensors[t].parameter) {
          params[t] = be.copy(e.gather(int(t), -1));
          for (int k = 0; k < adam.states(); ++k) state[t].push_back(be.allocate(params[t].size()));
        }
    }
    std::mt19937 rng(1);
    std::vector<double> dt;
    for (int s = 0; s <= steps; ++s) {
      const auto b = random_batch(rng);
      const auto t0 = clock_type::now();
      std::vector<rt::buffer> act(nt);
      std::vector<rt::op_state> st(n);
      int input_no = 0;
      for (std::size_t j = 0; j < n; ++j) {
        const auto& op = g.ops[j];
        if (op.kind == to::op_kind::input) {
          act[std::size_t(op.output.tensor)] = be.copy(b[std::size_t(input_no++)]);
          continue;
        }
        std::vector<const rt::buffer*> in, par;
        for (auto& m : op.inputs) in.push_back(&act[std::size_t(m.tensor)]);
        for (auto& m : op.params) par.push_back(&params[std::size_t(m.tensor)]);
        ctx[j].step = std::uint64_t(s);
        act[std::size_t(op.output.tensor)] = rt::kernels::kernel_of(op.kind).forward(ctx[j], in, par, st[j]);
      }
      std::vector<rt::buffer> grad(nt), pgrad(nt);
      for (std::size_t j = n; j-- > 0;) {
        const auto& op = g.ops[j];
        if (op.kind == to::op_kind::input) continue;
        rt::buffer dy;
        if (op.kind == to::op_kind::softmax_xent) {
          dy = be.allocate(1);
          dy[0] = 1.f;
        } else
          dy = std::move(grad[std::size_t(op.output.tensor)]);
        std::vector<const rt::buffer*> in, par;
        for (auto& m : op.inputs) in.push_back(&act[std::size_t(m.tensor)]);
        for (auto& m : op.params) par.push_back(&params[std::size_t(m.tensor)]);
        std::vector<rt::buffer> din, dpar;
        for (auto& m : op.inputs)
          din.push_back(g.tensors[std::size_t(m.tensor)].integer ? rt::buffer{}
                                                                  : be.allocate(std::size_t(ctx[j].local_size(m))));
        for (auto& m : op.params) dpar.push_back(be.allocate(std::size_t(ctx[j].local_size(m))));
        rt::kernels::kernel_of(op.kind).backward(ctx[j], in, par, st[j], dy, din, dpar);
        st[j] = {};
        for (std::size_t s2 = 0; s2 < op.inputs.size(); ++s2) {
          auto& acc = grad[std::size_t(op.inputs[s2].tensor)];
          if (din[s2].size() == 0) continue;
          if (acc.size() == 0) acc = std::move(din[s2]);
          else
            for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += din[s2][i];
        }
        for (std::size_t s2 = 0; s2 < op.params.size(); ++s2) {
          auto& acc = pgrad[std::size_t(op.params[s2].tensor)];
          if (acc.size() == 0) acc = std::move(dpar[s2]);
          else
            for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += dpar[s2][i];
        }
      }
      for (std::size_t t = 0; t < nt; ++t)
        if (g.tensors[t].parameter) rt::optimizer_update(adam, s + 1, params[t], pgrad[t], state[t]);
      if (s > 0) dt.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
    }
    result = median(dt);
  });
  return result;
}
}  // namespace

/// The command line (one table: parsing, ranges, --help, errors).
struct runtime_bench_options {
  long steps = 40;
  std::vector<long> devices{1, 2, 4};
  bool help = false;
};
template <>
struct to::reflection<runtime_bench_options> {
  using o = runtime_bench_options;
  static constexpr auto fields = boost::hana::make_tuple(
      to::field("steps", &o::steps, "timed steps per configuration").range(1, 1000000).meta("N"),
      to::field("devices", &o::devices, "comma list of local device counts").range(1, 1024).meta("LIST"),
      to::field("help", &o::help, "print this help"));
};

int main(int argc, char** argv) {
  runtime_bench_options opt;
  try {
    to::parse_command_line(argc, argv, opt);
  } catch (const to::error& e) {
    std::fprintf(stderr, "runtime_bench: %s\n", e.what());
    return 2;
  }
  if (opt.help) {
    std::fputs(to::command_line_help<runtime_bench_options>(
                   "runtime_bench [options]",
                   "tokens/s of the train_gpt model on local devices, and the executor's overhead on one device.")
                   .c_str(),
               stdout);
    return 0;
  }
  const int steps = int(opt.steps);
  const std::vector<int> counts(opt.devices.begin(), opt.devices.end());
  const auto g = to::lower<model>();
  const double tokens = double(model::config.batch * model::config.seq);
  std::printf("train_gpt model (GPT 2 layers, hidden 64, seq 32, batch 8: %.0f tokens/step), %d steps, median\n",
              tokens, steps);
  std::printf("%-8s %-24s %12s %12s\n", "devices", "plan", "ms/step", "tokens/s");
  for (int n : counts) {
    const auto cl = to::cluster::single_node(n);
    const rt::training_plan dp{to::configs_of(to::strategy{}, g, cl.mesh), 1, cl.mesh};
    const double t_dp = executor_step(g, dp, n, steps);
    std::printf("%-8d %-24s %12.3f %12.0f\n", n, "data parallel", 1e3 * t_dp, tokens / t_dp);
    to::planner_options po;
    po.baselines = false;
    po.micro_batches = {1, 2};
    po.build.prec = to::precisions::fp32;
    const auto pf = to::plan_frontier(g, cl, po);
    const rt::training_plan fast = pf.fastest()->training_plan();
    const double t_fast = executor_step(g, fast, n, steps);
    std::printf("%-8d %-24s %12.3f %12.0f\n", n, ("planner fastest (k=" + std::to_string(fast.micro_batches) + ")").c_str(),
                1e3 * t_fast, tokens / t_fast);
  }
  const auto one = to::cluster::single_node(1);
  const auto cfg = to::configs_of(to::strategy{}, g, one.mesh);
  const double direct = direct_step(g, cfg, steps);
  const double exec = executor_step(g, {cfg, 1, one.mesh}, 1, steps);
  std::printf("\nexecutor overhead on 1 device: executor %.3f ms/step, kernels called directly %.3f ms/step: %+.1f %%\n",
              1e3 * exec, 1e3 * direct, 100 * (exec / direct - 1));
  return 0;
}
