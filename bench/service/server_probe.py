#!/usr/bin/env python3
"""Where a server's time per call goes, without perf (the GPU hosts have
none): CPU time and context switches from /proc, and, for sampler-server,
the request, queue and batch histograms from its /metrics.

    server_probe.py snap PID [METRICS_URL] > before.json
    server_probe.py diff before.json after.json CALLS
        -> one tab-separated line: cpu_us ctx server_ms queue_ms
           device_ms_per_batch requests_per_batch (per call, or per batch
           where named; "nan" where the source is absent)

CPU time is the process's user + system ticks (/proc/PID/stat; 100 Hz, so
measure over seconds); context switches are every thread's voluntary and
involuntary switches (/proc/PID/task/*/status; threads that exited between
the two snapshots are not counted). The histograms are the sums and counts
of sampler_request_duration_seconds, sampler_queue_wait_seconds,
sampler_device_seconds and sampler_batch_requests over every label.
"""
import glob
import json
import os
import sys
import urllib.request

HISTOGRAMS = ("sampler_request_duration_seconds", "sampler_queue_wait_seconds",
              "sampler_device_seconds", "sampler_batch_requests")


def proc_snapshot(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    switches = 0
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            for line in open(status):
                if line.startswith(("voluntary_ctxt_switches",
                                    "nonvoluntary_ctxt_switches")):
                    switches += int(line.split()[1])
        except OSError:
            pass  # the thread ended meanwhile
    return {"cpu_s": ticks / os.sysconf("SC_CLK_TCK"), "switches": switches}


def metrics_snapshot(url):
    sums = {}
    try:
        text = urllib.request.urlopen(url, timeout=5).read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        for h in HISTOGRAMS:
            for suffix in ("_sum", "_count"):
                if name == h + suffix:
                    key = h + suffix
                    sums[key] = sums.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return sums


def mean_delta(before, after, name, scale=1.0):
    if before is None or after is None:
        return float("nan")
    count = after.get(name + "_count", 0) - before.get(name + "_count", 0)
    total = after.get(name + "_sum", 0) - before.get(name + "_sum", 0)
    return total / count * scale if count > 0 else float("nan")


def main():
    if sys.argv[1] == "snap":
        snap = proc_snapshot(int(sys.argv[2]))
        snap["metrics"] = metrics_snapshot(sys.argv[3]) if len(sys.argv) > 3 else None
        json.dump(snap, sys.stdout)
        return
    before, after = (json.load(open(p)) for p in sys.argv[2:4])
    calls = float(sys.argv[4])
    nan = float("nan")
    cpu_us = (after["cpu_s"] - before["cpu_s"]) * 1e6 / calls if calls else nan
    ctx = (after["switches"] - before["switches"]) / calls if calls else nan
    bm, am = before.get("metrics"), after.get("metrics")
    server_ms = mean_delta(bm, am, "sampler_request_duration_seconds", 1e3)
    queue_ms = mean_delta(bm, am, "sampler_queue_wait_seconds", 1e3)
    device_ms = mean_delta(bm, am, "sampler_device_seconds", 1e3)
    per_batch = mean_delta(bm, am, "sampler_batch_requests")
    print("\t".join(f"{v:.3f}" for v in
                    (cpu_us, ctx, server_ms, queue_ms, device_ms, per_batch)))


if __name__ == "__main__":
    main()
