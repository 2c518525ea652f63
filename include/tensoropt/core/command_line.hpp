// Command lines from a reflected options struct: every program's flags, their
// parsing, range checks, `--help` text and error messages come from the struct's
// field table (reflect.hpp), so a flag is declared once.
//
// A field `devices` is the flag `--devices`; a bool field is a switch (`--quiet`,
// taking no value); every other field takes a value as `--flag VALUE` or
// `--flag=VALUE`. Values are parsed whole and range-checked by the table; a flag
// given twice, a missing value, a stray positional argument and an unknown flag
// (listing the valid ones) are errors. `-h` is `--help`. Errors are
// tensoropt::invalid_argument with one line that names the flag; programs print
// "<program>: <message>" and exit 2.
//
//   struct train_options { long steps = 60; bool help = false; };
//   template <> struct reflection<train_options> {
//     static constexpr auto fields = boost::hana::make_tuple(
//         field("steps", &train_options::steps, "training steps").range(1, 1e6).meta("N"),
//         field("help", &train_options::help, "print this help"));
//   };
//   auto given = parse_command_line(argc, argv, opts);   // names of the flags given
#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>
#include "error.hpp"
#include "reflect.hpp"

namespace tensoropt {

/// The flags a command line named, without "--" (for rules such as "--solve does
/// not take model flags").
struct given_flags {
  std::vector<std::string> names;
  bool has(std::string_view n) const { return std::find(names.begin(), names.end(), n) != names.end(); }
};

namespace detail {
template <Reflected O>
bool is_switch(std::string_view name) {
  bool sw = false;
  for_each_field<O>([&](const auto& f) {
    using T = std::remove_cvref_t<decltype(std::declval<O&>().*(f.member))>;
    if (f.name == name) sw = std::is_same_v<T, bool>;
  });
  return sw;
}
template <Reflected O>
bool has_field(std::string_view name) {
  bool found = false;
  for_each_field<O>([&](const auto& f) { found = found || f.name == name; });
  return found;
}
template <Reflected O>
std::string_view metavar_of(std::string_view name) {
  std::string_view m = "VALUE";
  for_each_field<O>([&](const auto& f) {
    if (f.name == name && !f.metavar.empty()) m = f.metavar;
  });
  return m;
}
}  // namespace detail

/// Parses argv[1..argc) into `opts` (fields not given keep their values). Returns
/// the flags given. Throws invalid_argument naming the flag and what is valid.
template <Reflected O>
given_flags parse_command_line(int argc, const char* const* argv, O& opts) {
  given_flags given;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "-h") a = "--help";
    if (a.size() < 3 || a.substr(0, 2) != "--")
      throw invalid_argument("unexpected argument '" + detail::echo(a) + "'; options start with --, see --help");
    a.remove_prefix(2);
    std::string_view value;
    bool inline_value = false;
    if (const auto eq = a.find('='); eq != std::string_view::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      inline_value = true;
    }
    const std::string flag = "--" + std::string(a);
    if (!detail::has_field<O>(a))
      throw invalid_argument("unknown option '" + detail::echo(flag) + "'; valid options: " + field_names<O>(false, "--"));
    if (given.has(a)) throw invalid_argument(flag + " is given twice; give it once");
    given.names.emplace_back(a);
    if (detail::is_switch<O>(a)) {
      if (inline_value) throw invalid_argument(flag + " takes no value (it is a switch)");
      set_field(opts, a, "1", flag);
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc || std::string_view(argv[i + 1]).substr(0, 2) == "--")
        throw invalid_argument(flag + " needs a value (" + std::string(detail::metavar_of<O>(a)) + "); see --help");
      value = argv[++i];
    }
    set_field(opts, a, value, flag);
  }
  return given;
}

/// The --help text: "usage: <synopsis>", the description, then one line per flag
/// (with its range or choices and default, from the table and `defaults`).
template <Reflected O>
std::string command_line_help(std::string_view synopsis, std::string_view description, const O& defaults = {}) {
  std::string out = "usage: " + std::string(synopsis) + "\n";
  if (!description.empty()) out += std::string(description) + "\n";
  out += "\noptions:\n" + help_text<O>("--", defaults);
  return out;
}

}  // namespace tensoropt
