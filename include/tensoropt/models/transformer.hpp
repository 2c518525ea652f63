// GPT and BERT from a configuration value: the one lowering of both models.
//
// `lower_transformer(config, kind)` builds the operator graph of a GPT (pre-LN,
// causal) or BERT (post-LN, bidirectional) model from a run-time `gpt_config`; the
// compile-time types `models::gpt<{...}>` and `models::bert<{...}>` (gpt.hpp) lower
// through the very same constexpr function (their body layer calls
// detail::lower_transformer_body), so a model typed in C++ and the same model given
// as a spec on the command line (`gpt:layers=24,hidden=2304,...`) are one graph,
// op for op. The configuration is the source of truth; its rules live in
// `config_error()`, used by the compile-time check (one static_assert per rule)
// and the run-time check alike.
//
// GPT layer "layers.<i>": ln1, attn.{qkv,core,proj,drop}, add1, ln2,
// mlp.{fc1,act,fc2,drop}, add2, which saves 34sbh + 5as^2b bytes per layer at
// 2-byte activations (Korthikanti et al., 2022). Around the layers: "embed" (token
// table [v, h] + learned positions [s, h]), "ln_f", "head" (linear tied to the token
// table: no own weight), "labels" and "loss" (softmax cross-entropy over v).
// Parameters: 12Lh^2 + 13Lh + vh + sh + 2h (ffn = 4h).
//
// BERT: embed, ln_embed, layers with attn, add1, ln1, mlp, add2, ln2 (post-LN), the
// MLM head (head.transform linear + head.act gelu + head.ln, then head.decoder tied
// to the token table), loss. Token-type embeddings and the pooler are omitted
// (0.2 % of BERT-large's parameters). With dropout = 0 there is no dropout op or
// buffer at all (attn.drop, mlp.drop and the attention core's mask and dropout output
// are left out), as in a stack that runs none at rate 0.
#pragma once
#include <string_view>
#include "../model/attention.hpp"
#include "../model/compose.hpp"
#include "../model/graph.hpp"
#include "../model/layers.hpp"
#include "../model/lowering.hpp"
#include "../model/model.hpp"

namespace tensoropt::models {

/// A GPT/BERT configuration. ffn = 0 means 4 * hidden.
struct gpt_config {
  index_t layers = 12;
  index_t hidden = 768;
  index_t heads = 12;
  index_t seq = 1024;
  index_t vocab = 51200;
  index_t batch = 1024;  ///< global batch (sequences)
  index_t ffn = 0;
  double dropout = 0.1;
  constexpr index_t ffn_size() const { return ffn > 0 ? ffn : 4 * hidden; }
  friend constexpr bool operator==(const gpt_config&, const gpt_config&) = default;
};

/// Which model a gpt_config describes.
enum class transformer_kind { gpt, bert };

constexpr std::string_view name_of(transformer_kind k) { return k == transformer_kind::gpt ? "gpt" : "bert"; }

/// Largest sizes a configuration may have: far above any real model, low enough
/// that products of sizes (b*s*h, b*a*s^2) stay within int64 element counts.
inline constexpr index_t max_layers = 4096, max_hidden = 1 << 20, max_heads = 1 << 16, max_seq = 1 << 20,
                         max_vocab = 1 << 24, max_batch = 1 << 24;

/// The first rule `c` breaks, or nullptr. Ranges per field (also in the spec's
/// reflection table): layers [1, 4096], hidden [1, 2^20], heads [1, 2^16], seq
/// [1, 2^20], vocab [2, 2^24], batch [1, 2^24], ffn 0 (= 4h) or [1, 2^24],
/// dropout [0, 1); heads must divide hidden.
constexpr const char* config_error(const gpt_config& c) {
  if (c.layers < 1 || c.layers > max_layers) return "layers must be in [1, 4096]";
  if (c.hidden < 1 || c.hidden > max_hidden) return "hidden must be in [1, 1048576]";
  if (c.heads < 1 || c.heads > max_heads) return "heads must be in [1, 65536]";
  if (c.seq < 1 || c.seq > max_seq) return "seq must be in [1, 1048576]";
  if (c.vocab < 2 || c.vocab > max_vocab) return "vocab must be in [2, 16777216]";
  if (c.batch < 1 || c.batch > max_batch) return "batch must be in [1, 16777216]";
  if (c.ffn < 0 || c.ffn > max_vocab) return "ffn must be 0 (= 4 * hidden) or in [1, 16777216]";
  if (!(c.dropout >= 0 && c.dropout < 1)) return "dropout must be in [0, 1)";
  if (c.hidden % c.heads != 0) return "heads must divide hidden (hidden / heads is the head size)";
  return nullptr;
}

/// Throws invalid_argument "<kind>: <rule>" if `c` breaks a rule.
inline void check_config(const gpt_config& c, transformer_kind k) {
  if (const char* e = config_error(c)) throw invalid_argument(std::string(name_of(k)) + ": " + e);
}

namespace detail {
using namespace tensoropt::detail;  // the graph builder and the layers' lowering helpers

/// A [b, s, <last>] shape value for the lowering helpers.
constexpr shape_desc bsx(index_t b, index_t s, std::string_view last, index_t n) {
  shape_desc d;
  d.rank = 3;
  d.extents = {b, s, n};
  d.names = {"b", "s", last};
  return d;
}

/// The token ids [b, s].
constexpr shape_desc token_shape(const gpt_config& c) {
  shape_desc d;
  d.rank = 2;
  d.extents = {c.batch, c.seq};
  d.names = {"b", "s"};
  return d;
}

/// mlp.{fc1, act, fc2, drop} on x[b, s, h] (scope "mlp").
TENSOROPT_NOINLINE constexpr int lower_ffn(graph_builder& b, int x, const gpt_config& c) {
  const auto scope = b.enter("mlp");
  const shape_desc h = bsx(c.batch, c.seq, "h", c.hidden), f = bsx(c.batch, c.seq, "f", c.ffn_size());
  b.name_next("fc1");
  x = lower_linear(b, x, h, 1, c.ffn_size(), "f", true);
  b.name_next("act");
  x = lower_activation(b, x, f, op_kind::gelu);
  b.name_next("fc2");
  x = lower_linear(b, x, f, 1, c.hidden, "h", true);
  b.name_next("drop");
  x = lower_activation(b, x, h, op_kind::dropout, c.dropout);  // at dropout 0: no op
  b.leave(scope);
  return x;
}

/// attn.{qkv, core, proj, drop} on x[b, s, h] (scope "attn").
TENSOROPT_NOINLINE constexpr int lower_attn(graph_builder& b, int x, const gpt_config& c, bool causal) {
  const auto scope = b.enter("attn");
  x = lower_attention(b, x, bsx(c.batch, c.seq, "h", c.hidden), c.heads, causal, c.dropout, c.dropout);
  b.leave(scope);
  return x;
}

TENSOROPT_NOINLINE constexpr int lower_named_ln(graph_builder& b, int x, const shape_desc& s, std::string_view n) {
  b.name_next(n);
  return lower_layer_norm(b, x, s);
}

/// Everything after the token input `x` (ids [b, s]): the body of GPT or BERT.
TENSOROPT_NOINLINE constexpr int lower_transformer_body(graph_builder& b, int x, const gpt_config& c,
                                                        transformer_kind kind) {
  const bool gpt = kind == transformer_kind::gpt;
  const shape_desc h = bsx(c.batch, c.seq, "h", c.hidden);
  b.name_next("embed");
  x = lower_embedding(b, x, token_shape(c), c.vocab, c.hidden, true);
  if (!gpt) x = lower_named_ln(b, x, h, "ln_embed");
  const auto layers = b.enter("layers");
  const int saved_id = b.repeat_id, saved_index = b.repeat_index, id = b.repeat_count++;
  for (index_t i = 0; i < c.layers; ++i) {
    const auto scope = b.enter(i);
    b.repeat_id = id;
    b.repeat_index = int(i);
    if (gpt) {  // pre-LN: x + attn(ln1(x)), then x + mlp(ln2(x))
      int y = lower_attn(b, lower_named_ln(b, x, h, "ln1"), c, true);
      x = lower_add(b, {x, y}, h, "add1");
      y = lower_ffn(b, lower_named_ln(b, x, h, "ln2"), c);
      x = lower_add(b, {x, y}, h, "add2");
    } else {  // post-LN: ln1(x + attn(x)), then ln2(x + mlp(x))
      x = lower_named_ln(b, lower_add(b, {x, lower_attn(b, x, c, false)}, h, "add1"), h, "ln1");
      x = lower_named_ln(b, lower_add(b, {x, lower_ffn(b, x, c)}, h, "add2"), h, "ln2");
    }
    b.leave(scope);
  }
  b.repeat_id = saved_id;
  b.repeat_index = saved_index;
  b.leave(layers);
  if (gpt) {
    x = lower_named_ln(b, x, h, "ln_f");
    b.name_next("head");
    x = lower_tied_linear(b, x, h, c.vocab, "v", "embed.weight");
  } else {  // MLM head: transform (h -> "f" of size h), gelu, layer norm, tied decoder
    const auto head = b.enter("head");
    const shape_desc t = bsx(c.batch, c.seq, "f", c.hidden);
    b.name_next("transform");
    x = lower_linear(b, x, h, 1, c.hidden, "f", true);
    b.name_next("act");
    x = lower_activation(b, x, t, op_kind::gelu);
    x = lower_named_ln(b, x, t, "ln");
    b.name_next("decoder");
    x = lower_tied_linear(b, x, t, c.vocab, "v", "embed.weight");
    b.leave(head);
  }
  b.name_next("loss");
  return lower_softmax_xent(b, x, bsx(c.batch, c.seq, "v", c.vocab));
}
}  // namespace detail

/// The operator graph of the GPT or BERT model `c`, named `name`. constexpr (small
/// configurations lower in constant expressions). Throws invalid_argument (a
/// compile error in a constant expression) when `c` breaks a rule of config_error().
constexpr op_graph lower_transformer(const gpt_config& c, transformer_kind kind, std::string_view name = "") {
  if (const char* e = config_error(c)) throw invalid_argument(e);
  detail::graph_builder b;
  detail::append(b.g.name, name.empty() ? name_of(kind) : name);
  b.g.batch = c.batch;
  const int x = detail::lower_input(b, detail::token_shape(c), true);
  detail::lower_transformer_body(b, x, c, kind);
  return std::move(b.g);
}

/// The body layer of models::gpt<C> / models::bert<C>: ids [b, s] -> the loss,
/// lowered by detail::lower_transformer_body. A configuration that breaks a rule
/// is one compile error quoting the rule.
template <gpt_config C, transformer_kind Kind>
struct transformer_body : primitive_layer<transformer_body<C, Kind>> {
  static_assert(C.layers >= 1, "tensoropt::models::gpt/bert: layers must be at least 1");
  static_assert(C.heads < 1 || C.hidden % C.heads == 0,
                "tensoropt::models::gpt/bert: heads must divide hidden (attention: the number of heads must "
                "divide the hidden size)");
  static_assert(config_error(C) == nullptr || C.layers < 1 || (C.heads >= 1 && C.hidden % C.heads != 0),
                "tensoropt::models::gpt/bert: a size is out of range (see models::config_error)");
  static constexpr bool params_ok = config_error(C) == nullptr;
  static constexpr std::string_view kind_name = name_of(Kind);
  template <class In>
  static constexpr bool accepts = [] {
    if constexpr (is_ids_v<In>)
      return In::shape_type::rank == 2 && In::shape_type::extents[0] == C.batch &&
             In::shape_type::extents[1] == C.seq;
    else return false;
  }();
  template <class In>
  static consteval void diagnose() {
    static_assert(accepts<In>, "tensoropt::models::gpt/bert: the input must be ids [batch, seq] of the config");
  }
  template <class In>
  struct out_ {
    using type = shape<>;
  };
  template <class In>
  TENSOROPT_FLATTEN static constexpr int lower(detail::graph_builder& b, int x) {
    return detail::lower_transformer_body(b, x, C, Kind);
  }
};

}  // namespace tensoropt::models
