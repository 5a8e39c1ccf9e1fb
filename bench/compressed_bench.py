"""A deep line window of a compressed log through agent-read, cold beside `zcat | sed -n` (`zstdcat` for .zst, `bzcat`
for .bz2, `xzcat` for .xz), and warm: repeated in one MCP server, through the restart points the first read learned.

Generates `log-<N>mib.txt` (N from SIZE_MIB, default 1024: log lines of varied text) under bench/data/, and compresses
it with `gzip -6`, `zstd -3` (one frame, as `zstd` writes it), `pzstd -3` (many frames), `bzip2 -9`, `pbzip2 -9`
(one stream per block), `xz -6` (one block, as xz 5.4 writes it single-threaded) and `xz -6 -T2` (a block every 24 MiB
of text, as `xz -T0` writes it); CODECS (default all: `gz,zst,pz.zst,bz2,pb.bz2,xz,T2.xz`) picks some. The window starts 90% of the way
down (`offset` = 0.9 x lines, limit 100); `sed -n 'A,Bp'` reads to the end like agent-read, which counts every line.
BASELINE_BIN (optional): another agent-read binary (an older build) run cold beside, interleaved, on the same files.

- Cold: RUNS (default 5) fresh processes each, interleaved with the reference; median wall time and peak RSS (GNU
  time). "Cold" means a new process with nothing learned; the file is in the page cache for both.
- Warm: one `agent-read mcp` server over stdio; a first read of the window (which learns the index), its first
  repeat (timed alone: where no restart point is near, it decodes from the top to the window), then WARM_REPS
  (default 10) repeats of the same window each followed by a tail (`offset=-100`), then WARM_REPS pages after the
  window in turn (`offset` + 100, + 200, ...); medians per call (request written to answer parsed), and the server's
  peak RSS (VmHWM).
"""

import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "bench", "data")
BIN = os.environ.get("AGENT_READ_BIN", os.path.join(ROOT, "target", "release", "agent-read"))
SIZE_MIB = int(os.environ.get("SIZE_MIB", "1024"))
RUNS = int(os.environ.get("RUNS", "5"))
WARM_REPS = int(os.environ.get("WARM_REPS", "10"))

# (file suffix, producer command, the reference's decompressor)
PACKED = [
    ("gz", ["gzip", "-6", "-c"], "zcat"),
    ("zst", ["zstd", "-3", "-c", "-q"], "zstdcat"),
    ("pz.zst", ["pzstd", "-3", "-c", "-q", "-p", "2"], "zstdcat"),
    ("bz2", ["bzip2", "-9", "-c"], "bzcat"),
    ("pb.bz2", ["pbzip2", "-9", "-c", "-p2"], "bzcat"),
    ("xz", ["xz", "-6", "-c"], "xzcat"),
    ("T2.xz", ["xz", "-6", "-T2", "-c"], "xzcat"),
]
CODECS = os.environ.get("CODECS", ",".join(ext for ext, _, _ in PACKED)).split(",")
PACKED = [row for row in PACKED if row[0] in CODECS]
BASELINE = os.environ.get("BASELINE_BIN")


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
    for ext, producer, _ in PACKED:
        packed = f"{text}.{ext}"
        if not os.path.exists(packed):
            with open(packed + ".part", "wb") as out:
                subprocess.run([*producer, text], stdout=out, check=True)
            os.rename(packed + ".part", packed)
    return text


def run_once(cmd, shell=False):
    """Wall seconds and peak RSS (KiB) of one fresh run."""
    wrapped = ["/usr/bin/time", "-v", "sh", "-c", cmd] if shell else ["/usr/bin/time", "-v", *cmd]
    start = time.perf_counter()
    done = subprocess.run(wrapped, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    rss = [int(line.split(":")[1]) for line in done.stderr.splitlines() if "Maximum resident set size" in line]
    return wall, rss[0] if rss else 0


def cold(packed, first, cat):
    """Medians and peak RSS of agent-read and the reference (and the baseline build's median), run interleaved."""
    ours, ref, base = [], [], []
    window = [packed, "--offset", str(first), "--limit", "100"]
    for _ in range(RUNS):
        ours.append(run_once([BIN, "--root", DATA, *window]))
        ref.append(run_once(f"{cat} {packed} | sed -n '{first},{first + 99}p'", shell=True))
        if BASELINE:
            base.append(run_once([BASELINE, "--root", DATA, *window]))
    median = lambda runs: statistics.median(wall for wall, _ in runs) if runs else None
    peak = lambda runs: max(rss for _, rss in runs)
    return median(ours), peak(ours), median(ref), peak(ref), median(base)


class Server:
    """`agent-read mcp` over stdio, one request at a time."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [BIN, "mcp", "--root", DATA], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "compressed-bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    def read(self, arguments):
        """Seconds for one read, and its text."""
        start = time.perf_counter()
        answer = self.request("tools/call", {"name": "read", "arguments": arguments})
        took = time.perf_counter() - start
        result = answer["result"]
        if result.get("isError"):
            sys.exit(f"the read failed: {result['content'][0]['text'][:300]}")
        return took, result["content"][0]["text"]

    def peak_rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def warm(name, first):
    """First read, then in the same server: the first repeat of the deep window, the medians of further repeats
    (each followed by a tail) and of the pages after the window; the server's peak RSS."""
    server = Server()
    # `reread`: a server otherwise answers a repeat read with a note that the lines are unchanged since the last one.
    window = {"path": name, "offset": first, "limit": 100, "reread": True}
    learn, text = server.read(window)
    first_repeat, again = server.read(window)
    assert again == text, "a repeat read differs from the first"
    repeats, tails, pages = [], [], []
    for _ in range(WARM_REPS):
        took, again = server.read(window)
        assert again == text, "a repeat read differs from the first"
        repeats.append(took)
        tails.append(server.read({"path": name, "offset": -100, "reread": True})[0])
    for page in range(1, WARM_REPS + 1):
        pages.append(server.read({"path": name, "offset": first + 100 * page, "limit": 100, "reread": True})[0])
    peak = server.peak_rss_kib()
    server.close()
    return learn, first_repeat, statistics.median(repeats), statistics.median(tails), statistics.median(pages), peak


def main():
    text = generate()
    lines = int(subprocess.run(["wc", "-l", text], capture_output=True, text=True, check=True).stdout.split()[0])
    first = lines * 9 // 10
    load = os.getloadavg()[0]
    print(f"{SIZE_MIB} MiB of text, {lines} lines; window: offset={first} limit=100; cold: {RUNS} runs, warm: "
          f"{WARM_REPS} repeats, medians; load {load:.2f}")
    print("| file | cold | reference | ratio | cold peak RSS | reference peak RSS "
          "| warm: first repeat | warm window | warm tail | next page | server peak RSS (first read included) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for ext, producer, cat in PACKED:
        packed = f"{text}.{ext}"
        ours, ours_rss, ref, ref_rss, base = cold(packed, first, cat)
        learn, first_repeat, repeat, tail, page, server_rss = warm(os.path.basename(packed), first)
        size = os.path.getsize(packed) / (1 << 20)
        print(
            f"| `{producer[0]}` .{ext} ({size:.0f} MiB) | {ours * 1000:,.0f} ms | {ref * 1000:,.0f} ms "
            f"| {ours / ref:.2f}x | {ours_rss / 1024:.1f} MiB | {ref_rss / 1024:.1f} MiB "
            f"| {first_repeat * 1000:,.1f} ms | {repeat * 1000:,.1f} ms | {tail * 1000:,.1f} ms "
            f"| {page * 1000:,.1f} ms | {server_rss / 1024:.1f} MiB |"
        )
        if base is not None:
            print(f"  baseline {BASELINE}: cold {base * 1000:,.0f} ms (this build {ours / base:.2f}x of it)")
        sys.stdout.flush()


main()
