#!/usr/bin/env bash
# Makes sure a real Apache Kafka broker (KRaft, combined broker and
# controller, one node) runs on 127.0.0.1:9092 for the tests that share one,
# and that the broker's jars are in the cache folder the tests that start
# their own brokers read (internal/kafkatest).
#
#   jars    Maven resolves .ci/kafka/pom.xml (org.apache.kafka:kafka_2.13 and
#           a log binding) from Maven Central into $WEIR_KAFKA_CACHE/libs-V;
#           $WEIR_KAFKA_CACHE/libs points at the complete copy.
#   broker  data and log in $WEIR_KAFKA_DATA (server.log there), formatted
#           once; its pid in $WEIR_KAFKA_DATA/broker.pid.
#
# Installs Java and Maven from Debian when they are missing. Idempotent: a
# second run finds the jars and the running broker and changes nothing.
# Run as root (the cache and data folders are under /var).
set -euo pipefail
cd "$(dirname "$0")"

cache=${WEIR_KAFKA_CACHE:-/var/cache/weir-ci/kafka}
data=${WEIR_KAFKA_DATA:-/var/lib/weir-ci/kafka-broker}
port=9092
controller_port=9093
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' kafka/pom.xml)

apt_() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"; }
need() { # need COMMAND PACKAGE
  if ! command -v "$1" >/dev/null; then
    echo "kafka.sh: $1 missing; installing Debian's $2"
    apt_ install -y --no-install-recommends "$2" || { apt_ update && apt_ install -y --no-install-recommends "$2"; }
  fi
}
need java openjdk-17-jre-headless
need mvn maven

# The jars: resolved once per Kafka version; the libs link moves only when
# a copy is complete, so an interrupted run is redone, never half used.
libs=$cache/libs-$version
if [ "$(readlink "$cache/libs" 2>/dev/null)" != "libs-$version" ]; then
  echo "kafka.sh: resolving Apache Kafka $version from Maven Central into $libs"
  mkdir -p "$cache"
  rm -rf "$libs.tmp"
  mvn -q -B -f kafka/pom.xml dependency:copy-dependencies -DoutputDirectory="$libs.tmp"
  rm -rf "$libs"
  mv "$libs.tmp" "$libs"
  cp kafka/log4j2.properties "$libs/log4j2.properties"
  ln -sfn "libs-$version" "$cache/libs"
fi
cp -f kafka/log4j2.properties "$libs/log4j2.properties"

listening() { (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pidfile=$data/broker.pid
if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && listening "$port"; then
  echo "kafka.sh: Apache Kafka $version already running on 127.0.0.1:$port (pid $(cat "$pidfile"))"
  exit 0
fi
if listening "$port"; then
  echo "kafka.sh: 127.0.0.1:$port is taken by a process this script did not start (no live pid in $pidfile); stop it or free the port" >&2
  exit 1
fi

mkdir -p "$data/log"
cat >"$data/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$data/log
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=2000
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
EOF
if [ ! -f "$data/log/meta.properties" ]; then
  echo "kafka.sh: formatting $data/log"
  java -cp "$libs/*" kafka.tools.StorageTool format --standalone \
    -t "$(java -cp "$libs/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)" \
    -c "$data/server.properties" >/dev/null 2>&1 ||
    java -cp "$libs/*" kafka.tools.StorageTool format \
      -t "$(java -cp "$libs/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)" \
      -c "$data/server.properties" >/dev/null
fi

echo "kafka.sh: starting Apache Kafka $version on 127.0.0.1:$port (log: $data/server.log)"
[ -f "$data/server.log" ] && mv -f "$data/server.log" "$data/server.log.1"
# setsid: the broker outlives this script and the shell that ran it.
setsid nohup java -Xms128m -Xmx512m -Dkafka.logs.dir="$data" \
  -Dlog4j2.configurationFile="$libs/log4j2.properties" \
  -cp "$libs/*" kafka.Kafka "$data/server.properties" \
  >"$data/stdout.log" 2>&1 </dev/null &
echo $! >"$pidfile"
# Ready when the broker logs that it started: by then it is unfenced and
# serves requests (the port opens seconds earlier).
for _ in $(seq 1 180); do
  if listening "$port" && grep -q "Kafka Server started" "$data/server.log" 2>/dev/null; then
    echo "kafka.sh: Apache Kafka $version ready on 127.0.0.1:$port (pid $(cat "$pidfile"))"
    exit 0
  fi
  if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "kafka.sh: the broker exited while starting; see $data/stdout.log and $data/server.log" >&2
    tail -n 20 "$data/stdout.log" >&2 || true
    exit 1
  fi
  sleep 0.5
done
echo "kafka.sh: the broker has not started on 127.0.0.1:$port after 90 s; see $data/server.log" >&2
exit 1
