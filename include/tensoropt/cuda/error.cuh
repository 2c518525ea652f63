// Error checking for the CUDA runtime, cuBLAS / cuBLASLt and NCCL: every call goes
// through a check macro that throws a tensoropt error naming the call, file:line
// and the library's own error string.
//
// Why exceptions: the runtime is host code that already reports collectives past
// their deadline, shapes and budgets as `tensoropt::error`s; a CUDA failure is one
// more way a step fails and reaches the user the same way (one line, actionable).
// Device code never throws or asserts. An out-of-memory result gets its own type
// (`cuda::out_of_memory`) so a caller can tell "the plan does not fit" from a bug.
//
// The cuBLAS and NCCL checks only exist where their headers do; they read the
// libraries' error strings through the run-time loaded tables (libraries.cuh), so
// nothing here links cuBLASLt or NCCL.
#pragma once
#include <cuda_runtime.h>
#include <string>
#include "../core/error.hpp"
#if __has_include(<cublasLt.h>) && __has_include(<nccl.h>)
#include "libraries.cuh"
#define TENSOROPT_HAS_CUBLASLT 1
#define TENSOROPT_HAS_NCCL 1
#endif

namespace tensoropt::cuda {

/// A CUDA, cuBLAS(Lt) or NCCL call failed.
class cuda_error : public runtime_error {
 public:
  using runtime_error::runtime_error;
};
/// A device allocation failed: the device has too little free memory.
class out_of_memory : public cuda_error {
 public:
  using cuda_error::cuda_error;
};

namespace detail {
inline std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " at " + file + ":" + std::to_string(line);
}
[[noreturn]] inline void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // reset a non-sticky error, so the next launch check does not report it again
  const std::string msg = "CUDA error " + std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ") in " +
                          where(call, file, line);
  if (e == cudaErrorMemoryAllocation) throw out_of_memory(msg + "; free device memory or pick a plan that needs less");
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
    throw cuda_error(msg + "; run on a machine with an NVIDIA GPU and driver, or use the CPU backend");
  throw cuda_error(msg);
}
inline void check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) throw_cuda(e, call, file, line);
}
#ifdef TENSOROPT_HAS_CUBLASLT
inline void check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  const std::string msg = "cuBLAS error " + std::string(cublaslt_api().cublasLtGetStatusName(s)) + " (" +
                          cublaslt_api().cublasLtGetStatusString(s) + ") in " + where(call, file, line);
  if (s == CUBLAS_STATUS_ALLOC_FAILED) throw out_of_memory(msg);
  throw cuda_error(msg);
}
#endif
#ifdef TENSOROPT_HAS_NCCL
inline void check_nccl(ncclResult_t r, const char* call, const char* file, int line) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  const auto& api = nccl_api();
  const char* last = api.ncclGetLastError(nullptr);
  throw cuda_error("NCCL error " + std::to_string(int(r)) + " (" + api.ncclGetErrorString(r) + ") in " +
                   where(call, file, line) + (last && *last ? std::string(": ") + last : std::string()));
}
#endif
}  // namespace detail

/// Number of CUDA devices; 0 where there is no GPU or no driver (never throws).
inline int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

/// Throws cuda_error unless device `d` exists, naming how many there are.
inline void require_device(int d = 0) {
  const int n = device_count();
  if (n == 0) throw cuda_error("no CUDA device found (no GPU or no NVIDIA driver); use --backend cpu");
  if (d < 0 || d >= n)
    throw cuda_error("CUDA device " + std::to_string(d) + " does not exist: this machine has " + std::to_string(n) +
                     "; plan for at most " + std::to_string(n) + " devices or run with more GPUs");
}

}  // namespace tensoropt::cuda

/// Checks a CUDA runtime call: throws cuda::cuda_error (or cuda::out_of_memory).
#define TENSOROPT_CUDA_CHECK(...) ::tensoropt::cuda::detail::check_cuda((__VA_ARGS__), #__VA_ARGS__, __FILE__, __LINE__)
/// Checks the last kernel launch (launch-configuration errors).
#define TENSOROPT_CUDA_CHECK_LAUNCH() TENSOROPT_CUDA_CHECK(cudaGetLastError())
/// Checks a cuBLAS / cuBLASLt call.
#define TENSOROPT_CUBLAS_CHECK(...) \
  ::tensoropt::cuda::detail::check_cublas((__VA_ARGS__), #__VA_ARGS__, __FILE__, __LINE__)
/// Checks an NCCL call (ncclInProgress of a non-blocking communicator counts as success).
#define TENSOROPT_NCCL_CHECK(...) ::tensoropt::cuda::detail::check_nccl((__VA_ARGS__), #__VA_ARGS__, __FILE__, __LINE__)
