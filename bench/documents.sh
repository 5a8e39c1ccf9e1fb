#!/usr/bin/env bash
# Documents benchmark: agent-read and markitdown (PyPI 0.1.9, the reference users pick for documents) on the same
# DOCX, XLSX, XLS, PPTX, EPUB and HTML files, time end to end and fidelity side by side (ODT and ODS, which markitdown
# does not read, timed alone); then deep windows of sheets of a million rows (XLSX; ODS, when LibreOffice is installed
# to make it) and of a full XLS, time and peak RSS beside markitdown converting the same workbooks. Builds the release binary, installs GNU time and markitdown (in a virtual environment
# under target/) and prints the tables.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
cargo build --release --quiet
VENV=target/bench-markitdown
if [ ! -x "$VENV/bin/markitdown" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "markitdown[docx,xlsx,xls,pptx]==0.1.9" openpyxl xlwt
fi
exec "$VENV/bin/python" bench/documents_bench.py "$@"
