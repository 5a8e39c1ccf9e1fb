#!/usr/bin/env bash
# One command for the read benchmark: builds the release binary, installs GNU time if missing, runs the comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
cargo build --release --quiet
exec python3 bench/read_bench.py "$@"
