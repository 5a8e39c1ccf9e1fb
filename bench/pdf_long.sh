#!/usr/bin/env bash
# Long and hostile PDFs: a 20,000-page and a 100,000-page PDF read by their first pages, a range and their last pages,
# and an 82 KB PDF of 8 million text operators, beside poppler's pdftotext on the same pages in the same run.
# Builds the release binary, installs GNU time and poppler-utils if missing, generates the files under bench/data/.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
if ! command -v pdftotext >/dev/null; then
  echo "installing poppler-utils (pdftotext, the reference)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq poppler-utils >/dev/null; else sudo apt-get install -y poppler-utils; fi
fi
cargo build --release --quiet
exec python3 bench/pdf_long_bench.py "$@"
