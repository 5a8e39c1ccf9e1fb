#!/usr/bin/env bash
# Archives: listing a zip of 10,000 members and reading one, a member of a tar.gz of 10,000, and a window deep in a
# 256 MiB log inside a zip, beside `unzip -l`, `unzip -p | sed -n` and `tar -xzOf | sed -n` on the same files in the
# same run. Builds the release binary, installs GNU time and unzip if missing, generates the files under bench/data/.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
if ! command -v unzip >/dev/null; then
  echo "installing unzip (the reference for .zip)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq unzip >/dev/null; else sudo apt-get install -y unzip; fi
fi
cargo build --release --quiet
exec python3 bench/archives_bench.py "$@"
