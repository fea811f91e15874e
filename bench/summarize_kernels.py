#!/usr/bin/env python3
"""Combined kernel report from one bench/kernels_session.sh invocation.

    bench/summarize_kernels.py RESULTS [--prefix PREFIX]
    bench/summarize_kernels.py --from-json PREFIX.json [--prefix PREFIX]

RESULTS is the session's kernels.tgz or the folder it unpacks to. The first
form parses every output (peers_gpu.py's peers.json, peers_extra.json,
gamma.json, categorical.csv, boards_bench's stdout, enumerate.json; each
falls back to the step's log where its file is missing) into PREFIX.json,
then writes PREFIX.md and the plots PREFIX/*.png. The second form redraws
the Markdown and the plots from a committed PREFIX.json. PREFIX defaults to
bench/results/kernels-<gpu>-<date of the run>.

Every ratio is ours over a peer timed in the same invocation on the same GPU;
every fraction of the copy bandwidth is over the highest device-to-device
copy rate measured in that invocation (the strictest of the five: the peers
script's and each benchmark's own). Standard library plus matplotlib (for
the plots only; Debian's python3-matplotlib will do). CI does not run it.
"""
import argparse
import csv
import io
import json
import os
import re
import sys
import tarfile

# --------------------------------------------------------------------------
# Reading the session's outputs.


class Results:
    """The files of one session, from a .tgz or a folder."""

    def __init__(self, path):
        self.files = {}
        if os.path.isdir(path):
            for name in os.listdir(path):
                p = os.path.join(path, name)
                if os.path.isfile(p):
                    with open(p, encoding="utf-8", errors="replace") as f:
                        self.files[name] = f.read()
        else:
            with tarfile.open(path) as t:
                for m in t.getmembers():
                    if m.isfile():
                        data = t.extractfile(m).read()
                        self.files[os.path.basename(m.name)] = data.decode("utf-8", "replace")

    def get(self, name):
        return self.files.get(name)


def parse_gpu(text):
    if not text:
        return {}
    rows = list(csv.reader(io.StringIO(text)))
    if len(rows) < 2:
        return {"raw": text.strip()}
    return {h.strip(): v.strip() for h, v in zip(rows[0], rows[1])}


def parse_peers(res):
    """peers_gpu.py: {name: {rate, unit, note}}."""
    if res.get("peers.json"):
        return json.loads(res.get("peers.json"))
    out = {"device": None, "torch": None, "results": {}, "from_log": True}
    lines = (res.get("peers.log") or "").splitlines()
    if lines and len(lines[0].split(None, 1)) == 2:
        out["torch"], out["device"] = lines[0].split(None, 1)
    for line in lines:
        m = re.match(r"^(.{55}) +(\S+) (\S+) ?(.*)$", line)
        if m:
            try:
                rate = float(m.group(2))
            except ValueError:
                continue
            out["results"][m.group(1).strip()] = {"rate": rate, "unit": m.group(3),
                                                  "note": m.group(4).strip()}
    return out


def parse_peers_extra(res):
    if res.get("peers_extra.json"):
        return json.loads(res.get("peers_extra.json"))
    out = {"results": [], "from_log": True}
    for line in (res.get("peers_extra.log") or "").splitlines():
        m = re.match(r"^(\w+)\s+(.{22}) (\{.*\})\s+(\S+) (\S+)$", line)
        if m:
            out["results"].append({"kind": m.group(1), "peer": m.group(2).strip(),
                                   "params": json.loads(m.group(3)),
                                   "rate": float(m.group(4)), "unit": m.group(5)})
    return out


def parse_gamma(res):
    if res.get("gamma.json"):
        return json.loads(res.get("gamma.json"))
    log = res.get("gamma_bench.log") or ""
    out = {"rows": [], "from_log": True}
    m = re.search(r"d2d copy: ([\d.]+) TB/s", log)
    if m:
        out["copy_tbs"] = float(m.group(1))
    for line in log.splitlines():
        m = re.match(r"^(float32|float64)\s+(\S+)\s+pre=(\d)(\*?)\s+([\d.]+) ms\s+([\d.]+) Gsamples/s", line)
        t = re.search(r"tuning=(\S+)", line)
        if m and t and t.group(1) != "v2" and not m.group(4):
            continue  # the log fallback keeps v2 and the service's row
        if m:
            out["rows"].append({"precision": m.group(1), "config": m.group(2),
                                "pre_cache": m.group(3) == "1", "service": m.group(4) == "*",
                                "ms": float(m.group(5)), "gsps": float(m.group(6))})
    return out


def parse_categorical(res, csv_name="categorical.csv", log_name="categorical_bench.log"):
    rows, copy = [], None
    text = res.get(csv_name)
    if text:
        lines = text.splitlines()
        copy = float(lines[1].split(",")[1])
        for r in csv.DictReader(io.StringIO("\n".join(lines[2:]))):
            rows.append({"kernel": r["kernel"], "precision": r["precision"], "kind": r["kind"],
                         "K": int(r["K"]), "rows": int(r["rows"]), "draws": int(r["draws"]),
                         "median_us": float(r["median_us"]), "min_us": float(r["min_us"]),
                         "rows_per_s": float(r["rows_per_s"]), "tb_per_s": float(r["tb_per_s"]),
                         "fraction_of_own_copy": float(r["fraction_of_copy"])})
            # Since session 10 the bench marks the kernel the CUDA backend's
            # own routing (CategoricalKernelFor) launches for that row.
            if r.get("service") not in (None, ""):
                rows[-1]["service"] = r["service"] == "1"
        return {"copy_tbs": copy, "rows": rows}
    log = res.get(log_name) or ""
    m = re.search(r"d2d copy: ([\d.]+) TB/s", log)
    copy = float(m.group(1)) if m else None
    for line in log.splitlines():
        m = re.match(r"^(\S+)\s+(f32|f64)\s+(\w+)\s+K=(\d+)\s+M=(\d+)\s+D=(\d+)\s+([\d.]+) us\s+"
                     r"([\d.]+) Mrows/s\s+([\d.]+) TB/s\s+([\d.]+)% of copy", line)
        if m:
            rows.append({"kernel": m.group(1), "precision": m.group(2), "kind": m.group(3),
                         "K": int(m.group(4)), "rows": int(m.group(5)), "draws": int(m.group(6)),
                         "median_us": float(m.group(7)), "rows_per_s": float(m.group(8)) * 1e6,
                         "tb_per_s": float(m.group(9)),
                         "fraction_of_own_copy": float(m.group(10)) / 100})
    return {"copy_tbs": copy, "rows": rows, "from_log": True}


def parse_boards(res):
    log = res.get("boards_bench.log") or ""
    out = {"rows": []}
    m = re.search(r"ceilings: d2d copy ([\d.]+) TB/s.*?Philox4x32-10 ([\d.]+) G blocks/s"
                  r".*?, ([\d.]+) G blocks/s", log)
    if m:
        out["copy_tbs"] = float(m.group(1))
        out["philox_g_blocks_per_s"] = float(m.group(2))
        out["philox_r123_g_blocks_per_s"] = float(m.group(3))
    for line in log.splitlines():
        tok = line.split()
        if len(tok) < 11 or not tok[0].isdigit() or tok[-1] not in ("ok", "MISMATCH"):
            continue
        nums = tok[-8:-1]
        left = line.split(None, 1)[1]
        left = left[: left.rfind(tok[-8])].rstrip()
        # left: "<case name> <rows>x<cols> k=<a>[+<b>...] <variant>"
        b = re.search(r"(\d+)x(\d+) k=([\d+]+)", left)
        if not b:
            continue
        out["rows"].append({
            "index": int(tok[0]), "case": left[: b.start()].strip(),
            "board": b.group(0), "rows": int(b.group(1)), "cols": int(b.group(2)),
            "stones": [int(x) for x in b.group(3).split("+")],
            "variant": left[b.end():].strip(), "positions": int(nums[0]),
            "ms": float(nums[1]), "gboards_per_s": float(nums[2]),
            "gb_per_s_out": float(nums[3]), "philox_blocks_per_board": float(nums[4]),
            "pct_philox": float(nums[5].rstrip("%")), "pct_own_copy": float(nums[6].rstrip("%")),
            "check": tok[-1]})
    return out


def parse_enumerate(res):
    log = res.get("enumerate_bench.log") or ""
    m = re.search(r"copy ([\d.]+) TB/s", log)
    out = {"copy_tbs": float(m.group(1)) if m else None, "rows": []}
    fft = re.search(r"FFT path off: (.*)", log)
    out["fft_path"] = "off: " + fft.group(1) if fft else "on"
    if res.get("enumerate.json"):
        out["rows"] = json.loads(res.get("enumerate.json"))
        return out
    out["from_log"] = True
    for line in log.splitlines():
        m = re.match(r"^(float|double)\s+m=(\d+)\s+B=(\d+)\s+(.+?)\s+([\d.]+) us\s+([\d.]+) Mpairs/s"
                     r"\s+err (\S+)", line)
        if m:
            out["rows"].append({"type": m.group(1), "m": int(m.group(2)), "batch": int(m.group(3)),
                                "variant": m.group(4), "seconds": float(m.group(5)) * 1e-6,
                                "mpairs_per_s": float(m.group(6)),
                                "max_rel_error": float(m.group(7))})
    return out


# --------------------------------------------------------------------------
# Targets and ratios.

# The authors' earlier H200 runs (bench/results/*-kernel.md), for the
# "earlier" column only.
EARLIER = {
    ("gamma", "float32 shape=0.3"): "0.99x",
    ("gamma", "float32 shape=1"): "0.99x",
    ("gamma", "float32 shape=2.5"): "0.95x",
    ("gamma", "float32 shape=10"): "0.86x",
    ("gamma", "float32 U(0.1,10)"): "0.91x",
    ("categorical", 32): "80.5% of that run's copy (77.5% of 4.26 TB/s)",
    ("categorical", 256): "87.0% (83.7%)",
    ("categorical", 1024): "89.5% (86.1%)",
    ("enumerate", 32): "2.48x",
    ("enumerate", 256): "2.73x",
    ("enumerate", 1024): "3.02x (opt-in FFT: 3.59x)",
    ("boards", "go"): "139x",
    ("boards", "32"): "2.472 G/s",
}

WHY = {
    "gamma": ("gamma-kernel.md, \"Roofline\": the kernel is bound by instruction issue (about 70% of "
              "issue slots busy); the arithmetic the bit-identical contract requires per attempt "
              "(Philox4x32-10, detmath log and cos, a correctly rounded sqrt, the squeeze and "
              "log tests) caps it at about 2x torch even with every slot used and no idle lane; "
              "torch uses curand's per-thread state and CUDA's own log/sqrt, which no CPU "
              "reproduces bit for bit. A contract version 3 (ziggurat normals, two items a Philox "
              "block) was measured in session 10 at 1.08-1.15x this kernel in float32 and not "
              "adopted; gamma-v3-h100-2026-11-26.md gives its ncu profile (rare ziggurat and boost "
              "paths run with 2 of 32 lanes active). Session 11 tuned the version-2 kernel without "
              "moving a bit (gamma-kernel.md, \"Session 11\": round keys from the launch "
              "parameters, boost outputs deferred for per-element shapes, more warps): +1-3% at "
              "scalar shapes, +10% (float32) and +23% (float64) at U(0.1, 10); two items a lane "
              "in flight lost 13-52% (branches keep the two attempts from overlapping)."),
    "enumerate": ("enumerate-kernel.md, \"Session 8\", \"Session 9\", \"Session 10\" and \"Roofline\": at "
                  "m = 32 the pair kernel (a warp per problem, no rectangle waste) is bound by its "
                  "shared-memory loads (L1/shared 69-82% busy). Since session 10 kAuto routes double "
                  "problems from 65 values, and float ones at 41-64 and 769-1536, to the FP64 tensor-core "
                  "kernel (Toeplitz blocks on mma.sync, float values converted to double): its ncu at "
                  "float m = 256 shows the DMMA sub-pipe about 54% busy at 25% occupancy (125 registers, "
                  "no eligible warp 60% of cycles), and 256-output tiles on a 511-output result do 2.25x "
                  "the useful multiply-adds. For float32 the FP64 tensor peak is the FP32 FMA peak, so "
                  "it ties the direct kernel at m = 256; 3xTF32 was not built because its error bound "
                  "(about 7e-7 a product before accumulation) does not keep 1e-6. The best peer at "
                  "m = 1024 is rFFT at n = 2m - 1, whose rate varies from run to run. Session 11 "
                  "(enumerate-kernel.md, \"Session 11\"): a resident grid prefetching each warp's "
                  "next tile into L2 (k8 t4p) gained 5-7%; tiles in groups that skip their zero "
                  "steps (g2) saved nothing, as the compiler predicated the skipped mma's (ncu: "
                  "144 DMMA a problem, not 100), and mirrored tile pairs lost at m = 1024 (half "
                  "the warps)."),
    "categorical": ("categorical-ncu-h100-session11-2026-11-26.md (Nsight Compute of every routed case "
                    "still below 70% in session 11, with each case's issue cost a weight against the "
                    "budget that every issue slot allows at 70%: at K <= 512 the cost is at or near the "
                    "budget, from 1,000 well under it at 25-49% occupancy) and session 10's: lane groups (to K = 512) are issue-bound (74-79% of issue slots, "
                    "DRAM 29-33%) on the contract's per-weight work and, with many draws, on each draw's "
                    "Philox block, multiply and search. Block-row (513 to 80,000-byte rows, clusters to "
                    "2^17) reads each row once but is latency-bound at 25-37% occupancy set by the rows "
                    "held in shared memory (one block an SM at K = 16,384); with 4 draws a row its draws "
                    "are serial chains. Warp tiles at 2^15 read each row twice (DRAM 62.7% busy). "
                    "Session 11: a thread's draw searches its group's 16 values side by side (4 and "
                    "32 draws at K = 4,096 and 8,192 near 70%); the lanes kernel is routed at K = 33 "
                    "to 100 where it measured faster; prefix tables (a binary search a draw) pay only "
                    "at K <= 32 with 32 draws, then latency-bound at 25% occupancy (72 registers); "
                    "block-row with streamed chunks and an L2 second pass lost at K >= 16,384 "
                    "(ncu at 16,384: L2 hit 41%, DRAM 37% busy, occupancy 46%: a block fetches "
                    "nothing while it scans and draws, where block-row prefetches the next row)."),
    "boards_32": ("boards-kernel.md, \"Roofline\": the bit contract's instruction mix (Philox "
                  "multiplies on the FMA-heavy pipe, the selection's LOP3s on the ALU pipe) "
                  "saturates both integer pipes at about 4.4 G boards/s; the kernel runs them at "
                  "56% (7.8 resident warps/SM at 216 registers), memory is at 7% of copy."),
}


def peers_rate(peers, name):
    r = peers.get("results", {}).get(name)
    return r["rate"] if r else None


def extra(extra_peers, kind, peer, **params):
    for r in extra_peers.get("results", []):
        if r["kind"] == kind and r["peer"] == peer and all(
                r["params"].get(k) == v for k, v in params.items()):
            return r["rate"]
    return None


def best(cands):
    cands = [(n, v) for n, v in cands if v is not None]
    return max(cands, key=lambda c: c[1]) if cands else (None, None)


# server/cuda_exec_categorical.cc's CategoricalKernelFor (keep in step): the
# kernel the service runs a categorical job of K on.
ROW_SPLIT_LARGEST_K = {"f32": 385280, "f64": 198400}


# Issue 11's targets: gamma against torch._standard_gamma per precision;
# enumeration (float32, m = n at peers_gpu.py's batches) >= 5x the best peer
# at every size, float64 >= 3x; categorical >= 70% of copy at every K from 32
# to 2^17 and for 1, 4 and 32 draws a row.
GAMMA_TARGET = {"float32": 3.0, "float64": 2.0}
ENUMERATE_TARGET = {"float": 5.0, "double": 3.0}
CATEGORICAL_TARGET = 0.70

# Session 9's routing, for runs whose CSV lacks the bench's `service` column
# (since session 10 categorical_bench marks the kernel the server's own
# CategoricalKernelFor picks): rows of up to 64 KiB (16,384 floats, 8,192
# doubles) went to the block-row kernel.
BLOCK_ROW_UP_TO_BYTES = 64 << 10


def service_kernel(K, precision="f32"):
    if K <= 256:
        return "lane-groups"
    if K * (8 if precision == "f64" else 4) <= BLOCK_ROW_UP_TO_BYTES:
        return "block-row"
    return session7_service_kernel(K, precision)


# The routing of session 7 (lanes up to K = 128, warp tiles beyond), for runs
# that did not measure the lane-group kernel.
def session7_service_kernel(K, precision="f32"):
    if K <= 128:
        return "lanes"
    if K <= 2 ** 15:
        return "warp-tiles"
    if K <= ROW_SPLIT_LARGEST_K.get(precision, 198400):
        return "row-split"
    return "warp-per-row"


# The routing before the lanes and warp-tiles kernels, for runs that did not
# measure them.
def earlier_service_kernel(K, precision="f32"):
    if K < 64:
        return "butterfly"
    if 2 ** 15 <= K <= ROW_SPLIT_LARGEST_K.get(precision, 198400):
        return "row-split"
    return "warp-per-row"


def routed_row(rows, K, precision):
    """The row of the service's kernel at K among `rows` (one K), else of the
    earlier routing's kernel, else None."""
    for kern in (service_kernel(K, precision), session7_service_kernel(K, precision),
                 earlier_service_kernel(K, precision)):
        r = next((r for r in rows if r["kernel"] == kern), None)
        if r is not None:
            return r
    return None


def philox_blocks_per_sample(rows, prec, cfg):
    """Philox4x32-10 blocks per accepted sample under the gamma contract
    (docs/randomness.md): one block per attempt in float32, two in float64;
    attempts per sample as counted by gamma_bench's instrumented run."""
    r = next((r for r in rows if r["precision"] == prec and r["config"] == cfg
              and r.get("lane_items")), None)
    if not r:
        return None
    return (1 if prec == "float32" else 2) * r["lane_attempts"] / r["lane_items"]


def analyse(d):
    """Adds d["targets"] and d["tables"] from the parsed numbers."""
    peers, xp = d["peers"], d["peers_extra"]
    ceiling = d["copy"]["ceiling_tb_per_s"]
    tables, targets = {}, []

    # Gamma: ours (the variant the service launches) over torch._standard_gamma.
    g = d["ours"]["gamma"]
    configs = [("shape=0.3", 0.3, "alpha=0.3"), ("shape=1", 1.0, "alpha=1.0"),
               ("shape=2.5", 2.5, "alpha=2.5"), ("shape=10", 10.0, "alpha=10.0"),
               ("U(0.1,10)", "U(0.1,10)", "alpha~U(0.1,10) per element")]
    rows = []
    for prec in ("float32", "float64"):
        for cfg, shape, tname in configs:
            mine = [r for r in g["rows"] if r["precision"] == prec and r["config"] == cfg]
            # Runs since session 11 time the kernel's tunings: the service's
            # row for its pre-caching choice, the best tuned row for the other.
            svc = next((r for r in mine if r.get("service")), None)
            if svc and "tuning" in svc:
                ours = {}
                for pre in (True, False):
                    cand = [r for r in mine if r["pre_cache"] == pre]
                    if pre == svc["pre_cache"]:
                        cand = [svc]
                    else:
                        cand = [r for r in cand if r.get("tuning") != "v2"] or cand
                    if cand:
                        ours[pre] = max(r["gsps"] for r in cand)
            else:
                ours = {r["pre_cache"]: r["gsps"] for r in mine}
            # The variant the service launches (GammaBatchBuilder::PreCachePays);
            # runs from before that choice existed always launched pre-caching.
            service_pre_cache = next((r["pre_cache"] for r in mine if r.get("service")), True)
            if prec == "float32":
                torch_rate = peers_rate(peers, f"torch._standard_gamma {tname}")
                cands = [("torch._standard_gamma", torch_rate)]
                if isinstance(shape, float):
                    cands += [("cupy standard_gamma", peers_rate(peers, f"cupy Generator.standard_gamma alpha={shape}")),
                              ("jax.random.gamma", peers_rate(peers, f"jax.random.gamma alpha={shape}"))]
            else:
                torch_rate = extra(xp, "gamma", "torch._standard_gamma", precision="float64",
                                   shape=shape if isinstance(shape, str) else shape)
                cands = [("torch._standard_gamma", torch_rate)]
            bname, bval = best(cands)
            o = ours.get(service_pre_cache)
            bps = philox_blocks_per_sample(g["rows"], prec, cfg)
            philox = d["ours"]["boards"].get("philox_g_blocks_per_s")
            row = {"precision": prec, "shape": cfg, "ours": o, "service_pre_cache": service_pre_cache,
                   "ours_pre_cache": ours.get(True), "ours_no_pre_cache": ours.get(False),
                   "philox_blocks_per_sample": bps,
                   # The contract's ceiling (issue 11): the Philox-only rate measured in this
                   # invocation (boards_bench) over the blocks one sample consumes.
                   "fraction_of_philox_ceiling": o * bps / philox if o and bps and philox else None,
                   "torch": torch_rate, "best_peer": bname, "best_peer_rate": bval,
                   "ratio_torch": o / torch_rate if o and torch_rate else None,
                   "ratio_best": o / bval if o and bval else None,
                   "fraction_of_copy": o * 1e9 * (4 if prec == "float32" else 8) / (ceiling * 1e12)
                   if o else None,
                   "peers": {n: v for n, v in cands if v is not None}}
            rows.append(row)
            # Issue 11: >= 3x torch in float32, >= 2x in float64.
            tgt = GAMMA_TARGET[prec]
            row["target"] = tgt
            targets.append({"kind": "gamma", "case": f"{prec} {cfg}", "metric": "ours / torch._standard_gamma",
                            "ours": o, "ours_unit": "Gsamples/s", "peer": "torch._standard_gamma",
                            "peer_rate": torch_rate, "value": row["ratio_torch"], "target": tgt,
                            "target_text": f">= {tgt:g}x",
                            "met": row["ratio_torch"] is not None and row["ratio_torch"] >= tgt,
                            "fraction_of_copy": row["fraction_of_copy"]})
    tables["gamma"] = rows

    # Categorical: the service's kernel at each K, f32 weights, one draw per row.
    c = d["ours"]["categorical"]
    rows = []
    for r in c["rows"]:
        r = dict(r)
        r["fraction_of_ceiling"] = r["tb_per_s"] / ceiling
        rows.append(r)
    tables["categorical_all"] = rows
    crow = []
    one_draw = [r for r in rows if r["kind"] == "weights" and r["precision"] == "f32" and r["draws"] == 1]
    for K in sorted({r["K"] for r in one_draw}):
        at_k = [r for r in one_draw if r["K"] == K]
        ours = (next((r for r in at_k if r.get("service")), None)
                if any("service" in r for r in at_k) else routed_row(at_k, K, "f32"))
        if ours is None:
            continue
        cands = []
        if K in (32, 256, 1024):
            cands = [("torch.multinomial", peers_rate(peers, f"torch.multinomial K={K} one draw/dist")),
                     ("Categorical.sample", peers_rate(peers, f"torch Categorical.sample K={K}")),
                     ("gumbel-max argmax", peers_rate(peers, f"gumbel-max argmax K={K}")),
                     ("cumsum+searchsorted", peers_rate(peers, f"cumsum+searchsorted K={K}")),
                     ("jax.random.categorical", peers_rate(peers, f"jax.random.categorical K={K}"))]
        bname, bval = best(cands)
        ours_m = ours["rows_per_s"] / 1e6
        peer_frac = (bval * 1e6 * (K * 4 + 4) / (ceiling * 1e12)) if bval else None
        row = {"K": K, "kernel": ours["kernel"], "rows": ours["rows"], "ours_mrows_per_s": ours_m,
               "ours_tb_per_s": ours["tb_per_s"],
               "fraction_of_ceiling": ours["fraction_of_ceiling"],
               "fraction_of_own_copy": ours["fraction_of_own_copy"],
               "best_peer": bname, "best_peer_mrows_per_s": bval,
               "best_peer_fraction_of_ceiling": peer_frac,
               "ratio_best": ours_m / bval if bval else None,
               "peers": {n: v for n, v in cands if v is not None}}
        crow.append(row)
        if K in (32, 256, 1024):
            targets.append({"kind": "categorical", "case": f"K={K}, float32 weights, one draw per row",
                            "metric": "fraction of measured copy bandwidth", "ours": ours["tb_per_s"],
                            "ours_unit": "TB/s", "peer": bname, "peer_rate": bval,
                            "ratio_best_peer": row["ratio_best"],
                            "value": row["fraction_of_ceiling"], "target": CATEGORICAL_TARGET,
                            "target_text": ">= 70% of copy",
                            "met": row["fraction_of_ceiling"] >= CATEGORICAL_TARGET,
                            "fraction_of_copy": row["fraction_of_ceiling"]})
    tables["categorical"] = crow
    # Issue 11's table (categorical_bench --issue): K x draws x kernel, and
    # few rows of a large K; every case against the 70% of copy target.
    ci = (d["ours"].get("categorical_issue") or {}).get("rows", [])
    tables["categorical_issue"] = [
        dict(r, fraction_of_ceiling=r["tb_per_s"] / ceiling,
             service=r["service"] if "service" in r
             else r["kernel"] == service_kernel(r["K"], r.get("precision", "f32")))
        for r in ci]
    # Its targets: for each number of draws, the routed kernel's worst case
    # over every K of the table at 512 MiB of weights (each case is listed in
    # the table itself). The few-rows cases (64 rows: 1 to 32 MiB) are listed
    # apart: at 1 MiB a launch's fixed latency alone exceeds what 70% of copy
    # allows, and the issue names them only through FlashInfer's figure.
    for D in sorted({r["draws"] for r in tables["categorical_issue"]}):
        svc = [r for r in tables["categorical_issue"]
               if r["service"] and r["draws"] == D and r["rows"] * r["K"] >= 1 << 26]
        if not svc:
            continue
        worst = min(svc, key=lambda r: r["fraction_of_ceiling"])
        ks = sorted({r["K"] for r in svc})
        below = sum(r["fraction_of_ceiling"] < CATEGORICAL_TARGET for r in svc)
        targets.append({"kind": "categorical", "issue_table": True,
                        "case": f"K = {ks[0]} to {ks[-1]} ({len(ks)} sizes), {D} draw{'s' if D > 1 else ''} a row: "
                                f"worst of the routed kernels",
                        "metric": "fraction of measured copy bandwidth", "ours": worst["tb_per_s"],
                        "ours_unit": "TB/s", "worst_K": worst["K"], "worst_kernel": worst["kernel"],
                        "cases_below": below, "cases": len(svc),
                        "value": worst["fraction_of_ceiling"], "target": CATEGORICAL_TARGET,
                        "target_text": ">= 70% of copy in every case",
                        "met": below == 0, "fraction_of_copy": worst["fraction_of_ceiling"]})

    # Enumeration: m = n at the peers' batches; float32 against peers_gpu.py's
    # grouped conv1d and rFFT, float64 against the same two in float64
    # (peers_extra.py; runs before session 9 did not time them).
    e = d["ours"]["enumerate"]
    rows = []
    for typ in ("float", "double"):
        tgt = ENUMERATE_TARGET[typ]
        size = 4 if typ == "float" else 8
        for m, B in ((32, 262144), (256, 4096), (1024, 256)):
            ours = {r["variant"]: r["mpairs_per_s"] for r in e["rows"]
                    if r["type"] == typ and r["m"] == m and r["batch"] == B}
            auto = ours.get("auto")
            if auto is None:
                continue
            direct_best = best([(k, v) for k, v in ours.items() if not k.startswith("fft")])
            fft = ours.get("fft (double cuFFT)")
            if typ == "float":
                conv = peers_rate(peers, f"conv1d grouped m=n={m}")
                rfft = peers_rate(peers, f"rfft convolution m=n={m}")
                pow2 = extra(xp, "enumerate", "rfft n=pow2", m=m, batch=B)
            else:
                conv = extra(xp, "enumerate", "conv1d grouped", m=m, batch=B, precision="float64")
                rfft = extra(xp, "enumerate", "rfft n=2m-1", m=m, batch=B, precision="float64")
                pow2 = None
            bname, bval = best([("conv1d grouped", conv), ("rfft n=2m-1", rfft)])
            bytes_ = B * ((4 * m - 1) * size + 48)
            row = {"type": typ, "m": m, "batch": B, "ours_auto": auto, "ours_best_direct": direct_best[1],
                   "ours_best_direct_variant": direct_best[0], "ours_fft": fft,
                   "conv1d": conv, "rfft": rfft, "rfft_pow2": pow2, "best_peer": bname, "best_peer_rate": bval,
                   "ratio_auto": auto / bval if auto and bval else None,
                   "ratio_fft": fft / bval if fft and bval else None,
                   "ratio_auto_vs_pow2": auto / pow2 if auto and pow2 else None,
                   "fraction_of_copy": auto * 1e6 * bytes_ / B / (ceiling * 1e12) if auto else None,
                   "target": tgt}
            rows.append(row)
            if bval is None:
                continue  # no peer in this run (float64 before session 9)
            targets.append({"kind": "enumerate",
                            "case": f"m=n={m}, B={B}, {'float32' if typ == 'float' else 'float64'}",
                            "metric": "ours (default, direct) / best of grouped conv1d, rFFT",
                            "ours": auto, "ours_unit": "Mpairs/s", "peer": bname, "peer_rate": bval,
                            "value": row["ratio_auto"], "target": tgt, "target_text": f">= {tgt:g}x",
                            "met": row["ratio_auto"] is not None and row["ratio_auto"] >= tgt,
                            "opt_in_fft_ratio": row["ratio_fft"],
                            "ratio_vs_pow2": row["ratio_auto_vs_pow2"],
                            "fraction_of_copy": row["fraction_of_copy"]})
    tables["enumerate"] = rows
    tables["enumerate_all"] = [dict(r) for r in e["rows"]]

    # Boards.
    b = d["ours"]["boards"]
    by_index = {r["index"]: r for r in b["rows"]}
    rows = []
    for idx, sites, stones, label in ((0, 1024, [512], "32x32, 512 stones"),
                                      (1, 1024, [16], "32x32, 16 stones"),
                                      (9, 361, [120], "19x19, 120 stones"),
                                      (4, 361, [120, 120], "19x19, 120 + 120 stones (two colours)")):
        r = by_index.get(idx)
        if r is None:
            continue
        topk = extra(xp, "boards", "rand+topk+scatter", sites=sites, stones=stones)
        argsort = extra(xp, "boards", "double argsort", sites=sites, stones=stones)
        cands = [("rand+topk+scatter (int8 board)", topk), ("double argsort (int8 board)", argsort)]
        if len(stones) == 1:
            n = sites
            cands += [("rand+topk+scatter (bool mask, peers_gpu.py)",
                       peers_rate(peers, f"rand+topk+scatter subsets N={n} k={stones[0]}")),
                      ("double argsort (bool mask, peers_gpu.py)",
                       peers_rate(peers, f"double argsort subsets N={n} k={stones[0]}"))]
        bname, bval = best(cands)
        ours_g = r["gboards_per_s"]
        out_bytes = r["gb_per_s_out"] * 1e9
        rows.append({"index": idx, "board": label, "variant": r["variant"], "positions": r["positions"],
                     "ours_gboards_per_s": ours_g, "best_peer": bname, "best_peer_mboards_per_s": bval,
                     "ratio": ours_g * 1e3 / bval if bval else None,
                     "fraction_of_copy": out_bytes / (ceiling * 1e12),
                     "peers": {n: v for n, v in cands if v is not None}, "check": r["check"]})
    tables["boards"] = rows
    tables["boards_all"] = b["rows"]
    go = next((r for r in rows if r["index"] == 4), None)
    if go:
        targets.append({"kind": "boards", "case": "19x19, 120 + 120 stones (two colours)",
                        "metric": "ours / best peer (rand+topk)", "ours": go["ours_gboards_per_s"],
                        "ours_unit": "Gboards/s", "peer": go["best_peer"], "peer_rate": go["best_peer_mboards_per_s"],
                        "value": go["ratio"], "target": 100.0, "target_text": ">= 100x",
                        "met": go["ratio"] is not None and go["ratio"] >= 100,
                        "fraction_of_copy": go["fraction_of_copy"]})
    b32 = next((r for r in rows if r["index"] == 0), None)
    if b32:
        targets.append({"kind": "boards", "case": "32x32, 512 stones (one colour)",
                        "metric": "Gboards/s", "ours": b32["ours_gboards_per_s"], "ours_unit": "Gboards/s",
                        "peer": b32["best_peer"], "peer_rate": b32["best_peer_mboards_per_s"],
                        "ratio_best_peer": b32["ratio"],
                        "value": b32["ours_gboards_per_s"], "target": 4.0, "target_text": ">= 4 G/s",
                        "met": b32["ours_gboards_per_s"] >= 4.0, "fraction_of_copy": b32["fraction_of_copy"]})
    d["tables"], d["targets"] = tables, targets


def build(res):
    gpu = parse_gpu(res.get("gpu.txt"))
    date = (res.get("date.txt") or "").strip()
    peers = parse_peers(res)
    xp = parse_peers_extra(res)
    gamma = parse_gamma(res)
    cat = parse_categorical(res)
    cat_issue = parse_categorical(res, "categorical_issue.csv", "categorical_issue.log")
    boards = parse_boards(res)
    enum = parse_enumerate(res)
    copies = {
        "peers_gpu.py: torch copy_ of 2 GiB": peers_rate(peers, "d2d copy (read+write bytes)"),
        "boards_bench: cudaMemcpyAsync of 2 GiB": boards.get("copy_tbs"),
        "gamma_bench: cudaMemcpyAsync of 1 GiB": gamma.get("copy_tbs"),
        "enumerate_bench: cudaMemcpyAsync of 1 GiB": enum.get("copy_tbs"),
        "categorical_bench: cudaMemcpyAsync of 256 MiB (its rotated input buffers)": cat.get("copy_tbs"),
    }
    copies = {k: v for k, v in copies.items() if v is not None}
    src, ceiling = max(copies.items(), key=lambda kv: kv[1])
    d = {
        "what": "bench/kernels_session.sh: peers and the four kernel benchmarks in one invocation on one GPU",
        "date": date, "gpu": gpu, "build": (res.get("BUILD_INFO.txt") or "").strip().splitlines(),
        "session": (res.get("summary.txt") or "").strip().splitlines(),
        "cufft_dir": (res.get("cufft_dir.txt") or "").strip(),
        "copy": {"measurements_tb_per_s": copies, "ceiling_tb_per_s": ceiling, "ceiling_source": src,
                 "note": "bytes read plus bytes written; the ceiling is the highest of the invocation's measurements"},
        "peers": peers, "peers_extra": xp,
        "ours": {"gamma": gamma, "categorical": cat, "categorical_issue": cat_issue,
                 "boards": boards, "enumerate": enum},
    }
    analyse(d)
    return d


# --------------------------------------------------------------------------
# Markdown.


def num(x, nd=2):
    return "-" if x is None else f"{x:,.{nd}f}"


def pct(x, nd=1):
    return "-" if x is None else f"{100 * x:.{nd}f}%"


def ratio(x, nd=2):
    return "-" if x is None else f"{x:.{nd}f}x"


def markdown(d, prefix):
    t, tg = d["tables"], d["targets"]
    ceiling = d["copy"]["ceiling_tb_per_s"]
    gpu = d["gpu"]
    plots = os.path.basename(prefix)
    L = []
    A = L.append
    A(f"# Kernel benchmarks and peers in one invocation: {gpu.get('name', '?')}, {d['date'][:10]}")
    A("")
    A("Issue #4 item 4: every kind's kernel benchmark and the peers script, run **in one call on "
      "one GPU**, so every ratio below compares numbers from the same invocation, and every "
      "fraction of the copy bandwidth uses the copy rate measured in it. Written by "
      "`bench/summarize_kernels.py` from the session's outputs; all numbers are in "
      f"`{plots}.json`, the plots in `{plots}/`.")
    A("")
    A("## Machine and method")
    A("")
    A(f"- {gpu.get('name', '?')}, driver {gpu.get('driver_version', '?')}, "
      f"{gpu.get('memory.total [MiB]', '?')}; at the start: SM clock "
      f"{gpu.get('clocks.current.sm [MHz]', '?')} (max {gpu.get('clocks.max.sm [MHz]', '?')}), "
      f"memory clock {gpu.get('clocks.current.memory [MHz]', '?')}, "
      f"{gpu.get('temperature.gpu', '?')} C; clocks untouched. Lent machine "
      f"started {d['date']}.")
    A("- One command: `bash bundle-bench/kernels_session.sh` from a bundle made by "
      "`tools/bundle-bench.sh` (the benchmarks as built by `cmake --build build` here: "
      "RelWithDebInfo, nvcc 13, `sm_90`, `-fmad=false`; debug information stripped). "
      "Steps, one after the other on the idle GPU: " +
      "; ".join(s for s in d["session"]) + ".")
    if d["build"]:
        commit = next((x.split()[1] for x in d["build"] if x.startswith("commit ")), "?")
        dirty = [x.split()[-1] for x in d["build"] if x.startswith("dirty ")]
        A(f"- Built from commit `{commit[:12]}`" + (
            f"; files differing from it when bundled: {', '.join('`' + x + '`' for x in dirty)}"
            if dirty else "; clean tree") + ".")
    A("- Peers: `../shared/bench/peers_gpu.py` unchanged (PyTorch " +
      str(d["peers"].get("torch")) + ", CuPy, JAX; CUDA events, median of 5 to 20 after 3 "
      "warm-ups), then `peers_extra.py` (written by the session script) for what it lacks: "
      "two-colour 19x19 and int8 32x32 boards (the boards report's peer), "
      "`torch._standard_gamma` in float64, rFFT at a power-of-two length. Ours: each "
      "benchmark as its report describes (gamma: median of 20 launches of 2^27 outputs; "
      "categorical: median of 20 over three rotated 512 MiB inputs; boards: median of 10 "
      "after a warm-up, first and last positions checked against the CPU; enumeration: "
      "median of >= 15 over rotated input sets, first problems checked against the CPU).")
    A(f"- cuFFT for enumeration's opt-in FFT path: the one torch loads ({d['cufft_dir'] or 'not found'}).")
    A("")
    A("Copy bandwidth measured in this invocation (device to device, bytes read plus written):")
    A("")
    A("| measured by | TB/s |")
    A("|---|---:|")
    for k, v in d["copy"]["measurements_tb_per_s"].items():
        A(f"| {k} | {v:.3f} |")
    A("")
    A(f"Every \"fraction of copy\" below is over the highest of these, **{ceiling:.3f} TB/s** "
      f"({d['copy']['ceiling_source'].split(':')[0]}), the strictest choice; the categorical "
      "benchmark's own fraction (over its 256 MiB copy) is given beside it.")
    A("")
    A("## Against the issue's targets")
    A("")
    A("Earlier runs: the authors' own H200 runs of the same day (bench/results/*-kernel.md; "
      "peers from the same call for boards, enumeration and gamma, from "
      "peers-h200-2026-11-21.json for categorical's peer ratios).")
    A("")
    A("| kind | case | ours | best peer, same run | measured | target | met? | earlier run |")
    A("|---|---|---:|---|---:|---|---|---|")
    for x in tg:
        if x["kind"] == "gamma":
            meas, ours = ratio(x["value"]), f"{x['ours']:.2f} Gsamples/s"
            peer = f"torch._standard_gamma {x['peer_rate']:.2f}"
            earlier = EARLIER.get(("gamma", x["case"]), "")
        elif x["kind"] == "categorical" and x.get("issue_table"):
            meas = f"{pct(x['value'])} at K = {x['worst_K']} ({x['worst_kernel']}); {x['cases_below']} of {x['cases']} below"
            ours, peer, earlier = f"{x['ours']:.3f} TB/s", "-", ""
        elif x["kind"] == "categorical":
            meas, ours = pct(x["value"]), f"{x['ours']:.3f} TB/s"
            peer = f"{x['peer']} {x['peer_rate']:.0f} Mrows/s (ours {ratio(x['ratio_best_peer'], 1)})"
            earlier = EARLIER.get(("categorical", int(x["case"].split(",")[0][2:])), "")
        elif x["kind"] == "enumerate":
            meas = ratio(x["value"]) + (f" (opt-in FFT: {ratio(x['opt_in_fft_ratio'])})"
                                        if x.get("opt_in_fft_ratio") else "")
            # rFFT at n = 2m - 1 varies up to 3x from run to run (cuFFT's
            # plan for an awkward length): a "met" that the stronger
            # power-of-two rFFT of the same run would not give says so.
            if x["met"] and x.get("ratio_vs_pow2") and x["ratio_vs_pow2"] < x["target"]:
                meas += f"; {ratio(x['ratio_vs_pow2'])} against rfft n=pow2 (same run, not a target peer)"
            ours = f"{x['ours']:.4g} Mpairs/s"
            peer = f"{x['peer']} {x['peer_rate']:.4g} Mpairs/s"
            earlier = (EARLIER.get(("enumerate", int(x["case"].split(",")[0][4:])), "")
                       if x["case"].endswith("float32") else "")
        else:
            ours = f"{x['ours']:.3f} G/s"
            peer = f"{x['peer']} {x['peer_rate']:.2f} M/s"
            if x["target"] == 100.0:
                meas, earlier = ratio(x["value"], 0), EARLIER[("boards", "go")]
            else:
                meas, earlier = f"{x['value']:.3f} G/s ({ratio(x['ratio_best_peer'], 0)} the peer)", EARLIER[("boards", "32")]
        A(f"| {x['kind']} | {x['case']} | {ours} | {peer} | {meas} | {x['target_text']} | "
          f"{'**met**' if x['met'] else '**missed**'} | {earlier} |")
    A("")
    met = {}
    for x in tg:
        met.setdefault(x["kind"], []).append(x["met"])
    summary = []
    for k, v in met.items():
        summary.append(f"{k}: {sum(v)} of {len(v)} met")
    A("Summary: " + "; ".join(summary) + ".")
    A("")
    A("Why the misses, as the per-kind reports explain them (their profiles were not repeated here):")
    A("")
    if not all(met.get("gamma", [True])):
        A(f"- **gamma**: {WHY['gamma']}")
    if not all(met.get("categorical", [True])):
        A(f"- **categorical**: {WHY['categorical']}")
    if not all(met.get("enumerate", [True])):
        A(f"- **enumeration**: {WHY['enumerate']}")
    b32 = [x for x in tg if x["kind"] == "boards" and x["target"] == 4.0]
    if b32 and not b32[0]["met"]:
        A(f"- **boards, 32x32 at 4 G/s**: {WHY['boards_32']}")
    A("")

    # Gamma.
    A("## Gamma")
    A("")
    A("Gsamples/s; ours is what the service launches: warp-aware pre-caching where "
      "`GammaBatchBuilder::PreCachePays` chooses it (float32, most shapes below 5), the plain "
      "loop elsewhere (same bits either way); both variants are beside it. Peers: torch `_standard_gamma` (float32 from "
      "`peers_gpu.py`, float64 from `peers_extra.py`), CuPy `Generator.standard_gamma` and "
      "`jax.random.gamma` at shapes 0.3 and 2.5 (float32). Fraction of copy: output bytes "
      "written over the copy ceiling (the kernel is compute-bound; this is for the record).")
    A("")
    philox = d["ours"]["boards"].get("philox_g_blocks_per_s")
    A("Fraction of the contract's ceiling (the issue's measure, target 60% or better): samples/s "
      "times the Philox4x32-10 blocks one sample consumes (one per Marsaglia-Tsang attempt in "
      "float32, two in float64; attempts per sample counted by gamma_bench), over the Philox-only "
      f"rate measured in this invocation by boards_bench ({num(philox, 1)} G blocks/s).")
    A("")
    A("| precision | shape | ours | pre-cache | no pre-cache | torch | best peer | ours / torch | ours / best peer | target | met? | Philox blocks / sample | fraction of the Philox ceiling | fraction of copy |")
    A("|---|---|---:|---:|---:|---:|---|---:|---:|---|---|---:|---:|---:|")
    for r in t["gamma"]:
        A(f"| {r['precision']} | {r['shape']} | {num(r['ours'])} | {num(r.get('ours_pre_cache'))} | "
          f"{num(r['ours_no_pre_cache'])} | "
          f"{num(r['torch'])} | {r['best_peer']} {num(r['best_peer_rate'])} | {ratio(r['ratio_torch'])} | "
          f"{ratio(r['ratio_best'])} | >= {GAMMA_TARGET[r['precision']]:g}x | "
          f"{('met' if r['ratio_torch'] >= GAMMA_TARGET[r['precision']] else 'missed') if r['ratio_torch'] else '-'} | "
          f"{num(r.get('philox_blocks_per_sample'), 3)} | {pct(r.get('fraction_of_philox_ceiling'))} | "
          f"{pct(r['fraction_of_copy'])} |")
    A("")
    A(f"![gamma]({plots}/gamma.png)")
    A("")

    # Categorical.
    A("## Categorical")
    A("")
    A("The service's kernel at each K (server/cuda_exec_categorical.cc: lane groups up to "
      "K = 256, warp tiles to 2^15, row split beyond; in earlier runs lanes up to 128, and before "
      "them butterfly below 64 and warp per row from 64), float32 weights, one draw per row, M = 2^27 / K rows "
      "(512 MiB), the same M as the peers. TB/s counts M x K x 4 bytes read plus M x 4 written. "
      "Peers (same M, K): `torch.multinomial`, `Categorical.sample`, Gumbel-max argmax, "
      "cumsum + searchsorted, and `jax.random.categorical` at K = 1024; their fraction of copy "
      "counts the same bytes.")
    A("")
    A("| K | kernel | ours Mrows/s | ours TB/s | fraction of copy (ceiling) | (own copy) | best peer | peer Mrows/s | peer fraction of copy | ours / best peer | target | met? |")
    A("|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---|---|")
    for r in t["categorical"]:
        tgt = r["K"] in (32, 256, 1024)
        A(f"| {r['K']} | {r.get('kernel', 'butterfly')} | {r['ours_mrows_per_s']:,.0f} | {r['ours_tb_per_s']:.3f} | "
          f"{pct(r['fraction_of_ceiling'])} | {pct(r['fraction_of_own_copy'])} | {r['best_peer'] or '-'} | "
          f"{num(r['best_peer_mrows_per_s'], 1)} | {pct(r['best_peer_fraction_of_ceiling'])} | "
          f"{ratio(r['ratio_best'], 1)} | {'>= 70%' if tgt else '-'} | "
          f"{('met' if r['fraction_of_ceiling'] >= CATEGORICAL_TARGET else 'missed') if tgt else '-'} |")
    A("")
    A("Every kernel and case of the benchmark (fraction over the ceiling):")
    A("")
    A("| kernel | type | kind | K | D | µs | Mrows/s | TB/s | fraction of copy |")
    A("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in t["categorical_all"]:
        A(f"| {r['kernel']} | {r['precision']} | {r['kind']} | {r['K']} | {r['draws']} | "
          f"{r['median_us']:.1f} | {r['rows_per_s'] / 1e6:,.0f} | {r['tb_per_s']:.3f} | {pct(r['fraction_of_ceiling'])} |")
    A("")
    A(f"![categorical]({plots}/categorical.png)")
    A("")
    if t.get("categorical_issue"):
        A("Issue 11's table (`categorical_bench --issue`, float32 weights): every kernel measured at each K "
          "(\"service\": the one server/cuda_exec_categorical.cc routes that K to now), 512 MiB of rows, "
          "then 64 rows of 4096, 16384 and 2^17; target >= 70% of copy in every case.")
        A("")
        A("| kernel | service? | K | rows | D | µs | TB/s | fraction of copy | met? |")
        A("|---|---|---:|---:|---:|---:|---:|---:|---|")
        for r in t["categorical_issue"]:
            A(f"| {r['kernel']} | {'service' if r.get('service') else ''} | {r['K']} | {r['rows']} | "
              f"{r['draws']} | {r['median_us']:.1f} | "
              f"{r['tb_per_s']:.3f} | {pct(r['fraction_of_ceiling'])} | "
              f"{'met' if r['fraction_of_ceiling'] >= CATEGORICAL_TARGET else 'missed'} |")
        A("")

    # Enumeration.
    A("## Enumeration")
    A("")
    A("Mpairs/s (two-term problems per second), float32 and float64, m = n, at `peers_gpu.py`'s batch "
      "sizes. Ours: the default path (automatic direct configuration; the per-element "
      "relative error guarantee), the best direct configuration, and the opt-in FFT path "
      "(`allow_fft`, absolute error only). Peers: grouped `conv1d` and `rfft` with n = 2m - 1 "
      "(`peers_gpu.py`, the target's peers), and `rfft` at a power-of-two length "
      "(`peers_extra.py`, stronger, not in the target's definition); in float64 grouped `conv1d` "
      "and `rfft` with n = 2m - 1 in float64 (`peers_extra.py`). Targets (issue 11): >= 5x in "
      "float32 at every size, >= 3x in float64. Fraction of copy: the "
      "ideal bytes (inputs once, output once, 48-byte descriptor) over the ceiling.")
    A("")
    A("| type | m = n | B | ours (default) | best direct | ours FFT (opt-in) | conv1d | rfft 2m-1 | rfft pow2 | ours / best peer | FFT / best peer | ours / pow2 | target | met? | fraction of copy |")
    A("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|")
    for r in t["enumerate"]:
        A(f"| {r.get('type', 'float')} | {r['m']} | {r['batch']} | {num(r['ours_auto'])} | {num(r['ours_best_direct'])} "
          f"({r['ours_best_direct_variant']}) | {num(r['ours_fft'])} | {num(r['conv1d'])} | "
          f"{num(r['rfft'])} | {num(r['rfft_pow2'])} | {ratio(r['ratio_auto'])} | {ratio(r['ratio_fft'])} | "
          f"{ratio(r['ratio_auto_vs_pow2'])} | >= {r['target']:g}x | "
          f"{('met' if r['ratio_auto'] >= r['target'] else 'missed') if r['ratio_auto'] else '-'} | "
          f"{pct(r['fraction_of_copy'])} |")
    A("")
    A("All sizes, the default path and the FFT path (Mpairs/s; float and double):")
    A("")
    A("| type | m = n | B | default (auto) | best direct | FFT |")
    A("|---|---:|---:|---:|---:|---:|")
    keys = []
    for r in t["enumerate_all"]:
        k = (r["type"], r["m"], r["batch"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        rs = [r for r in t["enumerate_all"] if (r["type"], r["m"], r["batch"]) == k]
        auto = next((r["mpairs_per_s"] for r in rs if r["variant"] == "auto"), None)
        dbest = max((r for r in rs if not r["variant"].startswith("fft")), key=lambda r: r["mpairs_per_s"])
        fft = next((r["mpairs_per_s"] for r in rs if r["variant"].startswith("fft")), None)
        A(f"| {k[0]} | {k[1]} | {k[2]} | {auto:.4g} | {dbest['mpairs_per_s']:.4g} ({dbest['variant']}) | "
          f"{'-' if fft is None else f'{fft:.4g}'} |")
    A("")
    A(f"![enumerate]({plots}/enumerate.png)")
    A("")

    # Boards.
    A("## Boards")
    A("")
    A("Positions per second (each position: every colour's stones placed, its 64-bit words "
      "written), the launcher's automatic variant and loop, 2^24 positions. Peers: int8 boards "
      "by `torch.rand` + `topk` + `scatter_` and by double `argsort` (`peers_extra.py`, as in "
      "boards-kernel.md), and for one colour also `peers_gpu.py`'s boolean masks (same N and k). "
      "Fraction of copy: output bytes over the ceiling (the kernels are integer-pipe-bound).")
    A("")
    A("| board | variant | ours Gboards/s | best peer | peer Mboards/s | ours / best peer | fraction of copy | check |")
    A("|---|---|---:|---|---:|---:|---:|---|")
    for r in t["boards"]:
        A(f"| {r['board']} | {r['variant']} | {r['ours_gboards_per_s']:.3f} | {r['best_peer']} | "
          f"{num(r['best_peer_mboards_per_s'])} | {ratio(r['ratio'], 0)} | {pct(r['fraction_of_copy'])} | {r['check']} |")
    A("")
    A("Targets: 19x19 two colours >= 100x the best peer; one-colour 32x32 >= 4 G boards/s "
      "(see the first table). `peers_gpu.py`'s `N=32 k=16` subsets (32 sites, not a 32x32 "
      "board) have no counterpart among our cases and are only in the JSON. All cases of "
      "the benchmark (%Philox: over the Philox-only ceiling measured by the benchmark, "
      f"{d['ours']['boards'].get('philox_g_blocks_per_s', 0):.1f} G blocks/s):")
    A("")
    A("| # | case | board | variant | positions | ms | Gboards/s | %Philox | fraction of copy | check |")
    A("|---:|---|---|---|---:|---:|---:|---:|---:|---|")
    for r in t["boards_all"]:
        A(f"| {r['index']} | {r['case']} | {r['board']} | {r['variant']} | {r['positions']} | {r['ms']:.3f} | "
          f"{r['gboards_per_s']:.3f} | {r['pct_philox']:.1f}% | {pct(r['gb_per_s_out'] * 1e9 / (ceiling * 1e12))} | {r['check']} |")
    A("")
    A(f"![boards]({plots}/boards.png)")
    A("")
    A("## All targets at a glance")
    A("")
    A(f"![targets]({plots}/targets.png)")
    A("")
    A("## Reproduce")
    A("")
    A("```")
    A("cmake --build build --target boards_bench categorical_bench enumerate_bench gamma_bench")
    A("tools/bundle-bench.sh bundle-bench            # 19 MB; carries peers_gpu.py and the session script")
    A("# on the GPU machine, from the repository root (run tool: carry bundle-bench):")
    A("bash bundle-bench/kernels_session.sh           # -> $OUT/kernels.tgz, $OUT/summary.txt")
    A("# here:")
    A(f"bench/summarize_kernels.py kernels.tgz --prefix bench/results/{plots}")
    A(f"bench/summarize_kernels.py --from-json bench/results/{plots}.json   # redraw only")
    A("```")
    A("")
    return "\n".join(L)


# --------------------------------------------------------------------------
# Plots.


def plots(d, folder):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(folder, exist_ok=True)
    t = d["tables"]
    ceiling = d["copy"]["ceiling_tb_per_s"]
    title_sfx = f"{d['gpu'].get('name', '')}, one invocation, {d['date'][:10]}"

    # Gamma: grouped bars per shape, float32 and float64.
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    for ax, prec in zip(axes, ("float32", "float64")):
        rows = [r for r in t["gamma"] if r["precision"] == prec]
        names = ["ours (pre-cache)", "ours (no pre-cache)", "torch._standard_gamma"]
        series = [[r.get("ours_pre_cache", r["ours"]) for r in rows], [r["ours_no_pre_cache"] for r in rows],
                  [r["torch"] for r in rows]]
        if prec == "float32":
            names += ["cupy standard_gamma", "jax.random.gamma"]
            series += [[r["peers"].get("cupy standard_gamma") for r in rows],
                       [r["peers"].get("jax.random.gamma") for r in rows]]
        n = len(series)
        w = 0.8 / n
        for i, (nm, s) in enumerate(zip(names, series)):
            xs = [j + (i - (n - 1) / 2) * w for j, v in enumerate(s) if v]
            ax.bar(xs, [v for v in s if v], w, label=nm)
        tgt = GAMMA_TARGET[prec]
        for j, r in enumerate(rows):
            if r["torch"]:
                ax.plot([j - 0.4, j + 0.4], [tgt * r["torch"]] * 2, "k--", lw=1,
                        label=f"target: {tgt:g}x torch" if j == 0 else None)
        if prec == "float32":
            ax.set_yscale("log")
            ax.set_ylim(0.5, 3000)
            ax.legend(fontsize=7, loc="upper left", ncol=3)
        else:
            ax.set_ylim(0, max(max(v for v in s if v) for s in series + [[tgt * r["torch"] for r in rows
                                                                           if r["torch"]]]) * 1.3)
            ax.legend(fontsize=7, loc="upper left", ncol=3)
        ax.set_xticks(range(len(rows)), [r["shape"] for r in rows])
        ax.set_ylabel("Gsamples/s")
        ax.set_title(f"gamma, {prec}, 2^27 outputs")
        ax.grid(axis="y", which="both", alpha=0.3)
    fig.suptitle(f"Gamma: ours vs peers ({title_sfx})")
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "gamma.png"), dpi=110)
    plt.close(fig)

    # Categorical: fraction of copy vs K; rows/s vs K with peers.
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    ax = axes[0]
    allr = t["categorical_all"]
    for kern in ("lane-groups", "lanes", "block-row", "warp-tiles", "warp-tiles-ef", "butterfly", "butterfly-cap", "warp-per-row", "prefix-sum"):
        rs = sorted((r for r in allr if r["kernel"] == kern and r["precision"] == "f32"
                     and r["kind"] == "weights" and r["draws"] == 1), key=lambda r: r["K"])
        if rs:
            p2 = [r for r in rs if r["K"] & (r["K"] - 1) == 0]
            odd = [r for r in rs if r["K"] & (r["K"] - 1)]
            line, = ax.plot([r["K"] for r in p2], [100 * r["fraction_of_ceiling"] for r in p2], "o-",
                            label=kern)
            ax.plot([r["K"] for r in odd], [100 * r["fraction_of_ceiling"] for r in odd], "o",
                    mfc="none", color=line.get_color())
    pk = [r for r in t["categorical"] if r["best_peer_fraction_of_ceiling"]]
    ax.plot([r["K"] for r in pk], [100 * r["best_peer_fraction_of_ceiling"] for r in pk], "s--",
            color="gray", label="best peer (same bytes)")
    ax.axhline(70, color="k", ls=":", lw=1, label="target: 70% at K = 32, 256, 1024")
    for K in (32, 256, 1024):
        ax.axvline(K, color="k", alpha=0.1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("K (categories per row)")
    ax.set_ylabel(f"% of copy bandwidth ({ceiling:.2f} TB/s)")
    ax.set_ylim(0, 125)
    ax.set_yticks(range(0, 101, 20))
    ax.set_title("float32 weights, one draw per row (hollow: K = 33, 100, 1000)")
    ax.legend(fontsize=7, loc="upper left", ncol=3)
    ax.grid(alpha=0.3)
    ax = axes[1]
    rs = [r for r in t["categorical"]]
    rs = [r for r in rs if r["K"] & (r["K"] - 1) == 0]
    ax.plot([r["K"] for r in rs], [r["ours_mrows_per_s"] for r in rs], "o-", label="ours (service's kernel)")
    peer_names = sorted({n for r in t["categorical"] for n in r["peers"]})
    for n in peer_names:
        pts = [(r["K"], r["peers"][n]) for r in t["categorical"] if n in r["peers"]]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "s--", label=n, alpha=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("K")
    ax.set_ylabel("M rows/s")
    ax.set_title("rows per second, M = 2^27 / K")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.suptitle(f"Categorical ({title_sfx})")
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "categorical.png"), dpi=110)
    plt.close(fig)

    # Enumeration: rates at the peers' sizes and ratios against the targets.
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    ax = axes[0]
    rows = t["enumerate"]
    names = [("ours_auto", "ours (default, direct)"), ("ours_fft", "ours FFT (opt-in)"),
             ("conv1d", "grouped conv1d"), ("rfft", "rfft n=2m-1"), ("rfft_pow2", "rfft n=pow2")]
    w = 0.8 / len(names)
    for i, (k, nm) in enumerate(names):
        xs = [j + (i - (len(names) - 1) / 2) * w for j, r in enumerate(rows) if r[k]]
        ax.bar(xs, [r[k] for r in rows if r[k]], w, label=nm)
    ax.set_xticks(range(len(rows)), [f"{r.get('type', 'float')}\nm=n={r['m']}\nB={r['batch']}" for r in rows])
    ax.set_yscale("log")
    ax.set_ylabel("M pairs/s")
    ax.set_title("float32 and float64, peers' batch sizes")
    ax.legend(fontsize=8)
    ax.grid(axis="y", which="both", alpha=0.3)
    ax = axes[1]
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["ratio_auto"] or 0 for r in rows], 0.4, label="ours (default) / best peer")
    ax.bar([x + 0.2 for x in xs], [r["ratio_fft"] or 0 for r in rows], 0.4, label="ours FFT / best peer")
    for j, r in enumerate(rows):
        ax.plot([j - 0.4, j + 0.4], [r["target"]] * 2, "k--", lw=1.2, label="target" if j == 0 else None)
        if r["ratio_auto"]:
            ax.text(j - 0.2, r["ratio_auto"] + 0.05, f"{r['ratio_auto']:.2f}x", ha="center", fontsize=8)
        if r["ratio_fft"]:
            ax.text(j + 0.2, r["ratio_fft"] + 0.05, f"{r['ratio_fft']:.2f}x", ha="center", fontsize=8)
    ax.set_xticks(list(xs), [f"{r.get('type', 'float')}\nm=n={r['m']}" for r in rows])
    ax.set_ylabel("ratio to the best of conv1d, rfft (same run)")
    ax.set_title("enumeration against the targets")
    ax.set_ylim(0, 6)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"Enumeration ({title_sfx})")
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "enumerate.png"), dpi=110)
    plt.close(fig)

    # Boards: ours vs best peer per board; all auto cases with the 4 G line.
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    ax = axes[0]
    rows = t["boards"]
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["ours_gboards_per_s"] * 1e3 for r in rows], 0.4, label="ours")
    ax.bar([x + 0.2 for x in xs], [r["best_peer_mboards_per_s"] or 0 for r in rows], 0.4, label="best peer (rand+topk)")
    for j, r in enumerate(rows):
        ax.text(j, r["ours_gboards_per_s"] * 1e3 * 1.15, f"{r['ratio']:.0f}x", ha="center", fontsize=9)
    ax.set_xticks(list(xs), [r["board"].replace(" stones", "").replace(" (two colours)", "\ntwo colours")
                             for r in rows], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(top=max(r["ours_gboards_per_s"] for r in rows) * 1e3 * 3)
    ax.set_ylabel("M boards/s")
    ax.set_title("ours vs best peer (target: 100x on 19x19 two colours)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", which="both", alpha=0.3)
    ax = axes[1]
    sel = [r for r in t["boards_all"] if r["case"] in ("headline", "", "target 2", "peer's case", "1024 segments")]
    ax.barh(range(len(sel)), [r["gboards_per_s"] for r in sel],
            color=["C3" if r["index"] in (0, 4) else "C0" for r in sel])
    ax.set_yticks(range(len(sel)), [f"{r['board']}" + (" (1024 req.)" if r["case"] == "1024 segments" else "")
                                    for r in sel], fontsize=8)
    ax.axvline(4.0, color="k", ls="--", lw=1, label="target: 4 G/s (32x32, one colour)")
    ax.set_xlabel("G boards/s (automatic variant and loop)")
    ax.set_title("every board case")
    ax.invert_yaxis()
    ax.legend(fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.suptitle(f"Boards ({title_sfx})")
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "boards.png"), dpi=110)
    plt.close(fig)

    # All targets: measured over target.
    tg = d["targets"]
    fig, ax = plt.subplots(figsize=(11, 2 + 0.25 * len(tg)))
    vals = [x["value"] / x["target"] for x in tg]
    def label(x):
        if x.get("issue_table"):
            return f"categorical: every K, {x['case'].split(', ')[1].split(':')[0]}"
        if x["kind"] == "enumerate":
            return f"enumerate: {x['case'].split(',')[0]}, {x['case'].split(', ')[-1]}"
        return f"{x['kind']}: {x['case'].split(',')[0]}"
    labels = [label(x) for x in tg]
    ax.barh(range(len(tg)), vals, color=["C2" if x["met"] else "C3" for x in tg])
    for i, (v, x) in enumerate(zip(vals, tg)):
        txt = (pct(x["value"]) if x["kind"] == "categorical" else
               f"{x['value']:.3f} G/s" if x["target"] == 4.0 else ratio(x["value"], 2 if x["value"] < 10 else 0))
        ax.text(v + 0.01, i, f"{txt} (target {x['target_text'].replace('>= ', '')})", va="center", fontsize=8)
    ax.axvline(1.0, color="k", lw=1)
    ax.set_yticks(range(len(tg)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("measured / target (>= 1: met)")
    ax.set_xlim(0, max(vals) * 1.35)
    ax.set_title(f"Issue 11 targets ({title_sfx})")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "targets.png"), dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="?", help="kernels.tgz or its unpacked folder")
    ap.add_argument("--from-json", help="redraw the Markdown and plots from this JSON")
    ap.add_argument("--prefix", help="output prefix (PREFIX.json, PREFIX.md, PREFIX/*.png)")
    ap.add_argument("--no-plots", action="store_true")
    a = ap.parse_args()
    if a.from_json:
        with open(a.from_json) as fh:
            d = json.load(fh)
        analyse(d)
    elif a.results:
        d = build(Results(a.results))
    else:
        ap.error("give RESULTS or --from-json")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    gpu = re.sub(r"[^a-z0-9]+", "", d["gpu"].get("name", "gpu").lower().replace("nvidia", "")) or "gpu"
    prefix = a.prefix or os.path.join(root, "bench", "results", f"kernels-{gpu}-{d['date'][:10]}")
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    if not a.from_json:
        with open(prefix + ".json", "w") as fh:
            json.dump(d, fh, indent=1)
            fh.write("\n")
    with open(prefix + ".md", "w") as fh:
        fh.write(markdown(d, prefix))
    if not a.no_plots:
        plots(d, prefix)
    for x in d["targets"]:
        print(f"{x['kind']:11s} {x['case']:45s} {x['value']:.4g} (target {x['target_text']}): "
              f"{'met' if x['met'] else 'missed'}")
    print("wrote", prefix + ".{json,md}", "" if a.no_plots else f"and {prefix}/*.png")


if __name__ == "__main__":
    sys.exit(main())
