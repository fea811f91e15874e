#!/bin/sh
# sampler-entrypoint: the container's entry point.
#
# Starts sampler-server with a flag for every SAMPLER_* variable that is set
# (even to the empty string: SAMPLER_METRICS_LISTEN= turns metrics off),
# followed by the container's command line, so that a flag given as a command
# wins over the environment:
#
#   docker run -e SAMPLER_BACKEND=cpu -e SAMPLER_MAX_BATCH_DELAY=1ms IMAGE
#   docker run IMAGE --backend=cpu --max_batch_delay=1ms        (the same)
#
# A command that does not start with "-" runs instead of the server
# (docker run IMAGE samplerctl info, docker run -it IMAGE sh).
#
# Variables, one per sampler-server flag (sampler-server --help says more):
#   SAMPLER_LISTEN                --listen            (image: 0.0.0.0:50051;
#                                 the HEALTHCHECK probes this variable's port)
#   SAMPLER_METRICS_LISTEN        --metrics_listen    (image: 0.0.0.0:9464)
#   SAMPLER_BACKEND               --backend           auto, cpu or cuda
#   SAMPLER_MAX_BATCH_ITEMS       --max_batch_items
#   SAMPLER_MAX_BATCH_DELAY       --max_batch_delay
#   SAMPLER_CLOSE_BATCH_WHEN_IDLE --close_batch_when_idle  true or false
#   SAMPLER_RUN_SMALL_BATCHES_INLINE --run_small_batches_inline  true or false
#   SAMPLER_MAX_QUEUED_ITEMS      --max_queued_items
#   SAMPLER_MAX_ITEMS_PER_REQUEST --max_items_per_request
#   SAMPLER_MAX_ITEMS_PER_STREAM  --max_items_per_stream
#   SAMPLER_MAX_ENUMERATE_PAIRS   --max_enumerate_pairs
#   SAMPLER_MAX_ENUMERATE_TERMS   --max_enumerate_terms
#   SAMPLER_MAX_MESSAGE_BYTES     --max_message_bytes
#   SAMPLER_WORKER_THREADS        --worker_threads
#   SAMPLER_ANSWER_CACHE_BYTES    --answer_cache_bytes  0: every answer on the heap
#   SAMPLER_GPUS                  --gpus              e.g. 0,2 (empty: all)
#   SAMPLER_STREAMS_PER_GPU       --streams_per_gpu
#   SAMPLER_GPU_POOL_LIMIT_BYTES  --gpu_pool_limit_bytes
#   SAMPLER_GPU_POOL_RELEASE_THRESHOLD_BYTES --gpu_pool_release_threshold_bytes
#   SAMPLER_CPU_BELOW_ITEMS       --cpu_below_items   0: off
#   SAMPLER_GPU_WAIT              --gpu_wait          auto, spin, yield or block
#   SAMPLER_GPU_INLINE_BELOW_ITEMS --gpu_inline_below_items  0: off
#   SAMPLER_GPU_INLINE            --gpu_inline        auto, always or never
#   SAMPLER_GPU_EAGER_BATCHES     --gpu_eager_batches
#   SAMPLER_DRAIN_DELAY           --drain_delay
#   SAMPLER_SHUTDOWN_GRACE        --shutdown_grace
#   SAMPLER_MAX_CONCURRENT_STREAMS --max_concurrent_streams  per connection
#   SAMPLER_MEMORY_QUOTA_BYTES    --memory_quota_bytes
#   SAMPLER_MAX_CONNECTION_AGE    --max_connection_age
#   SAMPLER_MAX_CONNECTION_AGE_GRACE --max_connection_age_grace
#   SAMPLER_HANDSHAKE_TIMEOUT     --handshake_timeout
#   SAMPLER_STREAM_STALL_TIMEOUT  --stream_stall_timeout  0: never
#   SAMPLER_ACCESS_LOG            --access_log        a file, or - for stderr
#   SAMPLER_TLS_CERT_FILE         --tls_cert_file     PEM chain; with the key: TLS
#   SAMPLER_TLS_KEY_FILE          --tls_key_file
#   SAMPLER_TLS_CLIENT_CA_FILE    --tls_client_ca_file  mutual TLS
#   SAMPLER_AUTH_TOKEN_FILE       --auth_token_file   bearer tokens, one per line
#   SAMPLER_REFLECTION            --reflection        true or false
# (The *_FILE variables name files, e.g. a mounted secret: the certificate,
# key and tokens themselves never go through the environment.)
#
# The server is exec'ed: it is the container's main process and receives
# SIGTERM from `docker stop` or the kubelet directly (it drains, then exits 0).
set -eu

if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  exec "$@"
fi

# Prepending keeps the command line's flags last; the last value of a flag
# is the one sampler-server uses.
for name in LISTEN METRICS_LISTEN BACKEND MAX_BATCH_ITEMS MAX_BATCH_DELAY \
    CLOSE_BATCH_WHEN_IDLE RUN_SMALL_BATCHES_INLINE MAX_QUEUED_ITEMS MAX_ITEMS_PER_REQUEST MAX_ITEMS_PER_STREAM \
    MAX_ENUMERATE_PAIRS MAX_ENUMERATE_TERMS MAX_MESSAGE_BYTES WORKER_THREADS \
    ANSWER_CACHE_BYTES GPUS \
    STREAMS_PER_GPU GPU_POOL_LIMIT_BYTES GPU_POOL_RELEASE_THRESHOLD_BYTES CPU_BELOW_ITEMS GPU_WAIT \
    GPU_INLINE_BELOW_ITEMS GPU_INLINE GPU_EAGER_BATCHES \
    DRAIN_DELAY SHUTDOWN_GRACE TLS_CERT_FILE TLS_KEY_FILE TLS_CLIENT_CA_FILE \
    AUTH_TOKEN_FILE REFLECTION MAX_CONCURRENT_STREAMS MEMORY_QUOTA_BYTES \
    MAX_CONNECTION_AGE MAX_CONNECTION_AGE_GRACE HANDSHAKE_TIMEOUT \
    STREAM_STALL_TIMEOUT ACCESS_LOG; do
  eval "set_=\${SAMPLER_$name+yes}"
  if [ "$set_" = yes ]; then
    eval "value=\$SAMPLER_$name"
    flag=$(echo "$name" | tr 'A-Z' 'a-z')
    set -- "--$flag=$value" "$@"
  fi
done

# SAMPLER_SERVER_BIN: another server binary (the tests use the build tree's).
exec "${SAMPLER_SERVER_BIN:-sampler-server}" "$@"
