# Shared by the benchmark scripts (sourced, not run).

# Peak RSS comes from GNU time's -v; install it when missing.
ensure_gnu_time() {
  if [ ! -x /usr/bin/time ]; then
    echo "installing GNU time (for peak RSS)" >&2
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq time >/dev/null; else sudo apt-get install -y time; fi
  fi
}

# The reference MCP server, @modelcontextprotocol/server-filesystem, pinned in bench/node/package-lock.json.
ensure_node_server() {
  command -v node >/dev/null && command -v npm >/dev/null || {
    echo "node (20 or newer) and npm are needed for the reference server; e.g. apt-get install nodejs npm" >&2
    exit 2
  }
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
}
