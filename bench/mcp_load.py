#!/usr/bin/env python3
"""Load benchmark of `agent-read mcp` beside the reference Node server, in the same run, on the same files.

The reference is `@modelcontextprotocol/server-filesystem` (its `read_text_file` tool), installed pinned under
bench/node/ by bench/mcp_load.sh. Both servers are rooted at the same folder of small source-like text files
(bench/data/mcp-files/, generated once) and every read picks the next file round-robin.

Servers (each one long-lived process for the whole run, started side by side):
  ours-stdio       agent-read mcp --root DATA                          (stdio, tool `read`)
  node-stdio       node server-filesystem/dist/index.js DATA           (stdio, tool `read_text_file`)
  ours-http        agent-read mcp --root DATA --http 127.0.0.1:PORT    (streamable HTTP at /mcp, session mode)
  ours-http-sl     the same with --stateless                           (JSON responses, no session)
  node-http        node bench/node/over_http.mjs PORT DATA             (the Node server, its code unchanged, on the
                                                                        SDK's streamable HTTP transport, sessions)
The agent-read HTTP servers are used when `agent-read mcp --help` offers --http (and --stateless). The Node server of
the pinned version serves stdio only; over_http.mjs puts the SDK's HTTP transport in place of its stdio one, so that
agent-read over HTTP is compared with Node over HTTP as well as with Node over stdio.

Phases, run REPS times, the servers interleaved within each repetition (their order rotates every repetition):
  seq    N_SEQ reads one after another (stdio) / N_SEQ_HTTP one after another on one keep-alive connection (HTTP)
  conc   N_CONC reads launched at once: over stdio all written to the one pipe (JSON-RPC lets any number be
         outstanding), over HTTP one POST on each of N_CONC keep-alive connections opened before the phase
Latency is per request, from just before its bytes are written to the arrival of the response with its id (for an
SSE answer: the event carrying it). Throughput is reads / (first send .. last response). Every response is checked:
a JSON-RPC result, not isError, non-empty text that is the file's content (Node: equal to the file; ours: the
numbered lines of the whole file, `meta.total_lines` right); anything else counts as an error.

Memory: VmRSS after warm-up (WARMUP sequential reads, WARMUP_BURSTS bursts of N_CONC) and after every repetition
shows whether memory stays flat; the thread count is recorded at the same moments. Both are read once every server
has been idle SETTLE seconds (default 12), the same for all, so that what is compared is the memory a server keeps,
not what it holds for a burst that just ended (agent-read gives freed memory back ten seconds after its last request
or read ends). So every repetition's burst finds agent-read's memory given back; bench/mcp_latency.sh also times
bursts on a server that has been busy. The peak of a phase is VmHWM read at its end after resetting it at its start
(`echo 5 > /proc/PID/clear_refs`).

Also, before the reads, N_PING sequential `ping` requests per server: the protocol and transport floor, no file read.

Parameters (environment): N_SEQ=10000 N_CONC=1000 N_SEQ_HTTP=1000 N_PING=1000 REPS=5 N_FILES=200
  WARMUP=(2 x N_FILES) WARMUP_BURSTS=1  SETTLE=12 (seconds)  HTTP=auto|0  PHASE_TIMEOUT=300 (seconds)
  SERVERS=ours-stdio,node-stdio,ours-http,ours-http-sl,node-http (a subset to run)
  HTTP_QUICKACK=1 (diagnostic: see QUICKACK)
  MEM_PROBE=bench/heap_probe.py (diagnostic: at every idle moment, where each server's heap memory sits; with
  HEAP_PROBE_GDB=1 also glibc's own view, which attaches a debugger: see that script)
  AGENT_READ_BIN  NODE (node binary)  NODE_SERVER (path of server-filesystem's dist/index.js)
`python3 bench/mcp_load.py --files-only` only writes the files and prints their folder.
Raw results go to bench/data/mcp-results.json, server standard error to bench/data/mcp-logs/.
Only the standard library is used.
"""
import asyncio
import gc
import json
import math
import os
import platform
import random
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA_DIR = os.path.join(HERE, "data")
FILES_DIR = os.path.join(DATA_DIR, "mcp-files")
LOG_DIR = os.path.join(DATA_DIR, "mcp-logs")
RESULTS = os.path.join(DATA_DIR, "mcp-results.json")


def env_int(name, default):
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


N_FILES = env_int("N_FILES", 200)
N_SEQ = env_int("N_SEQ", 10000)
N_CONC = env_int("N_CONC", 1000)
N_SEQ_HTTP = env_int("N_SEQ_HTTP", 1000)
N_PING = env_int("N_PING", 1000)
REPS = env_int("REPS", 5)
WARMUP = env_int("WARMUP", 2 * N_FILES)
WARMUP_BURSTS = env_int("WARMUP_BURSTS", 1)
PHASE_TIMEOUT = env_int("PHASE_TIMEOUT", 300)
SETTLE = env_int("SETTLE", 12)
HTTP_MODE = os.environ.get("HTTP", "auto")
# Diagnostic only, never for the figures: the client acknowledges every HTTP segment at once (TCP_QUICKACK), which
# hides a server that leaves Nagle's algorithm on (its small writes then wait for the client's delayed ACK, ~40 ms).
QUICKACK = os.environ.get("HTTP_QUICKACK") == "1"
BIN = os.environ.get("AGENT_READ_BIN", os.path.join(REPO, "target", "release", "agent-read"))
NODE = os.environ.get("NODE", "node")
NODE_PKG = os.path.join(HERE, "node", "node_modules", "@modelcontextprotocol", "server-filesystem")
NODE_SERVER = os.environ.get("NODE_SERVER", os.path.join(NODE_PKG, "dist", "index.js"))
# The same server on the SDK's streamable HTTP transport (see that file).
NODE_OVER_HTTP = os.path.join(HERE, "node", "over_http.mjs")
PROTOCOL_VERSION = "2025-11-25"  # the newest version with an initialize handshake that both servers know


def now():
    return time.perf_counter()


# ---------------------------------------------------------------------------------------------------------------
# Data: N_FILES small text files, 1-8 KiB each, lines like real source code. Deterministic (seeded).

WORDS = ("buffer reader window offset limit config path root entry index cache state result error value count "
         "line chunk stream token request response handler session policy budget span node tree item key map "
         "list queue parse render encode decode scan flush open close check retry update build load store").split()
EXTS = (".rs", ".py", ".ts", ".go")


def ident(rng, parts=2):
    return "_".join(rng.choice(WORDS) for _ in range(rng.randint(1, parts)))


def source_line(rng, ext, depth):
    pad = "    " * depth
    kind = rng.random()
    a, b, c = ident(rng), ident(rng), ident(rng, 1)
    if kind < 0.12:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        mark = "#" if ext == ".py" else "//"
        return f"{pad}{mark} {words[:1].upper()}{words[1:]}."
    if kind < 0.20:
        return ""
    if ext == ".py":
        forms = [f"{pad}{a} = {b}.{c}({ident(rng)}, {rng.randint(0, 4096)})",
                 f"{pad}if {a} is not None and {b} > {rng.randint(1, 64)}:",
                 f"{pad}return {a}[{b}:{c}]",
                 f"{pad}for {c} in self.{a}:",
                 f"{pad}raise ValueError(f\"{a}: {{{b}!r}} is out of range\")"]
    elif ext == ".go":
        forms = [f"{pad}{a} := {b}.{c.capitalize()}({ident(rng)}, {rng.randint(0, 4096)})",
                 f"{pad}if err != nil {{ return nil, fmt.Errorf(\"{a}: %w\", err) }}",
                 f"{pad}for _, {c} := range {a} {{",
                 f"{pad}return {a}[{b}:{c}], nil"]
    else:
        forms = [f"{pad}let {a} = {b}.{c}(&{ident(rng)}, {rng.randint(0, 4096)})?;",
                 f"{pad}if {a}.len() > {rng.randint(1, 64)} && !{b}.is_empty() {{",
                 f"{pad}return Err(Error::new(\"{a}\", {b}));",
                 f"{pad}for {c} in {a}.iter().filter(|x| x.{b}()) {{",
                 f"{pad}{a}.{c}({b}.as_ref()).map_err(|e| e.context(\"{ident(rng)} \u2192 {c}\"))?;"]
    return rng.choice(forms)


def generate_files():
    """Writes the files once; returns [(absolute path, content)] sorted by path."""
    rng = random.Random(20261122)
    specs = []
    for i in range(N_FILES):
        ext = EXTS[i % len(EXTS)]
        rel = os.path.join(f"pkg_{i % 10:02d}", f"{ident(rng)}_{i:04d}{ext}")
        size = rng.randint(1024, 8192)
        lines, total, depth = [], 0, 0
        while total < size:
            line = source_line(rng, ext, depth)
            depth = max(0, min(4, depth + rng.choice((-1, 0, 0, 1))))
            lines.append(line)
            total += len(line.encode()) + 1
        while len(lines) > 1 and total - len(lines[-1].encode()) - 1 >= 1024 and total > 8192:
            total -= len(lines.pop().encode()) + 1
        specs.append((os.path.join(FILES_DIR, rel), "\n".join(lines) + "\n"))
    written = 0
    for path, content in specs:  # (re)writes any file that is missing or differs
        try:
            with open(path, encoding="utf-8", newline="") as f:
                if f.read() == content:
                    continue
        except OSError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(content)
        written += 1
    if written:
        print(f"wrote {written} of {N_FILES} files under {FILES_DIR}", file=sys.stderr)
    return sorted(specs)


# ---------------------------------------------------------------------------------------------------------------
# Process memory

def proc_status(pid):
    fields = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM", "Threads"):
                    fields[key] = int(rest.split()[0])  # KiB
    except OSError:
        pass
    return fields


def cpu_seconds(pid):
    """User + system CPU time of the process (all its threads), in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def reset_hwm(pid):
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------------------------
# Server processes and clients

class ServerProcess(asyncio.SubprocessProtocol):
    """A server child: its standard error goes to a log file; standard output to a callback (the stdio client)."""

    def __init__(self, name, cmd):
        self.name, self.cmd = name, cmd
        self.on_stdout = None
        self.exited = asyncio.get_running_loop().create_future()
        self.log = open(os.path.join(LOG_DIR, f"{name}.stderr"), "wb")
        self.stderr_bytes = 0
        self.transport = None

    async def start(self):
        loop = asyncio.get_running_loop()
        self.transport, _ = await loop.subprocess_exec(lambda: self, *self.cmd, cwd=DATA_DIR)
        self.pid = self.transport.get_pid()
        return self

    def pipe_data_received(self, fd, data):
        if fd == 1 and self.on_stdout:
            self.on_stdout(data)
        elif fd == 2:
            self.stderr_bytes += len(data)
            self.log.write(data)
            self.log.flush()

    def process_exited(self):
        if not self.exited.done():
            self.exited.set_result(self.transport.get_returncode())

    def write(self, data):
        self.transport.get_pipe_transport(0).write(data)

    async def stop(self, close_stdin=True):
        if close_stdin and not self.exited.done():
            self.transport.get_pipe_transport(0).close()
            try:
                await asyncio.wait_for(asyncio.shield(self.exited), 5)
            except asyncio.TimeoutError:
                pass
        if not self.exited.done():
            self.transport.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(self.exited), 5)
            except asyncio.TimeoutError:
                self.transport.kill()
                await self.exited
        self.transport.close()
        self.log.close()
        return self.exited.result()


class McpError(Exception):
    pass


class StdioClient:
    """Newline-delimited JSON-RPC over the server's standard input and output; any number of requests in flight."""

    def __init__(self, server):
        self.server = server
        self.pending = {}
        self.next_id = 0
        self.buffer = bytearray()
        self.unexpected = []  # server-sent requests and notifications
        server.on_stdout = self._on_stdout
        server.exited.add_done_callback(self._on_exit)

    def _on_stdout(self, data):
        arrived = now()
        self.buffer += data
        start = 0
        while True:
            end = self.buffer.find(b"\n", start)
            if end < 0:
                break
            line = bytes(self.buffer[start:end])
            start = end + 1
            if line.strip():
                self._dispatch(arrived, line)
        del self.buffer[:start]

    def _dispatch(self, arrived, line):
        try:
            msg = json.loads(line)
        except ValueError:
            self.unexpected.append(("not JSON", line[:200]))
            return
        if "method" in msg:
            self.unexpected.append(("server message", msg.get("method")))
            if "id" in msg:  # a request from the server (ping...): answer so it never waits
                reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {}} if msg["method"] == "ping" else \
                    {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "not supported"}}
                self.server.write(json.dumps(reply).encode() + b"\n")
            return
        future = self.pending.pop(msg.get("id"), None)
        if future is None:
            self.unexpected.append(("response with unknown id", msg.get("id")))
        elif not future.done():
            future.set_result((arrived, msg))

    def _on_exit(self, exited):
        for future in self.pending.values():
            if not future.done():
                future.set_exception(McpError(f"server exited with status {exited.result()}"))
        self.pending.clear()

    async def request(self, method, params, slot=0):
        """Returns (latency in seconds, response message)."""
        if self.server.exited.done():
            raise McpError(f"server exited with status {self.server.exited.result()}")
        self.next_id += 1
        rid = self.next_id
        future = asyncio.get_running_loop().create_future()
        self.pending[rid] = future
        data = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n"
        sent = now()
        self.server.write(data)
        arrived, msg = await future
        return arrived - sent, msg

    async def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.server.write(json.dumps(msg).encode() + b"\n")

    async def open_slots(self, count):
        pass

    async def close_slots(self):
        pass

    async def close(self):
        return await self.server.stop()


class HttpConn:
    """One keep-alive HTTP/1.1 connection on raw asyncio streams: POST a JSON-RPC message, read a JSON or SSE reply."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.closed = False

    @classmethod
    async def open(cls, host, port):
        reader, writer = await asyncio.open_connection(host, port, limit=1 << 22)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = cls(reader, writer)
        conn.sock = sock
        return conn

    async def exchange(self, head, body, want_id):
        """Sends one request; returns (sent, arrived, status, headers, message with want_id or None, others)."""
        sent = now()
        self.writer.write(head + body)
        if QUICKACK:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        reader = self.reader
        line = await reader.readuntil(b"\r\n\r\n")
        while line.startswith(b"HTTP/1.1 1"):  # 1xx interim answers
            line = await reader.readuntil(b"\r\n\r\n")
        lines = line.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for h in lines[1:]:
            if h:
                k, _, v = h.partition(":")
                headers[k.strip().lower()] = v.strip()
        ctype = headers.get("content-type", "")
        sse = SseParser() if ctype.startswith("text/event-stream") else None
        arrived, found, others, raw = None, None, [], []

        def take(chunk):
            nonlocal arrived, found
            if sse is None:
                raw.append(chunk)
                return
            for msg in sse.feed(chunk):
                if found is None and isinstance(msg, dict) and msg.get("id") == want_id and "method" not in msg:
                    arrived, found = now(), msg
                else:
                    others.append(msg)

        if "chunked" in headers.get("transfer-encoding", "").lower():
            while True:
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                        pass
                    break
                take(await reader.readexactly(size))
                await reader.readexactly(2)
        elif "content-length" in headers:
            length = int(headers["content-length"])
            if length:
                take(await reader.readexactly(length))
        elif status not in (202, 204, 304):
            take(await reader.read())  # body delimited by the end of the connection
            self.closed = True
        if headers.get("connection", "").lower() == "close":
            self.closed = True
        if arrived is None:
            arrived = now()
        if sse is None and raw:
            body_bytes = b"".join(raw)
            if ctype.startswith("application/json"):
                msg = json.loads(body_bytes)
                if isinstance(msg, dict) and msg.get("id") == want_id:
                    found = msg
                else:
                    others.append(msg)
            else:
                others.append(body_bytes[:300])
        return sent, arrived, status, headers, found, others

    def close(self):
        if not self.closed:
            self.closed = True
            self.writer.close()


class SseParser:
    """Incremental text/event-stream parser yielding the JSON of every event with data."""

    def __init__(self):
        self.buf = b""

    def feed(self, chunk):
        # Bytes, not text, until an event is complete: a chunk may end inside a UTF-8 character or a CR LF.
        self.buf = (self.buf + chunk).replace(b"\r\n", b"\n")
        out = []
        while b"\n\n" in self.buf:
            event, self.buf = self.buf.split(b"\n\n", 1)
            data = [line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
            if data and b"".join(data).strip():
                out.append(json.loads(b"\n".join(data)))
        return out


class HttpClient:
    """Streamable HTTP client: session mode carries Mcp-Session-Id; every request after initialize carries
    MCP-Protocol-Version. Slot i uses connection i (slot 0 for sequential use and the handshake)."""

    def __init__(self, server, port):
        self.server, self.port = server, port
        self.host = "127.0.0.1"
        self.session = None
        self.version = None
        self.next_id = 0
        self.conns = []
        self.unexpected = []
        self.statuses = {}

    def _head(self, body, method="POST"):
        lines = [f"{method} /mcp HTTP/1.1", f"Host: {self.host}:{self.port}", "Content-Type: application/json",
                 "Accept: application/json, text/event-stream", f"Content-Length: {len(body)}"]
        if self.session:
            lines.append(f"Mcp-Session-Id: {self.session}")
        if self.version:
            lines.append(f"MCP-Protocol-Version: {self.version}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    async def wait_ready(self, timeout=15):
        deadline = now() + timeout
        while True:
            if self.server.exited.done():
                raise McpError(f"HTTP server exited with status {self.server.exited.result()} before listening")
            try:
                _, writer = await asyncio.open_connection(self.host, self.port)
                writer.close()
                return
            except OSError:
                if now() > deadline:
                    raise McpError(f"HTTP server not listening on port {self.port} after {timeout} s")
                await asyncio.sleep(0.05)

    async def open_slots(self, count):
        while len(self.conns) < count:
            self.conns.append(await HttpConn.open(self.host, self.port))

    async def close_slots(self, keep=1):
        for conn in self.conns[keep:]:
            conn.close()
        del self.conns[keep:]

    async def _post(self, msg, slot, want_id):
        conn = self.conns[slot]
        if conn.closed:
            conn = self.conns[slot] = await HttpConn.open(self.host, self.port)
        body = json.dumps(msg).encode()
        sent, arrived, status, headers, found, others = await conn.exchange(self._head(body), body, want_id)
        self.statuses[status] = self.statuses.get(status, 0) + 1
        for other in others:
            self.unexpected.append(("other message in reply", str(other)[:200]))
        self.last_others = others
        return sent, arrived, status, headers, found

    async def request(self, method, params, slot=0):
        if not self.conns:
            await self.open_slots(1)
        self.next_id += 1
        rid = self.next_id
        sent, arrived, status, headers, found = await self._post(
            {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, slot, rid)
        if method == "initialize" and headers.get("mcp-session-id"):
            self.session = headers["mcp-session-id"]
        if found is None:
            raise McpError(f"HTTP {status} without the response to request {rid} "
                           f"(content-type {headers.get('content-type')!r}, body {str(self.last_others)[:300]})")
        return arrived - sent, found

    async def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        _, _, status, _, _ = await self._post(msg, 0, None)
        if status not in (200, 202, 204):
            raise McpError(f"notification {method}: HTTP {status}")

    async def close(self):
        if self.session and not self.server.exited.done():
            try:
                conn = await HttpConn.open(self.host, self.port)
                await asyncio.wait_for(conn.exchange(self._head(b"", "DELETE"), b"", None), 5)
                conn.close()
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
                pass
        for conn in self.conns:
            conn.close()
        self.conns = []
        return await self.server.stop(close_stdin=False)


# ---------------------------------------------------------------------------------------------------------------
# Targets: how to start each server, call its tool and check its answer

def check_ping(msg):
    return None if msg.get("result") == {} else f"ping answered {str(msg)[:200]}"


def tool_text(msg):
    """The first text block of a successful tool result, or (None, why it is not one)."""
    if "error" in msg:
        return None, f"JSON-RPC error {msg['error']}"
    result = msg.get("result") or {}
    if result.get("isError"):
        return None, f"isError: {str(result.get('content'))[:300]}"
    content = result.get("content") or []
    text = content[0].get("text", "") if content else ""
    return (text, None) if text else (None, "empty content")


def check_ours(msg, expected):
    text, failure = tool_text(msg)
    if failure:
        return failure
    result = msg["result"]
    path, body, first, n_lines = expected
    meta = (result.get("structuredContent") or {}).get("meta") or {}
    if not text.startswith("1: " + first) or meta.get("total_lines") != n_lines or meta.get("end_line") != n_lines:
        return f"not the whole file {path}: total_lines={meta.get('total_lines')} end_line={meta.get('end_line')}"
    return None


def check_node(msg, expected):
    text, failure = tool_text(msg)
    if failure:
        return failure
    if text != expected[1]:
        return f"content differs from {expected[0]} ({len(text)} chars, file has {len(expected[1])})"
    return None


class Target:
    def __init__(self, name, label, cmd, tool, check, http=None):
        self.name, self.label, self.cmd, self.tool, self.check, self.http = name, label, cmd, tool, check, http
        self.client = None
        self.rss = []  # (moment, VmRSS KiB)
        self.threads = []  # (moment, thread count), at the same moments
        self.probes = []  # (moment, MEM_PROBE's line)
        self.hwm_resets = True
        self.failed = None

    @property
    def phases(self):
        seq = N_SEQ_HTTP if self.http else N_SEQ
        return [p for p in (("ping", N_PING, False), ("seq", seq, False), ("conc", N_CONC, True)) if p[1] > 0]

    async def start(self):
        server = await ServerProcess(self.name, self.cmd).start()
        if self.http:
            self.client = HttpClient(server, self.http)
            await self.client.wait_ready()
        else:
            self.client = StdioClient(server)
        _, init = await self.client.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "agent-read-mcp-load", "version": "1"}})
        if "result" not in init:
            raise McpError(f"{self.name}: initialize failed: {init}")
        self.server_info = init["result"].get("serverInfo", {})
        self.client.version = init["result"].get("protocolVersion", PROTOCOL_VERSION)
        await self.client.notify("notifications/initialized")
        _, tools = await self.client.request("tools/list", {})
        names = [t["name"] for t in tools.get("result", {}).get("tools", [])]
        if self.tool not in names:
            raise McpError(f"{self.name}: no tool {self.tool!r} in {names}")

    @property
    def pid(self):
        return self.client.server.pid


def build_targets(http_flags):
    root = FILES_DIR
    # Every read is answered with the file, as the Node server does: the same 200 files are read over and over, and
    # with repeat-read notices (on by default) most answers would be one-line notices instead.
    ours = [BIN, "mcp", "--root", root] + (["--no-repeat-stubs"] if "--no-repeat-stubs" in http_flags else [])
    targets = [
        Target("ours-stdio", "agent-read, stdio", ours, "read", check_ours),
        Target("node-stdio", "server-filesystem, stdio", [NODE, NODE_SERVER, root], "read_text_file", check_node),
    ]
    if "--http" in http_flags:
        port = free_port()
        targets.append(Target("ours-http", "agent-read, HTTP session",
                              ours + ["--http", f"127.0.0.1:{port}"], "read", check_ours, port))
    if "--stateless" in http_flags:
        port = free_port()
        targets.append(Target("ours-http-sl", "agent-read, HTTP stateless",
                              ours + ["--http", f"127.0.0.1:{port}", "--stateless"],
                              "read", check_ours, port))
    if HTTP_MODE != "0":
        port = free_port()
        targets.append(Target("node-http", "server-filesystem, HTTP session",
                              [NODE, NODE_OVER_HTTP, str(port), root], "read_text_file", check_node, port))
    wanted = os.environ.get("SERVERS")
    if wanted:
        keep = {s.strip() for s in wanted.split(",")}
        targets = [t for t in targets if t.name in keep]
    return targets


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_flags():
    """The flags this build's `mcp` offers among those the benchmark uses (older builds lack some)."""
    out = subprocess.run([BIN, "mcp", "--help"], capture_output=True, text=True).stdout
    flags = {flag for flag in ("--http", "--stateless", "--no-repeat-stubs") if flag in out}
    return flags - {"--http", "--stateless"} if HTTP_MODE == "0" else flags


# ---------------------------------------------------------------------------------------------------------------
# Phases

async def run_phase(target, files, n, concurrent, start_index, ping=False):
    """Runs n reads; returns a dict of latencies, wall time and errors."""
    client = target.client
    expected = [files[(start_index + i) % len(files)] for i in range(n)]
    latencies, errors, responses = [], [], []
    if concurrent:
        try:
            await client.open_slots(n)
        except OSError as e:
            return {"n": n, "wall": 0, "latencies": [], "errors": [f"cannot open {n} connections: {e}"],
                    "stalled": f"cannot open {n} connections: {e}", "cpu_server": 0, "cpu_client": 0}

    if ping:
        method, params = "ping", lambda i: {}
    else:
        method, params = "tools/call", lambda i: {"name": target.tool, "arguments": {"path": expected[i][0]}}

    async def one(i, slot):
        try:
            latency, msg = await client.request(method, params(i), slot)
        except Exception as e:  # every failure is counted, none ends the run
            errors.append(f"read {i} ({expected[i][0]}): {type(e).__name__}: {e}")
            return
        latencies.append(latency)
        responses.append((i, msg))

    async def all_reads():
        if concurrent:
            await asyncio.gather(*(one(i, i) for i in range(n)))
        else:
            for i in range(n):
                await one(i, 0)

    gc.collect()
    gc.disable()  # no collector pauses of the client inside the timed phase
    stalled = None
    cpu_server, cpu_client = cpu_seconds(target.pid), time.process_time()
    started = now()
    try:
        await asyncio.wait_for(all_reads(), PHASE_TIMEOUT)
    except asyncio.TimeoutError:
        stalled = (f"phase did not finish in {PHASE_TIMEOUT} s: {len(responses)} of {n} responses, "
                   f"{len(errors)} failed requests")
    wall = now() - started
    cpu_server, cpu_client = cpu_seconds(target.pid) - cpu_server, time.process_time() - cpu_client
    gc.enable()
    missing = n - len(responses) - len(errors)
    for i, msg in responses:
        problem = check_ping(msg) if ping else target.check(msg, expected[i])
        if problem:
            errors.append(f"read {i}: {problem}")
    if stalled:
        errors.append(stalled)
        errors.extend(["no response (stall)"] * max(0, missing - 1))
    if concurrent:
        await client.close_slots()
    return {"n": n, "wall": wall, "latencies": latencies, "errors": errors, "stalled": stalled,
            "cpu_server": cpu_server, "cpu_client": cpu_client}


def pct(values, q):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else float("nan")


def idle_checkpoint(targets, moment):
    """Once every server has been idle SETTLE seconds: its resident size and threads, then the MEM_PROBE line."""
    for target in targets:
        status = proc_status(target.pid)
        target.rss.append((moment, status.get("VmRSS")))
        target.threads.append((moment, status.get("Threads")))
    probe = os.environ.get("MEM_PROBE")
    for target in targets:
        line = f"RSS {kib(target.rss[-1][1])}, {target.threads[-1][1]} threads"
        if probe:
            try:
                out = subprocess.run([sys.executable, probe, str(target.pid)], capture_output=True, text=True,
                                     timeout=120)
                target.probes.append((moment, out.stdout.strip() or out.stderr.strip()[-300:]))
            except (OSError, subprocess.TimeoutExpired) as e:
                target.probes.append((moment, f"probe failed: {e}"))
            line += f"; {target.probes[-1][1]}"
        print(f"idle, {moment:7s} {target.name:13s} {line}", file=sys.stderr)


async def warm_up(target, files):
    for i in range(WARMUP):
        _, msg = await target.client.request("tools/call",
                                             {"name": target.tool, "arguments": {"path": files[i % len(files)][0]}})
        problem = target.check(msg, files[i % len(files)])
        if problem:
            raise McpError(f"{target.name}: warm-up read failed: {problem}")
    for _ in range(WARMUP_BURSTS if N_CONC else 0):
        result = await run_phase(target, files, N_CONC, True, 0)
        if result["errors"]:
            print(f"{target.name}: warm-up burst errors: {result['errors'][:3]}", file=sys.stderr)


async def bench():
    files = [(path, body, body.split("\n", 1)[0], body.count("\n")) for path, body in generate_files()]
    os.makedirs(LOG_DIR, exist_ok=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * N_CONC + 256
    if soft < need:  # the servers inherit it too
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    flags = http_flags()
    targets = build_targets(flags)
    notes = []
    if QUICKACK:
        notes.append("HTTP_QUICKACK=1: diagnostic run, the client acknowledges every segment at once; "
                     "not comparable with normal runs")
    if HTTP_MODE != "0" and "--http" not in flags:
        notes.append("this agent-read build has no `mcp --http`: HTTP rows skipped")
    for target in targets:
        await target.start()
        target.rss.append(("start", proc_status(target.pid).get("VmRSS")))
    print("servers: " + ", ".join(f"{t.name} (pid {t.pid}, {t.server_info.get('name')} "
                                  f"{t.server_info.get('version')}, protocol {t.client.version})" for t in targets),
          file=sys.stderr)
    for target in targets:
        await warm_up(target, files)
    await asyncio.sleep(SETTLE)
    for target in targets:
        target.run_hwm = proc_status(target.pid).get("VmHWM") or 0  # start-up and warm-up; phases' peaks added below
    idle_checkpoint(targets, "warm")

    samples = {}  # (target, phase) -> list of per-rep dicts
    cursor = 0
    for rep in range(REPS):
        order = targets[rep % len(targets):] + targets[:rep % len(targets)]
        for phase in ("ping", "seq", "conc"):
            for target in order:
                spec = next((p for p in target.phases if p[0] == phase), None)
                if spec is None or target.failed:
                    continue
                _, n, concurrent = spec
                target.hwm_resets &= reset_hwm(target.pid)
                result = await run_phase(target, files, n, concurrent, cursor, ping=phase == "ping")
                cursor += 7
                status = proc_status(target.pid)
                result["hwm"] = status.get("VmHWM")
                result["rss"] = status.get("VmRSS")
                target.run_hwm = max(target.run_hwm, result["hwm"] or 0)
                lat = result.pop("latencies")
                result.update(p50=statistics.median(lat) if lat else float("nan"), p99=pct(lat, 0.99),
                              completed=len(lat), throughput=len(lat) / result["wall"] if result["wall"] else 0)
                samples.setdefault((target.name, phase), []).append(result)
                print(f"rep {rep + 1}/{REPS} {target.name:13s} {phase:4s} n={n:6d} "
                      f"p50={result['p50'] * 1e3:8.3f} ms p99={result['p99'] * 1e3:8.3f} ms "
                      f"{result['throughput']:9.0f} reads/s  server CPU {result['cpu_server'] / n * 1e6:6.0f} us/read  "
                      f"client CPU {result['cpu_client'] / n * 1e6:6.0f} us/read  "
                      f"HWM {kib(result['hwm'])}  RSS {kib(result['rss'])}  "
                      f"errors {len(result['errors'])}", file=sys.stderr)
                for e in result["errors"][:3]:
                    print(f"    {e}", file=sys.stderr)
                if result["stalled"] or target.client.server.exited.done():
                    target.failed = result["stalled"] or f"exited with {target.client.server.exited.result()}"
                    print(f"{target.name}: stopped using it: {target.failed}", file=sys.stderr)
        await asyncio.sleep(SETTLE)
        idle_checkpoint(targets, f"rep {rep + 1}")

    for target in targets:
        status = proc_status(target.pid)
        target.rss.append(("end", status.get("VmRSS")))
        target.unexpected = list(target.client.unexpected)
        target.statuses = dict(getattr(target.client, "statuses", {}))
        target.exit = await target.client.close()
        target.stderr_bytes = target.client.server.stderr_bytes
    return targets, samples, notes


# ---------------------------------------------------------------------------------------------------------------
# Report

def kib(v):
    return f"{v / 1024:.1f} MiB" if v else "n/a"


def ms(v):
    if v != v:
        return "n/a"
    v *= 1e3
    return f"{v:.0f} ms" if v >= 100 else f"{v:.1f} ms" if v >= 10 else f"{v:.2f} ms" if v >= 1 else f"{v:.3f} ms"


def summarize(rows):
    return {
        "p50": statistics.median(r["p50"] for r in rows),
        "p99": statistics.median(r["p99"] for r in rows),
        "throughput": statistics.median(r["throughput"] for r in rows),
        "hwm": max((r["hwm"] or 0) for r in rows),
        "cpu": sum(r["cpu_server"] for r in rows) / sum(r["n"] for r in rows),
        "errors": sum(len(r["errors"]) for r in rows),
        "n": rows[0]["n"], "reps": len(rows),
    }


ROW_TEXT = {
    ("ours-stdio", "ping"): "sequential `ping` (no read: protocol floor), stdio",
    ("node-stdio", "ping"): "sequential `ping` (no read: protocol floor), stdio",
    ("ours-http", "ping"): "sequential `ping` (no read: protocol floor), HTTP session",
    ("ours-http-sl", "ping"): "sequential `ping` (no read: protocol floor), HTTP stateless",
    ("ours-stdio", "seq"): "sequential, stdio", ("node-stdio", "seq"): "sequential, stdio",
    ("ours-stdio", "conc"): "{n} at once, stdio (one pipe, {n} requests in flight)",
    ("node-stdio", "conc"): "{n} at once, stdio (one pipe, {n} requests in flight)",
    ("ours-http", "seq"): "sequential, HTTP session (one keep-alive connection)",
    ("ours-http", "conc"): "{n} at once, HTTP session ({n} connections, one request each)",
    ("ours-http-sl", "seq"): "sequential, HTTP stateless (one keep-alive connection)",
    ("ours-http-sl", "conc"): "{n} at once, HTTP stateless ({n} connections, one request each)",
    ("node-http", "ping"): "sequential `ping` (no read: protocol floor), HTTP session",
    ("node-http", "seq"): "sequential, HTTP session (one keep-alive connection)",
    ("node-http", "conc"): "{n} at once, HTTP session ({n} connections, one request each)",
}
COMPARISONS = [
    ("sequential: agent-read stdio vs Node stdio", ("ours-stdio", "seq"), ("node-stdio", "seq")),
    ("concurrent, like for like: agent-read stdio vs Node stdio", ("ours-stdio", "conc"), ("node-stdio", "conc")),
    ("sequential, like for like: agent-read HTTP session vs Node HTTP session", ("ours-http", "seq"),
     ("node-http", "seq")),
    ("sequential: agent-read HTTP stateless vs Node HTTP session", ("ours-http-sl", "seq"), ("node-http", "seq")),
    ("concurrent, like for like: agent-read HTTP session vs Node HTTP session", ("ours-http", "conc"),
     ("node-http", "conc")),
    ("concurrent: agent-read HTTP stateless vs Node HTTP session", ("ours-http-sl", "conc"), ("node-http", "conc")),
    ("concurrent: agent-read HTTP session vs Node stdio", ("ours-http", "conc"), ("node-stdio", "conc")),
    ("concurrent: agent-read HTTP stateless vs Node stdio", ("ours-http-sl", "conc"), ("node-stdio", "conc")),
]


def report(targets, samples, notes, versions):
    by_name = {t.name: t for t in targets}
    summary = {key: summarize(rows) for key, rows in samples.items()}
    out = []
    out.append(f"Machine: {versions['machine']}. {versions['node']}; "
               f"@modelcontextprotocol/server-filesystem {versions['fs']} (SDK {versions['sdk']}); "
               f"agent-read {versions['ours']}.")
    out.append(f"Files: {N_FILES} source-like text files of 1-8 KiB, read round-robin. Repetitions: {REPS} "
               f"(median of the per-repetition p50, p99 and throughput; peak RSS is the largest per-phase VmHWM); "
               f"warm-up {WARMUP} sequential reads and {WARMUP_BURSTS} burst(s) of {N_CONC} per server.")
    for note in notes:
        out.append(f"Note: {note}.")
    out.append("")
    out.append("| load | server | requests | p50 | p99 | throughput | server CPU per request | peak RSS | errors |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for phase in ("ping", "seq", "conc"):
        for t in targets:
            s = summary.get((t.name, phase))
            if not s:
                continue
            load = ROW_TEXT[(t.name, phase)].format(n=f"{s['n']:,}")
            out.append(f"| {load} | {t.label} | {s['n']:,} × {s['reps']} | {ms(s['p50'])} | {ms(s['p99'])} | "
                       f"{s['throughput']:,.0f}/s | {s['cpu'] * 1e6:.0f} µs | {kib(s['hwm'])} | {s['errors']} |")
    out.append("")
    out.append("| comparison | agent-read p50 | Node p50 | ratio | target | met |")
    out.append("|---|---:|---:|---:|---|---|")
    for label, ours, node in COMPARISONS:
        if ours in summary and node in summary:
            a, b = summary[ours]["p50"], summary[node]["p50"]
            ratio = a / b if b else float("nan")
            met = "yes" if ratio <= 0.2 else "NO"
            out.append(f"| {label} | {ms(a)} | {ms(b)} | {ratio:.2f}× | ≤ 0.20× | {met} |")
    ours_errors = sum(s["errors"] for k, s in summary.items() if not k[0].startswith("node-"))
    node_errors = sum(s["errors"] for k, s in summary.items() if k[0].startswith("node-"))
    out.append(f"| errors, all servers and phases | {ours_errors} | {node_errors} | | 0 | "
               f"{'yes' if ours_errors + node_errors == 0 else 'NO'} |")
    out.append("")
    out.append("These ratios include this client's own time, which every server pays alike (about 70-100 us per request "
               "over stdio), so they understate the servers' difference; bench/mcp_latency.sh measures with a client "
               "that adds about 12 us.")
    out.append("")
    out.append("| server | RSS after warm-up | " + " | ".join(f"after rep {i + 1}" for i in range(REPS)) +
               " | growth | peak RSS, whole run | flat (growth ≤ max(1 MiB, 10%)) |")
    out.append("|---|---:|" + "---:|" * REPS + "---:|---:|---|")
    for t in targets:
        rss = dict(t.rss)
        warm, end = rss.get("warm"), rss.get(f"rep {REPS}") or rss.get("end")
        growth = (end - warm) if warm and end else None
        flat = growth is not None and growth <= max(1024, warm * 0.10)
        out.append(f"| {t.label} | {kib(warm)} | " + " | ".join(kib(rss.get(f'rep {i + 1}')) for i in range(REPS)) +
                   f" | {'+' if growth and growth > 0 else ''}{(growth or 0) / 1024:.1f} MiB | {kib(t.run_hwm)} | "
                   f"{'yes' if flat else 'NO'} |")
    problems = []
    for t in targets:
        if t.failed:
            problems.append(f"{t.name}: {t.failed}")
        if t.unexpected:
            problems.append(f"{t.name}: {len(t.unexpected)} unexpected messages, first: {t.unexpected[:3]}")
        if not t.hwm_resets:
            problems.append(f"{t.name}: VmHWM could not be reset; peak RSS is since start")
        if t.exit not in (0, None, -signal.SIGTERM):
            problems.append(f"{t.name}: exit status {t.exit} when stopped")
        for (name, phase), rows in samples.items():
            if name == t.name:
                for r in rows:
                    for e in r["errors"][:5]:
                        problems.append(f"{name} {phase}: {e}")
    if problems:
        out.append("")
        out.append("Problems seen:")
        out.extend(f"- {p}" for p in problems)
    logs = ", ".join(f"{t.name} {t.stderr_bytes} B" for t in targets)
    out.append("")
    statuses = "; ".join(f"{t.name} {t.statuses}" for t in targets if t.http)
    out.append(f"Server standard error (bench/data/mcp-logs/): {logs}."
               + (f" HTTP statuses: {statuses}." if statuses else ""))
    return "\n".join(out), summary


def versions():
    def sh(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO).stdout.strip()
        except OSError:
            return "?"

    def pkg_version(path):
        try:
            with open(os.path.join(path, "package.json")) as f:
                return json.load(f)["version"]
        except (OSError, ValueError, KeyError):
            return "?"

    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    return {
        "machine": f"{os.cpu_count()} vCPU {cpu}, {mem:.0f} GiB RAM, Linux {platform.release()}, "
                   f"Python {platform.python_version()}",
        "node": f"Node {sh([NODE, '--version'])}",
        "fs": pkg_version(NODE_PKG),
        "sdk": pkg_version(os.path.join(os.path.dirname(NODE_PKG), "sdk")),
        "ours": f"{sh([BIN, '--version']).replace('agent-read ', '')} "
                f"(git {sh(['git', 'rev-parse', '--short', 'HEAD'])}"
                + (", uncommitted changes" if sh(["git", "status", "--porcelain", "--", "src", "Cargo.toml"]) else "")
                + ")",
    }


def main():
    if sys.argv[1:] == ["--files-only"]:  # for bench/mcp_latency.sh, which reads the same files
        generate_files()
        return print(FILES_DIR)
    if not os.path.exists(BIN):
        raise SystemExit(f"no binary at {BIN}: run `cargo build --release` first (bench/mcp_load.sh does)")
    if not os.path.exists(NODE_SERVER):
        raise SystemExit(f"no Node server at {NODE_SERVER}: run `npm ci` in bench/node (bench/mcp_load.sh does)")
    targets, samples, notes = asyncio.run(bench())
    table, summary = report(targets, samples, notes, versions())
    with open(RESULTS, "w") as f:
        json.dump({"params": {"N_FILES": N_FILES, "N_SEQ": N_SEQ, "N_CONC": N_CONC, "N_SEQ_HTTP": N_SEQ_HTTP,
                              "REPS": REPS, "WARMUP": WARMUP},
                   "samples": {f"{k[0]} {k[1]}": v for k, v in samples.items()},
                   "rss": {t.name: t.rss for t in targets}, "threads": {t.name: t.threads for t in targets},
                   "probes": {t.name: t.probes for t in targets}}, f, indent=1)
    print(table)


if __name__ == "__main__":
    main()
