#!/usr/bin/env bash
# Stdio latency of the MCP server beside @modelcontextprotocol/server-filesystem, measured by a lean Rust client
# (bench/mcp_latency/) so that the client's own cost does not hide the servers': sequential pings and reads, and a
# burst of BURST reads in flight at once. Same files as bench/mcp_load.sh. Prints a markdown table (medians of REPS
# repetitions). agent-read answers every read with the file (--no-repeat-stubs), as the Node server does.
#
#   bench/mcp_latency.sh                         # N=5000 calls per sequential phase, BURST=1000, REPS=5
#   N=1000 BURST=200 REPS=1 bench/mcp_latency.sh   # smoke run
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_node_server
cargo build --release --quiet
CARGO_TARGET_DIR="$PWD/target/mcp-latency" cargo build --release --quiet --manifest-path bench/mcp_latency/Cargo.toml
files=$(python3 bench/mcp_load.py --files-only)
node_server=bench/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
exec target/mcp-latency/release/mcp-latency "$files" "${N:-5000}" "${REPS:-5}" "${BURST:-1000}" \
  -- agent-read read target/release/agent-read mcp --no-repeat-stubs --root "$files" \
  -- server-filesystem read_text_file node "$node_server" "$files" \
  2> >(grep -v '^{' >&2)
