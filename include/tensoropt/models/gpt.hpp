// Transformer language models of the zoo: GPT (GPT-3 suite, Megatron table), BERT
// and the GShard MoE transformer, as compile-time model types. GPT and BERT lower
// from their configuration value (transformer.hpp: layer layout, saved activations
// and parameter count), so a type here and a `gpt:`/`bert:` spec are one graph.
#pragma once
#include "../model/model.hpp"
#include "transformer.hpp"

namespace tensoropt::models {

/// Embedding -> N layers -> final layer norm -> LM head tied to the embedding -> loss.
template <index_t Vocab, index_t Hidden, index_t Layers, Layer Block>
using lm_body = seq<named<"embed", embedding<Vocab, Hidden, true>>, named<"layers", repeat<Block, Layers>>,
                    named<"ln_f", layer_norm<Hidden>>, named<"head", tied_linear<Vocab, "embed.weight">>,
                    named<"loss", softmax_cross_entropy<Vocab>>>;

/// GPT language model of configuration C: `models::gpt<{.layers = 24, .hidden = 2048,
/// .heads = 32, .seq = 2048, .batch = 8}>`. Its graph is lower_transformer(C,
/// transformer_kind::gpt, Name): the same function a `gpt:` spec lowers through. A
/// configuration that breaks a rule (heads not dividing hidden, zero layers) is a
/// compile error quoting the rule.
template <gpt_config C, fixed_string Name = "gpt">
struct gpt : model<Name, ids<shape<axis<"b", C.batch>, axis<"s", C.seq>>>, transformer_body<C, transformer_kind::gpt>> {
  static constexpr gpt_config config = C;
  static constexpr transformer_kind kind = transformer_kind::gpt;
};

/// BERT (post-LN encoder, bidirectional attention, MLM head); see transformer.hpp.
template <gpt_config C, fixed_string Name = "bert">
struct bert
    : model<Name, ids<shape<axis<"b", C.batch>, axis<"s", C.seq>>>, transformer_body<C, transformer_kind::bert>> {
  static constexpr gpt_config config = C;
  static constexpr transformer_kind kind = transformer_kind::bert;
};

/// A GShard MoE transformer configuration (Alpa's suite: every layer's FFN is a
/// mixture of `experts` FFNs of size 4h, top-2 gating, capacity factor 1).
struct moe_config {
  index_t layers = 8;
  index_t hidden = 768;
  index_t heads = 16;
  index_t experts = 8;
  index_t seq = 1024;
  index_t vocab = 32000;
  index_t batch = 1024;
  index_t top_k = 2;
  double dropout = 0.1;
};

/// MoE transformer layer: ln1, attn, add1, ln2, moe.{gate,dispatch,experts,combine},
/// drop, add2.
template <moe_config C>
using moe_layer =
    seq<residual<seq<named<"ln1", layer_norm<C.hidden>>, named<"attn", attention<C.heads, false, C.dropout, C.dropout>>>,
                 "add1">,
        residual<seq<named<"ln2", layer_norm<C.hidden>>, named<"moe", moe<C.experts, 4 * C.hidden, C.top_k>>,
                     named<"drop", dropout<C.dropout>>>,
                 "add2">>;

template <moe_config C, fixed_string Name = "moe">
struct moe_transformer
    : model<Name, ids<shape<axis<"b", C.batch>, axis<"s", C.seq>>>,
            lm_body<C.vocab, C.hidden, C.layers, moe_layer<C>>> {
  static constexpr moe_config config = C;
};

// GPT-3 suite (Alpa): seq 1024, vocab 51200, global batch 1024.
using gpt3_125m = gpt<{.layers = 12, .hidden = 768, .heads = 12}, "gpt3-125m">;
using gpt3_350m = gpt<{.layers = 24, .hidden = 1024, .heads = 16}, "gpt3-350m">;
using gpt3_760m = gpt<{.layers = 24, .hidden = 1536, .heads = 16}, "gpt3-760m">;
using gpt3_1_3b = gpt<{.layers = 24, .hidden = 2048, .heads = 32}, "gpt3-1.3b">;
using gpt3_2_6b = gpt<{.layers = 32, .hidden = 2560, .heads = 32}, "gpt3-2.6b">;
using gpt3_6_7b = gpt<{.layers = 32, .hidden = 4096, .heads = 32}, "gpt3-6.7b">;
using gpt3_15b = gpt<{.layers = 48, .hidden = 5120, .heads = 40}, "gpt3-15b">;
using gpt3_39b = gpt<{.layers = 48, .hidden = 8192, .heads = 64}, "gpt3-39b">;

// Megatron-LM weak scaling table: seq 2048, vocab 51200, batch per table.
using megatron_1_7b = gpt<{.layers = 24, .hidden = 2304, .heads = 24, .seq = 2048, .batch = 512}, "megatron-1.7b">;
using megatron_18_4b = gpt<{.layers = 40, .hidden = 6144, .heads = 48, .seq = 2048, .batch = 1024}, "megatron-18.4b">;
using megatron_39_1b = gpt<{.layers = 48, .hidden = 8192, .heads = 64, .seq = 2048, .batch = 1536}, "megatron-39.1b">;
using megatron_145_6b =
    gpt<{.layers = 80, .hidden = 12288, .heads = 96, .seq = 2048, .batch = 2304}, "megatron-145.6b">;
using megatron_1t = gpt<{.layers = 128, .hidden = 25600, .heads = 160, .seq = 2048, .batch = 3072}, "megatron-1t">;

// BERT-large: hidden 1024, 24 layers, 16 heads, seq 512, vocab 30522, batch 256.
using bert_large =
    bert<{.layers = 24, .hidden = 1024, .heads = 16, .seq = 512, .vocab = 30522, .batch = 256}, "bert-large">;

// GShard MoE suite (Alpa): seq 1024, vocab 32000, global batch 1024.
using moe_380m = moe_transformer<{.layers = 8, .hidden = 768, .heads = 16, .experts = 8}, "moe-380m">;
using moe_1_3b = moe_transformer<{.layers = 16, .hidden = 768, .heads = 16, .experts = 16}, "moe-1.3b">;
using moe_10b = moe_transformer<{.layers = 16, .hidden = 1536, .heads = 16, .experts = 32}, "moe-10b">;
using moe_70b = moe_transformer<{.layers = 32, .hidden = 2048, .heads = 16, .experts = 64}, "moe-70b">;

}  // namespace tensoropt::models
