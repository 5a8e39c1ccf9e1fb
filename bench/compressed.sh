#!/usr/bin/env bash
# Compressed text: a deep window of a large gzip-, zstd-, bzip2- and xz-compressed log, cold beside
# `zcat FILE | sed -n 'A,Bp'` (and `zstdcat`, `bzcat`, `xzcat`) on the same file in the same run, and warm: repeated in
# one MCP server. Builds the release binary, installs GNU time, zstd (with pzstd), bzip2, pbzip2 and xz-utils if
# missing, generates the files under bench/data/. bench/compressed_bench.py says what it measures and its settings (SIZE_MIB, CODECS, RUNS, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
if ! command -v zstd >/dev/null || ! command -v pzstd >/dev/null; then
  echo "installing zstd (the reference for .zst, and pzstd for many frames)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq zstd >/dev/null; else sudo apt-get install -y zstd; fi
fi
for tool in bzip2 pbzip2; do
  if ! command -v "$tool" >/dev/null; then
    echo "installing $tool (bzcat is the reference for .bz2; pbzip2 writes one stream per block)" >&2
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq "$tool" >/dev/null; else sudo apt-get install -y "$tool"; fi
  fi
done
if ! command -v xz >/dev/null; then
  echo "installing xz-utils (xzcat is the reference for .xz)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq xz-utils >/dev/null; else sudo apt-get install -y xz-utils; fi
fi
cargo build --release --quiet
exec python3 bench/compressed_bench.py "$@"
