#!/usr/bin/env bash
# Start: a one-shot read of a small file (3 KB) beside `cat` of it, both as processes, with hyperfine (installed when
# missing): medians and minimums over RUNS runs after 50 warm-up runs. Other builds to compare are given as
# LABEL=BINARY arguments (default: this tree's release build). With valgrind installed, also the instructions each
# build executes (callgrind, repeatable where wall times are not).
#
#   bench/start.sh                                  # RUNS=500
#   bench/start.sh now=target/release/agent-read before=/tmp/agent-read-before
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || {
  echo "installing hyperfine" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y -qq hyperfine >/dev/null; else sudo apt-get install -y hyperfine; fi
}
cargo build --release --quiet -p agent-read-cli
if [ "$#" -eq 0 ]; then set -- "agent-read=target/release/agent-read"; fi
data=bench/data/start
mkdir -p "$data"
[ -f "$data/small.txt" ] || head -c 3000 README.md > "$data/small.txt"
commands=("cat $data/small.txt")
for build in "$@"; do commands+=("${build#*=} --root $data small.txt"); done
# The floor: the last build starting and exiting without reading (loading the binary, parsing the flags).
last="${*: -1}"
commands+=("${last#*=} --version")
set -- "$@" "${last%%=*} --version (no read)=${last#*=}"
hyperfine -N --warmup 50 --runs "${RUNS:-500}" --export-json "$data/start.json" "${commands[@]}" >/dev/null
python3 - "$data/start.json" "cat" "$@" <<'EOF'
import json, statistics, sys
results = json.load(open(sys.argv[1]))["results"]
labels = sys.argv[2:]
cat = statistics.median(results[0]["times"])
print("| command | median | min | ÷ `cat` (median) |")
print("|---|---:|---:|---:|")
for label, result in zip(labels, results):
    median = statistics.median(result["times"])
    print(f"| {label.split('=')[0]} | {median * 1000:.2f} ms | {min(result['times']) * 1000:.2f} ms | {median / cat:.2f}× |")
EOF
if command -v valgrind >/dev/null; then
  echo
  echo "| command | instructions |"
  echo "|---|---:|"
  for i in "${!commands[@]}"; do
    label=cat; [ "$i" -gt 0 ] && label="${@:$i:1}" && label="${label%%=*}"
    count=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null ${commands[$i]} 2>&1 >/dev/null | sed -n 's/.*refs: *//p')
    echo "| $label | $count |"
  done
fi
