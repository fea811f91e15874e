"""Helpers shared by the deployment tests in tests/deploy (standard library,
plus PyYAML where a test parses YAML).

Processes: every child is started through Processes, which keeps its PID and
stops it (SIGTERM, then SIGKILL after a bounded wait) when the test ends,
whatever way it ends. Nothing is looked up or killed by name. Every wait has
a deadline, and all traffic stays on 127.0.0.1.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HOST = "127.0.0.1"


class CheckError(Exception):
    """A check of a test failed."""


def expect(condition, message):
    if not condition:
        raise CheckError(message)


def log(message):
    print(message, flush=True)


def shutdown_margin_seconds(source_dir):
    """The watchdog's margin after --drain_delay + --shutdown_grace
    (kShutdownMargin in server/shutdown_watchdog.h): the server exits at the
    latest that long after them, so the orchestrator's grace must cover all
    three."""
    path = os.path.join(source_dir, "server", "shutdown_watchdog.h")
    with open(path) as f:
        match = re.search(r"kShutdownMargin\s*=\s*absl::Seconds\((\d+)\)",
                          f.read())
    expect(match, f"{path}: no kShutdownMargin = absl::Seconds(N)")
    return int(match.group(1))


def free_port():
    """A TCP port that nothing listens on right now (the kernel's pick).

    The port is free when this returns; a program started right after
    binds it. For sampler-server's gRPC port, ask for port 0 instead and
    read the port from its log (Processes.start_server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def http_get(url, timeout=5.0):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode("utf-8")


def wait_until(what, predicate, timeout_s, interval_s=0.1):
    """Calls predicate until it returns a true value, which is returned;
    raises CheckError after timeout_s."""
    deadline = time.monotonic() + timeout_s
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except (OSError, urllib.error.URLError, ValueError) as error:
            last_error = error
        time.sleep(interval_s)
    raise CheckError(f"timed out after {timeout_s}s waiting for {what}"
                     + (f" (last error: {last_error})" if last_error else ""))


def parse_metrics(text):
    """Prometheus text exposition -> {(name, frozenset(labels)): value},
    and the set of family names from the # TYPE lines."""
    samples = {}
    families = set()
    line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
    label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            families.add(line.split()[2])
            continue
        if not line or line.startswith("#"):
            continue
        match = line_re.match(line)
        if not match:
            continue
        labels = frozenset(label_re.findall(match.group(3) or ""))
        samples[(match.group(1), labels)] = float(match.group(4))
    return samples, families


def requests_by_method(metrics_port):
    """sampler_requests_total of one server, summed over codes: {method: n}."""
    samples, _ = parse_metrics(http_get(f"http://{HOST}:{metrics_port}/metrics"))
    totals = {}
    for (name, labels), value in samples.items():
        if name == "sampler_requests_total":
            method = dict(labels).get("method", "")
            totals[method] = totals.get(method, 0) + value
    return totals


class Processes:
    """Children of a test, each stopped at exit (use as a context manager)."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.children = []  # (name, Popen, log path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop_all()
        return False

    def start(self, name, argv, env=None):
        """Starts argv with stdout and stderr going to WORKDIR/NAME.log."""
        log_path = os.path.join(self.workdir, f"{name}.log")
        log_file = open(log_path, "wb")
        try:
            process = subprocess.Popen(argv, stdout=log_file,
                                       stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, env=env)
        finally:
            log_file.close()
        self.children.append((name, process, log_path))
        return process

    def log_of(self, process):
        for _, p, path in self.children:
            if p is process:
                with open(path, "rb") as f:
                    return f.read().decode("utf-8", "replace")
        return ""

    def start_server(self, name, server, extra_args=(), metrics_port=None,
                     argv=None, env=None, timeout_s=30):
        """Starts sampler-server on 127.0.0.1 with a kernel-picked gRPC port
        and returns (process, "127.0.0.1:PORT"). argv replaces the command
        (for the entry point script); the server must still log "serving on
        port N"."""
        if argv is None:
            argv = [server, f"--listen={HOST}:0",
                    "--metrics_listen=" + (f"{HOST}:{metrics_port}"
                                           if metrics_port else "")]
            argv += list(extra_args)
        process = self.start(name, argv, env=env)

        def port():
            if process.poll() is not None:
                raise CheckError(f"{name} exited with {process.returncode} "
                                 f"before serving:\n{self.log_of(process)}")
            match = re.search(r"serving on port (\d+)", self.log_of(process))
            return match and int(match.group(1))

        return process, f"{HOST}:{wait_until(f'{name} to serve', port, timeout_s)}"

    def stop(self, process, timeout_s=30):
        """SIGTERM, then SIGKILL if it has not exited after timeout_s;
        returns its exit status."""
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        return process.returncode

    def stop_all(self):
        for _, process, _ in reversed(self.children):
            try:
                self.stop(process, timeout_s=15)
            except Exception as error:  # keep stopping the others
                print(f"stopping pid {process.pid}: {error}", file=sys.stderr)

    def dump_logs(self):
        for name, _, path in self.children:
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
            print(f"---- {name} log (last 3000 characters) ----\n{text[-3000:]}",
                  file=sys.stderr)


def run(argv, timeout_s=60, env=None, check=True, cwd=None):
    """Runs argv to completion; returns the CompletedProcess."""
    done = subprocess.run(argv, capture_output=True, text=True,
                          timeout=timeout_s, env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise CheckError(f"{' '.join(argv)} exited {done.returncode}:\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done


def require_tool(path, package):
    expect(os.access(path, os.X_OK),
           f"{path} is missing: tools/deps.sh installs the Debian package "
           f"{package}")


def import_yaml():
    try:
        import yaml  # noqa: F401 (python3-yaml)
    except ImportError:
        raise CheckError("PyYAML is missing: run the test with Debian's "
                         "/usr/bin/python3; tools/deps.sh installs python3-yaml")
    return yaml


def main_wrapper(name, body):
    """Runs body(), prints a verdict, returns the exit status."""
    start = time.monotonic()
    try:
        body()
    except (CheckError, subprocess.TimeoutExpired, OSError, KeyError,
            json.JSONDecodeError) as error:
        print(f"{name}: FAILED: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 1
    print(f"{name}: all checks passed in {time.monotonic() - start:.1f} s")
    return 0


def temp_dir(prefix):
    return tempfile.TemporaryDirectory(prefix=prefix)
