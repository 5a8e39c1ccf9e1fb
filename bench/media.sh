#!/usr/bin/env bash
# Media benchmark: downscaling a 9600 x 6000 PNG and extracting a 200-page PDF, beside baselines in the same run.
# Builds the release binary, installs GNU time if missing, generates the files under bench/data/ and prints a table.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
cargo build --release --quiet
exec python3 bench/media_bench.py "$@"
