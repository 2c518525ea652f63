// Checkpoint format checks: every header field checksummed, the model's identity checked
// naming the first difference, declared sizes checked before allocating, non-regular
// files refused, other optimizers and trailing bytes refused.
#include <doctest/doctest.h>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include "runtime_models.hpp"

// File-local: the unit tests of an area are built as one unity translation unit.
namespace checkpoint_format_test_file {

using namespace rt_test;

namespace {

// The MLP of runtime_models.hpp with one more hidden layer, and with a larger batch.
using mlp_deeper = to::model<"mlp", shape<axis<"b", 8>, axis<"i", 12>>,
                             to::seq<to::linear<12, 16>, to::relu, to::linear<16, 16>, to::gelu, to::linear<16, 16>,
                                     to::gelu, to::dropout<0.2>, to::linear<16, 8, "c">, to::softmax_cross_entropy<8>>>;
using mlp_batch16 = to::model<"mlp", shape<axis<"b", 16>, axis<"i", 12>>,
                              to::seq<to::linear<12, 16>, to::relu, to::linear<16, 16>, to::gelu, to::dropout<0.2>,
                                      to::linear<16, 8, "c">, to::softmax_cross_entropy<8>>>;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tensoropt_ckfmt_" + std::to_string(::getpid()) + name)).string();
}

std::vector<char> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void spill(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
}

template <class T>
void append(std::vector<char>& v, T x) {
  const auto* p = reinterpret_cast<const char*>(&x);
  v.insert(v.end(), p, p + sizeof x);
}

}  // namespace

TEST_CASE("checkpoint header: a flipped step or optimizer kind is caught by the header checksum") {
  const auto g = to::lower<mlp>();
  const std::string path = temp_path("a.ckpt"), bad = temp_path("bad.ckpt");
  rt::local_world w(1);
  rt::trainer a(g, data_parallel(g, 1), w);
  a.step(make_batch(g, 1));
  a.save(path);
  const auto bytes = slurp(path);
  for (std::size_t at : {std::size_t(15), std::size_t(16)}) {  // the step's top byte; the optimizer kind
    auto copy = bytes;
    copy[at] ^= 0x80;
    spill(bad, copy);
    CAPTURE(at);
    CHECK_THROWS_WITH_AS(a.load(bad), doctest::Contains("header is corrupt (checksum mismatch)"), to::format_error);
  }
  CHECK(a.device(0).steps() == 1);
  auto copy = bytes;
  copy.push_back('x');
  spill(bad, copy);
  CHECK_THROWS_WITH_AS(a.load(bad), doctest::Contains("1 bytes after its last tensor"), to::format_error);
  std::memcpy(copy.data(), "TOCKPT01", 8);
  spill(bad, copy);
  CHECK_THROWS_WITH_AS(a.load(bad), doctest::Contains("older format TOCKPT01"), to::format_error);
  std::filesystem::remove(path);
  std::filesystem::remove(bad);
}

TEST_CASE("checkpoint identity: a model with an extra layer is refused naming the first difference") {
  const auto small = to::lower<mlp>(), deep = to::lower<mlp_deeper>();
  const std::string path_small = temp_path("small.ckpt"), path_deep = temp_path("deep.ckpt");
  rt::local_world w(1);
  rt::trainer s(small, data_parallel(small, 1), w), d(deep, data_parallel(deep, 1), w);
  s.save(path_small);
  d.save(path_deep);
  CHECK_THROWS_WITH_AS(s.load(path_deep), doctest::Contains("is of another model than 'mlp': op "), to::format_error);
  CHECK_THROWS_WITH_AS(d.load(path_small), doctest::Contains("in the checkpoint but"), to::format_error);
  // another model altogether
  const auto other = to::lower<cnn>();
  rt::trainer c(other, data_parallel(other, 1), w);
  CHECK_THROWS_WITH_AS(c.load(path_small), doctest::Contains("op 0 is 'input' (input [12]) in the checkpoint"),
                       to::format_error);
  // the batch size may change between runs
  const auto big_batch = to::lower<mlp_batch16>();
  rt::trainer b(big_batch, data_parallel(big_batch, 1), w);
  b.load(path_small);
  CHECK(b.parameter("linear.weight") == s.parameter("linear.weight"));
  // another optimizer's state is named
  rt::optimizer_options adam;
  adam.type = rt::optimizer_options::kind::adam;
  rt::trainer sa(small, data_parallel(small, 1), w, adam);
  CHECK_THROWS_WITH_AS(sa.load(path_small), doctest::Contains("holds sgd optimizer state; this run uses adam"),
                       to::format_error);
  std::filesystem::remove(path_small);
  std::filesystem::remove(path_deep);
}

TEST_CASE("checkpoint sizes: a small file declaring a huge tensor fails before allocating") {
  const auto g = to::lower<mlp>();
  rt::local_world w(1);
  rt::trainer a(g, data_parallel(g, 1), w);
  // A valid header with no ops and one record declaring 2^27 floats (512 MiB).
  std::vector<char> f(8);
  std::memcpy(f.data(), "TOCKPT02", 8);
  append(f, std::uint64_t(0));
  append(f, std::uint32_t(0));
  append(f, std::uint32_t(0));
  append(f, std::uint32_t(1));
  append(f, rt::detail::fnv1a(f.data(), f.size()));
  const std::size_t rec = f.size();
  append(f, std::uint32_t(1));
  f.push_back('w');
  append(f, std::uint32_t(1));
  append(f, std::int64_t(1) << 27);
  append(f, std::uint64_t(1) << 27);
  CHECK(f.size() - rec == 25);
  const std::string bad = temp_path("huge.ckpt");
  spill(bad, f);
  CHECK_THROWS_WITH_AS(a.load(bad), doctest::Contains("truncated in tensor 'w': it declares 536870920 more bytes"),
                       to::format_error);
  // a record count beyond what the bytes left can hold
  f.resize(rec);  // the file ends after the header...
  f[24] = 0x7f;    // ...which declares 127 records (checksum redone)
  const std::uint64_t sum = rt::detail::fnv1a(f.data(), rec - 8);
  std::memcpy(f.data() + rec - 8, &sum, 8);
  spill(bad, f);
  CHECK_THROWS_WITH_AS(a.load(bad), doctest::Contains("truncated in its tensors"), to::format_error);
  std::filesystem::remove(bad);
}

TEST_CASE("checkpoint files: a FIFO or a folder is refused without reading") {
  const auto g = to::lower<mlp>();
  rt::local_world w(1);
  rt::trainer a(g, data_parallel(g, 1), w);
  const std::string fifo = temp_path("fifo");
  std::filesystem::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(a.load(fifo), doctest::Contains("is not a regular file"), to::format_error);
  CHECK_THROWS_WITH_AS(a.load(std::filesystem::temp_directory_path().string()),
                       doctest::Contains("is not a regular file"), to::format_error);
  CHECK_THROWS_WITH_AS(a.load(temp_path("missing")), doctest::Contains("no such file"), to::format_error);
  std::filesystem::remove(fifo);
}
}  // namespace checkpoint_format_test_file
