#!/usr/bin/env bash
# Makes sure the local PostgreSQL the postgres connector's tests use is
# installed and running on 127.0.0.1:5432 with what weir's tests need:
#   - max_prepared_transactions >= 64 (the exactly-once sink prepares one
#     transaction per subtask and checkpoint: PREPARE TRANSACTION);
#   - wal_level = logical (change data capture reads a logical slot), and
#     max_replication_slots and max_wal_senders >= 32: the CDC tests run in
#     parallel packages, each with slots of its own, and a failed test
#     leaves its slot for inspection (the default 10 runs out);
#   - user postgres reachable over loopback without a password (the tests'
#     DSN is postgres://postgres@127.0.0.1:5432/test): this is a machine for
#     tests, and only 127.0.0.1/::1 are trusted;
#   - database "test".
# Works on a bare Debian machine: installs Debian's postgresql package when
# no server is installed and creates cluster "main" when there is none.
# Idempotent: a second run changes nothing and restarts nothing; a restart
# happens only when a setting that needs one was changed. Run as root.
set -euo pipefail

want_prepared=64
want_wal_level=logical
want_slots=32
host=127.0.0.1
port=5432
marker="# weir-ci: tests connect over loopback without a password"

apt_() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"; }

server_version() { ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n 1; }

version=$(server_version)
if [ -z "$version" ] || [ ! -x "/usr/lib/postgresql/$version/bin/postgres" ]; then
  echo "postgres.sh: no PostgreSQL server installed; installing Debian's postgresql"
  # The package's own service start is not wanted (this script starts the
  # cluster itself, and some machines have no init system).
  added_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    added_policy=1
  fi
  trap '[ -n "$added_policy" ] && rm -f /usr/sbin/policy-rc.d' EXIT
  apt_ update
  apt_ install -y --no-install-recommends postgresql
  version=$(server_version)
  if [ -z "$version" ]; then
    echo "postgres.sh: apt-get install postgresql left no server under /usr/lib/postgresql" >&2
    exit 1
  fi
fi

conf_dir=/etc/postgresql/$version/main
if [ ! -f "$conf_dir/postgresql.conf" ]; then
  echo "postgres.sh: creating cluster $version/main on port $port"
  pg_createcluster --port "$port" "$version" main >/dev/null
fi

ctl() { pg_ctlcluster --skip-systemctl-redirect "$version" main "$@"; }
psql_() { psql -h "$host" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -Atqc "$1"; }

# Trust loopback connections, ahead of the package's scram-sha-256 lines
# (pg_hba.conf is read top down; the first matching line decides).
hba=$conf_dir/pg_hba.conf
hba_changed=
if ! grep -qF "$marker" "$hba"; then
  tmp=$(mktemp)
  {
    echo "$marker"
    echo "host    all             all             127.0.0.1/32            trust"
    echo "host    all             all             ::1/128                 trust"
    echo "host    replication     all             127.0.0.1/32            trust"
    echo "host    replication     all             ::1/128                 trust"
    cat "$hba"
  } >"$tmp"
  cat "$tmp" >"$hba"
  rm -f "$tmp"
  hba_changed=1
fi

wait_ready() {
  for _ in $(seq 1 60); do
    if pg_isready -q -h "$host" -p "$port"; then
      return 0
    fi
    sleep 0.5
  done
  echo "postgres.sh: PostgreSQL $version/main does not accept connections on $host:$port after 30 s; see /var/log/postgresql/postgresql-$version-main.log" >&2
  exit 1
}

# pg_ctlcluster status exits 3 when the cluster is down.
if ! ctl status >/dev/null 2>&1; then
  echo "postgres.sh: starting PostgreSQL $version/main"
  ctl start
  hba_changed=
fi
wait_ready
if [ -n "$hba_changed" ]; then
  ctl reload
  sleep 1
fi

settings_ok() {
  [ "$(psql_ "SHOW max_prepared_transactions")" -ge "$want_prepared" ] &&
    [ "$(psql_ "SHOW wal_level")" = "$want_wal_level" ] &&
    [ "$(psql_ "SHOW max_replication_slots")" -ge "$want_slots" ] &&
    [ "$(psql_ "SHOW max_wal_senders")" -ge "$want_slots" ]
}
if ! settings_ok; then
  echo "postgres.sh: setting max_prepared_transactions = $want_prepared, wal_level = $want_wal_level, max_replication_slots and max_wal_senders = $want_slots; restarting"
  psql_ "ALTER SYSTEM SET max_prepared_transactions = $want_prepared"
  psql_ "ALTER SYSTEM SET wal_level = $want_wal_level"
  psql_ "ALTER SYSTEM SET max_replication_slots = $want_slots"
  psql_ "ALTER SYSTEM SET max_wal_senders = $want_slots"
  ctl restart
  wait_ready
  if ! settings_ok; then
    echo "postgres.sh: max_prepared_transactions = $(psql_ "SHOW max_prepared_transactions"), wal_level = $(psql_ "SHOW wal_level") after the restart; check $conf_dir/postgresql.conf and postgresql.auto.conf" >&2
    exit 1
  fi
fi

if [ -z "$(psql_ "SELECT 1 FROM pg_database WHERE datname = 'test'")" ]; then
  psql_ "CREATE DATABASE test"
fi
echo "postgres.sh: PostgreSQL $version/main ready on $host:$port (max_prepared_transactions = $(psql_ "SHOW max_prepared_transactions"), wal_level = $(psql_ "SHOW wal_level"))"
