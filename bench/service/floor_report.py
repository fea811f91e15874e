#!/usr/bin/env python3
"""Report of bench/service/floor.sh: the service against the floor.

    floor_report.py RESULTS_DIR OUT_PREFIX

reads RESULTS_DIR (what floor.sh wrote) and writes OUT_PREFIX.json,
OUT_PREFIX.md and, where matplotlib is available, OUT_PREFIX.png. Every
figure is from h2load's per-request logs of one run on one host: requests
per second over the measured period, latency percentiles, and for large
answers the answer's bytes over the mean time per call. Ratios are to the
floor of the same run. A run with calls that did not end OK (gRPC status in
the trailers, counted from sampler-server's metrics) is marked, never
silently counted.
"""
import json
import os
import re
import sys

SERVERS = ["floor", "cpu", "cuda"]
SMALL = [("small_64x1", "256 float32 gamma samples, 64 connections x 1 stream"),
         ("small_16x16", "same, 16 connections x 16 streams")]
LARGE = [("gamma_10m_f32", "10M float32 gamma samples, one unary answer"),
         ("gamma_stream_10m_f32", "10M float32 gamma samples, one stream"),
         ("categorical_4096x1024_f32",
          "16 MB upload (4096 x 1024 categorical weights), small answer")]


def percentile(sorted_values, q):
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, int(q * (len(sorted_values) - 1) + 0.5))
    return sorted_values[i]


def read_run(server_dir, case):
    """h2load's summary and per-request log of one case, or None."""
    txt = os.path.join(server_dir, case + ".h2load.txt")
    log = os.path.join(server_dir, case + ".log")
    if not os.path.exists(txt) or not os.path.exists(log):
        return None
    text = open(txt).read()
    m = re.search(r"finished in ([\d.]+)s, ([\d.]+) req/s", text)
    ok = re.search(r"(\d+) succeeded, (\d+) failed, (\d+) errored", text)
    rows = []
    for line in open(log):
        parts = line.split()
        if len(parts) >= 3:
            rows.append((int(parts[0]), int(parts[1]), int(parts[2])))
    durations = sorted(r[2] / 1e6 for r in rows)  # seconds
    errors_path = os.path.join(server_dir, case + ".errors")
    grpc_errors = int(open(errors_path).read().strip() or 0) \
        if os.path.exists(errors_path) else 0
    return {
        "seconds": float(m.group(1)) if m else None,
        "req_per_s": float(m.group(2)) if m else None,
        "succeeded": int(ok.group(1)) if ok else None,
        "http_failed": int(ok.group(2)) + int(ok.group(3)) if ok else None,
        "grpc_errors": grpc_errors,
        "calls_logged": len(rows),
        "mean_s": sum(durations) / len(durations) if durations else None,
        "p50_s": percentile(durations, 0.50),
        "p99_s": percentile(durations, 0.99),
    }


def answer_bytes(server_dir):
    """Bytes of each case's answer, from floor.sh's `frames compare`."""
    out = {}
    path = os.path.join(server_dir, "compare.txt")
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if len(parts) >= 4 and parts[1].isdigit():
                out[parts[0]] = int(parts[1])
    return out


def loadgen(server_dir):
    path = os.path.join(server_dir, "loadgen_small_64.json")
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def main():
    src, prefix = sys.argv[1], sys.argv[2]
    host = open(os.path.join(src, "host.txt")).read().strip()
    report = {"host": host, "servers": {}}
    request_sizes = {}
    for line in open(os.path.join(src, "frames", "cases.tsv")):
        parts = line.rstrip("\n").split("\t")
        request_sizes[parts[0]] = int(parts[2])
    for s in SERVERS:
        d = os.path.join(src, s)
        if not os.path.isdir(d):
            continue
        sizes = answer_bytes(d)
        runs = {}
        for case, _ in SMALL + LARGE:
            run = read_run(d, case)
            if run is None:
                continue
            key = "gamma_256_f32" if case.startswith("small") else case
            if key in sizes and run["mean_s"]:
                run["answer_bytes"] = sizes[key]
                run["answer_mb_per_s"] = sizes[key] / run["mean_s"] / 1e6
            if key in request_sizes and run["mean_s"]:
                run["request_bytes"] = request_sizes[key]
                run["request_mb_per_s"] = request_sizes[key] / run["mean_s"] / 1e6
            runs[case] = run
        report["servers"][s] = {"runs": runs, "loadgen_small_64": loadgen(d)}

    def ratio(server, case, field, higher_is_better=True):
        try:
            a = report["servers"][server]["runs"][case][field]
            f = report["servers"]["floor"]["runs"][case][field]
        except KeyError:
            return None
        if not a or not f:
            return None
        return a / f if higher_is_better else f / a

    lines = ["# The service against the floor of its RPC stack", "",
             "Made by `bench/service/floor.sh` and `floor_report.py`; host:",
             "", "```", host, "```", "",
             "Floor: `bench/service/floor_server.cc`, the same service and "
             "messages answered from prebuilt responses without sampling. "
             "Load: h2load with the prebuilt frames of "
             "`bench/service/frames.cc`, servers and h2load on separate "
             "cores. Ratio: the server's figure over the floor's (for "
             "upload time, the floor's time over the server's).", "",
             "## Small requests", "",
             "| case | server | req/s | p50 ms | p99 ms | ratio to floor | "
             "gRPC errors |", "|---|---|---|---|---|---|---|"]
    for case, title in SMALL:
        for s in SERVERS:
            run = report["servers"].get(s, {}).get("runs", {}).get(case)
            if run is None:
                continue
            r = ratio(s, case, "req_per_s")
            lines.append(
                f"| {title} | {s} | {fmt(run['req_per_s'], '.0f')} | "
                f"{fmt(run['p50_s'] and run['p50_s'] * 1e3, '.2f')} | "
                f"{fmt(run['p99_s'] and run['p99_s'] * 1e3, '.2f')} | "
                f"{fmt(r, '.2f')} | {run['grpc_errors']} |")
    lines += ["", "## Large answers and uploads", "",
              "| case | server | mean ms per call | answer MB/s | "
              "request MB/s | ratio to floor | gRPC errors |",
              "|---|---|---|---|---|---|---|"]
    for case, title in LARGE:
        for s in SERVERS:
            run = report["servers"].get(s, {}).get("runs", {}).get(case)
            if run is None:
                continue
            r = ratio(s, case, "mean_s", higher_is_better=False)
            lines.append(
                f"| {title} | {s} | {fmt(run['mean_s'] and run['mean_s'] * 1e3, '.1f')} | "
                f"{fmt(run.get('answer_mb_per_s'), '.0f')} | "
                f"{fmt(run.get('request_mb_per_s'), '.0f')} | {fmt(r, '.2f')} | "
                f"{run['grpc_errors']} |")
    lines += ["", "## sampler-loadgen, 64 clients of 256 float32 samples", "",
              "| server | req/s | p50 ms | p99 ms | failed | ratio to floor |",
              "|---|---|---|---|---|---|"]
    floor_lg = report["servers"].get("floor", {}).get("loadgen_small_64")
    for s in SERVERS:
        lg = report["servers"].get(s, {}).get("loadgen_small_64")
        if lg is None:
            continue
        lat = lg.get("latency_ms", {})
        r = (lg["requests_per_s"] / floor_lg["requests_per_s"]
             if floor_lg and floor_lg.get("requests_per_s") else None)
        lines.append(f"| {s} | {fmt(lg.get('requests_per_s'), '.0f')} | "
                     f"{fmt(lat.get('p50'), '.2f')} | {fmt(lat.get('p99'), '.2f')} | "
                     f"{lg.get('requests_failed')} | {fmt(r, '.2f')} |")
    with open(prefix + ".json", "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    with open(prefix + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels, values = [], []
    for case, _ in SMALL:
        for s in SERVERS:
            run = report["servers"].get(s, {}).get("runs", {}).get(case)
            if run and run["req_per_s"]:
                labels.append(f"{case}\n{s}")
                values.append(run["req_per_s"])
    ax.bar(range(len(values)), values)
    ax.set_xticks(range(len(values)), labels, fontsize=7)
    ax.set_ylabel("requests / s")
    ax.set_title("256 float32 gamma samples per request (h2load)")
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=120)


if __name__ == "__main__":
    main()
