#!/usr/bin/env bash
# Latency of the MCP server beside @modelcontextprotocol/server-filesystem, measured by a lean Rust client
# (bench/mcp_latency/) so that the client's own cost does not hide the servers': sequential pings and reads, and a
# burst of BURST reads in flight at once. agent-read runs three times side by side: over stdio, and over streamable
# HTTP in session mode and stateless (each on a free port of 127.0.0.1; ping and reads on one keep-alive connection,
# the burst on BURST connections opened before it, one POST each). The Node server runs twice too: over stdio, its
# own transport, and over streamable HTTP with a session (bench/node/over_http.mjs: its code unchanged, the SDK's HTTP
# transport in place of stdio). Each row's ratios are against the Node server on the same transport (`--ref`), so HTTP
# is set beside HTTP (BENCHMARKS.md's older tables set every row against Node over stdio). Same files as
# bench/mcp_load.sh. Prints a markdown table (medians of REPS repetitions). agent-read answers every read with the
# file (--no-repeat-stubs), as the Node server does.
#
# Each repetition begins with every server idle IDLE_BEFORE seconds (default 11: agent-read gives freed memory back
# after 10 quiet seconds), and each server's phases begin with one more burst, the `burst after idle` columns: a burst
# on memory given back. The `burst` columns are then a burst on a server that has been busy.
#
# The floor rows (FLOOR=1, the default) are bench/mcp_floor/: an rmcp server that sends agent-read's very answers from
# memory, with no file read, on the same transports. They show what the SDK, the JSON and the transport cost alone, so
# how near any rmcp server could come to a target.
#
#   bench/mcp_latency.sh                         # N=5000 calls per sequential phase, BURST=1000, REPS=5
#   N=1000 BURST=200 REPS=1 IDLE_BEFORE=0 bench/mcp_latency.sh   # smoke run (no bursts after idle)
#   AGENT_READ_BIN=/path/to/agent-read bench/mcp_latency.sh   # another build of agent-read (none is built then)
#   FLOOR=0 bench/mcp_latency.sh                 # without the floor rows
#   NODE_HTTP=0 bench/mcp_latency.sh             # without Node over HTTP: every row against Node over stdio
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_node_server
bin=${AGENT_READ_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=target/release/agent-read
fi
CARGO_TARGET_DIR="$PWD/target/mcp-latency" cargo build --release --quiet --manifest-path bench/mcp_latency/Cargo.toml
floor_rows=()
if [ "${FLOOR:-1}" = 1 ]; then
  CARGO_TARGET_DIR="$PWD/target/mcp-floor" cargo build --release --quiet --manifest-path bench/mcp_floor/Cargo.toml
  floor=target/mcp-floor/release/mcp-floor
fi
files=$(python3 bench/mcp_load.py --files-only)
node_server=bench/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
ours=("$bin" mcp --no-repeat-stubs --root "$files")
if [ "${FLOOR:-1}" = 1 ]; then
  floor_rows=(
    -- "floor (rmcp, no read)" read "$floor" "$files"
    -- "floor HTTP session" read --http auto "$floor" "$files" --http '127.0.0.1:{port}'
    -- "floor HTTP stateless" read --http auto "$floor" "$files" --http '127.0.0.1:{port}' --stateless
  )
fi
node_http_rows=()
if [ "${NODE_HTTP:-1}" = 1 ]; then
  node_http_rows=(-- "server-filesystem HTTP session" read_text_file --ref --http auto node bench/node/over_http.mjs '{port}' "$files")
fi
# `--http auto` has the client pick a free port, which it puts in place of {port}.
export IDLE_BEFORE=${IDLE_BEFORE:-11}
exec target/mcp-latency/release/mcp-latency "$files" "${N:-5000}" "${REPS:-5}" "${BURST:-1000}" \
  -- agent-read read "${ours[@]}" \
  -- "agent-read HTTP session" read --http auto "${ours[@]}" --http '127.0.0.1:{port}' \
  -- "agent-read HTTP stateless" read --http auto "${ours[@]}" --http '127.0.0.1:{port}' --stateless \
  "${floor_rows[@]}" \
  "${node_http_rows[@]}" \
  -- server-filesystem read_text_file --ref node "$node_server" "$files" \
  2> >(grep -v '^{' >&2)
