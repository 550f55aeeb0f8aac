#!/usr/bin/env bash
# Make sure the tools the tests need are present; safe to run again and again.
#
#   Debian packages: zookeeper (3.8, the test server) and libcurator-recipes-java
#                    (Curator 5.4, for interop), plus python3 and openssl used by the scripts
#   Debian 13:       ZooKeeper 3.9.3 and Curator 5.7.1 for CI's version matrix, downloaded
#                    and unpacked into target/debian13, never installed (scripts/zk-debian13.sh)
#   Kerberos:        krb5-kdc, krb5-admin-server and krb5-user (the private KDC of
#                    scripts/zk-kerberos.sh, kinit/kdestroy), and
#                    for the `gssapi` features MIT krb5's development files
#                    (libkrb5-dev), libclang-dev (bindgen) and pkg-config
#   Java:            `java -version` must work, and `javac` (default-jdk-headless when
#                    missing): the interop tests compile their Curator driver
#   Python:          kazoo (pip), for conformance/tests/foreign_clients.rs
#   Rust:            rustfmt and clippy components, the rust-version toolchain,
#                    cargo-deny (cargo install, from crates.io)
#
# Only touches apt when a package is missing. Needs root (or passwordless sudo)
# in that case.
set -euo pipefail

die() {
    echo "install-deps: $*" >&2
    exit 1
}

have_pkg() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

# --- Debian packages -------------------------------------------------------
command -v dpkg-query >/dev/null 2>&1 || die "dpkg not found: this script expects Debian or Ubuntu"

missing=()
for pkg in zookeeper libcurator-recipes-java; do
    have_pkg "$pkg" || missing+=("$pkg")
done
command -v python3 >/dev/null 2>&1 || missing+=(python3)
# Secured test servers (zk-server.sh ZK_SECURE=tls) make their PKI with it.
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# The interop tests (conformance/tests/interop.rs) compile a Java driver.
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
# SASL GSSAPI: the KDC rig, and what `--features gssapi` builds against.
for pkg in krb5-kdc krb5-admin-server krb5-user libkrb5-dev libclang-dev pkg-config; do
    have_pkg "$pkg" || missing+=("$pkg")
done

if ((${#missing[@]})); then
    echo "install-deps: installing ${missing[*]}"
    sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to install ${missing[*]}"
        sudo=(sudo -n)
    fi
    # Wait for a concurrent apt/dpkg run instead of failing on its lock.
    apt_opts=(-o DPkg::Lock::Timeout=600)
    "${sudo[@]}" apt-get "${apt_opts[@]}" update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get "${apt_opts[@]}" install -y "${missing[@]}"
    for pkg in "${missing[@]}"; do
        [[ $pkg == python3 ]] || have_pkg "$pkg" || die "$pkg is still not installed"
    done
fi

for jar in zookeeper zookeeper-jute slf4j-api slf4j-simple guava curator-client curator-framework curator-recipes; do
    [[ -f /usr/share/java/$jar.jar ]] || die "/usr/share/java/$jar.jar is missing after install"
done
echo "install-deps: zookeeper $(dpkg-query -W -f='${Version}' zookeeper)," \
    "libcurator-recipes-java $(dpkg-query -W -f='${Version}' libcurator-recipes-java)"

# --- ZooKeeper 3.9.3 and Curator 5.7.1 (CI's version matrix) ---------------
debian13=$(bash "$(dirname "${BASH_SOURCE[0]}")/zk-debian13.sh" fetch) ||
    die "could not fetch ZooKeeper 3.9.3 and Curator 5.7.1 from Debian 13"
echo "install-deps: ZooKeeper 3.9.3 and Curator 5.7.1 in $debian13"

# --- Java ------------------------------------------------------------------
command -v java >/dev/null 2>&1 || die "java not found (the zookeeper package should have pulled in default-jre)"
java_version=$(java -version 2>&1) || die "\`java -version\` failed: $java_version"
echo "install-deps: ${java_version%%$'\n'*}"
command -v javac >/dev/null 2>&1 || die "javac not found (default-jdk-headless should provide it)"
echo "install-deps: $(javac -version 2>&1)"

# --- Python: kazoo --------------------------------------------------------
# conformance/tests/foreign_clients.rs runs conformance/python/kazoo_locks.py.
if ! python3 -c 'import kazoo' >/dev/null 2>&1; then
    echo "install-deps: pip install kazoo"
    # A Debian-managed python3 refuses plain pip installs (PEP 668): then
    # install for this user only.
    python3 -m pip install --quiet kazoo ||
        python3 -m pip install --quiet --user --break-system-packages kazoo ||
        die "pip install kazoo failed (is python3-pip installed?)"
    python3 -c 'import kazoo' >/dev/null 2>&1 || die "kazoo is still not importable after pip install"
fi
echo "install-deps: kazoo $(python3 -c 'import importlib.metadata as m; print(m.version("kazoo"))')"

# --- Rust components -------------------------------------------------------
command -v cargo >/dev/null 2>&1 || die "cargo not found: install a Rust toolchain (https://rustup.rs)"
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    echo "install-deps: rustfmt or clippy missing, trying rustup component add"
    command -v rustup >/dev/null 2>&1 ||
        die "rustfmt/clippy missing and rustup not found: install them with your toolchain's package manager"
    rustup component add rustfmt clippy ||
        die "rustup could not add rustfmt/clippy (no network?): install them and re-run"
    cargo fmt --version >/dev/null 2>&1 || die "cargo fmt still not available"
    cargo clippy --version >/dev/null 2>&1 || die "cargo clippy still not available"
fi
echo "install-deps: $(cargo fmt --version), $(cargo clippy --version)"

# The minimum supported Rust version (rust-version in Cargo.toml): .ci/run
# builds the workspace with it too.
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../Cargo.toml")
[[ -n $msrv ]] || die "no rust-version in Cargo.toml"
if ! cargo "+$msrv" --version >/dev/null 2>&1; then
    echo "install-deps: installing the Rust $msrv toolchain (rust-version)"
    command -v rustup >/dev/null 2>&1 || die "Rust $msrv missing and rustup not found"
    rustup toolchain install "$msrv" --profile minimal ||
        die "rustup could not install Rust $msrv (no network?): install it and re-run"
fi
echo "install-deps: rust-version $msrv: $(cargo "+$msrv" --version)"

# cargo-deny (crates.io), for `cargo deny --offline check licenses bans` in
# .ci/run; pinned so CI checks the same way every time.
deny_version=0.20.2
if [[ $(cargo deny --version 2>/dev/null) != "cargo-deny $deny_version" ]]; then
    echo "install-deps: cargo install cargo-deny $deny_version"
    cargo install --locked cargo-deny --version "$deny_version" ||
        die "cargo install cargo-deny failed (no network?): install it and re-run"
fi
echo "install-deps: $(cargo deny --version)"
echo "install-deps: ok"
