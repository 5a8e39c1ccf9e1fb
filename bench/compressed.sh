#!/usr/bin/env bash
# Compressed text: a deep window of a large gzip-, zstd- and xz-compressed log, cold beside
# `zcat FILE | sed -n 'A,Bp'` (and `zstdcat`, `xzcat`) on the same file in the same run, and warm: repeated in one MCP
# server. Builds the release binary, installs GNU time and zstd (with pzstd) if missing, generates the files under
# bench/data/.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
if ! command -v zstd >/dev/null || ! command -v pzstd >/dev/null; then
  echo "installing zstd (the reference for .zst, and pzstd for many frames)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq zstd >/dev/null; else sudo apt-get install -y zstd; fi
fi
cargo build --release --quiet
exec python3 bench/compressed_bench.py "$@"
