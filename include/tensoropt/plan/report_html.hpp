// The HTML report of a frontier: one self-contained page (no network, no external files).
//
// The page holds the plot (report_svg.hpp), a panel with the plan of one point, the
// table of the shown points (the cover of report.hpp, each row saying what changes
// from the row above and which frontier points it stands for), the baselines (whether
// each fits the device) and the chosen plan's per-op table (config, time, memory,
// collectives). With pipeline stages, the table has each point's degree and stages
// (first op of each), the panel lists the stages (ops, first and last op's names), and
// the chosen plan's table is per stage.
//
// The plan panel. Hovering a marker of the plot or a row of the table shows that point's
// plan; a click pins it (a second click unpins); `report.html#plan=N` opens with point N
// pinned. A plan lists its ops grouped over
// repeated layers ("layers.*.mlp.fc1 (24): b4 | rc x20, b4 x4"), and marks the groups
// whose configs differ from the chosen plan. The data behind it sits in a JSON block
// (op names, each distinct config label once, and per shown point one label index per
// op), read by about 60 lines of inline script.
//
// Script errors are not silent: a handler installed before anything else appends each
// error to the page (`p.js-error`), and the script marks the page `data-report="ok"`
// when it has drawn the panel. The browser test renders the page headless and checks both.
#pragma once
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>
#include "report.hpp"
#include "report_svg.hpp"

namespace tensoropt {
namespace detail {

/// A JSON string literal, safe inside a <script> block ("<" is escaped).
inline std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += char(c); }
    else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += char(c);
    }
  }
  return o + "\"";
}

inline std::string count_with_commas(std::size_t n) {
  std::string s = std::to_string(n), o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) o += ',';
    o += s[i];
  }
  return o;
}

/// The JSON block the panel script reads: ops, their groups, labels, shown points.
inline std::string report_data(const frontier_report& r, const shown_points& sh) {
  std::size_t ops = 0;
  for (std::size_t i : sh.rows) ops = std::max(ops, r.points[i].labels.size());
  std::vector<std::string> names(ops), groups;
  std::map<std::string, std::size_t> group_index, label_index;
  std::vector<std::size_t> group_of(ops);
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < ops; ++i) {
    names[i] = i < r.op_names.size() ? r.op_names[i] : "node " + std::to_string(i);
    const std::string g = generic_name(names[i]);
    auto [it, fresh] = group_index.emplace(g, groups.size());
    if (fresh) groups.push_back(g);
    group_of[i] = it->second;
  }
  std::string o = "{\"groups\":[";
  for (std::size_t g = 0; g < groups.size(); ++g) o += (g ? "," : "") + json_string(groups[g]);
  o += "],\"group_of\":[";
  for (std::size_t i = 0; i < ops; ++i) o += (i ? "," : "") + std::to_string(group_of[i]);
  o += "],\"chosen\":" + std::to_string(r.chosen) + ",\"points\":[";
  for (std::size_t n = 0; n < sh.rows.size(); ++n) {
    const auto& p = r.points[sh.rows[n]];
    o += std::string(n ? ",\n" : "\n") + "{\"i\":" + std::to_string(sh.rows[n]) + ",\"m\":" + json_string(format_bytes(p.memory)) +
         ",\"t\":" + json_string(format_seconds(p.time)) + ",\"k\":" + std::to_string(p.micro_batches) +
         ",\"u\":" + json_string(p.mfu > 0 ? fmt("%.1f %%", 100 * p.mfu) : "") +
         ",\"s\":" + json_string(p.summary);
    if (p.pipeline_degree > 1) {  // stages: [first op, last op] names per stage
      o += ",\"p\":" + std::to_string(p.pipeline_degree) + ",\"st\":[";
      for (std::size_t s = 0; s < p.stage_begin.size(); ++s) {
        const std::size_t a = p.stage_begin[s], b = s + 1 < p.stage_begin.size() ? p.stage_begin[s + 1] : ops;
        auto name = [&](std::size_t i) { return i < names.size() ? names[i] : "op " + std::to_string(i); };
        o += std::string(s ? "," : "") + "[" + std::to_string(a) + "," + std::to_string(b) + "," + json_string(name(a)) +
             "," + json_string(name(b > a ? b - 1 : a)) + "]";
      }
      o += "]";
    }
    o += ",\"c\":[";
    for (std::size_t i = 0; i < p.labels.size(); ++i) {
      auto [it, fresh] = label_index.emplace(p.labels[i], labels.size());
      if (fresh) labels.push_back(p.labels[i]);
      o += (i ? "," : "") + std::to_string(it->second);
    }
    o += "]}";
  }
  o += "],\n\"labels\":[";
  for (std::size_t l = 0; l < labels.size(); ++l) o += (l ? "," : "") + json_string(labels[l]);
  return o + "]}";
}

/// "ops 0, 57, 114, 171" of a pipeline point (at most 16 stages listed, then "... (64 stages)"),
/// the first op's name of each in its tooltip; "-" without stages.
inline std::string stage_list(const frontier_report& r, const frontier_report::point& p) {
  if (p.pipeline_degree <= 1 || p.stage_begin.empty()) return "-";
  std::string o = "ops ", title;
  for (std::size_t s = 0; s < p.stage_begin.size() && s < 16; ++s) {
    o += (s ? ", " : "") + std::to_string(p.stage_begin[s]);
    if (p.stage_begin[s] < r.op_names.size()) title += (s ? ", " : "") + r.op_names[p.stage_begin[s]];
  }
  if (p.stage_begin.size() > 16) o += ", \u2026 (" + std::to_string(p.stage_begin.size()) + " stages)";
  return "<span title=\"" + xml_escape(title) + "\">" + o + "</span>";
}

inline constexpr const char* report_style =
    "body{font-family:sans-serif;margin:24px;max-width:1500px;color:#222}"
    "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;"
    "font-size:13px;vertical-align:top;white-space:nowrap}td.l,th.l{text-align:left;white-space:normal}th{background:#f4f4f4}"
    "tr.chosen{background:#fde0e0}tr.hl{background:#e3eefa}tr[data-i]{cursor:pointer}"
    "code{background:#f4f4f4;white-space:nowrap}.same{color:#999}.top{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}"
    ".plan{flex:1;min-width:360px;max-width:560px;border:1px solid #ccc;padding:8px 12px;font-size:13px}"
    ".plan h3{margin:4px 0}.plan table{margin:6px 0}.plan tr.diff td{background:#fff4d6}"
    ".muted{color:#666;font-size:12px}circle.pt{cursor:pointer}circle.pt.hl{stroke:#000;stroke-width:2}"
    ".js-error{color:#b00;font-weight:bold}";

// The panel script (see the header). Plain ES2015, no libraries.
inline constexpr const char* report_script = R"JS(
(function () {
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var byI = {}, pinned = null, current = null;
  D.points.forEach(function (p) { byI[p.i] = p; });
  var panel = document.getElementById('plan');
  function groups(p) {
    var g = D.groups.map(function () { return {}; });
    p.c.forEach(function (l, op) { var x = g[D.group_of[op]]; x[l] = (x[l] || 0) + 1; });
    return g;
  }
  function same(a, b) {
    var ka = Object.keys(a), kb = Object.keys(b);
    return ka.length === kb.length && ka.every(function (k) { return a[k] === b[k]; });
  }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function highlight(i) {
    document.querySelectorAll('.hl').forEach(function (e) { e.classList.remove('hl'); });
    document.querySelectorAll('[data-i="' + i + '"]').forEach(function (e) { e.classList.add('hl'); });
  }
  function show(i) {
    var p = byI[i];
    if (!p || i === current) return;
    current = i;
    highlight(i);
    panel.textContent = '';
    panel.appendChild(el('h3', 'Plan #' + i + (i === D.chosen ? ' (chosen)' : '')));
    panel.appendChild(el('p', p.m + ' per device, ' + p.t + ' per iteration, ' + p.k + ' micro-batches' +
                              (p.u ? ', MFU ' + p.u : '')));
    panel.appendChild(el('p', p.s));
    if (p.st) {
      var ts = el('table'), hs = el('tr');
      ['stage', 'ops', 'first op', 'last op'].forEach(function (h) { hs.appendChild(el('th', h, 'l')); });
      ts.appendChild(hs);
      p.st.forEach(function (x, s) {
        var r = el('tr');
        [String(s), x[0] + '\u2013' + (x[1] - 1), x[2], x[3]].forEach(function (v) { r.appendChild(el('td', v, 'l')); });
        ts.appendChild(r);
      });
      panel.appendChild(el('p', p.p + ' pipeline stages (1F1B over ' + p.k + ' micro-batches):'));
      panel.appendChild(ts);
    }
    panel.appendChild(el('p', pinned === i ? 'Pinned: click the point again to unpin.'
                                           : 'Hover a point or a row to see its plan; click to pin it.', 'muted'));
    var mine = groups(p), ref = byI[D.chosen] ? groups(byI[D.chosen]) : null;
    var t = el('table'), head = el('tr');
    head.appendChild(el('th', 'ops', 'l'));
    head.appendChild(el('th', 'configs', 'l'));
    t.appendChild(head);
    var differ = 0;
    D.groups.forEach(function (name, g) {
      var counts = mine[g], n = 0, parts = Object.keys(counts).sort(function (a, b) { return counts[b] - counts[a]; });
      parts.forEach(function (l) { n += counts[l]; });
      var row = el('tr', undefined, ref && !same(counts, ref[g]) ? 'diff' : '');
      if (row.className) differ++;
      row.appendChild(el('td', name + (n > 1 ? ' (' + n + ')' : ''), 'l'));
      row.appendChild(el('td', parts.map(function (l) {
        return D.labels[+l] + (counts[l] < n ? ' \u00d7' + counts[l] : '');
      }).join(', '), 'l'));
      t.appendChild(row);
    });
    if (ref && i !== D.chosen)
      panel.appendChild(el('p', differ + ' op groups differ from the chosen plan (shaded).', 'muted'));
    panel.appendChild(t);
  }
  document.querySelectorAll('[data-i]').forEach(function (e) {
    var i = +e.getAttribute('data-i');
    e.addEventListener('mouseenter', function () { if (pinned === null) show(i); });
    e.addEventListener('click', function () {
      pinned = pinned === i ? null : i;
      current = null;
      show(i);
    });
  });
  var asked = /^#plan=(\d+)$/.exec(location.hash);
  if (asked && byI[+asked[1]]) pinned = +asked[1];
  show(pinned !== null ? pinned : byI[D.chosen] ? D.chosen : D.points.length ? D.points[D.points.length - 1].i : -1);
  if (!D.points.length) panel.textContent = 'No plan to show.';
  document.body.setAttribute('data-report', 'ok');
})();
)JS";

}  // namespace detail

/// A self-contained HTML report of `r`: plot, plan panel, table of the shown points,
/// baselines and the chosen plan's per-op table (see the header).
inline std::string to_html(const frontier_report& r) {
  using detail::xml_escape;
  const auto sh = shown(r);
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tensoropt: " +
                  xml_escape(r.model) + "</title>\n<style>" + detail::report_style + "</style>\n"
                  "<script>window.addEventListener('error', function (e) {"
                  " var p = document.createElement('p'); p.className = 'js-error';"
                  " p.textContent = 'script error: ' + e.message + ' (line ' + e.lineno + ')';"
                  " (document.getElementById('js-errors') || document.documentElement).appendChild(p); });</script>"
                  "</head><body>\n<div id=\"js-errors\"></div>\n";
  h += "<h1>" + xml_escape(r.model) + " on " + xml_escape(r.cluster) + "</h1>\n<p>Precision " +
       xml_escape(r.precision) + ", " + detail::fmt("%.0f", r.samples) + " samples per iteration";
  if (r.capacity > 0) h += ", " + format_bytes(r.capacity) + " per device";
  h += ". " + detail::count_with_commas(r.points.size()) + " Pareto-optimal plans found in " +
       format_seconds(r.search_seconds) + "." +
       (r.budget > 0 ? " Memory budget " + format_bytes(r.budget) + "." : std::string()) + "</p>\n";
  if (sh.rows.size() < r.points.size())
    h += "<p>The plot marks and the table lists " + std::to_string(sh.rows.size()) + " of them: " +
         describe_tolerance(sh.tolerance) + " (memory exact). The line passes through every plan; "
         "<code>--all-points</code> lists them all, and the frontier JSON always holds every one.</p>\n";
  if (!r.notes.empty()) h += "<p>" + xml_escape(r.notes) + "</p>\n";
  h += "<div class=\"top\">" + to_svg(r) + "<div id=\"plan\" class=\"plan\">(the plan panel needs JavaScript)</div></div>\n";
  h += "<h2 id=\"frontier\">Frontier</h2>\n<p class=\"muted\">Each row after the first says what changes from the row above: the "
       "micro-batch count k, the main split, and the ops whose config changes, grouped over repeated layers. "
       "Configs: a dim and its degree (b4 = batch split 4 ways), r = replicated, | rc = recomputed, | zo = optimizer "
       "state sharded. \u201cStands for\u201d: the plans this row covers.</p>\n";
  const bool mfu = std::any_of(r.points.begin(), r.points.end(), [](const frontier_report::point& p) { return p.mfu > 0; });
  const bool staged = has_stages(r);
  h += std::string("<table><tr><th>#</th><th>memory / device</th><th>iteration time</th><th>samples/s</th>") +
       (mfu ? "<th title=\"predicted model FLOPs utilization\">MFU</th>" : "") + "<th>k</th>" +
       (staged ? "<th title=\"pipeline degree\">pp</th><th class=\"l\">stages (first op of each)</th>" : "") +
       "<th class=\"l\">plan</th><th class=\"l\">change from the row above</th><th>stands for</th></tr>\n";
  for (std::size_t n = 0; n < sh.rows.size(); ++n) {
    const std::size_t i = sh.rows[n], last = n + 1 < sh.rows.size() ? sh.rows[n + 1] - 1 : r.points.size() - 1;
    const auto& p = r.points[i];
    h += "<tr data-i=\"" + std::to_string(i) + "\"" + (int(i) == r.chosen ? " class=\"chosen\"" : "") + "><td>" +
         std::to_string(i) + "</td><td>" + format_bytes(p.memory) + "</td><td>" + format_seconds(p.time) + "</td><td>" +
         detail::fmt("%.1f", p.time > 0 ? r.samples / p.time : 0) + "</td><td>" +
         (mfu ? detail::fmt("%.1f %%", 100 * p.mfu) + "</td><td>" : "") + std::to_string(p.micro_batches) +
         (staged ? "</td><td>" + std::to_string(p.pipeline_degree) + "</td><td class=\"l\">" + detail::stage_list(r, p)
                 : std::string()) +
         "</td><td class=\"l\">" +
         (n > 0 && r.points[sh.rows[n - 1]].summary == p.summary ? std::string("<span class=\"same\">as above</span>")
                                                                 : xml_escape(p.summary)) +
         "</td><td class=\"l\">" +
         (n == 0 ? std::string("(least memory)") : xml_escape(describe_change(r, sh.rows[n - 1], i))) + "</td><td>" +
         (last > i ? "#" + std::to_string(i) + "\u2013#" + std::to_string(last) : "#" + std::to_string(i)) + "</td></tr>\n";
  }
  h += "</table>\n";
  if (!r.baselines.empty()) {
    h += "<h2 id=\"baselines\">Baselines</h2>\n<table><tr><th class=\"l\">strategy</th><th>memory / device</th>"
         "<th>iteration time</th><th class=\"l\">fits the device?</th><th class=\"l\">note</th></tr>\n";
    for (auto& b : r.baselines) {
      const std::string misfit = b.valid ? detail::misfit(r, b.memory) : "";
      h += "<tr><td class=\"l\">" + xml_escape(b.name) + "</td><td>" + (b.valid ? format_bytes(b.memory) : "-") +
           "</td><td>" + (b.valid ? format_seconds(b.time) : "-") + "</td><td class=\"l\">" +
           (!b.valid ? "-" : misfit.empty() ? "yes" : xml_escape(misfit)) + "</td><td class=\"l\">" +
           (!misfit.empty() && b.summary.rfind("does not fit", 0) == 0 ? std::string() : xml_escape(b.summary)) +
           "</td></tr>\n";
    }
    h += "</table>\n";
  }
  if (r.chosen >= 0 && !r.chosen_ops.empty()) {
    h += "<h2 id=\"chosen\">Chosen plan #" + std::to_string(r.chosen) + ": " + xml_escape(r.chosen_ops_title) +
         "</h2>\n<table><tr><th class=\"l\">" + (r.chosen_ops_title == "per stage" ? "stage" : "op") +
         "</th><th class=\"l\">config</th><th>time</th><th>memory</th><th class=\"l\">collectives</th></tr>\n";
    for (auto& o : r.chosen_ops)
      h += "<tr><td class=\"l\">" + xml_escape(o.op) + "</td><td class=\"l\"><code>" + xml_escape(o.config) +
           "</code></td><td>" + format_seconds(o.time) + "</td><td>" + format_bytes(o.memory) + "</td><td class=\"l\">" +
           xml_escape(o.collectives) + "</td></tr>\n";
    h += "</table>\n";
  }
  h += "<script type=\"application/json\" id=\"report-data\">" + detail::report_data(r, sh) + "</script>\n<script>" +
       detail::report_script + "</script>\n</body></html>\n";
  return h;
}

}  // namespace tensoropt
