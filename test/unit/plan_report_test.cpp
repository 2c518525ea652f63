// Reports: the shown points are a cover with the chosen and fastest plans, each row says
// what changes, the table fits 80 columns, the plot marks what does not fit and ticks the
// frontier's range, the HTML page carries its data safely.
#include <tensoropt/plan/report_html.hpp>
#include <doctest/doctest.h>
#include <algorithm>
#include <cctype>
#include <sstream>

// File-local: the unit tests of an area are built as one unity translation unit.
namespace plan_report_test_file {

using namespace tensoropt;

namespace {
frontier_report sample(int n, double spread) {
  frontier_report r;
  r.model = "gpt3-1.3b";
  r.cluster = "8 x a100-80gb";
  r.precision = "bf16-mixed";
  r.samples = 1024;
  r.capacity = 80 * gib;
  r.op_names = {"embed", "layers.0.mlp.fc1", "layers.1.mlp.fc1", "head"};
  for (int i = 0; i < n; ++i) {
    frontier_report::point p;
    p.memory = gib * (1 + i * spread);
    p.time = 10.0 / (1 + i * spread);
    p.micro_batches = 1 + i % 4;
    p.labels = {"h4", i % 2 ? "b4 | rc" : "b4", "b4", "b4"};
    p.summary = "dp 4 x tp 2, recompute " + std::to_string(i) +
                "/24 layers and a very long tail that must be cut";
    r.points.push_back(p);
  }
  r.baselines.push_back({"data parallel", 3.0, 50 * gib, true, "dp 8"});
  r.baselines.push_back({"megatron tp 16", 0, 0, false, "t = 16 does not divide 8 devices"});
  r.chosen = n / 2;
  r.budget = 4 * gib;
  return r;
}
std::size_t count(const std::string& s, const std::string& what) {
  std::size_t c = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++c;
  return c;
}
}  // namespace

TEST_CASE("the shown points are a cover at the display tolerance with the chosen and the fastest plan") {
  auto r = sample(400, 0.01);  // times 1 % apart at the start: a 5 % cover drops most
  r.display_tolerance = 0.05;
  const auto sh = shown(r);
  CHECK(sh.tolerance == 0.05);
  CHECK(is_cover(r.points, sh.rows, 0.05));
  CHECK(sh.rows.size() < 80);
  CHECK(std::find(sh.rows.begin(), sh.rows.end(), std::size_t(200)) != sh.rows.end());
  CHECK(sh.rows.back() == 399);
  CHECK(sh.rows.front() == 0);
  // Tolerance 0 shows every point; too many rows step the tolerance up.
  r.display_tolerance = 0;
  CHECK(shown(r).rows.size() < 400);  // more than max_shown (300): the tolerance steps up
  r.max_shown = 1000;
  CHECK(shown(r).rows.size() == 400);
  const auto few = shown(r, 10);
  CHECK(few.rows.size() <= 10);
  CHECK(few.tolerance > 0.05);
  CHECK(is_cover(r.points, few.rows, few.tolerance));
}

TEST_CASE("the table shows the cover, fits 80 columns, marks the choice and says what changes") {
  auto r = sample(12, 0.5);
  r.display_tolerance = 0;
  r.baselines.push_back({"min time (single objective), k 1024", 2.0, 1400 * gib, true, "ignores memory"});
  const auto t = format_table(r);
  std::istringstream in(t);
  std::string line;
  int rows = 0, marked = 0;
  while (std::getline(in, line)) {
    CHECK(line.size() <= 80);
    if (line.size() > 3 && line[0] == '*') ++marked;
    if (line.size() > 5 && (line[0] == '*' || line[0] == ' ') && std::isdigit(static_cast<unsigned char>(line[4])))
      ++rows;
  }
  CHECK(rows == 12);
  CHECK(marked == 1);
  CHECK(t.find("t = 16 does not divide") != std::string::npos);
  CHECK(t.find("\n  min time (single objective), k 1024\n") != std::string::npos);
  CHECK(t.find("1.37 TiB     2.00 s  does not fit (> 80 GiB)") != std::string::npos);
  CHECK(t.find("layers.0.mlp.fc1 +rc") != std::string::npos);  // what changes from the row above
  CHECK(t.find("k 1 -> 2") != std::string::npos);
  CHECK(t.find("3.33 s") != std::string::npos);                 // three significant digits
  r.display_tolerance = 0.5;
  const auto covered = format_table(r);
  CHECK(covered.find(std::to_string(shown(r).rows.size()) + " of 12 plans shown") != std::string::npos);
  CHECK(covered.find("at most 50 % more time") != std::string::npos);
}

TEST_CASE("describe_change groups the ops of repeated layers and names single ones") {
  frontier_report r;
  r.op_names = {"embed", "layers.0.mlp.fc1", "layers.1.mlp.fc1", "layers.2.mlp.fc1", "head"};
  r.points.push_back({2, 1, 4, {}, {"h4", "f4", "f4", "f4 | zo", "b4"}, "tp 4 (b4 on 1 op), recompute"});
  r.points.push_back({1, 2, 2, {}, {"h2 f2", "f4 | rc", "f4 | rc", "f4 | zo", "b4"}, "tp 4, zero 3/3 layers"});
  r.points.push_back({0.5, 3, 2, {}, {"h2 f2", "b4 | rc", "f4 | rc", "f4 | rc", "b4"}, "dp 4"});
  CHECK(describe_change(r, 0, 1) == "k 4 \u2192 2; layers.*.mlp.fc1 +rc (2 of 3); embed h4 \u2192 h2 f2");
  CHECK(describe_change(r, 0, 1, 3, true) == "k 4 -> 2; mlp.fc1 +rc (2/3); embed h4 -> h2 f2");
  CHECK(describe_change(r, 1, 2, 3, true) ==
        "tp 4 -> dp 4; layers.0.mlp.fc1 f4 -> b4; layers.2.mlp.fc1 +rc -zo");
  CHECK(describe_change(r, 0, 1, 1, true) == "k 4 -> 2; mlp.fc1 +rc (2/3); 1 more changes");
  CHECK(describe_change(r, 1, 1) == "same configs");
  CHECK(detail::generic_name("layers.12.mlp.fc1") == "layers.*.mlp.fc1");
  CHECK(detail::generic_name("blocks.3.2.conv1x1") == "blocks.*.*.conv1x1");
}

TEST_CASE("the SVG marks the shown points, draws baselines that do not fit hollow and puts every line in the legend") {
  auto r = sample(9, 2.0);
  r.display_tolerance = 0;
  r.baselines.push_back({"min time (single objective)", 2.5, 100 * gib, true, ""});  // above 80 GiB
  const auto s = to_svg(r);
  CHECK(s.rfind("<svg", 0) == 0);
  CHECK(s.find("</svg>") != std::string::npos);
  CHECK(count(s, "<circle class=\"pt\"") == 9);
  CHECK(count(s, "transform=\"rotate(45") == 2 * 2);  // two valid baselines, on the plot and in the legend
  CHECK(count(s, "fill=\"white\" stroke=") == 2);     // the one that does not fit, hollow twice
  CHECK(s.find("2.50 s; does not fit (100 GiB &gt; 80 GiB)") != std::string::npos);
  CHECK(s.find("chosen plan #4") != std::string::npos);
  CHECK(s.find("(log scale)") != std::string::npos);  // memory spans 17x: log scale
  CHECK(s.find(">memory budget 4 GiB</text>") != std::string::npos);
  CHECK(s.find(">device capacity 80 GiB</text>") != std::string::npos);
}

TEST_CASE("a baseline far off the frontier is drawn at the edge with its value") {
  auto r = sample(5, 0.2);
  r.capacity = 16 * gib;
  r.budget = 0;
  r.baselines = {{"min time (single objective)", 2.0, 1400 * gib, true, ""}};
  const auto s = to_svg(r);
  CHECK(s.find("1.37 TiB \u2192") != std::string::npos);
  CHECK(s.find("(off the scale)") != std::string::npos);
  CHECK(s.find("(log scale)") == std::string::npos);  // 1-16 GiB stays linear
}

TEST_CASE("memory ticks fall inside the frontier's range, at least 48 px apart") {
  // A frontier at 11-17 GiB with a baseline at 105 GiB: a log axis from 5 to 110 GiB.
  const auto xs = detail::axis_scale::make(5 * gib, 110 * gib, 80, 620);
  REQUIRE(xs.log);
  const auto ticks = xs.ticks(gib, 11 * gib, 17 * gib);
  CHECK(std::count_if(ticks.begin(), ticks.end(), [](double t) { return t >= 11 * gib && t <= 17 * gib; }) >= 1);
  for (std::size_t i = 1; i < ticks.size(); ++i) CHECK(xs(ticks[i]) - xs(ticks[i - 1]) >= 48);
  CHECK(ticks.size() >= 3);
  CHECK(detail::axis_scale::make(34, 58, 440, 40).ticks(1, 34, 58, 28).size() >= 4);  // 35, 40, ..., 55
  const auto lin = detail::axis_scale::make(25, 52, 440, 40);
  CHECK_FALSE(lin.log);
  const auto lt = lin.ticks(1, 25, 52, 28);
  CHECK(lt.size() >= 4);
  for (double t : lt) CHECK(std::fabs(t / 5 - std::round(t / 5)) < 1e-9);  // round values
}

TEST_CASE("the HTML report embeds the plot, the plan data, the per-op table and escapes everything") {
  auto r = sample(5, 1.0);
  r.display_tolerance = 0;
  r.op_names[0] = "</script><b>x";
  r.model = "a<b>&c";
  r.chosen_ops.push_back({"layers.0.attn.qkv", "b4 heads2", 1e-3, 1e8, "all-reduce grads 24 MiB (dp 4)"});
  const auto h = to_html(r);
  CHECK(h.find("<svg") != std::string::npos);
  CHECK(h.find("layers.0.attn.qkv") != std::string::npos);
  CHECK(h.find("all-reduce grads 24 MiB") != std::string::npos);
  CHECK(count(h, "<tr data-i=") == 5);
  CHECK(count(h, "class=\"chosen\"") == 1);
  CHECK(count(h, "</script>") == 3);  // the error handler, the data block and the panel script
  CHECK(h.find("\\u003c/script\\u003e\\u003cb\\u003ex") != std::string::npos);
  CHECK(h.find("a<b>") == std::string::npos);
  CHECK(h.find("a&lt;b&gt;&amp;c") != std::string::npos);
  CHECK(h.find("id=\"report-data\"") != std::string::npos);
  CHECK(h.find("data-report") != std::string::npos);
  CHECK(h.find("<td class=\"l\">yes</td>") != std::string::npos);  // data parallel fits 80 GiB
}

TEST_CASE("an empty frontier and a one-point frontier still render") {
  frontier_report empty;
  empty.model = "m";
  CHECK(shown(empty).rows.empty());
  CHECK(to_svg(empty).find("</svg>") != std::string::npos);
  CHECK(to_html(empty).find("data-report") != std::string::npos);
  CHECK(format_table(empty).find("iter time") != std::string::npos);
  auto one = sample(1, 1.0);
  one.chosen = 0;
  CHECK(shown(one).rows == std::vector<std::size_t>{0});
  CHECK(count(to_svg(one), "<circle class=\"pt\"") == 1);
  CHECK(count(to_html(one), "<tr data-i=") == 1);
}

TEST_CASE("a predicted MFU gets its own column, still within 80 columns") {
  auto r = sample(6, 0.5);
  r.display_tolerance = 0;
  CHECK(format_table(r).find("MFU") == std::string::npos);  // not known: no column
  for (auto& p : r.points) p.mfu = 0.05 * p.time;
  const auto t = format_table(r);
  CHECK(t.find("  MFU  ") != std::string::npos);
  CHECK(t.find("50.0%") != std::string::npos);  // point 0: 10 s * 0.05
  std::istringstream in(t);
  for (std::string line; std::getline(in, line);) CHECK(line.size() <= 80);
  const auto h = to_html(r);
  CHECK(h.find(">MFU</th>") != std::string::npos);
  CHECK(h.find("<td>50.0 %</td>") != std::string::npos);
}

TEST_CASE("pipeline stages: a pp column, markers coloured by degree with a legend entry each, stages in the HTML") {
  auto r = sample(6, 0.5);
  r.display_tolerance = 0;
  CHECK(!has_stages(r));
  CHECK(format_table(r).find(" pp ") == std::string::npos);  // no stages: no column
  CHECK(to_svg(r).find("data-pp") == std::string::npos);
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    auto& p = r.points[i];
    p.pipeline_degree = i < 2 ? 1 : i < 4 ? 2 : 4;
    if (p.pipeline_degree == 2) p.stage_begin = {0, 2};
    if (p.pipeline_degree == 4) p.stage_begin = {0, 1, 2, 3};
  }
  r.points[3].stage_begin = {0, 1};  // the same degree, another cut
  REQUIRE(has_stages(r));
  const auto t = format_table(r);
  CHECK(t.find("   k   pp  ") != std::string::npos);
  std::istringstream in(t);
  for (std::string line; std::getline(in, line);) CHECK(line.size() <= 80);
  CHECK(t.find("   3    2  ") != std::string::npos);  // point 2: k 3, then pp 2
  CHECK(describe_change(r, 2, 3).find("stages cut elsewhere") != std::string::npos);
  const auto svg = to_svg(r);
  CHECK(count(svg, "data-pp=\"1\"") == 2);
  CHECK(count(svg, "data-pp=\"2\"") == 2);
  CHECK(count(svg, "data-pp=\"4\"") == 2);
  CHECK(svg.find(">no pipeline (pp 1): 2 plans<") != std::string::npos);
  CHECK(svg.find(">pp 2: 2 plans<") != std::string::npos);
  CHECK(svg.find(">pp 4: 2 plans<") != std::string::npos);
  const auto h = to_html(r);
  CHECK(h.find("<th title=\"pipeline degree\">pp</th>") != std::string::npos);
  CHECK(h.find(">ops 0, 1, 2, 3</span>") != std::string::npos);
  // the panel's data: degree and stages with their first and last op
  CHECK(h.find("\"p\":4,\"st\":[[0,1,\"embed\",\"embed\"],[1,2,\"layers.0.mlp.fc1\",\"layers.0.mlp.fc1\"]") !=
        std::string::npos);
  CHECK(h.find("pipeline stages (1F1B over") != std::string::npos);
}

TEST_CASE("past eight baselines the plot draws the fastest that fit and counts the rest") {
  auto r = sample(6, 0.5);
  r.baselines.clear();
  for (int i = 0; i < 12; ++i)
    r.baselines.push_back({"pp " + std::to_string(i + 1) + " x tp 1", 1.0 + i, (i % 3 ? 2 : 90) * gib, true, ""});
  const auto svg = to_svg(r);
  CHECK(svg.find(">4 more baselines (slower or not fitting)<") != std::string::npos);
  CHECK(svg.find(">pp 2 x tp 1<") != std::string::npos);   // fits, fast
  CHECK(svg.find(">pp 1 x tp 1<") == std::string::npos);   // 90 GiB does not fit 80
  CHECK(to_html(r).find(">pp 1 x tp 1<") != std::string::npos);  // the HTML lists every one
}
}  // namespace plan_report_test_file
