#!/usr/bin/env python3
"""Every flag of sampler-server is in README.md's flag table.

Reads the flags that `sampler-server --helpfull` lists under the server's own
source files (server/...; Abseil's built-in flags are not the server's) and
the first cells of README.md's table rows ("| `--name` |" or several names
in one cell). Fails naming each flag missing from the table, and each row
naming a flag the server does not have.
"""

import re
import subprocess
import sys


def server_flags(binary):
    out = subprocess.run([binary, "--helpfull"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60).stdout
    flags, ours = set(), False
    for line in out.splitlines():
        header = re.match(r"\s*Flags from (\S+):", line)
        if header:
            ours = "server/" in header.group(1)
            continue
        m = re.match(r"\s{4}--(\w+)", line)
        if m and ours:
            flags.add(m.group(1))
    return flags


def readme_flags(path):
    flags = set()
    for line in open(path):
        if line.startswith("| `--"):
            first_cell = line.split("|")[1]
            flags |= set(re.findall(r"`--(\w+)`", first_cell))
    return flags


def main():
    binary, readme = sys.argv[1], sys.argv[2]
    have, documented = server_flags(binary), readme_flags(readme)
    if not have:
        print("FAIL: found no server flag in --helpfull's output")
        return 1
    missing, unknown = sorted(have - documented), sorted(documented - have)
    for f in missing:
        print(f"FAIL: --{f} is not in README.md's flag table")
    for f in unknown:
        print(f"FAIL: README.md's table names --{f}, which the server does not have")
    print(f"{len(have)} server flags, {len(documented)} in the table")
    return 1 if missing or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
