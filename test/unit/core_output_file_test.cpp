// Tests of the output writer: atomic regular files, symlinks written through, streams
// (FIFO, /dev/null) never replaced, up-front path checks, no temporary left behind.
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>
#include <tensoropt/core/output_file.hpp>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace core_output_file_test_file {

namespace to = tensoropt;
namespace fs = std::filesystem;

namespace {

struct scratch_dir {
  fs::path path;
  scratch_dir() {
    path = fs::temp_directory_path() / ("tensoropt_output_test_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~scratch_dir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, ec);
    fs::remove_all(path, ec);
  }
  std::size_t entries() const { return std::size_t(std::distance(fs::directory_iterator(path), {})); }
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("output_file: a regular file is written whole, keeps its mode, leaves no temporary") {
  scratch_dir d;
  const auto f = d.path / "frontier.json";
  to::write_output_file(f.string(), "first", "frontier");
  CHECK(slurp(f) == "first");
  CHECK(d.entries() == 1);
  fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  to::write_output_file(f.string(), "second, longer", "frontier");
  CHECK(slurp(f) == "second, longer");
  CHECK(fs::status(f).permissions() == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
  CHECK(d.entries() == 1);
}

TEST_CASE("output_file: an output abandoned mid-way keeps the old file and removes its temporary") {
  scratch_dir d;
  const auto f = d.path / "report.html";
  to::write_output_file(f.string(), "old", "report");
  {
    to::output_file out(f.string(), "report");
    out.write("half of the new");
    CHECK(d.entries() == 2);  // the temporary sits next to the target
  }
  CHECK(slurp(f) == "old");
  CHECK(d.entries() == 1);
}

TEST_CASE("output_file: a symlink is written through to its target and stays a link") {
  scratch_dir d;
  const auto target = d.path / "real.svg";
  const auto link = d.path / "link.svg";
  fs::create_symlink("real.svg", link);  // relative, dangling until written
  to::write_output_file(link.string(), "<svg/>", "plot");
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(fs::is_regular_file(target));
  CHECK(slurp(target) == "<svg/>");
  to::write_output_file(link.string(), "<svg>2</svg>", "plot");
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(slurp(target) == "<svg>2</svg>");
  const auto loop = d.path / "loop";
  fs::create_symlink("loop", loop);
  CHECK_THROWS_WITH_AS(to::check_output_path(loop.string(), "plot"), doctest::Contains("symbolic links"),
                       to::invalid_argument);
}

TEST_CASE("output_file: a FIFO is streamed into, not replaced") {
  scratch_dir d;
  const auto fifo = d.path / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string got;
  std::thread reader([&] { got = slurp(fifo); });
  try {
    to::write_output_file(fifo.string(), std::string(200000, 'x') + "end", "frontier");
  } catch (...) {
    std::ofstream(fifo.c_str()).put('!');  // let the reader finish, then fail below
    reader.join();
    throw;
  }
  reader.join();
  CHECK(got.size() == 200003);
  CHECK(got.substr(got.size() - 3) == "end");
  CHECK(fs::is_fifo(fs::symlink_status(fifo)));
  CHECK(d.entries() == 1);
}

TEST_CASE("output_file: /dev/null is written to and stays a device") {
  CHECK_NOTHROW(to::check_output_path("/dev/null", "frontier"));
  to::write_output_file("/dev/null", "discarded", "frontier");
  CHECK(fs::is_character_file(fs::symlink_status("/dev/null")));
}

TEST_CASE("output_file: bad paths are refused up front with the reason") {
  scratch_dir d;
  CHECK_THROWS_WITH_AS(to::check_output_path("", "frontier"), doctest::Contains("empty output path"),
                       to::invalid_argument);
  CHECK_THROWS_WITH_AS(to::check_output_path((d.path / "no/such/dir/f.json").string(), "frontier"),
                       doctest::Contains("does not exist"), to::invalid_argument);
  CHECK_THROWS_WITH_AS(to::check_output_path(d.path.string(), "frontier"), doctest::Contains("is a folder"),
                       to::invalid_argument);
  CHECK_NOTHROW(to::check_output_path("-", "frontier"));
  CHECK_NOTHROW(to::check_output_path((d.path / "new.json").string(), "frontier"));
  CHECK(d.entries() == 0);  // the probe file is gone
  // A folder that refuses new files. Root ignores permission bits, so the read-only
  // folder is checked only for other users; /sys refuses new files even to root.
  const auto ro = d.path / "ro";
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  if (::geteuid() != 0)
    CHECK_THROWS_WITH_AS(to::check_output_path((ro / "f.json").string(), "frontier"),
                         doctest::Contains("cannot create files in the folder"), to::invalid_argument);
  if (fs::is_directory("/sys/kernel"))
    CHECK_THROWS_WITH_AS(to::write_output_file("/sys/kernel/tensoropt_test.json", "x", "frontier"),
                         doctest::Contains("cannot write the frontier to '/sys/kernel/tensoropt_test.json'"),
                         to::invalid_argument);
  CHECK(!fs::exists("/sys/kernel/tensoropt_test.json"));
}
}  // namespace core_output_file_test_file
