#!/usr/bin/env bash
# Directory pages: paging through a directory of 200,000 entries over MCP (stdio), every page timed, and its first
# page from a new process beside `ls -f | head` and `ls | head`. Builds to compare are given as LABEL=BINARY
# arguments (default: this tree's release build); the directory is written once under bench/data/.
#
#   bench/dirs.sh                                   # COUNT=200000 RUNS=11 REPS=3
#   bench/dirs.sh now=target/release/agent-read before=/tmp/agent-read-before
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p agent-read-cli
if [ "$#" -eq 0 ]; then set -- "agent-read=target/release/agent-read"; fi
exec python3 bench/dirs_bench.py "$@"
