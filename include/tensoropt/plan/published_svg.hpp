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
  enum class shape { circle, square, triangle, diamond };
  struct list_style {
    const char* label;
    const char* color;
    enum shape shape;
  };
  const std::string tol = detail::fmt("%g %%", 100 * published_row_tolerance);
  const std::string held_each = "(held: " + tol + " each";
  auto style = [&](published_list l) -> list_style {
    switch (l) {
      case published_list::main: return {"main table", "#1f77b4", shape::circle};
      case published_list::fused_stack: return {"fused batch-norm stack", "#2ca02c", shape::square};
      case published_list::fp32: return {"FP32 on V100", "#9467bd", shape::triangle};
      case published_list::layer: return {"one layer timed alone", "#ff7f0e", shape::diamond};
      case published_list::outside: break;
    }
    return {"outside the model (printed)", "#7f7f7f", shape::circle};
  };
  auto label = [&](published_list l) {
    const std::string name = style(l).label;
    if (l == published_list::main)
      return name + " " + held_each + ", median " + detail::fmt("%g %%)", 100 * published_median_tolerance);
    if (l == published_list::fused_stack || l == published_list::fp32) return name + " " + held_each + ")";
    return name;
  };
  // one mark, closed: with a tooltip when `title` is not empty
  auto mark = [&](const list_style& st, double x, double y, bool hollow, const std::string& attrs,
                  const std::string& title) {
    const std::string paint = std::string("fill=\"") + (hollow ? "none" : st.color) + "\" stroke=\"" + st.color +
                              "\" stroke-width=\"1.5\"";
    std::string tag, geometry;
    if (st.shape == shape::square) {
      tag = "rect";
      geometry = "x=\"" + px(x - 4.5) + "\" y=\"" + px(y - 4.5) + "\" width=\"9\" height=\"9\"";
    } else if (st.shape == shape::triangle) {
      tag = "path";
      geometry = "d=\"M" + px(x) + "," + px(y - 6) + " L" + px(x + 5.5) + "," + px(y + 4) + " L" + px(x - 5.5) + "," +
                 px(y + 4) + " Z\"";
    } else if (st.shape == shape::diamond) {
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
                  detail::fmt("%.1f %%", 100 * summarize(rows, published_list::main).median)) +
       "</text>\n";
  // the tolerance band, the grid and the axes
  const double band = 100 * published_row_tolerance;
  s += "<rect class=\"band\" x=\"" + px(L) + "\" y=\"" + px(ys(band)) + "\" width=\"" + px(W - R - L) +
       "\" height=\"" + px(ys(-band) - ys(band)) + "\" fill=\"#e6f2e6\"><title>" +
       xml_escape("within " + tol + ": the tolerance of a held row") + "</title></rect>\n";
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
  for (const published_list l : published_lists) {
    const list_style st = style(l);
    for (const auto& r : rows) {
      if (r.list != l || !(r.measured > 0) || !(r.predicted > 0)) continue;
      const std::string title = r.name + " (" + r.device + "): measured " + format_seconds(r.measured) +
                                ", predicted " + format_seconds(r.predicted) +
                                detail::fmt(", error %+.1f %%", 100 * r.error()) + "; held to " + r.held_to() +
                                (r.ok() ? "" : " (MISSED)") +
                                (r.confirmed ? "" : r.held ? "; unconfirmed: " + r.note : "; unconfirmed") +
                                "; source: " + r.source;
      s += mark(st, xs(r.measured), ys(100 * r.error()), l == published_list::outside || !r.held,
                "class=\"row\" data-list=\"" + std::string(to_string(l)) + "\" data-name=\"" + xml_escape(r.name) +
                    "\"",
                title) +
           "\n";
    }
    const published_summary sum = summarize(rows, l);
    if (sum.rows == 0) continue;
    legend += mark(st, lx + 6, ly, l == published_list::outside, "", "");
    legend += "<text x=\"" + px(lx + 18) + "\" y=\"" + px(ly + 4) + "\">" + xml_escape(label(l)) + "</text>\n";
    ly += 15;
    legend += "<text x=\"" + px(lx + 18) + "\" y=\"" + px(ly + 4) + "\" fill=\"#555\" font-size=\"11\">" +
              xml_escape(std::to_string(sum.rows) + " rows, median |error| " + detail::fmt("%.1f %%", 100 * sum.median)) +
              "</text>\n";
    ly += 22;
  }
  legend += "<rect x=\"" + px(lx) + "\" y=\"" + px(ly - 6) + "\" width=\"12\" height=\"12\" fill=\"#e6f2e6\"/>";
  legend += "<text x=\"" + px(lx + 18) + "\" y=\"" + px(ly + 4) + "\">" + xml_escape("within " + tol) + "</text>\n";
  ly += 22;
  legend += "<text x=\"" + px(lx) + "\" y=\"" + px(ly + 4) + "\" fill=\"#555\" font-size=\"11\">hollow: not held "
            "(hover a mark for its reason)</text>\n";
  s += legend + "</svg>\n";
  return s;
}

}  // namespace tensoropt
