#!/usr/bin/env python3
"""Checks of the test harness (tests/harness/CMakeLists.txt says what each
nested CTest project holds).

  gpu-skip:  runs ctest on the GPU cases and checks each one's status in
             ctest's JUnit report: skipped only for the binary that saw no
             GPU, failed for the ones that failed (whatever they printed),
             passed for the one that passed; and ctest exits non-zero.
  tests-ran: runs tools/ctest_checked.sh on each case alone and checks that
             it fails for every binary that ran no test and passes for the
             binary that ran one.
  readme:    runs tools/check_readme_figures.py on small READMEs beside a
             fake report and checks that it accepts a figure found in the
             report it names and rejects every other kind.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET


def status_of(case):
    """passed, failed or skipped, from one <testcase> of ctest's JUnit."""
    if case.find("failure") is not None:
        return "failed"
    if case.find("skipped") is not None or case.get("status") in (
            "notrun", "disabled"):
        return "skipped"
    if case.get("status") == "run":
        return "passed"
    return "failed"  # "fail" and anything unknown


def gpu_skip(args):
    expected = {
        # Prints "[  SKIPPED ]" and "[  FAILED  ]", exits 1.
        "harness_gpu_skip_then_fail": "failed",
        # No GPU: runs nothing (its tests would fail) and exits 77.
        "harness_gpu_absent": "skipped",
        # A GPU that does not work is no reason to skip.
        "harness_gpu_broken": "failed",
        # One test passes, one skips (it prints "[  SKIPPED ]"): passed.
        "harness_gpu_pass": "passed",
        # A test that calls exit(77) mid-run does not pass for a skip.
        "harness_gpu_exit_77": "failed",
    }
    with tempfile.TemporaryDirectory() as tmp:
        junit = os.path.join(tmp, "junit.xml")
        # The cases' reports must not land among the real suite's when this
        # runs under tools/ctest_checked.sh.
        env = {k: v for k, v in os.environ.items() if k != "GTEST_OUTPUT"}
        run = subprocess.run(
            [args.ctest, "--test-dir", args.cases, "--output-junit", junit,
             "--output-on-failure"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(run.stdout)
        got = {c.get("name"): status_of(c)
               for c in ET.parse(junit).getroot().iter("testcase")}
    ok = True
    for name, want in expected.items():
        mark = "ok" if got.get(name) == want else "WRONG"
        print(f"{mark}: {name}: ctest reports {got.get(name)}, want {want}")
        ok &= got.get(name) == want
    if set(got) != set(expected):
        print(f"WRONG: cases {sorted(got)}, want {sorted(expected)}")
        ok = False
    if run.returncode == 0:
        print("WRONG: ctest exited 0 although cases failed")
        ok = False
    return 0 if ok else 1


def tests_ran(args):
    expected_ok = {
        "harness_gtest_pass": True,
        "harness_gtest_no_tests": False,
        "harness_gtest_all_skipped": False,
        "harness_gtest_filter_matches_nothing": False,
        "harness_gtest_no_run_main": False,
    }
    ok = True
    for name, want_ok in expected_ok.items():
        env = dict(os.environ, CTEST=args.ctest)
        run = subprocess.run(
            [args.checked, args.cases, "-R", f"^{name}$"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(run.stdout)
        # ctest itself passes every case: only the check can reject one.
        got_ok = run.returncode == 0
        mark = "ok" if got_ok == want_ok else "WRONG"
        verdict = "accepted" if got_ok else "rejected"
        print(f"{mark}: {name}: {verdict}, want "
              f"{'accepted' if want_ok else 'rejected'}\n")
        ok &= got_ok == want_ok
        if not want_ok and "check_tests_ran: FAILED:" not in run.stdout:
            print(f"WRONG: {name}: rejected without the check's message")
            ok = False
    return 0 if ok else 1


def readme(args):
    report = "| case | ratio | copy |\n| K=32 | 16.8x | 78.2% |\n"
    good = ("Categorical runs at 16.8x the best peer and reads at 78.2% of "
            "the copy bandwidth (`bench/results/report.md`).\n")
    cases = {
        "figures found in the named report": (good, True),
        "no figure at all": ("Nothing measured here.\n", True),
        "a figure in a code block": ("```\n  1%   0.0001\n```\n", True),
        "a range": (good.replace("16.8x", "10-17x"), False),
        "a figure not in the report": (good.replace("16.8x", "17.1x"), False),
        "a figure naming no report": (
            "Categorical runs at 16.8x the best peer.\n", False),
        "only the folder named": (
            good.replace("bench/results/report.md", "bench/results/"), False),
        "a report that does not exist": (
            good.replace("report.md", "missing.md"), False),
        "a rate not in the report": (
            good.replace("78.2% of the copy bandwidth", "3.3 TB/s"), False),
    }
    ok = True
    for name, (text, want_ok) in cases.items():
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "bench", "results"))
            with open(os.path.join(root, "bench", "results", "report.md"),
                      "w") as f:
                f.write(report)
            with open(os.path.join(root, "README.md"), "w") as f:
                f.write("# Title\n\n" + text)
            run = subprocess.run(
                [sys.executable, args.checked, root], stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True)
        got_ok = run.returncode == 0
        mark = "ok" if got_ok == want_ok else "WRONG"
        print(f"{mark}: {name}: {'accepted' if got_ok else 'rejected'}")
        if got_ok != want_ok:
            print(run.stdout)
        ok &= got_ok == want_ok
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("which", choices=["gpu-skip", "tests-ran", "readme"])
    parser.add_argument("--ctest", required=True)
    parser.add_argument("--cases", required=True)
    parser.add_argument("--checked")
    args = parser.parse_args()
    return {"gpu-skip": gpu_skip, "tests-ran": tests_ran,
            "readme": readme}[args.which](args)


if __name__ == "__main__":
    sys.exit(main())
