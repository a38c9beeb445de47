#!/usr/bin/env bash
# Makes Debian's Chromium available for the inspector's browser test (test/inspector/browser.test.ts,
# driven by playwright-core with executablePath /usr/bin/chromium) and prints `CHROMIUM=/usr/bin/chromium`
# as its last line.
#
#   bash .ci/chromium.sh
#
# Idempotent: installs the `chromium` package (and DejaVu fonts, for readable screenshots) with apt-get
# only when /usr/bin/chromium is missing or does not run. Every wait is bounded. Progress goes to stderr.
set -euo pipefail

BIN=/usr/bin/chromium

log() { echo "chromium.sh: $*" >&2; }

works() {
  [ -x "$BIN" ] && timeout 60 "$BIN" --version >/dev/null 2>&1
}

if ! works; then
  if [ "$(id -u)" -ne 0 ]; then
    log "no working $BIN and not root: install it (apt-get install chromium) and rerun"
    exit 1
  fi
  log "installing Debian's chromium"
  timeout 300 apt-get update -qq >&2
  # with its recommends (fonts-liberation, mesa): the configuration the browser test was verified with
  DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq chromium fonts-dejavu-core >&2
  if ! works; then
    log "$BIN still does not run after installing chromium"
    exit 1
  fi
fi

log "$(timeout 60 "$BIN" --version 2>/dev/null | head -1)"
echo "CHROMIUM=$BIN"
