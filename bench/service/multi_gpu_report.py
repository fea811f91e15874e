#!/usr/bin/env python3
"""Report of bench/service/multi_gpu.sh: one GPU against two (issue 14).

    multi_gpu_report.py RESULTS_DIR OUT_PREFIX

reads RESULTS_DIR (what multi_gpu.sh wrote) and writes OUT_PREFIX.json and
OUT_PREFIX.md (stdlib only). Figures, all from one run on one host:
identical answers (sha256 of samplerctl's JSON answers, each request sent
twice to each server), throughput of each load on the one- and the two-GPU
server and their ratio, device seconds per device over each run (from
sampler_device_seconds_sum in /metrics, after minus before) and the busy
fraction they give (device seconds / wall seconds / streams per GPU is not
claimed: kernels of several streams overlap, so the figure is device
seconds per wall second, per device), pool bytes per device, the
unavailable-GPU and pool-cap checks. A run with failed requests is marked.
"""
import json
import os
import re
import sys

# The loads (multi_gpu.sh), what bounds them, and the target of issue 14.
LOADS = [
    ("enumerate_f32_1024x256", "enumerate, 1 problem of 1024 terms x 256 "
     "points, float32, 32 clients", "gpu"),
    ("enumerate_f64_512x256", "enumerate, 1 problem of 512 terms x 256 "
     "points, float64, 32 clients", "gpu"),
    ("gamma_f64_1m_shape0.3", "gamma, 1M float64 samples, shape 0.3, "
     "32 clients", "large"),
    ("gamma_f32_4m", "gamma, 4M float32 samples, 32 clients", "large"),
    ("categorical_f32_4096x256x64", "categorical, 4096 rows x 256 categories "
     "x 64 draws, float32, 32 clients", "large"),
    ("small_gamma_256", "gamma, 256 float32 samples, 64 clients", "small"),
]
CASES = ["gamma_f32", "gamma_f64", "dirichlet_f64", "categorical_f32",
         "boards", "enumerate_f64"]
SCALING_TARGET = 1.8

METRIC = re.compile(r'^(\w+)\{([^}]*)\}\s+(\S+)$')


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def metrics(path):
    """{(name, frozenset(labels)): value} of a /metrics text, or {}."""
    out = {}
    text = read(path) or ""
    for line in text.splitlines():
        m = METRIC.match(line)
        if not m:
            continue
        labels = frozenset(tuple(kv.split("=", 1)) for kv in
                           re.findall(r'\w+="[^"]*"', m.group(2)))
        labels = frozenset((k, v.strip('"')) for k, v in labels)
        try:
            out[(m.group(1), labels)] = float(m.group(3))
        except ValueError:
            pass
    return out


def per_device(values, name, **match):
    """Sum of `name` by its device label, over series matching `match`."""
    sums = {}
    for (n, labels), v in values.items():
        if n != name:
            continue
        d = dict(labels)
        if any(d.get(k) != want for k, want in match.items()):
            continue
        sums[d.get("device", "?")] = sums.get(d.get("device", "?"), 0) + v
    return sums


def delta(before, after, name, **match):
    b = per_device(before, name, **match)
    a = per_device(after, name, **match)
    return {d: a[d] - b.get(d, 0) for d in sorted(a)}


def identical(results, configs):
    """Per case: each answer's sha256 and whether they all agree."""
    rows = []
    for case in CASES:
        sums = {}
        for config in configs:
            for rnd in (1, 2):
                text = read(os.path.join(results, config, "identical",
                                         f"{case}.{rnd}.sum"))
                if text:
                    rc, digest = text.split()
                    sums[f"{config}#{rnd}"] = (int(rc), digest)
        ok = bool(sums) and all(rc == 0 for rc, _ in sums.values())
        same = ok and len({d for _, d in sums.values()}) == 1
        rows.append({"case": case, "answers": {k: v[1][:16] for k, v in
                                                sums.items()},
                     "all_ok": ok, "identical": same})
    devices = {}
    for config in configs:
        d = os.path.join(results, config, "identical")
        devices[config] = {k: round(v, 6) for k, v in delta(
            metrics(os.path.join(d, "metrics_before.txt")),
            metrics(os.path.join(d, "metrics_after.txt")),
            "sampler_device_seconds_count").items()}
    return rows, devices


def load_run(results, config, load):
    d = os.path.join(results, config, "loads")
    text = read(os.path.join(d, load + ".json"))
    try:
        report = json.loads(text) if text else None
    except ValueError:
        report = None
    before = metrics(os.path.join(d, load + ".metrics_before.txt"))
    after = metrics(os.path.join(d, load + ".metrics_after.txt"))
    seconds = delta(before, after, "sampler_device_seconds_sum")
    batches = delta(before, after, "sampler_device_seconds_count")
    pool = per_device(after, "sampler_device_pool_bytes", state="reserved")
    if report is None:
        return {"missing": True, "device_seconds": seconds}
    elapsed = report.get("elapsed_s") or 0
    return {
        "requests_per_s": report.get("requests_per_s"),
        "items_per_s": report.get("items_per_s"),
        "requests_ok": report.get("requests_ok"),
        "requests_failed": report.get("requests_failed"),
        "errors": report.get("errors"),
        "elapsed_s": elapsed,
        "p50_ms": (report.get("latency_ms") or {}).get("p50"),
        "p99_ms": (report.get("latency_ms") or {}).get("p99"),
        "device_seconds": {k: round(v, 4) for k, v in seconds.items()},
        "batches": {k: int(v) for k, v in batches.items()},
        "device_seconds_per_wall_second": {
            k: round(v / elapsed, 3) for k, v in seconds.items()
        } if elapsed else {},
        "pool_reserved_bytes": {k: int(v) for k, v in pool.items()},
    }


def device_name(d):
    return f"GPU {d}" if d.isdigit() else d


def summary_lines(report):
    """The issue's checks, each with its figures."""
    lines = []
    rows = report["identical"]["cases"]
    same = sum(1 for r in rows if r["identical"])
    lines.append(f"- Identical answers: {same} of {len(rows)} cases "
                 "byte-identical across every answer of both servers.")
    used = report["identical"]["batches_per_device"].get("two", {})
    if used:
        lines.append("- Two-GPU server, identity part: batches per device "
                     + ", ".join(f"{device_name(d)}: {int(n)}"
                                 for d, n in used.items()) + ".")
    if "two" not in report["configs"]:
        lines.append("- " + (report["skipped"] or "no two-GPU run") + ".")
        return lines
    for name, what, kind in LOADS:
        e = report["loads"][name]
        ratio = e["ratio"]
        if ratio is None:
            verdict = "not measured (a run failed or is missing)"
        elif kind == "gpu":
            verdict = ("meets" if ratio >= SCALING_TARGET else "**misses**") \
                + f" the {SCALING_TARGET}x target"
        elif kind == "small":
            verdict = "not slower" if ratio >= 1.0 else \
                f"**{(1 - ratio) * 100:.1f}% slower**"
        else:
            verdict = "wire-bound load: scaling reported, not targeted"
        split = e.get("two", {}).get("device_seconds", {})
        lines.append(f"- {what}: two GPUs / one = {fmt(ratio, 2)} ({verdict})"
                     "; device seconds on two GPUs: " + (", ".join(
                         f"{device_name(d)}: {v}" for d, v in split.items())
                         or "-") + ".")
    return lines


def fmt(x, digits=1):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return str(x)


def main():
    results, prefix = sys.argv[1], sys.argv[2]
    configs = [c for c in ("one", "two")
               if os.path.isdir(os.path.join(results, c))]
    skipped = (read(os.path.join(results, "skipped.txt")) or "").strip()
    report = {"host": read(os.path.join(results, "host.txt")),
              "configs": configs, "skipped": skipped or None}
    rows, identity_devices = identical(results, configs)
    report["identical"] = {"cases": rows, "batches_per_device":
                           identity_devices}
    loads = {}
    for name, what, kind in LOADS:
        entry = {"what": what, "kind": kind}
        for config in configs:
            entry[config] = load_run(results, config, name)
        one = entry.get("one", {}).get("requests_per_s")
        two = entry.get("two", {}).get("requests_per_s")
        entry["ratio"] = round(two / one, 3) if one and two else None
        loads[name] = entry
    report["loads"] = loads
    unavailable = {
        "info": read(os.path.join(results, "unavailable", "info.json")),
        "gamma_rc": (read(os.path.join(results, "unavailable", "gamma.rc"))
                     or "").strip() or None,
        "log": read(os.path.join(results, "unavailable",
                                 "serving.server.log")),
        "none_rc": (read(os.path.join(results, "unavailable", "none.rc"))
                    or "").strip() or None,
        "none_log": read(os.path.join(results, "unavailable",
                                      "none.server.log")),
    }
    report["unavailable"] = unavailable
    poolcap = {}
    for f in ("big.1", "big.2", "small"):
        poolcap[f] = {
            "rc": (read(os.path.join(results, "poolcap", f + ".rc")) or
                   "").strip() or None,
            "output": (read(os.path.join(results, "poolcap", f + ".log"))
                       or "")[:300]}
    boards = read(os.path.join(results, "poolcap", "boards.json"))
    try:
        boards = json.loads(boards) if boards else None
    except ValueError:
        boards = None
    poolcap["boards_during"] = {
        "requests_ok": boards.get("requests_ok"),
        "requests_failed": boards.get("requests_failed"),
    } if boards else None
    report["poolcap"] = poolcap
    with open(prefix + ".json", "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)

    md = ["# Several GPUs on one host (issue 14)", ""]
    md += ["Made by `bench/service/multi_gpu.sh` and "
           "`bench/service/multi_gpu_report.py` in one run on one host.", ""]
    md += ["## Host", "", "```", (report["host"] or "").strip(), "```", ""]
    if skipped:
        md += [f"**{skipped}**", ""]
    md += ["## Summary", ""] + summary_lines(report) + [""]
    md += ["## Identical answers", "",
           "Each seeded request (samplerctl --json --seed 1414) sent twice, "
           "one at a time, to each server; sha256 of the JSON answer (first "
           "16 hex digits).", ""]
    keys = [f"{c}#{r}" for c in configs for r in (1, 2)]
    md.append("| case | " + " | ".join(keys) + " | identical |")
    md.append("|---" * (len(keys) + 2) + "|")
    for row in rows:
        md.append(f"| {row['case']} | " + " | ".join(
            row["answers"].get(k, "-") for k in keys) +
            f" | {'yes' if row['identical'] else '**no**'} |")
    md += ["", "Batches per device during this part (from "
           "`sampler_device_seconds_count`): " + "; ".join(
               f"{c}: " + ", ".join(f"{device_name(d)}: {int(n)}" for d, n in
                                    identity_devices.get(c, {}).items())
               for c in configs), ""]
    md += ["## Throughput, one GPU against two", "",
           "Closed loop, each load for the same duration on each server. Ratio: requests per second on two GPUs over one "
           f"(target for GPU-bound load: >= {SCALING_TARGET}; small requests:"
           " not slower). Device seconds: kernel time per device over the "
           "run; per wall second it shows how busy each GPU was (several "
           "streams can overlap, so it may pass 1).", ""]
    md.append("| load | bound | one GPU req/s | two GPUs req/s | ratio | "
              "device s per wall s (one) | device s per wall s (two) | "
              "failed (one / two) |")
    md.append("|---|---|---|---|---|---|---|---|")
    for name, what, kind in LOADS:
        e = loads[name]
        one, two = e.get("one", {}), e.get("two", {})
        def busy(run):
            return ", ".join(f"{device_name(d)}: {v}" for d, v in
                             run.get("device_seconds_per_wall_second",
                                     {}).items()) or "-"
        md.append(
            f"| {what} | {kind} | {fmt(one.get('requests_per_s'))} | "
            f"{fmt(two.get('requests_per_s'))} | {fmt(e['ratio'], 2)} | "
            f"{busy(one)} | {busy(two)} | "
            f"{fmt(one.get('requests_failed'))} / "
            f"{fmt(two.get('requests_failed'))} |")
    md += ["", "Pool bytes reserved per device after each run "
           "(`sampler_device_pool_bytes{state=\"reserved\"}`):", ""]
    for name, _, _ in LOADS:
        for config in configs:
            pool = loads[name].get(config, {}).get("pool_reserved_bytes", {})
            md.append(f"- {name}, {config}: " + (", ".join(
                f"{device_name(d)}: {b / 2**20:.0f} MiB"
                for d, b in pool.items())
                or "-"))
    md += ["", "## A GPU that cannot be initialised", ""]
    if unavailable["info"]:
        md += ["GPU 1 failing on purpose (`SAMPLER_TEST_ONLY_FAIL_GPUS=1`, "
               "`--gpus 0,1`): GetServerInfo's devices, and a gamma request "
               f"(exit code {unavailable['gamma_rc']}):", "", "```",
               unavailable["info"].strip()[:1500], "```", "",
               "Its log:", "", "```",
               (unavailable["log"] or "").strip()[:1500], "```", ""]
    md += [f"Every GPU failing: the server's exit code "
           f"{unavailable['none_rc']} (1 expected); its log:", "", "```",
           (unavailable["none_log"] or "").strip()[:800], "```", ""]
    md += ["## Pool cap (64 MiB per GPU)", ""]
    for f in ("big.1", "big.2", "small"):
        md.append(f"- {f}: exit code {poolcap[f]['rc']}: "
                  f"`{poolcap[f]['output'].strip()[:200]}`")
    md.append(f"- boards requests during the oversized ones: "
              f"{poolcap['boards_during']}")
    with open(prefix + ".md", "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
