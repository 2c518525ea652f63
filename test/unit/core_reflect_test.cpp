// Reflection tables and the command lines built from them: values parse whole and
// in range, specs refuse unknown/missing/repeated keys, help and specs print back.
#include <tensoropt/core/command_line.hpp>
#include <tensoropt/core/reflect.hpp>
#include <tensoropt/core/reflect_json.hpp>
#include <doctest/doctest.h>
#include <optional>
#include <string>
#include <vector>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace core_reflect_test_file {

struct opts {
  long n = 3;
  double p = 0.5;
  std::string mode = "a";
  std::optional<double> budget;
  std::vector<long> list;
  bool verbose = false;
  std::string name;
};

}  // namespace core_reflect_test_file

template <>
struct tensoropt::reflection<core_reflect_test_file::opts> {
  using opts = core_reflect_test_file::opts;
  static constexpr auto fields = boost::hana::make_tuple(
      field("n", &opts::n, "a count").range(1, 100).required().meta("N"),
      field("p", &opts::p, "a probability").range_open_hi(0, 1),
      field("mode", &opts::mode, "the mode").one_of("a|bb|c"),
      field("budget", &opts::budget, "a budget").range_open_lo(0, 10),
      field("list", &opts::list, "a list").range(1, 8),
      field("verbose", &opts::verbose, "talk"),
      field("name", &opts::name, "a name"));
};

namespace core_reflect_test_file {

using namespace tensoropt;

TEST_CASE("key=value specs parse whole, range-checked, into the struct") {
  const auto o = parse_key_values<opts>("n=7,p=0.25,mode=bb,budget=2.5,list=1", "spec");
  CHECK(o.n == 7);
  CHECK(o.p == 0.25);
  CHECK(o.mode == "bb");
  CHECK(o.budget == 2.5);
  CHECK(o.list == std::vector<long>{1});
  // A comma ends a spec's value: "list=1,2" reads "2" as a (malformed) next key.
  CHECK_THROWS_WITH_AS(parse_key_values<opts>("n=1,list=1,2", "spec"), doctest::Contains("expected key=value, got '2'"),
                       invalid_argument);
  CHECK(to_key_values(opts{}) == "n=3");
  CHECK(to_key_values(o) == "n=7,p=0.25,mode=bb,budget=2.5,list=1");
}

TEST_CASE("bad specs name the key and list the valid ones") {
  struct bad {
    const char* spec;
    const char* message;
  };
  const bad cases[] = {
      {"n=4x", "spec:n: expected an integer in [1, 100], got '4x'"},
      {"n=2.5", "spec:n: expected an integer in [1, 100], got '2.5'"},
      {"n=0", "spec:n: expected an integer in [1, 100], got '0'"},
      {"n=101", "spec:n: expected an integer in [1, 100], got '101'"},
      {"n=", "spec:n: expected an integer in [1, 100], got ''"},
      {"n=1,p=1", "spec:p: expected a number in [0, 1), got '1'"},
      {"n=1,p=nan", "spec:p: expected a number in [0, 1), got 'nan'"},
      {"n=1,budget=0", "spec:budget: expected a number in (0, 10], got '0'"},
      {"n=1,mode=d", "spec:mode: expected one of a, bb, c, got 'd'"},
      {"n=1,mode=", "spec:mode: the value must not be empty (one of a, bb, c)"},
      {"n=1,frob=2", "spec: unknown key 'frob'; valid keys: n (required); p, mode, budget, list, verbose, name (optional)"},
      {"n=1,n=2", "spec: key 'n' given twice"},
      {"p=0.1", "spec: missing required key(s) n; valid keys: n (required)"},
      {"", "spec: missing required key(s) n"},
      {"n", "spec: expected key=value, got 'n'"},
      {"n=1,,p=0", "spec: expected key=value, got ''"},
      {"n=99999999999999999999999", "spec:n: expected an integer"},
  };
  for (const auto& b : cases) {
    CAPTURE(b.spec);
    CHECK_THROWS_WITH_AS(parse_key_values<opts>(b.spec, "spec"), doctest::Contains(b.message), invalid_argument);
  }
  CHECK_THROWS_WITH_AS(parse_key_values<opts>(std::string("n=4\nx"), "spec"),
                       "spec:n: expected an integer in [1, 100], got '4\\x0ax'", invalid_argument);
  // a number written with a unit: the hint gives the number alone, where the field takes it
  CHECK_THROWS_WITH_AS(parse_key_values<opts>("n=4x", "spec"),
                       "spec:n: expected an integer in [1, 100], got '4x' (the number alone: '4')", invalid_argument);
  CHECK_THROWS_WITH_AS(parse_key_values<opts>("n=1,budget=8GB", "spec"),
                       "spec:budget: expected a number in (0, 10], got '8GB' (the number alone: '8')",
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse_key_values<opts>("n=1,budget=12GB", "spec"),
                       "spec:budget: expected a number in (0, 10], got '12GB'", invalid_argument);
  CHECK_THROWS_WITH_AS(parse_key_values<opts>("n=1,budget=-5GiB", "spec"),
                       "spec:budget: expected a number in (0, 10], got '-5GiB'", invalid_argument);
  CHECK_THROWS_WITH_AS(parse_key_values<opts>("n=2.5", "spec"), "spec:n: expected an integer in [1, 100], got '2.5'",
                       invalid_argument);
  const std::string huge(100000, 'x');
  try {
    parse_key_values<opts>("n=" + huge, "spec");
    FAIL("accepted");
  } catch (const invalid_argument& e) {
    CHECK(std::string(e.what()).size() < 200);  // the echoed value is cut short
  }
}

namespace {
given_flags parse(std::vector<const char*> a, opts& o) {
  a.insert(a.begin(), "prog");
  return parse_command_line(int(a.size()), a.data(), o);
}
}  // namespace

TEST_CASE("command lines: --flag V, --flag=V, switches, and the errors") {
  opts o;
  const auto g = parse({"--n", "5", "--p=0.75", "--list", "1,2,8", "--verbose", "--budget", "1e-3"}, o);
  CHECK(o.n == 5);
  CHECK(o.p == 0.75);
  CHECK(o.list == std::vector<long>{1, 2, 8});
  CHECK(o.verbose);
  CHECK(o.budget == 1e-3);
  CHECK(g.has("list"));
  CHECK(!g.has("mode"));
  struct bad {
    std::vector<const char*> args;
    const char* message;
  };
  const bad cases[] = {
      {{"--n", "-1"}, "--n: expected an integer in [1, 100], got '-1'"},
      {{"--n"}, "--n needs a value (N); see --help"},
      {{"--n", "--verbose"}, "--n needs a value (N)"},
      {{"--verbose=1"}, "--verbose takes no value"},
      {{"--n", "1", "--n", "2"}, "--n is given twice"},
      {{"--list", "1,,2"}, "--list: expected an integer in [1, 8], got ''"},
      {{"--list", "9"}, "--list: expected an integer in [1, 8], got '9'"},
      {{"--list", ""}, "--list: expected a comma list"},
      {{"--name", ""}, "--name: the value must not be empty"},
      {{"--budget", "inf"}, "--budget: expected a number in (0, 10], got 'inf'"},
      {{"--nope"}, "unknown option '--nope'; valid options: --n, --p, --mode, --budget, --list, --verbose, --name"},
      {{"stray"}, "unexpected argument 'stray'"},
      {{"-n"}, "unexpected argument '-n'"},
  };
  for (const auto& b : cases) {
    CAPTURE(b.message);
    opts x;
    CHECK_THROWS_WITH_AS(parse(b.args, x), doctest::Contains(b.message), invalid_argument);
  }
}

TEST_CASE("help text comes from the table") {
  const std::string h = command_line_help<opts>("prog [options]", "Does things.");
  CHECK(h.find("usage: prog [options]\nDoes things.\n") == 0);
  CHECK(h.find("  --n N                   a count; range [1, 100], default 3, required\n") != std::string::npos);
  CHECK(h.find("  --mode V                the mode; one of a, bb, c, default a\n") != std::string::npos);
  CHECK(h.find("  --verbose               talk\n") != std::string::npos);
  CHECK(h.find("  --budget V              a budget; range (0, 10]\n") != std::string::npos);
}

TEST_CASE("JSON from the same table: round trip and refusals naming the key") {
  opts o;
  o.n = 9;
  o.budget = 1.5;
  o.list = {2, 4};
  o.name = "x";
  const auto j = to_json(o);
  CHECK(j.dump() == R"({"budget":1.5,"list":[2,4],"mode":"a","n":9,"name":"x","p":0.5,"verbose":false})");
  const auto back = from_json<opts>(j, "cfg");
  CHECK(back.n == 9);
  CHECK(back.budget == 1.5);
  CHECK(back.list == o.list);
  CHECK(back.name == "x");
  CHECK(!from_json<opts>(nlohmann::json{{"n", 1}}, "cfg").budget);
  struct bad {
    const char* json;
    const char* message;
  };
  const bad cases[] = {
      {R"([1])", "cfg: expected an object with keys n, p, mode"},
      {R"({"p": 0.1})", "cfg: missing key 'n' (required: n)"},
      {R"({"n": 1, "q": 2})", "cfg: unknown key 'q'; valid keys: n, p, mode, budget, list, verbose, name"},
      {R"({"n": "3"})", "cfg.n: expected an integer, got \"3\""},
      {R"({"n": 2.5})", "cfg.n: expected an integer, got 2.5"},
      {R"({"n": 0})", "cfg.n: expected an integer in [1, 100], got '0'"},
      {R"({"n": 1, "p": 1.0})", "cfg.p: expected a number in [0, 1), got '1.0'"},
      {R"({"n": 1, "mode": "z"})", "cfg.mode: expected one of a, bb, c, got 'z'"},
      {R"({"n": 1, "verbose": 1})", "cfg.verbose: expected true or false, got 1"},
      {R"({"n": 1, "list": [1, "2"]})", "cfg.list: expected an array of integers"},
      {R"({"n": 1, "list": [9]})", "cfg.list: expected an integer in [1, 8], got '9'"},
  };
  for (const auto& b : cases) {
    CAPTURE(b.json);
    CHECK_THROWS_WITH_AS(from_json<opts>(nlohmann::json::parse(b.json), "cfg"), doctest::Contains(b.message),
                         format_error);
  }
}

TEST_CASE("help lines wrap at 100 columns, indented under the help column") {
  const std::string w = detail::wrap("aaaa bbbb cccc dddd", 4, 14);
  CHECK(w == "aaaa bbbb\n    cccc dddd");
  CHECK(detail::wrap("averyveryverylongword x", 4, 10) == "averyveryverylongword\n    x");
}
}  // namespace core_reflect_test_file
