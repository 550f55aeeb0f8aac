#!/usr/bin/env bash
# ZooKeeper 3.9.3 and Curator 5.7.1 from Debian 13 (trixie), for CI's version
# matrix, fetched and unpacked without installing anything.
#
#   scripts/zk-debian13.sh fetch   download and unpack once (again only if the folder
#                                  is missing or incomplete); prints the jar folder
#   scripts/zk-debian13.sh dir     prints the jar folder; fails if it was not fetched
#
# The jar folder stands in for /usr/share/java: give it as ZK_JAVA_DIR to
# zk-server.sh and zk-ensemble.sh (a 3.9.3 server) and to the Curator interop
# tests (Curator 5.7.1 with the 3.9.3 client). It holds the newer zookeeper,
# zookeeper-jute and curator-{client,framework,recipes} jars, and a symbolic link
# to every other jar of /usr/share/java (netty, jackson, guava, slf4j, ...).
#
# Why the jars are rewritten: Debian's manifests name their neighbours by
# absolute path (`Class-Path: /usr/share/java/zookeeper.jar ...`), and the JVM
# searches a jar's Class-Path right after that jar, so a newer curator-recipes
# would load the machine's Curator 5.4 and ZooKeeper 3.8 classes (a 3.9.3 server
# answered every connect with NoSuchMethodError). The copies here name the same
# jars relative to the folder, where the machine's zookeeper* and curator* jars
# are left out.
#
# apt runs with a private sources list and private state and cache folders, so
# the machine's apt configuration and package database are never touched.
#
# Environment:
#   ZOOLOCK_DEBIAN13_DIR=PATH  where to keep it (default: target/debian13 in the checkout)
#   DEBIAN13_MIRROR=URL        the Debian mirror (default http://deb.debian.org/debian)
set -euo pipefail

ZK_VERSION=3.9.3
CURATOR_VERSION=5.7.1
PACKAGES=(libzookeeper-java libcurator-client-java libcurator-framework-java libcurator-recipes-java)
NEW_JARS=(zookeeper zookeeper-jute curator-client curator-framework curator-recipes)
STAMP="zookeeper $ZK_VERSION, curator $CURATOR_VERSION"

die() {
    echo "zk-debian13: $*" >&2
    exit 1
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
root=${ZOOLOCK_DEBIAN13_DIR:-$repo/target/debian13}
jars=$root/java

fetched() {
    [[ -f $root/stamp && $(<"$root/stamp") == "$STAMP" ]]
}

# rewrite_manifest SRC DST: copies the jar SRC to DST with every Class-Path
# entry made relative (its file name only), as described above.
rewrite_manifest() {
    python3 - "$1" "$2" <<'EOF'
import os, sys, zipfile

src, dst = sys.argv[1], sys.argv[2]

def wrap(line):
    # Manifest lines are at most 72 bytes; continuations start with a space.
    out, rest = [], line.encode()
    while len(rest) > 72:
        out.append(rest[:72])
        rest = b" " + rest[72:]
    out.append(rest)
    return b"\r\n".join(out)

with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
    for item in zin.infolist():
        data = zin.read(item.filename)
        if item.filename == "META-INF/MANIFEST.MF":
            text = data.decode("utf-8").replace("\r\n", "\n").replace("\n ", "")
            lines = []
            for line in text.split("\n"):
                if line.startswith("Class-Path:"):
                    names = [os.path.basename(p) for p in line.split(":", 1)[1].split()]
                    line = "Class-Path: " + " ".join(names)
                lines.append(wrap(line) if line else b"")
            data = b"\r\n".join(lines)
        zout.writestr(item, data)
EOF
}

cmd_fetch() {
    local work apt list pkg deb version want jar name
    if fetched; then
        echo "zk-debian13: $STAMP already in $root" >&2
        printf '%s\n' "$jars"
        return 0
    fi
    for tool in apt-get dpkg-deb python3; do
        command -v "$tool" >/dev/null 2>&1 || die "$tool not found"
    done
    mkdir -p "$(dirname "$root")"
    work=$(mktemp -d "$root.tmp.XXXXXX")
    chmod 755 "$work"
    # shellcheck disable=SC2064 # expand now: the folder to remove
    trap "rm -rf '$work'" EXIT
    apt=$work/apt
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$work/debs" "$work/root" "$work/java"
    list=$apt/sources.list
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${DEBIAN13_MIRROR:-http://deb.debian.org/debian} trixie main" >"$list"
    local -a opts=(
        -o "Dir::Etc::sourcelist=$list" -o Dir::Etc::sourceparts=-
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
        -o Dir::State::status=/dev/null
        -o Acquire::Languages=none -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
        -q
    )
    # apt drops root to _apt for downloads, which cannot write to our folders.
    ((EUID != 0)) || opts+=(-o APT::Sandbox::User=root)
    echo "zk-debian13: apt-get update (trixie, private lists in $apt)" >&2
    apt-get "${opts[@]}" update >&2 || die "apt-get update failed"
    (cd "$work/debs" && apt-get "${opts[@]}" download "${PACKAGES[@]}") >&2 || die "apt-get download failed"
    for pkg in "${PACKAGES[@]}"; do
        deb=$(compgen -G "$work/debs/${pkg}_*.deb") || die "no $pkg .deb downloaded"
        version=$(dpkg-deb -f "$deb" Version)
        case $pkg in libzookeeper-java) want=$ZK_VERSION ;; *) want=$CURATOR_VERSION ;; esac
        # Debian revisions (+ds, +deb13uN) may change; the upstream version may not.
        [[ $version == "$want"[-+]* ]] || die "$pkg is $version in trixie, not $want"
        echo "zk-debian13: $pkg $version" >&2
        dpkg-deb -x "$deb" "$work/root"
    done
    for name in "${NEW_JARS[@]}"; do
        jar=$work/root/usr/share/java/$name.jar
        [[ -e $jar ]] || die "$name.jar is not in the unpacked packages"
        rewrite_manifest "$(readlink -f "$jar")" "$work/java/$name.jar" || die "could not rewrite $name.jar"
    done
    for jar in /usr/share/java/*.jar; do
        name=$(basename "$jar")
        case $name in zookeeper* | curator*) continue ;; esac
        ln -s "$jar" "$work/java/$name"
    done
    rm -rf "$apt" "$work/debs"
    printf '%s\n' "$STAMP" >"$work/stamp"
    rm -rf "$root"
    mv "$work" "$root"
    trap - EXIT
    echo "zk-debian13: $STAMP unpacked in $root" >&2
    printf '%s\n' "$jars"
}

cmd_dir() {
    fetched || die "$STAMP not fetched into $root (run scripts/zk-debian13.sh fetch, or scripts/install-deps.sh)"
    printf '%s\n' "$jars"
}

[[ $# -eq 1 ]] || die "usage: $0 fetch|dir"
case $1 in
fetch) cmd_fetch ;;
dir) cmd_dir ;;
*) die "usage: $0 fetch|dir" ;;
esac
