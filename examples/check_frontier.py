#!/usr/bin/env python3
"""Re-costs every point of a tensoropt frontier file from its problem file, with nothing
but the JSON and the formulas of the README's "File formats" section: an outside tool's
check, independent of the library.

usage: check_frontier.py FRONTIER PROBLEM [K]

FRONTIER is a tensoropt-frontier/1 or /2 file. PROBLEM is a tensoropt-problem/1 or /2 file (the
points of K micro-batches are checked, K defaulting to the count of the first point) or a
tensoropt-pipeline-problem/1 file (every point is checked). Times are read as integer
picoseconds (round(seconds x 1e12)), as the library stores them, so every sum is exact.
Prints one line and exits 0 when every checked point re-costs to exactly its time and
memory; otherwise names the first point that differs and exits 1.
"""
import json
import sys


def ps(seconds):
    return int(round(seconds * 1e12))


def stage_cost(prob, choice, in_flight=1):
    """(time ps, memory bytes) of one config per node, with f micro-batches in flight."""
    time, memory = 0, prob["memory_offset"]
    if len(choice) != len(prob["nodes"]):
        raise ValueError(f"{len(choice)} choices for {len(prob['nodes'])} nodes")
    for node, c in zip(prob["nodes"], choice):
        cfg = node["configs"][c]
        time += ps(cfg["time"])
        memory += cfg["memory"] + (in_flight - 1) * cfg.get("activations", 0)
    for e in prob["edges"]:
        a, b = choice[e["from"]], choice[e["to"]]
        time += ps(e["time"][a][b])
        memory += in_flight * e["memory"][a][b]
    return time, memory


def pipeline_cost(pp, pl):
    part = pp["partitions"][pl["partition"]]
    if pl["degree"] != part["degree"] or pl["stage_begin"] != part["stage_begin"]:
        raise ValueError(f"degree and stages differ from partition {pl['partition']}")
    costs = [stage_cost(pp["problems"][ref["problem"]], st["choice"], ref["in_flight"])
             for ref, st in zip(part["stages"], pl["stages"], strict=True)]
    return max(t for t, _ in costs) + sum(ps(s) for s in part["sends"]), max(m for _, m in costs), part


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        frontier = json.load(f)
    with open(argv[2]) as f:
        problem = json.load(f)
    if frontier.get("format") not in ("tensoropt-frontier/1", "tensoropt-frontier/2"):
        print(f"check_frontier: {argv[1]}: unknown format {frontier.get('format')!r}", file=sys.stderr)
        return 1
    piped = problem.get("format") == "tensoropt-pipeline-problem/1"
    if not piped and problem.get("format") not in ("tensoropt-problem/1", "tensoropt-problem/2"):
        print(f"check_frontier: {argv[2]}: unknown format {problem.get('format')!r}", file=sys.stderr)
        return 1
    points = frontier["points"]
    k = int(argv[3]) if len(argv) == 4 else points[0]["micro_batches"]
    checked = 0
    for i, p in enumerate(points):
        try:
            if piped:
                time, memory, part = pipeline_cost(problem, p["pipeline"])
                if part["micro_batches"] != p["micro_batches"]:
                    raise ValueError("micro_batches differ from the partition's")
            elif p["micro_batches"] != k:
                continue
            else:
                time, memory = stage_cost(problem, p["choice"])
        except (KeyError, IndexError, ValueError, TypeError) as e:
            print(f"check_frontier: points[{i}]: does not fit the problem ({type(e).__name__}: {e})", file=sys.stderr)
            return 1
        if (time, memory) != (ps(p["time"]), p["memory"]):
            print(f"check_frontier: points[{i}]: re-costs to {time} ps, {memory} bytes; the file says "
                  f"{ps(p['time'])} ps, {p['memory']} bytes", file=sys.stderr)
            return 1
        checked += 1
    print(f"check_frontier: {checked} of {len(points)} points re-cost exactly from {argv[2]}")
    return 0 if checked else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
