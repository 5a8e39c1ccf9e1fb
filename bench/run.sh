#!/usr/bin/env bash
# One command for the read benchmark: builds the release binary, installs GNU time if missing, runs the comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/bin/time ]; then
  echo "installing GNU time (for peak RSS)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq time >/dev/null; else sudo apt-get install -y time; fi
fi
cargo build --release --quiet
exec python3 bench/read_bench.py "$@"
