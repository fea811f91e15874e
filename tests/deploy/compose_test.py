#!/usr/bin/python3
"""Checks deploy/docker-compose.yml with Debian's docker-compose, which
validates and normalises a compose file without a Docker engine.

- `docker-compose config` accepts the file, with and without the "cpu"
  profile;
- sampler reserves NVIDIA GPUs and runs the CUDA backend; sampler-cpu (profile
  "cpu") reserves none, runs the CPU backend and answers to the name
  "sampler"; both build the repository's Dockerfile and publish the gRPC and
  metrics ports; every SAMPLER_* variable is one that the entry point maps;
  stop_grace_period covers --drain_delay plus --shutdown_grace plus the
  server's shutdown margin (server/shutdown_watchdog.h);
- every bind-mounted file or folder exists; named volumes are declared;
  images are pinned (no "latest", no missing tag);
- the pieces fit: Prometheus is started with the mounted config file, whose
  sampler job scrapes a service of the stack on the metrics port; Grafana's
  provisioned datasource points at the prometheus service, its dashboard
  provider at the mounted dashboards folder, and every panel and target of
  the dashboard uses the provisioned datasource's uid.

    compose_test.py --source-dir DIR
"""

import argparse
import json
import os
import re
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_common import (CheckError, expect, import_yaml, log,  # noqa: E402
                           main_wrapper, require_tool, run,
                           shutdown_margin_seconds)

DOCKER_COMPOSE = "/usr/bin/docker-compose"
GRPC_PORT = 50051
METRICS_PORT = 9464


def seconds(duration):
    """'45s', '2ms', '1m30s' -> seconds."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", str(duration))
    expect(parts and "".join(n + u for n, u in parts) == str(duration),
           f"cannot read the duration {duration!r}")
    return sum(float(n) * units[u] for n, u in parts)


def compose_config(compose_file, profile=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("COMPOSE_", "SAMPLER_", "PROMETHEUS_",
                                "GRAFANA_", "DOCKER_"))}
    argv = [DOCKER_COMPOSE, "-f", compose_file]
    if profile:
        argv += ["--profile", profile]
    done = run(argv + ["config"], env=env, timeout_s=60, check=False)
    expect(done.returncode == 0,
           f"docker-compose config{' --profile ' + profile if profile else ''}"
           f" rejected the file:\n{done.stderr}")
    return done.stdout


def environment(service):
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return env


def published_targets(service):
    targets = set()
    for port in service.get("ports", []):
        if isinstance(port, dict):
            targets.add(int(port["target"]))
        else:
            targets.add(int(str(port).split(":")[-1].split("/")[0]))
    return targets


def mounts(service):
    """[(source, target, is_bind)] of a normalised service."""
    result = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            result.append((volume.get("source"), volume["target"],
                           volume.get("type") == "bind"))
        else:
            parts = volume.split(":")
            source, target = parts[0], parts[1]
            result.append((source, target, source.startswith(("/", "."))))
    return result


def entrypoint_variables(source_dir):
    with open(os.path.join(source_dir, "deploy", "docker",
                           "entrypoint.sh")) as f:
        match = re.search(r"for name in (.*?); do", f.read(), re.S)
    expect(match, "entrypoint.sh: no variable list")
    return {"SAMPLER_" + n for n in match.group(1).replace("\\", " ").split()}


def check_sampler(name, service, source_dir, variables):
    build = service.get("build", {})
    context = build.get("context", "")
    dockerfile = os.path.join(context, build.get("dockerfile", "Dockerfile"))
    expect(os.path.realpath(context) == os.path.realpath(source_dir),
           f"{name}: build context {context} is not the repository root")
    expect(os.path.isfile(dockerfile), f"{name}: {dockerfile} is missing")
    expect({GRPC_PORT, METRICS_PORT} <= published_targets(service),
           f"{name}: ports {service.get('ports')} do not publish "
           f"{GRPC_PORT} and {METRICS_PORT}")
    env = environment(service)
    unknown = sorted(k for k in env if k.startswith("SAMPLER_")
                     and k not in variables)
    expect(not unknown, f"{name}: the entry point maps no flag to {unknown}")
    expect(env.get("SAMPLER_LISTEN", f"0.0.0.0:{GRPC_PORT}")
           .endswith(f":{GRPC_PORT}"), f"{name}: SAMPLER_LISTEN port")
    expect(env.get("SAMPLER_METRICS_LISTEN", f"0.0.0.0:{METRICS_PORT}")
           .endswith(f":{METRICS_PORT}"), f"{name}: SAMPLER_METRICS_LISTEN")
    grace = seconds(service.get("stop_grace_period", "10s"))
    margin = shutdown_margin_seconds(source_dir)
    needed = (seconds(env.get("SAMPLER_DRAIN_DELAY", "0s")) +
              seconds(env.get("SAMPLER_SHUTDOWN_GRACE", "30s")) + margin)
    expect(grace >= needed, f"{name}: stop_grace_period {grace}s does not "
           f"cover drain delay + shutdown grace + the server's {margin}s "
           f"shutdown margin ({needed}s)")
    return env


def gpu_devices(service):
    return (service.get("deploy", {}).get("resources", {})
            .get("reservations", {}).get("devices", []))


def check_mounts(config):
    declared = set((config.get("volumes") or {}).keys())
    for name, service in config["services"].items():
        for source, target, is_bind in mounts(service):
            if is_bind:
                expect(os.path.exists(source),
                       f"{name} mounts {source}, which does not exist")
                log(f"  {name}: {source} -> {target} exists")
            elif source:
                expect(source in declared,
                       f"{name}: volume {source} is not declared")


def check_images(config):
    for name, service in config["services"].items():
        image = service.get("image", "")
        expect(":" in image.split("/")[-1] or "@sha256:" in image,
               f"{name}: image {image!r} has no tag")
        expect(not image.endswith(":latest"), f"{name}: {image} is unpinned")


def mount_source(service, target):
    for source, mount_target, _ in mounts(service):
        if mount_target == target:
            return source
    raise CheckError(f"nothing is mounted at {target}")


def check_prometheus(config, yaml, sampler_names):
    prometheus = config["services"]["prometheus"]
    flags = dict(arg.split("=", 1) for arg in prometheus.get("command", [])
                 if arg.startswith("--") and "=" in arg)
    config_file = flags.get("--config.file", "/etc/prometheus/prometheus.yml")
    with open(mount_source(prometheus, config_file)) as f:
        prometheus_config = yaml.safe_load(f)
    jobs = {j["job_name"]: j for j in prometheus_config["scrape_configs"]}
    expect("sampler" in jobs, "prometheus.yml has no sampler job")
    targets = [t for c in jobs["sampler"].get("static_configs", [])
               for t in c.get("targets", [])]
    expect(targets, "the sampler job has no targets")
    for target in targets:
        host, port = target.rsplit(":", 1)
        expect(host in sampler_names, f"scrape target {target}: {host} is "
               f"not a sampler service of the stack ({sampler_names})")
        expect(int(port) == METRICS_PORT, f"scrape target {target}: port")
    expect(jobs["sampler"].get("metrics_path", "/metrics") == "/metrics",
           "metrics_path")
    log(f"prometheus: {config_file} mounted, sampler job scrapes {targets}")


def check_grafana(config, yaml, source_dir):
    grafana = config["services"]["grafana"]
    provisioning = mount_source(grafana, "/etc/grafana/provisioning")
    datasource_files = os.listdir(os.path.join(provisioning, "datasources"))
    uids = {}
    for file_name in datasource_files:
        with open(os.path.join(provisioning, "datasources", file_name)) as f:
            for ds in yaml.safe_load(f).get("datasources", []):
                uids[ds["uid"]] = ds
    expect(uids, "no provisioned datasource")
    for uid, ds in uids.items():
        url = urllib.parse.urlsplit(ds["url"])
        expect(url.hostname in config["services"],
               f"datasource {uid}: {url.hostname} is not a service")
        expect(url.port == 9090, f"datasource {uid}: port {url.port}")

    dashboard_dirs = []
    for file_name in os.listdir(os.path.join(provisioning, "dashboards")):
        with open(os.path.join(provisioning, "dashboards", file_name)) as f:
            for provider in yaml.safe_load(f).get("providers", []):
                dashboard_dirs.append(provider["options"]["path"])
    expect(dashboard_dirs, "no provisioned dashboard provider")
    json_files = []
    for container_dir in dashboard_dirs:
        host_dir = mount_source(grafana, container_dir)
        json_files += [os.path.join(host_dir, n) for n in os.listdir(host_dir)
                       if n.endswith(".json")]
    expect(json_files, "the dashboard folder holds no .json")
    expect(os.path.realpath(os.path.join(
        source_dir, "deploy", "grafana", "dashboards", "sampler.json")) in
        [os.path.realpath(p) for p in json_files],
        "deploy/grafana/dashboards/sampler.json is not provisioned")

    home = environment(grafana).get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
    if home:
        directory, name = os.path.split(home)
        expect(os.path.isfile(os.path.join(mount_source(grafana, directory),
                                           name)),
               f"the home dashboard {home} is not in a mounted folder")

    for path in json_files:
        with open(path) as f:
            dashboard = json.load(f)
        used = set()

        def walk(node):
            if isinstance(node, dict):
                ds = node.get("datasource")
                if isinstance(ds, dict) and "uid" in ds:
                    used.add(ds["uid"])
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(dashboard)
        expect(used and used <= set(uids),
               f"{path}: datasource uids {used}, provisioned {set(uids)}")
    log(f"grafana: datasource {sorted(uids)}, dashboards {dashboard_dirs}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    compose_file = os.path.join(args.source_dir, "deploy",
                                "docker-compose.yml")

    def body():
        require_tool(DOCKER_COMPOSE, "docker-compose")
        yaml = import_yaml()
        config = yaml.safe_load(compose_config(compose_file))
        compose_config(compose_file, profile="cpu")
        log("docker-compose config: accepted, with and without --profile cpu")
        services = config["services"]
        for name in ("sampler", "sampler-cpu", "prometheus", "grafana"):
            expect(name in services, f"no service {name}")
        variables = entrypoint_variables(args.source_dir)

        gpu = services["sampler"]
        env = check_sampler("sampler", gpu, args.source_dir, variables)
        expect(not gpu.get("profiles"), "sampler must run without a profile")
        devices = gpu_devices(gpu)
        expect(any("gpu" in d.get("capabilities", []) and
                   d.get("driver") == "nvidia" for d in devices),
               f"sampler reserves no NVIDIA GPU: {devices}")
        expect(env.get("SAMPLER_BACKEND") == "cuda", "sampler: backend")

        cpu = services["sampler-cpu"]
        env = check_sampler("sampler-cpu", cpu, args.source_dir, variables)
        expect(cpu.get("profiles") == ["cpu"], "sampler-cpu: profiles")
        expect(not gpu_devices(cpu), "sampler-cpu reserves a GPU")
        expect(env.get("SAMPLER_BACKEND") == "cpu", "sampler-cpu: backend")
        aliases = (cpu.get("networks", {}).get("default") or {}).get(
            "aliases", [])
        expect("sampler" in aliases, "sampler-cpu is not reachable as sampler")
        log("sampler: GPU reservation, CUDA backend; sampler-cpu: profile "
            "cpu, CPU backend, alias sampler")

        check_images(config)
        check_mounts(config)
        check_prometheus(config, yaml, {"sampler"} | set(aliases))
        check_grafana(config, yaml, args.source_dir)

    return main_wrapper("compose_test", body)


if __name__ == "__main__":
    sys.exit(main())
