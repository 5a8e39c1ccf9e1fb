#!/usr/bin/env bash
# End-to-end test of `agent-read mcp` with the official MCP TypeScript SDK's client (crates/agent-read-cli/tests/e2e/ts/mcp_e2e.mjs):
# installs the pinned SDK into crates/agent-read-cli/tests/e2e/ts/node_modules (npm ci, only when the lock file changed), builds the binary
# (unless $AGENT_READ_BIN names one) and runs the checks with Node's test runner. Works from any directory.
set -euo pipefail

# A relative AGENT_READ_BIN names a path from where we were called.
if [ -n "${AGENT_READ_BIN:-}" ]; then
  AGENT_READ_BIN=$(realpath -m -- "$AGENT_READ_BIN")
fi
cd "$(dirname "$0")/../../../.."

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "e2e-ts: node (18 or newer) and npm are needed; on Debian: apt-get install nodejs npm" >&2
  exit 1
fi
(
  cd crates/agent-read-cli/tests/e2e/ts
  if ! cmp -s package-lock.json node_modules/.installed-lock 2>/dev/null; then
    echo "e2e-ts: installing the pinned SDK into crates/agent-read-cli/tests/e2e/ts/node_modules"
    npm ci --no-audit --no-fund --loglevel=error
    cp package-lock.json node_modules/.installed-lock
  fi
)

command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
if [ -z "${AGENT_READ_BIN:-}" ]; then
  cargo build --locked --bin agent-read
  AGENT_READ_BIN="${CARGO_TARGET_DIR:-target}/debug/agent-read"
fi
export AGENT_READ_BIN
exec node --test --test-reporter=spec "$@" crates/agent-read-cli/tests/e2e/ts/mcp_e2e.mjs
