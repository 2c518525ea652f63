// What a kernel sees of its op on one device: the local range of every iteration
// dim, the groups of devices it reduces over, and the counter-based random numbers
// that make dropout identical under any sharding.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>
#include "../cost/config.hpp"
#include "backend.hpp"
#include "comm.hpp"
#include "elementwise.hpp"
#include "sharding.hpp"

namespace tensoropt::runtime {

/// The state a kernel's forward leaves for its backward.
struct op_state {
  std::vector<buffer> saved;
  std::vector<std::int64_t> ints;
};

/// One op on one device: dims, config, device coordinates, communicator (control
/// plane; the CPU kernels' collectives), backend and, where the executor runs it,
/// the backend's data plane (what device kernels use for their collectives).
struct op_context {
  const op_graph& graph;
  const op_node& op;
  int op_index;
  const op_config& cfg;
  const device_mesh& mesh;
  communicator& comm;
  backend& be;
  data_plane* dp = nullptr;      ///< the backend's data plane (null: host collectives through comm)
  std::uint64_t seed = 0;        ///< dropout seed
  std::uint64_t step = 0;        ///< training step (dropout stream)
  index_t micro = 0;             ///< micro-batch index (dropout: global sample index)
  std::vector<op_coords> coords; ///< every rank's coordinates under cfg

  op_context(const op_graph& g, int j, const op_config& c, const device_mesh& m, communicator& cm, backend& b)
      : graph(g), op(g.ops[std::size_t(j)]), op_index(j), cfg(c), mesh(m), comm(cm), be(b) {
    for (index_t r = 0; r < m.devices(); ++r) coords.push_back(coords_of(op, c, m, r));
  }
  const op_coords& me() const { return coords[std::size_t(comm.rank())]; }
  index_t extent(int d) const { return op.dims[std::size_t(d)].extent; }
  index_t blocks(int d) const { return block_of(me(), cfg, d).second; }
  index_t block(int d) const { return block_of(me(), cfg, d).first; }
  index_t len(int d) const { return extent(d) / blocks(d); }
  index_t lo(int d) const { return block(d) * len(d); }
  /// Product of the local lengths of dims [first, last).
  index_t len_range(int first, int last) const {
    index_t n = 1;
    for (int d = first; d < last; ++d) n *= len(d);
    return n;
  }
  /// The devices that differ from this one only in the blocks of the dims in
  /// `mask` (bit d = op dim d), ascending: the group an op reduces over.
  group over(std::uint32_t mask) const {
    group g;
    const int nd = int(op.dims.size());
    for (std::size_t r = 0; r < coords.size(); ++r) {
      bool same = true;
      for (int L = 0; L < max_levels && same; ++L)
        for (int d = 0; d <= nd && same; ++d)
          if (d == nd || !(mask >> d & 1u)) same = coords[r].digit[L][std::size_t(d)] == me().digit[L][std::size_t(d)];
      if (same) g.push_back(int(r));
    }
    return g;
  }
  /// The local shape of the tensor seen through `m` (blocks of the dims it follows).
  extents_t local_shape(const tensor_map& m) const {
    extents_t e{};
    e.fill(1);
    const auto& t = graph.tensors[std::size_t(m.tensor)];
    std::uint32_t seen = 0;
    for (int a = 0; a < t.rank; ++a) {
      e[a] = t.extents[a];
      const int d = m.dim[a];
      if (d >= 0 && !(seen >> d & 1u)) {
        seen |= 1u << d;
        e[a] = len(d);
      }
    }
    return e;
  }
  index_t local_size(const tensor_map& m) const {
    auto e = local_shape(m);
    index_t n = 1;
    for (int a = 0; a < graph.tensors[std::size_t(m.tensor)].rank; ++a) n *= e[a];
    return n;
  }
  buffer zeros(std::size_t n) const { return be.allocate(n); }
};

/// Keep-scale of the dropout mask at a global element (0 = dropped, else 1 / (1 - p)):
/// the op's stream at this step, see elementwise.hpp.
inline float dropout_scale(const op_context& c, std::uint64_t global_index, double p) {
  if (p <= 0) return 1.f;
  return dropout_mask::make(c.seed, dropout_stream(c.step, std::uint64_t(c.op_index)), p).scale(global_index);
}

/// Calls f(local_offset, global_index) for every element of the box of a tensor of
/// global shape `ext` whose local block starts at `lo` with lengths `len`; global
/// indices count whole-batch elements (micro-batch `micro` of a tensor whose leading
/// axis is the batch).
template <class F>
void for_each_global(const extents_t& ext, const extents_t& lo, const extents_t& len, int rank, index_t micro, F&& f) {
  index_t total = 1, local = 1;
  for (int a = 0; a < rank; ++a) {
    total *= ext[a];
    local *= len[a];
  }
  extents_t idx{};
  for (index_t i = 0; i < local; ++i) {
    index_t gidx = 0;
    for (int a = 0; a < rank; ++a) gidx = gidx * ext[a] + lo[a] + idx[a];
    f(i, std::uint64_t(micro * total + gidx));
    for (int a = rank - 1; a >= 0; --a) {
      if (++idx[a] < len[a]) break;
      idx[a] = 0;
    }
  }
}

/// A concat's local geometry, shared by the CPU and CUDA kernels: the product of the
/// output's axes before the concat axis (attr[0]), of those after it, and each input's
/// width along it.
inline void concat_geometry(const op_context& c, index_t& outer, index_t& inner, std::vector<index_t>& widths) {
  const int ax = int(c.op.attr[0]);
  const auto out = c.local_shape(c.op.output);
  const int rank = c.graph.tensors[std::size_t(c.op.output.tensor)].rank;
  outer = 1;
  inner = 1;
  for (int a = 0; a < ax; ++a) outer *= out[a];
  for (int a = ax + 1; a < rank; ++a) inner *= out[a];
  widths.clear();
  for (auto& m : c.op.inputs) widths.push_back(c.local_shape(m)[ax]);
}

}  // namespace tensoropt::runtime
