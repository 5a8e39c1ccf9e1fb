#!/usr/bin/env bash
# `find` beside grep on a 1 GiB log (SIZE_MIB to change it): the first match near the start, the one match near the
# end, a match on every line, no match (with and without a literal to look for), each beside `grep -n -m1` and
# `grep -c` on the same pattern. Medians of RUNS runs, interleaved, page cache warm; peak RSS from GNU time.
#
#   bench/find.sh                 # RUNS=5 SIZE_MIB=1024
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ensure_gnu_time
cargo build --release --quiet -p agent-read-cli
exec python3 bench/find_bench.py "${AGENT_READ_BIN:-target/release/agent-read}"
