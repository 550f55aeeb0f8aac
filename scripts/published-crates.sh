#!/usr/bin/env bash
# The crates published to crates.io: every workspace member whose Cargo.toml
# does not say `publish = false`, in workspace order, read from cargo
# metadata. The one list: `.ci/run`'s publish dry run and packaged-tests
# steps read it, and CONTRIBUTING's dry-run command runs it.
#
#   scripts/published-crates.sh        one name a line
#   scripts/published-crates.sh -p     `-p NAME` pairs on one line, for cargo
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
json=$(cargo metadata --no-deps --format-version 1)
python3 -c '
import json, sys
flags = sys.argv[1:] == ["-p"]
names = [p["name"] for p in json.load(sys.stdin)["packages"] if p["publish"] != []]
if not names:
    sys.exit("published-crates: no publishable workspace member")
print(" ".join("-p " + n for n in names) if flags else "\n".join(names))
' "$@" <<<"$json"
