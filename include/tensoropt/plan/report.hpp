// Reports of a frontier: the terminal table, a self-contained SVG plot and an HTML page.
//
// The report works on plain data (`frontier_report`) so that the planner, the
// benchmarks and outside tools that read a frontier JSON all print the same way.
// The plot puts memory per device on x and iteration time on y (log scales when a
// range spans more than a factor of 8), draws the frontier as a staircase, marks
// the baselines and highlights the chosen plan and the memory budget.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>
#include "../core/units.hpp"

namespace tensoropt {

/// One frontier point, ready to report.
struct plan_point {
  double time = 0;             ///< seconds per iteration
  double memory = 0;           ///< bytes per device (peak, as the cost model predicts)
  int micro_batches = 1;       ///< gradient-accumulation count k
  std::vector<int> choice;     ///< config index per problem node
  std::vector<std::string> labels;
  std::string summary;         ///< "dp 4 x tp 2, recompute 12/24 layers"
};

/// A baseline strategy on the same cost model.
struct baseline_result {
  std::string name;            ///< "data parallel", "megatron tp 2 x dp 4", ...
  double time = 0, memory = 0;
  bool valid = true;           ///< false: the strategy does not apply (reason in summary)
  std::string summary;
};

/// One op of the chosen plan.
struct op_row {
  std::string op, config;
  double time = 0, memory = 0;
  std::string collectives;     ///< e.g. "all-reduce grads 64 MiB (dp 8)"
};

struct frontier_report {
  std::string model, cluster, precision;
  double samples = 0;          ///< samples (global batch) per iteration
  double capacity = 0;         ///< device memory, bytes (0 = unknown)
  double budget = 0;           ///< memory budget, bytes (0 = none)
  std::vector<plan_point> points;   ///< memory ascending, time descending
  std::vector<baseline_result> baselines;
  int chosen = -1;             ///< index into points, or -1
  std::vector<op_row> chosen_ops;
  double search_seconds = 0;
  std::string notes;           ///< e.g. "epsilon 0.01: within 1 % of exact"
};

namespace detail {
inline std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}
inline std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}
inline std::string truncate(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 1) + "~";
}
/// A scale from data [lo, hi] to pixels [p0, p1], logarithmic when hi/lo > 8.
struct axis_scale {
  double lo = 1, hi = 1, p0 = 0, p1 = 1;
  bool log = false;
  static axis_scale make(double lo, double hi, double p0, double p1) {
    axis_scale s;
    s.p0 = p0;
    s.p1 = p1;
    if (!(hi > lo)) { hi = lo > 0 ? lo * 2 : 1; lo = lo > 0 ? lo / 2 : 0; }
    s.log = lo > 0 && hi / lo > 8;
    if (s.log) { s.lo = lo / 1.15; s.hi = hi * 1.15; }
    else { const double pad = (hi - lo) * 0.08; s.lo = std::max(0.0, lo - pad); s.hi = hi + pad; }
    return s;
  }
  double operator()(double v) const {
    const double t = log ? (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo))
                         : (v - lo) / (hi - lo);
    return p0 + t * (p1 - p0);
  }
  /// Round ticks in multiples of `unit` (e.g. GiB for memory: 1, 2, 5, 10 GiB).
  std::vector<double> ticks(double unit = 1) const {
    std::vector<double> t;
    const double l = lo / unit, h = hi / unit;
    if (log) {
      for (double d = std::pow(10, std::floor(std::log10(l))); d <= h; d *= 10)
        for (double m : {1.0, 2.0, 5.0})
          if (d * m >= l && d * m <= h) t.push_back(d * m * unit);
    } else {
      const double raw = (h - l) / 5, mag = std::pow(10, std::floor(std::log10(raw)));
      const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
      for (double v = std::ceil(l / step) * step; v <= h; v += step) t.push_back(v * unit);
    }
    return t;
  }
};
}  // namespace detail

/// Which rows a table of at most `max_rows` shows: both ends, the chosen point, and
/// points at equal steps of arc length along the staircase in (log memory, log time),
/// each axis normalized to its range (all rows when they fit).
inline std::vector<std::size_t> table_rows(const frontier_report& r, std::size_t max_rows) {
  std::vector<std::size_t> rows;
  const std::size_t n = r.points.size();
  if (n <= max_rows || max_rows < 3) {
    for (std::size_t i = 0; i < n; ++i) rows.push_back(i);
    return rows;
  }
  auto lm = [&](std::size_t i) { return std::log(std::max(1.0, r.points[i].memory)); };
  auto lt = [&](std::size_t i) { return std::log(std::max(1e-12, r.points[i].time)); };
  const double dm = std::max(1e-12, lm(n - 1) - lm(0)), dt = std::max(1e-12, lt(0) - lt(n - 1));
  std::vector<double> arc(n, 0);
  for (std::size_t i = 1; i < n; ++i)
    arc[i] = arc[i - 1] + std::hypot((lm(i) - lm(i - 1)) / dm, (lt(i) - lt(i - 1)) / dt);
  std::size_t i = 0;
  for (std::size_t k = 0; k < max_rows; ++k) {
    const double target = arc[n - 1] * double(k) / double(max_rows - 1);
    while (i + 1 < n && arc[i] < target) ++i;
    if (rows.empty() || rows.back() != i) rows.push_back(i);
  }
  if (rows.back() != n - 1) rows.push_back(n - 1);
  if (r.chosen >= 0 && std::size_t(r.chosen) < n &&
      std::find(rows.begin(), rows.end(), std::size_t(r.chosen)) == rows.end()) {
    rows.push_back(std::size_t(r.chosen));
    std::sort(rows.begin(), rows.end());
  }
  return rows;
}

/// The table printed by the planner: one row per frontier point (at most `max_rows`,
/// spread over the frontier, see table_rows), 80 columns.
inline std::string format_table(const frontier_report& r, std::size_t max_rows = 1000000) {
  std::string o;
  const auto rows = table_rows(r, max_rows);
  if (rows.size() < r.points.size())
    o += "(" + std::to_string(r.points.size()) + " points; " + std::to_string(rows.size()) +
         " shown, spread along the frontier; the JSON and HTML outputs hold all)\n";
  o += "    #  mem/device   iter time   samples/s    k  strategy\n";
  o += "-----  ----------  ----------  ----------  ---  ------------------------------\n";
  for (std::size_t i : rows) {
    const auto& p = r.points[i];
    char line[256];
    const char mark = int(i) == r.chosen ? '*' : ' ';
    std::snprintf(line, sizeof line, "%c%4zu %11s  %10s  %10.1f %4d  %s\n", mark, i,
                  format_bytes(p.memory).c_str(), format_seconds(p.time).c_str(),
                  p.time > 0 ? r.samples / p.time : 0.0, p.micro_batches,
                  detail::truncate(p.summary, 30).c_str());
    o += line;
  }
  if (!r.baselines.empty()) {
    o += "\nbaselines (same cost model):\n";
    for (auto& b : r.baselines) {
      char line[256];
      if (b.valid)
        std::snprintf(line, sizeof line, "  %-28s %11s  %10s  %s\n", detail::truncate(b.name, 28).c_str(),
                      format_bytes(b.memory).c_str(), format_seconds(b.time).c_str(),
                      detail::truncate(b.summary, 24).c_str());
      else
        std::snprintf(line, sizeof line, "  %-28s %s\n", detail::truncate(b.name, 28).c_str(),
                      detail::truncate(b.summary, 48).c_str());
      o += line;
    }
  }
  return o;
}

/// A self-contained SVG of the frontier (memory per device vs iteration time).
inline std::string to_svg(const frontier_report& r) {
  using detail::fmt;
  const double W = 800, H = 480, L = 90, R = 240, T = 40, B = 60;
  double mlo = 1e300, mhi = 0, tlo = 1e300, thi = 0;
  auto extend = [&](double m, double t) {
    if (!(m > 0) || !(t > 0)) return;
    mlo = std::min(mlo, m); mhi = std::max(mhi, m);
    tlo = std::min(tlo, t); thi = std::max(thi, t);
  };
  for (auto& p : r.points) extend(p.memory, p.time);
  for (auto& b : r.baselines) if (b.valid) extend(b.memory, b.time);
  if (r.budget > 0) extend(r.budget, tlo < 1e300 ? tlo : 1);
  if (mhi == 0) { mlo = 1; mhi = 2; tlo = 1; thi = 2; }
  const auto xs = detail::axis_scale::make(mlo, mhi, L, W - R);
  const auto ys = detail::axis_scale::make(tlo, thi, H - B, T);
  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", W) + "\" height=\"" +
       fmt("%.0f", H) + "\" viewBox=\"0 0 " + fmt("%.0f", W) + " " + fmt("%.0f", H) +
       "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + fmt("%.0f", L) + "\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" +
       detail::xml_escape(r.model + " on " + r.cluster) + ": time-memory frontier</text>\n";
  // axes, grid and ticks
  const double mem_unit = xs.lo >= gib / 2 ? gib : xs.lo >= mib / 2 ? mib : xs.lo >= kib / 2 ? kib : 1;
  for (double t : xs.ticks(mem_unit)) {
    const double x = xs(t);
    s += "<line x1=\"" + fmt("%.1f", x) + "\" y1=\"" + fmt("%.0f", T) + "\" x2=\"" + fmt("%.1f", x) +
         "\" y2=\"" + fmt("%.0f", H - B) + "\" stroke=\"#eee\"/>\n";
    s += "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.0f", H - B + 16) +
         "\" text-anchor=\"middle\">" + detail::xml_escape(format_bytes(t)) + "</text>\n";
  }
  for (double t : ys.ticks()) {
    const double y = ys(t);
    s += "<line x1=\"" + fmt("%.0f", L) + "\" y1=\"" + fmt("%.1f", y) + "\" x2=\"" + fmt("%.0f", W - R) +
         "\" y2=\"" + fmt("%.1f", y) + "\" stroke=\"#eee\"/>\n";
    s += "<text x=\"" + fmt("%.0f", L - 6) + "\" y=\"" + fmt("%.1f", y + 4) +
         "\" text-anchor=\"end\">" + detail::xml_escape(format_seconds(t)) + "</text>\n";
  }
  s += "<rect x=\"" + fmt("%.0f", L) + "\" y=\"" + fmt("%.0f", T) + "\" width=\"" + fmt("%.0f", W - R - L) +
       "\" height=\"" + fmt("%.0f", H - B - T) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  s += "<text x=\"" + fmt("%.0f", (L + W - R) / 2) + "\" y=\"" + fmt("%.0f", H - 18) +
       "\" text-anchor=\"middle\">memory per device" + std::string(xs.log ? " (log)" : "") + "</text>\n";
  s += "<text transform=\"translate(18," + fmt("%.0f", (T + H - B) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">iteration time" + std::string(ys.log ? " (log)" : "") +
       "</text>\n";
  if (r.capacity > 0 && r.capacity >= xs.lo && r.capacity <= xs.hi)
    s += "<line x1=\"" + fmt("%.1f", xs(r.capacity)) + "\" y1=\"" + fmt("%.0f", T) + "\" x2=\"" +
         fmt("%.1f", xs(r.capacity)) + "\" y2=\"" + fmt("%.0f", H - B) +
         "\" stroke=\"#999\" stroke-dasharray=\"2,3\"><title>device capacity</title></line>\n";
  if (r.budget > 0)
    s += "<line x1=\"" + fmt("%.1f", xs(r.budget)) + "\" y1=\"" + fmt("%.0f", T) + "\" x2=\"" +
         fmt("%.1f", xs(r.budget)) + "\" y2=\"" + fmt("%.0f", H - B) +
         "\" stroke=\"#d62728\" stroke-dasharray=\"6,4\"><title>memory budget " +
         format_bytes(r.budget) + "</title></line>\n";
  // the frontier staircase
  if (!r.points.empty()) {
    std::string path = "M";
    for (std::size_t i = 0; i < r.points.size(); ++i) {
      const double x = xs(r.points[i].memory), y = ys(r.points[i].time);
      if (i > 0) path += " L" + fmt("%.1f", x) + "," + fmt("%.1f", ys(r.points[i - 1].time));
      path += (i ? " L" : "") + fmt("%.1f", x) + "," + fmt("%.1f", y);
    }
    s += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>\n";
    for (std::size_t i = 0; i < r.points.size(); ++i) {
      const auto& p = r.points[i];
      s += "<circle cx=\"" + fmt("%.1f", xs(p.memory)) + "\" cy=\"" + fmt("%.1f", ys(p.time)) +
           "\" r=\"3.5\" fill=\"#1f77b4\"><title>#" + std::to_string(i) + ": " +
           detail::xml_escape(format_bytes(p.memory) + ", " + format_seconds(p.time) + ", k=" +
                              std::to_string(p.micro_batches) + ", " + p.summary) +
           "</title></circle>\n";
    }
  }
  // baselines
  const char* colors[] = {"#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"};
  int legend = 0;
  for (std::size_t i = 0; i < r.baselines.size(); ++i) {
    const auto& b = r.baselines[i];
    if (!b.valid || !(b.memory > 0) || !(b.time > 0)) continue;
    const char* c = colors[i % 7];
    const double x = xs(b.memory), y = ys(b.time);
    s += "<rect x=\"" + fmt("%.1f", x - 4) + "\" y=\"" + fmt("%.1f", y - 4) +
         "\" width=\"8\" height=\"8\" fill=\"" + c + "\" transform=\"rotate(45 " + fmt("%.1f", x) + " " +
         fmt("%.1f", y) + ")\"><title>" + detail::xml_escape(b.name + ": " + format_bytes(b.memory) + ", " +
                                                           format_seconds(b.time)) + "</title></rect>\n";
    const double ly = T + 20 + 18 * legend++;
    s += "<rect x=\"" + fmt("%.0f", W - R + 16) + "\" y=\"" + fmt("%.0f", ly - 8) +
         "\" width=\"8\" height=\"8\" fill=\"" + c + "\"/><text x=\"" + fmt("%.0f", W - R + 30) +
         "\" y=\"" + fmt("%.0f", ly) + "\">" + detail::xml_escape(detail::truncate(b.name, 30)) + "</text>\n";
  }
  const double ly = T + 20 + 18 * legend;
  s += "<circle cx=\"" + fmt("%.0f", W - R + 20) + "\" cy=\"" + fmt("%.0f", ly - 4) +
       "\" r=\"3.5\" fill=\"#1f77b4\"/><text x=\"" + fmt("%.0f", W - R + 30) + "\" y=\"" + fmt("%.0f", ly) +
       "\">frontier (" + std::to_string(r.points.size()) + " plans)</text>\n";
  if (r.chosen >= 0 && std::size_t(r.chosen) < r.points.size()) {
    const auto& p = r.points[r.chosen];
    s += "<circle cx=\"" + fmt("%.1f", xs(p.memory)) + "\" cy=\"" + fmt("%.1f", ys(p.time)) +
         "\" r=\"8\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2.5\"><title>chosen plan #" +
         std::to_string(r.chosen) + "</title></circle>\n";
    s += "<circle cx=\"" + fmt("%.0f", W - R + 20) + "\" cy=\"" + fmt("%.0f", ly + 14) +
         "\" r=\"6\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/><text x=\"" + fmt("%.0f", W - R + 30) +
         "\" y=\"" + fmt("%.0f", ly + 18) + "\">chosen plan #" + std::to_string(r.chosen) + "</text>\n";
  }
  s += "</svg>\n";
  return s;
}

/// A self-contained HTML report: the plot, the frontier table, the baselines and the
/// chosen plan's per-op table (config, time, memory, collectives).
inline std::string to_html(const frontier_report& r) {
  using detail::xml_escape;
  std::string h = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tensoropt: " +
                  xml_escape(r.model) + "</title>\n<style>body{font-family:sans-serif;margin:24px;"
                  "max-width:1100px}table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid "
                  "#ccc;padding:3px 8px;text-align:right;font-size:13px}td.l,th.l{text-align:left}"
                  "tr.chosen{background:#fde0e0}code{background:#f4f4f4}</style></head><body>\n";
  h += "<h1>" + xml_escape(r.model) + " on " + xml_escape(r.cluster) + "</h1>\n<p>precision " +
       xml_escape(r.precision) + ", " + detail::fmt("%.0f", r.samples) + " samples per iteration, " +
       std::to_string(r.points.size()) + " Pareto-optimal plans found in " +
       detail::fmt("%.3f", r.search_seconds) + " s." +
       (r.budget > 0 ? " Memory budget " + format_bytes(r.budget) + "." : std::string()) + "</p>\n";
  if (!r.notes.empty()) h += "<p>" + xml_escape(r.notes) + "</p>\n";
  h += to_svg(r);
  h += "<h2>Frontier</h2>\n<table><tr><th>#</th><th>memory / device</th><th>iteration time</th>"
       "<th>samples/s</th><th>k</th><th class=\"l\">strategy</th></tr>\n";
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& p = r.points[i];
    h += std::string("<tr") + (int(i) == r.chosen ? " class=\"chosen\"" : "") + "><td>" + std::to_string(i) +
         "</td><td>" + format_bytes(p.memory) + "</td><td>" + format_seconds(p.time) + "</td><td>" +
         detail::fmt("%.1f", p.time > 0 ? r.samples / p.time : 0) + "</td><td>" +
         std::to_string(p.micro_batches) + "</td><td class=\"l\">" + xml_escape(p.summary) + "</td></tr>\n";
  }
  h += "</table>\n";
  if (!r.baselines.empty()) {
    h += "<h2>Baselines</h2>\n<table><tr><th class=\"l\">strategy</th><th>memory / device</th>"
         "<th>iteration time</th><th class=\"l\">note</th></tr>\n";
    for (auto& b : r.baselines)
      h += "<tr><td class=\"l\">" + xml_escape(b.name) + "</td><td>" +
           (b.valid ? format_bytes(b.memory) : "-") + "</td><td>" + (b.valid ? format_seconds(b.time) : "-") +
           "</td><td class=\"l\">" + xml_escape(b.summary) + "</td></tr>\n";
    h += "</table>\n";
  }
  if (r.chosen >= 0 && !r.chosen_ops.empty()) {
    h += "<h2>Chosen plan #" + std::to_string(r.chosen) + ": per op</h2>\n<table><tr><th class=\"l\">op"
         "</th><th class=\"l\">config</th><th>time</th><th>memory</th><th class=\"l\">collectives</th></tr>\n";
    for (auto& o : r.chosen_ops)
      h += "<tr><td class=\"l\">" + xml_escape(o.op) + "</td><td class=\"l\"><code>" + xml_escape(o.config) +
           "</code></td><td>" + format_seconds(o.time) + "</td><td>" + format_bytes(o.memory) +
           "</td><td class=\"l\">" + xml_escape(o.collectives) + "</td></tr>\n";
    h += "</table>\n";
  }
  h += "</body></html>\n";
  return h;
}

}  // namespace tensoropt
