// output_file: the one writer of every file tensoropt produces (frontier and problem
// JSON, SVG, HTML, plan files, checkpoints).
//
// What a path names decides how it is written:
//   - "-" or "/dev/stdout": standard output (see `reserve_stdout_for_data`, which lets a
//     program send its own messages to stderr while the data goes to stdout);
//   - a regular file, or a name that does not exist yet: written atomically. The data
//     goes to a temporary file in the same folder (".<name>.XXXXXX"), which is fsync'ed,
//     renamed over the target, and the folder fsync'ed; a reader sees the old file or
//     the whole new one, never a half-written one, and a crash or an error leaves the
//     old file intact and no temporary behind. An existing file keeps its permissions;
//     a new one gets 0666 minus the umask, as `open` would give it;
//   - a symbolic link: followed (up to 40 links) and its target written as above, so
//     the link stays a link;
//   - anything else that exists (a FIFO, /dev/null, a terminal, a socket): opened and
//     streamed into, never replaced (renaming over /dev/null as root would replace the
//     device node with a file).
//
// `check_output_path` answers, before any work starts, whether a path can be written:
// its folder exists and accepts a new file (probed by creating and removing one, since
// `access` says yes to root even on /sys), it is not a folder, an existing file is not
// read-only. A program calls it for every output path up front so that a typo does not
// cost a whole search. Path problems throw invalid_argument, write failures (disk
// full) runtime_error; both name the path, what was being written and the system's
// reason. POSIX only (open, fsync, rename, mkstemp).
#pragma once
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "error.hpp"

namespace tensoropt {
namespace detail {

/// The descriptor "-" and "/dev/stdout" write to (see reserve_stdout_for_data).
inline int& data_stdout_fd() {
  static int fd = STDOUT_FILENO;
  return fd;
}

inline bool is_stdout_path(std::string_view path) { return path == "-" || path == "/dev/stdout"; }

inline std::string sys_reason(int err) { return std::strerror(err); }

/// /dev/fd/N, /proc/<pid>/fd/N (and /dev/stderr, which links there): an open
/// descriptor, streamed into whatever it is.
inline bool is_fd_path(const std::filesystem::path& p) {
  const std::string s = p.string();
  return s.rfind("/dev/fd/", 0) == 0 || (s.rfind("/proc/", 0) == 0 && s.find("/fd/") != std::string::npos);
}

/// `path` with its symbolic links followed (the link's target, which may not exist yet).
inline std::filesystem::path follow_links(const std::string& path, const char* what) {
  namespace fs = std::filesystem;
  fs::path p(path);
  for (int hops = 0;; ++hops) {
    std::error_code ec;
    if (is_fd_path(p) || !fs::is_symlink(fs::symlink_status(p, ec))) return p;
    if (hops == 40)
      throw invalid_argument(std::string("cannot write the ") + what + " to '" + path +
                             "': more than 40 symbolic links (a loop?)");
    fs::path t = fs::read_symlink(p, ec);
    if (ec)
      throw invalid_argument(std::string("cannot write the ") + what + " to '" + path + "': " + ec.message());
    p = t.is_absolute() ? t : p.parent_path() / t;
  }
}

inline std::string folder_of(const std::filesystem::path& p) {
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

/// The permission bits a new file gets (0666 minus the umask), read without changing
/// the umask (umask(2) would, and is not thread-safe).
inline mode_t new_file_mode() {
  std::ifstream st("/proc/self/status");
  std::string line;
  while (std::getline(st, line))
    if (line.rfind("Umask:", 0) == 0) return mode_t(0666 & ~std::strtoul(line.c_str() + 6, nullptr, 8));
  return 0644;
}

/// Writes all of [p, p+n) to fd; false (errno set) on failure.
inline bool write_all(int fd, const void* p, std::size_t n) {
  auto* b = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, b, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    b += w;
    n -= std::size_t(w);
  }
  return true;
}

}  // namespace detail

/// Sends everything the program prints to stdout to stderr from now on, and keeps the
/// real standard output for the data written to "-" / "/dev/stdout". A program calls it
/// when one of its outputs is "-", so that `prog --frontier-json - | jq` gets clean JSON.
inline void reserve_stdout_for_data() {
  if (detail::data_stdout_fd() != STDOUT_FILENO) return;
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  if (saved < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    throw runtime_error("cannot redirect the program's messages to stderr: " + detail::sys_reason(errno));
  detail::data_stdout_fd() = saved;
}

/// Checks that `path` can receive the `what` (e.g. "frontier") before any work starts;
/// throws invalid_argument naming the path and the fix. See the file comment.
inline void check_output_path(const std::string& path, const char* what) {
  namespace fs = std::filesystem;
  const std::string pre = std::string("cannot write the ") + what + " to '" + path + "': ";
  if (path.empty()) throw invalid_argument(std::string("empty output path for the ") + what + "; give a file name or '-' for stdout");
  if (detail::is_stdout_path(path)) return;
  const fs::path target = detail::follow_links(path, what);
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw invalid_argument(pre + "it is a folder; give a file name inside it");
    if (!S_ISREG(st.st_mode) || detail::is_fd_path(target)) {
      if (::access(target.c_str(), W_OK) != 0) throw invalid_argument(pre + detail::sys_reason(errno));
      return;
    }
    if (::access(target.c_str(), W_OK) != 0)
      throw invalid_argument(pre + "the file is read-only (" + detail::sys_reason(errno) + ")");
  } else if (errno != ENOENT) {
    throw invalid_argument(pre + detail::sys_reason(errno));
  }
  const std::string dir = detail::folder_of(target);
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode))
    throw invalid_argument(pre + "the folder '" + dir + "' does not exist; create it first");
  std::string probe = (fs::path(dir) / ".tensoropt-probe.XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0)
    throw invalid_argument(pre + "cannot create files in the folder '" + dir + "' (" + detail::sys_reason(errno) +
                           "); choose a writable folder");
  ::close(fd);
  ::unlink(probe.c_str());
}

/// An output being written: open, write any number of times, then commit. Without a
/// commit (an exception, an early return) a regular file's temporary is removed and
/// the old file stays as it was.
class output_file {
 public:
  output_file(const std::string& path, const char* what) : path_(path), what_(what) {
    if (detail::is_stdout_path(path)) {
      fd_ = detail::data_stdout_fd();
      owned_ = false;
      return;
    }
    check_output_path(path, what);
    target_ = detail::follow_links(path, what);
    struct stat st {};
    const bool exists = ::stat(target_.c_str(), &st) == 0;
    if (exists && (!S_ISREG(st.st_mode) || detail::is_fd_path(target_))) {
      fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd_ < 0) fail(invalid_argument_tag{}, "cannot open it");
      return;
    }
    temp_ = (target_.parent_path().empty() ? std::filesystem::path(".") : target_.parent_path()) /
            ("." + target_.filename().string() + ".XXXXXX");
    std::string t = temp_.string();
    fd_ = ::mkstemp(t.data());
    if (fd_ < 0) fail(invalid_argument_tag{}, "cannot create a temporary file next to it");
    temp_ = t;
    ::fchmod(fd_, exists ? (st.st_mode & 07777) : detail::new_file_mode());
  }
  output_file(const output_file&) = delete;
  output_file& operator=(const output_file&) = delete;
  ~output_file() { abandon(); }

  /// Appends n bytes; throws runtime_error (and removes the temporary) on failure.
  void write(const void* p, std::size_t n) {
    if (!detail::write_all(fd_, p, n)) fail(runtime_error_tag{}, "write failed");
  }
  void write(std::string_view s) { write(s.data(), s.size()); }

  /// Makes the output final: fsync, rename into place and fsync the folder (regular
  /// files); a stream is just flushed. Throws runtime_error on failure.
  void commit() {
    if (temp_.empty()) {
      if (owned_) {
        if (::close(fd_) != 0 && errno != EINTR) { fd_ = -1; fail(runtime_error_tag{}, "close failed"); }
        fd_ = -1;
      }
      return;
    }
    if (::fsync(fd_) != 0) fail(runtime_error_tag{}, "fsync failed");
    if (::close(fd_) != 0) { fd_ = -1; fail(runtime_error_tag{}, "close failed"); }
    fd_ = -1;
    if (std::rename(temp_.c_str(), target_.c_str()) != 0) fail(runtime_error_tag{}, "cannot rename the temporary file into place");
    temp_.clear();
    const int dfd = ::open(detail::folder_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }

 private:
  struct invalid_argument_tag {};
  struct runtime_error_tag {};
  void abandon() noexcept {
    if (owned_ && fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temp_.empty()) ::unlink(temp_.c_str());
    temp_.clear();
  }
  std::string message(const char* doing, int err) const {
    return "cannot write the " + what_ + " to '" + path_ + "': " + doing + " (" +
           detail::sys_reason(err) + ")";
  }
  [[noreturn]] void fail(invalid_argument_tag, const char* doing) {
    const int err = errno;
    abandon();
    throw invalid_argument(message(doing, err));
  }
  [[noreturn]] void fail(runtime_error_tag, const char* doing) {
    const int err = errno;
    abandon();
    throw runtime_error(message(doing, err));
  }

  std::string path_, what_;
  std::filesystem::path target_, temp_;
  int fd_ = -1;
  bool owned_ = true;
};

/// Writes `data` to `path` as described in the file comment (atomically for regular
/// files); `what` names the output in error messages ("frontier", "report", ...).
inline void write_output_file(const std::string& path, std::string_view data, const char* what) {
  output_file f(path, what);
  f.write(data);
  f.commit();
}

}  // namespace tensoropt
