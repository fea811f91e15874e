#!/usr/bin/env python3
"""Where a server's time per call goes, without perf (the GPU hosts have
none): CPU time and context switches from /proc, and, for sampler-server,
the request, queue and batch histograms from its /metrics.

    server_probe.py snap PID [METRICS_URL] > before.json
    server_probe.py diff before.json after.json CALLS
        -> one tab-separated line: cpu_us ctx server_ms queue_ms
           device_ms_per_batch requests_per_batch (per call, or per batch
           where named; "nan" where the source is absent)
    server_probe.py threads before.json after.json CALLS
        -> one tab-separated line per thread group: group threads cpu_us
           voluntary involuntary runq_wait_us (per call; thread_report.py
           tabulates them)

CPU time is the process's user + system ticks (/proc/PID/stat; 100 Hz, so
measure over seconds); context switches are every thread's voluntary and
involuntary switches (/proc/PID/task/*/status; threads that exited between
the two snapshots are not counted). The histograms are the sums and counts
of sampler_request_duration_seconds, sampler_queue_wait_seconds,
sampler_device_seconds and sampler_batch_requests over every label.

Threads: each thread's CPU time (/proc/PID/task/TID/schedstat, nanoseconds;
utime + stime ticks where the kernel has no schedstat), its time runnable
but waiting for a core (schedstat's second field; 0 without it) and its
voluntary and involuntary switches, grouped by the thread's name (comm): gRPC names its
threads (nexting_thread: the callback API's pollers, which run the
handlers; default-executo, grpc_global_tim, event_engine, ...),
sampler-server names its own (batcher, cuda-slot, cpu-pool, stall-watch;
server/thread_name.h); "main" is the process's first thread, and "unnamed"
every other thread that kept the process's name (the CUDA driver's, other
libraries'). A thread started between the snapshots counts from zero.
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


def thread_snapshot(pid):
    """{tid: [name, cpu_ns, voluntary, involuntary, wait_ns]} of every live
    thread."""
    tick_ns = 1e9 / os.sysconf("SC_CLK_TCK")
    threads = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            name = open(f"{task}/comm").read().strip()
            try:
                sched = open(f"{task}/schedstat").read().split()
                cpu_ns, wait_ns = int(sched[0]), int(sched[1])
            except (OSError, ValueError, IndexError):
                fields = open(f"{task}/stat").read().rsplit(")", 1)[1].split()
                cpu_ns = (int(fields[11]) + int(fields[12])) * tick_ns
                wait_ns = 0
            vol = invol = 0
            for line in open(f"{task}/status"):
                if line.startswith("voluntary_ctxt_switches"):
                    vol = int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches"):
                    invol = int(line.split()[1])
        except OSError:
            continue  # the thread ended meanwhile
        threads[os.path.basename(task)] = [name, cpu_ns, vol, invol, wait_ns]
    return threads


def thread_group(pid, tid, name, main_name):
    if tid == str(pid):
        return "main"
    if name == main_name:
        return "unnamed"
    return name.rstrip("0123456789-_ ") or name


def thread_groups(before, after, calls):
    """[(group, threads, cpu_us, vol, invol, wait_us) per call], largest CPU
    first."""
    pid = after["pid"]
    threads = after.get("threads", {})
    main_name = threads.get(str(pid), ["?"])[0]
    groups = {}
    for tid, (name, cpu_ns, vol, invol, wait_ns) in threads.items():
        _, cpu0, vol0, invol0, wait0 = before.get("threads", {}).get(
            tid, [name, 0, 0, 0, 0])
        g = groups.setdefault(thread_group(pid, tid, name, main_name),
                              [0, 0.0, 0, 0, 0.0])
        g[0] += 1
        g[1] += cpu_ns - cpu0
        g[2] += vol - vol0
        g[3] += invol - invol0
        g[4] += wait_ns - wait0
    rows = [(name, n, cpu / 1e3 / calls, vol / calls, invol / calls,
             wait / 1e3 / calls)
            for name, (n, cpu, vol, invol, wait) in groups.items()] if calls else []
    return sorted(rows, key=lambda r: -r[2])


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
        pid = int(sys.argv[2])
        snap = proc_snapshot(pid)
        snap["pid"] = pid
        snap["threads"] = thread_snapshot(pid)
        snap["metrics"] = metrics_snapshot(sys.argv[3]) if len(sys.argv) > 3 else None
        json.dump(snap, sys.stdout)
        return
    before, after = (json.load(open(p)) for p in sys.argv[2:4])
    calls = float(sys.argv[4])
    if sys.argv[1] == "threads":
        for row in thread_groups(before, after, calls):
            print("%s\t%d\t%.2f\t%.3f\t%.3f\t%.2f" % row)
        return
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
