"""Directory pages: see bench/dirs.sh. Prints markdown tables.

1. Paging over MCP: one `agent-read mcp` server (stdio, --no-repeat-stubs) per build, a client that pages through a
   directory of COUNT entries by following each page's `next_offset` (default limit, so each page is as many entries
   as the output cap holds), each call timed from its write to its answer; REPS passes, the first page of a pass is
   the directory's first listing in that server only on the first pass.
2. The first page from a new process (`agent-read DIR`) beside `ls -f DIR | sort | head -N` (the same answer: every
   name read and sorted), `ls -f DIR | head -N` (unsorted: stops early) and `ls DIR | head -N` (sorted in the locale's
   order), N the entries agent-read's first page shows; RUNS runs each, interleaved, medians.
"""
import json
import os
import statistics
import subprocess
import sys
import time

BUILDS = [arg.split("=", 1) for arg in sys.argv[1:]]
COUNT = int(os.environ.get("COUNT", "200000"))
RUNS = int(os.environ.get("RUNS", "11"))
REPS = int(os.environ.get("REPS", "3"))
DATA = os.path.abspath(os.path.join("bench", "data"))
DIR = os.path.join(DATA, f"dir-{COUNT // 1000}k")


def make_dir():
    """COUNT empty files with names of 16 to 28 bytes; waits until the directory's times are settled (3 s)."""
    if os.path.exists(os.path.join(DATA, f".dir-{COUNT}-complete")):
        return
    os.makedirs(DIR, exist_ok=True)
    for i in range(COUNT):
        open(os.path.join(DIR, f"entry-{i * 7919 % COUNT:06d}{'-x' * (i % 7)}.txt"), "w").close()
    open(os.path.join(DATA, f".dir-{COUNT}-complete"), "w").close()
    time.sleep(3.5)


class Server:
    """A stdio MCP server and a blocking client for it."""

    def __init__(self, binary):
        self.proc = subprocess.Popen([binary, "mcp", "--no-repeat-stubs", "--root", DATA],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "dirs-bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer["result"]

    def page(self, offset):
        """One page: its time in seconds, its structured result."""
        start = time.perf_counter()
        result = self.request("tools/call", {"name": "read", "arguments": {"path": os.path.basename(DIR),
                                                                           "offset": offset}})
        elapsed = time.perf_counter() - start
        meta = result["structuredContent"]["meta"]
        return elapsed, meta

    def rss_mib(self):
        """The server's resident memory now and at its peak, in MiB."""
        with open(f"/proc/{self.proc.pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status)
        return [int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM")]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def page_through(binary):
    server = Server(binary)
    firsts, laters, totals, pages = [], [], [], 0
    for _ in range(REPS):
        offset, times = 1, []
        while offset is not None:
            elapsed, meta = server.page(offset)
            times.append(elapsed)
            offset = meta.get("next_offset")
        assert meta["offset"] + meta["returned_entries"] - 1 == COUNT, meta
        firsts.append(times[0])
        laters.extend(times[1:])
        totals.append(sum(times))
        pages = len(times)
    rss = server.rss_mib()
    server.close()
    return firsts, laters, totals, pages, rss


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def ms(seconds):
    return f"{seconds * 1000:.1f} ms"


def main():
    make_dir()
    print(f"Paging through {COUNT:,} entries over MCP (stdio), {REPS} passes:\n")
    print("| build | pages | first page (first pass) | later pages, median | later pages, p90 | whole pass, median "
          "| server RSS after; peak |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, binary in BUILDS:
        firsts, laters, totals, pages, (rss, peak) = page_through(binary)
        laters.sort()
        p90 = laters[int(len(laters) * 0.9)]
        print(f"| {label} | {pages} | {ms(firsts[0])} | {ms(statistics.median(laters))} | {ms(p90)} "
              f"| {ms(statistics.median(totals))} | {rss:.1f}; {peak:.1f} MiB |")
    label, binary = BUILDS[0]
    shown = json.loads(subprocess.run([binary, "--root", DATA, os.path.basename(DIR), "--json"],
                                      capture_output=True, check=True).stdout)["meta"]["returned_entries"]
    cases = [(f"ls -f \\| sort \\| head -{shown}", f"ls -f {DIR} | LC_ALL=C sort | head -{shown}"),
             (f"ls -f \\| head -{shown} (unsorted)", f"ls -f {DIR} | head -{shown}"),
             (f"ls \\| head -{shown} (locale order)", f"ls {DIR} | head -{shown}")]
    cases += [(f"agent-read ({label})", f"{binary} --root {DATA} {os.path.basename(DIR)}") for label, binary in BUILDS]
    times = {name: [] for name, _ in cases}
    for name, cmd in cases:
        timed(cmd)
    for _ in range(RUNS):
        for name, cmd in cases:
            times[name].append(timed(cmd))
    print(f"\nFirst page ({shown} entries) from a new process, median of {RUNS}:\n")
    print("| command | time | ÷ `ls -f \\| sort \\| head` |")
    print("|---|---:|---:|")
    base = statistics.median(times[cases[0][0]])
    for name, _ in cases:
        median = statistics.median(times[name])
        print(f"| {name} | {ms(median)} | {median / base:.2f}× |")


main()
