#!/usr/bin/env bash
# Runs one client command against a live sampler-server on loopback.
#
#   run_with_server.sh SERVER_BINARY COMMAND [ARG...]
#
# Starts SERVER_BINARY on 127.0.0.1 with a port the kernel picks and no
# metrics endpoint, reads the port from its "serving on port N" line, runs
# COMMAND with every argument @TARGET@ replaced by 127.0.0.1:N, then stops the
# server with SIGTERM. Exits 0 only when the command exited 0 and the server
# then exited 0 by itself. Every wait is bounded, so it never hangs:
#   SAMPLER_START_TIMEOUT   seconds for the server to start listening (30)
#   SAMPLER_CLIENT_TIMEOUT  seconds the command may run (120)
#   SAMPLER_STOP_TIMEOUT    seconds for the server to exit after SIGTERM (30)
set -u

if [ $# -lt 2 ]; then
  echo "usage: $0 SERVER_BINARY COMMAND [ARG...]" >&2
  exit 2
fi
server=$1
shift
start_timeout=${SAMPLER_START_TIMEOUT:-30}
client_timeout=${SAMPLER_CLIENT_TIMEOUT:-120}
stop_timeout=${SAMPLER_STOP_TIMEOUT:-30}

log=$(mktemp "${TMPDIR:-/tmp}/sampler-server.XXXXXX.log")
server_pid=""

# On any exit: never leave the server running, and drop the log.
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  rm -f "$log"
}
trap cleanup EXIT

fail() {
  echo "run_with_server: FAIL: $*" >&2
  echo "---- server log ----" >&2
  cat "$log" >&2
  exit 1
}

# exec in a subshell: $! is then the server itself, never a bash wrapper
# (which SIGTERM would kill instead of the server).
( exec "$server" --listen 127.0.0.1:0 --metrics_listen "" 2>"$log" ) &
server_pid=$!

# Wait for the port, polling ten times a second.
port=""
for ((i = 0; i < start_timeout * 10; i++)); do
  port=$(sed -n 's/.*serving on port \([0-9][0-9]*\).*/\1/p' "$log" | head -n 1)
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || fail "server exited before serving"
  sleep 0.1
done
[ -n "$port" ] || fail "server not serving after ${start_timeout}s"
target="127.0.0.1:$port"
echo "run_with_server: server pid $server_pid serving on $target"

# The command, with @TARGET@ replaced, under a hard time limit.
args=("${@//@TARGET@/$target}")
echo "run_with_server: running ${args[*]}"
timeout --kill-after=5 "$client_timeout" "${args[@]}"
client_rc=$?
if [ "$client_rc" -eq 124 ] || [ "$client_rc" -eq 137 ]; then
  fail "command timed out after ${client_timeout}s"
fi

# Graceful stop: SIGTERM, then the server must exit 0 in time.
kill -TERM "$server_pid" 2>/dev/null || fail "server died while the command ran"
for ((i = 0; i < stop_timeout * 10; i++)); do
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$server_pid" 2>/dev/null; then
  fail "server still running ${stop_timeout}s after SIGTERM"
fi
wait "$server_pid"
server_rc=$?
server_pid=""

[ "$client_rc" -eq 0 ] || fail "command exited with status $client_rc"
[ "$server_rc" -eq 0 ] ||
  fail "server exited with status $server_rc after SIGTERM"
echo "run_with_server: command and server both exited 0"
