#!/usr/bin/env bash
# Makes sure Debian's prometheus package is installed (prometheus and
# promtool on PATH) for cmd/weir's Prometheus test, which starts its own
# server on a free port with its own storage. The package's own service is
# not wanted: it is kept from starting during the install, and stopped if
# an earlier install left it running. Idempotent: a second run changes
# nothing. Run as root on Debian (bookworm ships Prometheus 2.42).
set -euo pipefail

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  echo "prometheus.sh: installing Debian's prometheus package"
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
  if ! apt_ install -y --no-install-recommends prometheus; then
    apt_ update
    apt_ install -y --no-install-recommends prometheus
  fi
fi

# The packaged service scrapes localhost:9090 and writes /var/lib/prometheus;
# the tests need neither. Stop it if it runs (systemd or sysvinit), and keep
# it from starting at boot.
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
  systemctl stop prometheus
  systemctl disable prometheus >/dev/null 2>&1 || true
elif [ -x /etc/init.d/prometheus ] && service prometheus status >/dev/null 2>&1; then
  service prometheus stop
fi

prometheus --version 2>&1 | head -n 1
promtool --version 2>&1 | head -n 1
