// json_read: the checked JSON reading shared by the file readers (problem, frontier,
// and any other tensoropt format): parse with limits, then typed field access whose
// errors name the field's path ("edges[3].time[2]").
//
// Limits, so that no file can crash the reader or flood the terminal:
//   - nesting deeper than max_json_depth (64) is refused by a linear pre-scan before
//     nlohmann/json parses. nlohmann's parser itself is iterative, but the values it
//     builds are copied, compared and dumped recursively: an array nested 200,000 deep
//     overflowed the stack while the error message was built (`dump`);
//   - a NUL byte anywhere is refused (no tensoropt file holds one; it means binary
//     data or a truncated copy);
//   - a value echoed in a message is cut to max_json_echo characters, an array or
//     object is described by its size, and the parser's own message is cut likewise,
//     so a 50 MB string gives a one-line error.
// Times are read as seconds and returned as integer picoseconds, exact for values
// below 2^51 ps (about 37 minutes per value), which is checked; bytes as integers.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <nlohmann/json.hpp>
#include "../core/error.hpp"
#include "problem.hpp"

namespace tensoropt {

/// The deepest nesting of arrays and objects a tensoropt file may have (the formats
/// use at most 4).
inline constexpr int max_json_depth = 64;
/// The most characters of a value a reader's error message echoes.
inline constexpr std::size_t max_json_echo = detail::max_echo;

namespace detail {

/// A short rendering of `v` for an error message: scalars as JSON (cut short), arrays
/// and objects by their size. Never recursive, never longer than ~max_json_echo + 30.
inline std::string json_echo(const nlohmann::json& v) {
  if (v.is_array()) return "an array of " + std::to_string(v.size()) + " values";
  if (v.is_object()) return "an object of " + std::to_string(v.size()) + " fields";
  return cut_short(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

/// Parses `text` as the JSON of a `what` file ("problem", "frontier", ...): refuses NUL
/// bytes and nesting deeper than max_json_depth, and wraps nlohmann's errors into one
/// format_error with the byte position. See the file comment.
inline nlohmann::json parse_json_text(std::string_view text, const std::string& what) {
  const std::string pre = what + " JSON: ";
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\0')
      throw format_error(pre + "a NUL byte at byte " + std::to_string(i) +
                         "; the file is binary or corrupt, not JSON text");
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > max_json_depth)
        throw format_error(pre + "nested deeper than " + std::to_string(max_json_depth) + " levels at byte " +
                           std::to_string(i) + "; a tensoropt file nests at most a few levels");
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw format_error(pre + "not valid JSON at byte " + std::to_string(e.byte) + ": " +
                       cut_short(e.what(), 4 * max_json_echo));
  } catch (const nlohmann::json::exception& e) {
    throw format_error(pre + cut_short(e.what(), 4 * max_json_echo));
  }
}

inline constexpr double max_json_seconds = double(std::int64_t(1) << 51) / ps_per_second;

inline const nlohmann::json& json_field(const nlohmann::json& obj, const char* key,
                                        const std::string& at) {
  if (!obj.is_object()) throw format_error(at + ": expected an object, got " + obj.type_name());
  auto it = obj.find(key);
  if (it == obj.end())
    throw format_error((at.empty() ? std::string() : at + ".") + key + ": missing field");
  return *it;
}

inline std::string json_path(const std::string& at, const char* key) {
  return at.empty() ? std::string(key) : at + "." + key;
}

inline cost_t json_seconds(const nlohmann::json& v, const std::string& at) {
  if (!v.is_number()) throw format_error(at + ": expected a number of seconds, got " + v.type_name());
  const double s = v.get<double>();
  if (!std::isfinite(s)) throw format_error(at + ": must be finite, got " + json_echo(v));
  if (s < 0) throw format_error(at + ": must be >= 0 seconds, got " + json_echo(v));
  if (s > max_json_seconds)
    throw format_error(at + ": " + json_echo(v) + " s is too large (at most " +
                       std::to_string(max_json_seconds) + " s)");
  return cost_t(std::llround(s * ps_per_second));
}

inline cost_t json_bytes(const nlohmann::json& v, const std::string& at) {
  if (v.is_number_unsigned()) {
    const auto b = v.get<std::uint64_t>();
    if (b > std::uint64_t(INT64_MAX)) throw format_error(at + ": " + json_echo(v) + " bytes is too large");
    return cost_t(b);
  }
  if (v.is_number_integer()) {
    const auto b = v.get<std::int64_t>();
    if (b < 0) throw format_error(at + ": must be >= 0 bytes, got " + json_echo(v));
    return b;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d)) throw format_error(at + ": must be finite, got " + json_echo(v));
    if (d < 0) throw format_error(at + ": must be >= 0 bytes, got " + json_echo(v));
    if (d != std::floor(d)) throw format_error(at + ": must be a whole number of bytes, got " + json_echo(v));
    if (d >= 9.2e18) throw format_error(at + ": " + json_echo(v) + " bytes is too large");
    return cost_t(d);
  }
  throw format_error(at + ": expected a number of bytes, got " + std::string(v.type_name()));
}

inline const nlohmann::json& json_array(const nlohmann::json& v, const std::string& at) {
  if (!v.is_array()) throw format_error(at + ": expected an array, got " + v.type_name());
  return v;
}

inline std::string json_string(const nlohmann::json& v, const std::string& at) {
  if (!v.is_string()) throw format_error(at + ": expected a string, got " + v.type_name());
  return v.get<std::string>();
}

inline int json_node_index(const nlohmann::json& v, const std::string& at, std::size_t nodes) {
  if (!v.is_number_integer())
    throw format_error(at + ": expected a node index (integer), got " + json_echo(v));
  const auto i = v.get<std::int64_t>();
  if (i < 0 || std::size_t(i) >= nodes)
    throw format_error(at + ": node " + json_echo(v) + " does not exist (there are " +
                       std::to_string(nodes) + " nodes, 0-based)");
  return int(i);
}

inline double seconds_of(cost_t ps) { return double(ps) / ps_per_second; }

}  // namespace detail

}  // namespace tensoropt
