"""`find` beside grep: see bench/find.sh. Prints one markdown table."""
import os
import statistics
import subprocess
import sys
import time

BIN = sys.argv[1]
RUNS = int(os.environ.get("RUNS", "5"))
SIZE = int(os.environ.get("SIZE_MIB", "1024")) << 20
DATA = os.path.join("bench", "data")
LOG = os.path.join(DATA, f"find-{SIZE >> 20}mib.log")
LINE = b"2026-11-25T07:00:00Z INFO request served in 12 ms path=/api/v1/items id=%08d\n"


def make_log():
    """Log lines with `ERROR disk` on line 1001 and a line 1000 from the end, `FATAL` only there."""
    if os.path.exists(LOG):
        return
    os.makedirs(DATA, exist_ok=True)
    count = SIZE // len(LINE % 0)
    with open(LOG + ".tmp", "wb") as f:
        for i in range(count):
            if i == 1000:
                f.write(b"2026-11-25T07:00:00Z ERROR disk full on /var id=%08d\n" % i)
            elif i == count - 1000:
                f.write(b"2026-11-25T07:00:00Z ERROR disk full FATAL id=%08d\n" % i)
            else:
                f.write(LINE % i)
    os.rename(LOG + ".tmp", LOG)


def timed(cmd):
    """Wall time of one run and its peak RSS in KiB."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    rss = next(int(l.split()[-1]) for l in proc.stderr.splitlines() if "Maximum resident" in l)
    return wall, rss


def ours(pattern):
    root = os.path.dirname(os.path.abspath(LOG))
    return [BIN, os.path.basename(LOG), "--root", root, "--find", pattern, "--limit", "1", "--context", "0",
            "--timeout-ms", "600000"]


CASES = [
    ("first match near the start", ours("ERROR disk"), ["grep", "-n", "-m1", "ERROR disk", LOG]),
    ("the one match near the end", ours("FATAL"), ["grep", "-n", "-m1", "FATAL", LOG]),
    ("count every match", ours("ERROR disk"), ["grep", "-c", "ERROR disk", LOG]),
]


def main():
    make_log()
    subprocess.run(["cat", LOG], stdout=subprocess.DEVNULL, check=True)
    print(f"| case ({SIZE >> 20} MiB) | agent-read | grep | ratio | agent-read peak RSS |")
    print("|---|---:|---:|---:|---:|")
    for name, a, b in CASES:
        timed(a), timed(b)
        runs_a, runs_b = [], []
        for _ in range(RUNS):
            runs_a.append(timed(a))
            runs_b.append(timed(b))
        ta = statistics.median(w for w, _ in runs_a)
        tb = statistics.median(w for w, _ in runs_b)
        rss = max(r for _, r in runs_a) / 1024
        print(f"| {name} | {ta * 1000:.1f} ms | {tb * 1000:.1f} ms | {ta / tb:.2f}× | {rss:.1f} MiB |")


main()
