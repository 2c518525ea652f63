// Reports of a frontier: the data they share, which points they show, and the terminal table.
//
// The reports work on plain data (`frontier_report`) so that the planner, the
// benchmarks and outside tools that read a frontier JSON all print the same way. The
// plot is in report_svg.hpp, the HTML page in report_html.hpp.
//
// Which points are shown. An exact frontier has thousands of points, nearly all within a
// hair of a neighbour (gpt3-1.3b on 4 x V100-16GB over all micro-batch counts: 8,980
// points, 65 in a 1 % cover; `tensoropt-plan --model gpt3-1.3b --devices 4 --gpu
// v100-16gb --memory-budget 12`). The table, the plot's markers and the HTML table show
// a cover (search/cover.hpp): the fewest points such that every frontier point has a
// shown point with no more memory and at most `display_tolerance` more time (1 % unless
// told otherwise; 0 shows every point). The chosen plan and the fastest plan are always
// shown. Past `max_shown` rows the tolerance steps up (2, 5, 10, 20, 50 %, ...) until
// the cover fits, and the reports say which tolerance they used.
// The frontier JSON is never covered: it holds every point the search returned.
//
// What distinguishes a row. Neighbouring rows of a cover usually share their one-line
// summary ("dp 4, recompute 20/24 layers"), so each row also says what changes from the
// row above (`describe_change`): the micro-batch count, the main split, and the ops whose
// config changes, grouped over repeated layers: "layers.*.mlp.fc1 -rc (2 of 24)" means
// two of the 24 fc1 ops stop recomputing; "embed h4 -> h2 f2" is a new split of one op.
// Config labels read: a dim name and its degree ("b4" = batch split 4 ways, "h2 f2"),
// "r4" = replicated 4 ways, "| rc" = recomputed in backward, "| zo" = optimizer state
// sharded over the op's replicas. With pipeline stages (plan/pipeline_report.hpp) the
// table has a pp column, the main split names the degree ("pp 2 x tp 4"), and a row whose
// degree stays but whose stages start elsewhere says "stages cut elsewhere".
#pragma once
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>
#include "../core/units.hpp"
#include "../search/cover.hpp"
#include "frontier_report.hpp"

namespace tensoropt {

/// The points a report shows: ascending indices into `points`, and the tolerance used.
struct shown_points {
  std::vector<std::size_t> rows;
  double tolerance = 0;        ///< 0: every point is shown
};

/// The cover of `r.points` at the display tolerance (stepped up past `max_rows`), with the
/// chosen plan; every point when the tolerance is 0 and they fit. See the header.
inline shown_points shown(const frontier_report& r, std::size_t max_rows = 0) {
  if (max_rows == 0) max_rows = r.max_shown;
  std::vector<std::size_t> required;
  if (r.chosen >= 0 && std::size_t(r.chosen) < r.points.size()) required.push_back(std::size_t(r.chosen));
  if (!r.points.empty()) required.push_back(r.points.size() - 1);  // the fastest plan ends the table
  shown_points s;
  const double first = std::max(0.0, r.display_tolerance);
  for (double tol : {first, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0, 1e5}) {
    if (tol < first) continue;
    s.tolerance = tol;
    s.rows = cover_indices(r.points, tol, required);
    if (s.rows.size() <= std::max<std::size_t>(max_rows, 3)) break;
  }
  return s;
}

/// "every plan has a shown one with no more memory and at most 1 % more time".
inline std::string describe_tolerance(double tolerance) {
  if (tolerance <= 0) return "every plan is shown";
  char b[128];
  std::snprintf(b, sizeof b, "every plan has a shown one with no more memory and at most %g %% more time",
                tolerance * 100);
  return b;
}

namespace detail {

/// "layers.*.mlp.fc1" for "layers.12.mlp.fc1": the name with every all-digit part starred.
inline std::string generic_name(const std::string& name) {
  std::string out, part;
  auto flush = [&] {
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](unsigned char c) {
      return std::isdigit(c) != 0;
    });
    out += digits ? "*" : part;
    part.clear();
  };
  for (char c : name) {
    if (c == '.') { flush(); out += '.'; }
    else part += c;
  }
  flush();
  return out;
}

/// "b4 | rc zo" -> {"b4", " rc zo"}: the split and the switches of a config label.
inline std::pair<std::string, std::string> split_label(const std::string& l) {
  const auto bar = l.find(" |");
  if (bar == std::string::npos) return {l, ""};
  return {l.substr(0, bar), l.substr(bar + 2)};
}

/// How config `a` turns into `b`: "+rc", "-zo", "+rc -zo", or "f4 | rc -> b2 f2".
inline std::string label_change(const std::string& a, const std::string& b, const char* arrow) {
  const auto [sa, wa] = split_label(a);
  const auto [sb, wb] = split_label(b);
  if (sa != sb) return wa == wb ? sa + arrow + sb : a + arrow + b;
  std::string out;
  for (const char* sw : {"rc", "zo"}) {
    const bool ia = wa.find(sw) != std::string::npos, ib = wb.find(sw) != std::string::npos;
    if (ia != ib) out += std::string(out.empty() ? "" : " ") + (ib ? "+" : "-") + sw;
  }
  return out.empty() ? a + arrow + b : out;
}

}  // namespace detail

/// What changes from point `from` to point `to` of `r`: micro-batch count, main split and
/// the ops whose config changes, grouped over repeated layers (at most `items` groups, then
/// "N more"). `terse` (for terminals): "->" for the arrow, "mlp.fc1 -rc (2/24)" for
/// "layers.*.mlp.fc1 -rc (2 of 24)".
inline std::string describe_change(const frontier_report& r, std::size_t from, std::size_t to, std::size_t items = 3,
                                   bool terse = false) {
  const char* arrow = terse ? " -> " : " \u2192 ";
  const auto& a = r.points.at(from);
  const auto& b = r.points.at(to);
  std::vector<std::string> parts;
  if (a.micro_batches != b.micro_batches)
    parts.push_back("k " + std::to_string(a.micro_batches) + arrow + std::to_string(b.micro_batches));
  auto main_split = [](const std::string& summary) {  // "dp 2 x tp 2" of "dp 2 x tp 2 (s4 on 3 ops), ..."
    std::string m = summary.substr(0, summary.find_first_of(",("));
    while (!m.empty() && m.back() == ' ') m.pop_back();
    return m;
  };
  const std::string ma = main_split(a.summary), mb = main_split(b.summary);
  if (ma != mb && !ma.empty() && !mb.empty()) parts.push_back(ma + arrow + mb);
  else if (a.pipeline_degree == b.pipeline_degree && a.stage_begin != b.stage_begin) parts.push_back("stages cut elsewhere");
  if (a.labels.size() == b.labels.size()) {
    auto name = [&](std::size_t i) { return i < r.op_names.size() ? r.op_names[i] : "node " + std::to_string(i); };
    std::map<std::string, std::size_t> copies;  // ops per generic name
    for (std::size_t i = 0; i < a.labels.size(); ++i) ++copies[detail::generic_name(name(i))];
    struct group {
      std::string generic, change, first_name;
      std::size_t count = 0, first = 0;
    };
    std::vector<group> groups;
    for (std::size_t i = 0; i < a.labels.size(); ++i) {
      if (a.labels[i] == b.labels[i]) continue;
      const std::string gen = detail::generic_name(name(i)), ch = detail::label_change(a.labels[i], b.labels[i], arrow);
      auto it = std::find_if(groups.begin(), groups.end(), [&](const group& g) { return g.generic == gen && g.change == ch; });
      if (it == groups.end()) groups.push_back({gen, ch, name(i), 1, i});
      else ++it->count;
    }
    std::stable_sort(groups.begin(), groups.end(), [](const group& x, const group& y) { return x.count > y.count; });
    for (std::size_t g = 0; g < groups.size() && g < items; ++g) {
      const auto& gr = groups[g];
      const std::size_t n = copies[gr.generic];
      if (gr.count == 1) {
        parts.push_back(gr.first_name + " " + gr.change);
      } else {
        const auto star = gr.generic.rfind(".*.");
        const std::string nm = terse && star != std::string::npos ? gr.generic.substr(star + 3) : gr.generic;
        parts.push_back(nm + " " + gr.change + " (" + std::to_string(gr.count) + (terse ? "/" : " of ") +
                        std::to_string(n) + ")");
      }
    }
    if (groups.size() > items) parts.push_back(std::to_string(groups.size() - items) + " more changes");
  }
  std::string out;
  for (auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out.empty() ? "same configs" : out;
}

namespace detail {
inline std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}
inline std::string truncate(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 1) + "~";
}
/// "does not fit (25.2 GiB > 16 GiB)" for a baseline above the capacity, else "".
inline std::string misfit(const frontier_report& r, double memory) {
  if (!(r.capacity > 0) || memory <= r.capacity) return "";
  return "does not fit (" + format_bytes(memory) + " > " + format_bytes(r.capacity) + ")";
}
}  // namespace detail

/// The table printed by the planner, 80 columns: the shown points (a cover of the
/// frontier, see the header; at most `max_rows`, 0 = the report's `max_shown`), the
/// first with its summary and each other with what changes from the row above, then
/// the baselines.
inline std::string format_table(const frontier_report& r, std::size_t max_rows = 0) {
  std::string o;
  const auto sh = shown(r, max_rows);
  if (sh.rows.size() < r.points.size())
    o += std::to_string(sh.rows.size()) + " of " + std::to_string(r.points.size()) + " plans shown: " +
         describe_tolerance(sh.tolerance) + "\n";
  // The MFU column (predicted model FLOPs utilization) when the points know it.
  const bool mfu = std::any_of(r.points.begin(), r.points.end(), [](const frontier_report::point& p) { return p.mfu > 0; });
  // The additive column (the search's memory) where the points carry a runtime peak that differs.
  const bool add = std::any_of(r.points.begin(), r.points.end(), [](const frontier_report::point& p) { return p.additive > 0; });
  // The pp column (pipeline degree) when a point has stages.
  const bool pp = has_stages(r);
  const int width = (mfu ? 37 : 44) - (add ? 12 : 0) - (pp ? 5 : 0);
  o += std::string(add ? "    #    peak/dev    additive  iter time     k  " : "    #  mem/device  iter time     k  ") +
       (pp ? " pp  " : "") + (mfu ? "  MFU  " : "") +
       (width >= 44 ? "first plan, then changes from the row above" : width >= 37 ? "first plan, then changes from above" : "first plan, then changes") + "\n";
  o += std::string("-----  ----------  ") + (add ? "----------  " : "") + "---------  ----  " + (pp ? "---  " : "") +
       (mfu ? "-----  " : "") +
       std::string(std::size_t(width), '-') + "\n";
  for (std::size_t n = 0; n < sh.rows.size(); ++n) {
    const std::size_t i = sh.rows[n];
    const auto& p = r.points[i];
    const std::string what = n == 0 ? p.summary : describe_change(r, sh.rows[n - 1], i, 2, true);
    char line[256];
    char additive[32] = "";
    if (add) std::snprintf(additive, sizeof additive, "%10s  ", format_bytes(p.additive > 0 ? p.additive : p.memory).c_str());
    std::snprintf(line, sizeof line, "%c%4zu  %10s  %s%9s  %4d  %s%s%s\n", int(i) == r.chosen ? '*' : ' ', i,
                  format_bytes(p.memory).c_str(), additive, format_seconds(p.time).c_str(), p.micro_batches,
                  pp ? detail::fmt("%3.0f  ", p.pipeline_degree).c_str() : "",
                  mfu ? detail::fmt("%4.1f%%  ", 100 * p.mfu).c_str() : "",
                  detail::truncate(what, std::size_t(width)).c_str());
    o += line;
  }
  if (!r.baselines.empty()) {
    o += "\nbaselines (same cost model):\n";
    for (auto& b : r.baselines) {
      // A long name ("min time (single objective), k 1024") gets a line of its own.
      const bool own_line = b.name.size() > 28;
      if (own_line) o += "  " + detail::truncate(b.name, 76) + "\n";
      const std::string name = own_line ? "" : b.name;
      char line[256];
      if (b.valid) {
        const bool fits = detail::misfit(r, b.memory).empty();
        const std::string note = fits ? b.summary : "does not fit (> " + format_bytes(r.capacity) + ")";
        std::snprintf(line, sizeof line, "  %-28s %10s  %9s  %s\n", name.c_str(), format_bytes(b.memory).c_str(),
                      format_seconds(b.time).c_str(), detail::truncate(note, 26).c_str());
      } else {
        std::snprintf(line, sizeof line, "  %-28s %s\n", name.c_str(), detail::truncate(b.summary, 48).c_str());
      }
      o += line;
    }
  }
  return o;
}

}  // namespace tensoropt
