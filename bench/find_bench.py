"""`find` beside grep: see bench/find.sh. Prints one markdown table.

Every case is one `find` with `--limit 1 --context 0` (the first match, as `grep -n -m1` gives it) beside
`grep -n -m1` and `grep -c` on the same pattern, each a process, interleaved, medians of RUNS, page cache warm. grep
runs with LC_ALL=C (its fastest), its output into a pipe (GNU grep stops at the first match when it sees /dev/null).
"""
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
GREP_ENV = dict(os.environ, LC_ALL="C")


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


def timed(cmd, env=None):
    """Wall time of one run, its peak RSS in KiB, and its output."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    wall = time.perf_counter() - start
    stderr = proc.stderr.decode(errors="replace")
    rss = next(int(l.split()[-1]) for l in stderr.splitlines() if "Maximum resident" in l)
    return wall, rss, proc.stdout.decode(errors="replace")


def ours(pattern):
    root = os.path.dirname(os.path.abspath(LOG))
    return [BIN, os.path.basename(LOG), "--root", root, "--find", pattern, "--limit", "1", "--context", "0",
            "--timeout-ms", "600000"]


# (case, agent-read's pattern, grep's pattern as `grep -E` reads it)
CASES = [
    ("first match near the start (line 1,001)", "ERROR disk", "ERROR disk"),
    ("the one match near the end", "FATAL", "FATAL"),
    ("a match on every line", "INFO request", "INFO request"),
    ("no match", "PANIC", "PANIC"),
    ("no match, a pattern without a literal", "[0-9]{3}-[0-9]{4}", "[0-9]{3}-[0-9]{4}"),
]


def main():
    make_log()
    subprocess.run(["cat", LOG], stdout=subprocess.DEVNULL, check=True)
    load = os.getloadavg()
    print(f"{SIZE >> 20} MiB log, {RUNS} runs each, medians; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print()
    print("| case | agent-read `find` | `grep -n -m1` | ratio | `grep -c` | ratio | agent-read peak RSS | footer |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, pattern, grep_pattern in CASES:
        commands = [(ours(pattern), None), (["grep", "-E", "-n", "-m1", grep_pattern, LOG], GREP_ENV),
                    (["grep", "-E", "-c", grep_pattern, LOG], GREP_ENV)]
        for cmd, env in commands:
            timed(cmd, env)
        runs = [[] for _ in commands]
        for _ in range(RUNS):
            for k, (cmd, env) in enumerate(commands):
                runs[k].append(timed(cmd, env))
        a, m1, c = (statistics.median(w for w, _, _ in r) for r in runs)
        rss = max(r for _, r, _ in runs[0]) / 1024
        footer = runs[0][-1][2].strip().splitlines()[-1]
        headline = footer.split(" · ")[0].lstrip("(")
        print(f"| {name} | {a * 1000:.1f} ms | {m1 * 1000:.1f} ms | {a / m1:.2f}× | {c * 1000:.1f} ms | {a / c:.2f}× "
              f"| {rss:.1f} MiB | `{headline}` |")
    # What start-up alone costs each: the same search in a file of one line.
    tiny = os.path.join(DATA, "find-tiny.log")
    with open(tiny, "wb") as f:
        f.write(b"2026-11-25T07:00:00Z ERROR disk full\n")
    root = os.path.dirname(os.path.abspath(tiny))
    commands = [[BIN, os.path.basename(tiny), "--root", root, "--find", "ERROR disk", "--limit", "1", "--context", "0"],
                ["grep", "-n", "-m1", "ERROR disk", tiny]]
    runs = [[], []]
    for _ in range(RUNS * 3):
        for k, cmd in enumerate(commands):
            runs[k].append(timed(cmd, GREP_ENV if k else None)[0])
    a, g = (statistics.median(r) for r in runs)
    print()
    print(f"Start-up, the same search in a one-line file: agent-read {a * 1000:.1f} ms, `grep -n -m1` {g * 1000:.1f} ms "
          f"({a / g:.2f}×).")


main()
