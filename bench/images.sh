#!/usr/bin/env bash
# Images beside libvips' vipsthumbnail (the reference, same run): wall time and peak RSS of an 8000 x 6000 PNG and a
# 6000 x 4000 JPEG downscaled to 2000 px, a 2000 x 1000 region of the PNG at full resolution (vips crop), and six
# concurrent MCP reads of a small PNG declaring 11,000 x 11,000 pixels. Builds the release binary, installs GNU time
# and libvips-tools if missing, writes the files under bench/data/images/ and prints a table.
# AGENT_READ_BEFORE=/path/to/other/agent-read adds its rows beside.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
if ! command -v vipsthumbnail >/dev/null; then
  echo "installing libvips-tools (vipsthumbnail, the reference)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq libvips-tools >/dev/null; else sudo apt-get install -y libvips-tools; fi
fi
cargo build --release --quiet
mkdir -p bench/data/images
exec python3 bench/images_bench.py "$@"
