"""The client: one method per RPC of sampler.v1.SamplerService, answers as
NumPy arrays.

Every sampling method returns a `Sample`: the values, the seed the server
used (echoed even when you gave none, so you can replay the draw) and the
randomness contract version the server reported for the call (the same
request and seed give the same bits on every server of that version).
Streaming RPCs (`stream=True`) are assembled into the same arrays as the
unary ones, bit for bit. Errors are `grpc.RpcError` with the server's code
and message (INVALID_ARGUMENT names the field; OUT_OF_RANGE names the
streaming RPC that takes a larger request).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

import grpc
import numpy as np
from numpy.typing import ArrayLike

from sampler_client import _wire
from sampler_client._gen.grpc.health.v1 import health_pb2, health_pb2_grpc
from sampler_client._gen.sampler.v1 import sampler_pb2 as pb
from sampler_client._gen.sampler.v1 import sampler_pb2_grpc as pb_grpc
from google.protobuf import json_format

CONTRACT_METADATA_KEY = "sampler-contract-version"

Precision = Optional[str]  # "float32", "float64" or None (from the input)


@dataclasses.dataclass
class Sample:
    """A sampling answer.

    values: the samples, shaped as the method documents.
    seed: the seed the server used.
    contract_version: the randomness contract version of the server that
        answered (None if it sent none).
    """

    values: Any
    seed: int
    contract_version: Optional[int]

    def __array__(self, dtype: Any = None) -> np.ndarray:
        return np.asarray(self.values, dtype=dtype)


@dataclasses.dataclass
class Pmf:
    """A PMF on offset, offset + 1, ...: probabilities (or log-probabilities)."""

    offset: int
    probabilities: np.ndarray


def _is_float32(precision: Precision, *inputs: Any) -> bool:
    if precision is None:
        return any(isinstance(x, np.ndarray) and x.dtype == np.float32 for x in inputs)
    if precision in ("float32", "f32", np.float32):
        return True
    if precision in ("float64", "f64", np.float64):
        return False
    raise ValueError(f"precision must be 'float32' or 'float64', not {precision!r}")


def _precision_enum(float32: bool) -> int:
    return pb.PRECISION_FLOAT32 if float32 else pb.PRECISION_FLOAT64


def _space(name: str) -> int:
    spaces = {"linear": pb.PROBABILITY_SPACE_LINEAR, "log": pb.PROBABILITY_SPACE_LOG}
    if name not in spaces:
        raise ValueError(f"space must be 'linear' or 'log', not {name!r}")
    return spaces[name]


def _contract_version(call: Any) -> Optional[int]:
    for key, value in call.initial_metadata() or ():
        if key == CONTRACT_METADATA_KEY:
            return int(value)
    return None


class Client:
    """A connection to a sampler server.

    target: "host:port".
    token: a bearer token, sent on every call when the server asks for one.
    tls: use TLS; root_certificates (PEM bytes or a file path) to trust a
        private CA (None: the system's roots).
    timeout: the deadline of every call, in seconds.
    """

    def __init__(self, target: str = "localhost:50051", *, token: Optional[str] = None,
                 tls: bool = False, root_certificates: Union[bytes, str, None] = None,
                 timeout: float = 60.0) -> None:
        # Answers can be as large as the server's message limit: no cap here.
        options = [("grpc.max_receive_message_length", -1),
                   ("grpc.max_send_message_length", -1)]
        if tls:
            roots = root_certificates
            if isinstance(roots, str):
                with open(roots, "rb") as f:
                    roots = f.read()
            self._channel = grpc.secure_channel(
                target, grpc.ssl_channel_credentials(root_certificates=roots), options)
        else:
            self._channel = grpc.insecure_channel(target, options)
        self._stub = pb_grpc.SamplerServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._metadata: Tuple[Tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ())
        self._timeout = timeout

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------ plumbing --

    def _unary(self, method: Any, request: Any) -> Tuple[Any, Optional[int]]:
        response, call = method.with_call(request, timeout=self._timeout,
                                          metadata=self._metadata)
        return response, _contract_version(call)

    def _stream(self, method: Any, request: Any) -> Tuple[List[Any], Optional[int]]:
        call = method(request, timeout=self._timeout, metadata=self._metadata)
        pieces = list(call)
        return pieces, _contract_version(call)

    def _assembled(self, method: Any, request: Any, first: str, values_of: Any,
                   dtype: Any, seed: int) -> Tuple[np.ndarray, int, Optional[int]]:
        """A streamed answer's chunks, in order, as one array; its seed and
        contract version. `first` names the chunk's index field."""
        pieces, version = self._stream(method, request)
        pieces.sort(key=lambda p: getattr(p, first))
        parts = [values_of(p) for p in pieces]
        values = np.concatenate(parts) if parts else np.empty(0, dtype)
        return values, (pieces[0].seed if pieces else seed), version

    # ---------------------------------------------------------------- info --

    def info(self) -> dict:
        """GetServerInfo as a dict (backend, devices, limits, versions)."""
        response, _ = self._unary(self._stub.GetServerInfo, pb.GetServerInfoRequest())
        return json_format.MessageToDict(response, preserving_proto_field_name=True,
                                         including_default_value_fields=True)

    def health(self, service: str = "") -> str:
        """grpc.health.v1 status: "SERVING", "NOT_SERVING", ..."""
        response = self._health.Check(health_pb2.HealthCheckRequest(service=service),
                                      timeout=self._timeout, metadata=self._metadata)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    # --------------------------------------------------------------- gamma --

    def gamma(self, shape: ArrayLike, scale: Optional[ArrayLike] = None, *,
              size: Union[int, Sequence[int], None] = None, seed: Optional[int] = None,
              precision: Precision = None, log: bool = False, stream: bool = False,
              max_per_chunk: int = 0) -> Sample:
        """Gamma(shape, scale) variates.

        With `size`: shape and scale are scalars and `size` samples (an int
        or a tuple, the array's shape) share them. Without: one sample per
        element of `shape` (scale a scalar or of the same shape), shaped like
        it. `log=True` returns log-samples (for shapes far below 1).
        precision: "float32" or "float64"; by default float32 exactly when
        an input is a float32 array.
        """
        shape_a = np.asarray(shape)
        float32 = _is_float32(precision, shape, scale)
        request = pb.SampleGammaRequest(precision=_precision_enum(float32), log_output=log)
        if seed is not None:
            request.seed = seed
        if size is not None:
            if shape_a.ndim or (scale is not None and np.ndim(scale)):
                raise ValueError("with size, shape and scale must be scalars")
            out_shape = (size,) if np.ndim(size) == 0 else tuple(size)
            count = int(np.prod(out_shape))
            request.groups.groups.add(shape=float(shape_a), count=count,
                                      scale=1.0 if scale is None else float(scale))
        else:
            out_shape = shape_a.shape
            _wire.fill_reals(request.elements.shape, shape_a.ravel(), float32)
            if scale is not None:
                scale_a = np.broadcast_to(np.asarray(scale), shape_a.shape)
                _wire.fill_reals(request.elements.scale, scale_a.ravel(), float32)
        if stream:
            values, seed_used, version = self._assembled(
                self._stub.SampleGammaStream,
                pb.SampleGammaStreamRequest(request=request, max_samples_per_chunk=max_per_chunk),
                "first_sample", lambda p: _wire.read_reals(p.samples), np.float64, request.seed)
        else:
            response, version = self._unary(self._stub.SampleGamma, request)
            values, seed_used = _wire.read_reals(response.samples), response.seed
        return Sample(values.reshape(out_shape), seed_used, version)

    # ------------------------------------------------------------ Dirichlet --

    def dirichlet(self, alpha: Union[ArrayLike, Sequence[ArrayLike]], *,
                  seed: Optional[int] = None, precision: Precision = None,
                  log: bool = False) -> Sample:
        """Dirichlet vectors, one per row of `alpha`.

        alpha: a 2-D array (rows of equal length; values come back with its
        shape) or a list of 1-D arrays (ragged rows; values come back as a
        list of arrays). A 1-D array is one row.
        """
        rows: List[np.ndarray] = []
        matrix: Optional[np.ndarray] = None
        try:
            matrix = np.asarray(alpha)
            if matrix.dtype == object:
                matrix = None
        except ValueError:  # rows of different lengths
            matrix = None
        if matrix is None:
            rows = [np.asarray(r).ravel() for r in alpha]  # type: ignore[union-attr]
        ragged = matrix is None
        float32 = _is_float32(precision, matrix if not ragged else rows[0])
        request = pb.SampleDirichletRequest(precision=_precision_enum(float32), log_output=log)
        if seed is not None:
            request.seed = seed
        if ragged:
            request.row_lengths.extend(len(r) for r in rows)
            _wire.fill_reals(request.concentrations, np.concatenate(rows), float32)
        else:
            matrix = np.atleast_2d(matrix)
            if matrix.ndim != 2:
                raise ValueError("alpha must be 1-D, 2-D or a list of 1-D rows")
            request.dimension = matrix.shape[1]
            _wire.fill_reals(request.concentrations, matrix.ravel(), float32)
        response, version = self._unary(self._stub.SampleDirichlet, request)
        flat = _wire.read_reals(response.samples)
        if ragged:
            values: Any = np.split(flat, np.cumsum([len(r) for r in rows])[:-1])
        else:
            values = flat.reshape(matrix.shape)
            if np.ndim(alpha) == 1:
                values = values[0]
        return Sample(values, response.seed, version)

    # ---------------------------------------------------------- categorical --

    def categorical(self, weights: ArrayLike, *, draws: int = 1, logits: bool = False,
                    seed: Optional[int] = None, precision: Precision = None,
                    stream: bool = False, max_per_chunk: int = 0) -> Sample:
        """Draws from the categorical distribution of each row of `weights`.

        weights: (M, K) non-negative weights (or logits with logits=True); a
        1-D array is one row. values: (M, draws) int32 category indices
        ((draws,) for a 1-D input).
        """
        w = np.asarray(weights)
        matrix = np.atleast_2d(w)
        if matrix.ndim != 2:
            raise ValueError("weights must be 1-D or 2-D")
        float32 = _is_float32(precision, w)
        request = pb.SampleCategoricalRequest(
            categories=matrix.shape[1], draws=draws, precision=_precision_enum(float32),
            input=pb.CATEGORICAL_INPUT_LOGITS if logits else pb.CATEGORICAL_INPUT_WEIGHTS)
        if seed is not None:
            request.seed = seed
        _wire.fill_reals(request.values, matrix.ravel(), float32)
        if stream:
            indices, seed_used, version = self._assembled(
                self._stub.SampleCategoricalStream,
                pb.SampleCategoricalStreamRequest(request=request,
                                                  max_rows_per_chunk=max_per_chunk),
                "first_row", lambda p: np.array(p.indices, dtype=np.int32), np.int32,
                request.seed)
        else:
            response, version = self._unary(self._stub.SampleCategorical, request)
            indices, seed_used = np.array(response.indices, dtype=np.int32), response.seed
        values = indices.reshape(matrix.shape[0], max(draws, 1))
        return Sample(values[0] if w.ndim == 1 else values, seed_used, version)

    # --------------------------------------------------------------- boards --

    def boards(self, rows: int, cols: int, stones: Union[int, Sequence[int]],
               count: int = 1, *, seed: Optional[int] = None, stream: bool = False,
               max_per_chunk: int = 0) -> Sample:
        """Random positions: `stones` stones of each colour on a rows x cols grid.

        values: (count, colours, words_per_board) uint64 bitboards (site
        r * cols + c is bit s % 64 of word s // 64); `unpack_boards` turns
        them into (count, colours, rows, cols) booleans.
        """
        stones_list = [stones] if np.ndim(stones) == 0 else list(stones)
        request = pb.SampleBoardsRequest(rows=rows, cols=cols, stones=stones_list, count=count)
        if seed is not None:
            request.seed = seed
        if stream:
            words, seed_used, version = self._assembled(
                self._stub.SampleBoardsStream,
                pb.SampleBoardsStreamRequest(request=request,
                                             max_positions_per_chunk=max_per_chunk),
                "first_position", lambda p: np.array(p.bitboards, dtype=np.uint64), np.uint64,
                request.seed)
        else:
            response, version = self._unary(self._stub.SampleBoards, request)
            words, seed_used = np.array(response.bitboards, dtype=np.uint64), response.seed
        per_board = (rows * cols + 63) // 64
        return Sample(words.reshape(count, len(stones_list), per_board), seed_used, version)

    # ------------------------------------------------------------ enumerate --

    def enumerate(self, problems: Iterable[Iterable[Union[Pmf, ArrayLike]]], *,
                  precision: Precision = None, input_space: str = "linear",
                  output_space: str = "linear", packed: bool = False) -> List[Pmf]:
        """The PMF of the sum of each problem's independent terms.

        A term is a Pmf or an array of probabilities (offset 0). Deterministic.
        `packed` sends each problem's terms end to end in one array (the
        request's packed form: the same answer, far cheaper for many short
        terms; needs a server that knows the form).
        """
        problems = [[t if isinstance(t, Pmf) else Pmf(0, np.asarray(t)) for t in p]
                    for p in problems]
        float32 = _is_float32(precision, *(t.probabilities for p in problems for t in p))
        request = pb.EnumerateRequest(precision=_precision_enum(float32),
                                      input_space=_space(input_space),
                                      output_space=_space(output_space))
        for problem in problems:
            message = request.problems.add()
            if packed:
                arrays = [np.asarray(t.probabilities).ravel() for t in problem]
                lengths = [len(a) for a in arrays]
                _wire.fill_reals(message.values,
                                 np.concatenate(arrays) if arrays else np.zeros(0), float32)
                if len(set(lengths)) == 1:
                    message.term_length = lengths[0]
                else:
                    message.lengths.extend(lengths)
                if any(int(t.offset) for t in problem):
                    message.offsets.extend(int(t.offset) for t in problem)
                continue
            for term in problem:
                pmf = message.terms.add(offset=int(term.offset))
                _wire.fill_reals(pmf.probabilities, np.asarray(term.probabilities).ravel(),
                                 float32)
        response, _ = self._unary(self._stub.Enumerate, request)
        return [Pmf(r.offset, _wire.read_reals(r.probabilities)) for r in response.results]


def unpack_boards(bitboards: ArrayLike, rows: int, cols: int) -> np.ndarray:
    """(count, colours, words) uint64 bitboards as (count, colours, rows, cols) bools."""
    words = np.asarray(bitboards, dtype=np.uint64)
    bits = np.unpackbits(words.astype("<u8").view(np.uint8), axis=-1, bitorder="little")
    return bits[..., :rows * cols].reshape(*words.shape[:-1], rows, cols).astype(bool)
