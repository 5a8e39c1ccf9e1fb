#!/usr/bin/env bash
# Side-by-side comparison of read tools on the same files, in one run: agent-read (cold CLI, CLI with an index
# cache, warm in-process), coreutils equivalents, harness-read 0.1.1 and @modelcontextprotocol/server-filesystem.
# Installs what is missing (GNU time, the pinned Node server under bench/node/, harness-read under
# bench/harness-read/), builds the release binary and the warm_read example, then runs bench/compare_bench.py,
# which prints markdown tables and writes bench/data/compare-results.json. Method: see bench/compare_bench.py.
#
#   bench/compare.sh              # 7 runs per tool and case (3 for tools whose warm-up takes over 5 s)
#   RUNS=3 bench/compare.sh       # quicker, noisier
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
ensure_node_server
if [ ! -x bench/harness-read/bin/harness-read-cli ]; then
  echo "installing harness-read 0.1.1 under bench/harness-read/" >&2
  cargo install harness-read --version 0.1.1 --locked --root bench/harness-read
fi
cargo build --release --quiet
cargo build --release --quiet --example warm_read
exec python3 bench/compare_bench.py "$@"
