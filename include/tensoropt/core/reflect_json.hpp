// JSON of reflected structs: to_json / from_json walk the same field table
// (reflect.hpp) as specs, command lines and --help, so a configuration written
// to a file (a plan file's model, for instance) and read back uses the same keys,
// ranges and error messages as `gpt:layers=...` on a command line.
//
// from_json refuses, with one line naming the key path ("plan.model.heads"): a
// value that is not an object, unknown keys (listing the valid ones), missing
// required keys, values of the wrong JSON type, non-integral numbers for integer
// fields, and values out of the field's range. Fields not in the object keep the
// values of `defaults`. Unset optionals are omitted by to_json.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>
#include "error.hpp"
#include "reflect.hpp"

namespace tensoropt {

namespace detail {
/// The JSON value `j` as the scalar type V of field f (via its text form, so the
/// range checks and messages are the ones of parse_scalar).
template <class V, class S, class T>
V scalar_from_json(const std::string& who, const field_info<S, T>& f, const nlohmann::json& j) {
  auto wrong = [&](const char* expected) -> V {
    std::string shown = j.dump();
    throw format_error(who + ": expected " + expected + ", got " + echo(shown));
  };
  if constexpr (std::is_same_v<V, bool>) {
    if (!j.is_boolean()) return wrong("true or false");
    return j.get<bool>();
  } else if constexpr (std::is_integral_v<V>) {
    if (!j.is_number_integer()) return wrong("an integer");
    return parse_scalar<V>(who, f, j.dump());
  } else if constexpr (std::is_floating_point_v<V>) {
    if (!j.is_number()) return wrong("a number");
    return parse_scalar<V>(who, f, j.dump());
  } else if constexpr (std::is_same_v<V, std::string>) {
    if (!j.is_string()) return wrong("a string");
    return parse_scalar<V>(who, f, j.get<std::string>());
  } else {
    if (!j.is_array()) return wrong("an array of integers");
    std::string text;
    for (const auto& x : j) {
      if (!x.is_number_integer()) return wrong("an array of integers");
      text += (text.empty() ? "" : ",") + x.dump();
    }
    return parse_scalar<V>(who, f, text);
  }
}
}  // namespace detail

/// A JSON object with one key per field (unset optionals omitted).
template <Reflected S>
nlohmann::json to_json(const S& s) {
  nlohmann::json j = nlohmann::json::object();
  for_each_field<S>([&](const auto& f) {
    const auto& v = s.*(f.member);
    if constexpr (detail::is_optional<std::remove_cvref_t<decltype(v)>>::value) {
      if (v) j[std::string(f.name)] = nlohmann::json(*v);
    } else {
      j[std::string(f.name)] = nlohmann::json(v);
    }
  });
  return j;
}

/// Reads S from the object `j`; `where` names it in errors ("plan.model").
/// Throws format_error naming the key and what is valid.
template <Reflected S>
S from_json(const nlohmann::json& j, std::string_view where, S defaults = {}) {
  const std::string w(where);
  if (!j.is_object()) throw format_error(w + ": expected an object with keys " + field_names<S>());
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for_each_field<S>([&](const auto& f) { known = known || f.name == it.key(); });
    if (!known)
      throw format_error(w + ": unknown key '" + detail::echo(it.key()) + "'; valid keys: " + field_names<S>());
  }
  for_each_field<S>([&](const auto& f) {
    const std::string key(f.name);
    const auto it = j.find(key);
    if (it == j.end()) {
      if (f.is_required)
        throw format_error(w + ": missing key '" + key + "' (required: " + field_names<S>(true) + ")");
      return;
    }
    using T = typename std::remove_cvref_t<decltype(f)>::member_type;
    try {
      defaults.*(f.member) = detail::scalar_from_json<typename detail::value_of<T>::type>(w + "." + key, f, *it);
    } catch (const invalid_argument& e) {
      throw format_error(e.what());
    }
  });
  return defaults;
}

}  // namespace tensoropt
