#!/usr/bin/env bash
# Records Curator's lock scenarios as wire traces (conformance/traces/README.md):
# a private standalone ZooKeeper, zkproxy.py in front of it (one port per
# client), and RecordScenarios.java driving Curator through the proxy.
#
#   conformance/record/record.sh                      every scenario, Curator 5.7.1 on ZooKeeper 3.9.3
#   conformance/record/record.sh rwlock revocation    only these (other folders are left alone)
#
# Environment:
#   ZK_JAVA_DIR=PATH     the jars (default: scripts/zk-debian13.sh dir, ZooKeeper 3.9.3 and
#                        Curator 5.7.1; /usr/share/java for Debian 12's 3.8.0 and 5.4.0)
#   OUT=DIR              where the scenario folders go (default
#                        conformance/traces/curator-<Curator version>)
#   ZK_PORT, PROXY_PORTS (A,B,C), CONTROL_PORT   default 21830, 21831-21833, 21839
#   KEEP_WORK=1          keep the scratch folder (server log, proxy log)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
here=$root/conformance/record
jars=${ZK_JAVA_DIR:-$(bash "$root/scripts/zk-debian13.sh" dir)}
export ZK_PORT=${ZK_PORT:-21830} PROXY_PORTS=${PROXY_PORTS:-21831,21832,21833} CONTROL_PORT=${CONTROL_PORT:-21839}

die() {
    echo "record: $*" >&2
    exit 1
}

# The version a jar's Maven metadata names.
jar_version() {
    unzip -p "$jars/$1.jar" "META-INF/maven/$2/$1/pom.properties" 2>/dev/null | sed -n 's/^version=//p' | tr -d '\r'
}
export CURATOR_VERSION ZK_VERSION
CURATOR_VERSION=$(jar_version curator-recipes org.apache.curator)
ZK_VERSION=$(jar_version zookeeper org.apache.zookeeper)
[[ -n $CURATOR_VERSION && -n $ZK_VERSION ]] || die "cannot read the Curator and ZooKeeper versions in $jars"
export OUT=${OUT:-$root/conformance/traces/curator-$CURATOR_VERSION}
export ZK_TRACE_SERVER="zookeeper $ZK_VERSION"
mkdir -p "$OUT"

work=$(mktemp -d "${TMPDIR:-/tmp}/zk-record.XXXXXX")
proxy_pid=""
cleanup() {
    [[ -z $proxy_pid ]] || kill "$proxy_pid" 2>/dev/null || true
    bash "$root/scripts/zk-server.sh" stop "$work/zk" >/dev/null 2>&1 || true
    if [[ ${KEEP_WORK:-} == 1 ]]; then echo "record: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

echo "record: Curator $CURATOR_VERSION, ZooKeeper $ZK_VERSION ($jars) -> $OUT"
ZK_JAVA_DIR=$jars ZK_FORCE_SYNC=no bash "$root/scripts/zk-server.sh" start "$work/zk" >/dev/null
listen=()
for port in ${PROXY_PORTS//,/ }; do listen+=(--listen "$port"); done
python3 "$here/zkproxy.py" --zk-port "$ZK_PORT" "${listen[@]}" --control "$CONTROL_PORT" --out "$OUT" \
    >"$work/proxy.log" 2>&1 &
proxy_pid=$!
for _ in $(seq 1 50); do
    grep -q ready "$work/proxy.log" 2>/dev/null && break
    sleep 0.1
done
grep -q ready "$work/proxy.log" || die "zkproxy did not start: $(cat "$work/proxy.log")"

cp=""
for jar in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple; do
    cp+="${cp:+:}$jars/$jar.jar"
done
mkdir -p "$work/classes"
javac -nowarn -Xlint:-path -encoding UTF-8 -cp "$cp" -d "$work/classes" "$here/RecordScenarios.java"
java -Djava.net.preferIPv4Stack=true -Dorg.slf4j.simpleLogger.defaultLogLevel="${LOG_LEVEL:-warn}" \
    -cp "$work/classes:$cp" RecordScenarios "$@"
echo "record: done; replay with: cargo run -p zoolock-conformance --bin zk-trace -- replay $OUT/*/"
