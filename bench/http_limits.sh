#!/usr/bin/env bash
# The HTTP face under slowloris, idle sockets and an initialize flood (bench/http_limits.py): builds the release
# binary and runs the three loads, each against a server of its own, reporting open connections, descriptors, peak
# RSS and how long a new client waits. Arguments name the loads to run (slowloris, idle, init; default all).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
exec python3 bench/http_limits.py "$@"
