#!/usr/bin/python3
"""Scale-out: three sampler-server replicas behind a gRPC load balancer give
every seeded request the answer that a single server gives.

- A reference server with no batching (--max_batch_items=1) answers a set
  of seeded requests of every kind (SampleGamma, SampleBoards,
  SampleCategorical, SampleDirichlet, and Enumerate, which needs no seed):
  the single-server answers.
- Three replicas, each with different batching flags, run behind
  1. nginx (Debian's), configured from deploy/nginx/nginx.conf with only the
     addresses, the worker count and the file locations changed, as an
     HTTP/2 gRPC proxy that sends each call to the next replica;
  2. gRPC's own client-side round_robin balancing over the three addresses
     (what a client does with the Kubernetes headless Service's dns:///
     name).
  Through each, all the requests are sent at once; every answer must equal
  the reference answer byte for byte (the serialised response message), and
  each replica's sampler_requests_total must show it served at least a
  fifth of them (an even split is a third).

    scaleout_test.py --source-dir DIR --server BIN --stubs DIR
"""

import argparse
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_common import (HOST, CheckError, Processes, expect,  # noqa: E402
                           free_port, log, main_wrapper, require_tool, run,
                           requests_by_method, wait_until)

NGINX = "/usr/sbin/nginx"
REQUESTS_PER_KIND = 30
RPC_TIMEOUT_S = 60
MIN_SHARE = 0.2
REPLICA_FLAGS = [
    ["--max_batch_items=1048576", "--max_batch_delay=2ms"],
    ["--max_batch_items=4096", "--max_batch_delay=5ms"],
    ["--max_batch_items=300", "--max_batch_delay=1ms"],
]


def build_requests(pb):
    """[(method name, request)] with fixed inputs and seeds."""
    def f64(values):
        return pb.Reals(f64=pb.DoubleList(values=values))

    requests = []
    for i in range(REQUESTS_PER_KIND):
        seed = 1000 + i
        requests.append(("SampleGamma", pb.SampleGammaRequest(
            groups=pb.GammaGroups(groups=[
                pb.GammaGroup(shape=0.3 + (i % 7) * 0.9, scale=1.5,
                              count=64 + (i * 37) % 200),
                pb.GammaGroup(shape=0.05, count=16)]),
            seed=seed)))
        requests.append(("SampleBoards", pb.SampleBoardsRequest(
            rows=9 + i % 3, cols=9, stones=[10, 12], count=4 + i % 5,
            seed=seed)))
        requests.append(("SampleCategorical", pb.SampleCategoricalRequest(
            categories=6,
            values=f64([float((r * 7 + c * 3 + i) % 11) + 0.5
                        for r in range(12) for c in range(6)]),
            draws=3, seed=seed)))
        requests.append(("SampleDirichlet", pb.SampleDirichletRequest(
            concentrations=f64([0.1, 0.5, 1.0, 2.0, 5.0] * 8), dimension=5,
            seed=seed)))
        die = pb.Pmf(offset=i % 3, probabilities=f64([1 / 6] * 6))
        coin = pb.Pmf(offset=0, probabilities=f64([0.25, 0.75]))
        requests.append(("Enumerate", pb.EnumerateRequest(problems=[
            pb.EnumerateProblem(terms=[die, coin, die])])))
    return requests


def call_all(stub, requests):
    """Sends every request at once; returns the serialised answers."""
    futures = [getattr(stub, method).future(request, timeout=RPC_TIMEOUT_S)
               for method, request in requests]
    return [f.result().SerializeToString(deterministic=True)
            for f in futures]


def sampling_requests(metrics_ports):
    """Sampling RPCs each replica has finished so far."""
    counts = []
    for port in metrics_ports:
        by_method = requests_by_method(port)
        counts.append(sum(v for m, v in by_method.items()
                          if m != "GetServerInfo"))
    return counts


def compare(name, answers, reference, requests):
    wrong = [i for i, (a, r) in enumerate(zip(answers, reference)) if a != r]
    expect(len(answers) == len(reference), f"{name}: answer count")
    expect(not wrong, f"{name}: {len(wrong)} of {len(answers)} answers differ "
           f"from the single server's, first request #{wrong[0]} "
           f"({requests[wrong[0]][0]})" if wrong else "")


def check_spread(name, before, after, total):
    served = [a - b for a, b in zip(after, before)]
    log(f"{name}: {total} requests, served by the replicas: {served}")
    expect(sum(served) == total, f"{name}: the replicas served "
           f"{sum(served)} requests, {total} were sent")
    for replica, count in enumerate(served):
        expect(count >= MIN_SHARE * total,
               f"{name}: replica {replica} served {count} of {total}")


def render_nginx(source_dir, tmp, listen_port, replica_targets):
    """deploy/nginx/nginx.conf for this machine: the replicas' and the
    listener's addresses, one worker, and every file in tmp."""
    with open(os.path.join(source_dir, "deploy", "nginx", "nginx.conf")) as f:
        text = f.read()
    server_line = re.compile(r"^(\s*)server\s+\S+:\d+(.*);\s*$", re.M)
    lines = server_line.findall(text)
    expect(len(lines) == len(replica_targets),
           f"deploy/nginx/nginx.conf has {len(lines)} upstream servers, "
           f"this test runs {len(replica_targets)}")
    replacements = iter(replica_targets)
    text = server_line.sub(
        lambda m: f"{m.group(1)}server {next(replacements)}{m.group(2)};",
        text)
    text, listens = re.subn(r"listen\s+\d+\s+http2;",
                            f"listen {HOST}:{listen_port} http2;", text)
    expect(listens == 1, "deploy/nginx/nginx.conf: want one `listen PORT "
           "http2;`")
    text = re.sub(r"worker_processes\s+\w+;", "worker_processes 1;", text)
    paths = "\n".join(
        f"  {directive} {os.path.join(tmp, name)};"
        for directive, name in [
            ("client_body_temp_path", "client_body"),
            ("proxy_temp_path", "proxy"), ("fastcgi_temp_path", "fastcgi"),
            ("uwsgi_temp_path", "uwsgi"), ("scgi_temp_path", "scgi"),
            ("access_log", "access.log")])
    text = text.replace("http {", "http {\n" + paths, 1)
    path = os.path.join(tmp, "nginx.conf")
    with open(path, "w") as f:
        f.write(text)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--server", required=True)
    parser.add_argument("--stubs", required=True,
                        help="the generated Python stubs' folder")
    args = parser.parse_args()
    sys.path.insert(0, args.stubs)

    def body():
        require_tool(NGINX, "nginx")
        try:
            import grpc
            from sampler.v1 import sampler_pb2 as pb
            from sampler.v1 import sampler_pb2_grpc as pb_grpc
        except ImportError as error:
            raise CheckError(f"{error}: run with Debian's /usr/bin/python3 "
                             "(python3-grpcio, python3-protobuf) and --stubs "
                             "<build>/client/examples/python")
        with tempfile.TemporaryDirectory(prefix="scaleout_test.") as tmp, \
                Processes(tmp) as processes:
            try:
                run_all(args, grpc, pb, pb_grpc, processes, tmp)
            except CheckError:
                processes.dump_logs()
                raise

    return main_wrapper("scaleout_test", body)


def run_all(args, grpc, pb, pb_grpc, processes, tmp):
    os.chmod(tmp, 0o755)  # nginx's workers may run as another user
    common = ["--worker_threads=1"]
    reference, reference_target = processes.start_server(
        "reference", args.server, common + ["--max_batch_items=1"])
    replicas, targets, metrics_ports = [], [], []
    for i, flags in enumerate(REPLICA_FLAGS):
        port = free_port()
        process, target = processes.start_server(
            f"replica-{i}", args.server, common + flags, metrics_port=port)
        replicas.append(process)
        targets.append(target)
        metrics_ports.append(port)
    log(f"reference {reference_target} (no batching); replicas {targets}")

    requests = build_requests(pb)
    with grpc.insecure_channel(reference_target) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        started = time.monotonic()
        expected = call_all(pb_grpc.SamplerServiceStub(channel), requests)
    log(f"single server: {len(expected)} answers in "
        f"{time.monotonic() - started:.2f} s")

    # 1. nginx grpc_pass in front of the three replicas.
    nginx_port = free_port()
    config = render_nginx(args.source_dir, tmp, nginx_port, targets)
    nginx_flags = ["-p", tmp, "-c", config, "-e",
                   os.path.join(tmp, "error.log")]
    run([NGINX, "-t"] + nginx_flags, timeout_s=30)
    nginx = processes.start("nginx", [NGINX] + nginx_flags + [
        "-g", f"daemon off; pid {os.path.join(tmp, 'nginx.pid')};"])
    before = sampling_requests(metrics_ports)
    with grpc.insecure_channel(f"{HOST}:{nginx_port}") as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        started = time.monotonic()
        answers = call_all(pb_grpc.SamplerServiceStub(channel), requests)
        elapsed = time.monotonic() - started
    compare("nginx", answers, expected, requests)
    log(f"nginx grpc_pass on {HOST}:{nginx_port}: {len(answers)} answers in "
        f"{elapsed:.2f} s, all equal to the single server's")
    check_spread("nginx", before, sampling_requests(metrics_ports),
                 len(requests))
    expect(processes.stop(nginx) == 0, "nginx exit status")

    # 2. gRPC client-side round_robin over the three addresses.
    target = "ipv4:" + ",".join(targets)
    options = [("grpc.service_config",
                '{"loadBalancingConfig": [{"round_robin": {}}]}')]
    with grpc.insecure_channel(target, options=options) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        stub = pb_grpc.SamplerServiceStub(channel)

        # Until every replica has answered once, round_robin may still be
        # connecting to some of them.
        def all_connected():
            stub.GetServerInfo(pb.GetServerInfoRequest(), timeout=10)
            return all(requests_by_method(p).get("GetServerInfo", 0) > 0
                       for p in metrics_ports)

        wait_until("round_robin to reach every replica", all_connected, 30,
                   0.05)
        before = sampling_requests(metrics_ports)
        started = time.monotonic()
        answers = call_all(stub, requests)
        elapsed = time.monotonic() - started
    compare("round_robin", answers, expected, requests)
    log(f"client-side round_robin over {target}: {len(answers)} answers in "
        f"{elapsed:.2f} s, all equal to the single server's")
    check_spread("round_robin", before, sampling_requests(metrics_ports),
                 len(requests))

    for process in [reference] + replicas:
        status = processes.stop(process)
        expect(status == 0, f"a server exited {status} after SIGTERM")


if __name__ == "__main__":
    sys.exit(main())
