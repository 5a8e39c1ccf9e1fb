#!/usr/bin/env bash
# Glob walks: `agent-read many 'crates/**/*.rs'` over a generated Rust monorepo of about 14,000 entries
# (bench/globs_tree.py) beside `find crates -name '*.rs' | sort | head -50` for the same 50 files (the tree's ignored
# folders pruned, as the walk skips them), with hyperfine (installed when missing): medians over RUNS runs. With
# strace installed, also the system calls each makes (`strace -c -f`). Other builds to compare are given as
# LABEL=BINARY arguments (default: this tree's release build).
#
#   bench/globs.sh                                  # RUNS=30
#   bench/globs.sh now=target/release/agent-read before=/tmp/agent-read-before
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || {
  echo "installing hyperfine" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y -qq hyperfine >/dev/null; else sudo apt-get install -y hyperfine; fi
}
cargo build --release --quiet -p agent-read-cli
if [ "$#" -eq 0 ]; then set -- "agent-read=target/release/agent-read"; fi
tree=bench/data/globs-tree
python3 bench/globs_tree.py "$tree"
find_cmd="find $tree/crates \\( -name target -o -name generated \\) -prune -o -name '*.rs' -print | LC_ALL=C sort | head -50"
# The same answer: the first 50 files of both, as paths beneath the tree.
expected=$(sh -c "$find_cmd" | sed "s|^$tree/||")
commands=("sh -c \"$find_cmd\"")
for build in "$@"; do
  bin=${build#*=}
  got=$("$bin" --root "$tree" many 'crates/**/*.rs' --json | python3 -c '
import json, sys
many = json.load(sys.stdin)
# The 50 files kept: those shown, and those the cap left no room for (listed with their read call).
kept = [f["path"] for f in many["files"]] + [s["path"] for s in many["skipped"] if s.get("path")]
print("\n".join(kept))')
  # agent-read reads the smallest files first but lists them in path order: compare the sets.
  if [ "$(sort <<<"$got")" != "$(sort <<<"$expected")" ]; then
    echo "${build%%=*}: not the same 50 files as find" >&2
    diff <(sort <<<"$expected") <(sort <<<"$got") >&2 || true
    exit 1
  fi
  commands+=("$bin --root $tree many crates/**/*.rs")
done
hyperfine -N --warmup 3 --runs "${RUNS:-30}" --export-json "$tree.json" "${commands[@]}" >/dev/null
python3 - "$tree.json" "find \\| sort \\| head" "$@" <<'EOF'
import json, statistics, sys
results = json.load(open(sys.argv[1]))["results"]
labels = sys.argv[2:]
ref = statistics.median(results[0]["times"])
print("| command | median | min | ÷ find (median) |")
print("|---|---:|---:|---:|")
for label, result in zip(labels, results):
    median = statistics.median(result["times"])
    print(f"| {label.split('=')[0]} | {median * 1000:.1f} ms | {min(result['times']) * 1000:.1f} ms | {median / ref:.2f}× |")
EOF
if command -v strace >/dev/null; then
  echo
  echo "| command | system calls | failed |"
  echo "|---|---:|---:|"
  for i in "${!commands[@]}"; do
    label="find \\| sort \\| head"; [ "$i" -gt 0 ] && label="${@:$i:1}" && label="${label%%=*}"
    if [ "$i" -eq 0 ]; then cmd=(sh -c "$find_cmd"); else cmd=("${@:$i:1}"); cmd=("${cmd[0]#*=}" --root "$tree" many 'crates/**/*.rs'); fi
    strace -f -c -o "$tree.strace" "${cmd[@]}" >/dev/null
    awk -v label="$label" '$NF == "total" { print "| " label " | " $4 " | " (NF == 6 ? $5 : 0) " |" }' "$tree.strace"
  done
fi
