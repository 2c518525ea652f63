// The CUDA backend against the CPU backend, as one program built twice:
//  - with the CPU backend (TENSOROPT_CHECK_CPU, links tensoropt::runtime):
//      backend_check --write FILE   runs every case on the CPU and writes its
//                                   losses, weights and peak requested bytes;
//  - with the CUDA backend (links tensoropt::cuda, no BLAS, so it runs on a GPU
//    machine without OpenBLAS):
//      backend_check --check FILE   runs the same cases on the GPU and compares.
// Checks (each can fail): fp32 training on the GPU equals the CPU's losses and
// weights within 1e-4 after 3 steps (MLP, GPT, CNN, MoE, and pipeline plans of MLP
// and GPT whose stages share the GPU; a model whose op kinds lack CUDA kernel glue
// fails); fp32 peak requested bytes equal the CPU's within 1 %; 2 and 4 ranks on one
// GPU equal 1 rank within 1e-5; bf16-mixed training's loss stays within 2 % of fp32
// over 20 steps (every model); a rank that skips a collective makes its peer fail with
// a timeout naming the collective; a device that does not exist and a plan that does
// not fit in the GPU's memory are one-line errors naming the fix.
// Without a GPU the check exits 77 (skipped). Prints one line per case:
//   case  result  figure  bound
#include <tensoropt/runtime/pipeline_trainer.hpp>
#include <tensoropt/runtime/trainer.hpp>
#ifdef TENSOROPT_CHECK_CPU
#include <tensoropt/runtime/cpu_backend.hpp>
#endif
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>
#include "../unit/runtime_model_types.hpp"

namespace {
using namespace rt_test;

struct result {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;
  std::int64_t peak = 0;  // the most requested bytes of any device in the last step
};

template <class Trainer, class Plan>
result train_with(const to::op_graph& g, const Plan& plan, int steps, const rt::backend_options& bo) {
  rt::local_world world(int(plan.mesh.devices()), std::chrono::seconds(60));
  rt::optimizer_options adam;
  adam.type = rt::optimizer_options::kind::adam;
  adam.lr = 1e-3f;
  adam.eps = 1e-3f;
  Trainer tr(g, plan, world, adam, 1234, bo);
  result r;
  for (int s = 0; s < steps; ++s) r.losses.push_back(tr.step(make_batch(g, 100 + unsigned(s))));
  for (auto& m : tr.memory()) r.peak = std::max(r.peak, m.peak);
  for (auto& t : g.tensors)
    if (t.parameter) r.params.push_back(tr.parameter(t.name));
  return r;
}

/// The cases both builds run, by name: (graph, plan or pipeline plan, steps).
struct case_t {
  std::string name;
  to::op_graph graph;
  rt::training_plan plan;
  int steps;
  std::optional<to::pipeline_plan> pipe = {};  // when set, runs instead of `plan`
};
result train(const case_t& c, const rt::backend_options& bo) {
  if (c.pipe) return train_with<rt::pipeline_trainer>(c.graph, *c.pipe, c.steps, bo);
  return train_with<rt::trainer>(c.graph, c.plan, c.steps, bo);
}
to::op_graph graph_of(const std::string& model) {
  if (model == "mlp") return to::lower<mlp>();
  if (model == "gpt") return to::lower<gpt>();
  if (model == "cnn") return to::lower<cnn>();
  return to::lower<moe>();
}
std::vector<case_t> cases() {
  std::vector<case_t> v;
  for (const char* model : {"mlp", "gpt", "cnn", "moe"}) {
    const auto g = graph_of(model);
    v.push_back({std::string(model) + ".1rank", g, data_parallel(g, 1), 3});
    v.push_back({std::string(model) + ".2rank.tp", g, tensor_parallel(g, 2), 3});
    v.push_back({std::string(model) + ".4rank.random", g, random_plan(g, 4, 1), 3});
  }
  // pipeline stages on one GPU: each stage's ranks are a sub-communicator of the world
  const auto m = graph_of("mlp"), t = graph_of("gpt");
  v.push_back({"mlp.2rank.pp2", m, {}, 3, pipeline_of(m, 2, 2, data_parallel(m, 1, 2))});
  v.push_back({"gpt.4rank.pp2.dp2", t, {}, 3, pipeline_of(t, 4, 2, data_parallel(t, 2, 2))});
  return v;
}

[[maybe_unused]] void write_result(std::ostream& o, const std::string& name, const result& r) {
  o << name << ' ' << r.peak << ' ' << r.losses.size() << ' ' << r.params.size() << '\n';
  char buf[32];
  for (float x : r.losses) o << (std::snprintf(buf, sizeof buf, "%a ", double(x)), buf);
  o << '\n';
  for (auto& p : r.params) {
    o << p.size();
    for (float x : p) o << ' ' << (std::snprintf(buf, sizeof buf, "%a", double(x)), buf);
    o << '\n';
  }
}
[[maybe_unused]] std::map<std::string, result> read_results(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw to::invalid_argument("cannot read the CPU reference '" + path + "'; make it with --write");
  std::map<std::string, result> m;
  std::string name;
  std::size_t nl = 0, np = 0;
  result r;
  while (in >> name >> r.peak >> nl >> np) {
    std::string tok;
    r.losses.assign(nl, 0.f);
    for (auto& x : r.losses) x = (in >> tok, std::strtof(tok.c_str(), nullptr));
    r.params.assign(np, {});
    for (auto& p : r.params) {
      std::size_t n = 0;
      in >> n;
      p.resize(n);
      for (auto& x : p) x = (in >> tok, std::strtof(tok.c_str(), nullptr));
    }
    m[name] = r;
  }
  return m;
}

[[maybe_unused]] double max_rel(const result& a, const result& b) {
  double d = std::fabs(a.losses.back() - b.losses.back()) / std::max(1e-30, double(std::fabs(b.losses.back())));
  for (std::size_t s = 0; s < a.losses.size() && s < b.losses.size(); ++s)
    d = std::max(d, std::fabs(double(a.losses[s]) - b.losses[s]) / std::max(1e-30, std::fabs(double(b.losses[s]))));
  if (a.params.size() != b.params.size()) return 1e30;
  for (std::size_t i = 0; i < a.params.size(); ++i) d = std::max(d, rel_diff(b.params[i], a.params[i]));
  return d;
}

/// 1 GiB of fp32 weights (4 GiB with the gradient and Adam's two moments): more than
/// the out-of-memory case leaves free.
using big = to::model<"big", to::shape<to::axis<"b", 8>, to::axis<"i", 16384>>,
                      to::seq<to::linear<16384, 16384>, to::linear<16384, 8, "c">, to::softmax_cross_entropy<8>>>;

int failures = 0;
[[maybe_unused]] void row(const std::string& name, const char* verdict, double figure, const std::string& bound) {
  std::printf("%-24s %-8s %12.3g  %s\n", name.c_str(), verdict, figure, bound.c_str());
  if (std::string(verdict) == "FAIL") ++failures;
}

#ifndef TENSOROPT_CHECK_CPU
/// Runs f; a case whose model has kernels the CUDA backend lacks fails (every op
/// kind of the CPU backend has CUDA glue).
bool runs(const std::string& name, const std::function<void()>& f) {
  try {
    f();
    return true;
  } catch (const to::invalid_argument& e) {
    if (std::string(e.what()).find("no kernel glue") == std::string::npos) throw;
    row(name, "FAIL", 0, std::string("no CUDA kernel glue: ") + e.what());
    return false;
  }
}

/// The error f throws (to::error), or "" when it throws none.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const to::error& e) {
    return e.what();
  }
  return "";
}

int check(const std::string& ref_path) {
  if (!rt::has_backend("cuda")) {
    std::printf("backend_check: this build has no CUDA backend (link tensoropt::cuda)\n");
    return 2;
  }
  const auto ref = read_results(ref_path);
  rt::backend_options fp32{.kind = "cuda"};
  try {  // no GPU: skip; anything else (a missing cuBLASLt) fails
    rt::local_world w(1);
    w.run([&](rt::communicator& c) { (void)rt::make_backend(fp32, c); });
  } catch (const to::error& e) {
    if (std::string(e.what()).find("no CUDA device found") == std::string::npos) throw;
    std::printf("backend_check: skipped: %s\n", e.what());
    return 77;
  }
  std::printf("%-24s %-8s %12s  %s\n", "case", "result", "figure", "bound");
  std::map<std::string, result> gpu;
  for (const auto& c : cases()) {
    auto it = ref.find(c.name);
    if (it == ref.end()) {
      row(c.name, "FAIL", 0, "no CPU reference for this case");
      continue;
    }
    if (!runs(c.name, [&] { gpu[c.name] = train(c, fp32); })) continue;
    const auto& g = gpu[c.name];
    const double d = max_rel(g, it->second);
    row(c.name + " vs cpu", d <= 1e-4 ? "ok" : "FAIL", d, "losses+weights rel <= 1e-4 after 3 steps");
    const double m = std::fabs(double(g.peak) / double(it->second.peak) - 1);
    row(c.name + " memory", m <= 0.01 ? "ok" : "FAIL", m, "peak requested bytes within 1 % of cpu");
    const std::string one = c.name.substr(0, c.name.find('.')) + ".1rank";
    if (c.name != one && !c.pipe && gpu.count(one)) {
      const double r = max_rel(g, gpu[one]);
      row(c.name + " vs 1rank", r <= 1e-5 ? "ok" : "FAIL", r, "rel <= 1e-5 (ranks on one GPU)");
    }
  }
  for (const char* model : {"mlp", "gpt", "cnn", "moe"}) {  // bf16-mixed loss curve vs fp32
    const auto g = graph_of(model);
    rt::backend_options bf{.kind = "cuda", .prec = to::precisions::bf16_mixed};
    result a, b;
    if (!runs(std::string(model) + ".bf16", [&] {
          a = train_with<rt::trainer>(g, data_parallel(g, 1), 20, fp32);
          b = train_with<rt::trainer>(g, data_parallel(g, 1), 20, bf);
        }))
      continue;
    double d = 0;
    for (std::size_t s = 0; s < a.losses.size(); ++s)
      d = std::max(d, std::fabs(double(b.losses[s]) - a.losses[s]) / std::fabs(double(a.losses[s])));
    row(std::string(model) + ".bf16 vs fp32", d <= 0.02 ? "ok" : "FAIL", d, "loss within 2 % over 20 steps");
  }
  {  // a rank that skips a collective: its peer times out naming the collective
    rt::backend_options quick = fp32;
    quick.timeout = std::chrono::milliseconds(1500);
    rt::local_world w(2, std::chrono::seconds(5));
    std::string what;
    try {
      w.run([&](rt::communicator& c) {
        auto be = rt::make_backend(quick, c);
        auto dp = be->make_data_plane(c);
        rt::buffer x = be->upload(std::vector<float>(16, 1.f));
        if (c.rank() == 0) dp->all_reduce({0, 1}, x);  // rank 1 skips it
      });
    } catch (const to::error& e) {
      what = e.what();
    }
    const bool ok = what.find("all_reduce") != std::string::npos && what.find("timed out") != std::string::npos;
    row("skipped collective", ok ? "ok" : "FAIL", 0, "error names the collective: " + what.substr(0, 60));
  }
  {  // a device that does not exist: one line naming the devices there are
    rt::backend_options far = fp32;
    far.device = 4096;
    const std::string what = error_of([&] {
      rt::local_world w(1);
      w.run([&](rt::communicator& c) { (void)rt::make_backend(far, c); });
    });
    const bool ok = what.find("does not exist") != std::string::npos &&
                    what.find("--device 0..") != std::string::npos && what.find('\n') == std::string::npos;
    row("no such device", ok ? "ok" : "FAIL", 0, "one line naming the fix: " + what.substr(0, 60));
  }
  {  // a plan that does not fit: another pool holds all but 2-3 GiB of the GPU, and a
     // model with 4 GiB of weights, gradients and Adam state fails with one line
     // naming the device, the sizes and the fix. The first pass counts the GiB the
     // device can give; its pool is then destroyed (a pool keeps what it reserved), and
     // the second holds two fewer, which leaves room for the trainer's handles and
     // workspace but not for its model.
    rt::local_world w(1);
    std::unique_ptr<rt::backend> hog;
    std::vector<rt::buffer> held;
    auto fill = [&](std::size_t most) {
      w.run([&](rt::communicator& c) {
        hog = rt::make_backend(fp32, c);
        try {
          while (held.size() < most) held.push_back(hog->scratch(std::size_t(1) << 28));  // 1 GiB at a time
        } catch (const to::error&) {
        }
      });
    };
    fill(std::size_t(-1));
    const std::size_t gib = held.size();
    held.clear();
    hog.reset();
    fill(gib > 2 ? gib - 2 : 0);
    const auto g = to::lower<big>();
    const std::string what = error_of([&] {
      rt::optimizer_options adam;
      adam.type = rt::optimizer_options::kind::adam;
      rt::trainer tr(g, data_parallel(g, 1), w, adam, 1234, fp32);
      (void)tr.step(make_batch(g, 1));
    });
    held.clear();
    hog.reset();
    const bool ok = what.find("out of memory") != std::string::npos &&
                    what.find("needs less memory") != std::string::npos && what.find('\n') == std::string::npos;
    row("out of memory", ok ? "ok" : "FAIL", 0, "one line naming the fix: " + what.substr(0, 60));
  }
  std::printf("backend_check: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}
#endif
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 2 ? argv[1] : "", path = argc > 2 ? argv[2] : "";
  try {
#ifdef TENSOROPT_CHECK_CPU
    if (mode == "--write") {
      std::ofstream out(path);
      if (!out) throw to::invalid_argument("cannot write '" + path + "'");
      for (const auto& c : cases()) write_result(out, c.name, train(c, {}));
      std::printf("backend_check: wrote the CPU reference of %zu cases to %s\n", cases().size(), path.c_str());
      return 0;
    }
    std::fprintf(stderr, "usage: backend_check --write FILE (this build has the CPU backend)\n");
#else
    if (mode == "--check") return check(path);
    std::fprintf(stderr, "usage: backend_check --check FILE (this build has the CUDA backend)\n");
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "backend_check: %s\n", e.what());
    return 1;
  }
  return 2;
}
