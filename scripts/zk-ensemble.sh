#!/usr/bin/env bash
# Throwaway 3-server ZooKeeper 3.8 ensemble for fault tests, run from Debian's
# jars (packages `zookeeper` / `libzookeeper-java`), on 127.0.0.1 only.
#
#   scripts/zk-ensemble.sh start DIR       start servers 1..3; once all three serve and one
#                                          is leader, print 127.0.0.1:a,127.0.0.1:b,127.0.0.1:c
#   scripts/zk-ensemble.sh stop DIR        stop every server of DIR (CONT, TERM, then KILL)
#   scripts/zk-ensemble.sh kill DIR N      SIGKILL server N, wait until it is gone
#   scripts/zk-ensemble.sh stop-node DIR N SIGSTOP server N (freeze it)
#   scripts/zk-ensemble.sh cont DIR N      SIGCONT server N
#   scripts/zk-ensemble.sh restart DIR N   (kill and) start server N again, wait until it serves
#   scripts/zk-ensemble.sh leader DIR      print the N of the server whose `srvr` says Mode: leader
#   scripts/zk-ensemble.sh status DIR      one line per server: N PORT PID MODE CONNECTIONS
#   scripts/zk-ensemble.sh join DIR N      (ZK_RECONFIG=1 ensembles, N in 4..9) start a new server N
#                                          whose membership is the current one plus itself, wait
#                                          until it serves, print its line (server.N=...;client);
#                                          a `reconfig` add of that line makes it a member
#
# With ZK_RECONFIG=1 at start, the servers allow dynamic reconfiguration
# (reconfigEnabled=true, standaloneEnabled=false, skipACL=yes so that any
# client may run `reconfig`; loopback only) and keep their membership, with
# each server's client address, in a dynamic config file (DIR/N/zoo.cfg.dynamic,
# rewritten by the servers at each reconfig). Not with ZK_LINK_PROXY.
#
# With ZK_LINK_PROXY=1 at start, each server reaches each peer through a TCP
# proxy per link (scripts/zk-links.py, one daemon per ensemble: DIR/links.*),
# and these commands partition the ensemble (MODE: reset closes the links'
# connections and refuses new ones; silent forwards nothing, closes nothing
# and lets new connections hang):
#   scripts/zk-ensemble.sh isolate DIR N MODE    every link of server N
#   scripts/zk-ensemble.sh cut DIR A B MODE      the links between servers A and B
#   scripts/zk-ensemble.sh heal DIR              every link forwards again
#   scripts/zk-ensemble.sh links DIR             FROM TO KIND MODE LISTENING CONNECTIONS per link
# The clients' ports are not proxied: a client on an isolated server still
# reaches it.
#
# DIR holds everything: connect (the connect string) and, per server N, DIR/N/
# with zoo.cfg, data/myid, server.log, pid and port. Every signal goes to a
# pid from DIR that is checked to be the QuorumPeerMain of DIR/N/zoo.cfg, so
# other servers on the machine are never touched.
#
# Environment:
#   ZK_OWNER_PID=PID       stop the ensemble by itself once PID is gone (a
#                          watchdog; for tests that may die without cleaning up)
#   ZK_START_TIMEOUT=S     seconds to wait for a serving ensemble (default 60)
#   ZK_JAVA_DIR=PATH       where the jars live (default /usr/share/java)
#   ZK_JAVA_OPTS="..."     JVM options (default: -Xms32m -Xmx256m -XX:+UseSerialGC)
#   ZK_LINK_PROXY=1        server-to-server links through zk-links.py (see above)
#   ZK_TIMING=debian       Debian's zoo.cfg timing: tickTime 2000, initLimit 10,
#                          syncLimit 5, minSessionTimeout left to the server (2 x
#                          tickTime). Default: tickTime 500, initLimit 10,
#                          syncLimit 5, minSessionTimeout 1000 (fast tests).
#   ZK_TICK_TIME=MS, ZK_INIT_LIMIT=N, ZK_SYNC_LIMIT=N, ZK_MIN_SESSION_TIMEOUT=MS,
#   ZK_MAX_SESSION_TIMEOUT=MS
#                          override one setting (over ZK_TIMING);
#                          ZK_MIN_SESSION_TIMEOUT=default leaves it to the server
set -euo pipefail

# shellcheck source=scripts/zk-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/zk-common.sh"
SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
SELF=$SCRIPTS/$(basename "${BASH_SOURCE[0]}")
SERVERS="1 2 3"

die() {
    echo "zk-ensemble: $*" >&2
    exit 1
}

usage() {
    echo "usage: $0 start|stop|leader|status DIR" >&2
    echo "       $0 kill|stop-node|cont|restart|join DIR N" >&2
    echo "       $0 isolate DIR N reset|silent" >&2
    echo "       $0 cut DIR A B reset|silent" >&2
    echo "       $0 heal|links DIR" >&2
    exit 2
}


# N distinct unused loopback ports, one per line. All sockets are held open
# together so the kernel hands out distinct ports. Someone can still take one
# before Java binds it; `start` retries on "Address already in use".
free_ports() {
    command -v python3 >/dev/null 2>&1 || die "python3 not found (run scripts/install-deps.sh)"
    python3 -c 'import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
for s in socks:
    s.close()' "$1"
}



# The live pid of server N of DIR, or nothing.
server_pid() {
    local dir=$1 n=$2 pid
    [[ -f $dir/$n/pid ]] || return 0
    pid=$(<"$dir/$n/pid")
    [[ $pid =~ ^[0-9]+$ ]] || return 0
    if alive "$pid" && is_our_server "$pid" "$dir/$n/zoo.cfg"; then
        printf '%s\n' "$pid"
    fi
}

# Waits up to $2 tenths of a second for PID to be gone.
wait_gone() {
    local pid=$1 tenths=$2 _
    for _ in $(seq 1 "$tenths"); do
        alive "$pid" || return 0
        sleep 0.1
    done
    ! alive "$pid"
}

# The Mode: line of `srvr` (leader, follower, standalone), empty when not serving.
mode_of() {
    four_letter "$1" srvr | sed -n 's/^Mode: //p'
}

check_n() {
    [[ $1 =~ ^[1-9]$ ]] || die "server number must be 1 to 9, not '$1'"
}

reconfigurable() {
    [[ ${ZK_RECONFIG:-0} == 1 ]]
}

# The numbers of DIR's servers (1..3, and those that joined), one per line.
servers_of() {
    local dir=$1 n
    for n in 1 2 3 4 5 6 7 8 9; do
        [[ ! -f $dir/$n/zoo.cfg ]] || printf '%s\n' "$n"
    done
}

resolve_dir() {
    [[ -d $1 ]] || die "no ensemble directory $1"
    (cd "$1" && pwd -P)
}

# The timing settings (zoo.cfg lines), from ZK_TIMING and the single overrides.
timing() {
    local tick=500 init=10 sync=5 min=1000 max=60000 v
    case ${ZK_TIMING:-} in
    "" | fast) ;;
    debian) tick=2000 min=default ;;
    *) die "ZK_TIMING must be debian or fast, not '$ZK_TIMING'" ;;
    esac
    tick=${ZK_TICK_TIME:-$tick}
    init=${ZK_INIT_LIMIT:-$init}
    sync=${ZK_SYNC_LIMIT:-$sync}
    min=${ZK_MIN_SESSION_TIMEOUT:-$min}
    max=${ZK_MAX_SESSION_TIMEOUT:-$max}
    for v in "$tick" "$init" "$sync" "$max"; do
        [[ $v =~ ^[0-9]+$ ]] || die "timing settings must be numbers, not '$v'"
    done
    [[ $min == default || $min =~ ^[0-9]+$ ]] || die "ZK_MIN_SESSION_TIMEOUT must be a number or default"
    printf 'tickTime=%s\ninitLimit=%s\nsyncLimit=%s\n' "$tick" "$init" "$sync"
    [[ $min == default ]] || printf 'minSessionTimeout=%s\n' "$min"
    printf 'maxSessionTimeout=%s\n' "$max"
}

proxied() {
    [[ ${ZK_LINK_PROXY:-0} == 1 ]]
}

# The index, among the ports, of the proxy of link FROM -> TO of KIND (0
# quorum, 1 election): after the 9 servers' ports, 6 ordered pairs x 2 kinds.
link_index() {
    local from=$1 to=$2 kind=$3 pair
    # Pairs in order: 1>2 1>3 2>1 2>3 3>1 3>2.
    pair=$(((from - 1) * 2 + (to > from ? to - 2 : to - 1)))
    printf '%s\n' $((9 + pair * 2 + kind))
}

# write_configs DIR PORTS...: client ports 0..2, quorum ports 3..5, election
# ports 6..8, then (with ZK_LINK_PROXY=1) the links' proxy ports. A proxied
# server lists itself at its own ports and each peer at the proxy of its link
# to that peer; DIR/links.conf tells the proxy daemon the links.
write_configs() {
    local dir=$1 n i m settings
    local -a p=("${@:2}")
    settings=$(timing)
    if proxied; then
        : >"$dir/links.conf"
        for n in $SERVERS; do
            for m in $SERVERS; do
                ((n != m)) || continue
                printf '%s %s q %s %s 0\n' "$n" "$m" "${p[$(link_index "$n" "$m" 0)]}" "${p[m + 2]}" \
                    >>"$dir/links.conf"
                printf '%s %s e %s %s %s\n' "$n" "$m" "${p[$(link_index "$n" "$m" 1)]}" "${p[m + 5]}" \
                    "${p[$(link_index "$m" "$n" 1)]}" >>"$dir/links.conf"
            done
        done
    fi
    if reconfigurable; then
        ! proxied || die "ZK_RECONFIG and ZK_LINK_PROXY do not go together"
        : >"$dir/reconfig"
        for n in $SERVERS; do
            i=$((n - 1))
            mkdir -p "$dir/$n/data"
            printf '%s\n' "$n" >"$dir/$n/data/myid"
            printf '%s\n' "${p[i]}" >"$dir/$n/port"
            static_config "$dir" "$n" "$settings" >"$dir/$n/zoo.cfg"
            for m in $SERVERS; do
                printf 'server.%s=127.0.0.1:%s:%s:participant;127.0.0.1:%s\n' "$m" "${p[m + 2]}" "${p[m + 5]}" \
                    "${p[m - 1]}"
            done >"$dir/$n/zoo.cfg.dynamic"
        done
        return 0
    fi
    for n in $SERVERS; do
        i=$((n - 1))
        mkdir -p "$dir/$n/data"
        printf '%s\n' "$n" >"$dir/$n/data/myid"
        printf '%s\n' "${p[i]}" >"$dir/$n/port"
        {
            cat <<EOF
# Written by scripts/zk-ensemble.sh: a private, loopback-only test ensemble.
$settings
dataDir=$dir/$n/data
clientPort=${p[i]}
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
forceSync=no
reconfigEnabled=false
EOF
            for m in $SERVERS; do
                if ((m == n)) || ! proxied; then
                    printf 'server.%s=127.0.0.1:%s:%s\n' "$m" "${p[m + 2]}" "${p[m + 5]}"
                else
                    printf 'server.%s=127.0.0.1:%s:%s\n' "$m" "${p[$(link_index "$n" "$m" 0)]}" \
                        "${p[$(link_index "$n" "$m" 1)]}"
                fi
            done
        } >"$dir/$n/zoo.cfg"
    done
}

# static_config DIR N SETTINGS: zoo.cfg of a reconfigurable server N (its
# membership and client address are in DIR/N/zoo.cfg.dynamic).
static_config() {
    local dir=$1 n=$2 settings=$3
    cat <<EOF
# Written by scripts/zk-ensemble.sh: a private, loopback-only test ensemble
# that allows reconfig (ZK_RECONFIG=1).
$settings
dataDir=$dir/$n/data
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
forceSync=no
reconfigEnabled=true
standaloneEnabled=false
skipACL=yes
dynamicConfigFile=$dir/$n/zoo.cfg.dynamic
EOF
}

# Starts server N (4..9) of a reconfigurable DIR with the membership a
# running member last wrote plus itself; prints its server line.
cmd_join() {
    local dir=$1 n=$2 m src="" line
    local -a ports
    [[ -f $dir/reconfig ]] || die "join needs an ensemble started with ZK_RECONFIG=1"
    [[ $n =~ ^[4-9]$ ]] || die "a joining server is numbered 4 to 9, not '$n'"
    [[ ! -e $dir/$n ]] || die "server $n of $dir exists already"
    for m in $(servers_of "$dir"); do
        [[ -n $(server_pid "$dir" "$m") ]] || continue
        src=$(sed -n 's/^dynamicConfigFile=//p' "$dir/$m/zoo.cfg" | tail -n 1)
        [[ -f $src ]] && break
        src=""
    done
    [[ -n $src ]] || die "no running member of $dir to copy the membership from"
    mapfile -t ports < <(free_ports 3)
    mkdir -p "$dir/$n/data"
    printf '%s\n' "$n" >"$dir/$n/data/myid"
    printf '%s\n' "${ports[0]}" >"$dir/$n/port"
    line="server.$n=127.0.0.1:${ports[1]}:${ports[2]}:participant;127.0.0.1:${ports[0]}"
    { grep '^server\.' "$src"; printf '%s\n' "$line"; } >"$dir/$n/zoo.cfg.dynamic"
    static_config "$dir" "$n" "$(timing)" >"$dir/$n/zoo.cfg"
    launch "$dir" "$n"
    wait_serving "$dir" "$n" || die "server $n did not start serving (see $dir/$n/server.log)"
    printf '%s\n' "$line"
}

# The live pid of DIR's link proxy daemon, or nothing.
links_pid() {
    local dir=$1 pid cmdline
    [[ -f $dir/links.pid ]] || return 0
    pid=$(<"$dir/links.pid")
    [[ $pid =~ ^[0-9]+$ ]] || return 0
    alive "$pid" || return 0
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 0
    [[ $cmdline == *"zk-links.py serve $dir "* ]] && printf '%s\n' "$pid"
    return 0
}

start_links() {
    local dir=$1 _
    command -v python3 >/dev/null 2>&1 || die "python3 not found (run scripts/install-deps.sh)"
    nohup python3 "$SCRIPTS/zk-links.py" serve "$dir" </dev/null >>"$dir/links.log" 2>&1 &
    printf '%s\n' "$!" >"$dir/links.pid"
    for _ in $(seq 1 50); do
        [[ -S $dir/links.sock ]] && return 0
        sleep 0.1
    done
    die "the link proxy did not start (see $dir/links.log)"
}

stop_links() {
    local dir=$1 pid
    pid=$(links_pid "$dir")
    if [[ -n $pid ]]; then
        kill -TERM "$pid" 2>/dev/null || true
        wait_gone "$pid" 30 || kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/links.pid" "$dir/links.sock"
}

# links_ctl DIR WORDS...: one command to DIR's link proxy daemon; prints its answer.
links_ctl() {
    local dir=$1
    shift
    [[ -n $(links_pid "$dir") ]] || die "$dir has no link proxy (start it with ZK_LINK_PROXY=1)"
    python3 "$SCRIPTS/zk-links.py" ctl "$dir" "$@"
}

# Starts server N in the background and records its pid; does not wait.
launch() {
    local dir=$1 n=$2 cp pid
    local -a java_opts
    cp=$(zk_classpath)
    read -r -a java_opts <<<"${ZK_JAVA_OPTS:--Xms32m -Xmx256m -XX:+UseSerialGC}"
    # The log is appended to, so a restart keeps the history.
    zk_launch "$cp" "$dir/$n" "$dir/$n/zoo.cfg" "$dir/$n/server.log" "${java_opts[@]}"
    pid=$!
    printf '%s\n' "$pid" >"$dir/$n/pid"
}

# Kills server N (if running) and forgets its pid.
kill_server() {
    local dir=$1 n=$2 pid
    pid=$(server_pid "$dir" "$n")
    if [[ -n $pid ]]; then
        kill -KILL "$pid" 2>/dev/null || true
        wait_gone "$pid" 100 || die "server $n (pid $pid) still alive after KILL"
    fi
    rm -f "$dir/$n/pid"
}

# Stops server N politely: CONT (it may be frozen), TERM, KILL after 3 s.
stop_server() {
    local dir=$1 n=$2 pid
    pid=$(server_pid "$dir" "$n")
    if [[ -n $pid ]]; then
        kill -CONT "$pid" 2>/dev/null || true
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_gone "$pid" 30; then
            kill -KILL "$pid" 2>/dev/null || true
            wait_gone "$pid" 100 || die "server $n (pid $pid) still alive after KILL"
        fi
    fi
    rm -f "$dir/$n/pid"
}

# Waits until server N serves (srvr has a Mode line); dies after the timeout.
wait_serving() {
    local dir=$1 n=$2 deadline port pid
    deadline=$((SECONDS + ${ZK_START_TIMEOUT:-60}))
    port=$(<"$dir/$n/port")
    while ((SECONDS < deadline)); do
        pid=$(server_pid "$dir" "$n")
        [[ -n $pid ]] || return 1
        [[ -n $(mode_of "$port") ]] && return 0
        sleep 0.2
    done
    return 1
}

# The watchdog: stops the ensemble once OWNER is gone, or exits when the
# ensemble has been stopped by someone else.
cmd_watch() {
    local dir=$1 owner=$2
    while [[ -f $dir/watchdog.pid ]]; do
        if ! kill -0 "$owner" 2>/dev/null; then
            echo "zk-ensemble: owner pid $owner is gone, stopping $dir" >>"$dir/watchdog.log"
            rm -f "$dir/watchdog.pid"
            cmd_stop "$dir" >>"$dir/watchdog.log" 2>&1
            return 0
        fi
        sleep 1
    done
}

start_watchdog() {
    local dir=$1 owner=$2
    [[ $owner =~ ^[0-9]+$ ]] || die "ZK_OWNER_PID must be a pid, not '$owner'"
    nohup bash "$SELF" watch "$dir" "$owner" </dev/null >/dev/null 2>&1 &
    printf '%s\n' "$!" >"$dir/watchdog.pid"
}

stop_watchdog() {
    local dir=$1 pid cmdline
    [[ -f $dir/watchdog.pid ]] || return 0
    pid=$(<"$dir/watchdog.pid")
    rm -f "$dir/watchdog.pid"
    [[ $pid =~ ^[0-9]+$ ]] || return 0
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 0
    if [[ $cmdline == *"zk-ensemble.sh watch $dir "* ]]; then
        kill -TERM "$pid" 2>/dev/null || true
    fi
}

cmd_start() {
    local dir=$1 attempt n leaders port mode deadline conn taken nports
    local -a ports
    command -v java >/dev/null 2>&1 || die "java not found (run scripts/install-deps.sh)"
    zk_classpath >/dev/null
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd -P)
    for n in $SERVERS; do
        [[ -z $(server_pid "$dir" "$n") ]] || die "server $n of $dir is already running"
    done
    [[ -z ${ZK_OWNER_PID:-} ]] || start_watchdog "$dir" "$ZK_OWNER_PID"

    for attempt in 1 2 3; do
        nports=9
        ! proxied || nports=21
        mapfile -t ports < <(free_ports "$nports")
        ((${#ports[@]} == nports)) || die "could not pick free ports"
        rm -rf "$dir/1" "$dir/2" "$dir/3" "$dir/reconfig"
        stop_links "$dir"
        rm -f "$dir/links.conf"
        write_configs "$dir" "${ports[@]}"
        ! proxied || start_links "$dir"
        for n in $SERVERS; do
            launch "$dir" "$n"
        done

        deadline=$((SECONDS + ${ZK_START_TIMEOUT:-60}))
        taken=""
        while ((SECONDS < deadline)); do
            leaders=0
            conn=""
            for n in $SERVERS; do
                if [[ -z $(server_pid "$dir" "$n") ]]; then
                    grep -q 'Address already in use' "$dir/$n/server.log" 2>/dev/null && taken=$n
                    conn=dead
                    break
                fi
                port=$(<"$dir/$n/port")
                mode=""
                [[ $(four_letter "$port" ruok) == imok ]] && mode=$(mode_of "$port")
                if [[ -z $mode ]]; then
                    conn=waiting
                    break
                fi
                [[ $mode == leader ]] && leaders=$((leaders + 1))
                conn+="${conn:+,}127.0.0.1:$port"
            done
            [[ $conn == dead ]] && break
            if [[ $conn != waiting ]] && ((leaders == 1)); then
                printf '%s\n' "$conn" >"$dir/connect"
                printf '%s\n' "$conn"
                return 0
            fi
            sleep 0.2
        done

        for n in $SERVERS; do
            kill_server "$dir" "$n"
        done
        stop_links "$dir"
        if [[ -n $taken ]]; then
            echo "zk-ensemble: a port of server $taken was taken (attempt $attempt), trying others" >&2
            continue
        fi
        break
    done

    stop_watchdog "$dir"
    for n in $SERVERS; do
        if [[ -f $dir/$n/server.log ]]; then
            echo "zk-ensemble: last lines of $dir/$n/server.log:" >&2
            tail -n 15 "$dir/$n/server.log" >&2 || true
        fi
    done
    die "could not start a serving ensemble in $dir"
}

cmd_stop() {
    local dir=$1 n
    [[ -d $dir ]] || return 0
    dir=$(cd "$dir" && pwd -P)
    stop_watchdog "$dir"
    for n in $(servers_of "$dir"); do
        stop_server "$dir" "$n"
    done
    stop_links "$dir"
}

cmd_restart() {
    local dir=$1 n=$2
    kill_server "$dir" "$n"
    launch "$dir" "$n"
    wait_serving "$dir" "$n" || die "server $n did not come back (see $dir/$n/server.log)"
}

cmd_signal() {
    local dir=$1 n=$2 sig=$3 pid
    pid=$(server_pid "$dir" "$n")
    [[ -n $pid ]] || die "server $n of $dir is not running"
    kill "-$sig" "$pid"
}

cmd_leader() {
    local dir=$1 n port
    for n in $(servers_of "$dir"); do
        [[ -f $dir/$n/port ]] || continue
        port=$(<"$dir/$n/port")
        if [[ -n $(server_pid "$dir" "$n") && $(mode_of "$port") == leader ]]; then
            printf '%s\n' "$n"
            return 0
        fi
    done
    die "no server of $dir says it is the leader"
}

cmd_status() {
    local dir=$1 n port pid srvr mode conns
    for n in $(servers_of "$dir"); do
        [[ -f $dir/$n/port ]] || continue
        port=$(<"$dir/$n/port")
        pid=$(server_pid "$dir" "$n")
        mode=down
        conns=-
        if [[ -n $pid ]]; then
            srvr=$(four_letter "$port" srvr)
            mode=$(sed -n 's/^Mode: //p' <<<"$srvr")
            conns=$(sed -n 's/^Connections: //p' <<<"$srvr")
            [[ -n $mode ]] || mode=not-serving
        fi
        printf '%s %s %s %s %s\n' "$n" "$port" "${pid:--}" "$mode" "${conns:--}"
    done
}

(($# >= 2)) || usage
cmd=$1
case $cmd in
start)
    (($# == 2)) || usage
    cmd_start "$2"
    ;;
stop)
    (($# == 2)) || usage
    cmd_stop "$2"
    ;;
leader | status)
    (($# == 2)) || usage
    dir=$(resolve_dir "$2")
    "cmd_$cmd" "$dir"
    ;;
kill | stop-node | cont | restart)
    (($# == 3)) || usage
    dir=$(resolve_dir "$2")
    check_n "$3"
    case $cmd in
    kill) kill_server "$dir" "$3" ;;
    stop-node) cmd_signal "$dir" "$3" STOP ;;
    cont) cmd_signal "$dir" "$3" CONT ;;
    restart) cmd_restart "$dir" "$3" ;;
    esac
    ;;
join)
    (($# == 3)) || usage
    dir=$(resolve_dir "$2")
    cmd_join "$dir" "$3"
    ;;
isolate)
    (($# == 4)) || usage
    dir=$(resolve_dir "$2")
    check_n "$3"
    links_ctl "$dir" isolate "$3" "$4"
    ;;
cut)
    (($# == 5)) || usage
    dir=$(resolve_dir "$2")
    check_n "$3"
    check_n "$4"
    [[ $3 != "$4" ]] || die "a link joins two different servers"
    links_ctl "$dir" set "$3" "$4" "$5"
    ;;
heal | links)
    (($# == 2)) || usage
    dir=$(resolve_dir "$2")
    if [[ $cmd == heal ]]; then links_ctl "$dir" heal; else links_ctl "$dir" show; fi
    ;;
watch)
    (($# == 3)) || usage
    cmd_watch "$2" "$3"
    ;;
*) usage ;;
esac
