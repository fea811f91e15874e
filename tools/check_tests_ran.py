#!/usr/bin/env python3
"""Fails when a GoogleTest binary that ran reported no test that ran.

ctest counts a binary as passed when it exits 0, which a binary also does
when it holds no test, when its filter matches nothing, when every test
skipped, or when its main never calls RUN_ALL_TESTS. This check (run by
tools/ctest_checked.sh after ctest) reads

  --reports DIR      the XML reports that GoogleTest wrote (GTEST_OUTPUT),
  --ctest-junit F    ctest's JUnit summary (which tests ran, and how),
  --tests-json F     `ctest --show-only=json-v1` (commands and labels),

and fails if any report shows no test that ran to a result (skipped and
disabled tests do not count), or if a test labelled "gtest" that ctest
reports as passed wrote no report at all.
"""

import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ET


def report_problems(path):
    """Problems with one GoogleTest XML report (empty list if none)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        return [f"{path}: not a readable GoogleTest report ({e})"]
    listed = ran = skipped = 0
    for case in root.iter("testcase"):
        listed += 1
        if case.get("status", "run") != "run":
            continue  # disabled
        if case.get("result") == "skipped" or case.find("skipped") is not None:
            skipped += 1
            continue
        ran += 1
    if ran == 0:
        return [f"{os.path.basename(path)}: the binary ran no test "
                f"({listed} listed, {skipped} skipped)"]
    return []


def report_stem(filename):
    """The binary's name from a report file name: NAME.xml or NAME_N.xml
    (GoogleTest numbers a second report of the same binary)."""
    stem = filename[:-len(".xml")]
    m = re.fullmatch(r"(.*)_\d+", stem)
    return {stem, m.group(1)} if m else {stem}


def passed_tests(junit_path):
    """Names of the tests that ctest reports as passed."""
    root = ET.parse(junit_path).getroot()
    passed = set()
    for case in root.iter("testcase"):
        if case.get("status") != "run":
            continue
        if case.find("failure") is not None or case.find("skipped") is not None:
            continue
        passed.add(case.get("name"))
    return passed


def gtest_commands(tests_json_path):
    """{test name: binary name} for the tests labelled gtest."""
    with open(tests_json_path) as f:
        listing = json.load(f)
    binaries = {}
    for test in listing.get("tests", []):
        labels = []
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                labels = prop.get("value", [])
        if "gtest" in labels and test.get("command"):
            binaries[test["name"]] = os.path.basename(test["command"][0])
    return binaries


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", required=True)
    parser.add_argument("--ctest-junit")
    parser.add_argument("--tests-json")
    args = parser.parse_args()

    problems = []
    written = set()
    reports = sorted(f for f in os.listdir(args.reports) if f.endswith(".xml"))
    for name in reports:
        written |= report_stem(name)
        problems += report_problems(os.path.join(args.reports, name))

    if args.ctest_junit and args.tests_json:
        binaries = gtest_commands(args.tests_json)
        for test in sorted(passed_tests(args.ctest_junit)):
            binary = binaries.get(test)
            if binary is not None and binary not in written:
                problems.append(
                    f"{test}: passed but {binary} wrote no GoogleTest report "
                    "(its main never ran the tests?)")

    for p in problems:
        print(f"check_tests_ran: FAILED: {p}")
    if problems:
        return 1
    print(f"check_tests_ran: {len(reports)} GoogleTest report(s), each with "
          "a test that ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
