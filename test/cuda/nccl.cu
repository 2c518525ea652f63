// NCCL wrappers on a single-rank communicator: the unique id survives a trip
// through bytes, every collective and a grouped send / receive move the data,
// sub-communicators split off, and a collective that cannot finish (its stream is
// held by a kernel that waits for a flag, as a rank waits for a peer that skipped
// the collective) is aborted at the deadline with an error naming the collective
// and the group. Exits 77 (skipped) without a GPU.
#include <tensoropt/cuda/nccl.cuh>
#include <algorithm>
#include <chrono>
#include <span>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>
#include "harness.cuh"

namespace cu = tensoropt::cuda;
using harness::darray;
using harness::random;

namespace nccl_test {
/// Holds its stream until the host sets *flag (a peer that never arrives).
TENSOROPT_KERNEL void wait_for_flag(const volatile int* flag) {
  while (*flag == 0) __nanosleep(1000);
}
}  // namespace nccl_test

namespace {

/// A one-rank host communicator with the all_gather of runtime::communicator
/// (the real one needs the CPU backend's BLAS headers, absent on GPU machines).
struct one_rank_comm {
  int rank() const { return 0; }
  void all_gather(const std::vector<int>& g, std::span<const float> in, std::span<float> out) {
    for (std::size_t i = 0; i < g.size(); ++i) std::copy(in.begin(), in.end(), out.begin() + std::ptrdiff_t(i * in.size()));
  }
};

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

void collectives() {
  cu::stream s(0);
  const auto id = cu::nccl_unique_id::create();
  one_rank_comm host;
  CHECK_TRUE(cu::nccl_unique_id::from_floats(id.to_floats()).bytes == id.bytes);
  CHECK_TRUE(cu::share_unique_id(host, {0}).bytes != cu::nccl_unique_id{}.bytes);  // a fresh id arrived
  auto joined = cu::nccl_communicator::join(host, {0}, 0, "world");
  CHECK_TRUE(joined.handle().size() == 1 && joined.handle().name() == "world");
  try {
    (void)cu::nccl_communicator::join(host, {1}, 0, "other");
    CHECK_TRUE(false);
  } catch (const tensoropt::invalid_argument& e) {
    CHECK_TRUE(contains(e.what(), "rank 0 is not a member"));
  }
  cu::nccl_communicator comm(cu::nccl_unique_id::from_bytes(id.bytes), 1, 0, 0, "dp{0}");
  auto r = comm.handle();
  CHECK_TRUE(r.rank() == 0 && r.size() == 1 && r.name() == "dp{0}");
  const auto x = random(1000, -1, 1, false, 1);
  darray<float> a(x), b(x.size()), c(x.size()), d(x.size());
  r.all_reduce(a.data(), a.data(), x.size(), s);
  r.reduce_scatter(a.data(), b.data(), x.size(), s);
  r.all_gather(b.data(), c.data(), x.size(), s);
  {
    cu::nccl_group g;
    r.send(c.data(), x.size(), 0, s);
    r.recv(d.data(), x.size(), 0, s);
    g.end();
  }
  r.wait(s);
  harness::same_bits("all_reduce, reduce_scatter, all_gather, send/recv on one rank", d.get(), x);
  auto sub = comm.split(0, 0, "tp{0}");
  CHECK_TRUE(sub.handle().size() == 1 && sub.handle().name() == "tp{0}");
  darray<cu::bf16> h(std::vector<float>(64, 1.5f));
  sub.handle().all_reduce(h.data(), h.data(), 64, s);
  sub.handle().wait(s);
  CHECK_TRUE(h.get() == std::vector<float>(64, 1.5f));
  try {
    (void)cu::nccl_unique_id::from_bytes(std::vector<std::byte>(3));
    CHECK_TRUE(false);
  } catch (const tensoropt::invalid_argument& e) {
    CHECK_TRUE(contains(e.what(), "got 3 bytes, expected 128"));
  }
}

void deadline() {
  cu::stream s(0);
  int* flag = nullptr;
  TENSOROPT_CUDA_CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
  *flag = 0;
  int* dflag = nullptr;
  TENSOROPT_CUDA_CHECK(cudaHostGetDevicePointer(&dflag, flag, 0));
  {
    cu::nccl_communicator comm(cu::nccl_unique_id::create(), 1, 0, 0, "pp{0}", std::chrono::milliseconds(300));
    auto r = comm.handle();
    darray<float> a(1024);
    nccl_test::wait_for_flag<<<1, 1, 0, s>>>(dflag);
    r.all_reduce(a.data(), a.data(), a.size(), s);
    // Released after the deadline, so an abort that waits for the stream returns.
    std::thread release([flag] {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      *reinterpret_cast<volatile int*>(flag) = 1;
    });
    const auto t0 = std::chrono::steady_clock::now();
    try {
      r.wait(s);
      CHECK_TRUE(false);
    } catch (const tensoropt::runtime_error& e) {
      const std::string m = e.what();
      CHECK_TRUE(contains(m, "NCCL all_reduce on group pp{0}"));
      CHECK_TRUE(contains(m, "did not finish within 300 ms"));
      CHECK_TRUE(contains(m, "aborted"));
    }
    CHECK_TRUE(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
    CHECK_TRUE(r.aborted());
    try {
      r.all_reduce(a.data(), a.data(), a.size(), s);
      CHECK_TRUE(false);
    } catch (const tensoropt::runtime_error& e) {
      CHECK_TRUE(contains(e.what(), "was aborted after an earlier failure"));
    }
    release.join();
    s.synchronize();
  }
  (void)cudaFreeHost(flag);
}

}  // namespace

int main() {
  if (int r = harness::skip_without_device()) return r;
  harness::run("NCCL single-rank collectives, groups and splits", collectives);
  harness::run("NCCL deadline aborts and names the collective", deadline);
  return harness::finish();
}
