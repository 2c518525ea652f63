// The zoo: names, defaults, lookup errors, parameter counts of the non-GPT models
// against published figures, and structural validity of every lowered graph.
#include <doctest/doctest.h>
#include <tensoropt/models/zoo.hpp>
#include <cmath>
#include <set>
#include <string>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace model_zoo_test_file {

namespace to = tensoropt;
namespace models = tensoropt::models;
using to::op_graph;

TEST_CASE("list() holds every configuration of the published suites with its defaults") {
  const auto& z = models::list();
  const std::vector<std::string> expected = {
      "gpt3-125m",      "gpt3-350m",     "gpt3-760m",      "gpt3-1.3b",    "gpt3-2.6b",    "gpt3-6.7b",
      "gpt3-15b",       "gpt3-39b",      "megatron-1.7b",  "megatron-18.4b", "megatron-39.1b", "megatron-145.6b",
      "megatron-1t",    "wresnet-250m",  "wresnet-1b",     "wresnet-2b",   "wresnet-6.8b", "wresnet-13b",
      "moe-380m",       "moe-1.3b",      "moe-10b",        "moe-70b",      "vgg16",        "resnet50",
      "inception-v3",   "bert-large",    "mlp"};
  REQUIRE(z.size() == expected.size());
  for (std::size_t i = 0; i < z.size(); ++i) {
    CHECK(z[i].name == expected[i]);
    CHECK_FALSE(z[i].description.empty());
    CHECK(z[i].gpus >= 1);
    CHECK(z[i].parameters > 0);
    if (z[i].family == "gpt3") CHECK(z[i].batch == 1024);
    if (z[i].family == "wresnet") CHECK(z[i].batch == 1536);
    if (z[i].family == "megatron") CHECK(z[i].gpu == "a100-80gb");
  }
  CHECK(models::find("gpt3-39b").gpu == "v100-16gb");
  CHECK(models::find("gpt3-39b").gpus == 64);
  CHECK(models::find("megatron-145.6b").batch == 2304);
  CHECK(models::find("megatron-145.6b").gpus == 1536);
  CHECK(models::find("megatron-1t").batch == 3072);
  CHECK(models::find("wresnet-13b").gpus == 64);
  CHECK(models::find("moe-70b").gpus == 64);
  CHECK(models::find("inception-v3").gpus == 16);
}

TEST_CASE("find() and lower() by name; unknown names list the valid ones") {
  const op_graph g = models::lower("resnet50");
  CHECK(g.name == "resnet50");
  CHECK(g.batch == models::find("resnet50").batch);
  try {
    models::find("gpt4");
    FAIL("find(\"gpt4\") did not throw");
  } catch (const to::invalid_argument& e) {
    const std::string msg = e.what();
    CHECK(msg.find("unknown model 'gpt4'") != std::string::npos);
    CHECK(msg.find("gpt3-1.3b") != std::string::npos);
    CHECK(msg.find("megatron-1t") != std::string::npos);
    CHECK(msg.find("inception-v3") != std::string::npos);
  }
  CHECK_THROWS_AS(models::lower(""), to::invalid_argument);
  CHECK_THROWS_AS(models::lower("GPT3-1.3B"), to::invalid_argument);
}

TEST_CASE("parameter counts of the CNNs, BERT, MLP, Wide-ResNet and MoE") {
  auto params = [](std::string_view n) { return models::find(n).parameters; };
  CHECK(params("resnet50") == doctest::Approx(25.557e6).epsilon(0.001));     // torchvision resnet50
  CHECK(params("vgg16") == doctest::Approx(138.358e6).epsilon(0.001));       // torchvision vgg16
  CHECK(params("inception-v3") == doctest::Approx(23.83e6).epsilon(0.01));   // without the aux head
  CHECK(params("bert-large") == doctest::Approx(340e6).epsilon(0.03));
  CHECK(params("mlp") == 1024.0 * 8192 + 8192 + 7 * (8192.0 * 8192 + 8192) + 8192.0 * 1000 + 1000);
  CHECK(params("wresnet-250m") == doctest::Approx(250e6).epsilon(0.05));
  CHECK(params("wresnet-1b") == doctest::Approx(1e9).epsilon(0.05));
  CHECK(params("wresnet-2b") == doctest::Approx(2e9).epsilon(0.05));
  CHECK(params("wresnet-6.8b") == doctest::Approx(6.8e9).epsilon(0.05));
  CHECK(params("wresnet-13b") == doctest::Approx(13e9).epsilon(0.05));
  // Alpa's MoE names are loose (380m has 346M with all-MoE layers); within 10 %.
  CHECK(params("moe-380m") == doctest::Approx(380e6).epsilon(0.10));
  CHECK(params("moe-1.3b") == doctest::Approx(1.3e9).epsilon(0.10));
  CHECK(params("moe-10b") == doctest::Approx(10e9).epsilon(0.10));
  CHECK(params("moe-70b") == doctest::Approx(70e9).epsilon(0.10));
}

TEST_CASE("every zoo graph is well formed") {
  for (auto& m : models::list()) {
    INFO(m.name);
    const op_graph g = m.lower();
    CHECK(g.batch == m.batch);
    std::set<std::string> names;
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
      const auto& op = g.ops[i];
      INFO(op.name);
      CHECK(names.insert(op.name).second);
      CHECK(op.dims.size() <= std::size_t(to::max_op_dims));
      CHECK(g.tensors[op.output.tensor].producer == int(i));
      for (auto& d : op.dims) CHECK(d.extent >= 1);
      auto check_map = [&](const to::tensor_map& t) {
        const auto& info = g.tensors[t.tensor];
        CHECK(info.rank <= to::max_tensor_rank);
        for (int a = 0; a < info.rank; ++a)
          if (t.dim[a] >= 0) {
            REQUIRE(t.dim[a] < int(op.dims.size()));
            CHECK(info.extents[a] == op.dims[t.dim[a]].extent);
          }
      };
      for (auto& t : op.inputs) {
        CHECK(g.tensors[t.tensor].producer < int(i));
        CHECK_FALSE(g.tensors[t.tensor].parameter);
        check_map(t);
      }
      for (auto& t : op.params) {
        CHECK(g.tensors[t.tensor].parameter);
        check_map(t);
      }
      check_map(op.output);
      for (auto& s : op.saved) CHECK(s.input < int(op.inputs.size()));
    }
  }
}

TEST_CASE("small test models are easy to declare") {
  using tiny_moe = models::moe_transformer<{.layers = 2, .hidden = 32, .heads = 4, .experts = 4, .seq = 16, .vocab = 64, .batch = 4}>;
  const op_graph g = to::lower<tiny_moe>();
  int moe_ops = 0;
  for (auto& o : g.ops) moe_ops += o.kind == to::op_kind::moe_experts;
  CHECK(moe_ops == 2);
  const op_graph c = to::lower<models::tiny_inception<4>>();
  int concats = 0;
  for (auto& o : c.ops) concats += o.kind == to::op_kind::concat;
  CHECK(concats == 1);
  CHECK(c.batch == 4);
}
}  // namespace model_zoo_test_file
