// The CPU backend's GEMM: every matrix product of the CPU kernels goes through
// CBLAS (OpenBLAS). This is the one header of the library that includes
// <cblas.h>: the executor, the communicators and the CUDA backend do not, so
// programs built for GPUs need no BLAS.
#pragma once
#include <cblas.h>
#include <cstdint>

namespace tensoropt::runtime {

/// Makes the BLAS single-threaded (once per process): the runtime already runs one
/// thread per device, and BLAS threads on top of them oversubscribe the cores
/// (measured: 6x slower steps of train_gpt on 2 cores with OpenBLAS's own threads).
inline void single_threaded_blas() {
#ifdef OPENBLAS_CONST  // OpenBLAS's cblas.h
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
#endif
}

/// C[m x n] = alpha * op(A) op(B) + beta * C, row-major, through CBLAS.
/// op(A) is m x k (A stored k x m when trans_a), op(B) is k x n (B stored n x k when
/// trans_b). lda/ldb/ldc default to the dense row strides.
inline void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                 const float* a, const float* b, float beta, float* c, std::int64_t lda = 0,
                 std::int64_t ldb = 0, std::int64_t ldc = 0) {
  if (m == 0 || n == 0) return;
  if (lda == 0) lda = trans_a ? m : k;
  if (ldb == 0) ldb = trans_b ? k : n;
  if (ldc == 0) ldc = n;
  if (k == 0) {
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.f : beta * c[i * ldc + j];
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

}  // namespace tensoropt::runtime
