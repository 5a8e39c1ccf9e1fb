#!/usr/bin/env python3
"""Peak memory of `agent-read mcp` over stdio when its client writes thousands of calls and reads no answer.

The client writes N calls (each a different window of some 260 lines of 100 bytes: about 55 KB of answer, never a
repeat that a one-line notice would answer), reading nothing, until its writes have not moved for STALL seconds (the
server stopped taking requests) or all went through; it waits until the server's resident memory has not moved for
STALL seconds (the server has done all it would do for a client that never reads), then reads every answer and checks
that each call got one. The reference, in the same run and on the same binary, is a client that reads while it writes:
the memory a server needs for the same calls when nobody holds its answers back.

Peak RSS is GNU time's (`/usr/bin/time -v`, "Maximum resident set size") of the server process; medians of REPS.

Usage: bench/stdio_backpressure.py [LABEL=BINARY ...]   (default: ours=target/release/agent-read; run
`cargo build --release` first)
Environment: N=4000 REPS=3 STALL=2
Only the standard library is used.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

N = int(os.environ.get("N", "4000"))
REPS = int(os.environ.get("REPS", "3"))
STALL = float(os.environ.get("STALL", "2"))


def server_rss(time_pid):
    """VmRSS in bytes of the server, GNU time's child."""
    try:
        with open(f"/proc/{time_pid}/task/{time_pid}/children") as children:
            pid = children.read().split()[0]
        with open(f"/proc/{pid}/status") as status:
            return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1)) * 1024
    except (OSError, IndexError, AttributeError):
        return 0


def until_still(sample):
    """Waits until `sample()` has not moved (by 1 MiB) for STALL seconds, at most two minutes."""
    last, still, waited = sample(), 0.0, 0.0
    while still < STALL and waited < 120:
        time.sleep(0.25)
        waited += 0.25
        now = sample()
        still = still + 0.25 if abs(now - last) < (1 << 20) else 0.0
        last = now


def call(i):
    arguments = {"path": "big.log", "offset": i % 300 + 1, "limit": 250 + i // 300}
    message = {"jsonrpc": "2.0", "id": i + 2, "method": "tools/call", "params": {"name": "read", "arguments": arguments}}
    return (json.dumps(message) + "\n").encode()


INITIALIZE = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    + "\n" + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n").encode()


def run(binary, root, read_as_it_goes):
    """One server life; returns (peak RSS in MiB, calls written before the client read, seconds to every answer)."""
    server = subprocess.Popen(["/usr/bin/time", "-v", binary, "mcp", "--root", root], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stderr = []
    threading.Thread(target=lambda: stderr.append(server.stderr.read()), daemon=True).start()
    written = [0]

    def write():
        server.stdin.write(INITIALIZE)
        for i in range(N):
            server.stdin.write(call(i))
            server.stdin.flush()
            written[0] = i + 1

    answered = set()

    def read():
        for line in server.stdout:
            answer = json.loads(line)
            if answer.get("id") != 1:
                assert not answer["result"].get("isError"), line[:300]
            answered.add(answer["id"])
            if len(answered) == N + 1:
                return

    start = time.monotonic()
    writer = threading.Thread(target=write)
    reader = threading.Thread(target=read)
    writer.start()
    if read_as_it_goes:
        reader.start()
    else:
        until_still(lambda: written[0] << 20)
        until_still(lambda: server_rss(server.pid))
        reader.start()
    taken = written[0]
    reader.join()
    took = time.monotonic() - start
    writer.join()
    server.stdin.close()
    server.wait()
    time.sleep(0.1)
    report = b"".join(stderr).decode(errors="replace")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)
    assert peak and len(answered) == N + 1, report[-2000:]
    return int(peak.group(1)) / 1024, taken, took


def main():
    binaries = [arg.split("=", 1) for arg in sys.argv[1:]] or [["ours", "target/release/agent-read"]]
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "big.log"), "w") as log:
            log.writelines(f"line {i:06} {'x' * 88}\n" for i in range(1, 601))
        rows = []
        for label, binary in binaries:
            for mode, reads in (("reads no answer until its writes block", False), ("reads as it writes", True)):
                runs = [run(binary, root, reads) for _ in range(REPS)]
                peak = statistics.median(r[0] for r in runs)
                taken = statistics.median(r[1] for r in runs)
                took = statistics.median(r[2] for r in runs)
                rows.append((label, mode, peak, taken, took))
                print(f"{label}, {mode}: peak {peak:.1f} MiB, {taken:.0f} calls written before reading, "
                      f"{took:.1f} s to every answer ({[round(r[0], 1) for r in runs]} MiB)", file=sys.stderr)
    print(f"| server | client ({N} calls, ~55 KB answers) | peak RSS (median of {REPS}) | calls written before the "
          f"client read | time to every answer |")
    print("|---|---|---|---|---|")
    for label, mode, peak, taken, took in rows:
        shown = f"{taken:.0f}" if "no answer" in mode else "—"
        print(f"| {label} | {mode} | {peak:.1f} MiB | {shown} | {took:.1f} s |")


if __name__ == "__main__":
    main()
