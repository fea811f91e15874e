#!/usr/bin/python3
"""Checks the Kubernetes manifests of deploy/k8s (parsed with PyYAML; no
cluster or kubectl here).

- every file parses; the kustomization lists existing files, and they hold a
  Deployment, a Service and a PodDisruptionBudget (monitoring/podmonitor.yaml
  a PodMonitor);
- the Deployment's selector matches its pod labels; the container requests
  and limits nvidia.com/gpu; its ports are the server's (gRPC 50051,
  metrics 9464, as SAMPLER_LISTEN and SAMPLER_METRICS_LISTEN set them);
  readiness, liveness and startup probes are gRPC probes on the gRPC port
  (readiness on sampler.v1.SamplerService); the pod runs as the image's
  non-root user; terminationGracePeriodSeconds covers --drain_delay plus
  --shutdown_grace plus the server's shutdown margin; every SAMPLER_* variable is one the entry point maps;
  the pod template carries the prometheus.io scrape annotations for the
  metrics port;
- the Service is headless (clusterIP: None, for dns:/// round-robin
  balancing), selects the Deployment's pods, and exposes the gRPC port;
- the PodDisruptionBudget selects the same pods and allows fewer disruptions
  than there are replicas; the PodMonitor scrapes the metrics port by name.

    k8s_test.py --source-dir DIR
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_common import (CheckError, expect, import_yaml, log,  # noqa: E402
                           main_wrapper, shutdown_margin_seconds)

GRPC_PORT = 50051
METRICS_PORT = 9464
IMAGE_USER = 10001  # the Dockerfile's USER


def seconds(duration):
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", duration)
    expect(parts, f"cannot read the duration {duration!r}")
    return sum(float(n) * units[u] for n, u in parts)


def load_all(yaml, path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def selects(selector, labels):
    match = selector.get("matchLabels", selector)
    return bool(match) and all(labels.get(k) == v for k, v in match.items())


def check_probe(name, probe, service=None):
    expect(probe is not None, f"no {name}")
    grpc = probe.get("grpc")
    expect(grpc is not None, f"{name} is not a gRPC probe: {probe}")
    expect(grpc.get("port") == GRPC_PORT, f"{name}: port {grpc.get('port')}")
    if service is not None:
        expect(grpc.get("service", "") == service,
               f"{name}: service {grpc.get('service')!r}, want {service!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    k8s = os.path.join(args.source_dir, "deploy", "k8s")

    def body():
        yaml = import_yaml()
        kustomization = load_all(yaml, os.path.join(k8s,
                                                    "kustomization.yaml"))[0]
        expect(kustomization.get("kind") == "Kustomization", "kustomization")
        by_kind = {}
        for resource in kustomization["resources"]:
            path = os.path.join(k8s, resource)
            expect(os.path.isfile(path), f"kustomization: {resource} missing")
            for doc in load_all(yaml, path):
                expect("apiVersion" in doc and "kind" in doc and
                       doc.get("metadata", {}).get("name"),
                       f"{resource}: a document lacks apiVersion, kind or "
                       "metadata.name")
                by_kind.setdefault(doc["kind"], []).append(doc)
        for kind in ("Deployment", "Service", "PodDisruptionBudget"):
            expect(len(by_kind.get(kind, [])) == 1, f"want one {kind}")
        images = {i["name"] for i in kustomization.get("images", [])}

        deployment = by_kind["Deployment"][0]
        expect(deployment["apiVersion"] == "apps/v1", "Deployment apiVersion")
        spec = deployment["spec"]
        replicas = spec.get("replicas", 1)
        template = spec["template"]
        pod_labels = template["metadata"]["labels"]
        expect(selects(spec["selector"], pod_labels),
               "the Deployment's selector does not match its pod labels")
        pod = template["spec"]
        containers = pod["containers"]
        expect(len(containers) == 1, "want one container")
        container = containers[0]
        expect(container["image"].split(":")[0] in images or
               ":" in container["image"],
               f"image {container['image']} is neither pinned nor set by "
               "the kustomization")

        resources = container.get("resources", {})
        for part in ("limits", "requests"):
            gpus = resources.get(part, {}).get("nvidia.com/gpu")
            expect(gpus is not None and int(gpus) >= 1,
                   f"resources.{part} has no nvidia.com/gpu")
        log(f"Deployment: {replicas} replicas, "
            f"{resources['limits']['nvidia.com/gpu']} GPU each")

        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        expect(ports.get("grpc") == GRPC_PORT, f"grpc port: {ports}")
        expect(ports.get("metrics") == METRICS_PORT, f"metrics port: {ports}")
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        expect(env.get("SAMPLER_LISTEN", f"0.0.0.0:{GRPC_PORT}")
               .endswith(f":{GRPC_PORT}"), "SAMPLER_LISTEN vs the grpc port")
        expect(env.get("SAMPLER_METRICS_LISTEN", f"0.0.0.0:{METRICS_PORT}")
               .endswith(f":{METRICS_PORT}"), "SAMPLER_METRICS_LISTEN")
        with open(os.path.join(args.source_dir, "deploy", "docker",
                               "entrypoint.sh")) as f:
            names = re.search(r"for name in (.*?); do", f.read(), re.S)
        variables = {"SAMPLER_" + n
                     for n in names.group(1).replace("\\", " ").split()}
        unknown = sorted(k for k in env if k not in variables)
        expect(not unknown, f"the entry point maps no flag to {unknown}")

        check_probe("readinessProbe", container.get("readinessProbe"),
                    service="sampler.v1.SamplerService")
        check_probe("livenessProbe", container.get("livenessProbe"))
        if "startupProbe" in container:
            check_probe("startupProbe", container["startupProbe"])
        log("probes: gRPC health on port 50051 (readiness on "
            "sampler.v1.SamplerService)")

        # The server exits at the latest drain delay + shutdown grace + its
        # watchdog's margin after SIGTERM; the kubelet's SIGKILL must not
        # come first.
        grace = pod.get("terminationGracePeriodSeconds", 30)
        margin = shutdown_margin_seconds(args.source_dir)
        needed = (seconds(env.get("SAMPLER_DRAIN_DELAY", "0s")) +
                  seconds(env.get("SAMPLER_SHUTDOWN_GRACE", "30s")) + margin)
        expect(grace >= needed, f"terminationGracePeriodSeconds {grace} does "
               f"not cover drain delay + shutdown grace + the server's "
               f"{margin}s shutdown margin ({needed}s)")
        log(f"termination grace {grace}s >= drain delay + shutdown grace + "
            f"{margin}s margin ({needed}s)")

        security = dict(pod.get("securityContext", {}))
        security.update(container.get("securityContext", {}))
        expect(security.get("runAsNonRoot") is True, "runAsNonRoot")
        expect(security.get("runAsUser", IMAGE_USER) == IMAGE_USER,
               "runAsUser differs from the image's user")
        expect(security.get("allowPrivilegeEscalation") is False,
               "allowPrivilegeEscalation")

        annotations = template["metadata"].get("annotations", {})
        expect(annotations.get("prometheus.io/scrape") == "true",
               "no prometheus.io/scrape annotation")
        expect(annotations.get("prometheus.io/port") == str(METRICS_PORT),
               "prometheus.io/port")
        expect(annotations.get("prometheus.io/path", "/metrics") == "/metrics",
               "prometheus.io/path")

        service = by_kind["Service"][0]
        expect(service["spec"].get("clusterIP") == "None",
               "the Service is not headless (clusterIP: None)")
        expect(selects(service["spec"]["selector"], pod_labels),
               "the Service does not select the Deployment's pods")
        service_ports = {p["name"]: p for p in service["spec"]["ports"]}
        expect("grpc" in service_ports and
               service_ports["grpc"]["port"] == GRPC_PORT and
               service_ports["grpc"].get("targetPort") in ("grpc", GRPC_PORT),
               f"Service grpc port: {service_ports}")
        log(f"Service {service['metadata']['name']}: headless, "
            f"dns:///{service['metadata']['name']}.NAMESPACE.svc."
            f"cluster.local:{GRPC_PORT}")

        pdb = by_kind["PodDisruptionBudget"][0]
        expect(pdb["apiVersion"] == "policy/v1", "PDB apiVersion")
        expect(selects(pdb["spec"]["selector"], pod_labels),
               "the PodDisruptionBudget does not select the pods")
        if "maxUnavailable" in pdb["spec"]:
            expect(0 < int(pdb["spec"]["maxUnavailable"]) < replicas,
                   "maxUnavailable")
        else:
            expect(0 < int(pdb["spec"]["minAvailable"]) < replicas,
                   "minAvailable")

        monitors = load_all(yaml, os.path.join(k8s, "monitoring",
                                               "podmonitor.yaml"))
        expect(len(monitors) == 1 and monitors[0]["kind"] == "PodMonitor",
               "monitoring/podmonitor.yaml: want one PodMonitor")
        monitor = monitors[0]["spec"]
        expect(selects(monitor["selector"], pod_labels),
               "the PodMonitor does not select the pods")
        expect(any(e.get("port") == "metrics"
                   for e in monitor["podMetricsEndpoints"]),
               "the PodMonitor does not scrape the metrics port")
        log("PodDisruptionBudget and PodMonitor select the sampler pods")

    return main_wrapper("k8s_test", body)


if __name__ == "__main__":
    sys.exit(main())
