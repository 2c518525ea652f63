// input_file: the one reader of the files tensoropt takes as input (problem, frontier,
// device and plan files), whose failure says why: "cannot open the device file 'x.json'
// (it is a folder, not a file)" rather than a JSON parse error at byte 1 of a folder read
// as an empty stream.
#pragma once
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <sys/stat.h>

namespace tensoropt {

/// Why a path cannot be read, in words: what `read_input_file` puts in `why`.
inline std::string input_file_reason(int err) {
  switch (err) {
    case ENOENT: return "no such file";
    case ENOTDIR: return "a part of the path is not a folder";
    case EACCES: return "permission denied";
    case EISDIR: return "it is a folder, not a file";
    default: return err ? std::string(std::strerror(err)) : std::string("unreadable");
  }
}

/// The whole contents of the file at `path`, or nullopt with `why` set to the reason it
/// cannot be read (no such file, a folder, permission denied, ...).
inline std::optional<std::string> read_input_file(const std::string& path, std::string& why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    why = input_file_reason(errno);
    return std::nullopt;
  }
  if (S_ISDIR(st.st_mode)) {
    why = input_file_reason(EISDIR);
    return std::nullopt;
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = input_file_reason(errno);
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tensoropt
