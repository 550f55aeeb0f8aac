#!/usr/bin/env bash
# Throwaway standalone ZooKeeper for tests, run from Debian's jars (3.8:
# packages `zookeeper` / `libzookeeper-java`; 3.9.3: ZK_JAVA_DIR below),
# listening on 127.0.0.1 only.
#
#   scripts/zk-server.sh start DIR    prints 127.0.0.1:PORT once `ruok` says imok
#   scripts/zk-server.sh stop DIR     TERM, then KILL; waits until the process is gone
#   scripts/zk-server.sh status DIR   exit 0 and print the address if it answers imok
#
# DIR holds everything: zoo.cfg, data/, server.log, pid, port.
#
# Environment:
#   ZK_PORT=N              use port N instead of picking a free one
#   ZK_FORCE_SYNC=yes|no   ZooKeeper's forceSync (default yes; `no` is faster, less safe)
#   ZK_START_TIMEOUT=S     seconds to wait for imok (default 20)
#   ZK_JAVA_DIR=PATH       where the jars live (default /usr/share/java, ZooKeeper 3.8);
#                          $(scripts/zk-debian13.sh dir) runs ZooKeeper 3.9.3
#   ZK_JAVA_OPTS="..."     extra JVM options (default: -Xms32m -Xmx512m)
#   ZK_SECURE=tls|sasl|kerberos  a secured server (see zk-common.sh):
#                          tls:  Netty, plus a mutual-TLS secureClientPort (port in
#                                DIR/tls_port; test PKI in DIR/tls/: ca.pem, client.pem,
#                                client.key (PKCS#8), client-pkcs1.key, other-ca.pem,
#                                client.p12 + trust.p12 (Java stores, password in store.pass),
#                                other-client.*, rotated-client.* (a second client of ca),
#                                expired-client.*, expired-server.*);
#                                ZK_TLS_PROTOCOLS
#                                (e.g. TLSv1.3) replaces 3.8's TLSv1.2-only default
#                          sasl: DIGEST-MD5 required of every session; users and
#                                passwords in DIR/sasl.env
#                          kerberos: GSSAPI required of every session; the realm's
#                                files in DIR/krb (jaas.conf, krb5.conf), made by
#                                scripts/zk-kerberos.sh, which starts it this way
set -euo pipefail

# shellcheck source=scripts/zk-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/zk-common.sh"

die() {
    echo "zk-server: $*" >&2
    exit 1
}

usage() {
    echo "usage: $0 start|stop|status DIR" >&2
    exit 2
}


# Ask the kernel for an unused loopback port. There is a short window in which
# someone else could take it; `start` retries on "Address already in use".
free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
        return
    fi
    # Fallback without python3: a random high port that nothing accepts on.
    local port tries
    for tries in $(seq 1 200); do
        port=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            printf '%s\n' "$port"
            return
        fi
    done
    die "no free port found after $tries tries"
}



# TERM, wait up to 5 s, then KILL and wait up to 5 s more.
kill_and_wait() {
    local pid=$1 _
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
        alive "$pid" || return 0
        sleep 0.1
    done
    echo "zk-server: pid $pid ignored TERM for 5 s, sending KILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
        alive "$pid" || return 0
        sleep 0.1
    done
    die "pid $pid still alive after KILL"
}

write_config() {
    local dir=$1 port=$2 sync=$3
    cat >"$dir/zoo.cfg" <<EOF
# Written by scripts/zk-server.sh: a private, loopback-only test server.
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
forceSync=$sync
EOF
}

cmd_start() {
    local dir=$1 sync=${ZK_FORCE_SYNC:-yes} timeout=${ZK_START_TIMEOUT:-20}
    local cp attempt port pid deadline tls_port="" secure=${ZK_SECURE:-}
    local -a java_opts
    case $sync in yes | no) ;; *) die "ZK_FORCE_SYNC must be yes or no, not '$sync'" ;; esac
    [[ $timeout =~ ^[0-9]+$ ]] || die "ZK_START_TIMEOUT must be whole seconds"
    command -v java >/dev/null 2>&1 || die "java not found (run scripts/install-deps.sh)"
    cp=$(zk_classpath)
    read -r -a java_opts <<<"${ZK_JAVA_OPTS:--Xms32m -Xmx512m}"

    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd -P)
    if [[ -f $dir/pid ]]; then
        pid=$(<"$dir/pid")
        if alive "$pid" && is_our_server "$pid" "$dir/zoo.cfg"; then
            die "a server for $dir is already running (pid $pid)"
        fi
        rm -f "$dir/pid" "$dir/port"
    fi
    mkdir -p "$dir/data"
    case $secure in
    "") ;;
    tls)
        command -v openssl >/dev/null 2>&1 || die "openssl not found (run scripts/install-deps.sh)"
        zk_tls_certs "$dir/tls" || die "could not make the test certificates in $dir/tls"
        java_opts+=(-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory)
        ;;
    sasl)
        zk_sasl_jaas "$dir"
        java_opts+=(-Djava.security.auth.login.config="$dir/jaas.conf" -Dzookeeper.sessionRequireClientSASLAuth=true)
        ;;
    kerberos)
        [[ -f $dir/krb/jaas.conf && -f $dir/krb/krb5.conf ]] ||
            die "ZK_SECURE=kerberos needs $dir/krb/jaas.conf and krb5.conf (scripts/zk-kerberos.sh makes them)"
        java_opts+=(-Djava.security.auth.login.config="$dir/krb/jaas.conf"
            -Djava.security.krb5.conf="$dir/krb/krb5.conf" -Dzookeeper.sessionRequireClientSASLAuth=true)
        ;;
    *) die "ZK_SECURE must be tls, sasl or kerberos, not '$secure'" ;;
    esac

    # A picked port can be stolen before Java binds it: retry with a new one.
    for attempt in 1 2 3; do
        port=${ZK_PORT:-$(free_port)}
        # Something already listening there (say another ZooKeeper) would answer
        # our ruok and make a dead start look good.
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            [[ -z ${ZK_PORT:-} ]] || die "127.0.0.1:$port (ZK_PORT) is already in use"
            echo "zk-server: port $port is in use (attempt $attempt), trying another" >&2
            continue
        fi
        write_config "$dir" "$port" "$sync"
        if [[ -n $secure ]]; then
            [[ $secure != tls ]] || tls_port=$(free_port)
            zk_secure_config "$secure" "$dir" "$tls_port" >>"$dir/zoo.cfg"
        fi
        # A fresh log for each attempt.
        : >"$dir/server.log"
        zk_launch "$cp" "$dir" "$dir/zoo.cfg" "$dir/server.log" "${java_opts[@]}"
        pid=$!
        printf '%s\n' "$pid" >"$dir/pid"
        printf '%s\n' "$port" >"$dir/port"
        [[ -z $tls_port ]] || printf '%s\n' "$tls_port" >"$dir/tls_port"

        deadline=$((SECONDS + timeout))
        while ((SECONDS < deadline)); do
            # imok says the process runs; srvr's Mode line that it serves
            # (3.9 answers imok a moment before its first session can start).
            if [[ $(four_letter "$port" ruok) == imok ]] && alive "$pid" &&
                [[ $(four_letter "$port" srvr) == *"Mode: "* ]] &&
                { [[ -z $tls_port ]] || tls_ruok "$tls_port" "$dir/tls"; }; then
                printf '127.0.0.1:%s\n' "$port"
                return 0
            fi
            alive "$pid" || break
            sleep 0.2
        done

        if alive "$pid"; then
            echo "zk-server: no imok on 127.0.0.1:$port within ${timeout}s" >&2
            kill_and_wait "$pid" || true
        elif [[ -z ${ZK_PORT:-} ]] && grep -q 'Address already in use' "$dir/server.log"; then
            echo "zk-server: port $port was taken (attempt $attempt), trying another" >&2
            rm -f "$dir/pid" "$dir/port"
            continue
        else
            echo "zk-server: java exited before answering imok" >&2
        fi
        break
    done

    rm -f "$dir/pid" "$dir/port" "$dir/tls_port"
    if [[ -f $dir/server.log ]]; then
        echo "zk-server: last lines of $dir/server.log:" >&2
        tail -n 40 "$dir/server.log" >&2 || true
    fi
    die "could not start ZooKeeper in $dir"
}

cmd_stop() {
    local dir=$1 pid
    if [[ ! -f $dir/pid ]]; then
        echo "zk-server: no pid file in $dir, nothing to stop" >&2
        return 0
    fi
    dir=$(cd "$dir" && pwd -P)
    pid=$(<"$dir/pid")
    [[ $pid =~ ^[0-9]+$ ]] || die "bad pid file $dir/pid: '$pid'"
    if ! alive "$pid"; then
        echo "zk-server: pid $pid already gone" >&2
    elif ! is_our_server "$pid" "$dir/zoo.cfg"; then
        echo "zk-server: pid $pid is not the ZooKeeper of $dir, leaving it alone" >&2
    else
        kill_and_wait "$pid"
    fi
    rm -f "$dir/pid" "$dir/port"
}

cmd_status() {
    local dir=$1 port
    [[ -f $dir/port ]] || die "no server recorded in $dir"
    port=$(<"$dir/port")
    [[ $(four_letter "$port" ruok) == imok ]] || die "127.0.0.1:$port does not answer imok"
    printf '127.0.0.1:%s\n' "$port"
}

[[ $# -eq 2 ]] || usage
case $1 in
start) cmd_start "$2" ;;
stop) cmd_stop "$2" ;;
status) cmd_status "$2" ;;
*) usage ;;
esac
