#!/usr/bin/env python3
"""Poisson-binomial references for bench/service/poisson_binomial.sh (issue 15).

The problem: S = X_1 + ... + X_n, X_i ~ Bernoulli(p_i) independent, with the
p_i of sampler-loadgen's --poisson_binomial (PoissonBinomialP in
client/loadgen/loadgen_requests.h, rebuilt here bit for bit).

Three references:
  - exact tails: the first and last K points of the PMF from a left fold in
    Python's decimal module at 50 significant digits (the exponent range
    reaches 1e-999999999, so no tail underflows). Every term is
    non-negative, so each point's relative error is below 2 n 10^-50: exact
    for any comparison with binary64. `selftest` checks it against Python
    fractions (truly exact) at small n.
  - DC-FFT (Biscarri, Zhao and Brunner 2018, "A simple and fast method for
    computing the Poisson binomial distribution function", CSDA 122):
    divide and conquer, the two halves' PMFs convolved by FFT, here the
    terms' PMFs merged pairwise level by level with numpy's real FFT. Its
    error is absolute (about 1e-16 of the largest point), so its tails are
    noise: the report gives the largest relative error over the exact tail
    points and how many of them are within 1e-6.
  - the service's answer (samplerctl --json, log-space output), measured the
    same way.

numpy is needed for the DC-FFT only: without it, the DC-FFT is reported as
skipped and the rest still runs.

Usage:
  poisson_binomial_ref.py request N OUT.json        Enumerate request (JSON)
  poisson_binomial_ref.py accuracy N [RESPONSE.json] > result.json
  poisson_binomial_ref.py report OUT_DIR            OUT_DIR/report.{json,md}
  poisson_binomial_ref.py selftest
"""

import decimal
import json
import math
import os
import sys
import time
from fractions import Fraction

try:
    import numpy as np
except ImportError:  # the GPU host may lack numpy: the DC-FFT is skipped
    np = None

SEED = 15  # kPoissonBinomialSeed
GOLDEN = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1
TAIL_POINTS = 32  # K: exact points at each end
DIGITS = 50


def p_value(i):
    """PoissonBinomialP(i): (2 (z >> 12) + 1) 2^-53, z = splitmix64."""
    z = (SEED + (i + 1) * GOLDEN) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z ^= z >> 31
    return math.ldexp(2 * (z >> 12) + 1, -53)


def p_values(n):
    return [p_value(i) for i in range(n)]


def request_json(n):
    """The packed float64 request, log-space output (as loadgen sends it)."""
    values = []
    for p in p_values(n):
        values += [1 - p, p]
    return {
        "problems": [{"values": {"f64": {"values": values}}, "termLength": "2"}],
        "precision": "PRECISION_FLOAT64",
        "inputSpace": "PROBABILITY_SPACE_LINEAR",
        "outputSpace": "PROBABILITY_SPACE_LOG",
    }


# ---------------------------------------------------------------- exact --


def exact_low_tail(ps, k):
    """P(S = j), j < k, as Decimals: the fold truncated to k coefficients."""
    ctx = decimal.Context(prec=DIGITS, Emin=-999999999, Emax=999999999)
    c = [decimal.Decimal(0)] * k
    c[0] = decimal.Decimal(1)
    for p in ps:
        dp = decimal.Decimal(p)  # exact: p is a binary64
        dq = decimal.Decimal(1 - p)  # exact too (1 - p is a binary64)
        for j in range(k - 1, 0, -1):
            c[j] = ctx.add(ctx.multiply(c[j], dq), ctx.multiply(c[j - 1], dp))
        c[0] = ctx.multiply(c[0], dq)
    return c


def exact_tails(ps, k):
    """{point: Decimal} for the first and last k points of the support."""
    n = len(ps)
    k = min(k, n + 1)
    low = exact_low_tail(ps, k)
    # P(S = n - j) is the low tail of the sum of the failures.
    high = exact_low_tail([1 - p for p in ps], k)
    points = {j: low[j] for j in range(k)}
    points.update({n - j: high[j] for j in range(k)})
    return points


def exact_pmf_fractions(ps):
    """The whole PMF as Fractions (small n only)."""
    c = [Fraction(1)]
    for p in ps:
        fp = Fraction(p)
        fq = 1 - fp
        c = [(c[j] if j < len(c) else 0) * fq + (c[j - 1] * fp if j else 0)
             for j in range(len(c) + 1)]
    return c


def log_decimal(d):
    return float(d.ln()) if d > 0 else -math.inf


# --------------------------------------------------------------- DC-FFT --


def dc_fft(ps):
    """PMF of S by divide and conquer with FFT convolutions (linear space)."""
    level = [np.array([1 - p, p]) for p in ps]
    while len(level) > 1:
        merged = []
        for a, b in zip(level[0::2], level[1::2]):
            m = len(a) + len(b) - 1
            size = 1 << (m - 1).bit_length()
            merged.append(
                np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:m])
        if len(level) % 2:
            merged.append(level[-1])
        level = merged
    return level[0]


# ------------------------------------------------------------- accuracy --


def log10_relative_error(got_log, exact_log):
    """log10 |value / exact - 1| from natural logs (errors past 1e308 too)."""
    if math.isinf(exact_log) or math.isnan(got_log) or math.isinf(got_log):
        return -math.inf if got_log == exact_log else math.inf
    d = got_log - exact_log
    if d > 700:  # exp(d) - 1 overflows; it is exp(d) to every digit
        return d / math.log(10)
    rel = abs(math.expm1(d))
    return math.log10(rel) if rel > 0 else -math.inf


def relative_errors(values_log, tails):
    """log10 |value / exact - 1| at each exact tail point, from log values."""
    return [log10_relative_error(values_log[j], log_decimal(exact))
            for j, exact in sorted(tails.items()) if j < len(values_log)]


def relative_errors_linear(values, tails):
    """The same from linear values, which may be <= 0 (FFT noise)."""
    ctx = decimal.Context(prec=DIGITS, Emin=-999999999, Emax=999999999)
    errors = []
    for j, exact in sorted(tails.items()):
        if j >= len(values):
            continue
        diff = abs(ctx.subtract(decimal.Decimal(float(values[j])), exact))
        if exact == 0:
            errors.append(-math.inf if diff == 0 else math.inf)
        elif diff == 0:
            errors.append(-math.inf)
        else:
            errors.append(float(ctx.divide(diff, exact).log10(ctx)))
    return errors


def power_of_ten(x):
    """10^x as text ("2.3e+1693"), for errors beyond a double."""
    if x is None or math.isnan(x):
        return None
    if math.isinf(x):
        return "0" if x < 0 else "inf"
    exponent = math.floor(x)
    return "{:.2g}e{:+d}".format(10 ** (x - exponent), exponent)


def summarise(log10_errors):
    return {
        "max_relative_error":
            power_of_ten(max(log10_errors)) if log10_errors else None,
        "points": len(log10_errors),
        "points_within_1e-6": sum(1 for e in log10_errors if e <= -6),
        "points_within_1e-12": sum(1 for e in log10_errors if e <= -12),
    }


def json_number(x):
    if x is None or math.isfinite(x):
        return x
    return "inf" if x > 0 else "-inf"


def service_accuracy(response_path, tails, fft):
    """The service's answer (samplerctl --json, log space) against the exact
    tails and, over the whole support, against the DC-FFT."""
    with open(response_path) as f:
        response = json.load(f)
    result = response["results"][0]
    log_values = [float(v) for v in result["probabilities"]["f64"]["values"]]
    summary = summarise(relative_errors(log_values, tails))
    if fft is not None and len(fft) == len(log_values):
        # Where the DC-FFT is usable: its points within 1e-6 of the
        # service's answer (exact to 1e-12 where the tails say so), and the
        # largest difference over the bulk (points within 1e-250 of the
        # largest).
        svc = np.array(log_values)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            rel = np.abs(np.expm1(np.log(fft) - svc))
        rel[~np.isfinite(rel)] = np.inf
        summary["dc_fft_points_within_1e-6_of_service"] = int(
            (rel <= 1e-6).sum())
        summary["support_points"] = len(log_values)
        bulk = svc > svc.max() - 575
        summary["bulk_max_relative_difference_to_dc_fft"] = float(
            rel[bulk].max())
    return summary


def accuracy(n, responses):
    """`responses`: {backend: samplerctl --json answer file}."""
    ps = p_values(n)
    start = time.perf_counter()
    tails = exact_tails(ps, TAIL_POINTS)
    out = {
        "n": n,
        "tail_points_each_end": min(TAIL_POINTS, n + 1),
        "exact_seconds": time.perf_counter() - start,
        "exact_log_p0": log_decimal(tails[0]),
        "exact_log_pn": log_decimal(tails[n]),
    }
    fft = None
    if np is None:
        out["dc_fft"] = {"skipped": "numpy is not installed"}
    else:
        start = time.perf_counter()
        fft = dc_fft(ps)
        seconds = time.perf_counter() - start
        summary = summarise(relative_errors_linear(fft, tails))
        summary["seconds"] = seconds
        summary["negative_points"] = int((fft < 0).sum())
        out["dc_fft"] = summary
    out["service"] = {backend: service_accuracy(path, tails, fft)
                      for backend, path in responses.items()}
    return json.loads(json.dumps(out, default=json_number),
                      parse_constant=lambda c: c)


# -------------------------------------------------------------- metrics --


def server_time(port, before_path=None):
    """sampler_request_duration_seconds of Enumerate calls answered OK, from
    the server's /metrics, with the Enumerate jobs' queue wait
    (sampler_queue_wait_seconds) and the batches' device time
    (sampler_device_seconds: the kernels, between the copies, as the
    backend's events time them): the sums and counts so far, or (with the
    file of an earlier reading) the calls since and the means in
    milliseconds (the queue per job, the device per batch)."""
    import urllib.request
    text = urllib.request.urlopen(
        "http://127.0.0.1:{}/metrics".format(port), timeout=30).read().decode()
    now = {"sum": 0.0, "count": 0, "queue_sum": 0.0, "queue_count": 0,
           "device_sum": 0.0, "device_count": 0}
    prefixes = (("sampler_request_duration_seconds_", ""),
                ("sampler_queue_wait_seconds_", "queue_"),
                ("sampler_device_seconds_", "device_"))
    for line in text.splitlines():
        for prefix, key in prefixes:
            if (not line.startswith(prefix)
                    or 'method="Enumerate"' not in line
                    or (not key and 'code="OK"' not in line)):
                continue
            name, value = line.split("{")[0], float(line.split()[-1])
            if name.endswith("_sum"):
                now[key + "sum"] += value
            elif name.endswith("_count"):
                now[key + "count"] += int(value)
    if before_path is None:
        return now
    with open(before_path) as f:
        before = json.load(f)

    def mean_ms(key):
        count = now[key + "count"] - before.get(key + "count", 0)
        total = now[key + "sum"] - before.get(key + "sum", 0.0)
        return 1e3 * total / count if count else None

    return {"requests": now["count"] - before["count"],
            "server_ms_mean": mean_ms(""),
            "queue_ms_mean": mean_ms("queue_"),
            "device_ms_mean": mean_ms("device_")}


# --------------------------------------------------------------- report --


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(x, spec=".3g"):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return format(x, spec)


def report(out_dir):
    """Gathers OUT_DIR/<backend>/<case>.{loadgen,server}.json and
    OUT_DIR/accuracy_<n>*.json into OUT_DIR/report.{json,md}."""
    rows = []
    for backend in ("cpu", "cuda"):
        folder = os.path.join(out_dir, backend)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".loadgen.json"):
                continue
            case = name[: -len(".loadgen.json")]
            loadgen = load(os.path.join(folder, name)) or {}
            server = load(os.path.join(folder, case + ".server.json")) or {}
            latency = loadgen.get("latency_ms", {})
            rows.append({
                "backend": backend,
                "case": case,
                "requests_ok": loadgen.get("requests_ok"),
                "requests_failed": loadgen.get("requests_failed"),
                "first_error": loadgen.get("first_error_message"),
                "client_ms_mean": latency.get("mean"),
                "client_ms_p50": latency.get("p50"),
                "client_ms_max": latency.get("max"),
                "server_ms_mean": server.get("server_ms_mean"),
                "server_queue_ms_mean": server.get("queue_ms_mean"),
                "device_ms_mean": server.get("device_ms_mean"),
                "server_requests": server.get("requests"),
            })
    accuracy_rows = []
    for name in sorted(os.listdir(out_dir)):
        if name.startswith("accuracy_") and name.endswith(".json"):
            data = load(os.path.join(out_dir, name))
            if data:
                data["file"] = name
                accuracy_rows.append(data)
    host = ""
    if os.path.exists(os.path.join(out_dir, "host.txt")):
        with open(os.path.join(out_dir, "host.txt")) as f:
            host = f.read().strip()
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump({"host": host, "timings": rows, "accuracy": accuracy_rows},
                  f, indent=1, sort_keys=True)
    lines = ["# Poisson binomial and many small problems (issue 15)", "",
             "```", host, "```", "",
             "Client: sampler-loadgen over loopback, one request at a time; "
             "server: the mean of sampler_request_duration_seconds over the "
             "same requests (from /metrics, before and after), of which "
             "the queue wait per job and the device time (kernels) per "
             "batch.", "",
             "| backend | case | ok | failed | client mean ms | client p50 ms "
             "| server mean ms | queue ms | device ms |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            r["backend"], r["case"], fmt(r["requests_ok"], "d"),
            fmt(r["requests_failed"], "d"), fmt(r["client_ms_mean"], ".4g"),
            fmt(r["client_ms_p50"], ".4g"), fmt(r["server_ms_mean"], ".4g"),
            fmt(r.get("server_queue_ms_mean"), ".4g"),
            fmt(r.get("device_ms_mean"), ".4g")))
    lines += ["", "Tails: the first and last {} points of each PMF against "
              "the exact ones (decimal, 50 digits); relative error "
              "|x / exact - 1|. DC-FFT: numpy, pairwise FFT merges level by "
              "level, linear space (seconds of this Python, for scale "
              "only).".format(TAIL_POINTS), "",
              "| n | log P(S=0) | source | seconds | max rel. error in the "
              "tails | tail points within 1e-6 | within 1e-12 | DC-FFT points "
              "within 1e-6 of it |", "|---|---|---|---|---|---|---|---|"]
    for a in accuracy_rows:
        sources = [("DC-FFT", a.get("dc_fft", {}))]
        sources += sorted(a.get("service", {}).items())
        for name, r in sources:
            if "skipped" in r:
                lines.append("| {} | {} | {} | skipped: {} | | | | |".format(
                    a["n"], fmt(a.get("exact_log_p0"), ".8g"), name,
                    r["skipped"]))
                continue
            within = r.get("dc_fft_points_within_1e-6_of_service")
            lines.append("| {} | {} | {} | {} | {} | {}/{} | {}/{} | {} |"
                         .format(a["n"], fmt(a.get("exact_log_p0"), ".8g"),
                                 name, fmt(r.get("seconds"), ".3g"),
                                 fmt(r.get("max_relative_error")),
                                 fmt(r.get("points_within_1e-6"), "d"),
                                 fmt(r.get("points"), "d"),
                                 fmt(r.get("points_within_1e-12"), "d"),
                                 fmt(r.get("points"), "d"),
                                 "-" if within is None else "{}/{}".format(
                                     within, r.get("support_points"))))
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


# ------------------------------------------------------------- selftest --


def selftest():
    # p_i as the C++ loadgen computes them (client_loadgen_test pins these).
    assert 0 < p_value(0) < 1 and p_value(0) != p_value(1)
    n = 40
    ps = p_values(n)
    exact = exact_pmf_fractions(ps)
    tails = exact_tails(ps, 8)
    for j, d in tails.items():
        rel = abs(Fraction(d) / exact[j] - 1)
        assert rel < Fraction(1, 10**40), (j, float(rel))
    if np is not None:
        fft = dc_fft(ps)
        bulk = max(abs(float(Fraction(fft[j]) / exact[j] - 1))
                   for j in range(n + 1) if exact[j] > Fraction(1, 10**6))
        assert bulk < 1e-10, bulk
    print("selftest: ok (p_0 = {!r}, decimal tails = fractions to 1e-40)"
          .format(ps[0]))


def main(argv):
    if len(argv) >= 2 and argv[1] == "selftest":
        selftest()
    elif len(argv) == 4 and argv[1] == "request":
        with open(argv[3], "w") as f:
            json.dump(request_json(int(argv[2])), f)
    elif len(argv) >= 3 and argv[1] == "accuracy":
        responses = dict(arg.split("=", 1) for arg in argv[3:])
        result = accuracy(int(argv[2]), responses)
        json.dump(result, sys.stdout, indent=1, sort_keys=True)
        print()
    elif len(argv) in (3, 4) and argv[1] == "metrics":
        json.dump(server_time(int(argv[2]), argv[3] if len(argv) == 4 else None),
                  sys.stdout)
        print()
    elif len(argv) == 3 and argv[1] == "report":
        report(argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
