// Compile-time integers, named axes and static shapes.
//
// `static_int<N>` derives from std::integral_constant, so Boost.Hana and the
// standard library accept it; arithmetic on two static ints stays static.
// `axis<"heads", 32>` names a dimension so that strategies and diagnostics speak of
// dims by name. A `shape<axis...>` is an empty type: every extent is in the type.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace tensoropt {

using index_t = std::int64_t;

template <index_t N>
struct static_int : std::integral_constant<index_t, N> {};

template <index_t A, index_t B>
constexpr static_int<A + B> operator+(static_int<A>, static_int<B>) { return {}; }
template <index_t A, index_t B>
constexpr static_int<A * B> operator*(static_int<A>, static_int<B>) { return {}; }
template <index_t A, index_t B>
constexpr static_int<A - B> operator-(static_int<A>, static_int<B>) { return {}; }
template <index_t A, index_t B>
  requires(B != 0)
constexpr static_int<A / B> operator/(static_int<A>, static_int<B>) { return {}; }

template <index_t N>
inline constexpr static_int<N> int_c{};

/// A string usable as a template argument: `axis<"seq", 2048>`.
template <std::size_t N>
struct fixed_string {
  char data[N]{};
  constexpr fixed_string(const char (&s)[N]) { std::copy_n(s, N, data); }
  constexpr std::string_view view() const { return {data, N - 1}; }
  constexpr std::size_t size() const { return N - 1; }
  template <std::size_t M>
  constexpr bool operator==(const fixed_string<M>& o) const { return view() == o.view(); }
};

/// A named dimension of compile-time extent. Extent must be positive.
template <fixed_string Name, index_t Extent>
struct axis {
  static_assert(Extent > 0, "tensoropt: an axis extent must be positive");
  static constexpr std::string_view name = Name.view();
  static constexpr index_t extent = Extent;
};

template <class T>
inline constexpr bool is_axis_v = false;
template <fixed_string Name, index_t Extent>
inline constexpr bool is_axis_v<axis<Name, Extent>> = true;

template <class T>
concept Axis = is_axis_v<T>;

/// A static shape: an ordered list of named axes. Empty type.
template <Axis... Axes>
struct shape {
  static constexpr std::size_t rank = sizeof...(Axes);
  static constexpr std::array<index_t, rank> extents{Axes::extent...};
  static constexpr std::array<std::string_view, rank> names{Axes::name...};
  static constexpr index_t size() { return (index_t{1} * ... * Axes::extent); }
  /// Index of the axis called `n`, or -1.
  static constexpr int find(std::string_view n) {
    for (std::size_t i = 0; i < rank; ++i)
      if (names[i] == n) return int(i);
    return -1;
  }
};

template <class T>
inline constexpr bool is_shape_v = false;
template <Axis... A>
inline constexpr bool is_shape_v<shape<A...>> = true;
template <class T>
concept Shape = is_shape_v<T>;

/// Divisors of n in increasing order (n >= 1).
constexpr std::size_t count_divisors(index_t n) {
  std::size_t c = 0;
  for (index_t d = 1; d <= n; ++d) c += (n % d == 0);
  return c;
}

/// Prime factors of n with multiplicity, increasing (n >= 1).
template <std::size_t Max = 64>
constexpr std::array<index_t, Max> prime_factors(index_t n, std::size_t& count) {
  std::array<index_t, Max> f{};
  count = 0;
  for (index_t p = 2; p * p <= n; ++p)
    while (n % p == 0) { f[count++] = p; n /= p; }
  if (n > 1) f[count++] = n;
  return f;
}

}  // namespace tensoropt
