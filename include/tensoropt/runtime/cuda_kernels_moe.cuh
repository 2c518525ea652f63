// The CUDA backend's glue for the mixture-of-experts op kinds (GShard): moe_gate,
// moe_dispatch, moe_experts and moe_combine, forward and backward, read from the
// op_context exactly as the CPU kernels read it (runtime/kernels_moe.hpp) and
// handed to the device launchers of cuda/kernels_moe.cuh and cuda/kernels_experts.cuh.
//
// Where the CPU kernel calls a collective in the middle of an op, the glue runs
// the launchers' phases around the same collective on the device data plane
// (c.dp), over the same group and in the same order:
//   gate fwd:     logits = x Wg -> [all-reduce over split h] -> [all-gather over
//                 split e, reassembled into columns] -> softmax, top-k, gates
//   gate bwd:     [all-gather dgates over split e] -> dz -> dx = dz Wg^T, dWg = x^T dz
//   dispatch and combine fwd: [all-gather the gates over split s, reassembled
//                 into the whole token dim] -> slots -> scatter / weighted gather
//   experts fwd:  H = x W1 -> [all-reduce H over split h] -> y = gelu(H) W2
//   experts bwd:  dA = dy W2^T, dW2 -> [all-reduce dA over split h] -> dW1, dx
// A group of one member moves nothing (as the CPU communicators do for it).
//
// Saved state matches the CPU's: the gate's probabilities and top-k mask (fp32,
// counted) and the experts' pre-activation H (counted, the activation dtype), so
// the requested-bytes peak of an fp32 plan is the CPU's. The routing slots, which
// the CPU keeps in op_state::ints (charged to the device by the executor,
// executor_state.hpp), live in a counted device buffer kept in op_state::saved (int64
// values in 8-byte pairs of fp32 elements); gathered gates and logits are uncounted
// scratch, as the CPU's std::vector workspaces are.
//
// Exactness: fp32 sums visit their terms in the CPU's order (softmax, the combine
// over experts, the dispatch-backward sum over experts, the gate's double dot);
// the GEMMs are cuBLASLt's with TF32 off, so fp32 results agree with the CPU's to
// rounding, not bit for bit. A routing decision that flips on a tie of rounded
// logits (bf16-mixed) routes a token differently from the CPU; that is inherent.
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <string>
#include <tensoropt/cuda/kernels_experts.cuh>
#include <tensoropt/cuda/kernels_moe.cuh>
#include <vector>
#include "cuda_kernels.cuh"

namespace tensoropt::runtime::cuda_glue {

namespace moe_detail {

/// The device data plane of the op, or a clear error where the executor gave none.
inline data_plane& plane(op_context& c, const char* what) {
  if (!c.dp)
    throw invalid_argument(std::string(what) + ": a split MoE op on the cuda backend needs the device data plane "
                           "(run it through the executor)");
  return *c.dp;
}

/// A counted device buffer for n int64 values (the routing slots; the CPU charges its
/// op_state::ints alike).
inline buffer slot_buffer(op_context& c, std::size_t n) {
  return c.be.allocate(2 * std::max<std::size_t>(n, 1), dtype::fp32);
}
inline std::int64_t* slots(buffer& b) { return static_cast<std::int64_t*>(b.raw()); }
inline const std::int64_t* slots(const buffer& b) { return static_cast<const std::int64_t*>(b.raw()); }

/// The shard geometry of dispatch and combine: dims [g, s, e, c, h].
inline cuda::kernels::moe_geometry geometry_of(const op_context& c) {
  cuda::kernels::moe_geometry m;
  m.g = c.len(0);
  m.s = c.len(1);
  m.e = c.len(2);
  m.c = c.len(3);
  m.h = c.len(4);
  m.slo = c.lo(1);
  m.clo = c.lo(3);
  m.tokens = c.extent(1);
  return m;
}

/// The slot of every local (group, token, expert) from the gates [g, s, e] of this
/// shard: all-gathered over a split token dim (dim 1), as detail::routes on the CPU.
inline buffer routes(op_context& c, const buffer& gates) {
  const auto m = geometry_of(c);
  const group g = c.over(1u << 1);
  buffer slot = slot_buffer(c, std::size_t(m.g * m.s * m.e));
  const auto s = dev(c).stream();
  dispatch(gates.type(), [&]<class T>(T) {
    if (g.size() == 1) {
      cuda::kernels::moe_routes(s, m, gates.as<T>(), slots(slot));
      return;
    }
    buffer all = c.be.scratch(gates.size() * g.size(), gates.type());
    buffer full = c.be.scratch(gates.size() * g.size(), gates.type());
    plane(c, "moe routes").all_gather(g, gates, all);
    cuda::kernels::assemble_tokens(s, all.as<T>(), full.as<T>(), std::int64_t(g.size()), m.g, m.s, m.e);
    cuda::kernels::moe_routes(s, m, full.as<T>(), slots(slot));
  });
  return slot;
}

/// [rows x w] blocks of every member of g gathered into [rows x (members * w)]
/// (detail::gather_columns on the CPU); the local buffer itself when g has one member.
inline buffer gather_columns(op_context& c, const group& g, const buffer& local, std::int64_t rows, std::int64_t w,
                             const char* what) {
  buffer full = c.be.scratch(local.size() * g.size(), local.type());
  if (g.size() == 1) {
    if (local.bytes())
      TENSOROPT_CUDA_CHECK(
          cudaMemcpyAsync(full.raw(), local.raw(), local.bytes(), cudaMemcpyDeviceToDevice, dev(c).stream()));
    return full;
  }
  buffer all = c.be.scratch(local.size() * g.size(), local.type());
  plane(c, what).all_gather(g, local, all);
  dispatch(local.type(), [&]<class T>(T) {
    cuda::kernels::assemble_columns(dev(c).stream(), all.as<T>(), full.as<T>(), std::int64_t(g.size()), rows, w);
  });
  return full;
}

}  // namespace moe_detail

// ---- moe_gate: dims [g, s, e, h]; x[g, s, h], Wg[h, e] -> gates[g, s, e] ----
// saved: probabilities and top-k mask [tokens x E] (fp32).
inline buffer moe_gate_fwd(op_context& c, in_t in, in_t par, op_state& st) {
  const index_t t = c.len(0) * c.len(1), el = c.len(2), hl = c.len(3), E = c.extent(2), elo = c.lo(2);
  const index_t k = std::max<std::int64_t>(1, c.op.attr[0]);
  buffer y = c.zeros(std::size_t(t * el));
  buffer logits = c.be.scratch(std::size_t(t * el), y.type());
  dispatch(y.type(), [&]<class T>(T) {
    dev(c).gemm().run(cuda::gemm_args<T>{.m = t, .n = el, .k = hl, .a = in[0]->as<T>(), .b = par[0]->as<T>(),
                                         .c = logits.as<T>()});
  });
  const group gh = c.over(1u << 3);
  if (gh.size() > 1) moe_detail::plane(c, "moe_gate").all_reduce(gh, logits);
  buffer full = moe_detail::gather_columns(c, c.over(1u << 2), logits, t, el, "moe_gate");
  buffer prob = c.be.allocate(std::size_t(t * E), dtype::fp32), mask = c.be.allocate(std::size_t(t * E), dtype::fp32);
  const bool write = c.block(3) == 0;  // gates are partial over split h: one term holds them
  dispatch(y.type(), [&]<class T>(T) {
    cuda::kernels::moe_gate_forward(dev(c).stream(), full.as<T>(), prob.as<float>(), mask.as<float>(), y.as<T>(), t,
                                    E, el, elo, k, write);
  });
  st.saved.push_back(std::move(prob));
  st.saved.push_back(std::move(mask));
  return y;
}
inline void moe_gate_bwd(op_context& c, in_t in, in_t par, op_state& st, const buffer& dy, std::vector<buffer>& din,
                         std::vector<buffer>& dpar) {
  const index_t t = c.len(0) * c.len(1), el = c.len(2), hl = c.len(3), E = c.extent(2), elo = c.lo(2);
  buffer dg = moe_detail::gather_columns(c, c.over(1u << 2), dy, t, el, "moe_gate backward");
  buffer dz = c.be.scratch(std::size_t(t * el), dy.type());
  auto& e = dev(c).gemm();
  dispatch(dy.type(), [&]<class T>(T) {
    cuda::kernels::moe_gate_backward(dev(c).stream(), st.saved[0].as<float>(), st.saved[1].as<float>(), dg.as<T>(),
                                     dz.as<T>(), t, E, el, elo);
    if (din[0].size())
      e.run(cuda::gemm_args<T>{.trans_b = true, .m = t, .n = hl, .k = el, .a = dz.as<T>(), .b = par[0]->as<T>(),
                               .c = din[0].as<T>()});
    e.run(cuda::gemm_args<T>{.trans_a = true, .m = hl, .n = el, .k = t, .a = in[0]->as<T>(), .b = dz.as<T>(),
                             .c = dpar[0].as<T>()});
  });
}

// ---- moe_dispatch: dims [g, s, e, c, h]; x[g, s, h], gates[g, s, e] -> y[e, g, c, h] ----
// saved: the routing slots (counted, as the CPU's).
inline buffer moe_dispatch_fwd(op_context& c, in_t in, in_t, op_state& st) {
  const auto m = moe_detail::geometry_of(c);
  buffer slot = moe_detail::routes(c, *in[1]);
  buffer y = c.zeros(std::size_t(m.e * m.g * m.c * m.h));
  dispatch(y.type(), [&]<class T>(T) {
    cuda::kernels::moe_dispatch_forward(dev(c).stream(), m, in[0]->as<T>(), moe_detail::slots(slot), y.as<T>());
  });
  st.saved.push_back(std::move(slot));
  return y;
}
inline void moe_dispatch_bwd(op_context& c, in_t, in_t, op_state& st, const buffer& dy, std::vector<buffer>& din,
                             std::vector<buffer>&) {
  if (!din[0].size()) return;
  const auto m = moe_detail::geometry_of(c);
  dispatch(dy.type(), [&]<class T>(T) {
    cuda::kernels::moe_dispatch_backward(dev(c).stream(), m, dy.as<T>(), moe_detail::slots(st.saved[0]),
                                         din[0].as<T>());
  });
}

// ---- moe_combine: dims [g, s, e, c, h]; y[e, g, c, h], gates[g, s, e] -> out[g, s, h] ----
// saved: the routing slots (counted, as the CPU's).
inline buffer moe_combine_fwd(op_context& c, in_t in, in_t, op_state& st) {
  const auto m = moe_detail::geometry_of(c);
  buffer slot = moe_detail::routes(c, *in[1]);
  buffer out = c.zeros(std::size_t(m.g * m.s * m.h));
  dispatch(out.type(), [&]<class T>(T) {
    cuda::kernels::moe_combine_forward(dev(c).stream(), m, in[0]->as<T>(), in[1]->as<T>(), moe_detail::slots(slot),
                                       out.as<T>());
  });
  st.saved.push_back(std::move(slot));
  return out;
}
inline void moe_combine_bwd(op_context& c, in_t in, in_t, op_state& st, const buffer& dy, std::vector<buffer>& din,
                            std::vector<buffer>&) {
  const auto m = moe_detail::geometry_of(c);
  dispatch(dy.type(), [&]<class T>(T) {
    cuda::kernels::moe_combine_backward(dev(c).stream(), m, in[0]->as<T>(), in[1]->as<T>(),
                                        moe_detail::slots(st.saved[0]), dy.as<T>(),
                                        din[0].size() ? din[0].as<T>() : nullptr,
                                        din[1].size() ? din[1].as<T>() : nullptr);
  });
}

// ---- moe_experts: dims [e, g, c, h, f]; x[e, g, c, h], W1[e, h, f], W2[e, f, h] ----
// saved: the pre-activation H[e, g*c, f] (reduced over split h).
inline cuda::kernels::experts_geometry experts_of(const op_context& c) {
  return {c.len(0), c.len(1) * c.len(2), c.len(3), c.len(4)};
}
inline buffer moe_experts_fwd(op_context& c, in_t in, in_t par, op_state& st) {
  const auto d = experts_of(c);
  buffer h = c.zeros(std::size_t(d.e * d.t * d.f)), y = c.zeros(std::size_t(d.e * d.t * d.h));
  buffer ws = c.be.scratch(std::size_t(d.workspace()), y.type());
  auto& e = dev(c).gemm();
  const group gh = c.over(1u << 3);
  dispatch(y.type(), [&]<class T>(T) {
    cuda::kernels::experts_forward_first(e, d, in[0]->as<T>(), par[0]->as<T>(), h.as<T>());
    if (gh.size() > 1) moe_detail::plane(c, "moe_experts").all_reduce(gh, h);
    cuda::kernels::experts_forward_second(e, d, h.as<T>(), par[1]->as<T>(), y.as<T>(), ws.as<T>());
  });
  st.saved.push_back(std::move(h));
  return y;
}
inline void moe_experts_bwd(op_context& c, in_t in, in_t par, op_state& st, const buffer& dy,
                            std::vector<buffer>& din, std::vector<buffer>& dpar) {
  const auto d = experts_of(c);
  buffer da = c.be.scratch(std::size_t(d.e * d.t * d.f), dy.type());
  buffer ws = c.be.scratch(std::size_t(d.workspace()), dy.type());
  auto& e = dev(c).gemm();
  const group gh = c.over(1u << 3);
  dispatch(dy.type(), [&]<class T>(T) {
    const T* h = st.saved[0].as<T>();
    cuda::kernels::experts_backward_first(e, d, h, par[1]->as<T>(), dy.as<T>(), da.as<T>(), dpar[1].as<T>(),
                                          ws.as<T>());
    if (gh.size() > 1) moe_detail::plane(c, "moe_experts backward").all_reduce(gh, da);
    cuda::kernels::experts_backward_second(e, d, in[0]->as<T>(), par[0]->as<T>(), h, da.as<T>(), dpar[0].as<T>(),
                                           din[0].size() ? din[0].as<T>() : nullptr);
  });
}

/// The kernels of a MoE op kind on the CUDA backend; an empty kernel for any other kind.
inline kernel moe_kernel_of(op_kind k) {
  switch (k) {
    case op_kind::moe_gate: return {moe_gate_fwd, moe_gate_bwd};
    case op_kind::moe_dispatch: return {moe_dispatch_fwd, moe_dispatch_bwd};
    case op_kind::moe_experts: return {moe_experts_fwd, moe_experts_bwd};
    case op_kind::moe_combine: return {moe_combine_fwd, moe_combine_bwd};
    default: return {};
  }
}

}  // namespace tensoropt::runtime::cuda_glue
