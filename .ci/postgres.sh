#!/usr/bin/env bash
# Makes sure the local PostgreSQL the postgres connector's tests use is
# running on 127.0.0.1:5432 with prepared transactions enabled (the
# exactly-once sink needs PREPARE TRANSACTION), and that database "test"
# exists. Idempotent: a second run changes nothing and restarts nothing.
# Run as root on a Debian-style install (pg_ctlcluster, one cluster "main").
set -euo pipefail

want_prepared=64
host=127.0.0.1
port=5432

version=$(ls /etc/postgresql | sort -V | tail -n 1)
if [ -z "$version" ]; then
  echo "postgres.sh: no cluster under /etc/postgresql; install PostgreSQL (apt-get install postgresql)" >&2
  exit 1
fi
ctl() { pg_ctlcluster --skip-systemctl-redirect "$version" main "$@"; }
psql_() { psql -h "$host" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -Atqc "$1"; }

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
fi
wait_ready

current=$(psql_ "SHOW max_prepared_transactions")
if [ "$current" -lt "$want_prepared" ]; then
  echo "postgres.sh: max_prepared_transactions is $current; setting $want_prepared and restarting"
  psql_ "ALTER SYSTEM SET max_prepared_transactions = $want_prepared"
  ctl restart
  wait_ready
  current=$(psql_ "SHOW max_prepared_transactions")
  if [ "$current" -lt "$want_prepared" ]; then
    echo "postgres.sh: max_prepared_transactions is still $current after the restart; check postgresql.conf and postgresql.auto.conf" >&2
    exit 1
  fi
fi

if [ -z "$(psql_ "SELECT 1 FROM pg_database WHERE datname = 'test'")" ]; then
  psql_ "CREATE DATABASE test"
fi
echo "postgres.sh: PostgreSQL $version/main ready on $host:$port, max_prepared_transactions = $current"
