# sampler-server in a container: a CUDA 13 development image builds, a CUDA
# runtime image runs. From the repository root:
#
#   docker build -t sampler:0.1.0 .
#   docker build --build-arg CUDA_ARCHITECTURES="80;90" -t sampler:0.1.0 .
#   docker run --gpus all -p 50051:50051 -p 9464:9464 sampler:0.1.0
#   docker run -p 50051:50051 -e SAMPLER_BACKEND=cpu sampler:0.1.0     (no GPU)
#
# Flags: from SAMPLER_* environment variables or as the command
# (deploy/docker/entrypoint.sh lists them); deploy/docker-compose.yml runs it
# with Prometheus and Grafana. README.md, "Deploy", says more.
#
# Reproducible: the base images are pinned by tag, and nothing is downloaded
# except Ubuntu packages through apt. To pin the bases by digest as well,
# resolve each tag once and pass it with its digest:
#   docker buildx imagetools inspect nvidia/cuda:13.0.1-devel-ubuntu24.04
#   docker build --build-arg CUDA_DEVEL_IMAGE=nvidia/cuda:13.0.1-devel-ubuntu24.04@sha256:<digest> \
#                --build-arg CUDA_RUNTIME_IMAGE=nvidia/cuda:13.0.1-runtime-ubuntu24.04@sha256:<digest> .
# (or write the @sha256:... forms into the two ARG lines below).
ARG CUDA_DEVEL_IMAGE=nvidia/cuda:13.0.1-devel-ubuntu24.04
ARG CUDA_RUNTIME_IMAGE=nvidia/cuda:13.0.1-runtime-ubuntu24.04

# ---------------------------------------------------------------- build --
FROM ${CUDA_DEVEL_IMAGE} AS build

# GPU architectures to compile for (CMake's CUDA_ARCHITECTURES syntax):
# 90 = H100/H200; "80;90" adds A100.
ARG CUDA_ARCHITECTURES=90
ARG DEBIAN_FRONTEND=noninteractive

# The build packages of tools/deps.sh (its test-only packages left out);
# python3 and grpc_python_plugin (protobuf-compiler-grpc) because configuring
# the project generates the Python example stubs.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libabsl-dev prometheus-cpp-dev librandom123-dev \
      python3 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .

RUN cmake -S . -B /build -G Ninja \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSAMPLER_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}" \
      -DBUILD_TESTING=OFF \
 && cmake --build /build --target sampler-server samplerctl sampler-loadgen \
 && install -d /out/bin \
 && install -m 0755 -s /build/server/sampler-server /build/client/samplerctl \
      /build/client/sampler-loadgen /out/bin/ \
 && install -m 0755 deploy/docker/entrypoint.sh /out/bin/sampler-entrypoint \
 && sh deploy/docker/runtime-packages.sh /out/bin/sampler-server \
      /out/bin/samplerctl /out/bin/sampler-loadgen > /out/runtime-packages.txt \
 && echo "runtime packages:" $(cat /out/runtime-packages.txt)

# -------------------------------------------------------------- runtime --
FROM ${CUDA_RUNTIME_IMAGE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive

# Only the shared libraries the binaries load: the packages that
# runtime-packages.sh found for them in the build stage (same Ubuntu release).
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && apt-get install -y --no-install-recommends $(cat /tmp/runtime-packages.txt) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt

RUN groupadd --system --gid 10001 sampler \
 && useradd --system --uid 10001 --gid 10001 --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin sampler

COPY --from=build /out/bin/ /usr/local/bin/

# The server's defaults, spelled out: the HEALTHCHECK reads the gRPC port
# from SAMPLER_LISTEN.
ENV SAMPLER_LISTEN=0.0.0.0:50051 \
    SAMPLER_METRICS_LISTEN=0.0.0.0:9464

USER 10001:10001
# gRPC (sampler.v1.SamplerService, grpc.health.v1.Health, reflection)
EXPOSE 50051
# Prometheus /metrics
EXPOSE 9464

# Through the standard gRPC health service; 0 when SERVING, 1 otherwise
# (also while draining after SIGTERM).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD samplerctl health --target "127.0.0.1:${SAMPLER_LISTEN##*:}" --timeout 3s || exit 1

STOPSIGNAL SIGTERM
ENTRYPOINT ["sampler-entrypoint"]
CMD []
