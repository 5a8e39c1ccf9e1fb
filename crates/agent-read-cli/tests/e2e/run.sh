#!/usr/bin/env bash
# End-to-end test of `agent-read mcp` with the official MCP Python SDK (crates/agent-read-cli/tests/e2e/mcp_e2e.py): creates (or reuses)
# a virtual environment at target/e2e-venv with the pinned SDK, builds the binary (unless $AGENT_READ_BIN names one)
# and runs the checks.
# Arguments go to the script, e.g. `crates/agent-read-cli/tests/e2e/run.sh --transport stdio`. Works from any directory.
set -euo pipefail

# A relative AGENT_READ_BIN names a path from where we were called.
if [ -n "${AGENT_READ_BIN:-}" ]; then
  AGENT_READ_BIN=$(realpath -m -- "$AGENT_READ_BIN")
fi
cd "$(dirname "$0")/../../../.."

command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
venv=target/e2e-venv
requirements=crates/agent-read-cli/tests/e2e/requirements.txt

# Reuse the venv unless its interpreter is gone (e.g. the Python it was made from was removed).
if [ -e "$venv" ] && ! "$venv/bin/python" -c '' >/dev/null 2>&1; then
  echo "e2e: $venv is broken; making it anew"
  rm -rf "$venv"
fi
if [ ! -e "$venv" ]; then
  if ! "${PYTHON:-python3}" -m venv "$venv"; then
    rm -rf "$venv"
    echo "e2e: cannot create a virtual environment with ${PYTHON:-python3} (on Debian: apt-get install python3-venv)" >&2
    exit 1
  fi
fi

# Install only when a pinned version is missing: a reused venv needs no network.
pins_installed() {
  "$venv/bin/python" - "$requirements" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version

for line in open(sys.argv[1], encoding="utf-8"):
    requirement = line.split("#", 1)[0].strip()
    if not requirement:
        continue
    name, _, pinned = requirement.partition("==")
    try:
        if version(name.strip()) != pinned.strip():
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
}
if ! pins_installed; then
  echo "e2e: installing $(grep -v '^#' "$requirements" | xargs) into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
fi

# A given binary is tested as it is (CI passes the one `cargo test` built, so no second set of dependencies is built).
if [ -z "${AGENT_READ_BIN:-}" ]; then
  cargo build --locked --bin agent-read
  export AGENT_READ_BIN="${CARGO_TARGET_DIR:-target}/debug/agent-read"
fi
exec "$venv/bin/python" crates/agent-read-cli/tests/e2e/mcp_e2e.py "$@"
