#!/usr/bin/env bash
# Load benchmark of the MCP server beside @modelcontextprotocol/server-filesystem, in the same run, on the same files.
# Builds the release binary, installs the pinned Node server under bench/node/ (npm ci; npm install the first time,
# which writes the lock file), generates the files, runs bench/mcp_load.py and prints markdown tables.
#
#   bench/mcp_load.sh                                   # full run: 10,000 sequential, 1,000 concurrent, 5 repetitions
#   N_SEQ=500 N_CONC=100 N_SEQ_HTTP=100 REPS=1 bench/mcp_load.sh     # smoke run
#   SERVERS=ours-stdio,node-stdio HTTP=0 bench/mcp_load.sh               # stdio only
# Other knobs (N_FILES, N_PING, WARMUP, PHASE_TIMEOUT, ...) are described at the top of bench/mcp_load.py.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_node_server
cargo build --release --quiet
exec python3 bench/mcp_load.py "$@"
