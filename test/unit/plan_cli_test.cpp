// The planner's command line: flags parse, bad values and unknown flags are refused.
#include <tensoropt/plan/cli.hpp>
#include <doctest/doctest.h>
#include <vector>

using namespace tensoropt;

namespace {
plan_cli parse(std::vector<const char*> a) {
  a.insert(a.begin(), "tensoropt-plan");
  return parse_plan_cli(int(a.size()), a.data());
}
}  // namespace

TEST_CASE("flags parse into the options") {
  const auto c = parse({"--model", "gpt3-39b", "--nodes", "8", "--gpus-per-node=8", "--gpu", "v100-16gb",
                        "--memory-budget", "12.5", "--device-counts", "1,2,4,8", "--epsilon", "0.01",
                        "--micro-batches", "4", "--problem-json", "p.json", "--quiet"});
  CHECK(c.model == "gpt3-39b");
  CHECK(c.nodes == 8);
  CHECK(c.gpus_per_node == 8);
  CHECK(c.gpu == "v100-16gb");
  CHECK(c.memory_budget_gib == 12.5);
  CHECK(c.device_counts == std::vector<long>{1, 2, 4, 8});
  CHECK(c.epsilon == 0.01);
  CHECK(c.micro_batches == 4);
  CHECK(c.quiet);
  CHECK(c.devices == -1);
}

TEST_CASE("bad input is refused with a message naming the flag") {
  CHECK_THROWS_WITH_AS(parse({"--frobnicate"}), doctest::Contains("unknown option '--frobnicate'; valid options: --model"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--devices", "0"}), doctest::Contains("--devices must be a positive integer"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--devices", "eight"}), doctest::Contains("expected an integer, got 'eight'"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--nodes", "2"}), doctest::Contains("go together"), invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--devices", "4", "--nodes", "2", "--gpus-per-node", "2"}),
                       doctest::Contains("not both"), invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--memory-budget", "-3"}), doctest::Contains("--memory-budget must be positive"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--epsilon", "2"}), doctest::Contains("--epsilon must be in [0, 1)"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--problem-json", "p.json"}), doctest::Contains("add --micro-batches K"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--model"}), doctest::Contains("--model needs a value"), invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--device-counts", "1,,4"}), doctest::Contains("expected an integer"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--solve", "p.json", "--model", "mlp"}), doctest::Contains("drop --model"),
                       invalid_argument);
}
