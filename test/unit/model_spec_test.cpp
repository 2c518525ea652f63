// Model specs (gpt:/bert: key=value): parsing and refusals, printing back, and the
// lowering: a spec, the compile-time type, and the same model composed from layer
// types (the pre-LN/post-LN layouts restated here) are one graph, field by field.
#include <tensoropt/models/model_spec.hpp>
#include <tensoropt/models/zoo.hpp>
#include <doctest/doctest.h>
#include <string>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace model_spec_test_file {

namespace to = tensoropt;
using namespace tensoropt;
using models::gpt_config;
using models::transformer_kind;

namespace {

/// Every field of two graphs, op by op, tensor by tensor.
void check_same_graph(const op_graph& a, const op_graph& b) {
  CHECK(a.name == b.name);
  CHECK(a.batch == b.batch);
  REQUIRE(a.ops.size() == b.ops.size());
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const auto &x = a.tensors[i], &y = b.tensors[i];
    CAPTURE(x.name);
    CHECK(x.name == y.name);
    CHECK(x.extents == y.extents);
    CHECK(x.rank == y.rank);
    CHECK(x.parameter == y.parameter);
    CHECK(x.integer == y.integer);
    CHECK(x.producer == y.producer);
  }
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const auto &x = a.ops[i], &y = b.ops[i];
    CAPTURE(x.name);
    CHECK(x.name == y.name);
    CHECK(x.kind == y.kind);
    CHECK(x.dims == y.dims);
    CHECK(x.inputs == y.inputs);
    CHECK(x.params == y.params);
    CHECK(x.output == y.output);
    CHECK(x.fwd_flops_per_point == y.fwd_flops_per_point);
    CHECK(x.bwd_flops_per_point == y.bwd_flops_per_point);
    CHECK(x.saved == y.saved);
    CHECK(x.attr == y.attr);
    CHECK(x.repeat_id == y.repeat_id);
    CHECK(x.repeat_index == y.repeat_index);
  }
  CHECK(a.parameter_count() == b.parameter_count());
  CHECK(a.fwd_flops() == b.fwd_flops());
}

// The GPT and BERT layouts written with the layer library's composition types
// (independent of transformer.hpp's value lowering, which must agree with them).
template <index_t H, index_t A, index_t F, double P>
using pre_ln_layer =
    seq<residual<seq<named<"ln1", layer_norm<H>>, named<"attn", attention<A, true, P, P>>>, "add1">,
        residual<seq<named<"ln2", layer_norm<H>>, named<"mlp", seq<named<"fc1", linear<H, F>>, named<"act", gelu>,
                                                                  named<"fc2", linear<F, H>>, named<"drop", dropout<P>>>>>,
                 "add2">>;
template <gpt_config C>
using composed_gpt = model<"gpt", ids<shape<axis<"b", C.batch>, axis<"s", C.seq>>>,
                           models::lm_body<C.vocab, C.hidden, C.layers,
                                           pre_ln_layer<C.hidden, C.heads, C.ffn_size(), C.dropout>>>;
template <gpt_config C>
using post_ln_layer =
    seq<residual<named<"attn", attention<C.heads, false, C.dropout, C.dropout>>, "add1">,
        named<"ln1", layer_norm<C.hidden>>,
        residual<named<"mlp", seq<named<"fc1", linear<C.hidden, C.ffn_size()>>, named<"act", gelu>,
                                  named<"fc2", linear<C.ffn_size(), C.hidden>>, named<"drop", dropout<C.dropout>>>>,
                 "add2">,
        named<"ln2", layer_norm<C.hidden>>>;
template <gpt_config C>
using composed_bert =
    model<"bert", ids<shape<axis<"b", C.batch>, axis<"s", C.seq>>>,
          seq<named<"embed", embedding<C.vocab, C.hidden, true>>, named<"ln_embed", layer_norm<C.hidden>>,
              named<"layers", repeat<post_ln_layer<C>, C.layers>>,
              named<"head", seq<named<"transform", linear<C.hidden, C.hidden>>, named<"act", gelu>,
                                named<"ln", layer_norm<C.hidden>>,
                                named<"decoder", tied_linear<C.vocab, "embed.weight">>>>,
              named<"loss", softmax_cross_entropy<C.vocab>>>>;

constexpr gpt_config small{.layers = 3, .hidden = 96, .heads = 6, .seq = 16, .vocab = 100, .batch = 4};
constexpr gpt_config no_dropout{.layers = 2, .hidden = 64, .heads = 4, .seq = 32, .vocab = 64, .batch = 8,
                                .dropout = 0.0};
constexpr gpt_config custom_ffn{.layers = 1, .hidden = 48, .heads = 3, .seq = 8, .vocab = 50, .batch = 2,
                                .ffn = 100, .dropout = 0.2};

}  // namespace

TEST_CASE("a spec parses into the configuration and prints back") {
  const auto m = models::parse_model_spec("gpt:layers=24,hidden=2304,heads=24,seq=2048,vocab=51200,batch=512");
  CHECK(m.kind == transformer_kind::gpt);
  CHECK(m.config == gpt_config{.layers = 24, .hidden = 2304, .heads = 24, .seq = 2048, .vocab = 51200, .batch = 512});
  CHECK(m.text() == "gpt:layers=24,hidden=2304,heads=24,seq=2048,vocab=51200,batch=512");
  const auto b = models::parse_model_spec("bert:batch=8,seq=16,vocab=30,heads=2,hidden=8,layers=1,ffn=20,dropout=0");
  CHECK(b.kind == transformer_kind::bert);
  CHECK(b.config.ffn == 20);
  CHECK(b.config.dropout == 0.0);
  CHECK(b.text() == "bert:layers=1,hidden=8,heads=2,seq=16,vocab=30,batch=8,ffn=20,dropout=0");
  CHECK(models::parse_model_spec(b.text()).config == b.config);
  CHECK(models::is_model_spec("gpt:layers=1"));
  CHECK(!models::is_model_spec("gpt3-1.3b"));
}

TEST_CASE("bad specs are refused naming the key, the range or the valid keys") {
  const std::string ok = "layers=2,hidden=64,heads=4,seq=16,vocab=64,batch=8";
  struct bad {
    std::string spec;
    const char* message;
  };
  const bad cases[] = {
      {"t5:" + ok, "expected gpt:KEY=VALUE,... or bert:KEY=VALUE,... with keys layers, hidden, heads"},
      {"gpt3-1.3b", "expected gpt:KEY=VALUE"},
      {"gpt:" + ok + ",experts=8", "gpt: unknown key 'experts'; valid keys: layers, hidden, heads, seq, vocab, batch "
                                   "(required); ffn, dropout (optional)"},
      {"gpt:layers=2,hidden=64,heads=4,seq=16,vocab=64", "gpt: missing required key(s) batch; valid keys"},
      {"bert:layers=2", "bert: missing required key(s) hidden, heads, seq, vocab, batch"},
      {"gpt:", "gpt: missing required key(s) layers, hidden, heads, seq, vocab, batch"},
      {"gpt:" + ok + ",layers=3", "gpt: key 'layers' given twice"},
      {"gpt:layers=24x,hidden=64,heads=4,seq=16,vocab=64,batch=8", "gpt:layers: expected an integer in [1, 4096], got '24x'"},
      {"gpt:layers=2,hidden=64,heads=4,seq=16,vocab=64,batch=2.5", "gpt:batch: expected an integer in [1, 16777216], got '2.5'"},
      {"gpt:layers=0,hidden=64,heads=4,seq=16,vocab=64,batch=8", "gpt:layers: expected an integer in [1, 4096], got '0'"},
      {"gpt:layers=2,hidden=-64,heads=4,seq=16,vocab=64,batch=8", "gpt:hidden: expected an integer in [1, 1048576]"},
      {"gpt:" + ok + ",dropout=1", "gpt:dropout: expected a number in [0, 1), got '1'"},
      {"gpt:" + ok + ",ffn=-1", "gpt:ffn: expected an integer in [0, 16777216], got '-1'"},
      {"gpt:layers=2,hidden=100,heads=12,seq=16,vocab=64,batch=8", "gpt: heads must divide hidden"},
      {"bert:layers=2,hidden=64,heads=4,seq=16,vocab=1,batch=8", "bert:vocab: expected an integer in [2, 16777216]"},
      {"gpt:layers 2", "gpt: expected key=value, got 'layers 2'"},
  };
  for (const auto& b : cases) {
    CAPTURE(b.spec);
    CHECK_THROWS_WITH_AS(models::parse_model_spec(b.spec), doctest::Contains(b.message), invalid_argument);
  }
  CHECK_THROWS_WITH_AS(models::lower_transformer({.hidden = 10, .heads = 3}, transformer_kind::gpt),
                       doctest::Contains("heads must divide hidden"), invalid_argument);
}

TEST_CASE("the value lowering equals the model composed from layer types") {
  check_same_graph(models::lower_transformer(small, transformer_kind::gpt), lower<composed_gpt<small>>());
  check_same_graph(models::lower_transformer(no_dropout, transformer_kind::gpt), lower<composed_gpt<no_dropout>>());
  // dropout 0: no dropout op at all (attention's and the FFN's), as a stack running none
  for (auto kind : {transformer_kind::gpt, transformer_kind::bert})
    for (const auto& o : models::lower_transformer(no_dropout, kind).ops) {
      CAPTURE(o.name);
      CHECK(o.kind != op_kind::dropout);
    }
  check_same_graph(models::lower_transformer(custom_ffn, transformer_kind::gpt), lower<composed_gpt<custom_ffn>>());
  check_same_graph(models::lower_transformer(small, transformer_kind::bert), lower<composed_bert<small>>());
  check_same_graph(models::lower_transformer(custom_ffn, transformer_kind::bert), lower<composed_bert<custom_ffn>>());
  // and in a constant expression
  static_assert(models::lower_transformer(small, transformer_kind::gpt).ops.size() ==
                lower<composed_gpt<small>>().ops.size());
}

TEST_CASE("a spec lowers to the graph of the compile-time type, for zoo models") {
  int transformers = 0;
  for (const auto& m : models::list()) {
    if (m.family != "gpt3" && m.family != "megatron" && m.family != "bert") {
      CHECK(m.spec.empty());
      continue;
    }
    CAPTURE(m.name);
    if (m.name == "megatron-1t" || m.name == "megatron-145.6b") continue;  // large: lowered by the other entries
    const auto spec = models::parse_model_spec(m.spec);
    check_same_graph(spec.lower(m.name), m.lower());
    ++transformers;
  }
  CHECK(transformers == 12);
  check_same_graph(models::parse_model_spec(models::to_spec(small, transformer_kind::gpt)).lower(),
                   lower<models::gpt<small>>());
  check_same_graph(models::parse_model_spec(models::to_spec(small, transformer_kind::bert)).lower(),
                   lower<models::bert<small>>());
  check_same_graph(models::lower("gpt:layers=3,hidden=96,heads=6,seq=16,vocab=100,batch=4"),
                   lower<models::gpt<small>>());
  CHECK(models::lower("mlp").name == "mlp");
  CHECK_THROWS_WITH_AS(models::lower("gpt:layers=3"), doctest::Contains("missing required key(s)"), invalid_argument);
  CHECK(models::find("megatron-1.7b").spec == "gpt:layers=24,hidden=2304,heads=24,seq=2048,vocab=51200,batch=512");
  CHECK(models::find("bert-large").spec == "bert:layers=24,hidden=1024,heads=16,seq=512,vocab=30522,batch=256");
}

TEST_CASE("the JSON form of a spec round-trips and refuses what the spec refuses") {
  const auto m = models::parse_model_spec("bert:layers=2,hidden=64,heads=4,seq=16,vocab=64,batch=8,ffn=100");
  const auto j = models::model_spec_to_json(m);
  CHECK(j.dump() == R"({"config":{"batch":8,"dropout":0.1,"ffn":100,"heads":4,"hidden":64,"layers":2,"seq":16,)"
                    R"("vocab":64},"kind":"bert"})");
  const auto back = models::model_spec_from_json(j, "plan.model");
  CHECK(back.kind == m.kind);
  CHECK(back.config == m.config);
  auto refused = [](const char* text) {
    return models::model_spec_from_json(nlohmann::json::parse(text), "plan.model");
  };
  CHECK_THROWS_WITH_AS(refused(R"({"kind": "t5", "config": {}})"), doctest::Contains("plan.model.kind: expected"),
                       format_error);
  CHECK_THROWS_WITH_AS(refused(R"({"kind": "gpt", "config": {"layers": 2}})"),
                       doctest::Contains("plan.model.config: missing key 'hidden'"), format_error);
  CHECK_THROWS_WITH_AS(
      refused(R"({"kind": "gpt", "config": {"layers": 2, "hidden": 10, "heads": 3, "seq": 4, "vocab": 9, "batch": 1}})"),
      doctest::Contains("plan.model.config: heads must divide hidden"), format_error);
  CHECK_THROWS_WITH_AS(
      refused(R"({"kind": "gpt", "config": {"layers": 0, "hidden": 8, "heads": 2, "seq": 4, "vocab": 9, "batch": 1}})"),
      doctest::Contains("plan.model.config.layers: expected an integer in [1, 4096], got '0'"), format_error);
  CHECK_THROWS_WITH_AS(refused(R"({"kind": "gpt"})"), doctest::Contains("plan.model: expected {"), format_error);
}
}  // namespace model_spec_test_file
