#!/usr/bin/python3
"""A real Prometheus scrapes a live sampler-server under load, and every
PromQL expression of the Grafana dashboard is asked of it.

1. `promtool check config` passes on deploy/prometheus.yml.
2. A test copy of it differs only in the scrape targets (the sampler job's
   becomes the live server's metrics address on 127.0.0.1, the prometheus
   job's the test Prometheus' own address) and in the intervals (1 s instead
   of 5 s, so that the test is short); promtool accepts it too.
3. sampler-server (backend auto: the CPU in CI) and /usr/bin/prometheus, with
   its own storage in a temporary folder, start on free loopback ports;
   Prometheus must see the sampler target up.
4. Load for about 8 s: sampler-loadgen drives each of Enumerate,
   SampleCategorical, SampleGamma, SampleDirichlet and SampleBoards, while
   samplerctl calls the three *Stream RPCs, GetServerInfo and two invalid
   requests (so that code!="OK" series exist).
5. Every expression of every panel of deploy/grafana/dashboards/sampler.json,
   with Grafana's variables replaced ($__rate_interval: 5s, $instance: .+),
   goes to Prometheus' /api/v1/query_range over the load window and must
   return at least one series with a finite value. The one exception, said
   out loud in the output: sampler_device_pool_bytes is set only by the CUDA
   backend, so on the CPU backend its panel may be empty; on a CUDA backend
   it must return data like every other.
   The instance variable's query (label_values) must list the server.
6. Every metric the dashboard uses is registered in server/metrics.cc, and
   the dashboard shows each family the issue asks for.

    prometheus_dashboard_test.py --source-dir DIR --server BIN \\
        --samplerctl BIN --loadgen BIN
"""

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_common import (HOST, CheckError, Processes, expect,  # noqa: E402
                           free_port, http_get, import_yaml, log,
                           main_wrapper, require_tool, run, wait_until)

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
SCRAPE_INTERVAL = "1s"
RATE_INTERVAL = "5s"     # Grafana's $__rate_interval, >= 4 scrape intervals
LOAD_SECONDS = 8
# Metric families the dashboard must show (the list).
REQUIRED_FAMILIES = [
    "sampler_requests_total", "sampler_request_duration_seconds_bucket",
    "sampler_queue_wait_seconds_bucket", "sampler_batch_requests_bucket",
    "sampler_batch_items_bucket", "sampler_device_seconds_bucket",
    "sampler_items_total", "sampler_device_pool_bytes",
    "sampler_inflight_requests", "sampler_queue_depth",
]
# Set by the CUDA backend only (server/metrics.h: SetPoolBytes). With the
# CPU backend an expression over it legitimately returns nothing.
CUDA_ONLY_METRICS = {"sampler_device_pool_bytes"}


def dashboard_targets(dashboard):
    """[(panel title, refId, expr)] of every panel, rows' panels included."""
    found = []

    def visit(panels):
        for panel in panels:
            for target in panel.get("targets", []):
                if target.get("expr"):
                    found.append((panel.get("title", "?"),
                                  target.get("refId", "?"), target["expr"]))
            visit(panel.get("panels", []))

    visit(dashboard.get("panels", []))
    return found


def substitute(expr):
    """The expression as Grafana sends it, for this test's data."""
    expr = expr.replace("$__rate_interval", RATE_INTERVAL)
    expr = expr.replace("${__rate_interval}", RATE_INTERVAL)
    expr = expr.replace("$__interval", SCRAPE_INTERVAL)
    expr = re.sub(r"\$\{instance(?::\w+)?\}|\$instance", ".+", expr)
    expect("$" not in expr, f"an unknown Grafana variable is left in {expr}")
    return expr


def metric_names(expr):
    """Names of the metrics an expression selects."""
    names = set(re.findall(r"\b(sampler_[a-z_]+)\b", expr))
    return names


def registered_families(source_dir):
    with open(os.path.join(source_dir, "server", "metrics.cc")) as f:
        text = f.read()
    families = {}
    for match in re.finditer(r'Build(Counter|Gauge|Histogram)\(\)\s*'
                             r'\.Name\("([a-z_]+)"\)', text):
        families[match.group(2)] = match.group(1)
    expect(families, "no metric families found in server/metrics.cc")
    return families


def exposed_names(families):
    """Sample names that Prometheus stores for the registered families."""
    names = set()
    for name, kind in families.items():
        if kind == "Histogram":
            names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
        else:
            names.add(name)
    return names


def test_config(yaml, original, metrics_port, prometheus_port):
    """deploy/prometheus.yml with only the targets and intervals changed."""
    config = json.loads(json.dumps(original))  # deep copy
    config.setdefault("global", {})
    config["global"]["scrape_interval"] = SCRAPE_INTERVAL
    config["global"]["evaluation_interval"] = SCRAPE_INTERVAL
    replacements = {"sampler": f"{HOST}:{metrics_port}",
                    "prometheus": f"{HOST}:{prometheus_port}"}
    for job in config["scrape_configs"]:
        name = job["job_name"]
        expect(name in replacements, f"deploy/prometheus.yml has a job "
               f"{name!r} that this test does not know how to point at "
               "loopback: teach it")
        for key in ("scrape_interval", "scrape_timeout"):
            if key in job:
                job[key] = SCRAPE_INTERVAL
        expect(len(job.get("static_configs", [])) == 1,
               f"job {name}: want one static_configs entry")
        job["static_configs"][0]["targets"] = [replacements[name]]
    return yaml.safe_dump(config, sort_keys=False)


class Prometheus:
    def __init__(self, port):
        self.base = f"http://{HOST}:{port}"

    def get(self, path, params):
        url = f"{self.base}{path}?{urllib.parse.urlencode(params, doseq=True)}"
        answer = json.loads(http_get(url, timeout=20))
        expect(answer.get("status") == "success",
               f"{path} {params}: {answer.get('error', answer)}")
        return answer["data"]

    def query(self, expr):
        return self.get("/api/v1/query", {"query": expr})["result"]

    def query_range(self, expr, start, end):
        data = self.get("/api/v1/query_range",
                        {"query": expr, "start": f"{start:.3f}",
                         "end": f"{end:.3f}", "step": SCRAPE_INTERVAL})
        return data["result"]


def finite_points(result):
    count = 0
    for series in result:
        for _, value in series.get("values", []):
            if math.isfinite(float(value)):
                count += 1
    return count


def drive_load(processes, loadgen, samplerctl, target):
    """sampler-loadgen on the five unary RPCs, samplerctl on the rest, for
    about LOAD_SECONDS; returns when all of it has finished."""
    loads = []
    for rpc in ("enumerate", "categorical", "gamma", "dirichlet", "boards"):
        loads.append(processes.start(f"loadgen-{rpc}", [
            loadgen, "--target", target, "--rpc", rpc,
            "--duration", f"{LOAD_SECONDS}s", "--concurrency", "2",
            "--progress=false"]))
    calls = [
        (["gamma", "--shape", "2", "--count", "5000", "--stream",
          "--chunk", "1000", "--seed", "1"], 0),
        (["categorical", "--weights", "1,2,3;4,5,6", "--draws", "50",
          "--stream", "--chunk", "1", "--seed", "2"], 0),
        (["boards", "--rows", "9", "--cols", "9", "--stones", "10,10",
          "--count", "20", "--stream", "--chunk", "5", "--seed", "3"], 0),
        (["info"], 0),
        # INVALID_ARGUMENT: more stones than sites; a negative shape.
        (["boards", "--rows", "3", "--cols", "3", "--stones", "20",
          "--count", "1"], 1),
        (["gamma", "--shape", "-1", "--count", "3"], 1),
    ]
    rounds = 0
    deadline = time.monotonic() + LOAD_SECONDS
    while time.monotonic() < deadline:
        for argv, want in calls:
            done = run([samplerctl] + argv + ["--target", target], check=False,
                       timeout_s=30)
            expect(done.returncode == want,
                   f"samplerctl {' '.join(argv)} exited {done.returncode}, "
                   f"want {want}: {done.stderr.strip()}")
        rounds += 1
        time.sleep(0.5)
    for process in loads:
        process.wait(timeout=LOAD_SECONDS + 60)
        expect(process.returncode == 0,
               f"sampler-loadgen exited {process.returncode}:\n"
               f"{processes.log_of(process)}")
        summary = [line for line in processes.log_of(process).splitlines()
                   if line.startswith(("requests:", "throughput:"))]
        log(f"  {process.args[4]}: {'; '.join(summary)}")
    log(f"  samplerctl: {rounds} rounds of streams, info and bad requests")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--server", required=True)
    parser.add_argument("--samplerctl", required=True)
    parser.add_argument("--loadgen", required=True)
    args = parser.parse_args()
    deploy = os.path.join(args.source_dir, "deploy")

    def body():
        require_tool(PROMETHEUS, "prometheus")
        require_tool(PROMTOOL, "prometheus")
        yaml = import_yaml()
        shipped = os.path.join(deploy, "prometheus.yml")
        run([PROMTOOL, "check", "config", shipped])
        log("promtool check config deploy/prometheus.yml: passed")
        with open(shipped) as f:
            original = yaml.safe_load(f)
        with open(os.path.join(deploy, "grafana", "dashboards",
                               "sampler.json")) as f:
            dashboard = json.load(f)
        targets = dashboard_targets(dashboard)
        expect(targets, "the dashboard has no PromQL targets")

        families = registered_families(args.source_dir)
        known = exposed_names(families)
        used = set()
        for title, ref, expr in targets:
            names = metric_names(expr)
            unknown = names - known
            expect(not unknown, f"panel {title!r} {ref}: {sorted(unknown)} "
                   "not registered in server/metrics.cc")
            used |= names
        missing = [f for f in REQUIRED_FAMILIES if f not in used]
        expect(not missing, f"the dashboard does not show {missing}")
        log(f"dashboard: {len(targets)} expressions over "
            f"{len(used)} metric names, all registered in server/metrics.cc")

        with tempfile.TemporaryDirectory(prefix="prometheus_test.") as tmp, \
                Processes(tmp) as processes:
            try:
                run_live(args, yaml, original, targets, processes, tmp)
            except CheckError:
                processes.dump_logs()
                raise

    return main_wrapper("prometheus_dashboard_test", body)


def run_live(args, yaml, original, targets, processes, tmp):
    metrics_port = free_port()
    server, target = processes.start_server(
        "sampler-server", args.server, metrics_port=metrics_port)
    info = json.loads(run([args.samplerctl, "info", "--json", "--target",
                           target]).stdout)
    backend = info.get("backend", "")
    log(f"sampler-server on {target}, metrics on {HOST}:{metrics_port}, "
        f"{backend}")

    prometheus_port = free_port()
    config_path = os.path.join(tmp, "prometheus.yml")
    with open(config_path, "w") as f:
        f.write(test_config(yaml, original, metrics_port, prometheus_port))
    run([PROMTOOL, "check", "config", config_path])
    log("promtool check config (test copy: targets and intervals changed): "
        "passed")
    processes.start("prometheus", [
        PROMETHEUS, f"--config.file={config_path}",
        f"--storage.tsdb.path={os.path.join(tmp, 'data')}",
        f"--web.listen-address={HOST}:{prometheus_port}",
        "--log.level=warn"])
    prometheus = Prometheus(prometheus_port)
    wait_until("Prometheus to be ready",
               lambda: "Ready" in http_get(
                   f"http://{HOST}:{prometheus_port}/-/ready"), 60, 0.25)
    wait_until("Prometheus to scrape the sampler",
               lambda: any(r["value"][1] == "1" for r in prometheus.query(
                   'up{job="sampler"}')), 30, 0.25)
    log(f"prometheus on {HOST}:{prometheus_port}: sampler target up")

    start = time.time()
    drive_load(processes, args.loadgen, args.samplerctl, target)
    time.sleep(3)  # a few more scrapes after the last request
    end = time.time()

    cpu_backend = backend != "BACKEND_CUDA"
    failures = []
    log(f"dashboard expressions over the last {end - start:.0f} s "
        f"(step {SCRAPE_INTERVAL}, $__rate_interval={RATE_INTERVAL}):")
    for title, ref, expr in targets:
        query = substitute(expr)
        result = prometheus.query_range(query, start - 2, end)
        points = finite_points(result)
        exempt = cpu_backend and metric_names(expr) & CUDA_ONLY_METRICS
        if points:
            verdict = f"{len(result)} series, {points} finite points"
        elif exempt:
            verdict = ("EMPTY, allowed: the CPU backend sets no "
                       f"{', '.join(sorted(metric_names(expr) & CUDA_ONLY_METRICS))}")
        else:
            verdict = "NO DATA"
            failures.append(f"{title} [{ref}]: {query}")
        log(f"  {verdict:40}  {title} [{ref}]")

    errors = prometheus.query(
        'sum by (method, code) (sampler_requests_total{code!="OK"})')
    expect(errors, "no code!=\"OK\" series although bad requests were sent")
    log("  error series: " + ", ".join(
        f"{r['metric']['method']} {r['metric']['code']}" for r in errors))
    methods = {r["metric"]["method"] for r in prometheus.query(
        'sum by (method) (sampler_requests_total{code="OK"}) > 0')}
    for method in ("Enumerate", "SampleCategorical", "SampleCategoricalStream",
                   "SampleGamma", "SampleGammaStream", "SampleDirichlet",
                   "SampleBoards", "SampleBoardsStream", "GetServerInfo"):
        expect(method in methods, f"no successful {method} was recorded")

    instances = prometheus.get("/api/v1/label/instance/values",
                               {"match[]": "sampler_inflight_requests"})
    expect(f"{HOST}:{metrics_port}" in instances,
           f"the instance variable would list {instances}")
    log(f"  instance variable: {instances}")

    expect(not failures, "expressions without data:\n  " +
           "\n  ".join(failures))
    status = processes.stop(server)
    expect(status == 0, f"sampler-server exited {status} after SIGTERM")


if __name__ == "__main__":
    sys.exit(main())
