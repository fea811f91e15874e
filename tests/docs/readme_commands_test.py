#!/usr/bin/env python3
"""Every shell command in README.md, client/README.md and
client/python/README.md runs as written.

Reads the fenced code blocks of both files:
  - ```sh / ```bash blocks: every command (continuation lines joined,
    comments dropped) runs, a block's commands in one bash process (so a
    variable set on one line is seen by the next) with `set -e`;
  - unlabelled blocks of `$ command` lines followed by their output: each
    command runs, and what it prints must equal the output shown, line for
    line (these are the README's "real output" examples: pinned seeds).
Commands run from the repository root, with the build's server and client
folders first on PATH, against a live sampler-server that this test starts
on 127.0.0.1:50051, the address the READMEs use (CPU backend, as on a
machine without a GPU).

The READMEs' address is a fixed port, so where the machine allows it
(`unshare -rn` and `ip`), the test runs in a network namespace of its own:
another server on 127.0.0.1:50051 (a developer's, another test run's)
then neither disturbs it nor is disturbed. Elsewhere it fails, naming the
port, if 50051 is taken.

Commands that cannot run here are listed in NOT_RUN with the reason. The
test fails when a command fails, when an example's output differs, when a
NOT_RUN entry no longer appears in the READMEs (the list must not go stale)
or when the READMEs hold no commands at all.
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

# Exact command text (continuations joined) -> why it does not run here.
NOT_RUN = {
    "tools/run.sh":
        "starts the server and serves until stopped; this test starts the "
        "same binary itself",
    "tools/test.sh":
        "the suite this test is part of",
    "samplerctl info --target sampler.example.com:50051 --tls_ca_file ca.pem "
    "--tls_cert_file client.pem --tls_key_file client.key --token_file token":
        "needs a TLS deployment at sampler.example.com; tests/security runs "
        "TLS, mutual TLS and tokens against a live server",
    "samplerctl health --target 127.0.0.1:50051 --tls_ca_file ca.pem "
    "--tls_server_name localhost":
        "needs a TLS server and its CA; tests/security covers it",
    "sampler-loadgen --rpc gamma --target host:50051 --tls_ca_file ca.pem "
    "--tls_cert_file client.pem --tls_key_file client.key --token_file token":
        "needs a TLS server and client certificates; tests/security covers it",
    "docker build -t sampler:0.1.0 .":
        "needs Docker; tests/deploy checks the Dockerfile",
    'docker build --build-arg CUDA_ARCHITECTURES="80;90" -t sampler:0.1.0 .':
        "needs Docker",
    "docker run --rm --gpus all -p 50051:50051 -p 9464:9464 sampler:0.1.0":
        "needs Docker and a GPU",
    "docker run --rm -p 50051:50051 -e SAMPLER_BACKEND=cpu sampler:0.1.0":
        "needs Docker",
    "docker compose -f deploy/docker-compose.yml up -d --build":
        "needs Docker; tests/deploy checks the compose file",
    "docker compose -f deploy/docker-compose.yml ps":
        "needs Docker",
    "docker compose -f deploy/docker-compose.yml exec sampler samplerctl info":
        "needs Docker",
    "docker compose -f deploy/docker-compose.yml --profile cpu up -d --build "
    "sampler-cpu prometheus grafana":
        "needs Docker",
    "docker build -t REGISTRY/sampler:0.1.0 . && docker push "
    "REGISTRY/sampler:0.1.0":
        "needs Docker and a registry",
    "(cd deploy/k8s && kustomize edit set image sampler=REGISTRY/sampler:0.1.0)":
        "edits the committed kustomization; tests/deploy checks it",
    "kubectl apply -k deploy/k8s":
        "needs a Kubernetes cluster; tests/deploy checks the manifests",
    "kubectl rollout status deployment/sampler":
        "needs a Kubernetes cluster",
    "kubectl get pods -l app.kubernetes.io/name=sampler":
        "needs a Kubernetes cluster",
    "(cd client/examples/node && npm install --no-audit --no-fund --no-save)":
        "needs the npm registry; tools/deps.sh runs the same install",
    "sudo apt-get install -y python3-venv python3-grpcio python3-protobuf "
    "python3-numpy protobuf-compiler protobuf-compiler-grpc":
        "installs packages; tools/deps.sh installs the same ones",
    "python3 -m venv --system-site-packages .venv":
        "tests/python_client/run.sh makes the same venv in the build folder",
    ".venv/bin/pip install --no-build-isolation ./client/python":
        "tests/python_client/run.sh runs the same install (python_client_test)",
}

SHELL_LANGS = {"sh", "bash", "shell"}
FENCE = re.compile(r"^([ \t]*)```(\S*)\n(.*?)^[ \t]*```", re.M | re.S)


def logical_lines(text):
    """Lines with backslash continuations joined and comments dropped."""
    out, pending = [], ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        line = (pending + line.strip()).strip()
        pending = ""
        # A comment: '#' at the start or after whitespace, outside quotes
        # (the READMEs' commands quote no '#').
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            out.append(line)
    return out


def collect(path):
    """(shell blocks, examples) of one Markdown file.

    shell block: (line number, [commands]); example: (line number, command,
    expected output lines).
    """
    text = open(path).read()
    blocks, examples = [], []
    for m in FENCE.finditer(text):
        lang = m.group(2)
        body = textwrap.dedent(m.group(3))
        line_no = text.count("\n", 0, m.start()) + 1
        if lang in SHELL_LANGS:
            blocks.append((line_no, logical_lines(body)))
        elif lang == "" and body.startswith("$ "):
            current = None
            for line in body.splitlines():
                if line.startswith("$ "):
                    current = [line[2:].strip(), []]
                    examples.append((line_no, current[0], current[1]))
                elif current is not None:
                    current[1].append(line.rstrip())
    # Trailing blank lines separate examples; they are not output.
    examples = [(n, c, _strip_trailing_blank(o)) for n, c, o in examples]
    return blocks, examples


def _strip_trailing_blank(lines):
    while lines and not lines[-1]:
        lines.pop()
    return lines


def wait_for_port(port, proc, log, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"FAIL: the server exited at start:\n{open(log).read()}")
        if re.search(r"serving on port", open(log).read()):
            return
        time.sleep(0.1)
    sys.exit(f"FAIL: no server on port {port} after {timeout_s} s")


def in_own_network():
    """Re-runs this test in a private network namespace with loopback up;
    its exit code, or None where namespaces are not available."""
    if os.environ.get("SAMPLER_README_NETNS") or not (
            shutil.which("unshare") and shutil.which("ip")):
        return None
    probe = subprocess.run(["unshare", "-rn", "ip", "link", "set", "lo", "up"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if probe.returncode != 0:
        return None
    print("readme_commands_test: in a network namespace of its own")
    env = dict(os.environ, SAMPLER_README_NETNS="1")
    return subprocess.call(
        ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$0" "$@"',
         sys.executable, *sys.argv], env=env)


def main():
    rc = in_own_network()
    if rc is not None:
        return rc
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--build", required=True)
    args = parser.parse_args()

    docs = [os.path.join(args.root, "README.md"),
            os.path.join(args.root, "client", "README.md"),
            os.path.join(args.root, "client", "python", "README.md")]
    blocks, examples = [], []
    for doc in docs:
        b, e = collect(doc)
        rel = os.path.relpath(doc, args.root)
        blocks += [(rel, n, cmds) for n, cmds in b]
        examples += [(rel, n, c, o) for n, c, o in e]

    seen = {c for _, _, cmds in blocks for c in cmds} | {c for _, _, c, _ in examples}
    stale = sorted(set(NOT_RUN) - seen)
    if stale:
        print("FAIL: NOT_RUN lists commands the READMEs no longer hold:")
        for c in stale:
            print(f"  {c}")
        return 1

    # The address the READMEs use; a server already there is not ours.
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 50051)) == 0:
            print("FAIL: 127.0.0.1:50051 is in use (a server from tools/run.sh?); "
                  "stop it and run again")
            return 1

    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.join(args.build, "server"),
                                   os.path.join(args.build, "client"), env["PATH"]])
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False).name
    with open(log, "w") as log_file:
        server = subprocess.Popen(
            [os.path.join(args.build, "server", "sampler-server"), "--listen",
             "127.0.0.1:50051", "--metrics_listen", "", "--backend", "cpu"],
            stdout=subprocess.DEVNULL, stderr=log_file)
    failures, ran = [], 0
    try:
        wait_for_port(50051, server, log)
        scratch = tempfile.mkdtemp()  # where commands' output files land
        for doc, line_no, cmds in blocks:
            runnable = [c for c in cmds if c not in NOT_RUN]
            for c in cmds:
                if c in NOT_RUN:
                    print(f"not run  {doc}:{line_no}  {c}\n         ({NOT_RUN[c]})")
            if not runnable:
                continue
            # Output redirections land in a scratch folder, not the tree.
            script = "set -e\n" + "\n".join(
                re.sub(r">\s*(\S+)$", lambda m: f"> {scratch}/{os.path.basename(m.group(1))}", c)
                for c in runnable)
            for c in runnable:
                print(f"run      {doc}:{line_no}  {c}")
            ran += len(runnable)
            done = subprocess.run(["bash", "-c", script], cwd=args.root, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=240)
            if done.returncode != 0:
                failures.append(f"{doc}:{line_no}: exit {done.returncode}\n{done.stdout[-3000:]}")
        for doc, line_no, c, expected in examples:
            if c in NOT_RUN:
                print(f"not run  {doc}:{line_no}  {c}\n         ({NOT_RUN[c]})")
                continue
            print(f"example  {doc}:{line_no}  {c}")
            ran += 1
            done = subprocess.run(["bash", "-c", c], cwd=args.root, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=240)
            got = _strip_trailing_blank([l.rstrip() for l in done.stdout.splitlines()])
            if done.returncode != 0 or got != expected:
                failures.append(
                    f"{doc}:{line_no}: `{c}` exit {done.returncode}; README shows:\n"
                    + "\n".join(expected) + "\n-- it printed:\n" + "\n".join(got))
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        os.unlink(log)

    if ran == 0:
        print("FAIL: found no command to run in the READMEs")
        return 1
    for f in failures:
        print(f"FAIL: {f}\n")
    print(f"{ran} commands run, {len(failures)} failed, "
          f"{sum(1 for c in NOT_RUN)} listed as not run here")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
