// Strong unit types (bytes, seconds, FLOPs, rates) with user-defined literals.
//
// Quantities are doubles tagged by dimension: the cost model works in real
// arithmetic and every value is constexpr. Mixing dimensions (bytes + seconds) does
// not compile; dividing bytes by a bandwidth gives seconds, FLOPs by a FLOP rate
// gives seconds. The search works on integer picoseconds and bytes (see
// search/problem.hpp) so that its sums are exact; `from_picoseconds` and
// `from_byte_count` lift those into the typed units at the API edge, and dividing
// two quantities of one dimension gives a plain number (`m / 1_MiB`, `t / 1_ms`),
// so no call site reads `.value` or divides by 1e9 by hand.
#pragma once
#include <cmath>
#include <compare>
#include <cstdint>
#include <string>
#include <cstdio>
#include <utility>

namespace tensoropt {

template <class Tag>
struct quantity {
  double value = 0;
  constexpr quantity() = default;
  constexpr explicit quantity(double v) : value(v) {}
  constexpr auto operator<=>(const quantity&) const = default;
  constexpr quantity& operator+=(quantity o) { value += o.value; return *this; }
  constexpr quantity& operator-=(quantity o) { value -= o.value; return *this; }
  constexpr quantity& operator*=(double k) { value *= k; return *this; }
  constexpr quantity& operator/=(double k) { value /= k; return *this; }
  friend constexpr quantity operator+(quantity a, quantity b) { return quantity(a.value + b.value); }
  friend constexpr quantity operator-(quantity a, quantity b) { return quantity(a.value - b.value); }
  friend constexpr quantity operator*(quantity a, double k) { return quantity(a.value * k); }
  friend constexpr quantity operator*(double k, quantity a) { return quantity(a.value * k); }
  friend constexpr quantity operator/(quantity a, double k) { return quantity(a.value / k); }
  friend constexpr double operator/(quantity a, quantity b) { return a.value / b.value; }
};

struct bytes_tag {};
struct seconds_tag {};
struct flops_tag {};
struct bandwidth_tag {};   // bytes per second
struct flop_rate_tag {};   // FLOPs per second

using bytes = quantity<bytes_tag>;
using seconds = quantity<seconds_tag>;
using flops = quantity<flops_tag>;
using bandwidth = quantity<bandwidth_tag>;
using flop_rate = quantity<flop_rate_tag>;

constexpr seconds operator/(bytes b, bandwidth bw) { return seconds(b.value / bw.value); }
constexpr seconds operator/(flops f, flop_rate r) { return seconds(f.value / r.value); }

/// Exact integer costs of the search (picoseconds, bytes) as typed quantities.
constexpr seconds from_picoseconds(std::int64_t ps) { return seconds(double(ps) / 1e12); }
constexpr bytes from_byte_count(std::int64_t b) { return bytes(double(b)); }
/// A typed quantity as the search's integers: picoseconds (rounded), whole bytes (rounded down).
constexpr std::int64_t to_picoseconds(seconds s) { return std::int64_t(s.value * 1e12 + (s.value >= 0 ? 0.5 : -0.5)); }
constexpr std::int64_t to_byte_count(bytes b) { return std::int64_t(b.value); }

constexpr double kib = 1024.0, mib = kib * 1024, gib = mib * 1024, tib = gib * 1024;

/// Bandwidth in bytes per second, e.g. `gb_per_s(300)` for 300 GB/s (decimal).
constexpr bandwidth gb_per_s(double g) { return bandwidth(g * 1e9); }
/// FLOP rate, e.g. `tflop_per_s(312)`.
constexpr flop_rate tflop_per_s(double t) { return flop_rate(t * 1e12); }

namespace literals {
constexpr bytes operator""_B(unsigned long long v) { return bytes(double(v)); }
constexpr bytes operator""_KiB(unsigned long long v) { return bytes(double(v) * kib); }
constexpr bytes operator""_MiB(unsigned long long v) { return bytes(double(v) * mib); }
constexpr bytes operator""_MiB(long double v) { return bytes(double(v) * mib); }
constexpr bytes operator""_GiB(unsigned long long v) { return bytes(double(v) * gib); }
constexpr bytes operator""_GiB(long double v) { return bytes(double(v) * gib); }
constexpr bytes operator""_TiB(unsigned long long v) { return bytes(double(v) * tib); }
constexpr seconds operator""_s(long double v) { return seconds(double(v)); }
constexpr seconds operator""_s(unsigned long long v) { return seconds(double(v)); }
constexpr seconds operator""_ms(unsigned long long v) { return seconds(double(v) * 1e-3); }
constexpr seconds operator""_ms(long double v) { return seconds(double(v) * 1e-3); }
constexpr seconds operator""_us(unsigned long long v) { return seconds(double(v) * 1e-6); }
constexpr seconds operator""_us(long double v) { return seconds(double(v) * 1e-6); }
constexpr flops operator""_flop(unsigned long long v) { return flops(double(v)); }
constexpr flops operator""_GFLOP(unsigned long long v) { return flops(double(v) * 1e9); }
constexpr flops operator""_TFLOP(unsigned long long v) { return flops(double(v) * 1e12); }
}  // namespace literals
using namespace literals;

namespace detail {
/// `v` with three significant digits ("1.23", "45.6", "789"; "1234" past 1000), then `unit`.
inline std::string three_digits(double v, const char* unit) {
  char buf[64];
  const double a = std::fabs(v);
  // Pick the decimals from the value as it will round, so 9.996 prints "10.0", not "10.00".
  const int decimals = a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2;
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, unit);
  return buf;
}
}  // namespace detail

/// "23.4 GiB", "1.50 GiB", "512 MiB", "16 GiB", "17 B": three significant digits, and no
/// decimals for a whole number of the unit (a capacity or a budget). For tables and messages.
inline std::string format_bytes(double b) {
  const double a = std::fabs(b);
  const auto [scale, unit] = a >= tib ? std::pair{tib, "TiB"} : a >= gib ? std::pair{gib, "GiB"}
                           : a >= mib ? std::pair{mib, "MiB"} : a >= kib ? std::pair{kib, "KiB"}
                                      : std::pair{1.0, "B"};
  const double v = b / scale;
  if (v == std::round(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v)) + " " + unit;
  return detail::three_digits(v, unit);
}
inline std::string format_bytes(bytes b) { return format_bytes(b.value); }

/// "1.23 s", "45.0 s", "45.6 ms", "7.80 us", "0 s": three significant digits. For tables and messages.
inline std::string format_seconds(double s) {
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a >= 0.9995) return detail::three_digits(s, "s");
  if (a >= 0.9995e-3) return detail::three_digits(s * 1e3, "ms");
  if (a >= 0.9995e-6) return detail::three_digits(s * 1e6, "us");
  return detail::three_digits(s * 1e9, "ns");
}
inline std::string format_seconds(seconds s) { return format_seconds(s.value); }

}  // namespace tensoropt
