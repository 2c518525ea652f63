// Checkpoints: the full (unsharded) weights and optimizer state of a run, saved from
// any plan and loadable under any other plan or device count.
//
// Format "TOCKPT02" (little-endian):
//   header:  "TOCKPT02", u64 step, u32 optimizer kind, u32 op count, u32 record count,
//            then the model's identity, per op: u32 name length, name, u32 op kind,
//            u32 n, i64 extents[n] (the op's dims that do not scale with the batch);
//            u64 FNV-1a checksum of every header byte before it;
//   records: per tensor: u32 name length, name, u32 rank, i64 extents[rank], u64 count,
//            f32 data[count], u64 FNV-1a checksum of every byte of the record before it.
// Optimizer state records are named "<param>@<state>". Nothing follows the last record.
//
// Every field is inside a checksum, so a flipped step or optimizer kind is caught (a
// negative step would make Adam's bias correction leave the weights unchanged). The
// identity ties a checkpoint to its model: loading into a graph whose op names, kinds
// or non-batch sizes differ fails naming the first differing op (a model with an extra
// layer used to load into the smaller one); the batch size may change between runs.
// The reader checks each declared size against the bytes left in the file before it
// allocates (a 61-byte file declaring 2^27 floats allocated 512 MiB per device), and
// refuses non-regular files (a FIFO used to hang it). Writes go through output_file:
// atomic (temporary + fsync + rename), so a crash mid-save keeps the previous file.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>
#include "../core/output_file.hpp"
#include "executor.hpp"

namespace tensoropt::runtime {

namespace detail {
inline constexpr std::uint64_t fnv_offset = 1469598103934665603ull;
inline std::uint64_t fnv1a(const void* p, std::size_t n, std::uint64_t h = fnv_offset) {
  auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}
inline std::string state_name(const optimizer_options& o, int s) {
  if (o.type == optimizer_options::kind::sgd) return "momentum";
  return s == 0 ? "adam_m" : "adam_v";
}

/// One op of a model's identity: its name, kind and the extents of its dims that do
/// not scale with the batch.
struct ckpt_op {
  std::string name;
  std::uint32_t kind = 0;
  std::vector<index_t> extents;
  bool operator==(const ckpt_op&) const = default;
};

inline std::vector<ckpt_op> model_identity(const op_graph& g) {
  std::vector<ckpt_op> ops;
  for (const auto& op : g.ops) {
    ckpt_op o{op.name, std::uint32_t(op.kind), {}};
    for (const auto& d : op.dims)
      if (!d.batch) o.extents.push_back(d.extent);
    ops.push_back(std::move(o));
  }
  return ops;
}

inline std::string describe(const ckpt_op& o) {
  std::string s = "'" + tensoropt::detail::cut_short(o.name) + "' (";
  s += o.kind <= std::uint32_t(op_kind::moe_combine) ? std::string(name_of(op_kind(o.kind))) : "kind " + std::to_string(o.kind);
  for (std::size_t i = 0; i < o.extents.size(); ++i) s += (i ? " x " : " [") + std::to_string(o.extents[i]);
  return s + (o.extents.empty() ? ")" : "])");
}

/// Empty when `file` (the checkpoint's ops) is the identity of `graph`; else a
/// sentence naming the first difference.
inline std::string identity_difference(const std::vector<ckpt_op>& file, const std::vector<ckpt_op>& graph) {
  for (std::size_t i = 0; i < file.size() && i < graph.size(); ++i)
    if (!(file[i] == graph[i]))
      return "op " + std::to_string(i) + " is " + describe(file[i]) + " in the checkpoint but " +
             describe(graph[i]) + " in the model";
  if (file.size() > graph.size())
    return "the checkpoint has " + std::to_string(file.size()) + " ops, the model " + std::to_string(graph.size()) +
           "; the first extra one is " + describe(file[graph.size()]);
  if (file.size() < graph.size())
    return "the checkpoint has " + std::to_string(file.size()) + " ops, the model " + std::to_string(graph.size()) +
           "; the first missing one is " + describe(graph[file.size()]);
  return {};
}

struct ckpt_record {
  std::vector<index_t> extents;
  std::vector<float> data;
};
struct ckpt_file {
  std::int64_t step = 0;
  std::uint32_t opt_kind = 0;
  std::vector<ckpt_op> ops;
  std::map<std::string, ckpt_record> records;
};

/// Reads a checkpoint, checking every size against the bytes left before allocating
/// and every checksum; throws format_error naming the file and the part.
class ckpt_reader {
 public:
  explicit ckpt_reader(const std::string& path) : path_(path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (ec || !fs::exists(st)) throw format_error("checkpoint '" + path + "' cannot be opened (no such file)");
    if (!fs::is_regular_file(st))
      throw format_error("checkpoint '" + path + "' is not a regular file (a folder, FIFO or device); "
                         "give the path of a checkpoint file");
    size_ = fs::file_size(path, ec);
    in_.open(path, std::ios::binary);
    if (ec || !in_) throw format_error("checkpoint '" + path + "' cannot be opened");
  }

  ckpt_file read() {
    ckpt_file f;
    char magic[8];
    get(magic, 8);
    const std::string m(magic, 8);
    if (m == "TOCKPT01")
      throw format_error("checkpoint '" + path_ + "' is in the older format TOCKPT01, without a model identity "
                         "or header checksum; save it again with this version");
    if (m != "TOCKPT02") throw format_error("'" + path_ + "' is not a tensoropt checkpoint (bad magic)");
    std::uint64_t step = 0;
    std::uint32_t ops = 0, records = 0;
    get(&step, 8);
    get(&f.opt_kind, 4);
    get(&ops, 4);
    get(&records, 4);
    need(std::uint64_t(ops) * 12, "its model identity");
    for (std::uint32_t i = 0; i < ops; ++i) {
      ckpt_op o;
      o.name = get_name();
      get(&o.kind, 4);
      std::uint32_t n = 0;
      get(&n, 4);
      if (n > std::uint32_t(max_op_dims)) corrupt("the model identity (op '" + o.name + "' has " + std::to_string(n) + " dims)");
      o.extents.resize(n);
      get(o.extents.data(), 8 * n);
      f.ops.push_back(std::move(o));
    }
    check_sum("header");
    if (step > std::uint64_t(INT64_MAX)) corrupt("the header (step " + std::to_string(step) + ")");
    if (f.opt_kind > std::uint32_t(optimizer_options::kind::adam)) corrupt("the header (optimizer kind)");
    f.step = std::int64_t(step);
    need(std::uint64_t(records) * 24, "its tensors");
    for (std::uint32_t r = 0; r < records; ++r) {
      current_ = "(record " + std::to_string(r) + ")";
      const std::string name = get_name();
      current_ = name;
      std::uint32_t rank = 0;
      get(&rank, 4);
      if (rank > std::uint32_t(max_tensor_rank)) corrupt("tensor '" + name + "' (rank " + std::to_string(rank) + ")");
      ckpt_record rec;
      rec.extents.resize(rank);
      get(rec.extents.data(), 8 * rank);
      std::uint64_t n = 0, want = 1;
      get(&n, 8);
      for (auto e : rec.extents) {
        if (e < 0 || (e > 0 && want > (std::uint64_t(1) << 40) / std::uint64_t(e))) want = UINT64_MAX;
        else want *= std::uint64_t(e);
        if (want == UINT64_MAX) break;
      }
      if (n != want) corrupt("tensor '" + name + "' (its size does not match its shape)");
      need(4 * n + 8, "tensor '" + name + "'");
      rec.data.resize(n);
      get(rec.data.data(), 4 * n);
      check_sum("tensor '" + name + "'");
      if (!f.records.emplace(name, std::move(rec)).second) corrupt("tensor '" + name + "' (stored twice)");
    }
    if (pos_ != size_)
      throw format_error("checkpoint '" + path_ + "' has " + std::to_string(size_ - pos_) +
                         " bytes after its last tensor (corrupt, or two files joined)");
    return f;
  }

 private:
  void get(void* p, std::size_t n) {
    if (n > size_ - pos_ || !in_.read(static_cast<char*>(p), std::streamsize(n)))
      throw format_error("checkpoint '" + path_ + "' is truncated in " +
                         (current_.empty() ? std::string("its header") : "tensor '" + current_ + "'"));
    pos_ += n;
    hash_ = fnv1a(p, n, hash_);
  }
  // Fails before an allocation when `bytes` more cannot be in the file.
  void need(std::uint64_t bytes, const std::string& what) {
    if (bytes > size_ - pos_)
      throw format_error("checkpoint '" + path_ + "' is truncated in " + what + ": it declares " +
                         std::to_string(bytes) + " more bytes, the file has " + std::to_string(size_ - pos_));
  }
  std::string get_name() {
    std::uint32_t len = 0;
    get(&len, 4);
    if (len > 4096) corrupt("a name (" + std::to_string(len) + " bytes long)");
    std::string s(len, '\0');
    get(s.data(), len);
    return s;
  }
  void check_sum(const std::string& what) {
    const std::uint64_t want = hash_;
    std::uint64_t sum = 0;
    get(&sum, 8);
    if (sum != want) throw format_error("checkpoint '" + path_ + "': " + what + " is corrupt (checksum mismatch)");
    hash_ = fnv_offset;
  }
  [[noreturn]] void corrupt(const std::string& what) {
    throw format_error("checkpoint '" + path_ + "' is corrupt in " + what);
  }

  std::string path_, current_;
  std::ifstream in_;
  std::uint64_t size_ = 0, pos_ = 0, hash_ = fnv_offset;
};

inline ckpt_file read_checkpoint(const std::string& path) { return ckpt_reader(path).read(); }

/// Writes fields to an output_file, keeping the running checksum of a section.
struct ckpt_writer {
  output_file& out;
  std::uint64_t hash = fnv_offset;
  void put(const void* p, std::size_t n) {
    out.write(p, n);
    hash = fnv1a(p, n, hash);
  }
  void put_name(const std::string& s) {
    const std::uint32_t len = std::uint32_t(s.size());
    put(&len, 4);
    put(s.data(), len);
  }
  void end_section() {
    const std::uint64_t sum = hash;
    out.write(&sum, 8);
    hash = fnv_offset;
  }
};

/// Writes the checkpoint of graph `g` at `step` with the whole tensors `recs` (name,
/// data) of shapes `shapes`, in the order given (save_checkpoint's: each parameter
/// followed by its optimizer states, in graph order).
inline void write_checkpoint(const std::string& path, const op_graph& g, std::int64_t steps,
                             const optimizer_options& opt,
                             const std::vector<std::pair<std::string, std::vector<float>>>& recs,
                             const std::vector<std::vector<index_t>>& shapes) {
  output_file out(path, "checkpoint");
  detail::ckpt_writer w{out};
  const auto ops = detail::model_identity(g);
  const std::uint64_t step = std::uint64_t(steps);
  const std::uint32_t kind = std::uint32_t(opt.type), nops = std::uint32_t(ops.size()),
                      count = std::uint32_t(recs.size());
  w.put("TOCKPT02", 8);
  w.put(&step, 8);
  w.put(&kind, 4);
  w.put(&nops, 4);
  w.put(&count, 4);
  for (const auto& o : ops) {
    const std::uint32_t n = std::uint32_t(o.extents.size());
    w.put_name(o.name);
    w.put(&o.kind, 4);
    w.put(&n, 4);
    w.put(o.extents.data(), 8 * n);
  }
  w.end_section();
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const auto& [name, data] = recs[i];
    const std::uint32_t rank = std::uint32_t(shapes[i].size());
    const std::uint64_t n = data.size();
    w.put_name(name);
    w.put(&rank, 4);
    w.put(shapes[i].data(), 8 * rank);
    w.put(&n, 8);
    w.put(data.data(), 4 * n);
    w.end_section();
  }
  out.commit();
}
}  // namespace detail

/// Saves the whole weights and optimizer state of `ex` to `path` (collective: every
/// device calls it; rank 0 writes). Atomic: see output_file.
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
  if (ex.comm().rank() == 0) detail::write_checkpoint(path, g, ex.steps(), ex.optimizer(), recs, shapes);
  ex.comm().barrier();
}

/// Loads a checkpoint saved under any plan into `ex` (collective). Throws
/// format_error, naming the part, when the file is not a regular file, truncated or
/// corrupt, or does not match: another model (the first differing op), another
/// optimizer, a missing, extra or reshaped tensor. Nothing changes unless all match.
/// `every_tensor` false (a pipeline stage): loads the parameters `ex` holds and
/// accepts the file's others.
inline void load_checkpoint(executor& ex, const std::string& path, bool every_tensor = true) {
  const auto f = detail::read_checkpoint(path);
  const auto& g = ex.graph();
  const auto diff = detail::identity_difference(f.ops, detail::model_identity(g));
  if (!diff.empty())
    throw format_error("checkpoint '" + path + "' is of another model than '" + g.name + "': " + diff);
  if (f.opt_kind != std::uint32_t(ex.optimizer().type)) {
    optimizer_options saved;
    saved.type = optimizer_options::kind(f.opt_kind);
    throw format_error("checkpoint '" + path + "' holds " + saved.name() + " optimizer state; this run uses " +
                       ex.optimizer().name());
  }
  std::size_t expected = 0;
  auto find = [&](const std::string& name, const tensor_info& ti) -> const detail::ckpt_record& {
    ++expected;
    auto it = f.records.find(name);
    if (it == f.records.end())
      throw format_error("checkpoint '" + path + "' has no tensor '" + name + "' (saved from another model or optimizer?)");
    std::vector<index_t> shape(ti.extents.begin(), ti.extents.begin() + ti.rank);
    if (it->second.extents != shape)
      throw format_error("checkpoint '" + path + "': tensor '" + name + "' has another shape than in graph '" + g.name + "'");
    return it->second;
  };
  for (int pass = 0; pass < 2; ++pass) {  // check every tensor before changing any
    for (int t : ex.parameters()) {
      const auto& ti = g.tensors[std::size_t(t)];
      const auto& w = find(ti.name, ti);
      if (pass) ex.scatter(t, -1, w.data);
      for (int s = 0; s < ex.optimizer().states(); ++s) {
        const auto& st = find(ti.name + "@" + detail::state_name(ex.optimizer(), s), ti);
        if (pass) ex.scatter(t, s, st.data);
      }
    }
    if (pass == 0 && every_tensor && expected != f.records.size())
      throw format_error("checkpoint '" + path + "' has " + std::to_string(f.records.size()) + " tensors, graph '" +
                         g.name + "' needs " + std::to_string(expected));
  }
  ex.set_steps(f.step);
}

}  // namespace tensoropt::runtime
