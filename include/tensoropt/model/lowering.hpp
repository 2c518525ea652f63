// The graph builder that layers lower into (constexpr): scopes, op and tensor names,
// repeat bookkeeping, and small helpers to write tensor maps and dims.
#pragma once
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include "../core/dims.hpp"
#include "graph.hpp"
#include "layer.hpp"

/// Lowering code is run once per model at run time; keeping its helpers out of line
/// keeps the code generated per model type small (compile time of the zoo).
#if defined(__GNUC__)
#define TENSOROPT_NOINLINE [[gnu::noinline]]
#define TENSOROPT_FLATTEN [[gnu::always_inline]]
#else
#define TENSOROPT_NOINLINE
#define TENSOROPT_FLATTEN
#endif

namespace tensoropt::detail {

/// Appends `v` to `s` one char at a time. Lowering copies names that live in
/// template parameter objects (fixed_string); under -fsanitize=null GCC cannot
/// evaluate the library's null-pointer check on their address in a constant
/// expression, so the copy must not go through basic_string(const char*, n).
constexpr void append(std::string& s, std::string_view v) {
  for (char c : v) s.push_back(c);
}

/// Decimal text of v (constexpr; std::to_string is not).
constexpr std::string int_to_string(index_t v) {
  if (v == 0) return "0";
  std::string s;
  const bool neg = v < 0;
  if (neg) v = -v;
  while (v > 0) {
    s.insert(s.begin(), char('0' + v % 10));
    v /= 10;
  }
  if (neg) s.insert(s.begin(), '-');
  return s;
}

/// Dims named "b" (batch) and "g" (token groups) scale with the batch.
constexpr bool is_batch_dim_name(std::string_view n) { return n == "b" || n == "g"; }

/// The conventional dim names as string literals. A name taken from an axis<"h", N>
/// type views a template parameter object, on which GCC cannot run string_view
/// searches in a constant expression under -fsanitize=null; op dims use these.
inline constexpr std::string_view conventional_dim_names[] = {
    "b", "s", "h", "heads", "d", "three", "f", "v", "e", "g", "c", "y", "x", "classes",
    "cin", "cout", "oh", "ow", "kh", "kw", "sq", "sk", "k", "n", "i"};
constexpr std::string_view canonical_dim_name(std::string_view n) {
  for (auto c : conventional_dim_names)
    if (c == n) return c;
  return n;
}

/// An op dim; `batch` follows the naming convention.
constexpr op_dim make_dim(std::string_view name, index_t extent, bool splittable = true) {
  return op_dim{canonical_dim_name(name), extent, splittable, is_batch_dim_name(name)};
}

/// A tensor map: axis i of `tensor` follows op dim dims[i] (-1: never split).
constexpr tensor_map tmap(int tensor, std::initializer_list<int> dims) {
  tensor_map m;
  m.tensor = tensor;
  m.dim.fill(-1);
  int i = 0;
  for (int d : dims) m.dim[i++] = std::int8_t(d);
  return m;
}

/// Bitmask over op dims.
constexpr std::uint32_t dim_mask(std::initializer_list<int> dims) {
  std::uint32_t m = 0;
  for (int d : dims) m |= 1u << d;
  return m;
}

/// A static shape as a value: lowering code takes this instead of the shape type,
/// so each layer kind compiles once, not once per shape (compile time).
struct shape_desc {
  int rank = 0;
  std::array<index_t, max_tensor_rank> extents{};
  std::array<std::string_view, max_tensor_rank> names{};
};
template <class S>
inline constexpr shape_desc desc_v = [] {
  shape_desc d;
  d.rank = int(S::rank);
  for (std::size_t i = 0; i < S::rank; ++i) {
    d.extents[i] = S::extents[i];
    d.names[i] = S::names[i];
  }
  return d;
}();

/// Appends one op dim per axis [first, last) of s (-1: to the end).
constexpr void append_axes(std::vector<op_dim>& dims, const shape_desc& s, int first = 0, int last = -1) {
  if (last < 0) last = s.rank;
  for (int i = first; i < last; ++i) dims.push_back(make_dim(s.names[i], s.extents[i]));
}

/// Extents of a tensor being created (rank <= max_tensor_rank).
struct ext_list {
  std::array<index_t, max_tensor_rank> e{};
  int rank = 0;
  constexpr ext_list() = default;
  constexpr ext_list(std::initializer_list<index_t> l) {
    for (index_t x : l) e[rank++] = x;
  }
  constexpr ext_list& push(index_t x) {
    e[rank++] = x;
    return *this;
  }
};

/// Extents of the axes [first, last) of s (-1: to the end).
constexpr ext_list extents_of(const shape_desc& s, int first = 0, int last = -1) {
  if (last < 0) last = s.rank;
  ext_list l;
  for (int i = first; i < last; ++i) l.push(s.extents[i]);
  return l;
}

/// A tensor map whose axis i follows op dim first + i, for `count` axes.
constexpr tensor_map tmap_iota(int tensor, int count, int first = 0) {
  tensor_map m;
  m.tensor = tensor;
  m.dim.fill(-1);
  for (int i = 0; i < count; ++i) m.dim[i] = std::int8_t(first + i);
  return m;
}

struct graph_builder {
  op_graph g;
  std::string scope;          ///< "layers.3.attn"
  std::string pending;        ///< a name given by named<> to the next primitive op
  int repeat_id = -1;         ///< the repeat<> being lowered (innermost)
  int repeat_index = 0;
  int repeat_count = 0;

  constexpr std::string qualify(std::string_view n) const {
    std::string s = scope;
    if (!s.empty()) s += '.';
    append(s, n);
    return s;
  }
  /// Enters scope `n` ("layers" -> "layers.3" ...); returns what leave() needs.
  TENSOROPT_NOINLINE constexpr std::size_t enter(std::string_view n) {
    const std::size_t old = scope.size();
    if (!scope.empty()) scope += '.';
    append(scope, n);
    return old;
  }
  TENSOROPT_NOINLINE constexpr std::size_t enter(index_t i) { return enter(int_to_string(i)); }
  TENSOROPT_NOINLINE constexpr void leave(std::size_t old) { scope.resize(old); }
  /// Names the next primitive op (named<>).
  TENSOROPT_NOINLINE constexpr void name_next(std::string_view n) {
    pending.clear();
    append(pending, n);
  }
  constexpr bool op_name_taken(std::string_view n) const {
    for (auto& o : g.ops)
      if (o.name == n) return true;
    return false;
  }
  /// The name of the next primitive op: the one named<> gave, else `fallback`,
  /// qualified by the scope and made unique with a "_1", "_2", ... suffix.
  TENSOROPT_NOINLINE constexpr std::string op_name(std::string_view fallback) {
    std::string base = qualify(pending.empty() ? fallback : std::string_view(pending));
    pending.clear();
    return unique(base);
  }
  /// `base` if no op has that name yet, else base_1, base_2, ...
  TENSOROPT_NOINLINE constexpr std::string unique(const std::string& base) const {
    if (!op_name_taken(base)) return base;
    for (index_t k = 1;; ++k) {
      std::string n = base;
      n += '_';
      append(n, int_to_string(k));
      if (!op_name_taken(n)) return n;
    }
  }
  TENSOROPT_NOINLINE constexpr int add_tensor(const std::string& name, const ext_list& extents, bool parameter,
                           bool integer = false) {
    tensor_info t;
    t.name = name;
    for (int i = 0; i < extents.rank; ++i) t.extents[i] = extents.e[i];
    t.rank = extents.rank;
    t.parameter = parameter;
    t.integer = integer;
    g.tensors.push_back(std::move(t));
    return int(g.tensors.size()) - 1;
  }
  /// A parameter `op_name.local` with the given extents, mapped to op dims `dims`.
  TENSOROPT_NOINLINE constexpr tensor_map param(const std::string& op, std::string_view local, const ext_list& extents,
                             tensor_map dims) {
    std::string n = op;
    n += '.';
    append(n, local);
    dims.tensor = add_tensor(n, extents, true);
    return dims;
  }
  /// The index of the tensor called `name`, or -1.
  TENSOROPT_NOINLINE constexpr int find_tensor(std::string_view name) const {
    for (std::size_t i = 0; i < g.tensors.size(); ++i)
      if (g.tensors[i].name == name) return int(i);
    return -1;
  }
  /// Appends `op` (named `name`) writing a new activation of `extents` whose axes
  /// follow op dims `out_dims`; returns the activation's tensor index.
  TENSOROPT_NOINLINE constexpr int emit(op_node&& op, const std::string& name, const ext_list& extents, tensor_map out,
                     bool integer = false) {
    const int t = add_tensor(name, extents, false, integer);
    g.tensors[t].producer = int(g.ops.size());
    op.name = name;
    out.tensor = t;
    op.output = out;
    op.repeat_id = repeat_id;
    op.repeat_index = repeat_id >= 0 ? repeat_index : 0;
    g.ops.push_back(std::move(op));
    return t;
  }
};

/// Lowers layer L on input In unless the shape is invalid (already diagnosed).
template <class L, class In>
TENSOROPT_FLATTEN constexpr int lower_layer(graph_builder& b, int x) {
  if constexpr (!is_valid_v<In> || !is_valid_v<typename L::template infer<In, false>::type>) {
    return -1;
  } else {
    return L::template lower<In>(b, x);
  }
}

}  // namespace tensoropt::detail
