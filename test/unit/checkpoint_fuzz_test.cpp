// Fuzz test of the checkpoint reader: thousands of random mutations of a valid checkpoint
// (fixed seed), and 8-byte fields overwritten with extreme values. Each is refused with a
// format_error, leaving the weights unchanged, or (only when the mutation left the
// meaning intact) loads exactly the saved weights and step. A crash, a hang or a huge
// allocation fails the test (ctest TIMEOUT; ASan in the sanitizer build).
#include <doctest/doctest.h>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>
#include "fuzz_mutate.hpp"
#include "runtime_models.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace checkpoint_fuzz_test_file {

using namespace rt_test;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr int rounds = 400;
#else
constexpr int rounds = 2500;
#endif

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tensoropt_ckfuzz_" + std::to_string(::getpid()) + name)).string();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

}  // namespace

TEST_CASE("fuzz: mutated checkpoints are refused or load exactly what was saved") {
  const auto g = to::lower<mlp>();
  const std::string good = temp_path("good.ckpt"), bad = temp_path("bad.ckpt");
  rt::local_world w(1);
  rt::trainer a(g, data_parallel(g, 1), w);
  a.step(make_batch(g, 1));
  a.step(make_batch(g, 2));
  a.save(good);
  const std::string seed = slurp(good);
  std::vector<std::vector<float>> saved;
  std::vector<std::string> names;
  for (auto& t : g.tensors)
    if (t.parameter) {
      names.push_back(t.name);
      saved.push_back(a.parameter(t.name));
    }
  rt::trainer b(g, data_parallel(g, 1), w);
  std::mt19937_64 rng(99);
  int accepted = 0, refused = 0;
  for (int it = 0; it < rounds; ++it) {
    std::string text = it % 4 == 3 ? seed : fuzz::mutate(seed, rng, false);
    if (it % 4 == 3) {  // an 8-byte field (or any 8 bytes) set to an extreme value
      const std::uint64_t extremes[] = {0, 1ull << 27, 1ull << 40, 1ull << 63, ~0ull, 0x7fffffffull};
      const std::uint64_t v = extremes[rng() % 6];
      const std::size_t at = std::size_t(rng() % (seed.size() - 8));
      std::memcpy(text.data() + at, &v, 8);
    }
    std::ofstream(bad, std::ios::binary | std::ios::trunc).write(text.data(), std::streamsize(text.size()));
    CAPTURE(it);
    const auto before = b.parameter(names[0]);
    try {
      b.load(bad);
      ++accepted;
      CHECK(b.device(0).steps() == 2);
      for (std::size_t i = 0; i < names.size(); ++i) CHECK(b.parameter(names[i]) == saved[i]);
    } catch (const to::format_error& e) {
      ++refused;
      CHECK(b.parameter(names[0]) == before);  // a refused file changes nothing
      CHECK(std::string(e.what()).size() < 600);
    }
  }
  MESSAGE("checkpoints: " << accepted << " mutations accepted, " << refused << " refused");
  CHECK(refused > rounds * 9 / 10);
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}
}  // namespace checkpoint_fuzz_test_file
