#!/usr/bin/env python3
"""Checks that every measured figure in README.md names the report it comes
from and matches it.

A figure is a ratio or a percentage (`16.8x`, `78.2%`) or a rate (`3.3 TB/s`,
`50.3 Gsamples/s`). For each paragraph or list item of README.md outside code
blocks that holds one, the check requires a reference to a report that
exists under bench/results/ (`bench/results/NAME`), and requires each figure
to appear, as written, in one of the reports that paragraph names, so a
README figure cannot drift from its report. A range (`2.5-3.6x`) fails: its
ends would not be checked; write both ends as figures (`2.49x to 3.03x`).

Usage: check_readme_figures.py [ROOT] (default: the repository root).
"""

import os
import re
import sys

# A ratio or percentage: a number directly followed by x or %, not part of
# a word ("19x19", "x86" are not figures). A range written with a hyphen
# ("10-17x") is caught separately and refused.
FIGURE = re.compile(r"(?<![\w.\-])(\d+(?:\.\d+)?)(x|%)(?![\w])")
RATE = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s?((?:T|G|M|k)?B/s|[GMk](?:samples|pairs|rows|"
    r"boards)?/s)(?![\w])")
RANGE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?-\d+(?:\.\d+)?(x|%)(?![\w])")
REPORT = re.compile(r"bench/results/([\w.\-/]+[\w])")


def blocks(text):
    """Paragraphs and list items outside fenced code, with line numbers."""
    out, current, start, fenced = [], [], 0, False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            if current:
                out.append((start, "\n".join(current)))
                current = []
            continue
        if fenced:
            continue
        new_item = re.match(r"\s*([-*]|\d+\.)\s", line) is not None
        if not line.strip() or new_item or line.startswith("#"):
            if current:
                out.append((start, "\n".join(current)))
                current = []
            if not line.strip():
                continue
        if not current:
            start = number
        current.append(line)
    if current:
        out.append((start, "\n".join(current)))
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        text = f.read()
    problems = []
    figures_seen = 0
    for line, block in blocks(text):
        # Inline code is a name or a flag, never a figure.
        prose = re.sub(r"`[^`]*`", lambda m: m.group(0) if "bench/results/"
                       in m.group(0) else "``", block)
        figures = [m.group(0) for m in FIGURE.finditer(prose)]
        figures += [m.group(0) for m in RATE.finditer(prose)]
        ranges = [m.group(0) for m in RANGE.finditer(prose)]
        for r in ranges:
            problems.append(f"README.md:{line}: range '{r}': write both ends "
                            "as figures, each found in its report")
        if not figures:
            continue
        figures_seen += len(figures)
        names = REPORT.findall(block)
        reports = {}
        for name in names:
            path = os.path.join(root, "bench", "results", name)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    reports[name] = f.read()
            elif not os.path.isdir(path):
                problems.append(f"README.md:{line}: bench/results/{name} "
                                "does not exist")
        if not reports:
            problems.append(
                f"README.md:{line}: figures {', '.join(figures)} name no "
                "report under bench/results/")
            continue
        for figure in figures:
            if not any(figure in body for body in reports.values()):
                problems.append(
                    f"README.md:{line}: '{figure}' is not in "
                    f"{', '.join(sorted(reports))}")
    for p in problems:
        print(f"check_readme_figures: FAILED: {p}")
    if problems:
        return 1
    print(f"check_readme_figures: {figures_seen} figure(s) in README.md, "
          "each found in the report it names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
