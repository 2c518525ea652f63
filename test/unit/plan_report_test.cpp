// Reports: the table fits 80 columns, the SVG shows every point, baseline and the choice.
#include <tensoropt/plan/report.hpp>
#include <doctest/doctest.h>
#include <algorithm>
#include <sstream>

using namespace tensoropt;

namespace {
frontier_report sample(int n, double spread) {
  frontier_report r;
  r.model = "gpt3-1.3b";
  r.cluster = "8 x a100-80gb";
  r.precision = "bf16-mixed";
  r.samples = 1024;
  r.capacity = 80 * gib;
  for (int i = 0; i < n; ++i) {
    plan_point p;
    p.memory = gib * (1 + i * spread);
    p.time = 10.0 / (1 + i * spread);
    p.micro_batches = 1 + i % 4;
    p.summary = "dp " + std::to_string(1 << (i % 4)) + " x tp 2, recompute " + std::to_string(i) +
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

TEST_CASE("the table has one row per point, fits 80 columns and marks the choice") {
  const auto r = sample(12, 0.5);
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
}

TEST_CASE("the SVG draws every point, the valid baselines and the chosen plan") {
  const auto r = sample(9, 2.0);
  const auto s = to_svg(r);
  CHECK(s.rfind("<svg", 0) == 0);
  CHECK(s.find("</svg>") != std::string::npos);
  CHECK(count(s, "<circle") == 9 + 1 /* legend */ + 2 /* chosen ring + its legend */);
  CHECK(count(s, "transform=\"rotate(45") == 1);  // only the valid baseline is drawn
  CHECK(s.find("chosen plan #4") != std::string::npos);
  CHECK(s.find("(log)") != std::string::npos);  // memory spans 17x: log scale
  CHECK(s.find("memory budget 4 GiB") != std::string::npos);
}

TEST_CASE("a narrow range uses linear axes; text is escaped") {
  auto r = sample(3, 0.1);
  r.model = "a<b>&c";
  r.baselines.clear();
  const auto s = to_svg(r);
  CHECK(s.find("(log)") == std::string::npos);
  CHECK(s.find("a&lt;b&gt;&amp;c") != std::string::npos);
  CHECK(s.find("a<b>") == std::string::npos);
}

TEST_CASE("the HTML report embeds the plot and the per-op table of the choice") {
  auto r = sample(5, 1.0);
  r.chosen_ops.push_back({"layers.0.attn.qkv", "b4 heads2", 1e-3, 1e8, "all-reduce grads 24 MiB (dp 4)"});
  const auto h = to_html(r);
  CHECK(h.find("<svg") != std::string::npos);
  CHECK(h.find("layers.0.attn.qkv") != std::string::npos);
  CHECK(h.find("all-reduce grads 24 MiB") != std::string::npos);
  CHECK(count(h, "class=\"chosen\"") == 1);
}

TEST_CASE("a long frontier is shown as a spread of rows that keeps both ends and the choice") {
  auto r = sample(500, 0.05);
  r.chosen = 123;
  const auto rows = table_rows(r, 30);
  CHECK(rows.size() >= 25);
  CHECK(rows.size() <= 31);
  CHECK(rows.front() == 0);
  CHECK(rows.back() == 499);
  CHECK(std::is_sorted(rows.begin(), rows.end()));
  CHECK(std::adjacent_find(rows.begin(), rows.end()) == rows.end());
  CHECK(std::find(rows.begin(), rows.end(), std::size_t(123)) != rows.end());
  const auto t = format_table(r, 30);
  CHECK(t.find("(500 points; ") != std::string::npos);
  CHECK(table_rows(sample(10, 1.0), 30).size() == 10);
}
