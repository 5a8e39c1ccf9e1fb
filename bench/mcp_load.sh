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
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "node (20 or newer) and npm are needed for the reference server; e.g. apt-get install nodejs npm" >&2
  exit 2
}
cargo build --release --quiet
(
  cd bench/node
  if [ -f package-lock.json ]; then
    # Reinstall only when the lock file changed since the last install.
    if ! cmp -s package-lock.json node_modules/.bench-installed-lock 2>/dev/null; then
      npm ci --no-audit --no-fund --loglevel=error >&2
      cp package-lock.json node_modules/.bench-installed-lock
    fi
  else
    npm install --no-audit --no-fund --loglevel=error >&2
    cp package-lock.json node_modules/.bench-installed-lock
  fi
)
exec python3 bench/mcp_load.py "$@"
