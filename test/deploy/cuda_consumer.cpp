// A consumer of the installed CUDA target, built by g++: tensoropt::cuda adds the
// backend's factory source (compiled by nvcc in this build), which registers the
// "cuda" backend. Without a GPU, making the backend fails with a one-line error.
#include <tensoropt/runtime/backend.hpp>
#include <tensoropt/runtime/comm.hpp>
#include <cstdio>

namespace rt = tensoropt::runtime;

int main() {
  if (!rt::has_backend("cuda")) {
    std::printf("tensoropt cuda consumer: the cuda backend is not registered\n");
    return 1;
  }
  rt::local_world w(1);
  try {
    w.run([](rt::communicator& c) {
      auto be = rt::make_backend({.kind = "cuda"}, c);
      auto x = be->upload(std::vector<float>{1.f, 2.f, 3.f});
      be->accumulate(x, x);
      const auto v = be->download(x);
      std::printf("tensoropt cuda consumer: %s backend, 1+1 = %g\n", be->name().c_str(), double(v[0]));
    });
  } catch (const tensoropt::error& e) {
    std::printf("tensoropt cuda consumer: backend registered; no device: %s\n", e.what());
  }
  return 0;
}
