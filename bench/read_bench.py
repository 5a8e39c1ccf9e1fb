#!/usr/bin/env python3
"""Benchmark agent-read against `wc -l` on the same files, in the same run.

Generates (once, under bench/data/) a 1 GiB file of 55-byte lines and a 64 MiB single-line file, then times:
  (a) offset=10000000 limit=100 on the 1 GiB file
  (b) offset=-100 on the 1 GiB file
  (c) the default read of the 64 MiB single-line file
each beside `wc -l` on the same file. Every command runs RUNS times after a warm-up (page cache hot); the table
shows medians of wall time, the ratio to `wc -l`, and peak RSS from `/usr/bin/time -v`.
"""
import os
import re
import statistics
import subprocess
import sys
import time

RUNS = int(os.environ.get("BENCH_RUNS", "7"))
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
BIN = os.environ.get("AGENT_READ_BIN", os.path.join(HERE, "..", "target", "release", "agent-read"))
GIB = 1 << 30
MIB64 = 64 << 20


def generate():
    os.makedirs(DATA, exist_ok=True)
    big = os.path.join(DATA, "lines-1gib.txt")
    if not os.path.exists(big) or os.path.getsize(big) != GIB:
        print("generating", big, file=sys.stderr)
        # 54 digits + newline = 55 bytes a line; the last line is cut by head -c (no final newline).
        subprocess.run(f"seq -f '%054.0f' 1 19522579 | head -c {GIB} > '{big}'", shell=True, check=True)
    single = os.path.join(DATA, "single-line-64mib.txt")
    if not os.path.exists(single) or os.path.getsize(single) != MIB64:
        print("generating", single, file=sys.stderr)
        subprocess.run(f"head -c {MIB64} /dev/zero | tr '\\0' 'a' > '{single}'", shell=True, check=True)
    return big, single


def measure(cmd):
    """One run: wall seconds (perf_counter around the process) and peak RSS in KiB (/usr/bin/time -v)."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    return wall, rss


def bench(cmds):
    """Interleaves the commands run by run, so machine noise hits all of them alike."""
    for cmd in cmds.values():
        measure(cmd)  # warm-up: page cache, binary
    samples = {name: [] for name in cmds}
    for _ in range(RUNS):
        for name, cmd in cmds.items():
            samples[name].append(measure(cmd))
    return {name: (statistics.median(w for w, _ in s), max(r for _, r in s)) for name, s in samples.items()}


def main():
    if not os.path.exists(BIN):
        raise SystemExit(f"no binary at {BIN}: run `cargo build --release` first (bench/run.sh does)")
    big, single = generate()
    root = ["--root", DATA]
    cases = [
        ("(a) 1 GiB, offset=10000000 limit=100", big, ["--offset", "10000000", "--limit", "100"], "1.3x wc -l", 1.3),
        ("(b) 1 GiB, offset=-100", big, ["--offset", "-100"], "1.3x wc -l", 1.3),
        ("(c) 64 MiB single line, default read", single, [], "< 20 ms", None),
    ]
    rows = []
    for label, path, args, target, max_ratio in cases:
        result = bench({
            "wc": ["wc", "-l", path],
            "agent-read": [BIN, *root, os.path.basename(path), *args],
        })
        wc_wall, wc_rss = result["wc"]
        ar_wall, ar_rss = result["agent-read"]
        ratio = ar_wall / wc_wall
        met = ratio <= max_ratio if max_ratio else ar_wall < 0.020
        met = met and ar_rss < 16 * 1024
        rows.append((label, ar_wall, wc_wall, ratio, ar_rss, wc_rss, target, "yes" if met else "NO"))
    print(f"runs per command: {RUNS} (median wall time; peak RSS is the max over runs)")
    print()
    print("| case | agent-read | wc -l | ratio | agent-read peak RSS | wc -l peak RSS | target (and RSS < 16 MB) | met |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for label, ar, wc, ratio, ar_rss, wc_rss, target, met in rows:
        print(f"| {label} | {ar * 1000:.1f} ms | {wc * 1000:.1f} ms | {ratio:.2f}x | {ar_rss / 1024:.1f} MiB "
              f"| {wc_rss / 1024:.1f} MiB | {target} | {met} |")


if __name__ == "__main__":
    main()
