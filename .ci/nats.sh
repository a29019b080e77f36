#!/usr/bin/env bash
# Makes sure Debian's nats-server package is installed (nats-server on
# PATH) for cmd/weir's NATS end-to-end test, which starts its own server
# with JetStream on a free port and its own storage folder. The package's
# own service is not wanted: it is kept from starting during the install,
# and stopped if an earlier install left it running. Idempotent: a second
# run changes nothing. Run as root on Debian (bookworm ships nats-server
# 2.9, which has JetStream but no atomic batch publish).
set -euo pipefail

if ! command -v nats-server >/dev/null; then
  echo "nats.sh: installing Debian's nats-server package"
  # policy-rc.d exit 101 tells invoke-rc.d not to start the service the
  # package installs; put one in place only for the install, and only if
  # the system has none (a container's usually does).
  added_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    added_policy=1
  fi
  trap '[ -n "$added_policy" ] && rm -f /usr/sbin/policy-rc.d' EXIT
  # Another apt (a parallel install) may hold the dpkg lock: wait for it.
  apt_() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"; }
  if ! apt_ install -y --no-install-recommends nats-server; then
    apt_ update
    apt_ install -y --no-install-recommends nats-server
  fi
fi

# The packaged service listens on 4222; the test needs it not. Stop it if
# it runs (systemd or sysvinit), and keep it from starting at boot.
if command -v systemctl >/dev/null && systemctl is-active --quiet nats-server 2>/dev/null; then
  systemctl stop nats-server
  systemctl disable nats-server >/dev/null 2>&1 || true
elif [ -x /etc/init.d/nats-server ] && service nats-server status >/dev/null 2>&1; then
  service nats-server stop
fi

nats-server --version
