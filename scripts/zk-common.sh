# shellcheck shell=bash disable=SC2034 # MAIN_CLASS is used by the sourcing scripts
# Shared by zk-server.sh and zk-ensemble.sh (sourced, not run): where the
# Debian jars are, the server's classpath, four-letter words, liveness.
# The sourcing script defines die().

JAVA_DIR=${ZK_JAVA_DIR:-/usr/share/java}
MAIN_CLASS=org.apache.zookeeper.server.quorum.QuorumPeerMain

# Classpath: zookeeper.jar's manifest Class-Path already names its runtime
# dependencies (jute, netty, jackson, metrics, commons-*, ...) by absolute path,
# so the JVM pulls them in by itself. The manifest has no SLF4J binding, so add
# slf4j-simple to get a server log instead of SLF4J's silent NOP logger.
zk_classpath() {
    local jar cp=""
    for jar in zookeeper zookeeper-jute slf4j-api slf4j-simple; do
        [[ -f "$JAVA_DIR/$jar.jar" ]] ||
            die "missing $JAVA_DIR/$jar.jar (run scripts/install-deps.sh)"
        cp+="${cp:+:}$JAVA_DIR/$jar.jar"
    done
    printf '%s\n' "$cp"
}

# The server's reply to a four-letter word (empty if it does not answer).
four_letter() {
    local port=$1 word=$2
    # shellcheck disable=SC2016 # $1/$2 expand in the inner shell
    timeout 3 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "%s" "$2" >&3
        cat <&3' _ "$port" "$word" 2>/dev/null || true
}

# True if PID is a live (not zombie) process. A reparented child may stay a
# zombie if PID 1 does not reap; that counts as gone.
alive() {
    local pid=$1 state
    kill -0 "$pid" 2>/dev/null || return 1
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ $state != Z ]]
}
