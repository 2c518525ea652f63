// Checkpoints: saved under one plan, loaded under another plan and device count, training continues identically;
// truncated, corrupt and mismatched files are refused naming the tensor.
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include "runtime_models.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace checkpoint_roundtrip_test_file {

using namespace rt_test;

namespace {
std::string temp_path(const char* name) { return (std::filesystem::temp_directory_path() / name).string(); }
}  // namespace

TEST_CASE("a GPT checkpoint moves between plans and device counts and training continues identically") {
  const auto g = to::lower<gpt>();
  rt::optimizer_options adam;
  adam.type = rt::optimizer_options::kind::adam;
  adam.lr = 1e-3f;
  adam.eps = 1e-3f;
  const std::string path = temp_path("tensoropt_rt_gpt.ckpt");
  // Reference: 4 uninterrupted steps on one device.
  rt::local_world w1(1);
  rt::trainer ref(g, data_parallel(g, 1), w1, adam);
  std::vector<float> ref_loss;
  for (int s = 0; s < 4; ++s) ref_loss.push_back(ref.step(make_batch(g, 200 + unsigned(s))));
  // 2 steps under a random 4-device plan with sharded optimizer state, save...
  {
    rt::local_world w4(4);
    auto plan = random_plan(g, 4, 3);
    for (auto& c : plan.configs) c.shard_optimizer = true;
    rt::trainer a(g, plan, w4, adam);
    for (int s = 0; s < 2; ++s) CHECK(std::fabs(a.step(make_batch(g, 200 + unsigned(s))) - ref_loss[std::size_t(s)]) <= 1e-5f * ref_loss[std::size_t(s)]);
    a.save(path);
    CHECK(!std::filesystem::exists(path + ".tmp"));
  }
  // ... then load under tensor parallelism on 2 devices and continue.
  rt::local_world w2(2);
  rt::trainer b(g, tensor_parallel(g, 2), w2, adam);
  b.load(path);
  CHECK(b.device(0).steps() == 2);
  for (int s = 2; s < 4; ++s) {
    const float l = b.step(make_batch(g, 200 + unsigned(s)));
    CHECK(std::fabs(l - ref_loss[std::size_t(s)]) <= 1e-5f * ref_loss[std::size_t(s)]);
  }
  for (auto& t : g.tensors)
    if (t.parameter) {
      INFO(t.name);
      CHECK(rel_diff(ref.parameter(t.name), b.parameter(t.name)) <= 1e-5);
    }
  std::filesystem::remove(path);
}

TEST_CASE("truncated, corrupt and mismatched checkpoints are refused naming the tensor") {
  const auto g = to::lower<mlp>();
  const std::string path = temp_path("tensoropt_rt_mlp.ckpt"), bad = temp_path("tensoropt_rt_bad.ckpt");
  rt::local_world w(2);
  rt::trainer a(g, data_parallel(g, 2), w);
  a.step(make_batch(g, 1));
  a.save(path);
  const auto size = std::filesystem::file_size(path);
  std::vector<char> bytes(size);
  std::ifstream(path, std::ios::binary).read(bytes.data(), std::streamsize(size));
  auto write = [&](std::size_t n, long flip) {
    auto copy = bytes;
    if (flip >= 0) copy[std::size_t(flip)] ^= 0x5a;
    std::ofstream(bad, std::ios::binary | std::ios::trunc).write(copy.data(), std::streamsize(n));
  };
  rt::trainer b(g, tensor_parallel(g, 2), w);
  write(size - 100, -1);  // truncated inside the last tensor
  CHECK_THROWS_WITH_AS(b.load(bad), doctest::Contains("is truncated in tensor"), tensoropt::format_error);
  write(size, long(size) - 20);  // a flipped byte in the last tensor's data
  CHECK_THROWS_WITH_AS(b.load(bad), doctest::Contains("checksum mismatch"), tensoropt::format_error);
  write(size, 0);  // bad magic
  CHECK_THROWS_WITH_AS(b.load(bad), doctest::Contains("not a tensoropt checkpoint"), tensoropt::format_error);
  // Another model's checkpoint names the first differing op.
  const auto other = to::lower<cnn>();
  rt::local_world w1(1);
  rt::trainer c(other, data_parallel(other, 1), w1);
  CHECK_THROWS_WITH_AS(c.load(path), doctest::Contains("is of another model than 'cnn': op 0"), tensoropt::format_error);
  // A failed load leaves the weights as they were; a good one still loads.
  const auto before = b.parameter("linear.weight");
  b.load(path);
  CHECK(b.parameter("linear.weight") == a.parameter("linear.weight"));
  CHECK(before != a.parameter("linear.weight"));
  std::filesystem::remove(path);
  std::filesystem::remove(bad);
}
}  // namespace checkpoint_roundtrip_test_file
