// Collective costs in the alpha-beta model with ring algorithms.
//
// A group spans `ranks[L]` devices at mesh level L (0 = nodes, 1 = GPUs in a node);
// its size is ranks[0] * ranks[1]. On one level with n ranks, link bandwidth B and
// latency a, S bytes:
//   all-reduce      2(n-1)/n * S/B + 2(n-1)a     (S = the buffer on each rank)
//   all-gather       (n-1)/n * S/B +  (n-1)a     (S = the gathered result per rank)
//   reduce-scatter   (n-1)/n * S/B +  (n-1)a     (S = the input per rank)
//   all-to-all       (n-1)/n * S/B +  (n-1)a     (S = the buffer on each rank)
// A group with n0 > 1 nodes and n1 > 1 GPUs per node is costed hierarchically
// (intra-node link for the n1 part, inter-node link for the n0 part):
//   all-reduce     = RS_intra(n1, S) + AR_inter(n0, S/n1) + AG_intra(n1, S)
//   all-gather     = AG_inter(n0, S/n1) + AG_intra(n1, S)
//   reduce-scatter = RS_intra(n1, S) + RS_inter(n0, S/n1)
//   all-to-all     = A2A_intra(n1, S) + A2A_inter(n0, S)
// A group of one device costs nothing.
#pragma once
#include <array>
#include "../core/dims.hpp"
#include "cluster.hpp"

namespace tensoropt {

enum class collective : std::uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all };

/// Devices a collective runs over: ranks[L] at mesh level L.
struct comm_group {
  std::array<index_t, 2> ranks{1, 1};
  constexpr index_t size() const { return ranks[0] * ranks[1]; }
  constexpr bool operator==(const comm_group&) const = default;
};

/// Ring time of `c` over n ranks of one link for S bytes (formulas above).
constexpr seconds ring_time(collective c, index_t n, double s, const link& l) {
  if (n <= 1 || s < 0) return seconds(0);
  const double f = double(n - 1) / double(n);
  const double steps = double(n - 1);
  const double k = c == collective::all_reduce ? 2.0 : 1.0;
  return seconds(k * f * s / l.bw.value + k * steps * l.latency.value);
}

/// Time of `c` over group `g` on cluster `cl` for S bytes (hierarchical when the
/// group spans both levels; see the file comment).
constexpr seconds collective_time(collective c, const comm_group& g, bytes s, const cluster& cl) {
  const index_t n0 = g.ranks[0], n1 = g.ranks[1];
  const link& inter = cl.inter_link;
  const link& intra = cl.intra_link;
  const double S = s.value;
  if (n0 <= 1) return ring_time(c, n1, S, intra);
  if (n1 <= 1) return ring_time(c, n0, S, inter);
  switch (c) {
    case collective::all_reduce:
      return ring_time(collective::reduce_scatter, n1, S, intra) +
             ring_time(collective::all_reduce, n0, S / double(n1), inter) +
             ring_time(collective::all_gather, n1, S, intra);
    case collective::all_gather:
      return ring_time(collective::all_gather, n0, S / double(n1), inter) +
             ring_time(collective::all_gather, n1, S, intra);
    case collective::reduce_scatter:
      return ring_time(collective::reduce_scatter, n1, S, intra) +
             ring_time(collective::reduce_scatter, n0, S / double(n1), inter);
    case collective::all_to_all:
      return ring_time(collective::all_to_all, n1, S, intra) + ring_time(collective::all_to_all, n0, S, inter);
  }
  return seconds(0);
}

constexpr seconds all_reduce(const comm_group& g, bytes s, const cluster& cl) {
  return collective_time(collective::all_reduce, g, s, cl);
}
constexpr seconds all_gather(const comm_group& g, bytes s, const cluster& cl) {
  return collective_time(collective::all_gather, g, s, cl);
}
constexpr seconds reduce_scatter(const comm_group& g, bytes s, const cluster& cl) {
  return collective_time(collective::reduce_scatter, g, s, cl);
}
constexpr seconds all_to_all(const comm_group& g, bytes s, const cluster& cl) {
  return collective_time(collective::all_to_all, g, s, cl);
}

}  // namespace tensoropt
