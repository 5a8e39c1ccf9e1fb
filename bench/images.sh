#!/usr/bin/env bash
# Image memory benchmark: peak RSS of an 8000 x 6000 PNG, a 6000 x 4000 JPEG, and six concurrent MCP reads of a small
# PNG declaring 11,000 x 11,000 pixels. Builds the release binary, installs GNU time if missing, writes the files
# under bench/data/images/ and prints a table. AGENT_READ_BEFORE=/path/to/other/agent-read adds its rows beside.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
cargo build --release --quiet
mkdir -p bench/data/images
exec python3 bench/images_bench.py "$@"
