// NCCL and cuBLASLt, loaded at run time: dlopen of the library, then a table of
// the entry points the CUDA backend uses, resolved once (nccl_api(), cublaslt_api()).
//
// Why: a program linked against libnccl / libcublasLt fails before main, with the
// dynamic loader's own message, on a machine that lacks them, even when it never
// selects the CUDA backend (train_gpt --backend cpu, the planner with --gpu-file).
// Loaded here, they are needed only by code that reaches them, and a missing or
// wrong library is one line naming it and the fix:
//   cannot load libnccl.so.2 (cannot open shared object file: No such file or
//   directory): install NCCL (libnccl2, or pip's nvidia-nccl-cu13) or set
//   TENSOROPT_NCCL_LIBRARY to its path
// The file is the soname of the headers this was compiled with (libnccl.so.2,
// libcublasLt.so.13), found on the loader's path (LD_LIBRARY_PATH, ld.so.cache),
// unless TENSOROPT_NCCL_LIBRARY / TENSOROPT_CUBLASLT_LIBRARY name another file.
// A library that lacks an entry point (too old, or not the library named) is
// refused with that entry point's name. The tables are typed by the headers'
// declarations (decltype), so a call through them is checked as a direct call is.
//
// When: the CUDA backend loads cuBLASLt when it is made (before any device call,
// so the message comes first); NCCL is loaded by the first NCCL call (ranks that
// are processes, the NCCL tests, the multi-GPU calibration), so a one-GPU local
// world runs without NCCL. A failed load throws library_error and is retried by
// the next call; a library once loaded stays loaded for the process' life.
//
// This header needs the CUDA toolkit's headers, not nvcc: g++ compiles it.
#pragma once
#include <dlfcn.h>
#include <cublasLt.h>
#include <nccl.h>
#include <cstdlib>
#include <string>
#include <utility>
#include "../core/error.hpp"

namespace tensoropt::cuda {

/// A shared library the CUDA backend needs could not be loaded or lacks an entry
/// point (nothing reached the device).
class library_error : public runtime_error {
 public:
  using runtime_error::runtime_error;
};

/// Where a library comes from and how a user gets it.
struct library_spec {
  std::string what;     ///< "NCCL"
  std::string soname;   ///< "libnccl.so.2": the default file
  std::string env;      ///< the variable that overrides it
  std::string install;  ///< "install NCCL (libnccl2, ...)"
  std::string version;  ///< of the headers: the least the entry points need
};

/// NCCL's spec: libnccl.so.<major of nccl.h>, TENSOROPT_NCCL_LIBRARY.
inline library_spec nccl_library() {
  return {"NCCL", "libnccl.so." + std::to_string(NCCL_MAJOR), "TENSOROPT_NCCL_LIBRARY",
          "install NCCL (libnccl2, or pip's nvidia-nccl-cu" + std::to_string(CUDART_VERSION / 1000) + ")",
          std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR)};
}
/// cuBLASLt's spec: libcublasLt.so.<major of cublas_api.h>, TENSOROPT_CUBLASLT_LIBRARY.
inline library_spec cublaslt_library() {
  const std::string major = std::to_string(CUBLAS_VER_MAJOR);
  return {"cuBLASLt", "libcublasLt.so." + major, "TENSOROPT_CUBLASLT_LIBRARY",
          "install the CUDA " + major + " cuBLAS library (libcublas-" + major + "-0, or pip's nvidia-cublas)",
          major + "." + std::to_string(CUBLAS_VER_MINOR)};
}

namespace detail {
/// dlerror()'s text without the "FILE: " it starts with (the message names the file).
inline std::string dl_reason(const std::string& file) {
  const char* e = ::dlerror();
  std::string why = e ? e : "unknown reason";
  if (why.compare(0, file.size() + 2, file + ": ") == 0) why.erase(0, file.size() + 2);
  return why;
}

/// The file to load (the variable's value when set and not empty) and the fix to
/// print when it fails.
inline std::pair<std::string, std::string> library_choice(const library_spec& s) {
  const char* over = std::getenv(s.env.c_str());
  if (over && *over)
    return {over,
            s.env + " names this file: point it at " + s.what + "'s " + s.soname + " or unset it to use the system's"};
  return {s.soname, s.install + " or set " + s.env + " to its path"};
}

/// A library's dlopen handle (RTLD_NOW: every symbol it needs bound now, so a
/// broken install fails here, not in the middle of a step). Throws library_error.
inline void* open_library(const library_spec& s, std::string& file) {
  const auto [name, fix] = library_choice(s);
  file = name;
  (void)::dlerror();
  void* h = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw library_error("cannot load " + name + " (" + dl_reason(name) + "): " + fix);
  return h;
}

/// Entry point `entry` of the library `file` opened as `h`. Throws library_error.
inline void* entry_point(void* h, const library_spec& s, const std::string& file, const char* entry) {
  (void)::dlerror();
  void* p = ::dlsym(h, entry);
  if (!p)
    throw library_error(file + " is not a usable " + s.what + ": it lacks " + entry + " (" + s.what + " " +
                        s.version + " or newer is needed); " + library_choice(s).second);
  return p;
}
}  // namespace detail

/// The cuBLASLt functions the GEMM engine calls.
#define TENSOROPT_CUBLASLT_ENTRY_POINTS(X)                                                                 \
  X(cublasLtGetVersion) X(cublasLtGetStatusName) X(cublasLtGetStatusString) X(cublasLtCreate)             \
  X(cublasLtDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)                             \
  X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)          \
  X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)
/// The NCCL functions the communicators and the calibration call.
#define TENSOROPT_NCCL_ENTRY_POINTS(X)                                                                     \
  X(ncclGetVersion) X(ncclGetErrorString) X(ncclGetLastError) X(ncclGetUniqueId) X(ncclCommInitRankConfig) \
  X(ncclCommInitAll) X(ncclCommSplit) X(ncclCommFinalize) X(ncclCommDestroy) X(ncclCommAbort)              \
  X(ncclCommGetAsyncError) X(ncclCommUserRank) X(ncclCommCount) X(ncclAllReduce) X(ncclReduceScatter)      \
  X(ncclAllGather) X(ncclSend) X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)

#define TENSOROPT_DETAIL_ENTRY_MEMBER(f) decltype(&::f) f = nullptr;
#define TENSOROPT_DETAIL_ENTRY_RESOLVE(f) f = reinterpret_cast<decltype(f)>(detail::entry_point(h, s, path, #f));

/// cuBLASLt's entry points, each named after its function.
struct cublaslt_entry_points {
  TENSOROPT_CUBLASLT_ENTRY_POINTS(TENSOROPT_DETAIL_ENTRY_MEMBER)
  std::string path;  ///< the file loaded
  /// Sets every entry point from library `h` (opened as `path`); throws library_error.
  void resolve(void* h, const library_spec& s) { TENSOROPT_CUBLASLT_ENTRY_POINTS(TENSOROPT_DETAIL_ENTRY_RESOLVE) }
};

/// NCCL's entry points, each named after its function.
struct nccl_entry_points {
  TENSOROPT_NCCL_ENTRY_POINTS(TENSOROPT_DETAIL_ENTRY_MEMBER)
  std::string path;  ///< the file loaded
  /// Sets every entry point from library `h` (opened as `path`); throws library_error.
  void resolve(void* h, const library_spec& s) { TENSOROPT_NCCL_ENTRY_POINTS(TENSOROPT_DETAIL_ENTRY_RESOLVE) }
};

/// Loads the library `s` names and resolves a table of its entry points (Table:
/// cublaslt_entry_points or nccl_entry_points); reads the environment at each
/// call, caches nothing. Throws library_error.
template <class Table>
Table load_library(const library_spec& s) {
  Table t;
  void* h = detail::open_library(s, t.path);
  t.resolve(h, s);
  return t;
}

#undef TENSOROPT_DETAIL_ENTRY_MEMBER
#undef TENSOROPT_DETAIL_ENTRY_RESOLVE

/// The process' cuBLASLt, loaded by the first call. Throws library_error (and
/// tries again at the next call) when it cannot be loaded.
inline const cublaslt_entry_points& cublaslt_api() {
  static const auto t = load_library<cublaslt_entry_points>(cublaslt_library());
  return t;
}
/// The process' NCCL, loaded by the first call; as cublaslt_api().
inline const nccl_entry_points& nccl_api() {
  static const auto t = load_library<nccl_entry_points>(nccl_library());
  return t;
}

}  // namespace tensoropt::cuda
