#!/usr/bin/env bash
# Renders the planner's HTML reports (without and with pipeline stages) in headless
# Chromium and fails on a script error, a missing plot or a plan panel the script did not
# draw.
#
# usage: check_report.sh PLANNER OUT_DIR SOURCE_DIR
# Installs Debian's chromium through scripts/deps.sh --tests when it is missing; skips
# (exit 77) only when it still cannot be found outside CI. Leaves in OUT_DIR the report,
# the rendered DOMs and a screenshot (report.png) for a person to look at.
set -euo pipefail
plan=$1 out=$2 src=$3
find_browser() { command -v chromium || command -v chromium-browser || command -v google-chrome || true; }
browser=$(find_browser)
if [ -z "$browser" ]; then
  bash "$src/scripts/deps.sh" --tests || true
  browser=$(find_browser)
fi
if [ -z "$browser" ]; then
  if [ -n "${CI:-}" ]; then
    echo "FAIL: chromium is missing and 'bash scripts/deps.sh --tests' could not install it"
    exit 1
  fi
  echo "SKIP: chromium is not installed; 'bash scripts/deps.sh --tests' installs it"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

# gpt3-1.3b on 4 x V100-16GB, budget 12 GiB: baselines that do not fit, one far off the scale.
"$plan" --model gpt3-1.3b --devices 4 --gpu v100-16gb --micro-batches 128 --memory-budget 12 --quiet \
        --html "$out/report.html" > "$out/plan.txt" || fail "tensoropt-plan failed: $(cat "$out/plan.txt")"

render() {
  timeout 120 "$browser" --headless --disable-gpu --no-sandbox --no-first-run --hide-scrollbars \
    --user-data-dir="$out/profile" "$@" 2>>"$out/chromium.log"
}
render --dump-dom "file://$out/report.html" > "$out/dom.html" || fail "chromium could not render the report"
dom="$out/dom.html"
if grep -q '<p class="js-error"' "$dom"; then
  fail "script errors: $(grep -o '<p class="js-error">[^<]*' "$dom" | sed 's/<p class="js-error">//')"
fi
grep -q 'data-report="ok"' "$dom" || fail "the report's script did not finish (no data-report=\"ok\")"
grep -q '<svg[^>]*class="frontier-plot"' "$dom" || fail "the plot is missing"
markers=$(grep -o '<circle class="pt[ "]' "$dom" | wc -l)
rows=$(grep -o '<tr data-i=' "$dom" | wc -l)
[ "$markers" -ge 3 ] || fail "the plot has $markers point markers, expected at least 3"
[ "$markers" -eq "$rows" ] || fail "$markers markers in the plot but $rows rows in the table"
chosen=$(grep -o 'chosen plan #[0-9]*' "$out/plan.txt" | head -1 | grep -o '[0-9]*$')
[ -n "$chosen" ] || fail "the planner chose no plan: $(cat "$out/plan.txt")"
grep -q "<h3>Plan #$chosen (chosen)</h3>" "$dom" || fail "the plan panel does not show the chosen plan #$chosen"
grep -q 'does not fit' "$dom" || fail "no baseline is marked as not fitting the device"

# A point other than the chosen one, pinned through the address: its panel names the differences.
first=$(grep -o '<tr data-i="[0-9]*"' "$dom" | head -1 | grep -o '[0-9]*')
render --dump-dom "file://$out/report.html#plan=$first" > "$out/dom_pinned.html" || fail "chromium failed on #plan=$first"
grep -q '<p class="js-error"' "$out/dom_pinned.html" && fail "script errors with #plan=$first"
grep -q "<h3>Plan #$first</h3>" "$out/dom_pinned.html" || fail "#plan=$first did not show plan #$first"
grep -q 'differ from the chosen plan' "$out/dom_pinned.html" || fail "plan #$first is not compared with the chosen plan"

render --screenshot="$out/report.png" --window-size=1500,1400 "file://$out/report.html" >/dev/null ||
  fail "chromium could not take a screenshot"
[ "$(stat -c %s "$out/report.png")" -gt 20000 ] || fail "the screenshot is nearly empty"
echo "report ok: $markers points shown, plan panel drawn, no script error; screenshot $out/report.png"

# The report of a frontier with pipeline stages: markers by degree, the panel lists the stages.
"$plan" --model gpt:layers=4,hidden=64,heads=4,seq=16,vocab=64,batch=8 --devices 4 --micro-batches 4 --pipeline \
        --quiet --html "$out/pipeline.html" > "$out/pipeline.txt" || fail "tensoropt-plan --pipeline failed"
render --dump-dom "file://$out/pipeline.html" > "$out/dom_pipeline.html" || fail "chromium could not render the pipeline report"
dom="$out/dom_pipeline.html"
grep -q '<p class="js-error"' "$dom" && fail "script errors in the pipeline report"
grep -q 'data-report="ok"' "$dom" || fail "the pipeline report's script did not finish"
grep -q 'data-pp="4"' "$dom" || fail "the pipeline plot marks no point of pipeline degree 4"
grep -q 'pipeline stages (1F1B over 4 micro-batches)' "$dom" || fail "the plan panel lists no stages"
render --screenshot="$out/pipeline.png" --window-size=1500,1400 "file://$out/pipeline.html" >/dev/null ||
  fail "chromium could not take a screenshot of the pipeline report"
echo "pipeline report ok: stages in the plan panel; screenshot $out/pipeline.png"
