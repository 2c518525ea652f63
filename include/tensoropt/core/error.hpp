// The exception hierarchy: every host-side failure a user can cause throws one of these.
#pragma once
#include <stdexcept>
#include <string>

namespace tensoropt {

/// Base of every tensoropt exception. The message says what is wrong and, where
/// possible, how to fix it.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A value given by the user (size, budget, name, flag) is out of range or unknown.
class invalid_argument : public error {
 public:
  using error::error;
};

/// A file (problem, frontier, plan, checkpoint) is malformed or does not match.
class format_error : public error {
 public:
  using error::error;
};

/// No strategy satisfies the request (e.g. nothing fits the memory budget).
class infeasible : public error {
 public:
  using error::error;
};

/// The runtime failed: a collective timed out, a device ran out of memory, ...
class runtime_error : public error {
 public:
  using error::error;
};

namespace detail {
/// The most characters of a user's value (a name, a JSON value) an error message echoes.
inline constexpr std::size_t max_echo = 80;

/// `s` cut to `max` characters, saying how long it was: error messages stay one line
/// even when the value that caused them is megabytes long.
inline std::string cut_short(std::string s, std::size_t max = max_echo) {
  if (s.size() <= max) return s;
  const std::size_t n = s.size();
  s.resize(max);
  return s + "... (" + std::to_string(n) + " characters)";
}

/// Throws E with `msg` unless `cond` holds. Usable in constexpr code: in a constant
/// expression a failing check is a compile error that shows the throw.
template <class E = invalid_argument>
constexpr void require(bool cond, const char* msg) {
  if (!cond) throw E(msg);
}
template <class E = invalid_argument>
inline void require(bool cond, const std::string& msg) {
  if (!cond) throw E(msg);
}
}  // namespace detail
}  // namespace tensoropt
