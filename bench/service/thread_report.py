#!/usr/bin/env python3
"""Where a small call's CPU goes, by thread group, from small_rounds.sh's
per-thread samples (OUT_DIR/<round>/<server>/<case>.threads.tsv, written by
server_probe.py threads while h2load drives the server): for each case, CPU
microseconds per call and context switches per call (voluntary +
involuntary) of each thread group, and the time its threads were runnable
but waiting for a core, per server, medians over the rounds, as markdown. The process's own CPU per call (rounds.tsv, /proc/PID/stat) is
the last row, a check on the groups' sum (threads that ended inside the
window are in it and not in the groups).

    thread_report.py OUT_DIR > threads.md
"""
import collections
import glob
import os
import statistics
import sys


def main():
    out = sys.argv[1]
    # (case, server, group) -> list over rounds of (threads, cpu, vol, invol,
    # wait)
    samples = collections.defaultdict(list)
    servers, cases = {}, {}
    for path in sorted(glob.glob(os.path.join(out, "*", "*", "*.threads.tsv"))):
        server = os.path.basename(os.path.dirname(path))
        case = os.path.basename(path)[:-len(".threads.tsv")]
        servers.setdefault(server, None)
        cases.setdefault(case, None)
        for line in open(path):
            group, n, cpu, vol, invol, wait = line.rstrip("\n").split("\t")
            samples[(case, server, group)].append(
                (int(n), float(cpu), float(vol), float(invol), float(wait)))
    process = collections.defaultdict(list)
    rounds = os.path.join(out, "rounds.tsv")
    if os.path.exists(rounds):
        # Servers and cases in the order they ran.
        ordered_servers, ordered_cases = {}, {}
        for row in [l.rstrip("\n").split("\t") for l in open(rounds)][1:]:
            process[(row[2], row[1])].append((float(row[6]), float(row[7])))
            ordered_servers.setdefault(row[1], None)
            ordered_cases.setdefault(row[2], None)
        servers = {**ordered_servers, **servers}
        cases = {**ordered_cases, **cases}
    # Rounds in which a server ran a case: a group absent from a round
    # counts as zero there.
    ran = collections.Counter(
        (os.path.basename(p)[:-len(".threads.tsv")],
         os.path.basename(os.path.dirname(p)))
        for p in glob.glob(os.path.join(out, "*", "*", "*.threads.tsv")))

    def median(case, server, group, i):
        got = [s[i] for s in samples.get((case, server, group), [])]
        got += [0] * (ran[(case, server)] - len(got))
        return statistics.median(got) if got else float("nan")

    names = list(servers)

    def group_table(title, groups, cell):
        """A table of one case: a row per thread group, a column per server;
        cell(server, group) for the groups a server ran."""
        print(f"\n### {case}: {title}, medians over rounds\n")
        print("| group | " + " | ".join(names) + " |")
        print("|---" * (len(names) + 1) + "|")
        for g in groups:
            cells = [cell(s, g) if (case, s, g) in samples else "" for s in names]
            print(f"| {g} | " + " | ".join(cells) + " |")

    def process_row(label, i, digits):
        proc = [f"{statistics.median(v[i] for v in process[(case, s)]):.{digits}f}"
                if process.get((case, s)) else "" for s in names]
        print(f"| {label} | " + " | ".join(proc) + " |")

    for case in cases:
        groups = sorted({g for (c, _, g) in samples if c == case},
                        key=lambda g: -max(median(case, s, g, 1) for s in names))
        group_table("CPU us per call by thread group (threads)", groups,
                    lambda s, g: f"{median(case, s, g, 1):.1f} ({median(case, s, g, 0):.0f})")
        totals = [f"{sum(median(case, s, g, 1) for g in groups if (case, s, g) in samples):.1f}"
                  for s in names]
        print("| sum of groups | " + " | ".join(totals) + " |")
        process_row("process (/proc/PID/stat)", 0, 1)
        group_table("context switches per call by thread group, voluntary + involuntary", groups,
                    lambda s, g: f"{median(case, s, g, 2):.2f} + {median(case, s, g, 3):.2f}")
        process_row("process, all threads", 1, 2)
        group_table("us per call runnable but waiting for a core, by thread group", groups,
                    lambda s, g: f"{median(case, s, g, 4):.1f}")

if __name__ == "__main__":
    main()
