"""sampler_client against live sampler-servers on loopback (CPU backend).

SAMPLER_SERVER names the server binary. Each class starts its own server on
a port the kernel picks (read from its "serving on port N" line) and stops
it with SIGTERM; every wait is bounded.
"""

import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

import grpc
import numpy as np

import sampler_client
from sampler_client import Client, Pmf, unpack_boards

SERVER = os.environ.get("SAMPLER_SERVER", "sampler-server")
START_TIMEOUT_S = 30


class Server:
    def __init__(self, *flags: str) -> None:
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log")
        self.process = subprocess.Popen(
            [SERVER, "--listen", "127.0.0.1:0", "--metrics_listen", "", "--backend", "cpu",
             *flags], stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            self.log.seek(0)
            found = re.search(r"serving on port (\d+)", self.log.read())
            if found:
                self.target = f"127.0.0.1:{found.group(1)}"
                return
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                self.log.seek(0)
                raise RuntimeError(f"server did not start:\n{self.log.read()}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server()
        cls.client = Client(cls.server.target, timeout=60)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.server.stop()

    def test_info_and_health(self) -> None:
        info = self.client.info()
        self.assertEqual(info["backend"], "BACKEND_CPU")
        self.assertGreaterEqual(info["randomness_contract_version"], 1)
        self.assertEqual(self.client.health(), "SERVING")

    def test_gamma_grouped_replays_and_reports_seed_and_contract(self) -> None:
        a = self.client.gamma(shape=2.5, size=(50, 40), seed=42)
        b = self.client.gamma(shape=2.5, size=(50, 40), seed=42)
        self.assertEqual(a.values.shape, (50, 40))
        self.assertEqual(a.values.dtype, np.float64)
        np.testing.assert_array_equal(a.values, b.values)
        self.assertEqual(a.seed, 42)
        self.assertEqual(a.contract_version,
                         self.client.info()["randomness_contract_version"])
        # Mean 2.5, standard deviation of the mean sqrt(2.5 / 2000) ~ 0.035.
        self.assertAlmostEqual(float(a.values.mean()), 2.5, delta=0.25)
        self.assertTrue(np.all(a.values > 0))

    def test_server_picked_seed_replays(self) -> None:
        a = self.client.gamma(shape=1.0, size=100)
        b = self.client.gamma(shape=1.0, size=100, seed=a.seed)
        np.testing.assert_array_equal(a.values, b.values)

    def test_seed_zero_is_a_seed_like_any_other(self) -> None:
        a = self.client.gamma(shape=1.0, size=10, seed=0)
        b = self.client.gamma(shape=1.0, size=10, seed=0)
        c = self.client.gamma(shape=1.0, size=10, seed=1)
        self.assertEqual(a.seed, 0)
        np.testing.assert_array_equal(a.values, b.values)
        self.assertFalse(np.array_equal(a.values, c.values))

    def test_gamma_elements_float32_keeps_shape_and_precision(self) -> None:
        shape = np.array([[0.5, 1.0, 4.0], [2.0, 8.0, 16.0]], dtype=np.float32)
        s = self.client.gamma(shape, scale=2.0, seed=3)
        self.assertEqual(s.values.shape, (2, 3))
        self.assertEqual(s.values.dtype, np.float32)
        unit = self.client.gamma(shape, seed=3)
        # Scale multiplies each sample: same seed, same draws, times 2.
        np.testing.assert_allclose(s.values, 2 * unit.values, rtol=1e-6)

    def test_gamma_stream_equals_unary_bit_for_bit(self) -> None:
        unary = self.client.gamma(shape=0.7, size=10_000, seed=9, precision="float32")
        streamed = self.client.gamma(shape=0.7, size=10_000, seed=9, precision="float32",
                                     stream=True, max_per_chunk=777)
        np.testing.assert_array_equal(unary.values, streamed.values)
        self.assertEqual(streamed.seed, 9)
        self.assertIsNotNone(streamed.contract_version)

    def test_categorical_rows_draws_and_stream(self) -> None:
        weights = np.array([[1, 2, 3, 0], [0, 5, 5, 0], [0, 0, 0, 1]], dtype=np.float64)
        s = self.client.categorical(weights, draws=50, seed=5)
        self.assertEqual(s.values.shape, (3, 50))
        self.assertEqual(s.values.dtype, np.int32)
        self.assertTrue(np.all(s.values[0] != 3))
        self.assertTrue(np.all(np.isin(s.values[1], [1, 2])))
        self.assertTrue(np.all(s.values[2] == 3))
        streamed = self.client.categorical(weights, draws=50, seed=5, stream=True,
                                           max_per_chunk=1)
        np.testing.assert_array_equal(s.values, streamed.values)
        one_row = self.client.categorical([1.0, 1.0], draws=4, seed=5)
        self.assertEqual(one_row.values.shape, (4,))

    def test_dirichlet_equal_and_ragged_rows(self) -> None:
        s = self.client.dirichlet(np.full((4, 3), 0.5), seed=11)
        self.assertEqual(s.values.shape, (4, 3))
        np.testing.assert_allclose(s.values.sum(axis=1), 1.0, rtol=1e-12)
        ragged = self.client.dirichlet([[1.0, 1.0], [1.0, 2.0, 3.0]], seed=11)
        self.assertEqual([len(r) for r in ragged.values], [2, 3])
        for row in ragged.values:
            self.assertAlmostEqual(float(row.sum()), 1.0, places=12)

    def test_boards_place_the_stones_asked_for(self) -> None:
        s = self.client.boards(9, 9, [10, 7], count=20, seed=2)
        self.assertEqual(s.values.shape, (20, 2, 2))
        grid = unpack_boards(s.values, 9, 9)
        self.assertEqual(grid.shape, (20, 2, 9, 9))
        np.testing.assert_array_equal(grid[:, 0].sum(axis=(1, 2)), 10)
        np.testing.assert_array_equal(grid[:, 1].sum(axis=(1, 2)), 7)
        self.assertFalse(np.any(grid[:, 0] & grid[:, 1]))
        streamed = self.client.boards(9, 9, [10, 7], count=20, seed=2, stream=True,
                                      max_per_chunk=3)
        np.testing.assert_array_equal(s.values, streamed.values)

    def test_enumerate_two_dice_exactly(self) -> None:
        die = np.full(6, 1 / 6)
        (total,) = self.client.enumerate([[Pmf(1, die), Pmf(1, die)]])
        self.assertEqual(total.offset, 2)
        expected = np.array([1, 2, 3, 4, 5, 6, 5, 4, 3, 2, 1]) / 36
        np.testing.assert_allclose(total.probabilities, expected, rtol=1e-12)

    def test_enumerate_packed_answers_the_same(self) -> None:
        rng = np.random.default_rng(15)
        problems = [[Pmf(int(rng.integers(-3, 4)), rng.random(int(rng.integers(1, 6))))
                     for _ in range(5)] for _ in range(3)]
        problems.append([rng.random(2) for _ in range(50)])  # equal lengths
        explicit = self.client.enumerate(problems, output_space="log")
        packed = self.client.enumerate(problems, output_space="log", packed=True)
        for a, b in zip(explicit, packed):
            self.assertEqual(a.offset, b.offset)
            np.testing.assert_array_equal(a.probabilities, b.probabilities)

    def test_bad_request_is_invalid_argument_naming_the_field(self) -> None:
        with self.assertRaises(grpc.RpcError) as raised:
            self.client.gamma(np.array([1.0, -1.0]))
        self.assertEqual(raised.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("shape", raised.exception.details())


class TokenTest(unittest.TestCase):
    def test_token_is_sent(self) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".tokens") as tokens:
            tokens.write("s3cret\n")
            tokens.flush()
            server = Server("--auth_token_file", tokens.name)
            try:
                with Client(server.target, token="s3cret") as good:
                    self.assertEqual(good.gamma(shape=1.0, size=3, seed=1).values.shape, (3,))
                with Client(server.target) as anonymous:
                    with self.assertRaises(grpc.RpcError) as raised:
                        anonymous.gamma(shape=1.0, size=3, seed=1)
                    self.assertEqual(raised.exception.code(),
                                     grpc.StatusCode.UNAUTHENTICATED)
            finally:
                server.stop()


class WireTest(unittest.TestCase):
    """The packed fast path against the generated message's own encoding."""

    def test_packed_round_trip_matches_protobuf(self) -> None:
        from sampler_client import _wire
        from sampler_client._gen.sampler.v1 import sampler_pb2 as pb
        for values in (np.array([]), np.array([1.5]), np.random.default_rng(1).random(300)):
            for float32 in (True, False):
                ours = pb.Reals()
                _wire.fill_reals(ours, values, float32)
                theirs = pb.Reals()
                target = theirs.f32 if float32 else theirs.f64
                target.values.extend(values.tolist())
                target.SetInParent()
                self.assertEqual(ours.SerializeToString(), theirs.SerializeToString())
                back = _wire.read_reals(theirs)
                np.testing.assert_array_equal(back, values.astype(np.float32 if float32
                                                                  else np.float64))

    def test_package_exports(self) -> None:
        self.assertTrue(hasattr(sampler_client, "Client"))
        self.assertEqual(sampler_client.CONTRACT_METADATA_KEY, "sampler-contract-version")


if __name__ == "__main__":
    unittest.main()
