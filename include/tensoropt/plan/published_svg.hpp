// The plot of the cost model against the published runs (plan/published_check.hpp): a
// self-contained SVG with one marker per row at (measured step time, prediction error).
//
// x: the measured time (per iteration; per layer pass for a layer row), logarithmic, as
// the rows span milliseconds to minutes. y: predicted / measured - 1, linear, in percent,
// with the +/-15 % band a held row must stay in shaded and 0 drawn. Each list has its
// own mark (main table: filled circles; the fused-stack and FP32 lists: squares and
// triangles; layers timed alone: diamonds, hollow where printed, not held; rows outside
// the model: hollow grey circles) and a legend entry with its count and median |error|.
// Every marker carries `class="row"`, `data-list`, `data-name` and a tooltip with the
// row's figures, what it is held to and, for a row not held, why.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>
#include "published_check.hpp"
#include "report_svg.hpp"

namespace tensoropt {

/// A self-contained SVG of `rows` (see the file comment).
inline std::string published_runs_svg(const std::vector<published_check_row>& rows) {
  using detail::px;
  using detail::xml_escape;
  const double W = 960, H = 520, L = 70, R = 330, T = 56, B = 58;
  double tlo = 1e300, thi = 0, elo = -20, ehi = 20;  // seconds; error in percent
  for (const auto& r : rows) {
    if (!(r.measured > 0) || !(r.predicted > 0)) continue;
    tlo = std::min(tlo, r.measured);
    thi = std::max(thi, r.measured);
    elo = std::min(elo, 100 * r.error() - 4);
    ehi = std::max(ehi, 100 * r.error() + 4);
  }
  if (thi == 0) { tlo = 1; thi = 2; }
  const auto xs = detail::axis_scale::make(tlo, thi, L, W - R);
  const double step = ehi - elo > 120 ? 20 : 10;
  elo = std::floor(elo / step) * step;
  ehi = std::ceil(ehi / step) * step;
  auto ys = [&](double pct) { return (H - B) - (pct - elo) / (ehi - elo) * (H - B - T); };
  // the lists, their marks and summaries
  struct list_style {
    published_list list;
    const char* label;
    const char* color;
    const char* shape;  // circle, square, triangle, diamond
  };
  const list_style styles[] = {
      {published_list::main, "main table (held: 15 % each, median 5 %)", "#1f77b4", "circle"},
      {published_list::fused_stack, "fused batch-norm stack (held: 15 % each)", "#2ca02c", "square"},
      {published_list::fp32, "FP32 on V100 (held: 15 % each)", "#9467bd", "triangle"},
      {published_list::layer, "one layer timed alone", "#ff7f0e", "diamond"},
      {published_list::outside, "outside the model (printed)", "#7f7f7f", "circle"},
  };
  // one mark, closed: with a tooltip when `title` is not empty
  auto mark = [&](const list_style& st, double x, double y, bool hollow, const std::string& attrs,
                  const std::string& title) {
    const std::string paint = std::string("fill=\"") + (hollow ? "none" : st.color) + "\" stroke=\"" + st.color +
                              "\" stroke-width=\"1.5\"";
    const std::string shape = st.shape;
    std::string tag, geometry;
    if (shape == "square") {
      tag = "rect";
      geometry = "x=\"" + px(x - 4.5) + "\" y=\"" + px(y - 4.5) + "\" width=\"9\" height=\"9\"";
    } else if (shape == "triangle") {
      tag = "path";
      geometry = "d=\"M" + px(x) + "," + px(y - 6) + " L" + px(x + 5.5) + "," + px(y + 4) + " L" + px(x - 5.5) + "," +
                 px(y + 4) + " Z\"";
    } else if (shape == "diamond") {
      tag = "path";
      geometry = "d=\"M" + px(x) + "," + px(y - 6) + " L" + px(x + 6) + "," + px(y) + " L" + px(x) + "," + px(y + 6) +
                 " L" + px(x - 6) + "," + px(y) + " Z\"";
    } else {
      tag = "circle";
      geometry = "cx=\"" + px(x) + "\" cy=\"" + px(y) + "\" r=\"5\"";
    }
    std::string e = "<" + tag + (attrs.empty() ? "" : " " + attrs) + " " + geometry + " " + paint;
    return title.empty() ? e + "/>" : e + "><title>" + xml_escape(title) + "</title></" + tag + ">";
  };
  std::size_t held = 0, held_ok = 0;
  for (const auto& r : rows)
    if (r.held) {
      ++held;
      held_ok += r.ok();
    }
  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"published-runs-plot\" width=\"" + px(W) + "\" height=\"" +
       px(H) + "\" viewBox=\"0 0 " + px(W) + " " + px(H) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + px(L) + "\" y=\"22\" font-size=\"15\" font-weight=\"bold\">tensoropt's cost model against "
       "published training runs</text>\n";
  s += "<text x=\"" + px(L) + "\" y=\"40\" fill=\"#333\">" +
       xml_escape(std::to_string(held_ok) + " of " + std::to_string(held) +
                  " held rows meet their tolerance; main table median |error| " +
                  detail::fmt("%.1f %%", 100 * published_median_error(rows, published_list::main))) +
       "</text>\n";
  // the tolerance band, the grid and the axes
  s += "<rect class=\"band\" x=\"" + px(L) + "\" y=\"" + px(ys(15)) + "\" width=\"" + px(W - R - L) + "\" height=\"" +
       px(ys(-15) - ys(15)) + "\" fill=\"#e6f2e6\"><title>within 15 %: the tolerance of a held row</title></rect>\n";
  for (double t : xs.ticks(1, tlo, thi)) {
    const double x = xs(t);
    s += "<line x1=\"" + px(x) + "\" y1=\"" + px(T) + "\" x2=\"" + px(x) + "\" y2=\"" + px(H - B) +
         "\" stroke=\"#e4e4e4\"/>";
    s += "<text x=\"" + px(x) + "\" y=\"" + px(H - B + 16) + "\" text-anchor=\"middle\">" +
         xml_escape(format_seconds(t)) + "</text>\n";
  }
  for (double e = elo; e <= ehi + 1e-9; e += step) {
    const double y = ys(e);
    s += "<line x1=\"" + px(L) + "\" y1=\"" + px(y) + "\" x2=\"" + px(W - R) + "\" y2=\"" + px(y) + "\" stroke=\"" +
         (e == 0 ? "#555" : "#e4e4e4") + "\"/>";
    s += "<text x=\"" + px(L - 6) + "\" y=\"" + px(y + 4) + "\" text-anchor=\"end\">" +
         xml_escape(detail::fmt(e > 0 ? "+%g %%" : "%g %%", e)) + "</text>\n";
  }
  s += "<rect x=\"" + px(L) + "\" y=\"" + px(T) + "\" width=\"" + px(W - R - L) + "\" height=\"" + px(H - B - T) +
       "\" fill=\"none\" stroke=\"#333\"/>\n";
  s += "<text x=\"" + px((L + W - R) / 2) + "\" y=\"" + px(H - 16) +
       "\" text-anchor=\"middle\">measured time per iteration (per layer pass for a layer)" +
       std::string(xs.log ? ", log scale" : "") + "</text>\n";
  s += "<text transform=\"translate(18," + px((T + H - B) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">predicted / measured - 1</text>\n";
  // the rows, then the legend
  const double lx = W - R + 18;
  double ly = T + 8;
  std::string legend;
  for (const auto& st : styles) {
    std::size_t n = 0;
    for (const auto& r : rows) {
      if (r.list != st.list || !(r.measured > 0) || !(r.predicted > 0)) continue;
      ++n;
      const bool hollow = st.list == published_list::outside || !r.held;
      const std::string held_as = r.held ? detail::fmt("held to %g %%", 100 * r.tolerance) + (r.ok() ? "" : " (MISSED)")
                                         : (st.list == published_list::layer ? "printed, must be under-predicted: "
                                                                             : "outside: ") + r.note;
      const std::string title = r.name + " (" + r.device + "): measured " + format_seconds(r.measured) +
                                ", predicted " + format_seconds(r.predicted) +
                                detail::fmt(", error %+.1f %%", 100 * r.error()) + "; " + held_as +
                                (r.confirmed ? "" : "; unconfirmed: " + r.note) + "; source: " + r.source;
      s += mark(st, xs(r.measured), ys(100 * r.error()), hollow,
                "class=\"row\" data-list=\"" + std::string(to_string(st.list)) + "\" data-name=\"" +
                    xml_escape(r.name) + "\"",
                title) +
           "\n";
    }
    if (n == 0) continue;
    legend += mark(st, lx + 6, ly, st.list == published_list::outside, "", "");
    legend += "<text x=\"" + px(lx + 18) + "\" y=\"" + px(ly + 4) + "\">" + xml_escape(st.label) + "</text>\n";
    ly += 15;
    legend += "<text x=\"" + px(lx + 18) + "\" y=\"" + px(ly + 4) + "\" fill=\"#555\" font-size=\"11\">" +
              xml_escape(std::to_string(n) + " rows, median |error| " +
                         detail::fmt("%.1f %%", 100 * published_median_error(rows, st.list))) +
              "</text>\n";
    ly += 22;
  }
  legend += "<rect x=\"" + px(lx) + "\" y=\"" + px(ly - 6) + "\" width=\"12\" height=\"12\" fill=\"#e6f2e6\"/>";
  legend += "<text x=\"" + px(lx + 18) + "\" y=\"" + px(ly + 4) + "\">within 15 %</text>\n";
  ly += 22;
  legend += "<text x=\"" + px(lx) + "\" y=\"" + px(ly + 4) + "\" fill=\"#555\" font-size=\"11\">hollow: not held "
            "(hover a mark for its reason)</text>\n";
  s += legend + "</svg>\n";
  return s;
}

}  // namespace tensoropt
