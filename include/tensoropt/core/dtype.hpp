// Element types and precision policies (which dtype each kind of tensor uses).
#pragma once
#include <cstdint>
#include <string_view>
#include "config.hpp"
#include "error.hpp"

namespace tensoropt {

enum class dtype : std::uint8_t { fp32, bf16, fp16 };

constexpr TENSOROPT_HOST_DEVICE int size_of(dtype t) { return t == dtype::fp32 ? 4 : 2; }
constexpr std::string_view name_of(dtype t) {
  switch (t) {
    case dtype::fp32: return "fp32";
    case dtype::bf16: return "bf16";
    case dtype::fp16: return "fp16";
  }
  return "?";
}

/// How a training run stores and computes each kind of tensor.
///  - fp32: everything fp32; Adam keeps two fp32 moments: 4 (weight) + 4 (grad)
///    + 8 (moments) = 16 bytes per parameter.
///  - bf16-mixed: bf16 weights, gradients and activations, fp32 master weights and
///    Adam moments: 2 + 2 + (4 + 4 + 4) = 16 bytes per parameter (Korthikanti et al.).
struct precision {
  dtype compute = dtype::fp32;      ///< GEMM and activation dtype
  int weight_bytes = 4;             ///< working copy of a parameter
  int grad_bytes = 4;               ///< its gradient
  int optimizer_bytes = 8;          ///< optimizer state (incl. fp32 master copy if any)
  std::string_view name = "fp32";

  constexpr int activation_bytes() const { return size_of(compute); }
  constexpr int state_bytes_per_param() const { return weight_bytes + grad_bytes + optimizer_bytes; }
  constexpr bool operator==(const precision&) const = default;
};

namespace precisions {
inline constexpr precision fp32{dtype::fp32, 4, 4, 8, "fp32"};
inline constexpr precision bf16_mixed{dtype::bf16, 2, 2, 12, "bf16-mixed"};
}  // namespace precisions

/// Parses "fp32" or "bf16-mixed"; throws invalid_argument naming the valid ones.
inline precision parse_precision(std::string_view s) {
  if (s == "fp32") return precisions::fp32;
  if (s == "bf16-mixed" || s == "bf16") return precisions::bf16_mixed;
  throw invalid_argument("unknown precision '" + std::string(s) +
                         "'; valid precisions: fp32, bf16-mixed");
}

}  // namespace tensoropt
