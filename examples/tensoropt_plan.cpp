// tensoropt-plan: the planner program. Computes the time-memory frontier of a zoo
// model or a gpt:/bert: spec on a cluster (or of a problem file), prints it, and
// writes JSON, SVG and HTML. `--help` lists the flags (plan/cli.hpp).
#include <tensoropt/tensoropt.hpp>
#include <tensoropt/core/output_file.hpp>
#include <tensoropt/core/input_file.hpp>
#include <tensoropt/cost/device_spec.hpp>
#include <tensoropt/models/model_spec.hpp>
#include <tensoropt/models/zoo.hpp>
#include <tensoropt/plan/cli.hpp>
#include <tensoropt/plan/device_file.hpp>
#include <tensoropt/plan/explore.hpp>
#include <tensoropt/plan/pipeline_export.hpp>
#include <tensoropt/plan/pipeline_plan_file.hpp>
#include <tensoropt/plan/pipeline_planner.hpp>
#include <tensoropt/plan/pipeline_report.hpp>
#include <tensoropt/plan/pipeline_spec.hpp>
#include <tensoropt/plan/planner.hpp>
#include <tensoropt/plan/published_svg.hpp>
#include <tensoropt/plan/strategy_spec.hpp>
#include <tensoropt/search/pipeline_problem_json.hpp>
#include <tensoropt/search/pipeline_solve.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <iostream>
#include <limits>
#include <optional>

namespace to = tensoropt;
using namespace to::literals;

namespace {

void write_file(const std::string& path, const std::string& text, const char* what) {
  to::write_output_file(path, text, what);
  std::printf("wrote %s: %s\n", what, path.c_str());
}

// Every output path is checked before the search starts; with one of them "-" (stdout)
// the program's own messages go to stderr.
void prepare_outputs(const to::plan_cli& c) {
  int to_stdout = 0;
  for (auto [path, what] : {std::pair{&c.frontier_json, "frontier"}, {&c.problem_json, "problem"},
                            {&c.svg, "plot"}, {&c.html, "report"}, {&c.save_plan, "plan"}}) {
    if (path->empty()) continue;
    to::check_output_path(*path, what);
    to_stdout += to::detail::is_stdout_path(*path);
  }
  if (to_stdout > 1) throw to::invalid_argument("only one output can go to stdout ('-')");
  if (to_stdout) to::reserve_stdout_for_data();
}

std::string read_file(const std::string& path) {
  std::string why;
  auto text = to::read_input_file(path, why);
  if (!text) throw to::invalid_argument("cannot open '" + path + "' (" + why + ")");
  return std::move(*text);
}

void list_models() {
  std::printf("%-16s %-9s %9s %7s %5s  %-10s %s\n", "name", "family", "params", "batch", "gpus", "gpu",
              "spec (--model accepts it; change any key)");
  for (auto& m : to::models::list())
    std::printf("%-16.*s %-9.*s %8.2fB %7lld %5lld  %-10.*s %s\n", int(m.name.size()), m.name.data(),
                int(m.family.size()), m.family.data(), m.parameters / 1e9, (long long)m.batch, (long long)m.gpus,
                int(m.gpu.size()), m.gpu.data(), m.spec.c_str());
}

/// The device of --gpu (a preset name or a gpu: spec) or --gpu-file, else the model's preset.
to::device gpu_of(const to::plan_cli& c, std::string_view model_default) {
  if (!c.gpu_file.empty()) return to::device_of(to::load_device_file(c.gpu_file));
  if (to::is_device_spec(c.gpu)) return to::make_device(to::parse_device_spec(c.gpu), "custom");
  return to::gpus::find(c.gpu.empty() ? model_default : std::string_view(c.gpu));
}

/// The model named by --model: a zoo entry, or a gpt:/bert: spec (its defaults:
/// one node of 8 x A100-80GB, as the default job), and its graph.
struct chosen_model {
  to::models::model_info info;
  to::op_graph graph;
};
chosen_model resolve_model(const to::plan_cli& c) {
  if (!to::models::is_model_spec(c.model)) {
    const auto& m = to::models::find(c.model);
    return {m, m.lower()};
  }
  const auto spec = to::models::parse_model_spec(c.model);
  static const std::string name = spec.text();
  to::models::model_info i;
  i.name = name;
  i.family = to::models::name_of(spec.kind);
  i.description = "a model given as a spec";
  i.batch = spec.config.batch;
  i.gpus = 8;
  i.gpus_per_node = 8;
  i.gpu = "a100-80gb";
  i.spec = name;
  chosen_model out{i, spec.lower()};
  out.info.parameters = out.graph.parameter_count();
  return out;
}

void list_gpus() {
  std::printf("%-12s %10s %12s %12s  %s\n", "name", "memory", "peak bf16", "HBM",
              "spec (--gpu accepts it; change any key)");
  for (auto* d : to::gpus::all)
    std::printf("%-12.*s %10s %9.0f TF %8.0f GB/s  %s\n", int(d->name.size()), d->name.data(),
                to::format_bytes(d->capacity).c_str(), d->peak_half / to::tflop_per_s(1), d->memory_bw / to::gb_per_s(1),
                d == &to::gpus::cpu ? "(calibrated host defaults)" : to::to_spec(*d).c_str());
}

void print_graph_summary(const to::op_graph& g) {
  std::size_t params_ops = 0;
  for (auto& op : g.ops) params_ops += !op.params.empty();
  std::printf("model %s: %zu ops (%zu with parameters), %zu edges, %.3g parameters, %.3g FLOPs forward "
              "per iteration (batch %lld)\n",
              g.name.c_str(), g.ops.size(), params_ops, g.edges().size(), g.parameter_count(), g.fwd_flops(),
              (long long)g.batch);
}

/// --all-points: every point in the table, plot and HTML instead of the 1 % cover.
void show_points(const to::plan_cli& c, to::frontier_report& rep) {
  if (!c.all_points) return;
  rep.display_tolerance = 0;
  rep.max_shown = std::size_t(-1);
}

/// The table, and how to see the points a cover leaves out.
void print_table(const to::frontier_report& rep) {
  std::fputs(to::format_table(rep).c_str(), stdout);
  if (to::shown(rep).rows.size() < rep.points.size())
    std::printf("(--all-points shows every plan; --frontier-json writes every plan)\n");
}

/// --check-frontier F --problem-json P: every point of F re-costed from P (a problem or a
/// pipeline problem file) must equal its time and memory.
int check_frontier_file(const to::plan_cli& c) {
  const std::string where = "frontier '" + c.check_frontier + "' against '" + c.problem_json + "': ";
  try {
    const auto entries = to::read_frontier_entries(read_file(c.check_frontier));
    const auto j = to::detail::parse_json_text(read_file(c.problem_json), "problem");
    const bool piped = j.is_object() && j.contains("format") && j["format"] == to::pipeline_problem_format;
    std::size_t checked = entries.size(), stages = 0;
    if (piped) {
      to::check_frontier(to::pipeline_problem_from_json(j), entries);
      for (auto& e : entries) stages += e.stages ? e.stages->choice.size() : 0;
    } else {
      const auto p = to::problem_from_json(j);
      std::vector<to::frontier_point> pts;
      std::vector<int> ks;
      for (std::size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].stages)
          throw to::format_error("points[" + std::to_string(i) + "] has pipeline stages; check it against the "
                                 "tensoropt-pipeline-problem/1 file written with it");
        pts.push_back(entries[i].point);
        if (std::find(ks.begin(), ks.end(), pts.back().micro_batches) == ks.end()) ks.push_back(pts.back().micro_batches);
      }
      if (!c.micro_batches && ks.size() > 1)
        throw to::invalid_argument("the frontier holds points of " + std::to_string(ks.size()) + " micro-batch counts "
                                   "and a problem file is the problem of one: add --micro-batches K to check the points of K");
      const int k = c.micro_batches ? int(*c.micro_batches) : ks.front();
      checked = std::size_t(std::count_if(pts.begin(), pts.end(), [&](auto& q) { return q.micro_batches == k; }));
      if (checked == 0)
        throw to::invalid_argument("no point of the frontier has " + std::to_string(k) + " micro-batches");
      to::check_frontier(p, pts, k);
    }
    std::printf("checked %zu of %zu points of %s against %s%s: each re-costs exactly to its time and memory\n", checked,
                entries.size(), c.check_frontier.c_str(), c.problem_json.c_str(),
                piped ? (" (" + std::to_string(stages) + " stages)").c_str() : "");
  } catch (const to::format_error& e) {
    throw to::format_error(where + e.what());
  }
  return 0;
}

/// --frontier-json / --problem-json of pipeline points: the pipeline problem and the frontier
/// indexing it, checked against each other before they are written.
void write_pipeline_files(const to::plan_cli& c, const to::op_graph& g, const to::cluster& cl,
                          const to::build_options& bo, const std::vector<to::pipeline_point>& pts) {
  if (c.frontier_json.empty() && c.problem_json.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const auto ex = to::export_pipeline(g, cl, bo, pts);
  try {
    to::check_frontier(ex.problem, ex.points);
  } catch (const to::format_error& e) {
    throw to::runtime_error(std::string("internal error: a pipeline point does not re-cost from its stage problems: ") +
                            e.what());
  }
  if (!c.quiet)
    std::fprintf(stderr, "  pipeline problem: %zu partitions, %zu stage problems, built and checked in %.2f s\n",
                 ex.problem.partitions.size(), ex.problem.problems.size(), to::detail::seconds_since(t0));
  if (!c.problem_json.empty()) write_file(c.problem_json, to::write_pipeline_problem_json(ex.problem), "problem");
  if (!c.frontier_json.empty()) write_file(c.frontier_json, to::write_frontier_json(ex.points), "frontier");
}

/// --solve of a pipeline problem file: the frontier over its partitions, with stages.
int solve_pipeline_file(const to::plan_cli& c, const nlohmann::json& j) {
  const auto pp = [&] {
    try {
      return to::pipeline_problem_from_json(j);
    } catch (const to::format_error& e) {
      throw to::format_error("--solve " + c.solve + ": " + e.what());
    }
  }();
  if (pp.partitions.empty()) throw to::infeasible("pipeline problem " + c.solve + " has no partitions: nothing to solve");
  if (to::parse_search_mode(c.mode) == to::search_mode::fast)
    throw to::invalid_argument("--mode fast does not apply to a pipeline problem file (its stage problems declare no "
                               "repeated blocks): drop --mode fast");
  const auto t0 = std::chrono::steady_clock::now();
  to::solve_options so;
  so.epsilon = c.epsilon;
  const auto points = to::solve_pipeline_problem(pp, so);
  const double secs = to::detail::seconds_since(t0);
  std::printf("pipeline problem %s: %zu partitions, %zu stage problems; solved in %.3f s: %zu points%s\n",
              c.solve.c_str(), pp.partitions.size(), pp.problems.size(), secs, points.size(),
              c.epsilon > 0 ? "" : " (exact over these partitions)");
  to::frontier_report rep;
  rep.model = c.solve;
  rep.cluster = "pipeline problem file";
  rep.search_seconds = secs;
  for (auto& e : points) {
    to::frontier_report::point q;
    q.time = to::seconds_of(e.point) / 1_s;
    q.memory = to::bytes_of(e.point) / 1_B;
    q.micro_batches = e.point.micro_batches;
    q.pipeline_degree = e.stages->degree;
    if (q.pipeline_degree > 1) q.stage_begin = e.stages->stage_begin;
    q.summary = "partition " + std::to_string(e.stages->partition) + ": pp " + std::to_string(e.stages->degree);
    rep.points.push_back(std::move(q));
  }
  show_points(c, rep);
  if (c.memory_budget) {
    (void)to::detail::checked_cost(*c.memory_budget * to::gib, "--memory-budget (in bytes)");
    const double budget = (*c.memory_budget * 1_GiB).value;
    for (std::size_t i = 0; i < points.size(); ++i)
      if (double(points[i].point.memory) <= budget) rep.chosen = int(i);
    if (rep.chosen < 0)
      throw to::infeasible("no point fits " + to::format_bytes(budget) + "; the least memory is " +
                           to::format_bytes(double(points.front().point.memory)));
    rep.budget = budget;
  }
  print_table(rep);
  if (!c.frontier_json.empty()) write_file(c.frontier_json, to::write_frontier_json(points), "frontier");
  if (!c.svg.empty()) write_file(c.svg, to::to_svg(rep), "plot");
  if (!c.html.empty()) write_file(c.html, to::to_html(rep), "report");
  return 0;
}

int solve_file(const to::plan_cli& c) {
  const auto text = read_file(c.solve);
  // a reader's message names the field ("edges[3].time[2]: ..."); the file is named here
  const auto in_file = [&](auto&& read) {
    try {
      return read();
    } catch (const to::format_error& e) {
      throw to::format_error("--solve " + c.solve + ": " + e.what());
    }
  };
  const auto j = in_file([&] { return to::detail::parse_json_text(text, "problem"); });
  if (j.is_object() && j.contains("format") && j["format"] == to::pipeline_problem_format) return solve_pipeline_file(c, j);
  const auto file = in_file([&] { return to::problem_file_from_json(j); });
  const auto& p = file.prob;
  const auto t0 = std::chrono::steady_clock::now();
  to::solve_options so;
  so.epsilon = c.epsilon;
  // A file is solved exactly unless --mode fast asks for the declared repeated block to be
  // composed by powering (auto stays exact: outside tools compare --solve with their own).
  const auto mode = to::parse_search_mode(c.mode);
  std::string mode_line;
  to::frontier_result r;
  if (mode == to::search_mode::fast) {
    const auto rb = to::largest_repeat(file.repeats);
    if (rb.instances.empty())
      throw to::invalid_argument("--mode fast composes a repeated block of 3 or more instances by powering; " + c.solve +
                                 (file.repeats.empty() ? " declares no repeated block (a tensoropt-problem/2 file's "
                                                         "\"repeats\", written by --problem-json for models with repeat<>)"
                                                       : " declares none with 3 or more instances") +
                                 ": drop --mode fast to solve it exactly");
    const auto why = to::check_repeated(p, rb);
    if (!why.empty())
      throw to::invalid_argument("--mode fast: the declared block of " + std::to_string(rb.instances.size()) +
                                 " instances cannot be composed by powering: " + why +
                                 "; drop --mode fast to solve it exactly");
    r = to::solve_repeated(p, rb, so);
    mode_line = r.note + "; " + to::check_restriction(p, r, std::numeric_limits<to::cost_t>::max()).describe();
  } else {
    r = to::solve(p, so);
    if (!file.repeats.empty())
      mode_line = std::string(mode == to::search_mode::exact ? "exact mode (asked)" : "exact mode (--solve is exact "
                                                                                     "unless --mode fast)") +
                  "; the file declares " + std::to_string(file.repeats.size()) + " repeated block(s)";
  }
  const double secs = to::detail::seconds_since(t0);
  std::size_t configs = 0;
  for (auto& n : p.nodes) configs += n.configs.size();
  std::printf("problem %s: %zu nodes, %zu configs, %zu edges; solved in %.3f s: %zu points%s\n", c.solve.c_str(),
              p.nodes.size(), configs, p.edges.size(), secs, r.points.size(), r.exact ? " (exact)" : "");
  if (!mode_line.empty()) std::printf("search: %s\n", mode_line.c_str());
  const auto points = to::label_points(p, r, c.micro_batches ? int(*c.micro_batches) : 1);
  to::frontier_report rep;
  rep.model = c.solve;
  rep.cluster = "problem file";
  rep.search_seconds = secs;
  for (auto& e : points)
    rep.points.push_back({to::seconds_of(e) / 1_s, to::bytes_of(e) / 1_B, e.micro_batches, e.choice, e.labels,
                          std::to_string(e.choice.size()) + " nodes"});
  for (auto& n : p.nodes) rep.op_names.push_back(n.name);
  show_points(c, rep);
  if (c.memory_budget) {
    (void)to::detail::checked_cost(*c.memory_budget * to::gib, "--memory-budget (in bytes)");
    const to::bytes budget = *c.memory_budget * 1_GiB;
    const auto q = to::fastest_within(r, budget);
    if (!q) throw to::infeasible(to::no_fit_message(r.points, budget));
    rep.chosen = int(*q);
    rep.budget = budget / 1_B;
  }
  print_table(rep);
  if (!c.frontier_json.empty()) write_file(c.frontier_json, to::write_frontier_json(points), "frontier");
  if (!c.svg.empty()) write_file(c.svg, to::to_svg(rep), "plot");
  if (!c.html.empty()) write_file(c.html, to::to_html(rep), "report");
  return 0;
}

to::cluster make_cluster(const to::plan_cli& c, const to::models::model_info& m, long devices_override = -1) {
  const auto gpu = gpu_of(c, m.gpu);
  if (devices_override > 0) {
    const long per = std::min<long>(devices_override, c.gpus_per_node ? *c.gpus_per_node : long(m.gpus_per_node));
    if (devices_override % per)
      throw to::invalid_argument("device count " + std::to_string(devices_override) +
                                 " is not a whole number of nodes of " + std::to_string(per) + " devices");
    return to::cluster::nodes(devices_override / per).gpus_per_node(per).gpu(gpu);
  }
  if (c.nodes) return to::cluster::nodes(*c.nodes).gpus_per_node(*c.gpus_per_node).gpu(gpu);
  if (c.devices) return to::cluster::nodes(1).gpus_per_node(*c.devices).gpu(gpu);
  if (!c.model_given()) return to::cluster::nodes(1).gpus_per_node(8).gpu(to::gpus::a100_80gb);  // the default job
  const long per = std::min<long>(long(m.gpus), long(m.gpus_per_node));
  return to::cluster::nodes(long(m.gpus) / per).gpus_per_node(per).gpu(gpu);
}

to::planner_options make_options(const to::plan_cli& c, const to::cluster& cl) {
  to::planner_options o;
  to::apply_stack(c, o.build);
  // Plans that do not fit the device are of no use: the search drops them early.
  o.solve.memory_limit = to::to_byte_count(cl.gpu_spec.capacity);
  o.build.prec = to::parse_precision(c.precision);
  if (c.micro_batches) o.micro_batches = {to::index_t(*c.micro_batches)};
  o.solve.epsilon = c.epsilon;
  o.mode = to::parse_search_mode(c.mode);
  if (c.threads) o.threads = std::size_t(*c.threads);
  o.baselines = !c.no_baselines;
  if (c.all_layouts) o.layout_lanes = 0;
  if (!c.quiet) o.progress = [](const std::string& s) { std::fprintf(stderr, "  %s\n", s.c_str()); };
  return o;
}

int explore_devices(const to::plan_cli& c, const to::models::model_info& m, const to::op_graph& g) {
  std::optional<to::bytes> budget;
  std::optional<to::seconds> time_target;
  if (c.memory_budget) budget = *c.memory_budget * 1_GiB;
  if (c.time_target) time_target = *c.time_target * 1_s;
  std::vector<to::index_t> counts(c.device_counts.begin(), c.device_counts.end());
  auto o = make_options(c, make_cluster(c, m, counts.front()));
  std::printf("resource exploration for %.*s (budget %s%s), stack: %s\n", int(m.name.size()), m.name.data(),
              budget ? to::format_bytes(*budget).c_str() : "device capacity",
              time_target ? (", time target " + to::format_seconds(*time_target)).c_str() : "",
              o.build.cost().stack().c_str());
  if (!c.quiet) o.progress = nullptr;
  const auto ex = to::explore_device_counts(
      g, counts, [&](to::index_t n) { return make_cluster(c, m, long(n)); }, budget, time_target, o);
  std::printf("%7s  %-20s %10s %10s %10s %10s %6s\n", "devices", "cluster", "least mem", "fastest", "fit: time",
              "fit: mem", "points");
  for (auto& r : ex.rows) {
    if (r.points == 0) {
      std::printf("%7lld  %-20s %s\n", (long long)r.devices, r.cl.describe().c_str(), "nothing fits the device");
      continue;
    }
    std::printf("%7lld  %-20s %10s %10s %10s %10s %6zu%s\n", (long long)r.devices, r.cl.describe().c_str(),
                to::format_bytes(r.least_memory).c_str(), to::format_seconds(r.fastest_time).c_str(),
                r.fit >= 0 ? to::format_seconds(r.fit_time).c_str() : "no fit",
                r.fit >= 0 ? to::format_bytes(r.fit_memory).c_str() : "-", r.points,
                r.devices == ex.fewest ? "  <- fewest" : "");
  }
  if (ex.fewest > 0) std::printf("fewest devices that fit: %lld\n", (long long)ex.fewest);
  else std::printf("no listed device count fits; try more devices, micro-batches or a larger budget\n");
  return 0;
}

/// --strategy SPEC: evaluates one plan; --frontier-json writes it as a one-point
/// frontier indexing the problem written by --problem-json (built without dropping
/// locally dominated configs, so the SPEC's configs are in it).
int evaluate_strategy(const to::plan_cli& c, const to::op_graph& g, const to::cluster& cl,
                      const std::string& model_spec) {
  const auto s = to::parse_strategy_spec(c.strategy);
  to::build_options bo;
  bo.prec = to::parse_precision(c.precision);
  to::apply_stack(c, bo);
  bo.micro_batches = c.micro_batches ? to::index_t(*c.micro_batches) : 1;
  if (g.batch % bo.micro_batches != 0)
    throw to::invalid_argument("--micro-batches " + std::to_string(bo.micro_batches) + " does not divide the batch " +
                               std::to_string(g.batch));
  if (s.pp > 1) {  // a pipeline plan: balanced stages, each on its stage's mesh
    const auto pp = to::plan_from_spec(g, cl.mesh, s, bo.micro_batches);
    const auto pc = to::evaluate_pipeline(g, pp, cl, bo);
    const double t = double(pc.time) / to::ps_per_second;
    std::printf("strategy %s on %s, %lld micro-batches, precision %s, stack: %s: %s\n", c.strategy.c_str(),
                cl.describe().c_str(), (long long)bo.micro_batches, std::string(bo.prec.name).c_str(),
                bo.cost().stack().c_str(), to::summarize_pipeline(g, pp).c_str());
    std::printf("predicted (1F1B): %s per iteration, %s on the fullest device (stage %d, %s), model FLOPs utilization "
                "%.1f %%\n",
                to::format_seconds(t).c_str(), to::format_bytes(double(pc.memory)).c_str(), pc.peak,
                double(pc.memory) <= cl.gpu_spec.capacity.value ? "fits" : "does NOT fit the device",
                100 * to::model_flops_utilization(g, t, cl, bo.prec));
    std::printf("%-8s %10s %14s %12s\n", "stage", "first op", "time", "memory");
    for (std::size_t i = 0; i < pc.stages.size(); ++i)
      std::printf("%-8zu %10zu %14s %12s\n", i, pp.stage_begin[i],
                  to::format_seconds(double(pc.stages[i].time) / to::ps_per_second).c_str(),
                  to::format_bytes(double(pc.stages[i].memory)).c_str());
    std::printf("sends on the critical path: %s\n", to::format_seconds(double(pc.sends) / to::ps_per_second).c_str());
    // a one-point frontier with stages, indexing stage problems that keep every config
    to::build_options all = bo;
    all.drop_dominated = false;
    to::pipeline_point q{pc.time, pc.memory, pp};
    write_pipeline_files(c, g, cl, all, {q});
    if (!c.save_plan.empty()) {  // tensoropt-plan/2, its memory the runtime peak as the planner's --pipeline writes it
      const auto peak = to::predicted_pipeline_peak(g, pp, cl, bo);
      q.peak = std::max<to::cost_t>(1, to::cost_t(std::ceil(peak.peak())));
      std::printf("predicted runtime peak: %s on the fullest stage (stage %d; additive %s)\n",
                  to::format_bytes(double(q.peak)).c_str(), peak.stage, to::format_bytes(double(pc.memory)).c_str());
      write_file(c.save_plan, to::write_plan_json(to::make_pipeline_plan_file(g, cl, bo, q, model_spec)), "plan");
    }
    return 0;
  }
  const auto ev = to::evaluate_spec(s, g, cl, bo);
  std::printf("strategy %s on %s, %lld micro-batch(es), precision %s, stack: %s\n", c.strategy.c_str(),
              cl.describe().c_str(), (long long)bo.micro_batches, std::string(bo.prec.name).c_str(),
              bo.cost().stack().c_str());
  std::printf("predicted: %s per iteration, %s per device (%s), model FLOPs utilization %.1f %%\n",
              to::format_seconds(ev.time).c_str(), to::format_bytes(ev.memory).c_str(),
              ev.memory <= cl.gpu_spec.capacity.value ? "fits" : "does NOT fit the device", 100 * ev.mfu);
  std::printf("%-40s %12s %12s\n", "op (with its incoming edges)", "time", "memory");
  for (auto& o : ev.ops)
    if (o.time > 0 || o.memory > 0)
      std::printf("%-40s %12s %12s\n", o.name.c_str(), to::format_seconds(o.time).c_str(),
                  to::format_bytes(o.memory).c_str());
  if (!c.frontier_json.empty() || !c.problem_json.empty()) {
    bo.drop_dominated = false;
    const auto bp = to::build_problem(g, cl, bo);
    to::frontier_point e;
    e.micro_batches = int(bo.micro_batches);
    for (std::size_t i = 0; i < ev.configs.size(); ++i) {
      const int k = to::config_index(bp, int(i), ev.configs[i]);
      if (k < 0)
        throw to::invalid_argument("--strategy: op '" + g.ops[i].name + "' gets a config the problem builder does "
                                   "not enumerate (bounding rules); it cannot be written as a frontier point");
      e.choice.push_back(k);
      e.labels.push_back(bp.prob.nodes[i].configs[std::size_t(k)].label);
    }
    const auto pc = to::cost_of(bp.prob, e.choice);
    e.time = pc.time;
    e.memory = pc.memory;
    if (!c.problem_json.empty())
      write_file(c.problem_json, to::write_problem_json(bp.prob, to::repeat_blocks(g)), "problem");
    if (!c.frontier_json.empty()) write_file(c.frontier_json, to::write_frontier_json({e}), "frontier");
  }
  if (!c.save_plan.empty()) {  // tensoropt-plan/1 (one stage), its memory the runtime peak as the planner writes it
    const to::op_graph mg = to::with_batch(g, g.batch / bo.micro_batches);
    to::pipeline_plan one;
    one.degree = 1;
    one.micro_batches = int(bo.micro_batches);
    one.stage_begin = {0};
    one.mesh = cl.mesh;
    one.configs = ev.configs;
    const auto cost = to::evaluate(mg, ev.configs, cl, bo);
    to::pipeline_point q{cost.time, cost.memory, one};
    q.peak = std::max<to::cost_t>(1, to::cost_t(std::ceil(to::predicted_peak(mg, ev.configs, cl, bo).peak())));
    std::printf("predicted runtime peak: %s (additive %s)\n", to::format_bytes(double(q.peak)).c_str(),
                to::format_bytes(double(q.memory)).c_str());
    write_file(c.save_plan, to::write_plan_json(to::make_pipeline_plan_file(g, cl, bo, q, model_spec)), "plan");
  }
  return 0;
}

/// --pipeline: the frontier with pipeline stages, the Megatron 3D baselines, the chosen plan.
int plan_with_stages(const to::plan_cli& c, const to::models::model_info& m, const to::op_graph& g,
                     const to::cluster& cl, const to::planner_options& po) {
  to::pipeline_options o;
  o.build = po.build;
  o.micro_batches = po.micro_batches;
  o.solve = po.solve;
  o.mode = po.mode;
  o.threads = po.threads;
  o.progress = po.progress;
  o.runtime_peak = po.runtime_peak;
  const auto pf = to::plan_pipeline_frontier(g, cl, o);
  std::printf("frontier with pipeline stages: %zu plans that fit %s, %zu jobs (pipeline degree x micro-batch count), "
              "%zu stage searches, in %.2f s%s\n",
              pf.points.size(), to::format_bytes(cl.gpu_spec.capacity).c_str(), pf.jobs, pf.stage_searches, pf.seconds,
              pf.exact ? " (exact)" : " (balanced stages or approximate stage searches)");
  for (const auto& n : pf.notes) std::printf("search: %s\n", n.c_str());
  std::printf("memory: %s\n", pf.memory_note.c_str());
  if (pf.points.empty())
    throw to::infeasible("no plan of " + std::string(m.name) + " fits " + to::format_bytes(cl.gpu_spec.capacity) +
                         " per device on " + cl.describe() + ", with or without pipeline stages");
  std::vector<to::baseline_result> baselines;
  if (!c.no_baselines) {
    const auto ks = o.micro_batches.empty() ? to::detail::legal_micro_batches(g) : o.micro_batches;
    // additive memory on both sides: the baselines against every searched point
    for (auto& b : to::megatron_3d_baselines(g, cl, o.build, pf.searched.empty() ? pf.points : pf.searched, ks))
      if (b.valid) baselines.push_back(std::move(b));
  }
  const to::pipeline_point* chosen = &pf.points.back();
  std::optional<to::bytes> budget;
  if (c.memory_budget) {
    budget = *c.memory_budget * 1_GiB;
    chosen = nullptr;
    for (const auto& q : pf.points)
      if (double(q.reported_memory()) <= budget->value) chosen = &q;
    if (!chosen)
      throw to::infeasible("no plan fits " + to::format_bytes(*budget) + " per device; the least "
                           "memory with stages is " + to::format_bytes(double(pf.points.front().reported_memory())));
  }
  auto rep = to::make_pipeline_report(g, cl, o.build, pf, std::string(m.name), int(chosen - pf.points.data()), budget,
                                      std::move(baselines));
  show_points(c, rep);
  std::printf("\n");
  print_table(rep);
  std::printf("\nchosen plan #%td (%s): %s on the fullest device (%s), %s per iteration, micro-batches %d\n  %s\n",
              chosen - pf.points.data(), c.memory_budget ? "fastest within the budget" : "fastest that fits",
              to::format_bytes(double(chosen->reported_memory())).c_str(),
              chosen->peak > 0 ? "predicted runtime peak" : "additive memory",
              to::format_seconds(double(chosen->time) / to::ps_per_second).c_str(), chosen->plan.micro_batches,
              to::summarize_pipeline(g, chosen->plan).c_str());
  if (chosen->peak == 0 && o.runtime_peak)  // the frontier was too large to replay: this plan alone
    std::printf("  predicted runtime peak of this plan: %s on the fullest stage\n",
                to::format_bytes(to::predicted_pipeline_peak(g, chosen->plan, cl, o.build).peak()).c_str());
  write_pipeline_files(c, g, cl, o.build, pf.searched.empty() ? pf.points : pf.searched);  // every searched point
  if (!c.svg.empty()) write_file(c.svg, to::to_svg(rep), "plot");
  if (!c.html.empty()) write_file(c.html, to::to_html(rep), "report");
  if (!c.save_plan.empty())
    write_file(c.save_plan,
               to::write_plan_json(to::make_pipeline_plan_file(g, cl, o.build, *chosen,
                                                               m.spec.empty() ? std::string(m.name) : m.spec)),
               "plan");
  return 0;
}

/// --published-runs: the cost model against the published runs (plan/published_check.hpp).
int check_published(const to::plan_cli& c) {
  const auto rows = to::check_published_runs();
  std::printf("the cost model against %zu published runs (include/tensoropt/cost/published_runs.hpp: sources, "
              "switches and reasons), each evaluated with its strategy SPEC and software stack as --strategy "
              "evaluates it\n\n",
              rows.size());
  std::printf("%-12s %-34s %-10s %10s %10s %8s  %s\n", "list", "run", "device", "measured", "predicted", "error",
              "held to");
  for (const auto& r : rows)
    std::printf("%-12s %-34s %-10s %10s %10s %+7.1f%%  %s%s%s\n", to::to_string(r.list), r.name.c_str(),
                r.device.c_str(), to::format_seconds(r.measured).c_str(), to::format_seconds(r.predicted).c_str(),
                100 * r.error(), r.held_to().c_str(), r.ok() ? "" : "  MISSED", r.confirmed ? "" : " (unconfirmed)");
  std::printf("\n");
  for (const auto l : to::published_lists) {
    const auto sum = to::summarize(rows, l);
    std::printf("%-12s %2zu rows, median |error| %4.1f %%, max %5.1f %%%s\n", to::to_string(l), sum.rows,
                100 * sum.median, 100 * sum.max,
                l == to::published_list::main
                    ? to::detail::fmt(" (median held to %g %%)", 100 * to::published_median_tolerance).c_str()
                    : "");
  }
  if (!c.svg.empty()) write_file(c.svg, to::published_runs_svg(rows), "plot");
  if (const auto missed = to::published_check_misses(rows); !missed.empty()) {
    std::string list;
    for (const auto& m : missed) list += (list.empty() ? "" : ", ") + m;
    std::fprintf(stderr, "tensoropt-plan: --published-runs: not within what it is held to: %s\n", list.c_str());
    return 1;
  }
  std::printf("every held row meets its tolerance\n");
  return 0;
}

int run(int argc, char** argv) {
  const auto c = to::parse_plan_cli(argc, argv);
  if (c.help) { std::fputs(to::plan_cli_usage().c_str(), stdout); return 0; }
  if (c.list_models) { list_models(); return 0; }
  if (c.list_gpus) { list_gpus(); return 0; }
  if (!c.check_frontier.empty()) return check_frontier_file(c);
  prepare_outputs(c);
  if (c.published_runs) return check_published(c);
  if (!c.solve.empty()) return solve_file(c);

  if (!c.gpu.empty() || !c.gpu_file.empty()) gpu_of(c, "");  // a bad name or spec is refused before any work
  const auto model = resolve_model(c);
  const auto& m = model.info;
  to::op_graph g = model.graph;
  if (c.batch) g = to::with_global_batch(g, *c.batch);
  print_graph_summary(g);
  std::fflush(stdout);
  if (!c.device_counts.empty()) return explore_devices(c, m, g);

  const auto cl = make_cluster(c, m);
  if (!c.strategy.empty()) return evaluate_strategy(c, g, cl, m.spec.empty() ? std::string(m.name) : m.spec);
  const auto o = make_options(c, cl);
  std::printf("cluster %s (%s per device), precision %s, stack: %s\n", cl.describe().c_str(),
              to::format_bytes(cl.gpu_spec.capacity).c_str(), std::string(o.build.prec.name).c_str(),
              o.build.cost().stack().c_str());
  std::fflush(stdout);
  if (c.pipeline) return plan_with_stages(c, m, g, cl, o);
  auto pf = to::plan_frontier(g, cl, o);
  std::printf("frontier: %zu Pareto-optimal plans that fit %s, over %zu micro-batch count%s, in %.2f s%s\n\n",
              pf.points.size(), to::format_bytes(cl.gpu_spec.capacity).c_str(), pf.parts.size(),
              pf.parts.size() == 1 ? "" : "s", pf.search_seconds,
              pf.exact ? " (exact)" : pf.restricted ? " (fast mode)" : " (approximate)");
  for (const auto& n : pf.mode_notes) std::printf("search: %s\n", n.c_str());
  if (!pf.memory_note.empty()) std::printf("memory: %s\n", pf.memory_note.c_str());
  if (!pf.mode_notes.empty() || !pf.memory_note.empty()) std::printf("\n");
  if (pf.points.empty())
    throw to::infeasible("no plan of " + std::string(m.name) + " fits " + to::format_bytes(cl.gpu_spec.capacity) +
                         " per device on " + cl.describe() +
                         (c.micro_batches ? "; add devices, search every micro-batch count (leave out --micro-batches)"
                                          : "; every micro-batch count was searched: add devices") +
                         ", take a GPU with more memory (--gpu) or a smaller --batch");

  std::optional<to::bytes> budget;
  std::optional<to::plan> chosen;
  if (c.memory_budget) {
    budget = *c.memory_budget * 1_GiB;
    chosen = pf.fastest_within(*budget);
    if (!chosen) {
      const auto least = pf.least_memory();
      std::printf("no plan fits %s per device; the least memory is %s (plan #0, %s per iteration):\n  %s\n\n",
                  to::format_bytes(*budget).c_str(), to::format_bytes(least->memory()).c_str(),
                  to::format_seconds(least->time()).c_str(), least->summary().c_str());
    }
  }
  auto rep = to::make_report(pf, std::string(m.name), chosen, budget);
  for (auto& p : rep.points)  // predicted model FLOPs utilization, so implausible predictions show
    p.mfu = to::model_flops_utilization(g, p.time, cl, o.build.prec);
  show_points(c, rep);
  print_table(rep);
  if (chosen)
    std::printf("\nchosen plan #%zu (fastest within %s): %s per device, %s per iteration, micro-batches %d, "
                "MFU %.1f %%\n  %s\n",
                chosen->index(), to::format_bytes(*budget).c_str(), to::format_bytes(chosen->memory()).c_str(),
                to::format_seconds(chosen->time()).c_str(), chosen->micro_batches(),
                100 * to::model_flops_utilization(g, chosen->time() / 1_s, cl, o.build.prec), chosen->summary().c_str());
  if (!c.save_plan.empty()) {
    if (budget && !chosen) throw to::infeasible("--save-plan: " + pf.no_fit_message(*budget));
    const auto saved = chosen ? chosen : pf.fastest();
    write_file(c.save_plan, to::write_plan_json(to::make_plan_file(*saved, m.spec.empty() ? std::string(m.name) : m.spec)),
               "plan");
  }
  // every point the search returned (the table shows those not dominated under the runtime peak)
  if (!c.frontier_json.empty()) {
    to::complete_searched(pf);
    write_file(c.frontier_json, to::write_frontier_json(pf.searched.empty() ? pf.points : pf.searched), "frontier");
  }
  if (!c.problem_json.empty()) {
    if (pf.parts.empty() || !pf.parts[0].built) throw to::infeasible("no problem to write: the search found no plan");
    const auto& built = *pf.parts[0].built;
    write_file(c.problem_json, to::write_problem_json(built.prob, to::repeat_blocks(built.graph)), "problem");
  }
  if (!c.svg.empty()) write_file(c.svg, to::to_svg(rep), "plot");
  if (!c.html.empty()) write_file(c.html, to::to_html(rep), "report");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const to::error& e) {
    std::fprintf(stderr, "tensoropt-plan: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensoropt-plan: internal error: %s\n", e.what());
    return 3;
  }
}
