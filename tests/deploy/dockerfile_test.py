#!/usr/bin/python3
"""Checks the Dockerfile and runs its moving parts without a Docker engine.

There is no Docker engine on the CI machines, so the image is not built here.
What can be checked directly is checked:

- the Dockerfile: two stages, a CUDA 13.0 devel image that builds and the
  runtime image of the same release that runs, both pinned by tag (or
  digest); the build stage installs every build package of tools/deps.sh,
  configures with SAMPLER_CUDA=ON, BUILD_TESTING=OFF and
  CMAKE_CUDA_ARCHITECTURES from a build argument (default 90); nothing is
  downloaded except through apt; the final stage installs no -dev package
  or compiler, runs as a non-root user, EXPOSEs the server's default gRPC
  and metrics ports (read from server/main.cc), has a HEALTHCHECK through
  `samplerctl health` and the entry point script;
- .dockerignore keeps build trees, bundles, node_modules and .git out;
- deploy/docker/runtime-packages.sh, run on the binaries built here, finds
  the packages of gRPC, protobuf, Abseil and prometheus-cpp (and no -dev
  package);
- deploy/docker/entrypoint.sh maps a SAMPLER_* variable to every flag that
  server/main.cc defines, and, run for real with the built sampler-server:
  the environment sets flags, the command line wins over it, an empty
  SAMPLER_METRICS_LISTEN turns metrics off, a non-flag command runs as is,
  SIGTERM reaches the server (exit 0);
- the HEALTHCHECK's own command line, run by sh as Docker runs it: exit 0
  while the server is SERVING, exit 1 (not 2) once it has stopped.

    dockerfile_test.py --source-dir DIR --server BIN --samplerctl BIN \\
        --loadgen BIN
"""

import argparse
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_common import (CheckError, Processes, expect, free_port,  # noqa: E402
                           http_get, log, main_wrapper, run)

# Packages of tools/deps.sh that only the tests, the linters or the
# developer's workflow need; every other one must be installed by the
# Dockerfile's build stage.
TEST_ONLY_PACKAGES = {
    "ccache", "git", "libgtest-dev", "libgmock-dev", "libbenchmark-dev",
    "libboost-math-dev", "python3-grpcio", "python3-protobuf", "nodejs",
    "npm", "prometheus", "docker-compose", "nginx", "python3-yaml",
    "openssl",  # tests/security's certificates, made at test time
    "clang-14", "libclang-rt-14-dev",  # tools/ci/20-fuzz.sh: libFuzzer
    # client/python's tests (a venv over Debian's packages) and the format
    # check of tools/test.sh.
    "python3-numpy", "python3-venv", "python3-setuptools", "python3-pip",
    "clang-format",
}
# What must never be in the final image.
BUILD_ONLY = re.compile(r"(-dev$|^build-essential$|^cmake$|^ninja-build$|"
                        r"^g\+\+|^gcc|^protobuf-compiler)")


def dockerfile_instructions(text):
    """[(KEYWORD, arguments)] with continuation lines joined and comment
    lines dropped, as Docker reads them."""
    instructions = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#"):
            continue
        if not line and not current:
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.strip():
            keyword, _, args = current.strip().partition(" ")
            instructions.append((keyword.upper(), args.strip()))
        current = ""
    return instructions


def resolve(value, args):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)",
                  lambda m: args.get(m.group(1) or m.group(2), m.group(0)),
                  value)


def stages_of(instructions):
    """(global ARG defaults, [stage instructions]); each stage starts with
    its FROM."""
    global_args = {}
    stages = []
    for keyword, args in instructions:
        if keyword == "FROM":
            stages.append([(keyword, args)])
        elif not stages:
            expect(keyword == "ARG", f"{keyword} before the first FROM")
            name, _, default = args.partition("=")
            global_args[name] = default
        else:
            stages[-1].append((keyword, args))
    return global_args, stages


def stage_arg_default(stage, name):
    for keyword, args in stage:
        if keyword == "ARG" and args.partition("=")[0] == name:
            return args.partition("=")[2]
    return None


def apt_packages(run_args):
    """Package names after `apt-get install` in a RUN line."""
    packages = []
    for command in re.split(r"&&|;", run_args):
        words = command.split()
        if "apt-get" in words and "install" in words:
            after = words[words.index("install") + 1:]
            packages += [w for w in after if not w.startswith("-")]
    return packages


def deps_packages(deps_sh):
    match = re.search(r"packages=\((.*?)\)", deps_sh, re.S)
    expect(match, "tools/deps.sh: no packages=( ... ) list")
    body = re.sub(r"#.*", "", match.group(1))
    return body.split()


def flag_default(main_cc, flag):
    match = re.search(rf'ABSL_FLAG\(\s*std::string,\s*{flag},\s*"([^"]*)"',
                      main_cc)
    expect(match, f"server/main.cc: no string flag {flag}")
    return match.group(1)


def check_dockerfile(source_dir):
    with open(os.path.join(source_dir, "Dockerfile")) as f:
        instructions = dockerfile_instructions(f.read())
    global_args, stages = stages_of(instructions)
    expect(len(stages) >= 2, f"{len(stages)} stage(s): want a build and a "
           "runtime stage")

    images = []
    for stage in stages:
        words = stage[0][1].split()
        image = resolve(words[0], global_args)
        images.append(image)
        expect("$" not in image, f"FROM {words[0]}: unresolved argument")
    log(f"stages: {images}")
    pinned = re.compile(r"^nvidia/cuda:(13\.0\.\d+)-(devel|runtime)-"
                        r"ubuntu24\.04(@sha256:[0-9a-f]{64})?$")
    build_match = pinned.match(images[0])
    run_match = pinned.match(images[-1])
    expect(build_match and build_match.group(2) == "devel",
           f"build stage {images[0]}: want a pinned "
           "nvidia/cuda:13.0.x-devel-ubuntu24.04")
    expect(run_match and run_match.group(2) == "runtime",
           f"final stage {images[-1]}: want a pinned "
           "nvidia/cuda:13.0.x-runtime-ubuntu24.04")
    expect(build_match.group(1) == run_match.group(1),
           "the devel and runtime images are of different CUDA releases")

    for keyword, args in instructions:
        expect(keyword != "ADD", "ADD: use COPY (ADD can download)")
        if keyword == "RUN":
            for tool in ("curl", "wget", "git clone", "pip install",
                         "npm install", "http://", "https://"):
                expect(tool not in args,
                       f"RUN downloads outside apt ({tool}): {args[:80]}")

    build = stages[0]
    build_packages = [p for k, a in build if k == "RUN"
                      for p in apt_packages(a)]
    with open(os.path.join(source_dir, "tools", "deps.sh")) as f:
        needed = [p for p in deps_packages(f.read())
                  if p not in TEST_ONLY_PACKAGES]
    missing = [p for p in needed if p not in build_packages]
    expect(not missing, f"the build stage does not install {missing} of "
           "tools/deps.sh (or list them as test-only in this test)")
    log(f"build stage installs: {' '.join(build_packages)}")

    build_runs = " ".join(a for k, a in build if k == "RUN")
    for option in ("-DSAMPLER_CUDA=ON", "-DBUILD_TESTING=OFF",
                   '-DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}"'):
        expect(option in build_runs, f"the build does not configure with "
               f"{option}")
    expect(stage_arg_default(build, "CUDA_ARCHITECTURES") == "90",
           "ARG CUDA_ARCHITECTURES must default to 90")
    expect("runtime-packages.sh" in build_runs,
           "the build stage does not list the runtime packages")

    final = stages[-1]
    final_packages = [p for k, a in final if k == "RUN"
                      for p in apt_packages(a)]
    expect(final_packages == ["$(cat", "/tmp/runtime-packages.txt)"] or
           all(not BUILD_ONLY.search(p) for p in final_packages),
           f"the final stage installs build packages: {final_packages}")
    for keyword, args in final:
        if keyword == "COPY" and "--from=" in args:
            sources = [w for w in args.split()[:-1] if not w.startswith("--")]
            expect(all(s.startswith("/out/") for s in sources),
                   f"the final stage copies more than the build's /out: {args}")

    users = [a for k, a in final if k == "USER"]
    expect(users, "the final stage has no USER")
    user = users[-1].split(":")[0]
    expect(user not in ("root", "0"), f"USER {users[-1]} is root")

    with open(os.path.join(source_dir, "server", "main.cc")) as f:
        main_cc = f.read()
    grpc_port = flag_default(main_cc, "listen").rsplit(":", 1)[1]
    metrics_port = flag_default(main_cc, "metrics_listen").rsplit(":", 1)[1]
    exposed = {p.split("/")[0] for k, a in final if k == "EXPOSE"
               for p in a.split()}
    expect({grpc_port, metrics_port} <= exposed,
           f"EXPOSE {sorted(exposed)}: want {grpc_port} and {metrics_port}")

    healthchecks = [a for k, a in final if k == "HEALTHCHECK"]
    expect(len(healthchecks) == 1, "want one HEALTHCHECK")
    expect(" CMD " in f" {healthchecks[0]} ", "HEALTHCHECK without CMD")
    health_command = healthchecks[0].split(" CMD ", 1)[1].strip()
    expect("samplerctl health" in health_command,
           "the HEALTHCHECK does not use samplerctl health")
    expect(not health_command.startswith("["),
           "the HEALTHCHECK needs the shell form (it reads SAMPLER_LISTEN)")

    entrypoints = [a for k, a in final if k == "ENTRYPOINT"]
    expect(entrypoints and "sampler-entrypoint" in entrypoints[-1],
           "ENTRYPOINT is not sampler-entrypoint")
    envs = " ".join(a for k, a in final if k == "ENV")
    expect(f"SAMPLER_LISTEN=0.0.0.0:{grpc_port}" in envs,
           "ENV SAMPLER_LISTEN (read by the HEALTHCHECK) is not the default")
    return health_command, main_cc


def check_dockerignore(source_dir):
    with open(os.path.join(source_dir, ".dockerignore")) as f:
        patterns = {line.strip() for line in f
                    if line.strip() and not line.startswith("#")}
    for pattern in (".git", "build", "build-*", "bundle*", "**/node_modules"):
        expect(pattern in patterns, f".dockerignore lacks {pattern}")


def check_runtime_packages(source_dir, binaries):
    script = os.path.join(source_dir, "deploy", "docker",
                          "runtime-packages.sh")
    done = run([script] + binaries, timeout_s=60)
    packages = done.stdout.split()
    log(f"runtime-packages.sh here: {' '.join(packages)}")
    for prefix in ("libgrpc++", "libgrpc2", "libprotobuf", "libabsl",
                   "libprometheus-cpp-core", "libprometheus-cpp-pull"):
        expect(any(p.startswith(prefix) for p in packages),
               f"runtime-packages.sh found no {prefix}* package")
    expect(all(not BUILD_ONLY.search(p) for p in packages),
           f"runtime-packages.sh lists a build package: {packages}")
    for base in ("libc6", "libstdc++6", "libgcc-s1"):
        expect(base not in packages, f"{base} is listed (the base has it)")


def entrypoint_flags(entrypoint):
    match = re.search(r"for name in (.*?); do", entrypoint, re.S)
    expect(match, "entrypoint.sh: no `for name in ...; do` list")
    return [n.lower() for n in match.group(1).replace("\\", " ").split()]


def check_entrypoint_live(source_dir, server, samplerctl, health_command,
                          main_cc, workdir):
    entrypoint = os.path.join(source_dir, "deploy", "docker", "entrypoint.sh")
    with open(entrypoint) as f:
        mapped = entrypoint_flags(f.read())
    server_flags = re.findall(r"ABSL_FLAG\(\s*[\w:<>]+\s*,\s*(\w+)\s*,",
                              main_cc)
    unmapped = sorted(set(server_flags) - set(mapped))
    expect(not unmapped, f"entrypoint.sh has no SAMPLER_* variable for "
           f"--{', --'.join(unmapped)}")
    log(f"entrypoint.sh maps all {len(server_flags)} server flags")

    # A command that is not a flag runs instead of the server.
    done = run([entrypoint, "echo", "not", "the", "server"], timeout_s=10)
    expect(done.stdout.strip() == "not the server",
           f"a plain command did not run as is: {done.stdout!r}")

    grpc_port = free_port()
    metrics_port = free_port()
    env = dict(os.environ)
    env.update({
        "SAMPLER_SERVER_BIN": server,
        "SAMPLER_LISTEN": f"127.0.0.1:{grpc_port}",
        "SAMPLER_METRICS_LISTEN": f"127.0.0.1:{metrics_port}",
        "SAMPLER_BACKEND": "cuda",          # the command line's cpu wins
        "SAMPLER_MAX_BATCH_ITEMS": "12345",
        "SAMPLER_WORKER_THREADS": "1",
        "SAMPLER_SHUTDOWN_GRACE": "5s",
    })
    health_env = dict(os.environ)
    health_env["PATH"] = (os.path.dirname(os.path.abspath(samplerctl)) +
                          os.pathsep + health_env.get("PATH", ""))
    health_env["SAMPLER_LISTEN"] = env["SAMPLER_LISTEN"]

    with Processes(workdir) as processes:
        process, target = processes.start_server(
            "entrypoint", server, argv=[entrypoint, "--backend=cpu"], env=env)
        try:
            expect(target == f"127.0.0.1:{grpc_port}",
                   f"serving on {target}, not on SAMPLER_LISTEN's port")
            server_log = processes.log_of(process)
            expect("backend cpu (asked for with --backend=cpu)" in server_log,
                   "the command line's --backend=cpu did not win over "
                   f"SAMPLER_BACKEND=cuda:\n{server_log}")
            info = json.loads(run([samplerctl, "info", "--json", "--target",
                                   target]).stdout)
            batch_items = int(info["limits"]["maxBatchItems"])
            expect(batch_items == 12345,
                   f"SAMPLER_MAX_BATCH_ITEMS=12345 gave {batch_items}")
            metrics = http_get(f"http://127.0.0.1:{metrics_port}/metrics")
            expect("sampler_requests_total" in metrics,
                   "no metrics on SAMPLER_METRICS_LISTEN")
            log("entry point: environment and command-line flags applied")

            done = run(["sh", "-c", health_command], env=health_env,
                       timeout_s=15, check=False)
            expect(done.returncode == 0,
                   f"HEALTHCHECK exited {done.returncode} on a serving "
                   f"server: {done.stdout} {done.stderr}")
            log(f"HEALTHCHECK on the live server: exit 0 ({done.stdout.strip()})")
        except CheckError:
            processes.dump_logs()
            raise
        status = processes.stop(process)
        expect(status == 0, f"server exited {status} after SIGTERM "
               "(the entry point must exec it)")
        expect("stopped" in processes.log_of(process),
               "the server did not drain and stop on SIGTERM")
        done = run(["sh", "-c", health_command], env=health_env,
                   timeout_s=15, check=False)
        expect(done.returncode == 1,
               f"HEALTHCHECK exited {done.returncode} with no server: "
               "Docker wants 1")
        log("HEALTHCHECK with the server stopped: exit 1")

        # An empty SAMPLER_METRICS_LISTEN turns the endpoint off.
        env["SAMPLER_METRICS_LISTEN"] = ""
        env["SAMPLER_LISTEN"] = "127.0.0.1:0"
        process, _ = processes.start_server(
            "entrypoint-nometrics", server, argv=[entrypoint, "--backend=cpu"],
            env=env)
        expect("metrics on (off)" in processes.log_of(process),
               "SAMPLER_METRICS_LISTEN= did not turn metrics off")
        expect(processes.stop(process) == 0, "server exit status")
        log("entry point: SAMPLER_METRICS_LISTEN= turns metrics off")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--server", required=True)
    parser.add_argument("--samplerctl", required=True)
    parser.add_argument("--loadgen", required=True)
    args = parser.parse_args()

    def body():
        health_command, main_cc = check_dockerfile(args.source_dir)
        log("Dockerfile: stages, packages, user, ports, healthcheck checked")
        check_dockerignore(args.source_dir)
        check_runtime_packages(args.source_dir,
                               [args.server, args.samplerctl, args.loadgen])
        with tempfile.TemporaryDirectory(prefix="dockerfile_test.") as tmp:
            check_entrypoint_live(args.source_dir, args.server,
                                  args.samplerctl, health_command, main_cc,
                                  tmp)

    return main_wrapper("dockerfile_test", body)


if __name__ == "__main__":
    sys.exit(main())
