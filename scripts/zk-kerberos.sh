#!/usr/bin/env bash
# A Kerberized ZooKeeper for the GSSAPI tests: a private MIT KDC (Debian's
# krb5-kdc and krb5-admin-server) for a realm of its own on a free loopback
# port, and a ZooKeeper (scripts/zk-server.sh, ZK_SECURE=kerberos) that
# refuses every session that has not authenticated with SASL GSSAPI.
#
#   scripts/zk-kerberos.sh start DIR   prints the KEY=VALUE lines below once
#                                      the KDC issues tickets and ZooKeeper answers
#   scripts/zk-kerberos.sh stop DIR    stops ZooKeeper, then the KDC (by their pids)
#
# What `start` prints (one KEY=VALUE a line; the values hold no spaces):
#   ZK_DIR               DIR, absolute; the tests write their ticket caches in DIR/krb
#   ZK_PORT              ZooKeeper's client port on 127.0.0.1 (connect as localhost:PORT:
#                        the service principal's host is localhost)
#   ZK_PID               ZooKeeper's pid
#   ZK_KRB5_CONF         the krb5.conf for clients (KRB5_CONFIG); its KDC line reads
#                        `kdc = 127.0.0.1:ZK_KDC_PORT`
#   ZK_KDC_PORT          the KDC's port (TCP and UDP, 127.0.0.1)
#   ZK_KDC_PID           the KDC's pid
#   ZK_SERVER_PRINCIPAL  zookeeper/localhost@REALM, ZooKeeper's service principal
#   ZK_CLIENT_PRINCIPAL  the client principal
#   ZK_CLIENT_KEYTAB     a keytab with the client principal's current key
#   ZK_BAD_KEYTAB        a keytab with a key of the client principal that the KDC
#                        has since replaced (it answers "preauthentication failed")
#
# Every principal is created with preauthentication required, as in most
# real realms, so a wrong key is refused by the KDC itself.
#
# Environment: those of zk-server.sh (ZK_START_TIMEOUT, ZK_JAVA_OPTS, ...).
set -euo pipefail

here=$(dirname "${BASH_SOURCE[0]}")
REALM=ZOOLOCK.TEST
SERVICE=zookeeper/localhost
CLIENT=zoolock-ci

die() {
    echo "zk-kerberos: $*" >&2
    exit 1
}

usage() {
    echo "usage: $0 start|stop DIR" >&2
    exit 2
}

# An unused loopback port, from the kernel (UDP and TCP are both checked).
kdc_port() {
    python3 -c 'import socket
for _ in range(50):
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.bind(("127.0.0.1", 0))
    port = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", port))
    except OSError:
        t.close()
        continue
    u.close()
    t.close()
    print(port)
    break
else:
    raise SystemExit("no free port")'
}

# True if PID is the KDC started for DIR: its command is krb5kdc and its
# environment names DIR's kdc.conf (guards against pid reuse).
is_our_kdc() {
    local pid=$1 krb=$2
    [[ $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) == *krb5kdc* ]] || return 1
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "KRB5_KDC_PROFILE=$krb/kdc.conf"
}

# TERM the KDC of DIR, then KILL after 5 s; waits until it is gone.
stop_kdc() {
    local krb=$1 pid i
    [[ -f $krb/kdc.pid ]] || return 0
    pid=$(<"$krb/kdc.pid")
    if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && is_our_kdc "$pid" "$krb"; then
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "zk-kerberos: KDC pid $pid ignored TERM for 5 s, sending KILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
            for i in $(seq 1 50); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
        fi
        kill -0 "$pid" 2>/dev/null && die "KDC pid $pid still alive after KILL"
    fi
    rm -f "$krb/kdc.pid"
}

# The realm's configuration: krb5.conf (clients, the admin tools and the
# JVM) and kdc.conf (the KDC: its database, ports and log).
write_krb_config() {
    local krb=$1 port=$2
    cat >"$krb/krb5.conf" <<EOF
# Written by scripts/zk-kerberos.sh: a private test realm on loopback.
[libdefaults]
    default_realm = $REALM
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 1
    ticket_lifetime = 10h
    forwardable = false

[realms]
    $REALM = {
        kdc = 127.0.0.1:$port
    }

[domain_realm]
    localhost = $REALM
EOF
    cat >"$krb/kdc.conf" <<EOF
# Written by scripts/zk-kerberos.sh.
[kdcdefaults]
    kdc_listen = 127.0.0.1:$port
    kdc_tcp_listen = 127.0.0.1:$port

[realms]
    $REALM = {
        database_name = $krb/db/principal
        key_stash_file = $krb/db/stash
        acl_file = $krb/kadm5.acl
        max_life = 10h
        max_renewable_life = 1d
        default_principal_flags = +preauth
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }

[logging]
    kdc = FILE:$krb/kdc.log
    default = FILE:$krb/kdc.log
EOF
    : >"$krb/kadm5.acl"
}

# The realm's database and keys: the service principal's keytab for
# ZooKeeper, and two client keytabs: bad.keytab is taken first, then the key
# is changed for client.keytab, so bad.keytab holds a key the KDC no longer has.
make_principals() {
    local krb=$1
    mkdir -p "$krb/db"
    kdb5_util create -s -r "$REALM" -P "$(openssl rand -hex 16)" || return 1
    kadmin.local -r "$REALM" -q "addprinc -randkey $SERVICE@$REALM" || return 1
    kadmin.local -r "$REALM" -q "addprinc -randkey $CLIENT@$REALM" || return 1
    kadmin.local -r "$REALM" -q "ktadd -k $krb/zookeeper.keytab $SERVICE@$REALM" || return 1
    kadmin.local -r "$REALM" -q "ktadd -k $krb/bad.keytab $CLIENT@$REALM" || return 1
    kadmin.local -r "$REALM" -q "ktadd -k $krb/client.keytab $CLIENT@$REALM" || return 1
    chmod 600 "$krb"/*.keytab
}

# The JAAS file of ZooKeeper's JVM: the server logs in as the service
# principal from its keytab (section "Server", ZooKeeper's default).
write_jaas() {
    local krb=$1
    cat >"$krb/jaas.conf" <<EOF
Server {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true
    storeKey=true
    doNotPrompt=true
    useTicketCache=false
    isInitiator=false
    keyTab="$krb/zookeeper.keytab"
    principal="$SERVICE@$REALM";
};
EOF
}

# Waits until the KDC issues a ticket from the client keytab (into a cache
# of its own, destroyed after).
wait_kdc() {
    local krb=$1 pid=$2 deadline=$((SECONDS + 20)) cache
    cache=FILE:$krb/cc-startup
    while ((SECONDS < deadline)); do
        kill -0 "$pid" 2>/dev/null || return 1
        if kinit -c "$cache" -kt "$krb/client.keytab" "$CLIENT@$REALM" 2>/dev/null; then
            kdestroy -q -c "$cache" 2>/dev/null || true
            return 0
        fi
        sleep 0.2
    done
    return 1
}

cmd_start() {
    local dir=$1 krb port kdc_pid addr attempt
    local tool
    for tool in krb5kdc kdb5_util kadmin.local kinit kdestroy openssl python3; do
        command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run scripts/install-deps.sh)"
    done
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd -P)
    krb=$dir/krb
    if [[ -f $krb/kdc.pid ]] && kill -0 "$(<"$krb/kdc.pid")" 2>/dev/null && is_our_kdc "$(<"$krb/kdc.pid")" "$krb"; then
        die "a KDC for $dir is already running (pid $(<"$krb/kdc.pid"))"
    fi
    rm -rf "$krb"
    mkdir -p "$krb"

    port=$(kdc_port) || die "no free port for the KDC"
    write_krb_config "$krb" "$port"
    export KRB5_CONFIG=$krb/krb5.conf KRB5_KDC_PROFILE=$krb/kdc.conf
    make_principals "$krb" >"$krb/setup.log" 2>&1 || {
        cat "$krb/setup.log" >&2
        die "could not create the realm in $krb"
    }
    write_jaas "$krb"

    # The port was free when picked; someone may take it before the KDC
    # binds it: then try another (the realm's files do not name the port,
    # only the two configurations do).
    for attempt in 1 2 3; do
        krb5kdc -n -r "$REALM" </dev/null >>"$krb/kdc.out" 2>&1 &
        kdc_pid=$!
        printf '%s\n' "$kdc_pid" >"$krb/kdc.pid"
        wait_kdc "$krb" "$kdc_pid" && break
        tail -n 20 "$krb/kdc.out" "$krb/kdc.log" >&2 2>/dev/null || true
        stop_kdc "$krb"
        ((attempt < 3)) || die "the KDC (127.0.0.1:$port) issued no ticket within 20 s, 3 times"
        echo "zk-kerberos: the KDC on 127.0.0.1:$port issued no ticket (attempt $attempt), trying another port" >&2
        port=$(kdc_port) || die "no free port for the KDC"
        write_krb_config "$krb" "$port"
    done

    if ! addr=$(ZK_SECURE=kerberos ZK_FORCE_SYNC=no bash "$here/zk-server.sh" start "$dir"); then
        stop_kdc "$krb"
        die "could not start the Kerberized ZooKeeper in $dir"
    fi

    cat <<EOF
ZK_DIR=$dir
ZK_PORT=${addr##*:}
ZK_PID=$(<"$dir/pid")
ZK_KRB5_CONF=$krb/krb5.conf
ZK_KDC_PORT=$port
ZK_KDC_PID=$kdc_pid
ZK_SERVER_PRINCIPAL=$SERVICE@$REALM
ZK_CLIENT_PRINCIPAL=$CLIENT@$REALM
ZK_CLIENT_KEYTAB=$krb/client.keytab
ZK_BAD_KEYTAB=$krb/bad.keytab
EOF
}

cmd_stop() {
    local dir=$1 rc=0
    [[ -d $dir ]] || return 0
    dir=$(cd "$dir" && pwd -P)
    bash "$here/zk-server.sh" stop "$dir" || rc=1
    stop_kdc "$dir/krb" || rc=1
    return "$rc"
}

[[ $# -eq 2 ]] || usage
case $1 in
start) cmd_start "$2" ;;
stop) cmd_stop "$2" ;;
*) usage ;;
esac
