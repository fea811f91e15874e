#!/usr/bin/env python3
"""Turns the JSON files of bench/service/run.sh into a Markdown table.

Usage: report.py OUT_DIR > report.md (prints only the tables; the committed
report adds the machine and the conditions around them).
"""
import json
import os
import sys


def load(out, name):
    with open(os.path.join(out, name + ".json")) as f:
        return json.load(f)


def main():
    out = sys.argv[1]
    runs = [load(out, name) for name in
            ("batching_on", "batching_delay_only", "batching_off")]
    print("| gamma, 256 float32 samples/request, 64 concurrent | batching on "
          "(defaults) | delay rule only (--close_batch_when_idle=false) | "
          "batching off (--max_batch_items 1) |")
    print("|---|---|---|---|")
    rows = [("requests/s", "requests_per_s", "{:,.0f}"),
            ("samples/s", "items_per_s", "{:,.3g}")]
    for label, key, fmt in rows:
        print(f"| {label} | " + " | ".join(fmt.format(r[key]) for r in runs)
              + " |")
    for p in ("p50", "p90", "p99", "p99_9", "max"):
        print(f"| latency {p.replace('_', '.')} (ms) | " +
              " | ".join(f"{r['latency_ms'][p]:.2f}" for r in runs) + " |")
    print("| requests ok / failed | " +
          " | ".join(f"{r['requests_ok']} / {r['requests_failed']}"
                     for r in runs) + " |")
    print()
    big = load(out, "large_unary")
    stream = load(out, "large_stream")
    n = big["items_per_request"]
    p50 = big["latency_ms"]["p50"] / 1e3
    print("| one request of 10,000,000 float32 gamma samples | end to end (s) "
          "| samples/s | response bytes/s |")
    print("|---|---|---|---|")
    print(f"| SampleGamma (unary, median of {big['requests_ok']}) | {p50:.3f} "
          f"| {n / p50:,.3g} | {4 * n / p50 / 1e6:,.0f} MB/s |")
    s = stream["seconds"]
    print(f"| SampleGammaStream (samplerctl, chunks assembled) | {s:.3f} | "
          f"{n / s:,.3g} | {4 * n / s / 1e6:,.0f} MB/s |")


if __name__ == "__main__":
    main()
