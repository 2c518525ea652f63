// The CUDA kernel glue's common part: what the glue needs from the CUDA backend
// beyond the backend interface, and the dtype dispatch every entry uses.
//
// The glue reads each op's op_context exactly as the CPU kernels do and hands the
// local ranges to the device launchers of cuda/*.cuh: cuda_kernels.cuh (dense and
// transformer ops, and the kernel table), cuda_kernels_cnn.cuh (convolution,
// pooling, batch norm) and cuda_kernels_moe.cuh (the MoE ops).
#pragma once
#include <cuda_runtime.h>
#include <string>
#include <tensoropt/cuda/gemm.cuh>
#include "backend.hpp"
#include "op_context.hpp"

namespace tensoropt::runtime {

/// What the kernel glue needs from the CUDA backend beyond the backend interface.
class cuda_backend_base : public backend {
 public:
  virtual cudaStream_t stream() const = 0;
  virtual cuda::gemm_engine& gemm() = 0;

 protected:
  using backend::backend;
};

namespace cuda_glue {

using cuda::bf16;
using in_t = kernel_inputs;

inline cuda_backend_base& dev(op_context& c) { return static_cast<cuda_backend_base&>(c.be); }

/// Calls f(T{}) with T the element type of dtype t.
template <class F>
void dispatch(dtype t, F&& f) {
  if (t == dtype::fp32) f(float{});
  else if (t == dtype::bf16) f(bf16{});
  else throw invalid_argument("the cuda backend stores fp32 or bf16, not " + std::string(name_of(t)));
}


}  // namespace cuda_glue
}  // namespace tensoropt::runtime
