// Compiler and execution-space macros shared by every tensoropt header.
#pragma once

#if defined(__CUDACC__)
#define TENSOROPT_HOST_DEVICE __host__ __device__
#define TENSOROPT_KERNEL __global__ __attribute__((visibility("hidden")))
#define TENSOROPT_CUDA_COMPILATION() 1
#else
#define TENSOROPT_HOST_DEVICE
#define TENSOROPT_KERNEL
#define TENSOROPT_CUDA_COMPILATION() 0
#endif

#define TENSOROPT_VERSION_MAJOR 0
#define TENSOROPT_VERSION_MINOR 1
#define TENSOROPT_VERSION_PATCH 0
