#!/usr/bin/env bash
# Documents benchmark: agent-read and markitdown (PyPI 0.1.9, the reference users pick for documents) on the same
# DOCX, XLSX, XLS, PPTX, EPUB and HTML files, time end to end and fidelity side by side (ODT and ODS, which markitdown
# does not read, timed alone); then a deep window of a sheet of a million rows, time and peak RSS beside markitdown
# converting the same workbook. Builds the release binary, installs GNU time and markitdown (in a virtual environment
# under target/) and prints the tables.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
cargo build --release --quiet
VENV=target/bench-markitdown
if [ ! -x "$VENV/bin/markitdown" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "markitdown[docx,xlsx,xls,pptx]==0.1.9" openpyxl
fi
exec "$VENV/bin/python" bench/documents_bench.py "$@"
