// Model specs: any GPT or BERT shape as text, `gpt:layers=24,hidden=2304,heads=24,
// seq=2048,vocab=51200,batch=512` (or `bert:` with the same keys; `ffn=` and
// `dropout=` optional), parsed into a gpt_config and lowered by the same function
// as the compile-time models::gpt<{...}> / bert<{...}> (transformer.hpp).
//
// The keys, their help lines and ranges are gpt_config's reflection table below,
// so parsing, range errors, the list of valid keys in "unknown key" and "missing
// key" messages, and printing a configuration back as a spec all come from it.
// Values are parsed whole ("24x", "2.5" for an integer are refused); after the
// keys, the configuration's rules are checked (heads must divide hidden, ...).
// The same table gives the JSON form (model_spec_to_json / model_spec_from_json).
#pragma once
#include <boost/hana/tuple.hpp>
#include <string>
#include <string_view>
#include "../core/error.hpp"
#include "../core/reflect.hpp"
#include "../core/reflect_json.hpp"
#include "transformer.hpp"

namespace tensoropt {

template <>
struct reflection<models::gpt_config> {
  using c = models::gpt_config;
  static constexpr auto fields = boost::hana::make_tuple(
      field("layers", &c::layers, "transformer layers").range(1, models::max_layers).required(),
      field("hidden", &c::hidden, "hidden size h").range(1, models::max_hidden).required(),
      field("heads", &c::heads, "attention heads a (must divide hidden)").range(1, models::max_heads).required(),
      field("seq", &c::seq, "sequence length s").range(1, models::max_seq).required(),
      field("vocab", &c::vocab, "vocabulary size v").range(2, models::max_vocab).required(),
      field("batch", &c::batch, "global batch, in sequences").range(1, models::max_batch).required(),
      field("ffn", &c::ffn, "FFN size; 0 = 4 * hidden").range(0, models::max_vocab),
      field("dropout", &c::dropout, "dropout probability (attention, residual)").range_open_hi(0, 1));
};

namespace models {

/// A GPT or BERT configuration given as text.
struct model_spec {
  transformer_kind kind = transformer_kind::gpt;
  gpt_config config;
  /// "gpt:layers=...,..." (every required key, then ffn/dropout where they differ
  /// from the defaults: ffn 0 = 4h, dropout 0.1).
  std::string text() const { return std::string(name_of(kind)) + ":" + to_key_values(config); }
  /// The operator graph, named `name` (default "gpt" / "bert").
  op_graph lower(std::string_view name = "") const { return lower_transformer(config, kind, name); }
};

/// True when `s` is written as a spec ("KIND:...", e.g. "gpt:...") rather than a
/// zoo name (zoo names have no ':'); parse_model_spec says which kinds exist.
inline bool is_model_spec(std::string_view s) { return s.find(':') != std::string_view::npos; }

/// The keys of a spec and what they mean, one per line (for --help and errors).
inline std::string model_spec_help() { return help_text<gpt_config>(); }

/// Parses "gpt:k=v,..." or "bert:k=v,...". Throws invalid_argument naming the key
/// and its range, an unknown or missing key with the valid ones, or the rule the
/// configuration breaks.
inline model_spec parse_model_spec(std::string_view s) {
  model_spec m;
  const auto colon = s.find(':');
  const std::string_view kind = s.substr(0, colon);
  if (colon == std::string_view::npos || (kind != "gpt" && kind != "bert"))
    throw invalid_argument("model spec '" + detail::echo(s) + "': expected gpt:KEY=VALUE,... or bert:KEY=VALUE,... "
                           "with keys " + field_names<gpt_config>());
  m.kind = kind == "gpt" ? transformer_kind::gpt : transformer_kind::bert;
  const std::string what(kind);
  m.config = parse_key_values<gpt_config>(s.substr(colon + 1), what, gpt_config{});
  check_config(m.config, m.kind);
  return m;
}

/// {"kind": "gpt", "config": {"layers": 24, ...}}: the JSON form of a spec (e.g. a
/// plan file's model), written and read through gpt_config's table.
inline nlohmann::json model_spec_to_json(const model_spec& m) {
  return {{"kind", std::string(name_of(m.kind))}, {"config", to_json(m.config)}};
}

/// Reads model_spec_to_json's form; `where` names it in errors. Throws format_error
/// naming the key, or the rule the configuration breaks.
inline model_spec model_spec_from_json(const nlohmann::json& j, std::string_view where) {
  const std::string w(where);
  if (!j.is_object() || !j.contains("kind") || !j.contains("config") || j.size() != 2)
    throw format_error(w + ": expected {\"kind\": \"gpt\" or \"bert\", \"config\": {...}}");
  const auto& k = j["kind"];
  if (!k.is_string() || (k.get<std::string>() != "gpt" && k.get<std::string>() != "bert"))
    throw format_error(w + ".kind: expected \"gpt\" or \"bert\", got " + detail::echo(k.dump()));
  model_spec m;
  m.kind = k.get<std::string>() == "gpt" ? transformer_kind::gpt : transformer_kind::bert;
  m.config = from_json<gpt_config>(j["config"], w + ".config");
  if (const char* e = config_error(m.config)) throw format_error(w + ".config: " + e);
  return m;
}

/// The spec of a configuration: to_spec({...}, transformer_kind::gpt) == "gpt:layers=...".
inline std::string to_spec(const gpt_config& c, transformer_kind k) { return model_spec{k, c}.text(); }

}  // namespace models
}  // namespace tensoropt
