#!/usr/bin/env bash
# Documents benchmark: agent-read and markitdown (PyPI 0.1.9, the reference users pick for documents) on the same
# DOCX, XLSX, PPTX and HTML files, time end to end and fidelity side by side. Builds the release binary, installs
# markitdown in a virtual environment under target/ and prints a table.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
VENV=target/bench-markitdown
if [ ! -x "$VENV/bin/markitdown" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "markitdown[docx,xlsx,pptx]==0.1.9" openpyxl
fi
exec "$VENV/bin/python" bench/documents_bench.py "$@"
