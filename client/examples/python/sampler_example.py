#!/usr/bin/python3
"""Example Python client of sampler.v1.SamplerService.

Calls GetServerInfo and every sampling RPC, prints what comes back, and
checks each answer against what the API promises: it exits 1 at the first
answer that breaks a promise or at any RPC error, so it doubles as a test.

Needs Debian's python3-grpcio and python3-protobuf, and the stubs that the
build generates from proto/sampler/v1/sampler.proto (CMake target
sampler_python_stubs, written to <build>/client/examples/python):

    PYTHONPATH=build/client/examples/python /usr/bin/python3 \\
        client/examples/python/sampler_example.py --target localhost:50051
"""

import argparse
import collections
import math
import sys

try:
    import grpc
    from sampler.v1 import sampler_pb2 as pb
    from sampler.v1 import sampler_pb2_grpc as pb_grpc
except ImportError as error:
    sys.exit(
        f"sampler_example: {error}\n"
        "Run it with Debian's /usr/bin/python3 (apt-get install "
        "python3-grpcio python3-protobuf) and PYTHONPATH set to the "
        "generated stubs, "
        "<build>/client/examples/python (cmake --build <build> --target "
        "sampler_python_stubs).")

RPC_TIMEOUT_S = 30.0  # deadline of every call
CONNECT_TIMEOUT_S = 10.0


class CheckError(Exception):
    """An answer that breaks a promise of the API."""


def expect(condition, message):
    """Raises CheckError with message unless condition holds."""
    if not condition:
        raise CheckError(message)


def section(title):
    print(f"\n== {title}")


def reals(values, precision=pb.PRECISION_FLOAT64):
    """A Reals message holding values in the representation of precision."""
    if precision == pb.PRECISION_FLOAT32:
        return pb.Reals(f32=pb.FloatList(values=values))
    return pb.Reals(f64=pb.DoubleList(values=values))


def values_of(message):
    """The numbers in a Reals message, whichever representation it uses."""
    which = message.WhichOneof("values")
    return list(getattr(message, which).values) if which else []


def log_sum_exp(xs):
    top = max(xs)
    return top + math.log(sum(math.exp(x - top) for x in xs))


# ------------------------------------------------------------- server info --

def server_info(stub):
    section("GetServerInfo")
    info = stub.GetServerInfo(pb.GetServerInfoRequest(),
                              timeout=RPC_TIMEOUT_S)
    print(f"version {info.version}, backend {pb.Backend.Name(info.backend)} "
          f"({info.backend_reason})")
    for device in info.devices:
        print(f"  GPU {device.index}: {device.name}, "
              f"{device.memory_bytes / 2**30:.1f} GiB, "
              f"sm {device.compute_capability}")
    limits = info.limits
    print(f"limits: {limits.max_items_per_request} items per request, "
          f"{limits.max_message_bytes} bytes per message, "
          f"boards up to {limits.max_board_sites} sites")
    expect(info.version, "empty version")
    expect(info.backend != pb.BACKEND_UNSPECIFIED, "backend unspecified")
    expect(limits.max_items_per_request > 0, "no item limit reported")
    return info


# ------------------------------------------------------------- enumeration --

def enumerate_dice(stub):
    section("Enumerate: the sum of two dice, and of a coin and a die")
    die = pb.Pmf(offset=1, probabilities=reals([1 / 6] * 6))
    coin = pb.Pmf(offset=0, probabilities=reals([0.5, 0.5]))
    request = pb.EnumerateRequest(problems=[
        pb.EnumerateProblem(terms=[die, die]),
        pb.EnumerateProblem(terms=[coin, die]),
    ])
    response = stub.Enumerate(request, timeout=RPC_TIMEOUT_S)
    expect(len(response.results) == 2, "expected 2 results")

    dice = response.results[0]
    pmf = values_of(dice.probabilities)
    for i, p in enumerate(pmf):
        bar = "#" * round(p * 180)
        print(f"  P(sum = {dice.offset + i:2d}) = {p:.4f} {bar}")
    expect(dice.offset == 2, f"two dice: offset {dice.offset}, want 2")
    expect(len(pmf) == 11, f"two dice: {len(pmf)} points, want 11")
    for i, p in enumerate(pmf):
        exact = (6 - abs(dice.offset + i - 7)) / 36
        expect(abs(p - exact) < 1e-12,
               f"two dice: P({dice.offset + i}) = {p}, want {exact}")

    mixed = response.results[1]
    pmf = values_of(mixed.probabilities)
    print(f"  coin + die: offset {mixed.offset}, "
          f"{[round(p, 4) for p in pmf]}")
    expect(mixed.offset == 1 and len(pmf) == 7, "coin + die: wrong support")
    expect(abs(sum(pmf) - 1) < 1e-12, "coin + die: does not sum to 1")


# ------------------------------------------------------------- categorical --

def categorical(stub):
    section("SampleCategorical: 1000 draws from each of two rows")
    weights = [[1, 2, 3, 0],
               [0, 0, 5, 5]]
    request = pb.SampleCategoricalRequest(
        categories=4, values=reals([w for row in weights for w in row]),
        input=pb.CATEGORICAL_INPUT_WEIGHTS, draws=1000, seed=7)
    response = stub.SampleCategorical(request, timeout=RPC_TIMEOUT_S)
    expect(response.rows == 2 and response.draws == 1000,
           f"shape {response.rows} x {response.draws}, want 2 x 1000")
    expect(len(response.indices) == 2000, "expected 2000 indices")
    expect(response.seed == 7, f"seed {response.seed} echoed, want 7")
    for r, row in enumerate(weights):
        drawn = response.indices[r * 1000:(r + 1) * 1000]
        counts = collections.Counter(drawn)
        print(f"  row {r} weights {row}: counts "
              f"{[counts.get(k, 0) for k in range(4)]}")
        for k in drawn:
            expect(0 <= k < 4, f"row {r}: index {k} out of [0, 4)")
            expect(row[k] > 0, f"row {r}: drew category {k} of weight 0")

    again = stub.SampleCategorical(request, timeout=RPC_TIMEOUT_S)
    expect(again.indices == response.indices,
           "the same request and seed gave different draws")
    print("  same request, same seed: identical draws")

    # Without a seed the server picks one and echoes it; sending that seed
    # back reproduces the answer.
    request.ClearField("seed")
    unseeded = stub.SampleCategorical(request, timeout=RPC_TIMEOUT_S)
    request.seed = unseeded.seed
    replay = stub.SampleCategorical(request, timeout=RPC_TIMEOUT_S)
    expect(replay.indices == unseeded.indices,
           "replaying the echoed seed gave different draws")
    print(f"  no seed: the server chose {unseeded.seed}; replaying it "
          "reproduces the draws")


def categorical_stream(stub):
    section("SampleCategoricalStream: 1000 rows of logits in chunks of 300")
    rows, categories, draws = 1000, 5, 3
    logits = [float(k) if k != r % categories else -math.inf
              for r in range(rows) for k in range(categories)]
    inner = pb.SampleCategoricalRequest(
        categories=categories, values=reals(logits),
        input=pb.CATEGORICAL_INPUT_LOGITS, draws=draws, seed=99)
    stream = stub.SampleCategoricalStream(
        pb.SampleCategoricalStreamRequest(request=inner,
                                          max_rows_per_chunk=300),
        timeout=RPC_TIMEOUT_S)
    indices = []
    chunks = 0
    for chunk in stream:
        chunks += 1
        expect(chunk.first_row == len(indices) // draws,
               f"chunk {chunks} starts at row {chunk.first_row}")
        expect(0 < chunk.rows <= 300, f"chunk of {chunk.rows} rows")
        expect(len(chunk.indices) == chunk.rows * draws,
               "chunk size does not match its rows")
        indices.extend(chunk.indices)
    print(f"  {chunks} chunks, {len(indices)} indices")
    expect(len(indices) == rows * draws, "wrong total number of indices")
    for i, k in enumerate(indices):
        row = i // draws
        expect(0 <= k < categories and k != row % categories,
               f"row {row}: drew {k}, whose logit is -inf")
    unary = stub.SampleCategorical(inner, timeout=RPC_TIMEOUT_S)
    expect(list(unary.indices) == indices,
           "streamed draws differ from the unary answer for the same seed")
    print("  streamed answer == unary answer for the same seed")


# ------------------------------------------------------------------- gamma --

def gamma(stub):
    section("SampleGamma: two groups of 20000")
    groups = [pb.GammaGroup(shape=0.5, scale=2, count=20000),
              pb.GammaGroup(shape=3, scale=1, count=20000)]
    request = pb.SampleGammaRequest(groups=pb.GammaGroups(groups=groups),
                                    seed=11)
    response = stub.SampleGamma(request, timeout=RPC_TIMEOUT_S)
    samples = values_of(response.samples)
    expect(len(samples) == 40000, f"{len(samples)} samples, want 40000")
    expect(response.seed == 11, "seed not echoed")
    expect(all(0 < x < math.inf for x in samples),
           "a sample is not positive and finite")
    start = 0
    for group in groups:
        part = samples[start:start + group.count]
        start += group.count
        mean = sum(part) / len(part)
        want = group.shape * group.scale
        # Standard error of the mean: sqrt(shape) * scale / sqrt(n).
        error = math.sqrt(group.shape) * group.scale / math.sqrt(len(part))
        print(f"  shape {group.shape} scale {group.scale}: mean {mean:.4f} "
              f"(expected {want}, standard error {error:.4f})")
        expect(abs(mean - want) < 6 * error, "mean far from shape * scale")
    again = stub.SampleGamma(request, timeout=RPC_TIMEOUT_S)
    expect(values_of(again.samples) == samples,
           "the same request and seed gave different samples")
    print("  same request, same seed: identical samples")

    section("SampleGamma: per-element parameters (float32), log output")
    request = pb.SampleGammaRequest(
        elements=pb.GammaElements(
            shape=reals([0.1, 1, 10], pb.PRECISION_FLOAT32),
            scale=reals([1, 2, 3], pb.PRECISION_FLOAT32)),
        precision=pb.PRECISION_FLOAT32, seed=12)
    response = stub.SampleGamma(request, timeout=RPC_TIMEOUT_S)
    expect(response.samples.WhichOneof("values") == "f32",
           "a float32 request got no float32 answer")
    samples = values_of(response.samples)
    print(f"  Gamma(0.1, 1), Gamma(1, 2), Gamma(10, 3): {samples}")
    expect(len(samples) == 3 and all(x >= 0 for x in samples),
           "expected 3 non-negative samples")

    request = pb.SampleGammaRequest(
        groups=pb.GammaGroups(groups=[pb.GammaGroup(shape=1e-3, count=5)]),
        log_output=True, seed=13)
    logs = values_of(stub.SampleGamma(request, timeout=RPC_TIMEOUT_S).samples)
    print(f"  log of Gamma(0.001) samples: {[round(x, 1) for x in logs]}")
    expect(len(logs) == 5 and all(-math.inf < x < math.inf for x in logs),
           "log-samples of a tiny shape must be finite")


def gamma_stream(stub):
    section("SampleGammaStream: 100000 samples in chunks of 30000")
    inner = pb.SampleGammaRequest(
        groups=pb.GammaGroups(groups=[pb.GammaGroup(shape=2, count=100000)]),
        seed=21)
    stream = stub.SampleGammaStream(
        pb.SampleGammaStreamRequest(request=inner,
                                    max_samples_per_chunk=30000),
        timeout=RPC_TIMEOUT_S)
    samples = []
    for chunk in stream:
        part = values_of(chunk.samples)
        print(f"  chunk at {chunk.first_sample}: {len(part)} samples")
        expect(chunk.first_sample == len(samples), "chunks out of order")
        expect(0 < len(part) <= 30000, "chunk larger than asked for")
        expect(chunk.seed == 21, "seed not echoed in a chunk")
        samples.extend(part)
    expect(len(samples) == 100000,
           f"{len(samples)} samples reassembled, want 100000")
    print(f"  reassembled {len(samples)} samples, mean "
          f"{sum(samples) / len(samples):.4f} (expected 2)")
    unary = stub.SampleGamma(inner, timeout=RPC_TIMEOUT_S)
    expect(values_of(unary.samples) == samples,
           "streamed samples differ from the unary answer for the same seed")
    print("  streamed answer == unary answer for the same seed")


# --------------------------------------------------------------- Dirichlet --

def dirichlet(stub):
    section("SampleDirichlet: 2000 rows of Dirichlet(1, 2, 3, 4)")
    alpha = [1, 2, 3, 4]
    rows = 2000
    request = pb.SampleDirichletRequest(concentrations=reals(alpha * rows),
                                        dimension=len(alpha), seed=31)
    samples = values_of(stub.SampleDirichlet(request,
                                             timeout=RPC_TIMEOUT_S).samples)
    expect(len(samples) == rows * len(alpha), "wrong number of values")
    for r in range(rows):
        row = samples[r * 4:(r + 1) * 4]
        expect(abs(sum(row) - 1) < 1e-9, f"row {r} sums to {sum(row)}")
        expect(all(0 <= x <= 1 for x in row), f"row {r} leaves [0, 1]")
    means = [sum(samples[k::4]) / rows for k in range(4)]
    print(f"  first row {[round(x, 4) for x in samples[:4]]}")
    print(f"  column means {[round(m, 4) for m in means]} "
          "(expected 0.1, 0.2, 0.3, 0.4)")
    for k, mean in enumerate(means):
        expect(abs(mean - alpha[k] / 10) < 0.02, f"mean of column {k}")

    section("SampleDirichlet: ragged rows, tiny concentrations, log output")
    request = pb.SampleDirichletRequest(
        concentrations=reals([1e-3, 1e-3, 0.01, 0.01, 0.01, 1e-4] * 2),
        row_lengths=[2, 4, 6], log_output=True, seed=32)
    logs = values_of(stub.SampleDirichlet(request,
                                          timeout=RPC_TIMEOUT_S).samples)
    expect(len(logs) == 12, f"{len(logs)} values, want 12")
    start = 0
    for length in [2, 4, 6]:
        row = logs[start:start + length]
        start += length
        print(f"  log-probabilities {[round(x, 1) for x in row]}")
        expect(all(x <= 1e-12 and not math.isnan(x) for x in row),
               "a log-probability above 0 or NaN")
        expect(abs(log_sum_exp(row)) < 1e-9,
               "a row's probabilities do not sum to 1")


# ------------------------------------------------------------------ boards --

def check_boards(words, count, rows, cols, stones, words_per_board,
                 colours):
    """Checks bitboards laid out [position][colour][word]."""
    sites = rows * cols
    expect(colours == len(stones), f"{colours} colours, want {len(stones)}")
    expect(words_per_board == (sites + 63) // 64,
           f"{words_per_board} words per board for {sites} sites")
    expect(len(words) == count * colours * words_per_board,
           "wrong number of words")
    for p in range(count):
        occupied = 0
        for c in range(colours):
            base = (p * colours + c) * words_per_board
            board = sum(words[base + w] << (64 * w)
                        for w in range(words_per_board))
            expect(bin(board).count("1") == stones[c],
                   f"position {p} colour {c}: "
                   f"{bin(board).count('1')} stones, want {stones[c]}")
            expect(board >> sites == 0, f"position {p}: a stone off the grid")
            expect(board & occupied == 0, f"position {p}: two stones share "
                   "a site")
            occupied |= board


def render_board(words, rows, cols, colours, words_per_board):
    """Position 0 as text: X for colour 0, O for colour 1, . for empty."""
    marks = "XO*+"
    lines = []
    for r in range(rows):
        line = ""
        for col in range(cols):
            site = r * cols + col
            mark = "."
            for c in range(colours):
                word = words[c * words_per_board + site // 64]
                if word >> (site % 64) & 1:
                    mark = marks[c % len(marks)]
            line += mark + " "
        lines.append("  " + line.rstrip())
    return "\n".join(lines)


def boards(stub):
    section("SampleBoards: 100 positions, 10 X and 12 O on 9 x 9")
    request = pb.SampleBoardsRequest(rows=9, cols=9, stones=[10, 12],
                                     count=100, seed=5)
    response = stub.SampleBoards(request, timeout=RPC_TIMEOUT_S)
    expect(response.count == 100 and response.seed == 5,
           "count or seed not echoed")
    check_boards(response.bitboards, 100, 9, 9, [10, 12],
                 response.words_per_board, response.colours)
    print(render_board(response.bitboards, 9, 9, response.colours,
                       response.words_per_board))
    print("  every position has 10 X and 12 O, none overlapping")
    again = stub.SampleBoards(request, timeout=RPC_TIMEOUT_S)
    expect(again.bitboards == response.bitboards,
           "the same request and seed gave different boards")
    print("  same request, same seed: identical boards")


def boards_stream(stub):
    section("SampleBoardsStream: 1000 positions on 19 x 19 in chunks of 256")
    inner = pb.SampleBoardsRequest(rows=19, cols=19, stones=[50, 50],
                                   count=1000, seed=6)
    stream = stub.SampleBoardsStream(
        pb.SampleBoardsStreamRequest(request=inner,
                                     max_positions_per_chunk=256),
        timeout=RPC_TIMEOUT_S)
    words = []
    positions = 0
    for chunk in stream:
        expect(chunk.first_position == positions, "chunks out of order")
        expect(0 < chunk.count <= 256, f"chunk of {chunk.count} positions")
        check_boards(chunk.bitboards, chunk.count, 19, 19, [50, 50],
                     chunk.words_per_board, chunk.colours)
        print(f"  chunk at {chunk.first_position}: {chunk.count} positions")
        positions += chunk.count
        words.extend(chunk.bitboards)
    expect(positions == 1000, f"{positions} positions, want 1000")
    unary = stub.SampleBoards(inner, timeout=RPC_TIMEOUT_S)
    expect(list(unary.bitboards) == words,
           "streamed boards differ from the unary answer for the same seed")
    print("  streamed answer == unary answer for the same seed")


# ------------------------------------------------------------------ errors --

def bad_request(stub):
    section("A bad request: 50 stones on a 5 x 5 board")
    try:
        stub.SampleBoards(pb.SampleBoardsRequest(rows=5, cols=5, stones=[50],
                                                 count=1),
                          timeout=RPC_TIMEOUT_S)
    except grpc.RpcError as error:
        print(f"  {error.code().name}: {error.details()}")
        expect(error.code() == grpc.StatusCode.INVALID_ARGUMENT,
               f"got {error.code().name}, want INVALID_ARGUMENT")
        return
    raise CheckError("an impossible board was accepted")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="localhost:50051",
                        help="server address, host:port")
    args = parser.parse_args()

    options = [("grpc.max_receive_message_length", 64 << 20)]
    with grpc.insecure_channel(args.target, options=options) as channel:
        try:
            grpc.channel_ready_future(channel).result(
                timeout=CONNECT_TIMEOUT_S)
        except grpc.FutureTimeoutError:
            print(f"sampler_example: cannot connect to {args.target}",
                  file=sys.stderr)
            return 1
        stub = pb_grpc.SamplerServiceStub(channel)
        try:
            server_info(stub)
            enumerate_dice(stub)
            categorical(stub)
            categorical_stream(stub)
            gamma(stub)
            gamma_stream(stub)
            dirichlet(stub)
            boards(stub)
            boards_stream(stub)
            bad_request(stub)
        except grpc.RpcError as error:
            print(f"sampler_example: RPC failed: {error.code().name}: "
                  f"{error.details()}", file=sys.stderr)
            return 1
        except CheckError as error:
            print(f"sampler_example: CHECK FAILED: {error}", file=sys.stderr)
            return 1
    print("\nsampler_example: all answers checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
