"""Reads of a huge log beside coreutils: see bench/huge.sh. Prints one markdown table and the footers."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BIN = sys.argv[1]
RUNS = int(os.environ.get("RUNS", "5"))
SIZE = int(os.environ.get("SIZE_GIB", "10")) << 30
DATA = os.path.join("bench", "data")
LOG = os.path.join(DATA, f"huge-{SIZE >> 30}gib.log")
LEVELS = [b"INFO", b"INFO", b"INFO", b"DEBUG", b"WARN", b"INFO", b"ERROR", b"INFO"]
PATHS = [b"/api/v1/items", b"/api/v1/users/42", b"/healthz", b"/api/v2/orders?page=3", b"/static/app.js"]


def block(first):
    """About 64 MiB of log lines numbered from `first`, of varied length, and the number after the last."""
    lines = []
    n = first
    size = 0
    while size < 64 << 20:
        line = b"2026-11-25T07:%02d:%02d.%03dZ %-5s req=%010d %s %d %dms%s\n" % (
            n // 60000 % 60, n // 1000 % 60, n % 1000, LEVELS[n % 8], n, PATHS[n % 5], 200 + n % 3 * 100, n % 97,
            b" retry=1" if n % 11 == 0 else b"")
        lines.append(line)
        size += len(line)
        n += 1
    return b"".join(lines), n


def make_log():
    if os.path.exists(LOG) and os.path.getsize(LOG) >= SIZE:
        return
    os.makedirs(DATA, exist_ok=True)
    free = shutil.disk_usage(DATA).free
    if free < SIZE + (4 << 30):
        sys.exit(f"{SIZE >> 30} GiB log needs {SIZE >> 30} GiB free (and some room); {free >> 30} GiB free")
    written, n = 0, 1
    with open(LOG + ".tmp", "wb") as f:
        while written < SIZE:
            data, n = block(n)
            f.write(data)
            written += len(data)
    os.rename(LOG + ".tmp", LOG)


def timed(cmd):
    """Wall time of one run, its peak RSS in KiB, and its output's last line."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=dict(os.environ, LC_ALL="C"))
    wall = time.perf_counter() - start
    stderr = proc.stderr.decode(errors="replace")
    rss = next(int(l.split()[-1]) for l in stderr.splitlines() if "Maximum resident" in l)
    lines = proc.stdout.decode(errors="replace").strip().splitlines()
    return wall, rss, lines[-1] if lines else ""


def median_of(commands, prepare=None):
    """Each command's median wall time, peak RSS (MiB) and last run's last line, runs interleaved."""
    runs = [[] for _ in commands]
    for round in range(RUNS + 1):
        for k, cmd in enumerate(commands):
            if prepare:
                prepare(k)
            result = timed(cmd)
            if round > 0:
                runs[k].append(result)
    return [(statistics.median(w for w, _, _ in r), max(m for _, m, _ in r) / 1024, r[-1][2]) for r in runs]


def main():
    make_log()
    subprocess.run(["cat", LOG], stdout=subprocess.DEVNULL, check=True)
    root = os.path.dirname(os.path.abspath(LOG))
    name = os.path.basename(LOG)
    ours = lambda *args, timeout="600000": [BIN, name, "--root", root, "--timeout-ms", timeout, *args]
    cache = tempfile.mkdtemp(prefix="agent-read-index-")
    cached = lambda *args: [BIN, name, "--root", root, "--index-cache", cache, "--timeout-ms", "600000", *args]
    deep = 10_000_000
    cases = [
        ("first window, 100 lines", ours("--limit", "100"), ["head", "-n", "100", LOG],
         ["sed", "-n", "1,100p;100q", LOG]),
        ("first window, default (2000 lines)", ours(), ["head", "-n", "2000", LOG], None),
        (f"window at line {deep:,}", ours("--offset", str(deep), "--limit", "100"),
         ["sed", "-n", f"{deep},{deep + 99}p;{deep + 99}q", LOG], None),
        ("last 100 lines (counts every line)", ours("--offset", "-100"), ["tail", "-n", "100", LOG], ["wc", "-l", LOG]),
        ("last 100 lines, 200 ms budget", ours("--offset", "-100", timeout="200"),
         ["tail", "-n", "100", LOG], None),
    ]
    load = os.getloadavg()
    print(f"{SIZE >> 30} GiB log ({os.path.getsize(LOG):,} bytes), {RUNS} runs each, medians, page cache warm; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print()
    print("| case | agent-read | peak RSS | reference | ratio | second reference | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    footers = []
    for label, a, b, c in cases:
        commands = [a, b] + ([c] if c else [])
        results = median_of(commands)
        (ta, rss, footer), (tb, _, _) = results[0], results[1]
        second = f"`{' '.join(c[:-1])}` {results[2][0] * 1000:.1f} ms | {ta / results[2][0]:.2f}×" if c else "— | —"
        print(f"| {label} | {ta * 1000:.1f} ms | {rss:.1f} MiB | `{' '.join(b[:-1])}` {tb * 1000:.1f} ms "
              f"| {ta / tb:.2f}× | {second} |")
        footers.append((label, footer))
    # Once a read counted every line (and left the index on disk), later runs know the total at once.
    subprocess.run(cached("--offset", "-1"), stdout=subprocess.DEVNULL, check=True)
    for label, args, ref in [("first window, index known", ("--limit", "100"), ["head", "-n", "100", LOG]),
                             ("last 100 lines, index known", ("--offset", "-100"), ["tail", "-n", "100", LOG]),
                             (f"window at line {deep:,}, index known", ("--offset", str(deep), "--limit", "100"),
                              ["sed", "-n", f"{deep},{deep + 99}p;{deep + 99}q", LOG])]:
        (ta, rss, footer), (tb, _, _) = median_of([cached(*args), ref])
        print(f"| {label} | {ta * 1000:.1f} ms | {rss:.1f} MiB | `{' '.join(ref[:-1])}` {tb * 1000:.1f} ms "
              f"| {ta / tb:.2f}× | — | — |")
        footers.append((label, footer))
    print()
    for label, footer in footers:
        print(f"- {label}: `{footer[:300]}`")
    shutil.rmtree(cache, ignore_errors=True)
    if os.environ.get("KEEP_DATA") != "1":
        os.remove(LOG)


main()
