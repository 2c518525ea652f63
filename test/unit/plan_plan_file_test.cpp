// The plan file tensoropt-plan/1: round trip, and refusals naming the difference.
#include <doctest/doctest.h>
#include <tensoropt/models/gpt.hpp>
#include <tensoropt/models/model_spec.hpp>
#include <tensoropt/plan/plan_file.hpp>
#include <tensoropt/plan/planner.hpp>
#include <nlohmann/json.hpp>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_plan_file_test_file {

using namespace tensoropt;

namespace {
constexpr models::gpt_config tiny_config{.layers = 2, .hidden = 64, .heads = 4, .seq = 32, .vocab = 64, .batch = 8,
                                          .dropout = 0.0};
const std::string tiny_spec = models::to_spec(tiny_config, models::transformer_kind::gpt);
op_graph tiny(models::gpt_config c = tiny_config) { return models::lower_transformer(c, models::transformer_kind::gpt); }
planned_frontier plan_tiny(index_t nodes, index_t per_node) {
  planner_options o;
  o.micro_batches = {1, 2};
  o.baselines = false;
  o.build.prec = precisions::fp32;
  return plan_frontier(tiny(), cluster::nodes(nodes).gpus_per_node(per_node).gpu(gpus::cpu), o);
}
std::string with(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}
}  // namespace

TEST_CASE("a saved plan reads back into the same training plan, on one and two levels") {
  for (auto [nodes, per] : {std::pair<index_t, index_t>{1, 4}, {2, 2}}) {
    const auto pf = plan_tiny(nodes, per);
    REQUIRE(pf.size() >= 2);
    for (const auto& p : {*pf.least_memory(), *pf.fastest(), *pf.middle()}) {
      const auto f = make_plan_file(p, tiny_spec);
      const std::string text = write_plan_json(f);
      CHECK(nlohmann::json::parse(text)["format"] == "tensoropt-plan/1");
      const auto back = read_plan_json(text);
      CHECK(back.model == "gpt");
      CHECK(back.spec == tiny_spec);
      CHECK(back.devices() == nodes * per);
      CHECK(back.nodes == nodes);
      CHECK(back.precision == "fp32");
      CHECK(back.gpu == "cpu");
      CHECK(back.micro_batches == p.micro_batches());
      CHECK(back.time == p.time());  // picoseconds survive the seconds in JSON exactly
      CHECK(back.memory == p.memory());
      CHECK(back.summary == p.summary());
      CHECK(write_plan_json(read_plan_json(write_plan_json(back))) == write_plan_json(back));
      const auto tp = plan_for_graph(back, tiny());
      const auto want = p.training_plan();
      CHECK(tp.configs == want.configs);
      CHECK(tp.micro_batches == want.micro_batches);
      CHECK(tp.mesh.nodes == want.mesh.nodes);
      CHECK(tp.mesh.gpus_per_node == want.mesh.gpus_per_node);
    }
  }
}

TEST_CASE("a plan for another model is refused naming the difference") {
  const auto pf = plan_tiny(1, 4);
  const auto f = read_plan_json(write_plan_json(make_plan_file(*pf.fastest())));
  auto refusal = [&](const op_graph& g) {
    try {
      (void)plan_for_graph(f, g);
    } catch (const invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refusal(lower<models::gpt3_125m>()).find("model 'gpt', this is 'gpt3-125m'") != std::string::npos);
  // Same name and ops, another width: the first dim that differs is named.
  auto wider = tiny_config;
  wider.hidden = 128;
  const auto msg = refusal(tiny(wider));
  CHECK(msg.find("the plan was made for another model") != std::string::npos);
  CHECK(msg.find("is 64 in the plan, 128 here") != std::string::npos);
  auto g = tiny();
  g.batch = 16;
  CHECK(refusal(g).find("global batch 8, this model's is 16") != std::string::npos);
  g = tiny();
  g.ops[3].name = "renamed";
  CHECK(refusal(g).find("op 3 is '" + f.ops[3].name + "', here 'renamed'") != std::string::npos);
}

TEST_CASE("damaged plan files are refused naming the field") {
  const auto pf = plan_tiny(1, 4);
  const std::string text = write_plan_json(make_plan_file(*pf.fastest()));
  auto error_of = [](const std::string& t) {
    try {
      (void)read_plan_json(t);
    } catch (const format_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(error_of(with(text, "tensoropt-plan/1", "tensoropt-plan/3")).find("format") != std::string::npos);
  CHECK(error_of(with(text, "tensoropt-plan/1", "tensoropt-plan/2")) == "accepted");  // /2 without stages
  CHECK(error_of(with(text, "\"micro_batches\":", "\"micro_batches\":-")).find("micro_batches") != std::string::npos);
  CHECK(error_of(with(text, "\"precision\":\"fp32\"", "\"precision\":\"fp8\"")).find("unknown precision 'fp8'") !=
        std::string::npos);
  CHECK(error_of(with(text, "\"recompute\":", "\"recompute\":3,\"x\":")).find("ops[0].recompute") !=
        std::string::npos);
  CHECK(error_of(with(text, "\"degrees\":[", "\"degrees\":[0,")).find("degrees") != std::string::npos);
  CHECK(error_of(text.substr(0, text.size() / 2)).find("not valid JSON") != std::string::npos);
  CHECK(error_of("[]").find("expected a JSON object") != std::string::npos);
  CHECK(error_of(std::string(100, '[') + std::string(100, ']')).find("nested deeper than") != std::string::npos);
  CHECK(error_of(std::string("{\"format\"\0:1}", 14)).find("NUL byte") != std::string::npos);
  CHECK_THROWS_AS((void)load_plan_file("/nonexistent/plan.json"), format_error);
  // Degrees that do not divide the mesh are refused when the plan is applied.
  const std::string bad = with(text, "\"degrees\":[1,1]", "\"degrees\":[1,3]");
  CHECK_THROWS_WITH_AS((void)plan_for_graph(read_plan_json(bad), tiny()),
                       doctest::Contains("the degrees must divide the level"), invalid_argument);
}

TEST_CASE("the plan file records the software stack; a file without it reads as the defaults") {
  const auto pf = plan_tiny(1, 2);
  auto f = make_plan_file(*pf.fastest());
  CHECK(f.attention == attention_kernel::materialized);  // plan_tiny plans with the default stack
  CHECK(!f.fused_bn_relu);
  f.attention = attention_kernel::fused;
  f.linear_bias_pass = true;
  f.regenerate_dropout = true;
  f.overlap_grad_sync = true;
  const std::string text = write_plan_json(f);
  const auto j = nlohmann::json::parse(text);
  CHECK(j["stack"]["attention"] == "fused");
  CHECK(j["stack"]["linear_bias_pass"] == true);
  const auto back = read_plan_json(text);
  CHECK(back.attention == attention_kernel::fused);
  CHECK(back.linear_bias_pass);
  CHECK(back.regenerate_dropout);
  CHECK(back.overlap_grad_sync);
  CHECK(!back.fused_bn_relu);
  CHECK(!back.local_batch_norm);
  // optional: removed, the defaults
  auto old = j;
  old.erase("stack");
  const auto d = read_plan_json(old.dump());
  CHECK(d.attention == attention_kernel::materialized);
  CHECK(!d.linear_bias_pass);
  // "overlap_grad_sync" came later: a stack without it reads as off
  auto earlier = j;
  earlier["stack"].erase("overlap_grad_sync");
  CHECK(!read_plan_json(earlier.dump()).overlap_grad_sync);
  CHECK_THROWS_WITH_AS((void)read_plan_json(with(text, "\"overlap_grad_sync\":true", "\"overlap_grad_sync\":1")),
                       doctest::Contains("stack.overlap_grad_sync"), format_error);
  CHECK_THROWS_WITH_AS((void)read_plan_json(with(text, "\"attention\":\"fused\"", "\"attention\":\"flash\"")),
                       doctest::Contains("stack.attention: unknown attention implementation 'flash'"), format_error);
  CHECK_THROWS_WITH_AS((void)read_plan_json(with(text, "\"fused_bn_relu\":false", "\"fused_bn_relu\":0")),
                       doctest::Contains("stack.fused_bn_relu"), format_error);
}
}  // namespace plan_plan_file_test_file
