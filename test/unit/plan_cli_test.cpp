// The planner's command line: flags parse, bad values and unknown flags are refused;
// the software-stack switches reach the cost model.
#include <tensoropt/models/model_spec.hpp>
#include <tensoropt/plan/cli.hpp>
#include <tensoropt/plan/strategy_spec.hpp>
#include <doctest/doctest.h>
#include <cctype>
#include <string>
#include <vector>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_cli_test_file {

using namespace tensoropt;

namespace {
plan_cli parse(std::vector<const char*> a) {
  a.insert(a.begin(), "tensoropt-plan");
  return parse_plan_cli(int(a.size()), a.data());
}
}  // namespace

TEST_CASE("flags parse into the options") {
  const auto c = parse({"--model", "gpt3-39b", "--nodes", "8", "--gpus-per-node=8", "--gpu", "v100-16gb",
                        "--memory-budget", "12.5", "--epsilon", "0.01",
                        "--micro-batches", "4", "--problem-json", "p.json", "--quiet"});
  CHECK(c.model == "gpt3-39b");
  CHECK(c.nodes == 8);
  CHECK(c.gpus_per_node == 8);
  CHECK(c.gpu == "v100-16gb");
  CHECK(c.memory_budget == 12.5);
  CHECK(parse({"--device-counts", "1,2,4,8", "--gpus-per-node", "4"}).device_counts == std::vector<long>{1, 2, 4, 8});
  CHECK(c.epsilon == 0.01);
  CHECK(c.micro_batches == 4);
  CHECK(c.quiet);
  CHECK(!c.devices);
  CHECK(c.model_given());
  CHECK(!c.given.has("devices"));
}

TEST_CASE("bad input is refused with a message naming the flag") {
  CHECK_THROWS_WITH_AS(parse({"--frobnicate"}), doctest::Contains("unknown option '--frobnicate'; valid options: --model"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--devices", "0"}), doctest::Contains("--devices: expected an integer in [1, 1048576], got '0'"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--devices", "eight"}), doctest::Contains("--devices: expected an integer in [1, 1048576], got 'eight'"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--nodes", "2"}), doctest::Contains("go together"), invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--devices", "4", "--nodes", "2", "--gpus-per-node", "2"}),
                       doctest::Contains("not both"), invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--memory-budget", "-3"}), doctest::Contains("--memory-budget: expected a number in (0, 1000000000], got '-3'"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--epsilon", "2"}), doctest::Contains("--epsilon: expected a number in [0, 1), got '2'"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--problem-json", "p.json"}), doctest::Contains("add --micro-batches K"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--model"}), doctest::Contains("--model needs a value (NAME|SPEC)"), invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--device-counts", "1,,4"}), doctest::Contains("expected an integer"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--solve", "p.json", "--model", "mlp"}), doctest::Contains("--model does not apply to --solve"),
                       invalid_argument);
  CHECK(parse({"--save-plan", "plan.json"}).save_plan == "plan.json");
  CHECK_THROWS_WITH_AS(parse({"--solve", "p.json", "--save-plan", "x.json"}),
                       doctest::Contains("--save-plan does not apply to --solve"), invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--device-counts", "1,2", "--gpus-per-node", "2", "--save-plan", "x.json"}),
                       doctest::Contains("--save-plan writes one plan of one cluster"), invalid_argument);
}

TEST_CASE("values are parsed whole; -1, 0, empty strings and lone flags are errors") {
  struct bad {
    std::vector<const char*> args;
    const char* message;
  };
  const bad cases[] = {
      {{"--devices", "-1"}, "--devices: expected an integer in [1, 1048576], got '-1'"},
      {{"--batch", "-1"}, "--batch: expected an integer in [1, "},
      {{"--batch", "2.5"}, "--batch: expected an integer"},
      {{"--micro-batches", "4x"}, "--micro-batches: expected an integer"},
      {{"--memory-budget", "0"}, "--memory-budget: expected a number in (0, "},
      {{"--memory-budget", "nan"}, "--memory-budget: expected a number"},
      {{"--memory-budget", "inf"}, "--memory-budget: expected a number"},
      {{"--gpu", ""}, "--gpu: the value must not be empty"},
      {{"--frontier-json", ""}, "--frontier-json: the value must not be empty"},
      {{"--frontier-json="}, "--frontier-json: the value must not be empty"},
      {{"--precision", "fp8"}, "--precision: expected one of fp32, bf16-mixed, bf16, got 'fp8'"},
      {{"--time-target", "3"}, "--time-target picks the fewest devices among --device-counts"},
      {{"--solve", "p.json", "--devices", "4"}, "--devices does not apply to --solve"},
      {{"--solve", "p.json", "--batch", "4"}, "--batch does not apply to --solve"},
      {{"--quiet=1"}, "--quiet takes no value"},
      {{"--devices", "4", "--devices", "8"}, "--devices is given twice"},
      {{"mlp"}, "unexpected argument 'mlp'"},
      {{"--device-counts", "1,2,0"}, "--device-counts: expected an integer in [1, 1048576], got '0'"},
      {{"--device-counts", "4", "--devices", "4"}, "drop --devices/--nodes"},
      {{"--devices", "99999999999999999999"}, "--devices: expected an integer"},
  };
  for (const auto& b : cases) {
    CAPTURE(b.message);
    CHECK_THROWS_WITH_AS(parse(b.args), doctest::Contains(b.message), invalid_argument);
  }
}

TEST_CASE("--help lists every flag with its range and default") {
  const std::string h = plan_cli_usage();
  CHECK(h.find("usage: tensoropt-plan") == 0);
  for (const char* f : {"--model NAME|SPEC", "--devices N", "--memory-budget GIB", "--epsilon E", "--solve FILE",
                        "--quiet", "--help"})
    CHECK_MESSAGE(h.find(f) != std::string::npos, f);
  CHECK(h.find("one node of N devices; default: the model's count; range [1, 1048576]\n") != std::string::npos);
  CHECK(h.find("default gpt3-1.3b") != std::string::npos);
  CHECK(h.find("one of fp32, bf16-mixed, bf16, default bf16-mixed") != std::string::npos);
  CHECK(parse({"-h"}).help);
}

TEST_CASE("--pipeline writes every output; --check-frontier reads a frontier and a problem file") {
  const auto p = parse({"--pipeline", "--frontier-json", "f.json", "--problem-json", "p.json", "--svg", "f.svg",
                        "--html", "r.html", "--save-plan", "plan.json"});
  CHECK(p.pipeline);
  CHECK(p.problem_json == "p.json");  // no --micro-batches needed: the file holds every partition
  CHECK(parse({"--strategy", "pp=2", "--micro-batches", "4", "--problem-json", "p.json"}).strategy == "pp=2");
  for (const char* f : {"--strategy", "--solve"})
    CHECK_THROWS_WITH_AS(parse({"--pipeline", f, "x"}), doctest::Contains((std::string(f) + " does not apply to it").c_str()),
                         invalid_argument);
  const auto c = parse({"--check-frontier", "f.json", "--problem-json", "p.json", "--micro-batches", "2"});
  CHECK(c.check_frontier == "f.json");
  CHECK(c.micro_batches == 2);
  CHECK_THROWS_WITH_AS(parse({"--check-frontier", "f.json"}), doctest::Contains("add --problem-json FILE"),
                       invalid_argument);
  for (const char* f : {"--model", "--svg", "--frontier-json", "--solve", "--devices"})
    CHECK_THROWS_WITH_AS(parse({"--check-frontier", "f.json", "--problem-json", "p.json", f, "4"}),
                         doctest::Contains((std::string(f) + " does not apply to --check-frontier").c_str()), invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--check-frontier", "f.json", "--problem-json", "p.json", "--pipeline"}),
                       doctest::Contains("--pipeline does not apply to --check-frontier"), invalid_argument);
  CHECK(plan_cli_usage().find("--check-frontier FILE") != std::string::npos);
}

TEST_CASE("software-stack switches: listed with defaults, applied to the cost model, bad values refused") {
  std::string h;  // the help with its line wrapping undone
  for (char ch : plan_cli_usage())
    if (!std::isspace(static_cast<unsigned char>(ch))) h += ch;
    else if (!h.empty() && h.back() != ' ') h += ' ';
  CHECK(h.find("--attention KIND software stack") != std::string::npos);
  CHECK(h.find("one of materialized, fused, default materialized") != std::string::npos);
  for (const char* f :
       {"--fused-bn-relu", "--local-batch-norm", "--linear-bias-pass", "--regenerate-dropout", "--overlap-grad-sync"}) {
    const auto at = h.find(std::string(f) + " software stack");
    CHECK_MESSAGE(at != std::string::npos, f);
    CHECK_MESSAGE(h.find("; default off", at) < h.find(" --", at + 2), f);
  }
  CHECK_THROWS_WITH_AS(parse({"--attention", "flash"}),
                       doctest::Contains("--attention: expected one of materialized, fused, got 'flash'"),
                       invalid_argument);
  CHECK_THROWS_WITH_AS(parse({"--solve", "p.json", "--attention", "fused"}),
                       doctest::Contains("--attention does not apply to --solve"), invalid_argument);
  // defaults: what build_options assumes
  build_options d;
  apply_stack(parse({}), d);
  CHECK(d.cost() == build_options{}.cost());
  CHECK(d.cost().stack() ==
        "attention materialized, fused-bn-relu off, local-batch-norm off, linear-bias-pass off, regenerate-dropout off, "
        "overlap-grad-sync off");
  // fused attention: the score tensors are neither written nor kept, so the same plan of a
  // GPT is faster and lighter
  const auto g = models::parse_model_spec("gpt:layers=2,hidden=256,heads=8,seq=512,vocab=1024,batch=8").lower();
  const auto cl = cluster::nodes(1).gpus_per_node(2).gpu(gpus::a100_80gb);
  const auto s = parse_strategy_spec("tp=2");
  build_options fused;
  apply_stack(parse({"--attention", "fused"}), fused);
  CHECK(fused.attention == attention_kernel::fused);
  CHECK(fused.cost().stack().find("attention fused") == 0);
  const auto a = evaluate_spec(s, g, cl, d), b = evaluate_spec(s, g, cl, fused);
  CHECK(b.time < a.time);
  CHECK(b.memory < a.memory);
  // every boolean switch is carried into the cost options
  build_options all;
  apply_stack(parse({"--fused-bn-relu", "--local-batch-norm", "--linear-bias-pass", "--regenerate-dropout",
                     "--overlap-grad-sync"}),
              all);
  CHECK(all.fused_bn_relu);
  CHECK(all.local_batch_norm);
  CHECK(all.linear_bias_pass);
  CHECK(all.regenerate_dropout);
  CHECK(all.overlap_grad_sync);
  CHECK(all.cost().overlap_grad_sync);
  CHECK(all.attention == attention_kernel::materialized);
  // a linear's bias in a pass of its own costs time
  build_options bias;
  apply_stack(parse({"--linear-bias-pass"}), bias);
  CHECK(evaluate_spec(s, g, cl, bias).time > a.time);
  // data parallelism with the gradient sync overlapped costs less time, the same memory
  build_options overlap;
  apply_stack(parse({"--overlap-grad-sync"}), overlap);
  const auto dp = parse_strategy_spec("dp=2");
  const auto plain = evaluate_spec(dp, g, cl, d), hidden = evaluate_spec(dp, g, cl, overlap);
  CHECK(hidden.time < plain.time);
  CHECK(hidden.memory == plain.memory);
  CHECK_THROWS_WITH_AS(parse({"--solve", "p.json", "--overlap-grad-sync"}),
                       doctest::Contains("--overlap-grad-sync does not apply to --solve"), invalid_argument);
}
}  // namespace plan_cli_test_file
