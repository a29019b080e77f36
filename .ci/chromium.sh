#!/bin/sh
# Installs Debian's chromium for the dashboard's browser test (internal/dashboard), idempotently.
set -e
command -v chromium || DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
