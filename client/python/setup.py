"""Builds the sampler_client package, generating its gRPC stubs on the way.

The stubs are not committed: build_py runs protoc with grpc_python_plugin on
the project's .proto files (proto/ at the top of the repository, or the
folder in $SAMPLER_PROTO_DIR) and writes them into the built package under
sampler_client/_gen/, with their imports rewritten to stay inside it (so the
package never installs a top-level `sampler` or `grpc` module of its own).

Which protoc: the system `protoc` (Debian: protobuf-compiler) with
`grpc_python_plugin` (Debian: protobuf-compiler-grpc), or any protoc of 3.15
or later (the API uses proto3 `optional`): set $PROTOC and
$GRPC_PYTHON_PLUGIN to choose. Debian 12's python3-grpc-tools (1.14) is too
old for proto3 `optional` and is not used.
"""

import os
import pathlib
import re
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent
PROTOS = ["sampler/v1/sampler.proto", "grpc/health/v1/health.proto"]
# Top-level proto packages whose generated imports move into _gen.
REWRITTEN = ("sampler", "grpc.health")


def proto_dir() -> pathlib.Path:
    candidates = [os.environ.get("SAMPLER_PROTO_DIR"), HERE.parent.parent / "proto"]
    for c in candidates:
        if c and (pathlib.Path(c) / PROTOS[0]).is_file():
            return pathlib.Path(c)
    raise SystemExit(
        "sampler-client: cannot find proto/sampler/v1/sampler.proto; build "
        "from the repository (pip install ./client/python) or set "
        "SAMPLER_PROTO_DIR to the folder that holds sampler/v1/sampler.proto")


def tool(env: str, name: str, package: str) -> str:
    path = os.environ.get(env) or shutil.which(name)
    if not path:
        raise SystemExit(
            f"sampler-client: {name} not found (Debian: apt-get install "
            f"{package}; or set ${env})")
    return path


def rewrite_imports(path: pathlib.Path) -> None:
    text = path.read_text()
    for pkg in REWRITTEN:
        text = re.sub(rf"^from {re.escape(pkg)}\.", f"from sampler_client._gen.{pkg}.",
                      text, flags=re.M)
    path.write_text(text)


def generate(out_root: pathlib.Path) -> None:
    gen = out_root / "sampler_client" / "_gen"
    if gen.exists():
        shutil.rmtree(gen)
    gen.mkdir(parents=True)
    protoc = tool("PROTOC", "protoc", "protobuf-compiler")
    plugin = tool("GRPC_PYTHON_PLUGIN", "grpc_python_plugin", "protobuf-compiler-grpc")
    src = proto_dir()
    subprocess.run(
        [protoc, f"--proto_path={src}", f"--python_out={gen}", f"--grpc_python_out={gen}",
         f"--plugin=protoc-gen-grpc_python={plugin}", *PROTOS],
        check=True)
    for folder in [gen, *(p for p in gen.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    for py in gen.rglob("*_pb2*.py"):
        rewrite_imports(py)


class BuildPyWithStubs(build_py):
    def run(self) -> None:
        super().run()
        generate(pathlib.Path(self.build_lib))


setup(cmdclass={"build_py": BuildPyWithStubs})
