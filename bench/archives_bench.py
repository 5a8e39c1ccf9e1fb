"""Archives through agent-read, beside unzip and tar on the same files in the same run.

Generates under bench/data/: `members-10000.zip` and `members-10000.tar.gz` (10,000 small text members in 100
directories, deflated by Python's zipfile and tarfile), and `log-<N>mib.zip` (one log of N MiB, SIZE_MIB default 256,
deflated). Times each command RUNS times (default 5) in fresh processes: median wall time, and peak RSS (GNU time).
Cases: the zip's top listing (`unzip -l` lists every member), its last member's first 100 lines, the tar.gz's last
member's first 100 lines (both sides decompress the archive up to it), and a window at 90% of the log member
(`sed -n` reads to the end like agent-read, which counts every line).
"""

import io
import os
import statistics
import subprocess
import sys
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "bench", "data")
BIN = os.environ.get("AGENT_READ_BIN", os.path.join(ROOT, "target", "release", "agent-read"))
SIZE_MIB = int(os.environ.get("SIZE_MIB", "256"))
RUNS = int(os.environ.get("RUNS", "5"))
MEMBERS = 10_000


def member(i):
    return f"d{i % 100}/f{i}.txt", "".join(f"member {i} line {n}\n" for n in range(1, 201)).encode()


def generate():
    os.makedirs(DATA, exist_ok=True)
    many_zip = os.path.join(DATA, f"members-{MEMBERS}.zip")
    if not os.path.exists(many_zip):
        with zipfile.ZipFile(many_zip + ".part", "w", zipfile.ZIP_DEFLATED) as z:
            for i in range(MEMBERS):
                z.writestr(*member(i))
        os.rename(many_zip + ".part", many_zip)
    many_tgz = os.path.join(DATA, f"members-{MEMBERS}.tar.gz")
    if not os.path.exists(many_tgz):
        with tarfile.open(many_tgz + ".part", "w:gz") as t:
            for i in range(MEMBERS):
                name, data = member(i)
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        os.rename(many_tgz + ".part", many_tgz)
    log_zip = os.path.join(DATA, f"log-{SIZE_MIB}mib.zip")
    if not os.path.exists(log_zip):
        words = ["GET", "POST", "/api/v1/items", "/login", "200", "404", "500", "user=alice", "user=bob", "ms=12"]
        with zipfile.ZipFile(log_zip + ".part", "w", zipfile.ZIP_DEFLATED) as z, z.open("app.log", "w") as f:
            written, n = 0, 0
            while written < SIZE_MIB << 20:
                n += 1
                line = f"2026-11-25T06:{n % 60:02d}:{n % 59:02d}Z req={n} {words[n % 10]} {words[(n * 7) % 10]} took={n % 997}ms\n".encode()
                f.write(line)
                written += len(line)
        os.rename(log_zip + ".part", log_zip)
    return many_zip, many_tgz, log_zip


def timed(cmd, shell=False):
    """Median wall seconds and peak RSS (KiB) of RUNS fresh runs, after one warm-up."""
    walls, rss = [], []
    for run in range(RUNS + 1):
        wrapped = ["/usr/bin/time", "-v", "sh", "-c", cmd] if shell else ["/usr/bin/time", "-v", *cmd]
        start = time.perf_counter()
        done = subprocess.run(wrapped, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if run == 0:
            continue
        walls.append(time.perf_counter() - start)
        for line in done.stderr.splitlines():
            if "Maximum resident set size" in line:
                rss.append(int(line.split(":")[1]))
    return statistics.median(walls), max(rss)


def main():
    many_zip, many_tgz, log_zip = generate()
    last, _ = member(MEMBERS - 1)
    with zipfile.ZipFile(log_zip) as z, z.open("app.log") as f:
        lines = sum(1 for _ in f)
    first = lines * 9 // 10
    print(f"{RUNS} runs, medians; log member: {SIZE_MIB} MiB, {lines} lines, window offset={first} limit=100")
    print("| case | agent-read | reference | ratio | agent-read peak RSS | reference peak RSS |")
    print("|---|---:|---:|---:|---:|---:|")
    cases = [
        ("list a zip of 10,000 members (top: 100 directories)", [BIN, "--root", DATA, many_zip], f"unzip -l {many_zip}"),
        (
            "first 100 lines of its last member",
            [BIN, "--root", DATA, f"{many_zip}/{last}", "--limit", "100"],
            f"unzip -p {many_zip} {last} | sed -n '1,100p'",
        ),
        (
            "first 100 lines of the last member of a tar.gz of 10,000",
            [BIN, "--root", DATA, f"{many_tgz}/{last}", "--limit", "100"],
            f"tar -xzOf {many_tgz} {last} | sed -n '1,100p'",
        ),
        (
            f"window at 90% of a {SIZE_MIB} MiB log inside a zip",
            [BIN, "--root", DATA, f"{log_zip}/app.log", "--offset", str(first), "--limit", "100"],
            f"unzip -p {log_zip} app.log | sed -n '{first},{first + 99}p'",
        ),
    ]
    for label, ours_cmd, ref_cmd in cases:
        ours = timed(ours_cmd)
        ref = timed(ref_cmd, shell=True)
        print(
            f"| {label} | {ours[0] * 1000:.1f} ms | {ref[0] * 1000:.1f} ms | {ours[0] / ref[0]:.2f}x "
            f"| {ours[1] / 1024:.1f} MiB | {ref[1] / 1024:.1f} MiB |"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
