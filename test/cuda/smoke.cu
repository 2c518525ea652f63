// GPU smoke test: core types are usable in device code; a kernel runs and agrees
// with the host. Exits 77 (skipped) where no GPU is present.
#include <tensoropt/core/config.hpp>
#include <tensoropt/core/dtype.hpp>
#include <cuda_runtime.h>
#include <cstdio>

TENSOROPT_KERNEL void scale(float* x, int n, float a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a * float(tensoropt::size_of(tensoropt::dtype::fp32));
}

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::puts("no CUDA device: skipped");
    return 77;
  }
  constexpr int n = 1 << 16;
  float* d = nullptr;
  if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) return 1;
  static float h[n];
  for (int i = 0; i < n; ++i) h[i] = float(i);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  scale<<<(n + 255) / 256, 256>>>(d, n, 0.5f);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaFree(d);
  for (int i = 0; i < n; ++i)
    if (h[i] != 2.0f * float(i)) { std::printf("mismatch at %d\n", i); return 1; }
  std::puts("ok");
  return 0;
}
