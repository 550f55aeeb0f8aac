# shellcheck shell=bash disable=SC2034 # MAIN_CLASS is used by the sourcing scripts
# Shared by zk-server.sh and zk-ensemble.sh (sourced, not run): where the
# Debian jars are, the server's classpath, launching a server, four-letter
# words, liveness.
# The sourcing script defines die().

JAVA_DIR=${ZK_JAVA_DIR:-/usr/share/java}
MAIN_CLASS=org.apache.zookeeper.server.quorum.QuorumPeerMain

# Classpath: zookeeper.jar's manifest Class-Path already names its runtime
# dependencies (jute, netty, jackson, metrics, commons-*, ...) by absolute path
# (relative to the folder in zk-debian13.sh's copies), so the JVM pulls them in
# by itself. The manifest has no SLF4J binding, so add
# slf4j-simple to get a server log instead of SLF4J's silent NOP logger.
zk_classpath() {
    local jar cp=""
    for jar in zookeeper zookeeper-jute slf4j-api slf4j-simple; do
        [[ -f "$JAVA_DIR/$jar.jar" ]] ||
            die "missing $JAVA_DIR/$jar.jar (run scripts/install-deps.sh)"
        cp+="${cp:+:}$JAVA_DIR/$jar.jar"
    done
    # The manifest misses parts of Netty that NettyServerCnxnFactory (the TLS
    # port, ZK_SECURE=tls) needs.
    for jar in netty-handler netty-codec netty-transport netty-buffer netty-common netty-resolver \
        netty-transport-native-unix-common netty-transport-native-epoll; do
        [[ ! -f "$JAVA_DIR/$jar.jar" ]] || cp+=":$JAVA_DIR/$jar.jar"
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

# True if PID is the server started from CFG (guards against pid reuse).
is_our_server() {
    local pid=$1 cfg=$2 cmdline
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ $cmdline == *"$MAIN_CLASS"*"$cfg"* ]]
}

# zk_launch CP LOG_DIR CFG LOG JAVA_OPTS...: starts the server of CFG in the
# background (its pid is then $!) with classpath CP, its log directory
# LOG_DIR and its output appended to LOG. All three streams are redirected,
# so a caller's $(...) does not wait for the server, and the server never
# reads the caller's terminal.
zk_launch() {
    local cp=$1 log_dir=$2 cfg=$3 log=$4
    shift 4
    java "$@" \
        -Djava.net.preferIPv4Stack=true \
        -Dzookeeper.log.dir="$log_dir" \
        -Dorg.slf4j.simpleLogger.showDateTime=true \
        -Dorg.slf4j.simpleLogger.dateTimeFormat="yyyy-MM-dd'T'HH:mm:ss.SSS" \
        -cp "$cp" "$MAIN_CLASS" "$cfg" \
        </dev/null >>"$log" 2>&1 &
}

# ---- secured servers (ZK_SECURE=tls|sasl in zk-server.sh) --------------------

# zk_tls_certs DIR: a test PKI under DIR, made with the openssl CLI: a CA and
# an unrelated CA, a server certificate for 127.0.0.1/localhost, client
# certificates (key as PKCS#8, and the same key as PKCS#1), a second one of
# the same CA (rotated-client), one from the unrelated CA and one that has
# expired; plus the server's PKCS12 key and
# trust stores (password in DIR/store.pass).
zk_tls_certs() {
    local d=$1 pass
    rm -rf "$d"
    mkdir -p "$d"
    pass=$(openssl rand -hex 16)
    printf '%s\n' "$pass" >"$d/store.pass"
    (
        cd "$d" || exit 1
        local name
        for name in ca other-ca; do
            openssl req -x509 -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.pem" -days 30 \
                -subj "/CN=zoolock test $name" -addext "basicConstraints=critical,CA:TRUE" \
                -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null || exit 1
        done
        # issue NAME CA CN EXT [openssl ca dates]: a leaf certificate signed by CA.
        issue() {
            local name=$1 ca=$2 cn=$3 eku=$4
            shift 4
            openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "/CN=$cn" 2>/dev/null || return 1
            printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n' \
                "$eku" >"$name.ext"
            if (($#)); then
                # Explicit validity dates need `openssl ca` (x509 -req has no -not_after in 3.0).
                mkdir -p "ca-db"
                : >ca-db/index.txt
                printf '01\n' >ca-db/serial
                printf '[ca]\ndefault_ca=d\n[d]\ndatabase=ca-db/index.txt\nserial=ca-db/serial\nnew_certs_dir=ca-db\npolicy=p\ndefault_md=sha256\ncopy_extensions=none\n[p]\ncommonName=supplied\n' >ca.cnf
                openssl ca -batch -config ca.cnf -cert "$ca.pem" -keyfile "$ca.key" -in "$name.csr" -out "$name.pem" \
                    -extfile "$name.ext" -notext "$@" 2>/dev/null || return 1
            else
                openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial -days 30 \
                    -sha256 -extfile "$name.ext" -out "$name.pem" 2>/dev/null || return 1
            fi
            rm -f "$name.csr" "$name.ext"
        }
        issue server ca localhost serverAuth,clientAuth || exit 1
        issue client ca zoolock-client clientAuth || exit 1
        # A second valid client of the same CA, to rotate to.
        issue rotated-client ca zoolock-rotated-client clientAuth || exit 1
        issue other-client other-ca zoolock-other-client clientAuth || exit 1
        issue expired-client ca zoolock-expired-client clientAuth \
            -startdate 20200101000000Z -enddate 20200201000000Z || exit 1
        issue expired-server ca localhost serverAuth \
            -startdate 20200101000000Z -enddate 20200201000000Z || exit 1
        openssl rsa -in client.key -traditional -out client-pkcs1.key 2>/dev/null || exit 1
        openssl pkcs12 -export -name server -inkey server.key -in server.pem -certfile ca.pem \
            -passout "pass:$pass" -out server.p12 || exit 1
        # The client identity as a PKCS12 store too, for Java clients (Curator).
        openssl pkcs12 -export -name client -inkey client.key -in client.pem -certfile ca.pem \
            -passout "pass:$pass" -out client.p12 || exit 1
        keytool -importcert -noprompt -alias ca -file ca.pem -keystore trust.p12 -storetype PKCS12 \
            -storepass "$pass" >/dev/null 2>&1 || exit 1
        chmod 600 ./*.key
    ) || return 1
}

# zk_secure_config MODE DIR TLS_PORT: zoo.cfg lines (stdout) for a secured
# server. tls: Netty with a mutual-TLS secureClientPort (ZK_TLS_PROTOCOLS,
# e.g. TLSv1.3, widens ZooKeeper 3.8's TLSv1.2-only default); sasl: DIGEST-MD5
# required of every session (users in DIR/jaas.conf); kerberos: GSSAPI
# required of every session (the JVM's JAAS file and krb5.conf, in DIR/krb,
# decide the mechanism).
zk_secure_config() {
    local mode=$1 dir=$2 tls_port=$3 pass
    case $mode in
    tls)
        pass=$(<"$dir/tls/store.pass")
        cat <<EOC
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
secureClientPort=$tls_port
secureClientPortAddress=127.0.0.1
ssl.keyStore.location=$dir/tls/server.p12
ssl.keyStore.password=$pass
ssl.keyStore.type=PKCS12
ssl.trustStore.location=$dir/tls/trust.p12
ssl.trustStore.password=$pass
ssl.trustStore.type=PKCS12
ssl.clientAuth=need
EOC
        if [[ -n ${ZK_TLS_PROTOCOLS:-} ]]; then
            printf 'ssl.protocol=%s\nssl.enabledProtocols=%s\n' "${ZK_TLS_PROTOCOLS%%,*}" "$ZK_TLS_PROTOCOLS"
            echo "ssl.ciphersuites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
        fi
        ;;
    sasl | kerberos)
        cat <<EOC
authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
sessionRequireClientSASLAuth=true
EOC
        ;;
    esac
}

# zk_sasl_jaas DIR: a JAAS file with DigestLoginModule users alice and bob
# (random passwords), and DIR/sasl.env with them.
zk_sasl_jaas() {
    local dir=$1 alice bob
    alice=$(openssl rand -hex 12)
    bob=$(openssl rand -hex 12)
    cat >"$dir/jaas.conf" <<EOJ
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_alice="$alice"
    user_bob="$bob";
};
EOJ
    chmod 600 "$dir/jaas.conf"
    printf 'SASL_USER=alice\nSASL_PASSWORD=%s\nSASL_USER2=bob\nSASL_PASSWORD2=%s\n' "$alice" "$bob" >"$dir/sasl.env"
}

# True once the TLS port answers `ruok` over mutual TLS.
tls_ruok() {
    local port=$1 d=$2
    [[ $(echo ruok | timeout 3 openssl s_client -quiet -connect "127.0.0.1:$port" -CAfile "$d/ca.pem" \
        -cert "$d/client.pem" -key "$d/client.key" 2>/dev/null) == imok ]]
}
