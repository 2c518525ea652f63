// Row-major GEMMs through cuBLASLt: bf16 inputs with fp32 accumulation, or fp32 with
// TF32 off, optional bias / GELU epilogues, strided batches (the attention GEMMs),
// one workspace per stream and the heuristic's algorithm cached per shape.
//
// Row-major via swapped operands: a row-major X (ld = row stride) is the
// column-major X^T with the same ld, so C = op(A) op(B) (row-major, m x n) is
// computed as the column-major C^T = op(B)^T op(A)^T: cuBLASLt's "A" is our B, its
// "B" our A, its m, n are our n, m. The bias epilogue then adds a vector along
// cuBLASLt's rows, i.e. along our columns j (the CPU linear kernel's bias[j]).
//
// Exactness: the fp32 path uses CUBLAS_COMPUTE_32F (never *_FAST_TF32), so fp32
// runs compare with the CPU's sgemm within fp32 rounding. The GELU epilogue is
// cuBLASLt's tanh form with the exact tanh; the CPU's rational tanh differs by at
// most 3e-7 in tanh (runtime/elementwise.hpp), so it is used only where that fits.
//
// Alignment: the algorithm is chosen for the alignment the operands actually have
// (pointers, leading dimensions and batch strides in bytes; at most 16), which is
// part of the cache key. 16 bytes, which the pool's allocations and every offset by
// a multiple of 8 bf16 / 4 fp32 elements have, gets the vectorized kernels; an odd
// shape (a conv's 7 x 7 planes) still runs, on slower ones. An operand not even
// aligned to its element size is a bug of the caller and throws invalid_argument
// naming the operand. The workspace (32 MiB by default) is
// allocated once outside the pool and reported as part of its fixed reserve.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include "error.cuh"
#include "libraries.cuh"
#include "launch.cuh"
#include "memory.cuh"

namespace tensoropt::cuda {

/// What cuBLASLt applies to the product before storing it.
enum class epilogue : std::uint8_t { none, bias, gelu, bias_gelu };

/// One row-major GEMM (batch of them): C = alpha op(A) op(B) + beta C, op(A) m x k,
/// op(B) k x n; A stored k x m when trans_a, B stored n x k when trans_b. Leading
/// dimensions 0 mean dense rows; batch strides are in elements.
template <class T>
struct gemm_args {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1.f;
  const T* a = nullptr;
  std::int64_t lda = 0;
  const T* b = nullptr;
  std::int64_t ldb = 0;
  float beta = 0.f;
  T* c = nullptr;
  std::int64_t ldc = 0;
  std::int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  cuda::epilogue epilogue = epilogue::none;
  const T* bias = nullptr;  ///< n values (bias epilogues)
};

/// cuBLASLt handle, workspace and algorithm cache of one stream (move-only owner).
class gemm_engine {
 public:
  static constexpr std::size_t default_workspace = std::size_t(32) << 20;

  /// An engine enqueuing on `s`; its workspace is registered in `pool`'s reserve.
  /// Throws library_error when cuBLASLt cannot be loaded (cuda/libraries.cuh).
  gemm_engine(memory_pool& pool, cudaStream_t s, std::size_t workspace_bytes = default_workspace)
      : lt_(cublaslt_api()), stream_(s), workspace_bytes_(workspace_bytes) {
    device_guard g(pool.device());
    TENSOROPT_CUBLAS_CHECK(lt_.cublasLtCreate(&handle_));
    if (workspace_bytes_) TENSOROPT_CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
    pool.add_reserve("cuBLASLt workspace", workspace_bytes_);
  }
  gemm_engine(const gemm_engine&) = delete;
  gemm_engine& operator=(const gemm_engine&) = delete;
  ~gemm_engine() {
    for (auto& [key, p] : plans_) p.destroy(lt_);
    if (workspace_) (void)cudaFree(workspace_);
    if (handle_) (void)lt_.cublasLtDestroy(handle_);
  }
  cudaStream_t stream() const { return stream_; }
  /// Distinct shapes whose algorithm is cached.
  std::size_t cached_plans() const { return plans_.size(); }

  /// Enqueues one (batched) GEMM. Throws invalid_argument on a misaligned operand
  /// or bad sizes, cuda_error when cuBLASLt has no algorithm for the shape.
  template <Element T>
  void run(const gemm_args<T>& g) {
    if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 1)
      throw invalid_argument("gemm: negative size or batch < 1 (m " + std::to_string(g.m) + ", n " +
                             std::to_string(g.n) + ", k " + std::to_string(g.k) + ")");
    if (g.m == 0 || g.n == 0) return;
    const std::int64_t lda = g.lda ? g.lda : (g.trans_a ? g.m : g.k), ldb = g.ldb ? g.ldb : (g.trans_b ? g.k : g.n),
                       ldc = g.ldc ? g.ldc : g.n;
    const bool has_bias = g.epilogue == epilogue::bias || g.epilogue == epilogue::bias_gelu;
    if (has_bias && !g.bias) throw invalid_argument("gemm: a bias epilogue needs a bias vector");
    std::uint32_t align = std::min(std::min(aligned<T>(g.a, "A"), aligned<T>(g.b, "B")), aligned<T>(g.c, "C"));
    if (has_bias) align = std::min(align, aligned<T>(g.bias, "bias"));
    const std::int64_t extents[6] = {lda, ldb, ldc, g.stride_a, g.stride_b, g.stride_c};
    for (int i = 0; i < (g.batch > 1 ? 6 : 3); ++i)
      align = std::min(align, alignment_of(std::uintptr_t(extents[i]) * sizeof(T)));
    if (g.k == 0) {
      if (g.beta != 0.f && g.beta != 1.f) throw invalid_argument("gemm: k = 0 supports beta 0 or 1 only");
      if (g.beta == 0.f)
        for (std::int64_t i = 0; i < g.batch; ++i)
          TENSOROPT_CUDA_CHECK(cudaMemset2DAsync(g.c + i * g.stride_c, std::size_t(ldc) * sizeof(T), 0,
                                                 std::size_t(g.n) * sizeof(T), std::size_t(g.m), stream_));
      return;
    }
    const key_t key{std::is_same_v<T, float>, g.trans_a, g.trans_b, g.m, g.n, g.k, lda, ldb, ldc,
                    g.batch, g.stride_a, g.stride_b, g.stride_c, int(g.epilogue), align};
    plan& p = plan_for<T>(key);
    if (has_bias)
      TENSOROPT_CUBLAS_CHECK(
          lt_.cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
    TENSOROPT_CUBLAS_CHECK(lt_.cublasLtMatmul(handle_, p.op, &g.alpha, g.b, p.la, g.a, p.lb, &g.beta, g.c, p.lc, g.c,
                                          p.lc, &p.algo, workspace_, workspace_bytes_, stream_));
  }

 private:
  using key_t = std::tuple<bool, bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                           std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, std::uint32_t>;
  struct plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulAlgo_t algo{};
    void destroy(const cublaslt_entry_points& lt) {
      if (la) (void)lt.cublasLtMatrixLayoutDestroy(la);
      if (lb) (void)lt.cublasLtMatrixLayoutDestroy(lb);
      if (lc) (void)lt.cublasLtMatrixLayoutDestroy(lc);
      if (op) (void)lt.cublasLtMatmulDescDestroy(op);
    }
  };

  /// The largest power of two <= 16 dividing v.
  static std::uint32_t alignment_of(std::uintptr_t v) {
    v |= 16;
    return std::uint32_t(v & (~v + 1));
  }
  template <class T>
  static std::uint32_t aligned(const T* p, const char* what) {
    if (!p) throw invalid_argument(std::string("gemm: operand ") + what + " is null");
    const std::uint32_t a = alignment_of(reinterpret_cast<std::uintptr_t>(p));
    if (a < sizeof(T))
      throw invalid_argument(std::string("gemm: operand ") + what + " is not aligned to its " +
                             std::to_string(sizeof(T)) + "-byte elements; pass a pointer into a device buffer at a " +
                             "whole element offset (16-byte alignment gets the fast kernels)");
    return a;
  }
  cublasLtMatrixLayout_t layout(cudaDataType_t t, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                       std::int64_t batch, std::int64_t stride) {
    cublasLtMatrixLayout_t l = nullptr;
    TENSOROPT_CUBLAS_CHECK(lt_.cublasLtMatrixLayoutCreate(&l, t, std::uint64_t(rows), std::uint64_t(cols), ld));
    if (batch > 1) {
      const std::int32_t b = std::int32_t(batch);
      TENSOROPT_CUBLAS_CHECK(lt_.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b));
      TENSOROPT_CUBLAS_CHECK(
          lt_.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
    return l;
  }

  template <class T>
  plan& plan_for(const key_t& key) {
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;
    const auto [fp32, ta, tb, m, n, k, lda, ldb, ldc, batch, sa, sb, sc, ep, align] = key;
    (void)fp32;
    const cudaDataType_t type = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;
    plan p;
    try {
      TENSOROPT_CUBLAS_CHECK(lt_.cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      const cublasOperation_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
      TENSOROPT_CUBLAS_CHECK(lt_.cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));
      TENSOROPT_CUBLAS_CHECK(lt_.cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b));
      const cublasLtEpilogue_t e = ep == int(epilogue::bias)        ? CUBLASLT_EPILOGUE_BIAS
                                   : ep == int(epilogue::gelu)      ? CUBLASLT_EPILOGUE_GELU
                                   : ep == int(epilogue::bias_gelu) ? CUBLASLT_EPILOGUE_GELU_BIAS
                                                                    : CUBLASLT_EPILOGUE_DEFAULT;
      TENSOROPT_CUBLAS_CHECK(lt_.cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
      // cuBLASLt's A = our B (n x k as op), its B = our A (k x m as op), its C = C^T (n x m).
      p.la = tb ? layout(type, k, n, ldb, batch, sb) : layout(type, n, k, ldb, batch, sb);
      p.lb = ta ? layout(type, m, k, lda, batch, sa) : layout(type, k, m, lda, batch, sa);
      p.lc = layout(type, n, m, ldc, batch, sc);
      cublasLtMatmulPreference_t pref = nullptr;
      TENSOROPT_CUBLAS_CHECK(lt_.cublasLtMatmulPreferenceCreate(&pref));
      const std::uint64_t ws = workspace_bytes_;
      lt_.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
      for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
        lt_.cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof align);
      cublasLtMatmulHeuristicResult_t result{};
      int found = 0;
      const cublasStatus_t st =
          lt_.cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.la, p.lb, p.lc, p.lc, pref, 1, &result, &found);
      lt_.cublasLtMatmulPreferenceDestroy(pref);
      if (st != CUBLAS_STATUS_SUCCESS || found == 0)
        throw cuda_error("cuBLASLt has no algorithm for a " + std::string(std::is_same_v<T, float> ? "fp32" : "bf16") +
                         " GEMM m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k) +
                         " (lda " + std::to_string(lda) + ", ldb " + std::to_string(ldb) + ", ldc " +
                         std::to_string(ldc) + ", batch " + std::to_string(batch) + ", epilogue " +
                         std::to_string(ep) + "): " + lt_.cublasLtGetStatusString(st));
      p.algo = result.algo;
    } catch (...) {
      p.destroy(lt_);
      throw;
    }
    return plans_.emplace(key, p).first->second;
  }

  const cublaslt_entry_points& lt_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::map<key_t, plan> plans_;
};

}  // namespace tensoropt::cuda
