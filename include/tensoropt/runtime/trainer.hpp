// The trainer: a graph, a plan and devices; `step(batch)` returns the loss.
//
// On a local_world it holds one executor per device and runs each step on all of
// them (one thread per device); on any other communicator (MPI) it is this process's
// device of an SPMD run, and every process calls the same methods.
#pragma once
#include <memory>
#include <string>
#include <vector>
#include "checkpoint.hpp"
#include "executor.hpp"

namespace tensoropt::runtime {

/// The trainer over any per-device runner `Device` (constructible as
/// Device(graph, plan, communicator&, optimizer_options, seed, backend_options), with
/// step, gather, memory and the save_checkpoint / load_checkpoint overloads):
/// `trainer` runs an executor per device, pipeline_trainer.hpp a pipeline_stage.
template <class Device, class Plan>
class basic_trainer {
 public:
  /// N local devices as threads. Throws invalid_argument when the plan does not
  /// fit the graph or its device count is not the world's.
  /// `bo` chooses the backend (default: cpu). Each device's runner (and its
  /// backend) is made on that device's thread.
  basic_trainer(const op_graph& g, const Plan& plan, local_world& world, optimizer_options opt = {},
                std::uint64_t seed = 1234, const backend_options& bo = {})
      : world_(&world) {
    devices_.resize(std::size_t(world.size()));
    world.run([&](communicator& c) {
      devices_[std::size_t(c.rank())] = std::make_unique<Device>(g, plan, c, opt, seed, bo);
    });
  }
  /// This process's device of an SPMD run on `comm` (e.g. runtime::mpi_comm).
  basic_trainer(const op_graph& g, const Plan& plan, communicator& comm, optimizer_options opt = {},
                std::uint64_t seed = 1234, const backend_options& bo = {}) {
    devices_.push_back(std::make_unique<Device>(g, plan, comm, opt, seed, bo));
  }

  /// One step on the global batch; returns the loss (the same on every device).
  float step(const batch& b) {
    std::vector<float> loss(devices_.size());
    each([&](Device& d, std::size_t i) { loss[i] = d.step(b); });
    return loss[0];
  }
  /// The whole parameter `name`, gathered from its shards.
  std::vector<float> parameter(const std::string& name) {
    std::vector<std::vector<float>> v(devices_.size());
    each([&](Device& d, std::size_t i) { v[i] = d.gather(name); });
    return v[0];
  }
  /// Memory of each device of this process: current bytes and the last step's peak.
  std::vector<memory_stats> memory() const {
    std::vector<memory_stats> m;
    for (auto& d : devices_) m.push_back(d->memory());
    return m;
  }
  void save(const std::string& path) {
    each([&](Device& d, std::size_t) { save_checkpoint(d, path); });
  }
  void load(const std::string& path) {
    each([&](Device& d, std::size_t) { load_checkpoint(d, path); });
  }
  Device& device(std::size_t i) { return *devices_.at(i); }
  std::size_t local_devices() const { return devices_.size(); }

 private:
  template <class F>
  void each(F&& f) {
    if (!world_) {
      f(*devices_[0], 0);
      return;
    }
    world_->run([&](communicator& c) { f(*devices_[std::size_t(c.rank())], std::size_t(c.rank())); });
  }
  local_world* world_ = nullptr;
  std::vector<std::unique_ptr<Device>> devices_;
};

/// One executor per device.
using trainer = basic_trainer<executor, training_plan>;

}  // namespace tensoropt::runtime
