#!/usr/bin/env python3
"""The HTTP face under the three loads that once took it down, one server process per load.

  slowloris  N_SLOW (200) connections send a request head one byte every 2 s and never finish it; reported: how
             many the server still holds open after each 5 s, and when the last one was closed (the head timeout
             should close them all: 10 s by default).
  idle       N_IDLE (15,000) connections opened and left silent; reported: the server's open file descriptors at
             the peak, how many of the idle connections were accepted, and how long a new client then waits for
             its `initialize` answer.
  init       N_INIT (20,000) `initialize` POSTs, CONC (200) at a time on keep-alive connections (each opens a
             session); reported: the server's peak RSS (VmHWM from /proc), sessions refused, the time taken, and how
             long a new client then waits for its `initialize` answer.

Usage: python3 bench/http_limits.py [slowloris|idle|init ...]   (default: all three)
Environment: AGENT_READ_BIN (default target/release/agent-read), N_SLOW, N_IDLE, N_INIT, CONC, TOKEN (a bearer
token sent with every request; the server is then started with AUTH_ARGS, e.g. "--auth-token-file tokens"),
AUTH_ARGS, OBSERVE (seconds the slowloris load is watched, default 40).
Linux only (it reads /proc). Only the standard library is used.
"""
import asyncio
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

BIN = os.environ.get("AGENT_READ_BIN", "target/release/agent-read")
TOKEN = os.environ.get("TOKEN")
AUTH_ARGS = os.environ.get("AUTH_ARGS", "").split()
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}'
)


def start_server(root):
    args = [BIN, "mcp", "--http", "127.0.0.1:0", "--root", root, *AUTH_ARGS]
    server = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for line in server.stderr:
        match = re.search(rb"http://([0-9.]+):(\d+)/mcp", line)
        if match:
            return server, match.group(1).decode(), int(match.group(2))
    raise SystemExit("the server printed no address")


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def request(host, port, body):
    auth = f"Authorization: Bearer {TOKEN}\r\n" if TOKEN else ""
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n{auth}Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def read_answer(reader):
    """One HTTP/1.1 answer: (status, headers text); the body is read by Content-Length or chunks."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    lower = head.lower()
    match = re.search(rb"content-length: *(\d+)", lower)
    if match:
        await reader.readexactly(int(match.group(1)))
    elif b"transfer-encoding: chunked" in lower:
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    return status, head


async def fresh_client_wait(host, port):
    """Seconds a new connection waits for its `initialize` answer (None: no answer within 30 s)."""
    started = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 30)
        writer.write(request(host, port, INITIALIZE))
        status, _ = await asyncio.wait_for(read_answer(reader), 30)
        writer.close()
        return time.monotonic() - started, status
    except (asyncio.TimeoutError, OSError, asyncio.IncompleteReadError) as e:
        return None, repr(e)


async def slowloris(host, port, server):
    count, observe = int(os.environ.get("N_SLOW", 200)), int(os.environ.get("OBSERVE", 40))
    conns = []
    for _ in range(count):
        conns.append(await asyncio.open_connection(host, port))
    head = request(host, port, INITIALIZE)
    started, closed_at = time.monotonic(), {}

    async def trickle(i, reader, writer):
        for byte in head[:-1]:
            try:
                writer.write(bytes([byte]))
                await writer.drain()
                if await asyncio.wait_for(reader.read(1), 2) == b"":
                    break
            except asyncio.TimeoutError:
                continue
            except OSError:
                break
            else:
                continue
        closed_at[i] = time.monotonic() - started

    tasks = [asyncio.create_task(trickle(i, r, w)) for i, (r, w) in enumerate(conns)]
    for second in range(5, observe + 1, 5):
        await asyncio.sleep(5)
        print(f"  after {second:3d} s: {count - len(closed_at):4d} of {count} slow connections still open")
    for task in tasks:
        task.cancel()
    last = max(closed_at.values()) if len(closed_at) == count else None
    print(f"  all closed by the server: {'yes, the last at %.1f s' % last if last else 'no'}")
    wait, status = await fresh_client_wait(host, port)
    print(f"  a new client's initialize: {status} after {wait if wait is None else round(wait, 3)} s")


async def idle(host, port, server):
    count = int(os.environ.get("N_IDLE", 15000))
    conns, failed = [], 0
    for _ in range(count):
        try:
            conns.append(await asyncio.wait_for(asyncio.open_connection(host, port), 5))
        except (OSError, asyncio.TimeoutError):
            failed += 1
    await asyncio.sleep(1)
    print(f"  {len(conns)} idle connections open ({failed} failed); server fds: {open_fds(server.pid)}")
    wait, status = await fresh_client_wait(host, port)
    print(f"  a new client's initialize: {status} after {wait if wait is None else round(wait, 3)} s")
    for _, writer in conns:
        writer.close()


async def init(host, port, server):
    count, conc = int(os.environ.get("N_INIT", 20000)), int(os.environ.get("CONC", 200))
    statuses, started = {}, time.monotonic()

    async def worker(share):
        reader, writer = await asyncio.open_connection(host, port)
        for _ in range(share):
            try:
                writer.write(request(host, port, INITIALIZE))
                status, _ = await read_answer(reader)
            except (OSError, asyncio.IncompleteReadError):
                status = "closed"
                reader, writer = await asyncio.open_connection(host, port)
            statuses[status] = statuses.get(status, 0) + 1
        writer.close()

    await asyncio.gather(*(worker(count // conc) for _ in range(conc)))
    took = time.monotonic() - started
    peak = status_kb(server.pid, "VmHWM") / 1024
    print(f"  {count} initializes in {took:.1f} s; answers by status: {statuses}")
    print(f"  server peak RSS: {peak:.0f} MB; RSS now: {status_kb(server.pid, 'VmRSS') / 1024:.0f} MB")
    wait, status = await fresh_client_wait(host, port)
    print(f"  a new client's initialize: {status} after {wait if wait is None else round(wait, 3)} s")


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    loads = sys.argv[1:] or ["slowloris", "idle", "init"]
    with tempfile.TemporaryDirectory() as root:
        for name in loads:
            server, host, port = start_server(root)
            print(f"{name} (server pid {server.pid}, {BIN})")
            try:
                asyncio.run(globals()[name](host, port, server))
            finally:
                server.kill()
                server.wait()


if __name__ == "__main__":
    main()
