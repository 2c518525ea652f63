// A training run from a plan: pick the plan (a plan file, or the planner's frontier
// and a memory budget), then train it for some steps with checkpoints.
//
// The training programs (examples/train_gpt.cpp, examples/train_cnn.cpp) differ only
// in their model and data; everything between "which plan" and "the loss fell" is
// here, once:
//
//   choose_training_plan(g, cluster, options, budget, plan_path)
//     plan_path given: reads the "tensoropt-plan/1" file, or a "tensoropt-plan/2" file
//     with pipeline stages (plan/plan_file.hpp; chosen_plan::pipeline then holds them),
//     and refuses it, naming the difference, when it was made for another model (its spec,
//     name, batch, ops or dims), another device count, or another precision than the
//     run's (the CPU backend runs fp32 only); otherwise plans `g` on `cluster` and takes the fastest plan within the
//     budget, or with no budget the fastest within the geometric mean of the least
//     and the most memory (a plan between the two ends of the frontier).
//   train(g, plan, world, next_batch, options)
//     (plan: a training_plan, or a pipeline_plan run by pipeline_trainer.hpp)
//     builds the trainer on a local_world or on this process's communicator (MPI),
//     resumes from a checkpoint if asked (the step count continues from it), runs the
//     steps with `next_batch(step)` giving the batch of each global step, and saves
//     a checkpoint if asked. Because the batch depends only on the step number and
//     the executor's random streams and Adam's bias correction only on the step
//     count, a run resumed at step s gives the losses of an uninterrupted run.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include "../plan/pipeline_plan_file.hpp"
#include "../plan/plan_file.hpp"
#include "../plan/planner.hpp"
#include "pipeline_trainer.hpp"
#include "trainer.hpp"

namespace tensoropt::runtime {

/// The precision the CPU backend trains in.
inline constexpr std::string_view cpu_backend_precision = "fp32";

/// The training plan of plan file `f` for graph `g` (given as `model_spec`, may be
/// empty) on `devices` devices of backend `bo`. Throws invalid_argument naming the
/// difference when the plan is for another model, another device count, or a
/// precision other than the run's.
namespace detail {
inline void check_plan_file(const plan_file& f, int devices, const std::string& model_spec, const backend_options& bo) {
  if (bo.kind == "cpu" && f.precision != cpu_backend_precision)
    throw invalid_argument("the plan is for precision " + f.precision + "; the CPU backend runs " +
                           std::string(cpu_backend_precision) + ": plan with --precision " +
                           std::string(cpu_backend_precision));
  if (f.precision != bo.prec.name)
    throw invalid_argument("the plan is for precision " + f.precision + ", this run trains in " +
                           std::string(bo.prec.name) + ": plan with --precision " + std::string(bo.prec.name) +
                           " or run with --precision " + f.precision);
  if (!model_spec.empty() && !f.spec.empty() && f.spec != model_spec)
    throw invalid_argument("the plan was made for another model: " + f.spec + ", this run trains " + model_spec);
  if (f.devices() != devices)
    throw invalid_argument("the plan is for " + std::to_string(f.devices()) + " devices (" +
                           std::to_string(f.nodes) + " x " + std::to_string(f.gpus_per_node) +
                           "), this run has " + std::to_string(devices) + ": plan with --devices " +
                           std::to_string(devices) + " or run on " + std::to_string(f.devices()) + " devices");
}
}  // namespace detail

inline training_plan load_training_plan(const plan_file& f, const op_graph& g, int devices,
                                        const std::string& model_spec = {}, const backend_options& bo = {}) {
  detail::check_plan_file(f, devices, model_spec, bo);
  if (f.pipeline_degree > 1)
    throw invalid_argument("the plan has " + std::to_string(f.pipeline_degree) +
                           " pipeline stages: read it with load_pipeline_plan and run it with pipeline_trainer");
  return plan_for_graph(f, g);
}

/// The pipeline plan of plan file `f` (a "/1" file is a one-stage plan), checked as
/// load_training_plan checks it; throws invalid_argument when its stages do not fit.
inline pipeline_plan load_pipeline_plan(const plan_file& f, const op_graph& g, int devices,
                                        const std::string& model_spec = {}, const backend_options& bo = {}) {
  detail::check_plan_file(f, devices, model_spec, bo);
  return pipeline_plan_for_graph(f, g);
}

/// The plan a run executes and what the planner predicted for it.
struct chosen_plan {
  training_plan plan;     ///< the plan (when `pipeline` has one stage)
  pipeline_plan pipeline; ///< a plan file's pipeline stages (degree 1: none; run `plan`)
  seconds time{};         ///< predicted iteration time
  bytes memory{};         ///< predicted peak memory per device
  std::string source;     ///< "plan file p.json" or "plan #3 of 12 (fastest within 4.0 MiB)"
  std::string summary;    ///< "dp 2 x tp 2, recompute 1/2 layers"
};

/// Picks the plan of a run; see the header comment. Throws invalid_argument for a
/// plan file that does not fit, infeasible when no plan fits the budget.
inline chosen_plan choose_training_plan(const op_graph& g, const cluster& cl, const planner_options& po,
                                        std::optional<bytes> budget, const std::string& plan_path = {},
                                        const std::string& model_spec = {}, const backend_options& bo = {}) {
  chosen_plan c;
  if (!plan_path.empty()) {
    const auto f = load_plan_file(plan_path);
    if (f.pipeline_degree > 1) c.pipeline = load_pipeline_plan(f, g, int(cl.mesh.devices()), model_spec, bo);
    else c.plan = load_training_plan(f, g, int(cl.mesh.devices()), model_spec, bo);
    c.time = f.time;
    c.memory = f.memory;
    c.source = "plan file " + plan_path;
    c.summary = f.summary;
    return c;
  }
  const auto pf = plan_frontier(g, cl, po);
  const auto p = budget ? pf.fastest_within(*budget) : pf.middle();
  if (!p) throw infeasible(budget ? pf.no_fit_message(*budget) : std::string("the planner found no plan"));
  c.plan = p->training_plan();
  c.time = p->time();
  c.memory = p->memory();
  c.source = "plan #" + std::to_string(p->index()) + " of " + std::to_string(pf.size()) + " (fastest within " +
             (budget ? format_bytes(*budget) : "the frontier's middle memory") + ")";
  c.summary = p->summary();
  return c;
}

struct training_options {
  int steps = 60;                 ///< steps to run in this call
  optimizer_options optimizer{};
  std::uint64_t seed = 1234;      ///< initial weights and random streams
  backend_options backend{};      ///< where the devices run and in which precision
  std::string resume;             ///< checkpoint to start from (empty: fresh weights)
  std::string save;               ///< checkpoint to write after the steps (empty: none)
  /// Called after every step with the global step number, its loss and its seconds.
  std::function<void(std::int64_t, float, double)> on_step;
};

struct training_result {
  std::int64_t first_step = 0;    ///< global step number of the first step run
  float first_loss = 0, last_loss = 0;
  double seconds = 0;             ///< wall time of the steps
  double kernel_seconds = 0;      ///< of device 0 of this process
  std::int64_t peak_bytes = 0;    ///< most memory of a device of this process in one step
  std::vector<std::int64_t> device_peak_bytes;  ///< the same per device of this process, in rank order
};

namespace detail {
inline executor& executor_of(executor& e) { return e; }
inline executor& executor_of(pipeline_stage& s) { return s.stage_executor(); }

/// The steps and checkpoints of train(), on a trainer or a pipeline_trainer.
template <class Trainer>
training_result run_training(Trainer& tr, const std::function<batch(std::int64_t)>& next_batch,
                             const training_options& o) {
  if (!o.resume.empty()) tr.load(o.resume);
  training_result r;
  r.first_step = executor_of(tr.device(0)).steps();
  const double kernels0 = executor_of(tr.device(0)).kernel_seconds();
  for (int s = 0; s < o.steps; ++s) {
    const std::int64_t step = r.first_step + s;
    const auto b = next_batch(step);
    const auto t0 = std::chrono::steady_clock::now();
    const float loss = tr.step(b);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.seconds += dt;
    if (s == 0) r.first_loss = loss;
    r.last_loss = loss;
    const auto mem = tr.memory();
    r.device_peak_bytes.resize(mem.size());
    for (std::size_t d = 0; d < mem.size(); ++d) {
      r.device_peak_bytes[d] = std::max(r.device_peak_bytes[d], mem[d].peak);
      r.peak_bytes = std::max(r.peak_bytes, mem[d].peak);
    }
    if (o.on_step) o.on_step(step, loss, dt);
  }
  r.kernel_seconds = executor_of(tr.device(0)).kernel_seconds() - kernels0;
  if (!o.save.empty()) tr.save(o.save);
  return r;
}
}  // namespace detail

/// Trains `g` under `plan` on `world` (a local_world, or this process's
/// communicator of an SPMD run); see the header comment.
template <class World>
training_result train(const op_graph& g, const training_plan& plan, World& world,
                      const std::function<batch(std::int64_t)>& next_batch, const training_options& o) {
  tensoropt::detail::require(o.steps >= 0, "train: the step count must be >= 0, got " + std::to_string(o.steps));
  trainer tr(g, plan, world, o.optimizer, o.seed, o.backend);
  return detail::run_training(tr, next_batch, o);
}

/// Trains `g` under the pipeline plan `plan` (runtime/pipeline.hpp); as above.
template <class World>
training_result train(const op_graph& g, const pipeline_plan& plan, World& world,
                      const std::function<batch(std::int64_t)>& next_batch, const training_options& o) {
  tensoropt::detail::require(o.steps >= 0, "train: the step count must be >= 0, got " + std::to_string(o.steps));
  pipeline_trainer tr(g, plan, world, o.optimizer, o.seed, o.backend);
  return detail::run_training(tr, next_batch, o);
}

}  // namespace tensoropt::runtime
