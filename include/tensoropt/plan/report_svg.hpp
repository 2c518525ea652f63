// The plot of a frontier: a self-contained SVG of memory per device against iteration time.
//
// What is drawn. The frontier as a staircase through every point (exact), with a marker
// on each shown point (the cover of report.hpp: every point has a marker with no more
// memory and at most the display tolerance more time); the baselines as diamonds, filled
// when they fit the device and hollow when they do not (their legend entry says
// "does not fit (25.2 GiB > 16 GiB)"); the chosen plan as a ring; the memory budget and
// the device capacity as vertical lines. Every mark has a legend entry and a tooltip.
//
// A baseline more than 4 times beyond the frontier (the single-objective optimum of
// gpt3-1.3b on 4 GPUs needs 1.39 TiB per device) is drawn on the plot's edge with its
// value ("1.39 TiB ->"), so the frontier keeps the width of the plot.
//
// Scales and ticks. An axis is logarithmic when its range spans more than a factor of 8.
// Ticks are round numbers (1, 2, 5 x 10^n first, then 1.5, 3, then 1.2, 2.5, 4, 6, 8),
// at least 48 px apart, and the range where the frontier lies always gets ticks of its
// own: with data parallelism at 105 GiB on a log axis, decade ticks (5, 10, 20, 50,
// 100 GiB) would leave a frontier at 11-17 GiB with none, so ticks inside the frontier's
// range are placed first and the rest fill in around them.
//
// Pipeline stages. When a point has stages, each marker is coloured by its pipeline degree
// (`data-pp`), and the legend has one entry per degree shown with its number of plans.
//
// Markers of shown points carry `class="pt"` and `data-i` (the point's index), which the
// HTML report's script uses to show a point's plan on hover or click.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>
#include "report.hpp"

namespace tensoropt {
namespace detail {

inline std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
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
    if (s.log) { s.lo = lo / 1.12; s.hi = hi * 1.12; }
    else { const double pad = (hi - lo) * 0.08; s.lo = std::max(0.0, lo - pad); s.hi = hi + pad; }
    return s;
  }
  double operator()(double v) const {
    const double t = log ? (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (v - lo) / (hi - lo);
    return p0 + t * (p1 - p0);
  }
  /// Round ticks in multiples of `unit` (GiB for memory), at least `min_px` apart, with
  /// ticks inside [focus_lo, focus_hi] (the frontier's range) placed first. See the header.
  std::vector<double> ticks(double unit = 1, double focus_lo = 0, double focus_hi = 0, double min_px = 48) const {
    struct cand {
      double v;
      int rank;
    };
    std::vector<cand> c;
    const double l = lo / unit, h = hi / unit;
    if (log) {
      const std::pair<double, int> mult[] = {{1, 0}, {2, 1}, {5, 1}, {1.5, 2}, {3, 2}, {1.2, 3},
                                             {2.5, 3}, {4, 3}, {6, 3}, {8, 3}};
      for (double d = std::pow(10, std::floor(std::log10(l))); d <= h; d *= 10)
        for (auto [m, rank] : mult) c.push_back({d * m, rank});
    } else {
      const double raw = (h - l) / 5, mag = std::pow(10, std::floor(std::log10(raw)));
      const double f = raw / mag, step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
      for (double v = std::ceil(l / step * 5) * step / 5; v <= h; v += step / 5) {
        const double q = v / step;
        c.push_back({v, std::fabs(q - std::round(q)) < 1e-6 ? 0 : std::fabs(2 * q - std::round(2 * q)) < 1e-6 ? 1 : 2});
      }
    }
    std::erase_if(c, [&](const cand& x) { return x.v < l || x.v > h; });
    std::stable_sort(c.begin(), c.end(), [](const cand& a, const cand& b) { return a.rank < b.rank; });
    std::vector<double> picked;
    auto try_pick = [&](double v) {
      for (double p : picked)
        if (std::fabs((*this)(p * unit) - (*this)(v * unit)) < min_px) return false;
      picked.push_back(v);
      return true;
    };
    const double fl = focus_lo / unit, fh = focus_hi / unit;
    int in_focus = 0;
    for (auto& x : c)
      if (in_focus < 2 && x.v >= fl && x.v <= fh && try_pick(x.v)) ++in_focus;
    const int coarse = log ? 1 : 0;  // outside the focus only the roundest ticks
    for (auto& x : c)
      if (x.rank <= coarse) try_pick(x.v);
    std::sort(picked.begin(), picked.end());
    for (double& p : picked) p *= unit;
    return picked;
  }
};

inline std::string px(double v) { return fmt("%.1f", v); }

}  // namespace detail

/// The most baselines the plot draws (see to_svg).
inline constexpr std::size_t max_plotted_baselines = 8;

/// A self-contained SVG of the frontier (memory per device vs iteration time); see the header.
inline std::string to_svg(const frontier_report& r) {
  using detail::px;
  using detail::xml_escape;
  const double W = 920, H = 500, L = 84, R = 300, T = 40, B = 58;
  double mlo = 1e300, mhi = 0, tlo = 1e300, thi = 0;
  auto extend = [&](double m, double t) {
    if (!(m > 0) || !(t > 0)) return;
    mlo = std::min(mlo, m); mhi = std::max(mhi, m);
    tlo = std::min(tlo, t); thi = std::max(thi, t);
  };
  for (auto& p : r.points) extend(p.memory, p.time);
  const double focus_m[2] = {mlo, mhi}, focus_t[2] = {tlo, thi};
  if (r.budget > 0) extend(r.budget, tlo < 1e300 ? tlo : 1);
  // Baselines far off the frontier (the single-objective optimum may need a TiB) are
  // drawn at the plot's edge with their value, so they do not squash the frontier.
  const double far_m = 4 * std::max({mhi, r.budget, r.capacity}), far_t = 4 * thi;
  auto off_scale = [&](const baseline_result& b) { return mhi > 0 && (b.memory > far_m || b.time > far_t); };
  for (auto& b : r.baselines)
    if (b.valid && !off_scale(b)) extend(b.memory, b.time);
  // The capacity line is drawn when something comes near it.
  if (r.capacity > 0 && mhi >= r.capacity / 2) extend(r.capacity, tlo < 1e300 ? tlo : 1);
  if (mhi == 0) { mlo = 1; mhi = 2; tlo = 1; thi = 2; }
  const auto xs = detail::axis_scale::make(mlo, mhi, L, W - R);
  const auto ys = detail::axis_scale::make(tlo, thi, H - B, T);
  const auto sh = shown(r);
  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"frontier-plot\" width=\"" + px(W) + "\" height=\"" + px(H) +
       "\" viewBox=\"0 0 " + px(W) + " " + px(H) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + px(L) + "\" y=\"24\" font-size=\"15\" font-weight=\"bold\">" +
       xml_escape(r.model + " on " + r.cluster) + ": time-memory frontier</text>\n";
  // Axes, grid and ticks.
  const double mem_unit = xs.lo >= gib / 2 ? gib : xs.lo >= mib / 2 ? mib : xs.lo >= kib / 2 ? kib : 1;
  for (double t : xs.ticks(mem_unit, focus_m[0], focus_m[1])) {
    const double x = xs(t);
    s += "<line x1=\"" + px(x) + "\" y1=\"" + px(T) + "\" x2=\"" + px(x) + "\" y2=\"" + px(H - B) + "\" stroke=\"#e4e4e4\"/>";
    s += "<text x=\"" + px(x) + "\" y=\"" + px(H - B + 16) + "\" text-anchor=\"middle\">" + xml_escape(format_bytes(t)) + "</text>\n";
  }
  for (double t : ys.ticks(1, focus_t[0], focus_t[1], 28)) {
    const double y = ys(t);
    s += "<line x1=\"" + px(L) + "\" y1=\"" + px(y) + "\" x2=\"" + px(W - R) + "\" y2=\"" + px(y) + "\" stroke=\"#e4e4e4\"/>";
    s += "<text x=\"" + px(L - 6) + "\" y=\"" + px(y + 4) + "\" text-anchor=\"end\">" + xml_escape(format_seconds(t)) + "</text>\n";
  }
  s += "<rect x=\"" + px(L) + "\" y=\"" + px(T) + "\" width=\"" + px(W - R - L) + "\" height=\"" + px(H - B - T) +
       "\" fill=\"none\" stroke=\"#333\"/>\n";
  s += "<text x=\"" + px((L + W - R) / 2) + "\" y=\"" + px(H - 16) + "\" text-anchor=\"middle\">memory per device" +
       std::string(xs.log ? " (log scale)" : "") + "</text>\n";
  s += "<text transform=\"translate(16," + px((T + H - B) / 2) + ") rotate(-90)\" text-anchor=\"middle\">iteration time" +
       std::string(ys.log ? " (log scale)" : "") + "</text>\n";
  // Legend: one entry per kind of mark, in the column right of the plot.
  const double lx = W - R + 18;
  double ly = T + 8;
  std::string legend;
  auto entry = [&](const std::string& mark, const std::string& text, const std::string& note = "") {
    legend += mark + "<text x=\"" + px(lx + 16) + "\" y=\"" + px(ly + 4) + "\">" + xml_escape(detail::truncate(text, 40)) + "</text>\n";
    if (!note.empty()) {
      ly += 14;
      legend += "<text x=\"" + px(lx + 16) + "\" y=\"" + px(ly + 4) + "\" fill=\"#555\" font-size=\"11\">" +
                xml_escape(detail::truncate(note, 44)) + "</text>\n";
    }
    ly += 20;
  };
  auto vline = [&](double x, const char* color, const char* dash, const std::string& title) {
    return "<line x1=\"" + px(x) + "\" y1=\"" + px(T) + "\" x2=\"" + px(x) + "\" y2=\"" + px(H - B) + "\" stroke=\"" +
           color + "\" stroke-width=\"1.5\" stroke-dasharray=\"" + dash + "\"><title>" + xml_escape(title) + "</title></line>\n";
  };
  auto legend_line = [&](const char* color, const char* dash) {
    return "<line x1=\"" + px(lx) + "\" y1=\"" + px(ly) + "\" x2=\"" + px(lx + 12) + "\" y2=\"" + px(ly) + "\" stroke=\"" +
           color + "\" stroke-width=\"1.5\" stroke-dasharray=\"" + dash + "\"/>";
  };
  // The frontier: a staircase through every point, markers on the shown ones.
  if (!r.points.empty()) {
    std::string path = "M";
    for (std::size_t i = 0; i < r.points.size(); ++i) {
      const double x = xs(r.points[i].memory), y = ys(r.points[i].time);
      if (i > 0) path += " L" + px(x) + "," + px(ys(r.points[i - 1].time));
      path += (i ? " L" : "") + px(x) + "," + px(y);
    }
    s += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>\n";
    // With pipeline stages, each marker's colour is its pipeline degree (a legend entry each).
    const bool staged = has_stages(r);
    std::vector<int> degrees;
    for (std::size_t i : sh.rows)
      if (std::find(degrees.begin(), degrees.end(), r.points[i].pipeline_degree) == degrees.end())
        degrees.push_back(r.points[i].pipeline_degree);
    std::sort(degrees.begin(), degrees.end());
    auto degree_color = [&](int d) -> std::string {
      static const char* palette[] = {"#1f77b4", "#e6550d", "#31a354", "#756bb1", "#c51b8a", "#8c6d31", "#17becf",
                                      "#636363", "#bcbd22", "#843c39"};
      if (!staged) return palette[0];
      const auto at = std::size_t(std::find(degrees.begin(), degrees.end(), d) - degrees.begin());
      return palette[at % 10];
    };
    for (std::size_t i : sh.rows) {
      const auto& p = r.points[i];
      s += "<circle class=\"pt\" data-i=\"" + std::to_string(i) + "\"" +
           (staged ? " data-pp=\"" + std::to_string(p.pipeline_degree) + "\"" : std::string()) + " cx=\"" +
           px(xs(p.memory)) + "\" cy=\"" + px(ys(p.time)) + "\" r=\"3.5\" fill=\"" + degree_color(p.pipeline_degree) +
           "\"><title>#" + std::to_string(i) + ": " +
           xml_escape(format_bytes(p.memory) + ", " + format_seconds(p.time) + ", k " + std::to_string(p.micro_batches) +
                      (staged ? ", pp " + std::to_string(p.pipeline_degree) : std::string()) +
                      (p.mfu > 0 ? ", MFU " + detail::fmt("%.1f %%", 100 * p.mfu) : "") + ", " + p.summary) +
           "</title></circle>\n";
    }
    const std::string cover = sh.rows.size() < r.points.size()
                                  ? std::to_string(sh.rows.size()) + " marked (" + detail::fmt("%g", sh.tolerance * 100) +
                                        " % cover)"
                                  : std::string();
    if (!staged) {
      entry("<circle cx=\"" + px(lx + 6) + "\" cy=\"" + px(ly) + "\" r=\"3.5\" fill=\"#1f77b4\"/>",
            "frontier: " + std::to_string(r.points.size()) + " plans", cover);
    } else {
      entry("<line x1=\"" + px(lx) + "\" y1=\"" + px(ly) + "\" x2=\"" + px(lx + 12) + "\" y2=\"" + px(ly) +
                "\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>",
            "frontier with stages: " + std::to_string(r.points.size()) + " plans", cover);
      for (int d : degrees) {
        std::size_t n = 0;
        for (const auto& p : r.points) n += p.pipeline_degree == d;
        entry("<circle cx=\"" + px(lx + 6) + "\" cy=\"" + px(ly) + "\" r=\"3.5\" fill=\"" + degree_color(d) + "\"/>",
              (d == 1 ? std::string("no pipeline (pp 1): ") : "pp " + std::to_string(d) + ": ") + std::to_string(n) +
                  (n == 1 ? " plan" : " plans"));
      }
    }
  }
  if (r.chosen >= 0 && std::size_t(r.chosen) < r.points.size()) {
    const auto& p = r.points[std::size_t(r.chosen)];
    s += "<circle cx=\"" + px(xs(p.memory)) + "\" cy=\"" + px(ys(p.time)) +
         "\" r=\"8\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2.5\"><title>chosen plan #" +
         std::to_string(r.chosen) + "</title></circle>\n";
    entry("<circle cx=\"" + px(lx + 6) + "\" cy=\"" + px(ly) + "\" r=\"6\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/>",
          "chosen plan #" + std::to_string(r.chosen), format_bytes(p.memory) + ", " + format_seconds(p.time));
  }
  if (r.budget > 0) {
    s += vline(xs(r.budget), "#d62728", "6,4", "memory budget " + format_bytes(r.budget));
    entry(legend_line("#d62728", "6,4"), "memory budget " + format_bytes(r.budget));
  }
  if (r.capacity > 0 && r.capacity >= xs.lo && r.capacity <= xs.hi) {
    s += vline(xs(r.capacity), "#777", "2,3", "device capacity " + format_bytes(r.capacity));
    entry(legend_line("#777", "2,3"), "device capacity " + format_bytes(r.capacity));
  }
  // Baselines: diamonds, hollow when they do not fit the device.
  // Past max_plotted_baselines (the Megatron 3D baselines of a large cluster number dozens)
  // the fastest ones that fit are drawn, then the rest by time, and the legend says how
  // many the HTML table lists besides.
  const char* colors[] = {"#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"};
  std::vector<std::size_t> drawn;
  for (std::size_t i = 0; i < r.baselines.size(); ++i)
    if (r.baselines[i].valid && r.baselines[i].memory > 0 && r.baselines[i].time > 0) drawn.push_back(i);
  const std::size_t valid_baselines = drawn.size();
  if (drawn.size() > max_plotted_baselines) {
    std::stable_sort(drawn.begin(), drawn.end(), [&](std::size_t x, std::size_t y) {
      const bool fx = detail::misfit(r, r.baselines[x].memory).empty(), fy = detail::misfit(r, r.baselines[y].memory).empty();
      return fx != fy ? fx : r.baselines[x].time < r.baselines[y].time;
    });
    drawn.resize(max_plotted_baselines);
    std::sort(drawn.begin(), drawn.end());
  }
  for (std::size_t i : drawn) {
    const auto& b = r.baselines[i];
    const std::string c = colors[i % 7], misfit = detail::misfit(r, b.memory);
    const std::string style = misfit.empty() ? "fill=\"" + c + "\"" : "fill=\"white\" stroke=\"" + c + "\" stroke-width=\"2\"";
    auto diamond = [&](double x, double y, const std::string& title) {
      return "<rect x=\"" + px(x - 4.5) + "\" y=\"" + px(y - 4.5) + "\" width=\"9\" height=\"9\" " + style +
             " transform=\"rotate(45 " + px(x) + " " + px(y) + ")\">" +
             (title.empty() ? "" : "<title>" + xml_escape(title) + "</title>") + "</rect>";
    };
    const bool off = off_scale(b);
    const double bx = std::min(xs(b.memory), W - R), by = std::max(ys(b.time), T);
    s += diamond(bx, by, b.name + ": " + format_bytes(b.memory) + ", " + format_seconds(b.time) +
                             (misfit.empty() ? "" : "; " + misfit) + (off ? " (off the scale)" : "")) + "\n";
    const std::string note = off ? (b.memory > far_m ? format_bytes(b.memory) + " \u2192" : format_seconds(b.time) + " \u2191")
                                 : misfit.empty() ? "" : "does not fit";
    if (!note.empty())
      s += "<text x=\"" + px(bx + (bx > W - R - 150 ? -10 : 9)) + "\" y=\"" + px(by + (by < T + 8 ? 16 : 4)) +
           "\" font-size=\"11\" fill=\"#555\"" + (bx > W - R - 150 ? " text-anchor=\"end\"" : "") + ">" +
           xml_escape(note) + "</text>\n";
    const double cx = lx + 6, cy = ly;
    entry(diamond(cx, cy, ""), b.name,
          misfit.empty() ? format_seconds(b.time) + ", " + format_bytes(b.memory) + (b.summary.empty() ? "" : ": " + b.summary)
                         : format_seconds(b.time) + "; " + misfit);
  }
  if (drawn.size() < valid_baselines)
    entry("", std::to_string(valid_baselines - drawn.size()) + " more baselines (slower or not fitting)",
          "listed in the HTML report");
  s += legend + "</svg>\n";
  return s;
}

}  // namespace tensoropt
