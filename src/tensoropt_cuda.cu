// The CUDA backend's factory: the one translation unit of tensoropt that nvcc
// compiles in a consumer's build (the tensoropt::cuda CMake target adds it to the
// consumer's sources). It registers the backend under the name "cuda", so code
// built by g++ reaches it through make_backend() (runtime/backend.hpp) without
// including any .cuh. It also registers the GPU calibration (cuda/calibrate.cuh),
// which runtime::calibrate_gpu() calls.
//
// Both load cuBLASLt (cuda/libraries.cuh) before they touch the device, so a
// missing library is reported as such (and first) on any machine; the program
// itself links neither cuBLASLt nor NCCL.
#include <tensoropt/cuda/calibrate.cuh>
#include <tensoropt/cuda/libraries.cuh>
#include <tensoropt/runtime/cuda_backend.cuh>

namespace {
std::unique_ptr<tensoropt::runtime::backend> make_backend_after_libraries(const tensoropt::runtime::backend_options& o,
                                                                          tensoropt::runtime::communicator& c) {
  (void)tensoropt::cuda::cublaslt_api();
  return tensoropt::runtime::make_cuda_backend(o, c);
}
bool measure_after_libraries(const tensoropt::runtime::gpu_calibrate_options& o,
                             tensoropt::runtime::gpu_calibration& out, std::string& why) {
  (void)tensoropt::cuda::cublaslt_api();
  return tensoropt::cuda::measure_gpu(o, out, why);
}
const bool tensoropt_cuda_registered =
    tensoropt::runtime::register_backend("cuda", make_backend_after_libraries);
const bool tensoropt_gpu_calibrator_registered = tensoropt::runtime::register_gpu_calibrator(measure_after_libraries);
}  // namespace
