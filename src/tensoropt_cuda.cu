// The CUDA backend's factory: the one translation unit of tensoropt that nvcc
// compiles in a consumer's build (the tensoropt::cuda CMake target adds it to the
// consumer's sources). It registers the backend under the name "cuda", so code
// built by g++ reaches it through make_backend() (runtime/backend.hpp) without
// including any .cuh. It also registers the GPU calibration (cuda/calibrate.cuh),
// which runtime::calibrate_gpu() calls.
#include <tensoropt/cuda/calibrate.cuh>
#include <tensoropt/runtime/cuda_backend.cuh>

namespace {
const bool tensoropt_cuda_registered =
    tensoropt::runtime::register_backend("cuda", tensoropt::runtime::make_cuda_backend);
const bool tensoropt_gpu_calibrator_registered =
    tensoropt::runtime::register_gpu_calibrator(tensoropt::cuda::measure_gpu);
}  // namespace
