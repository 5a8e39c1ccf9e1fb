#!/usr/bin/env bash
# The first window, a deep window and the tail of a 10 GiB log (SIZE_GIB to change it), each a process beside head,
# sed and tail on the same file; the tail's count beside `wc -l`, and the same reads once the line index knows the
# file (`--index-cache`). Medians of RUNS runs, interleaved, page cache warm (the file must fit in memory for that);
# peak RSS from GNU time. The log is deleted afterwards unless KEEP_DATA=1.
#
#   bench/huge.sh                 # RUNS=5 SIZE_GIB=10
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
cargo build --release --quiet -p agent-read-cli
exec python3 bench/huge_bench.py "${AGENT_READ_BIN:-target/release/agent-read}"
