// The run-time loading of NCCL and cuBLASLt (cuda/libraries.cuh), on any machine:
// no GPU is needed to load a library, resolve its entry points and call the ones
// that do not touch a device (versions, error strings). Compiled by g++ with the
// CUDA toolkit's headers. Exit 1: a check failed; 77: the checks that need the
// libraries installed were skipped (they are not on this machine), the others ran.
#include <tensoropt/cuda/libraries.cuh>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace {

namespace cu = tensoropt::cuda;
int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("  %s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

/// The library_error `f` throws ("" when it throws none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const cu::library_error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
bool starts(const std::string& s, const std::string& head) { return s.compare(0, head.size(), head) == 0; }

/// A variable set for the scope.
struct scoped_env {
  std::string name;
  scoped_env(std::string n, const char* v) : name(std::move(n)) { ::setenv(name.c_str(), v, 1); }
  ~scoped_env() { ::unsetenv(name.c_str()); }
};

/// Bad input: each message is one line naming the file, the reason and the fix.
void bad_libraries() {
  std::printf("bad libraries\n");
  {
    scoped_env e("TENSOROPT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
    const auto m = error_of([] { (void)cu::load_library<cu::nccl_entry_points>(cu::nccl_library()); });
    std::printf("    %s\n", m.c_str());
    check(starts(m, "cannot load /nonexistent/libnccl.so.2 (") && has(m, "No such file") &&
              has(m, "): TENSOROPT_NCCL_LIBRARY names this file: point it at NCCL's libnccl.so." +
                         std::to_string(NCCL_MAJOR) + " or unset it") && !has(m, "\n"),
          "TENSOROPT_NCCL_LIBRARY at a missing file: one line naming it and the variable");
  }
  {
    scoped_env e("TENSOROPT_CUBLASLT_LIBRARY", "/nonexistent/libcublasLt.so");
    const auto m = error_of([] { (void)cu::load_library<cu::cublaslt_entry_points>(cu::cublaslt_library()); });
    std::printf("    %s\n", m.c_str());
    check(starts(m, "cannot load /nonexistent/libcublasLt.so (") && has(m, "No such file") &&
              has(m, "TENSOROPT_CUBLASLT_LIBRARY names this file") && !has(m, "\n"),
          "TENSOROPT_CUBLASLT_LIBRARY at a missing file: one line naming it and the variable");
  }
  {  // not set: the default name and how to install it
    auto spec = cu::nccl_library();
    spec.soname = "libtensoropt-no-such-nccl.so.2";
    const auto m = error_of([&] { (void)cu::load_library<cu::nccl_entry_points>(spec); });
    std::printf("    %s\n", m.c_str());
    check(starts(m, "cannot load libtensoropt-no-such-nccl.so.2 (") &&
              has(m, "): install NCCL (libnccl2, or pip's nvidia-nccl-cu") &&
              has(m, ") or set TENSOROPT_NCCL_LIBRARY to its path"),
          "a missing default library: names the package and the variable");
  }
  {  // a library that is not NCCL: the entry point it lacks
    scoped_env e("TENSOROPT_NCCL_LIBRARY", "libc.so.6");
    const auto m = error_of([] { (void)cu::load_library<cu::nccl_entry_points>(cu::nccl_library()); });
    std::printf("    %s\n", m.c_str());
    check(starts(m, "libc.so.6 is not a usable NCCL: it lacks ncclGetVersion (NCCL " + std::to_string(NCCL_MAJOR) +
                        "." + std::to_string(NCCL_MINOR) + " or newer is needed); TENSOROPT_NCCL_LIBRARY names"),
          "a library that is not NCCL: names the missing entry point");
  }
  {
    scoped_env e("TENSOROPT_CUBLASLT_LIBRARY", "libc.so.6");
    const auto m = error_of([] { (void)cu::load_library<cu::cublaslt_entry_points>(cu::cublaslt_library()); });
    check(starts(m, "libc.so.6 is not a usable cuBLASLt: it lacks cublasLtGetVersion"),
          "a library that is not cuBLASLt: names the missing entry point");
  }
}

/// The installed libraries: found by their sonames, every entry point resolved,
/// and the ones that need no device answer as the headers say. False: not installed.
bool installed_libraries() {
  std::printf("installed libraries\n");
  ::unsetenv("TENSOROPT_NCCL_LIBRARY");
  ::unsetenv("TENSOROPT_CUBLASLT_LIBRARY");
  cu::cublaslt_entry_points lt;
  cu::nccl_entry_points nc;
  try {
    lt = cu::load_library<cu::cublaslt_entry_points>(cu::cublaslt_library());
    nc = cu::load_library<cu::nccl_entry_points>(cu::nccl_library());
  } catch (const cu::library_error& e) {
    std::printf("  skipped: %s\n", e.what());
    return false;
  }
  bool all = true;
#define TENSOROPT_TEST_RESOLVED(f) all = all && lt.f != nullptr;
  TENSOROPT_CUBLASLT_ENTRY_POINTS(TENSOROPT_TEST_RESOLVED)
#undef TENSOROPT_TEST_RESOLVED
  check(all && lt.path == "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR),
        "cuBLASLt: " + lt.path + ", every entry point resolved");
  const std::size_t v = lt.cublasLtGetVersion();  // (check's arguments are evaluated in any order)
  check(v / 10000 == CUBLAS_VER_MAJOR, "cublasLtGetVersion() through the table: " + std::to_string(v));
  check(std::string(lt.cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED)) == "CUBLAS_STATUS_NOT_SUPPORTED",
        "cublasLtGetStatusName through the table");
  all = true;
#define TENSOROPT_TEST_RESOLVED(f) all = all && nc.f != nullptr;
  TENSOROPT_NCCL_ENTRY_POINTS(TENSOROPT_TEST_RESOLVED)
#undef TENSOROPT_TEST_RESOLVED
  check(all && nc.path == "libnccl.so." + std::to_string(NCCL_MAJOR),
        "NCCL: " + nc.path + ", every entry point resolved");
  int nv = 0;
  const ncclResult_t got = nc.ncclGetVersion(&nv);
  check(got == ncclSuccess && nv / 10000 == NCCL_MAJOR,
        "ncclGetVersion() through the table: " + std::to_string(nv) + " (headers " + std::to_string(NCCL_VERSION_CODE) +
            ")");
  check(std::string(nc.ncclGetErrorString(ncclInvalidArgument)).size() > 0, "ncclGetErrorString through the table");
  // the process' tables: loaded once, the same object at every call
  check(&cu::nccl_api() == &cu::nccl_api() && &cu::cublaslt_api() == &cu::cublaslt_api() &&
            cu::nccl_api().ncclAllReduce == nc.ncclAllReduce,
        "nccl_api() / cublaslt_api(): loaded once, the same entry points");
  {  // once loaded, a later bad variable changes nothing in the process' tables
    scoped_env e("TENSOROPT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
    check(error_of([] { (void)cu::nccl_api(); }).empty(), "nccl_api() keeps the library it loaded");
  }
  return true;
}

}  // namespace

int main() {
  bad_libraries();
  const bool installed = installed_libraries();
  std::printf("cuda_libraries: %d failure(s)%s\n", failures,
              installed ? "" : "; skipped the installed-library checks (NCCL or cuBLASLt not installed)");
  if (failures) return 1;
  return installed ? 0 : 77;
}
