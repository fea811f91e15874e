#!/usr/bin/env python3
"""The crossover table from a bench/service/crossover.sh folder.

    bench/service/crossover_report.py DIR [--md OUT.md] [--json OUT.json]

For each kind and request size: requests/s, items/s and p50/p99 latency on
each backend, and CUDA's items/s over CPU's. The crossover of a kind is the
smallest size from which CUDA's throughput stays ahead of CPU's at every
larger size of the sweep.
"""
import argparse
import glob
import json
import os
import re


def load(folder):
    runs = {}
    for path in glob.glob(os.path.join(folder, "*_*_*.json")):
        m = re.fullmatch(r"(cpu|cuda)_(\w+?)_(\d+)\.json", os.path.basename(path))
        if not m:
            continue
        try:
            report = json.load(open(path))
        except (OSError, ValueError):
            continue
        runs[(m.group(2), int(m.group(3)), m.group(1))] = report
    return runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--md")
    ap.add_argument("--json")
    args = ap.parse_args()
    runs = load(args.folder)
    kinds = sorted({k for k, _, _ in runs})
    lines, summary = [], {}
    for kind in kinds:
        sizes = sorted({s for k, s, _ in runs if k == kind})
        unit = next(iter(r["item_unit"] for (k, _, _), r in runs.items() if k == kind))
        lines += [f"### {kind}", "",
                  f"| size | CPU req/s | CUDA req/s | CPU {unit}/s | CUDA {unit}/s | "
                  "CUDA / CPU | CPU p50 / p99 ms | CUDA p50 / p99 ms |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        ratios = []
        for size in sizes:
            cpu, gpu = runs.get((kind, size, "cpu")), runs.get((kind, size, "cuda"))

            def cell(r, key, fmt="{:,.0f}"):
                return fmt.format(r[key]) if r and r.get("requests_ok") else "-"

            def lat(r):
                if not r or not r.get("requests_ok"):
                    return "-"
                return f"{r['latency_ms']['p50']:.2f} / {r['latency_ms']['p99']:.2f}"
            ratio = (gpu["items_per_s"] / cpu["items_per_s"]
                     if cpu and gpu and cpu.get("items_per_s") and gpu.get("requests_ok")
                     else None)
            ratios.append((size, ratio))
            lines.append(
                f"| {size:,} | {cell(cpu, 'requests_per_s')} | {cell(gpu, 'requests_per_s')} | "
                f"{cell(cpu, 'items_per_s')} | {cell(gpu, 'items_per_s')} | "
                f"{'-' if ratio is None else f'{ratio:.2f}x'} | {lat(cpu)} | {lat(gpu)} |")
        crossover = None
        for i, (size, _) in enumerate(ratios):
            if all(r is not None and r > 1 for _, r in ratios[i:]):
                crossover = size
                break
        summary[kind] = {"crossover_size": crossover, "unit": unit,
                         "ratios": {str(s): r for s, r in ratios}}
        lines += ["", f"Crossover: {'none in the sweep' if crossover is None else f'{crossover:,} {unit} per request'}", ""]
    text = "\n".join(lines)
    if args.md:
        open(args.md, "w").write(text + "\n")
    if args.json:
        json.dump(summary, open(args.json, "w"), indent=1)
    print(text)


if __name__ == "__main__":
    main()
