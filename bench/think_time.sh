#!/usr/bin/env bash
# Sequential reads with a model's turn between them: THINK_MS (default 1-5) milliseconds after each answer before the
# next request, on a mix of small and larger files (bench/data/think-files/: the 200 small source files of
# bench/mcp_load.py, 1-8 KiB, and 40 larger ones, 16 KiB to 1 MiB). Two builds of agent-read side by side, over stdio
# and over HTTP (session mode), measured by the lean client of bench/mcp_latency/: this tree's (or AGENT_READ_BIN) and
# OTHER_BIN, a build of another commit, which is the reference of the ratios. Medians of REPS repetitions of N calls,
# the servers' order rotating; then each server's resident memory after RSS_AFTER seconds quiet (default 12).
#
#   git worktree add /tmp/other COMMIT && (cd /tmp/other && cargo build --release)
#   OTHER_BIN=/tmp/other/target/release/agent-read bench/think_time.sh       # N=1000 REPS=5 THINK_MS=1-5
set -euo pipefail
cd "$(dirname "$0")/.."
other=${OTHER_BIN:?give OTHER_BIN, the agent-read build to compare with (see the comment at the top)}
bin=${AGENT_READ_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=target/release/agent-read
fi
CARGO_TARGET_DIR="$PWD/target/mcp-latency" cargo build --release --quiet --manifest-path bench/mcp_latency/Cargo.toml
small=$(python3 bench/mcp_load.py --files-only)
files=$PWD/bench/data/think-files
if [ ! -f "$files.complete" ]; then
  rm -rf "$files" && mkdir -p "$files/large"
  cp -r "$small" "$files/small"
  # Larger files: the small ones concatenated, 16 KiB to 1 MiB, sizes spread evenly on a log scale.
  python3 - "$small" "$files/large" <<'EOF'
import os, sys
small, large = sys.argv[1], sys.argv[2]
texts = [open(os.path.join(root, name)).read() for root, _, names in sorted(os.walk(small)) for name in sorted(names)]
for i in range(40):
    size = int(16 * 1024 * (64 ** (i / 39)))
    out, k = [], i
    while sum(map(len, out)) < size:
        out.append(texts[k % len(texts)])
        k += 7
    with open(os.path.join(large, f"big_{i:02}.txt"), "w") as f:
        f.write("".join(out))
EOF
  touch "$files.complete"
fi
ours=(mcp --no-repeat-stubs --root "$files")
export THINK_MS=${THINK_MS:-1-5} RSS_AFTER=${RSS_AFTER:-12} IDLE_BEFORE=0
exec target/mcp-latency/release/mcp-latency "$files" "${N:-1000}" "${REPS:-5}" 0 \
  -- "this build" read "$bin" "${ours[@]}" \
  -- "other build" read --ref "$other" "${ours[@]}" \
  -- "this build HTTP" read --http auto "$bin" "${ours[@]}" --http '127.0.0.1:{port}' \
  -- "other build HTTP" read --ref --http auto "$other" "${ours[@]}" --http '127.0.0.1:{port}' \
  2> >(grep -v '^{' >&2)
