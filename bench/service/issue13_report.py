#!/usr/bin/env python3
"""Issue 13's report from one bench/service/issue13.sh run: a row per
target, met or missed, and for a miss the profile that explains it.

    issue13_report.py OUT_DIR PREFIX

reads OUT_DIR (issue13.sh's folder) and writes PREFIX.md, PREFIX.json and,
where matplotlib is available, PREFIX.png (each target's figure over its
target, and every round's small-request ratios). Ratios are to the floor of
the same round (small_rounds.sh interleaves the servers); a target on a
ratio is met when the median over the rounds reaches it, and the rounds
that reach it are counted beside it ("reliably": every round). The
service is the server named "cuda" (the default flags); the other servers
of the small part are variants, reported beside it.
"""
import collections
import glob
import json
import os
import statistics
import sys

ANSWER_BYTES_10M = 40e6  # 10M float32 values, the payload of a call
# rounds.tsv's columns after round, server, case.
FIELDS = ["req_s", "p50_ms", "p99_ms", "cpu_us", "ctx", "server_ms",
          "queue_ms", "device_ms_batch", "req_batch"]
# The thread groups a small call's CPU is reported by (the rest: "other").
GROUPS = ["nexting_thread", "cuda-slot", "batcher", "default-executo"]


def read_rounds(part_dir):
    """{(server, case): [row dict per round]}, floor rows included."""
    path = os.path.join(part_dir, "rounds.tsv")
    runs = collections.defaultdict(list)
    if not os.path.exists(path):
        return runs
    for line in list(open(path))[1:]:
        cols = line.rstrip("\n").split("\t")
        if len(cols) < 3 + len(FIELDS):
            continue
        row = {"round": cols[0]}
        for name, value in zip(FIELDS, cols[3:]):
            try:
                row[name] = float(value)
            except ValueError:
                row[name] = None
        runs[(cols[1], cols[2])].append(row)
    return runs


def median(values):
    values = [v for v in values if v is not None and v == v]
    return statistics.median(values) if values else None


def summarize(runs, server, case):
    """Medians over the rounds and every round's ratio to its floor."""
    rows = runs.get((server, case), [])
    if not rows:
        return None
    floor = {r["round"]: r["req_s"] for r in runs.get(("floor", case), [])}
    ratios = [r["req_s"] / floor[r["round"]] for r in rows
              if floor.get(r["round"]) and r["req_s"] is not None]
    out = {f: median(r[f] for r in rows) for f in FIELDS}
    out["rounds"] = len(rows)
    out["ratios"] = [round(x, 3) for x in ratios]
    out["ratio"] = median(ratios)
    return out


def thread_groups(part_dir, server, case):
    """Median CPU us and context switches a call per thread group."""
    per_group = collections.defaultdict(lambda: ([], []))
    paths = glob.glob(os.path.join(part_dir, "*", server, case + ".threads.tsv"))
    for path in paths:
        seen = collections.defaultdict(lambda: [0.0, 0.0])
        for line in open(path):
            group, _, cpu, vol, invol, _ = line.rstrip("\n").split("\t")
            key = group if group in GROUPS else "other"
            seen[key][0] += float(cpu)
            seen[key][1] += float(vol) + float(invol)
        for key in GROUPS + ["other"]:
            per_group[key][0].append(seen[key][0])
            per_group[key][1].append(seen[key][1])
    return {g: {"cpu_us": median(c), "ctx": median(x)}
            for g, (c, x) in per_group.items() if median(c)}


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def ratio_target(name, target, summary, floor):
    if summary is None:
        return {"target": name, "status": "not measured"}
    met = summary["ratio"] is not None and summary["ratio"] >= target
    reached = sum(r >= target for r in summary["ratios"])
    return {"target": name, "goal": f">= {target:.2f} of the floor",
            "value": summary["ratio"], "shown": fmt(summary["ratio"], ".2f"),
            "status": "met" if met else "missed",
            "rounds": f"{reached} of {len(summary['ratios'])} rounds "
                      f"({', '.join(f'{r:.2f}' for r in summary['ratios'])})",
            "reliably": reached == len(summary["ratios"]) and reached > 0,
            "summary": summary, "floor": floor, "over_goal": (
                summary["ratio"] / target if summary["ratio"] else None)}


def rate_target(name, goal_gb_s, summary, floor):
    if summary is None or summary["req_s"] is None:
        return {"target": name, "status": "not measured"}
    gb_s = summary["req_s"] * ANSWER_BYTES_10M / 1e9
    return {"target": name, "goal": f">= {goal_gb_s:.1f} GB/s",
            "value": gb_s, "shown": f"{gb_s:.2f} GB/s "
            f"({1000 / summary['req_s']:.2f} ms a call, "
            f"{fmt(summary['ratio'], '.2f')}x the floor)",
            "status": "met" if gb_s >= goal_gb_s else "missed",
            "rounds": f"{len(summary['ratios'])} rounds",
            "reliably": None, "summary": summary, "floor": floor,
            "over_goal": gb_s / goal_gb_s}


def explain(row, groups=None, floor_groups=None):
    """Where a missed row's time goes: the service against the floor."""
    s, f = row.get("summary"), row.get("floor")
    if not s:
        return ""
    parts = [f"CPU {fmt(s['cpu_us'], '.1f')} us a call against the floor's "
             f"{fmt(f and f['cpu_us'], '.1f')}",
             f"{fmt(s['ctx'], '.2f')} context switches a call "
             f"(floor {fmt(f and f['ctx'], '.2f')})",
             f"{fmt(s['server_ms'], '.3f')} ms a call in the server, "
             f"{fmt(s['queue_ms'], '.3f')} in its queue, "
             f"{fmt(s['req_batch'], '.1f')} requests a batch, "
             f"{fmt(s['device_ms_batch'], '.3f')} ms of device a batch"]
    if groups:
        parts.append("CPU us a call by thread group: " + ", ".join(
            f"{g} {v['cpu_us']:.1f}"
            + (f" (floor {floor_groups[g]['cpu_us']:.1f})"
               if floor_groups and g in floor_groups else "")
            for g, v in sorted(groups.items(), key=lambda kv: -kv[1]["cpu_us"])))
    return "; ".join(parts)


def crossover_rows(out):
    path = os.path.join(out, "crossover", "report.json")
    try:
        summary = json.load(open(path))
    except (OSError, ValueError):
        return {"target": "CUDA-vs-CPU crossover per RPC",
                "status": "not measured"}, {}
    shown = "; ".join(
        f"{kind} {'none in the sweep' if v['crossover_size'] is None else format(v['crossover_size'], ',')}"
        + ("" if v["crossover_size"] is None else f" {v['unit']}")
        for kind, v in sorted(summary.items()))
    kinds = {"boards", "categorical", "dirichlet", "enumerate", "gamma"}
    measured = kinds <= set(summary)
    return {"target": "CUDA-vs-CPU crossover per RPC (deliverable 5)",
            "goal": "measured for every kind", "shown": shown,
            "status": "met" if measured else "missed",
            "why": "no sweep for " + ", ".join(sorted(kinds - set(summary)))
            + " (crossover.log)", "rounds": "one sweep", "reliably": None,
            "over_goal": 1.0 if measured else 0.0}, summary


def main():
    out, prefix = sys.argv[1], sys.argv[2]
    host = open(os.path.join(out, "host.txt")).read().strip() \
        if os.path.exists(os.path.join(out, "host.txt")) else "unknown"
    parts = {p: read_rounds(os.path.join(out, p))
             for p in ["small", "upload", "unary", "stream"]}

    def both(part, case):
        return (summarize(parts[part], "cuda", case),
                summarize(parts[part], "floor", case))

    rows = []
    for case, label in [("64x1", "64 connections x 1 stream"),
                        ("16x16", "16 connections x 16 streams")]:
        row = ratio_target(f"small requests (256 float32 gamma samples), {label}",
                           0.90, *both("small", case))
        row["case"] = case
        if row["status"] != "not measured":
            row["shown"] += (f" (p99 {fmt(row['summary']['p99_ms'], '.2f')} ms, "
                             f"floor {fmt(row['floor'] and row['floor']['p99_ms'], '.2f')})")
        rows.append(row)
    for case, label in [("1x1", "one at a time"), ("4x1", "four at a time")]:
        rows.append(ratio_target(f"16 MB upload, {label}", 0.80,
                                 *both("upload", case)))
    rows.append(rate_target("10M float32 samples in one unary answer (warm)",
                            2.0, *both("unary", "1x1")))
    rows.append(rate_target("10M float32 samples as a stream of large chunks",
                            2.0, *both("stream", "1x1")))
    cross_row, cross = crossover_rows(out)
    rows.append(cross_row)

    lines = ["# Issue 13: every ratio in one run", "",
             "Made by `bench/service/issue13.sh` and `issue13_report.py`; "
             "host:", "", "```", host, "```", "",
             "Floor: `bench/service/floor_server.cc` (the same messages "
             "answered from prebuilt responses). Load: h2load with "
             "`frames.cc`'s prebuilt frames on the last four cores, servers "
             "on the others, servers interleaved in rounds; a ratio is to "
             "the floor of the same round, the figure the median over the "
             "rounds. The service: sampler-server's CUDA backend with its "
             "default flags.", "", "## Targets", "",
             "| target | goal | this run | status | rounds at the goal |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['target']} | {r.get('goal', '')} | "
                     f"{r.get('shown', 'n/a')} | **{r['status']}** | "
                     f"{r.get('rounds', '')} |")
    misses = [r for r in rows if r["status"] != "met"]
    if misses:
        lines += ["", "Why the misses:", ""]
        for r in misses:
            groups = floor_groups = None
            if "case" in r:
                groups = thread_groups(os.path.join(out, "small"), "cuda", r["case"])
                floor_groups = thread_groups(os.path.join(out, "small"), "floor", r["case"])
            why = r.get("why") or explain(r, groups, floor_groups)
            lines.append(f"- **{r['target']}**: {why or r['status']}")

    small_servers = list(dict.fromkeys(s for s, _ in parts["small"]))
    lines += ["", "## Small requests, every server of the small part", "",
              "| server | case | req/s | ratio (median) | rounds | p50 ms | "
              "p99 ms | cpu us/call | ctx/call | server ms | queue ms | "
              "req/batch |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    report_small = {}
    for server in small_servers:
        for case in ["64x1", "16x16"]:
            s = summarize(parts["small"], server, case)
            if s is None:
                continue
            report_small[f"{server} {case}"] = s
            lines.append(
                f"| {server} | {case} | {fmt(s['req_s'], '.0f')} | "
                f"{fmt(s['ratio'], '.2f')} | {', '.join(f'{x:.2f}' for x in s['ratios'])} | "
                f"{fmt(s['p50_ms'], '.2f')} | {fmt(s['p99_ms'], '.2f')} | "
                f"{fmt(s['cpu_us'], '.1f')} | {fmt(s['ctx'], '.2f')} | "
                f"{fmt(s['server_ms'], '.3f')} | {fmt(s['queue_ms'], '.3f')} | "
                f"{fmt(s['req_batch'], '.2f')} |")
    variants = [s for s in small_servers if s not in ("floor", "cuda")]
    for v in variants:
        for case in ["64x1", "16x16"]:
            a = summarize(parts["small"], v, case)
            b = summarize(parts["small"], "cuda", case)
            if not a or not b or not a["ratios"] or not b["ratios"]:
                continue
            wins = sum(x > y for x, y in zip(a["ratios"], b["ratios"]))
            lines.append("")
            lines.append(
                f"{v} against cuda at {case}: {fmt(a['ratio'], '.2f')} against "
                f"{fmt(b['ratio'], '.2f')} of the floor (median), ahead in "
                f"{wins} of {min(len(a['ratios']), len(b['ratios']))} rounds.")
    lines += ["", "## Large answers and uploads", "",
              "| part | server | case | req/s | ratio | p50 ms | p99 ms | "
              "cpu us/call | server ms |", "|---|---|---|---|---|---|---|---|---|"]
    for part in ["upload", "unary", "stream"]:
        for (server, case) in parts[part]:
            s = summarize(parts[part], server, case)
            lines.append(
                f"| {part} | {server} | {case} | {fmt(s['req_s'], '.1f')} | "
                f"{fmt(s['ratio'], '.2f')} | {fmt(s['p50_ms'], '.2f')} | "
                f"{fmt(s['p99_ms'], '.2f')} | {fmt(s['cpu_us'], '.0f')} | "
                f"{fmt(s['server_ms'], '.3f')} |")
    cross_md = os.path.join(out, "crossover", "report.md")
    if os.path.exists(cross_md):
        lines += ["", "## CUDA against CPU per RPC (crossover.sh)", "",
                  open(cross_md).read().strip()]
    durations = os.path.join(out, "durations.tsv")
    if os.path.exists(durations):
        lines += ["", "## Each part's duration", "", "| part | seconds | rc |",
                  "|---|---|---|"]
        lines += [f"| {' | '.join(l.rstrip().split(chr(9)))} |"
                  for l in list(open(durations))[1:]]
    report = {"host": host, "targets": [
        {**{k: v for k, v in r.items() if k not in ("summary", "floor")},
         "service": r.get("summary"), "floor_figures": r.get("floor")}
        for r in rows], "small": report_small, "crossover": cross}
    open(prefix + ".md", "w").write("\n".join(lines) + "\n")
    json.dump(report, open(prefix + ".json", "w"), indent=1, sort_keys=True)
    figure(prefix + ".png", rows, report_small)


def figure(path, rows, report_small):
    """Each target's figure over its goal, and the small requests' rounds;
    nothing where matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        return
    matplotlib.use("Agg")
    from matplotlib import pyplot
    fig, (left, right) = pyplot.subplots(1, 2, figsize=(11, 4))
    shown = [r for r in rows if r.get("over_goal") is not None]
    left.barh(range(len(shown)), [r["over_goal"] for r in shown],
              color=["tab:green" if r["status"] == "met" else "tab:red"
                     for r in shown])
    left.axvline(1.0, color="black", linewidth=1)
    left.set_yticks(range(len(shown)), [r["target"][:38] for r in shown],
                    fontsize=7)
    left.set_xlabel("figure / goal (1 = at the goal)")
    left.set_title("issue 13 targets", fontsize=9)
    for i, (key, s) in enumerate(sorted(report_small.items())):
        right.scatter([i] * len(s["ratios"]), s["ratios"], s=12)
    right.axhline(0.90, color="black", linewidth=1)
    right.set_xticks(range(len(report_small)), sorted(report_small),
                     rotation=60, fontsize=7)
    right.set_ylabel("req/s over the floor's, each round")
    right.set_title("small requests, every round", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
