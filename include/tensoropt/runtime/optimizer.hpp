// Optimizers on parameter shards: SGD with momentum and Adam (bias-corrected).
// Each device updates the shard it owns; the update is elementwise, so any
// sharding of the state gives the same bits as one device.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>
#include "buffer.hpp"
#include "elementwise.hpp"

namespace tensoropt::runtime {

struct optimizer_options {
  enum class kind : std::uint8_t { sgd, adam };
  kind type = kind::sgd;
  float lr = 0.01f;
  float momentum = 0.9f;  ///< SGD
  float beta1 = 0.9f;     ///< Adam
  float beta2 = 0.999f;   ///< Adam
  float eps = 1e-8f;      ///< Adam
  /// Number of state arrays per parameter (momentum; or Adam's m and v).
  int states() const { return type == kind::sgd ? 1 : 2; }
  std::string name() const { return type == kind::sgd ? "sgd" : "adam"; }
};

/// One update of `w` with gradient `g` at step `t` (1-based); `state` holds
/// options.states() arrays of w's size.
inline void optimizer_update(const optimizer_options& o, std::int64_t t, buffer& w, const buffer& g,
                             std::vector<buffer>& state) {
  const std::size_t n = w.size();
  const auto s = optimizer_step::at(o.lr, o.momentum, o.beta1, o.beta2, o.eps, t);
  if (o.type == optimizer_options::kind::sgd) {
    buffer& v = state[0];
    for (std::size_t i = 0; i < n; ++i) sgd_element(s, w[i], v[i], g[i]);
    return;
  }
  buffer &m = state[0], &v = state[1];
  for (std::size_t i = 0; i < n; ++i) adam_element(s, w[i], m[i], v[i], g[i]);
}

}  // namespace tensoropt::runtime
