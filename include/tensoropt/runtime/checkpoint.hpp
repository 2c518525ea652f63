// Checkpoints: the full (unsharded) weights and optimizer state of a run, saved from
// any plan and loadable under any other plan or device count.
//
// Format (little-endian): "TOCKPT01", u64 step, u32 optimizer kind, u32 record count,
// then per record: u32 name length, name, u32 rank, i64 extents[rank], u64 count,
// f32 data[count], u64 FNV-1a checksum of name and data. Optimizer state records are
// named "<param>@<state>". Writes go to a temporary file that is renamed over the
// target, so a crash mid-save leaves the previous checkpoint intact.
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>
#include "executor.hpp"

namespace tensoropt::runtime {

namespace detail {
inline std::uint64_t fnv1a(const void* p, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}
inline std::string state_name(const optimizer_options& o, int s) {
  if (o.type == optimizer_options::kind::sgd) return "momentum";
  return s == 0 ? "adam_m" : "adam_v";
}
struct ckpt_record {
  std::vector<index_t> extents;
  std::vector<float> data;
};
struct ckpt_file {
  std::uint64_t step = 0;
  std::uint32_t opt_kind = 0;
  std::map<std::string, ckpt_record> records;
};

inline ckpt_file read_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw format_error("checkpoint '" + path + "' cannot be opened");
  ckpt_file f;
  std::string current = "(header)";
  auto get = [&](void* p, std::size_t n) {
    if (!in.read(static_cast<char*>(p), std::streamsize(n)))
      throw format_error("checkpoint '" + path + "' is truncated in tensor '" + current + "'");
  };
  char magic[8];
  get(magic, 8);
  if (std::string(magic, 8) != "TOCKPT01")
    throw format_error("'" + path + "' is not a tensoropt checkpoint (bad magic)");
  std::uint32_t count = 0;
  get(&f.step, 8);
  get(&f.opt_kind, 4);
  get(&count, 4);
  for (std::uint32_t r = 0; r < count; ++r) {
    std::uint32_t len = 0, rank = 0;
    get(&len, 4);
    if (len > 4096) throw format_error("checkpoint '" + path + "' is corrupt after tensor '" + current + "'");
    std::string name(len, '\0');
    get(name.data(), len);
    current = name;
    get(&rank, 4);
    if (rank > std::uint32_t(max_tensor_rank))
      throw format_error("checkpoint '" + path + "': tensor '" + name + "' has a corrupt rank");
    ckpt_record rec;
    rec.extents.resize(rank);
    get(rec.extents.data(), 8 * rank);
    std::uint64_t n = 0, sum = 0;
    get(&n, 8);
    index_t want = 1;
    for (auto e : rec.extents) want *= e;
    if (n != std::uint64_t(want) || n > (std::uint64_t(1) << 36))
      throw format_error("checkpoint '" + path + "': tensor '" + name + "' has a corrupt size");
    rec.data.resize(n);
    get(rec.data.data(), 4 * n);
    get(&sum, 8);
    if (sum != fnv1a(rec.data.data(), 4 * n, fnv1a(name.data(), name.size())))
      throw format_error("checkpoint '" + path + "': tensor '" + name + "' is corrupt (checksum mismatch)");
    f.records[name] = std::move(rec);
  }
  return f;
}
}  // namespace detail

/// Saves the whole weights and optimizer state of `ex` to `path` (collective: every
/// device calls it; rank 0 writes). Atomic: temporary file + rename.
inline void save_checkpoint(executor& ex, const std::string& path) {
  const auto& g = ex.graph();
  std::vector<std::pair<std::string, std::vector<float>>> recs;
  std::vector<std::vector<index_t>> shapes;
  for (int t : ex.parameters()) {
    const auto& ti = g.tensors[std::size_t(t)];
    std::vector<index_t> shape(ti.extents.begin(), ti.extents.begin() + ti.rank);
    recs.push_back({ti.name, ex.gather(t, -1)});
    shapes.push_back(shape);
    for (int s = 0; s < ex.optimizer().states(); ++s) {
      recs.push_back({ti.name + "@" + detail::state_name(ex.optimizer(), s), ex.gather(t, s)});
      shapes.push_back(shape);
    }
  }
  if (ex.comm().rank() == 0) {
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw runtime_error("cannot write checkpoint '" + tmp + "'");
      auto put = [&](const void* p, std::size_t n) { out.write(static_cast<const char*>(p), std::streamsize(n)); };
      const std::uint64_t step = std::uint64_t(ex.steps());
      const std::uint32_t kind = std::uint32_t(ex.optimizer().type), count = std::uint32_t(recs.size());
      put("TOCKPT01", 8);
      put(&step, 8);
      put(&kind, 4);
      put(&count, 4);
      for (std::size_t i = 0; i < recs.size(); ++i) {
        const auto& [name, data] = recs[i];
        const std::uint32_t len = std::uint32_t(name.size()), rank = std::uint32_t(shapes[i].size());
        const std::uint64_t n = data.size();
        const std::uint64_t sum = detail::fnv1a(data.data(), 4 * n, detail::fnv1a(name.data(), name.size()));
        put(&len, 4);
        put(name.data(), len);
        put(&rank, 4);
        put(shapes[i].data(), 8 * rank);
        put(&n, 8);
        put(data.data(), 4 * n);
        put(&sum, 8);
      }
      out.flush();
      if (!out) throw runtime_error("writing checkpoint '" + tmp + "' failed (disk full?)");
    }
    std::filesystem::rename(tmp, path);
  }
  ex.comm().barrier();
}

/// Loads a checkpoint saved under any plan into `ex` (collective). Throws
/// format_error, naming the tensor, when the file is truncated, corrupt or does not
/// match the graph (missing tensor, other shape, other optimizer).
inline void load_checkpoint(executor& ex, const std::string& path) {
  const auto f = detail::read_checkpoint(path);
  const auto& g = ex.graph();
  auto find = [&](const std::string& name, const tensor_info& ti) -> const detail::ckpt_record& {
    auto it = f.records.find(name);
    if (it == f.records.end())
      throw format_error("checkpoint '" + path + "' has no tensor '" + name + "' (saved from another model or optimizer?)");
    std::vector<index_t> shape(ti.extents.begin(), ti.extents.begin() + ti.rank);
    if (it->second.extents != shape)
      throw format_error("checkpoint '" + path + "': tensor '" + name + "' has another shape than in graph '" + g.name + "'");
    return it->second;
  };
  for (int pass = 0; pass < 2; ++pass)  // check every tensor before changing any
    for (int t : ex.parameters()) {
      const auto& ti = g.tensors[std::size_t(t)];
      const auto& w = find(ti.name, ti);
      if (pass) ex.scatter(t, -1, w.data);
      for (int s = 0; s < ex.optimizer().states(); ++s) {
        const auto& st = find(ti.name + "@" + detail::state_name(ex.optimizer(), s), ti);
        if (pass) ex.scatter(t, s, st.data);
      }
    }
  ex.set_steps(std::int64_t(f.step));
}

}  // namespace tensoropt::runtime
