// Reflection of configuration structs: one table per struct (name, member, help
// line, range or choices, required) from which `key=value` specs, command lines,
// JSON, help text and every error message about a field are derived.
//
// A struct S is reflected by specializing `reflection<S>` with a Boost.Hana tuple
// of fields (their member types differ, so the list is heterogeneous and is walked
// with hana::for_each):
//
//   template <> struct reflection<gpt_config> {
//     static constexpr auto fields = boost::hana::make_tuple(
//         field("layers", &gpt_config::layers, "transformer layers").range(1, 4096).required(),
//         field("dropout", &gpt_config::dropout, "dropout probability").range_open_hi(0, 1));
//   };
//
// Member types: signed integers, double, bool, std::string (never empty when set;
// optionally one of `choices`), std::optional of a number or string (unset = not
// given), and std::vector<long> (a comma list). A value is parsed whole: "4x",
// "2.5" for an integer, "nan", "inf", "" and out-of-range values are refused with
// one line naming the field and its valid range ("--steps: expected an integer in
// [1, 1000000], got '4x'"), never a raw std::stoi message.
//
// Why Hana rather than a hand-written table per struct: the table holds member
// pointers of different types, so a plain array would need type erasure (a
// variant of member pointers and a visitor per use). A Hana tuple keeps each
// field's type, and each use (parse, print, JSON, help) is one generic lambda.
// Host-only: Hana is not used from CUDA code.
#pragma once
#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <concepts>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>
#include "error.hpp"

namespace tensoropt {

/// Specialize with `static constexpr auto fields = boost::hana::make_tuple(field(...), ...)`.
template <class S>
struct reflection;

/// A struct with a field table.
template <class S>
concept Reflected = requires { reflection<S>::fields; };

/// One reflected field of S with member type T. Built by field(); the modifiers
/// return a copy so a table reads as one expression per field.
template <class S, class T>
struct field_info {
  using member_type = T;
  std::string_view name;
  T S::*member;
  std::string_view help;
  std::string_view metavar = "";
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;
  bool is_required = false;
  std::string_view choices = "";  ///< "local|mpi": the only accepted strings

  constexpr field_info range(double l, double h) const { auto f = *this; f.lo = l; f.hi = h; return f; }
  /// (l, h]: e.g. a budget that must be > 0.
  constexpr field_info range_open_lo(double l, double h) const { auto f = range(l, h); f.lo_open = true; return f; }
  /// [l, h): e.g. a probability below 1.
  constexpr field_info range_open_hi(double l, double h) const { auto f = range(l, h); f.hi_open = true; return f; }
  constexpr field_info required() const { auto f = *this; f.is_required = true; return f; }
  constexpr field_info meta(std::string_view m) const { auto f = *this; f.metavar = m; return f; }
  constexpr field_info one_of(std::string_view c) const { auto f = *this; f.choices = c; return f; }
};

/// A field named `name` (a spec key, a JSON key, or a flag without its "--").
template <class S, class T>
constexpr field_info<S, T> field(std::string_view name, T S::*member, std::string_view help) {
  return field_info<S, T>{name, member, help};
}

namespace detail {
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};
template <class T> struct value_of { using type = T; };
template <class T> struct value_of<std::optional<T>> { using type = T; };
template <class T>
concept integer_value = std::integral<T> && !std::same_as<T, bool>;

/// The shortest text that reads back as exactly v ("0.1", "131.3180923461914",
/// whole numbers in full: "1000000").
inline std::string format_number(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string((long long)v);
  char buf[40];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// "[1, 1000000]", "(0, inf)", "[0, 1)", or "one of local, mpi".
template <class S, class T>
std::string describe_range(const field_info<S, T>& f) {
  using V = typename value_of<T>::type;
  if (!f.choices.empty()) {
    std::string c = "one of ";
    for (char ch : f.choices) c += ch == '|' ? std::string(", ") : std::string(1, ch);
    return c;
  }
  if constexpr ((std::is_arithmetic_v<V> && !std::same_as<V, bool>) || std::same_as<V, std::vector<long>>) {
    return std::string(f.lo_open ? "(" : "[") + format_number(f.lo) + ", " + format_number(f.hi) +
           (f.hi_open ? ")" : "]");
  }
  return "";
}

/// An echoed value kept to one short line: cut after 57 characters, control
/// characters written as \xHH.
inline std::string echo(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < 57 + (text.size() <= 60 ? 3 : 0); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += char(c);
    }
  }
  return text.size() <= 60 ? out : out + "...";
}

/// Where `text` is a number the field accepts followed by letters (a unit written out,
/// "12GB"; "4x"; `number_length`: the number's characters, 0: none), the hint that the
/// value takes the number alone, else "".
inline std::string unit_hint(std::string_view text, std::size_t number_length) {
  if (number_length == 0 || number_length >= text.size()) return "";
  for (std::size_t i = number_length; i < text.size(); ++i)
    if (!std::isalpha(static_cast<unsigned char>(text[i]))) return "";
  return " (the number alone: '" + echo(text.substr(0, number_length)) + "')";
}

template <class S, class T>
[[noreturn]] void bad_value(std::string_view who, const field_info<S, T>& f, std::string_view kind,
                            std::string_view text, std::size_t number_length = 0) {
  const std::string range = describe_range(f);
  std::string what(kind);
  if (!range.empty()) what += (what.empty() ? "" : " ") + std::string(f.choices.empty() ? "in " : "") + range;
  throw invalid_argument(std::string(who) + ": expected " + what + ", got '" + echo(text) + "'" +
                         unit_hint(text, number_length));
}

template <class S, class T>
bool in_range(const field_info<S, T>& f, double v) {
  return (f.lo_open ? v > f.lo : v >= f.lo) && (f.hi_open ? v < f.hi : v <= f.hi);
}

/// Parses `text` whole as the scalar type V of field f; `who` names the field in errors.
template <class V, class S, class T>
V parse_scalar(std::string_view who, const field_info<S, T>& f, std::string_view text) {
  if constexpr (std::same_as<V, bool>) {
    if (text == "1" || text == "true" || text == "yes") return true;
    if (text == "0" || text == "false" || text == "no") return false;
    throw invalid_argument(std::string(who) + ": expected 0 or 1 (or true/false), got '" + echo(text) + "'");
  } else if constexpr (integer_value<V>) {
    long long x = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
        x < (long long)std::numeric_limits<V>::min() || x > (long long)std::numeric_limits<V>::max() ||
        !in_range(f, double(x)))
      bad_value(who, f, "an integer", text,
                ec == std::errc() && in_range(f, double(x)) ? std::size_t(end - text.data()) : 0);
    return V(x);
  } else if constexpr (std::floating_point<V>) {
    double x = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(x) ||
        !in_range(f, x))
      bad_value(who, f, "a number", text,
                ec == std::errc() && std::isfinite(x) && in_range(f, x) ? std::size_t(end - text.data()) : 0);
    return V(x);
  } else if constexpr (std::same_as<V, std::string>) {
    if (text.empty())
      throw invalid_argument(std::string(who) + ": the value must not be empty" +
                             (f.choices.empty() ? "" : " (" + describe_range(f) + ")"));
    if (!f.choices.empty()) {
      std::string_view rest = f.choices;
      bool ok = false;
      while (!ok) {
        const auto bar = rest.find('|');
        ok = rest.substr(0, bar) == text;
        if (bar == std::string_view::npos) break;
        rest.remove_prefix(bar + 1);
      }
      if (!ok) bad_value(who, f, "", text);
    }
    return std::string(text);
  } else if constexpr (std::same_as<V, std::vector<long>>) {
    V out;
    std::size_t start = 0;
    if (text.empty()) throw invalid_argument(std::string(who) + ": expected a comma list such as 1,2,4, got ''");
    for (std::size_t p = 0; p <= text.size(); ++p)
      if (p == text.size() || text[p] == ',') {
        out.push_back(parse_scalar<long>(who, f, text.substr(start, p - start)));
        start = p + 1;
      }
    return out;
  } else {
    static_assert(std::same_as<V, void>, "tensoropt::reflection: unsupported field type");
  }
}

/// `text` broken at spaces into lines of at most `width` columns, the first
/// starting at column `indent` and the others indented to it.
inline std::string wrap(const std::string& text, std::size_t indent, std::size_t width) {
  std::string out, word;
  std::size_t col = indent;
  auto flush = [&] {
    if (word.empty()) return;
    if (col > indent && col + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      col = indent;
    } else if (col > indent) {
      out += ' ';
      ++col;
    }
    out += word;
    col += word.size();
    word.clear();
  };
  for (char c : text)
    if (c == ' ') flush();
    else word += c;
  flush();
  return out;
}

template <class V>
std::string format_scalar(const V& v) {
  if constexpr (std::same_as<V, bool>) return v ? "1" : "0";
  else if constexpr (integer_value<V>) return std::to_string(v);
  else if constexpr (std::floating_point<V>) return format_number(double(v));
  else if constexpr (std::same_as<V, std::string>) return v;
  else {
    std::string s;
    for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
  }
}
}  // namespace detail

/// Calls f(field) for every field of S, in table order.
template <Reflected S, class F>
void for_each_field(F&& f) {
  boost::hana::for_each(reflection<S>::fields, f);
}

/// Sets the field `name` of s from `text` (parsed whole and range-checked; `who`
/// names it in errors). Returns false when S has no field `name`.
template <Reflected S>
bool set_field(S& s, std::string_view name, std::string_view text, std::string_view who) {
  bool found = false;
  for_each_field<S>([&](const auto& f) {
    if (found || f.name != name) return;
    using T = std::remove_cvref_t<decltype(s.*(f.member))>;
    s.*(f.member) = detail::parse_scalar<typename detail::value_of<T>::type>(who, f, text);
    found = true;
  });
  return found;
}

/// The field value as text ("" for an unset optional).
template <Reflected S>
std::string get_field(const S& s, std::string_view name) {
  std::string out;
  for_each_field<S>([&](const auto& f) {
    if (f.name != name) return;
    const auto& v = s.*(f.member);
    if constexpr (detail::is_optional<std::remove_cvref_t<decltype(v)>>::value) {
      if (v) out = detail::format_scalar(*v);
    } else {
      out = detail::format_scalar(v);
    }
  });
  return out;
}

/// The names of S's fields, comma separated; `required_only` keeps the required ones.
template <Reflected S>
std::string field_names(bool required_only = false, std::string_view prefix = "") {
  std::string out;
  for_each_field<S>([&](const auto& f) {
    if (required_only && !f.is_required) return;
    out += (out.empty() ? "" : ", ") + std::string(prefix) + std::string(f.name);
  });
  return out;
}

/// Parses "k=v,k=v" into S (fields not named keep the values of `defaults`).
/// `what` names the spec in errors ("gpt"). Unknown, repeated and missing required
/// keys are errors that list the valid keys.
template <Reflected S>
S parse_key_values(std::string_view text, std::string_view what, S defaults = {}) {
  const std::string w(what);
  const std::string keys = "valid keys: " + field_names<S>(true) + " (required); " + [] {
    std::string opt;
    for_each_field<S>([&](const auto& f) {
      if (!f.is_required) opt += (opt.empty() ? "" : ", ") + std::string(f.name);
    });
    return opt.empty() ? std::string("none optional") : opt + " (optional)";
  }();
  std::vector<std::string> seen;
  std::size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw invalid_argument(w + ": expected key=value, got '" + detail::echo(item) + "'; " + keys);
    const std::string key(item.substr(0, eq));
    for (auto& k : seen)
      if (k == key) throw invalid_argument(w + ": key '" + key + "' given twice");
    seen.push_back(key);
    if (!set_field(defaults, key, item.substr(eq + 1), w + ":" + key))
      throw invalid_argument(w + ": unknown key '" + detail::echo(key) + "'; " + keys);
    start = end + 1;
  }
  std::string missing;
  for_each_field<S>([&](const auto& f) {
    if (!f.is_required) return;
    for (auto& k : seen)
      if (k == f.name) return;
    missing += (missing.empty() ? "" : ", ") + std::string(f.name);
  });
  if (!missing.empty()) throw invalid_argument(w + ": missing required key(s) " + missing + "; " + keys);
  return defaults;
}

/// "k=v,k=v" of s: every required field, and optional fields that differ from S{}.
template <Reflected S>
std::string to_key_values(const S& s) {
  const S d{};
  std::string out;
  for_each_field<S>([&](const auto& f) {
    if (!f.is_required && s.*(f.member) == d.*(f.member)) return;
    out += (out.empty() ? "" : ",") + std::string(f.name) + "=" + get_field(s, f.name);
  });
  return out;
}

/// One help line per field: "  <prefix><name> <META>   <help>; range [lo, hi], default <v>".
template <Reflected S>
std::string help_text(std::string_view prefix = "", const S& defaults = {}) {
  std::string out;
  for_each_field<S>([&](const auto& f) {
    using T = std::remove_cvref_t<decltype(defaults.*(f.member))>;
    std::string head = "  " + std::string(prefix) + std::string(f.name);
    if constexpr (!std::same_as<T, bool>)
      head += " " + std::string(f.metavar.empty() ? std::string_view("V") : f.metavar);
    if (head.size() < 26) head.resize(26, ' ');
    else head += "  ";
    std::string note = detail::describe_range(f);
    if (!note.empty() && f.choices.empty()) note = "range " + note;
    const std::string dv = get_field(defaults, f.name);
    if constexpr (!std::same_as<T, bool>)
      if (!dv.empty()) note += (note.empty() ? "" : ", ") + std::string("default ") + dv;
    if (f.is_required) note += (note.empty() ? "" : ", ") + std::string("required");
    out += head + detail::wrap(std::string(f.help) + (note.empty() ? "" : "; " + note), 26, 100) + "\n";
  });
  return out;
}

}  // namespace tensoropt
