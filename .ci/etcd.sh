#!/usr/bin/env bash
# Makes a throwaway etcd available for the lease tests and prints `ETCD_ENDPOINTS=...` as its last line:
#
#   export $(bash .ci/etcd.sh | tail -1)
#
# Idempotent: installs Debian's etcd-server only when `etcd` is missing, and reuses an etcd this script
# started earlier if it still answers. Every wait is bounded. Progress goes to stderr, the result to stdout.
# The etcd runs in the background (detached, its own session) until killed: its pid and data dir are
# recorded in $STATE_DIR/etcd.env; `bash .ci/etcd.sh stop` ends it.
set -euo pipefail

STATE_DIR="${DOYEN_ETCD_STATE_DIR:-${TMPDIR:-/tmp}/doyen-etcd}"
STATE_FILE="$STATE_DIR/etcd.env"

log() { echo "etcd.sh: $*" >&2; }

healthy() { # $1 = client URL
  curl -fsS --max-time 2 "$1/health" 2>/dev/null | grep -q '"health":"true"'
}

port_free() { # $1 = port on 127.0.0.1
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

pick_port() { # $1 = first candidate
  local p=$1
  for _ in $(seq 1 200); do
    if port_free "$p"; then
      echo "$p"
      return 0
    fi
    p=$((p + 1))
  done
  log "no free port from $1 on"
  return 1
}

stop_recorded() {
  [ -f "$STATE_FILE" ] || return 0
  # shellcheck disable=SC1090
  . "$STATE_FILE"
  if [ -n "${ETCD_PID:-}" ] && kill -0 "$ETCD_PID" 2>/dev/null; then
    kill "$ETCD_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$ETCD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$ETCD_PID" 2>/dev/null || true
  fi
  [ -n "${ETCD_DATA_DIR:-}" ] && rm -rf "$ETCD_DATA_DIR"
  rm -f "$STATE_FILE"
}

if [ "${1:-}" = "stop" ]; then
  stop_recorded
  log "stopped"
  exit 0
fi

# 1. the binary (and curl, used for the health check)
need=()
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v curl >/dev/null 2>&1 || need+=(curl)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    log "missing ${need[*]} and not root: install them (apt-get install ${need[*]}) and rerun"
    exit 1
  fi
  log "installing ${need[*]} from Debian"
  timeout 300 apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
  # The package may start its own etcd service on the default ports where an init system exists;
  # we never use it, and on this machine there is none.
fi
ETCD_BIN="$(command -v etcd)"

# 2. reuse a running one of ours
if [ -f "$STATE_FILE" ]; then
  # shellcheck disable=SC1090
  . "$STATE_FILE"
  if [ -n "${ETCD_PID:-}" ] && kill -0 "$ETCD_PID" 2>/dev/null && healthy "$ETCD_URL"; then
    log "reusing etcd pid $ETCD_PID at $ETCD_URL"
    echo "ETCD_ENDPOINTS=$ETCD_URL"
    exit 0
  fi
  stop_recorded
fi

# 3. start a fresh one
mkdir -p "$STATE_DIR"
CLIENT_PORT="$(pick_port "${DOYEN_ETCD_CLIENT_PORT:-23790}")"
PEER_PORT="$(pick_port $((CLIENT_PORT + 10)))"
DATA_DIR="$(mktemp -d "${TMPDIR:-/tmp}/doyen-etcd-data.XXXXXX")"
URL="http://127.0.0.1:$CLIENT_PORT"
PEER_URL="http://127.0.0.1:$PEER_PORT"
LOG_FILE="$STATE_DIR/etcd.log"

log "starting $("$ETCD_BIN" --version 2>/dev/null | head -1) at $URL (data $DATA_DIR, log $LOG_FILE)"
# etcd refuses to start on architectures other than amd64/arm64 unless told it may.
arch="$(uname -m)"
if [ "$arch" != x86_64 ] && [ "$arch" != aarch64 ]; then
  export ETCD_UNSUPPORTED_ARCH="${ETCD_UNSUPPORTED_ARCH:-$(dpkg --print-architecture 2>/dev/null || echo "$arch")}"
fi
setsid "$ETCD_BIN" \
  --name doyen-test \
  --data-dir "$DATA_DIR" \
  --listen-client-urls "$URL" \
  --advertise-client-urls "$URL" \
  --listen-peer-urls "$PEER_URL" \
  --initial-advertise-peer-urls "$PEER_URL" \
  --initial-cluster "doyen-test=$PEER_URL" \
  --initial-cluster-state new \
  --initial-cluster-token "doyen-test-$$" \
  --logger zap \
  --log-level warn \
  </dev/null >"$LOG_FILE" 2>&1 &
PID=$!
printf 'ETCD_PID=%s\nETCD_URL=%s\nETCD_DATA_DIR=%s\n' "$PID" "$URL" "$DATA_DIR" >"$STATE_FILE"

for _ in $(seq 1 100); do # at most ~20 s
  if ! kill -0 "$PID" 2>/dev/null; then
    log "etcd exited during start; its log:"
    tail -20 "$LOG_FILE" >&2 || true
    stop_recorded
    exit 1
  fi
  if healthy "$URL"; then
    if command -v etcdctl >/dev/null 2>&1; then
      ETCDCTL_API=3 timeout 10 etcdctl --endpoints="$URL" --dial-timeout=2s endpoint health >&2 || true
    fi
    log "etcd pid $PID healthy"
    echo "ETCD_ENDPOINTS=$URL"
    exit 0
  fi
  sleep 0.2
done

log "etcd did not become healthy within 20 s; its log:"
tail -20 "$LOG_FILE" >&2 || true
stop_recorded
exit 1
