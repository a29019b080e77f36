#!/bin/sh
# Installs Debian's chromium for the dashboard's browser test
# (internal/dashboard), idempotently: nothing happens when it is there. A
# fresh machine's package lists may be empty or old: update them and retry
# once when the first install fails.
set -e
if command -v chromium >/dev/null; then
  exit 0
fi
apt_() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"; }
apt_ install -y --no-install-recommends chromium || { apt_ update && apt_ install -y --no-install-recommends chromium; }
command -v chromium
