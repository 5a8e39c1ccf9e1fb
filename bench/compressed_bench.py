"""A deep line window of a compressed log through agent-read, beside `zcat | sed -n` (`zstdcat` for .zst).

Generates `log-<N>mib.txt` (N from SIZE_MIB, default 256: log lines of varied text) under bench/data/, compresses it
with `gzip -6` and `zstd -3`, and times each command RUNS times (default 5) in fresh processes, reporting the median
wall time and the peak RSS (GNU time). The window starts 90% of the way down (`offset` = 0.9 x lines, limit 100);
`sed -n 'A,Bp'` reads to the end like agent-read, which counts every line. "Cold" means a new process with nothing
learned: the file is in the page cache for both, as a read that follows a listing would find it.
"""

import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "bench", "data")
BIN = os.environ.get("AGENT_READ_BIN", os.path.join(ROOT, "target", "release", "agent-read"))
SIZE_MIB = int(os.environ.get("SIZE_MIB", "256"))
RUNS = int(os.environ.get("RUNS", "5"))


def generate():
    os.makedirs(DATA, exist_ok=True)
    text = os.path.join(DATA, f"log-{SIZE_MIB}mib.txt")
    if not os.path.exists(text):
        words = ["GET", "POST", "/api/v1/items", "/login", "200", "404", "500", "user=alice", "user=bob", "ms=12"]
        with open(text + ".part", "w") as f:
            written, n = 0, 0
            while written < SIZE_MIB << 20:
                n += 1
                line = f"2026-11-25T06:{n % 60:02d}:{n % 59:02d}Z req={n} {words[n % 10]} {words[(n * 7) % 10]} {words[(n * 3) % 10]} took={n % 997}ms\n"
                f.write(line)
                written += len(line)
        os.rename(text + ".part", text)
    for tool, ext, args in [("gzip", "gz", ["-6", "-c"]), ("zstd", "zst", ["-3", "-c", "-q"])]:
        packed = f"{text}.{ext}"
        if not os.path.exists(packed):
            with open(packed + ".part", "wb") as out:
                subprocess.run([tool, *args, text], stdout=out, check=True)
            os.rename(packed + ".part", packed)
    return text


def timed(cmd, shell=False):
    """Median wall seconds and peak RSS (KiB) of RUNS fresh runs."""
    walls, rss = [], []
    for _ in range(RUNS):
        wrapped = ["/usr/bin/time", "-v", "sh", "-c", cmd] if shell else ["/usr/bin/time", "-v", *cmd]
        start = time.perf_counter()
        done = subprocess.run(wrapped, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        walls.append(time.perf_counter() - start)
        for line in done.stderr.splitlines():
            if "Maximum resident set size" in line:
                rss.append(int(line.split(":")[1]))
    return statistics.median(walls), max(rss)


def main():
    text = generate()
    lines = int(subprocess.run(["wc", "-l", text], capture_output=True, text=True, check=True).stdout.split()[0])
    first = lines * 9 // 10
    print(f"{SIZE_MIB} MiB of text, {lines} lines; window: offset={first} limit=100; {RUNS} runs, medians")
    print("| file | agent-read | reference | ratio | agent-read peak RSS | reference peak RSS |")
    print("|---|---:|---:|---:|---:|---:|")
    for ext, cat in [("gz", "zcat"), ("zst", "zstdcat")]:
        packed = f"{text}.{ext}"
        ours = timed([BIN, "--root", DATA, packed, "--offset", str(first), "--limit", "100"])
        ref = timed(f"{cat} {packed} | sed -n '{first},{first + 99}p'", shell=True)
        size = os.path.getsize(packed) / (1 << 20)
        print(
            f"| .{ext} ({size:.1f} MiB) | {ours[0] * 1000:.0f} ms | {ref[0] * 1000:.0f} ms | {ours[0] / ref[0]:.2f}x "
            f"| {ours[1] / 1024:.1f} MiB | {ref[1] / 1024:.1f} MiB |"
        )
    sys.stdout.flush()


main()
