#!/usr/bin/python3
"""Calls a live sampler-server with `buf curl`, a client that nobody here
wrote, which learns the schema from the server's reflection service.

Checks the answers of SampleBoards, SampleGamma, SampleGammaStream and
GetServerInfo, that grpc.health.v1.Health/Check says SERVING, and that a bad
request makes buf curl fail with invalid_argument. The SampleBoards and
SampleGamma answers must equal, value for value, what samplerctl --json gets
for the same request. Exits 1 at the first failed check. Standard library
only; run by tests/examples/run_with_server.sh:

    buf_curl_test.py --target HOST:PORT --buf PATH/TO/buf \\
        --samplerctl PATH/TO/samplerctl
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

TIMEOUT_S = 60  # for each buf curl or samplerctl run
HERE = os.path.dirname(os.path.abspath(__file__))
# grpc.health.v1.Health is described by reflection too (the server links its
# generated code, proto/grpc/health/v1/health.proto): no --schema needed.


class CheckError(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise CheckError(message)


class Tools:
    """Runs buf curl and samplerctl against one target."""

    def __init__(self, target, buf, samplerctl):
        self.target = target
        self.buf = buf
        self.samplerctl = samplerctl

    def buf_curl(self, method, request=None, schema=None, check=True):
        """Runs buf curl on METHOD (service/method); returns the completed
        process. With check, a non-zero exit raises CheckError."""
        command = [self.buf, "curl", "--protocol", "grpc",
                   "--http2-prior-knowledge", "--timeout", f"{TIMEOUT_S}s"]
        if schema:
            command += ["--schema", schema]
        if request is not None:
            command += ["-d", json.dumps(request)]
        command.append(f"http://{self.target}/{method}")
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=TIMEOUT_S + 10)
        if check:
            expect(done.returncode == 0,
                   f"buf curl {method} exited {done.returncode}: "
                   f"{done.stderr.strip()}")
        return done

    def call(self, method, request=None, schema=None):
        """buf curl on a unary METHOD: the parsed JSON answer."""
        return json.loads(self.buf_curl(method, request, schema).stdout)

    def samplerctl_json(self, command, request):
        """samplerctl COMMAND --json for REQUEST (proto JSON): the parsed
        answer."""
        with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
            json.dump(request, file)
            file.flush()
            done = subprocess.run(
                [self.samplerctl, command, "--target", self.target, "--json",
                 "--request_json", file.name],
                capture_output=True, text=True, timeout=TIMEOUT_S)
        expect(done.returncode == 0,
               f"samplerctl {command} exited {done.returncode}: "
               f"{done.stderr.strip()}")
        return json.loads(done.stdout)


def json_stream(text):
    """The JSON objects that buf curl prints one after another for a
    server stream."""
    decoder = json.JSONDecoder()
    objects = []
    position = 0
    text = text.strip()
    while position < len(text):
        value, position = decoder.raw_decode(text, position)
        objects.append(value)
        while position < len(text) and text[position].isspace():
            position += 1
    return objects


def f64_values(reals):
    expect("f64" in reals, f"expected float64 values, got {list(reals)}")
    return reals["f64"].get("values", [])


def list_services(tools):
    command = [tools.buf, "curl", "--protocol", "grpc",
               "--http2-prior-knowledge", "--list-services",
               f"http://{tools.target}"]
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    expect(done.returncode == 0, f"--list-services: {done.stderr.strip()}")
    services = done.stdout.split()
    print(f"services: {services}")
    for name in ["sampler.v1.SamplerService", "grpc.health.v1.Health"]:
        expect(name in services, f"{name} not listed by reflection")


def boards(tools):
    request = {"rows": 9, "cols": 9, "stones": [10, 12], "count": 4,
               "seed": "42"}
    answer = tools.call("sampler.v1.SamplerService/SampleBoards", request)
    print(f"SampleBoards: {answer}")
    expect(answer.get("seed") == "42", "seed not echoed")
    expect(answer.get("count") == "4", "count not echoed")
    expect(answer.get("colours") == 2, "colours")
    expect(answer.get("wordsPerBoard") == 2, "wordsPerBoard for 81 sites")
    words = [int(w) for w in answer["bitboards"]]  # fixed64: strings
    expect(len(words) == 4 * 2 * 2, "number of words")
    for p in range(4):
        occupied = 0
        for c, stones in enumerate(request["stones"]):
            board = words[(p * 2 + c) * 2] | words[(p * 2 + c) * 2 + 1] << 64
            expect(bin(board).count("1") == stones,
                   f"position {p} colour {c}: wrong number of stones")
            expect(board >> 81 == 0, f"position {p}: a stone off the grid")
            expect(board & occupied == 0, f"position {p}: stones overlap")
            occupied |= board
    reference = tools.samplerctl_json("boards", request)
    expect(reference["bitboards"] == answer["bitboards"],
           "buf curl and samplerctl got different boards for one seed")
    print("  boards check out and equal samplerctl's")


def gamma(tools):
    request = {"groups": {"groups": [{"shape": 0.5, "scale": 2, "count": 5},
                                     {"shape": 7, "count": 5}]},
               "seed": "7"}
    answer = tools.call("sampler.v1.SamplerService/SampleGamma", request)
    samples = f64_values(answer["samples"])
    print(f"SampleGamma: seed {answer.get('seed')}, samples {samples}")
    expect(answer.get("seed") == "7", "seed not echoed")
    expect(len(samples) == 10, f"{len(samples)} samples, want 10")
    expect(all(x > 0 for x in samples), "a sample is not positive")
    reference = tools.samplerctl_json("gamma", request)
    expect(f64_values(reference["samples"]) == samples,
           "buf curl and samplerctl got different samples for one seed")
    print("  samples equal samplerctl's")

    stream = tools.buf_curl(
        "sampler.v1.SamplerService/SampleGammaStream",
        {"request": request, "maxSamplesPerChunk": 4})
    chunks = json_stream(stream.stdout)
    joined = []
    for chunk in chunks:
        expect(int(chunk.get("firstSample", "0")) == len(joined),
               "stream chunks out of order")
        joined += f64_values(chunk["samples"])
    print(f"SampleGammaStream: {len(chunks)} chunks")
    expect(len(chunks) == 3, f"{len(chunks)} chunks, want 3")
    expect(joined == samples, "streamed samples differ from the unary ones")
    print("  streamed samples equal the unary ones")


def server_info(tools):
    answer = tools.call("sampler.v1.SamplerService/GetServerInfo")
    print(f"GetServerInfo: {answer}")
    expect(answer.get("version"), "no version")
    expect(answer.get("backend") in ("BACKEND_CPU", "BACKEND_CUDA"),
           f"backend {answer.get('backend')}")
    limits = answer.get("limits", {})
    expect(int(limits.get("maxItemsPerRequest", "0")) > 0, "no item limit")
    expect(limits.get("maxBoardSites") == 16384, "maxBoardSites")


def health(tools):
    for service in ["", "sampler.v1.SamplerService"]:
        answer = tools.call("grpc.health.v1.Health/Check",
                            {"service": service})
        print(f"Health/Check {service or '(server)'}: {answer}")
        expect(answer.get("status") == "SERVING", "not SERVING")


def bad_request(tools):
    done = tools.buf_curl("sampler.v1.SamplerService/SampleBoards",
                          {"rows": 3, "cols": 3, "stones": [20], "count": 1},
                          check=False)
    print(f"bad request: exit {done.returncode}: "
          f"{' '.join(done.stderr.split())}")
    expect(done.returncode != 0, "buf curl succeeded on a bad request")
    expect("invalid_argument" in done.stderr, "no invalid_argument error")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--buf", required=True)
    parser.add_argument("--samplerctl", required=True)
    args = parser.parse_args()
    for tool in (args.buf, args.samplerctl):
        if not os.access(tool, os.X_OK):
            print(f"buf_curl_test: {tool} is missing (tools/deps.sh installs "
                  "buf; samplerctl is built with the project)",
                  file=sys.stderr)
            return 1
    tools = Tools(args.target, args.buf, args.samplerctl)
    try:
        list_services(tools)
        boards(tools)
        gamma(tools)
        server_info(tools)
        health(tools)
        bad_request(tools)
    except (CheckError, subprocess.TimeoutExpired, KeyError,
            json.JSONDecodeError) as error:
        print(f"buf_curl_test: FAILED: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 1
    print("buf_curl_test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
