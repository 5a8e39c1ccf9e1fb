#!/usr/bin/env python3
"""End-to-end test of `agent-read mcp`, driven by the official MCP Python SDK (mcp==2.3.0).

A real client (the SDK's `ClientSession`) talks to the real server binary over a real transport, in a temporary
workspace of real files, and checks what comes back: the handshake, the tool listing, reads, paging to the end of a
long file, a directory listing, the error results, a protocol error for an unknown tool, and MCP Roots (adopted
after initialization and followed on `notifications/roots/list_changed`).

Each transport is driven twice: by `ClientSession` through the `initialize` handshake (protocol up to 2025-11-25),
and by the SDK's high-level `Client` as a user gets it (mode "auto": `server/discover`, then protocol 2026-07-28, with
no `initialize`; its roots come within calls, as `input_required` and then `inputResponses`).

The same checks run over every transport the binary offers:

    stdio            agent-read mcp --root DIR
    http             agent-read mcp --root DIR --http 127.0.0.1:PORT              (at /mcp, with sessions)
    http-stateless   agent-read mcp --root DIR --http 127.0.0.1:PORT --stateless  (roots need a session: skipped)

Usage: mcp_e2e.py [--transport stdio|http|all]   (default all; the binary is $AGENT_READ_BIN, default
target/debug/agent-read). With `all`, HTTP is skipped, with a line saying so, when `agent-read mcp --help` does not
mention --http; with `http` that is a failure. Exit status 0 only when every check that ran passed.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import ClientSession, MCPDeprecationWarning, MCPError, StdioServerParameters, stdio_client
from mcp import types
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

if sys.version_info < (3, 11):  # anyio brings the backport there
    from exceptiongroup import BaseExceptionGroup

REPO = Path(__file__).resolve().parents[4]
SERVER_NAME = "agent-read"
CHECK_TIMEOUT_S = 60  # one check, all its calls included
REQUEST_TIMEOUT_S = 30  # one request
STARTUP_TIMEOUT_S = 10  # an HTTP server to accept connections
ROOTS_POLL_S = 5  # the server adopts the client's roots asynchronously
BIG_LINES = 5000
PAGE = 100


# --------------------------------------------------------------------------------------------------------------------
# Failing loudly


class CheckFailed(Exception):
    """A check saw something other than what it expected; the message says what it expected and what it got."""


def fail(message: str) -> None:
    raise CheckFailed(message)


def expect(condition: bool, what: str, got: Any) -> None:
    if not condition:
        fail(f"expected {what}; got: {clip(got)}")


def expect_eq(actual: Any, expected: Any, what: str) -> None:
    if actual != expected:
        fail(f"{what}: expected {clip(expected)}, got {clip(actual)}")


def clip(value: Any, limit: int = 1500) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def dump(result: Any) -> Any:
    """A result as the JSON that came over the wire (camelCase), for messages."""
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


# --------------------------------------------------------------------------------------------------------------------
# The crate and the binary


def crate_version() -> str:
    text = (REPO / "Cargo.toml").read_text(encoding="utf-8")
    try:
        import tomllib

        return tomllib.loads(text)["workspace"]["package"]["version"]
    except ModuleNotFoundError:  # Python 3.10: no tomllib; the [workspace.package] table's version line is enough.
        package = text.split("[workspace.package]", 1)[1].split("\n[", 1)[0]
        match = re.search(r'^version\s*=\s*"([^"]+)"', package, re.M)
        if match is None:
            raise RuntimeError("no version in Cargo.toml's [workspace.package] table") from None
        return match.group(1)


def server_binary() -> Path:
    configured = os.environ.get("AGENT_READ_BIN")
    binary = Path(configured).resolve() if configured else REPO / "target/debug/agent-read"
    if not binary.is_file():
        raise SystemExit(f"mcp_e2e: the server binary {binary} does not exist (build it, or set AGENT_READ_BIN)")
    return binary


def mcp_help(binary: Path) -> str:
    done = subprocess.run([str(binary), "mcp", "--help"], capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr


# --------------------------------------------------------------------------------------------------------------------
# The workspace: real files in a fresh temporary directory


@dataclass
class Workspace:
    base: Path  # holds everything below
    root: Path  # the server's --root
    outside_file: Path  # an existing file outside the root
    secret: str  # its content, which must never come back
    client_root_a: Path  # roots the client offers (inside root), first ...
    client_root_b: Path  # ... and after roots/list_changed (a space in its name: the URI is percent-encoded)
    hello: bytes
    big: str
    tree: list[tuple[str, str, int | None]]  # (name, kind, size) in name-byte order


def make_workspace(base: Path) -> Workspace:
    root = base / "workspace"
    root.mkdir()

    hello = "Hello, agent-read!\nsecond line: it has a colon\nthird line ünïcödé ✓\n".encode()
    (root / "hello.txt").write_bytes(hello)

    # Longer than one page, with the content that trips naive line handling: empty lines, tabs, trailing blanks,
    # "N: " look-alikes, non-ASCII text.
    def big_line(i: int) -> str:
        if i % 97 == 0:
            return ""
        if i % 89 == 0:
            return f"{i}: looks like a line prefix"
        if i % 53 == 0:
            return f"line {i}\twith a tab and trailing blanks   "
        if i % 41 == 0:
            return f"line {i} – ünïcödé 漢字 ✓"
        return f"line {i:05d} " + "abcdefghij"[: i % 10]

    big = "".join(big_line(i) + "\n" for i in range(1, BIG_LINES + 1))
    (root / "big.txt").write_text(big, encoding="utf-8")

    tree = root / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.txt").write_text("alpha\n", encoding="utf-8")
    (tree / "b.txt").write_text("bravo bravo\n", encoding="utf-8")
    (tree / "Z.md").write_text("# upper case sorts first\n", encoding="utf-8")
    (tree / "é.txt").write_text("non-ASCII sorts last\n", encoding="utf-8")
    (tree / "sub" / "inner.txt").write_text("inner\n", encoding="utf-8")
    os.symlink("a.txt", tree / "link")
    listing: list[tuple[str, str, int | None]] = []
    for name in sorted(os.listdir(tree), key=os.fsencode):
        path = tree / name
        kind = "symlink" if path.is_symlink() else "dir" if path.is_dir() else "file"
        listing.append((name, kind, path.lstat().st_size if kind == "file" else None))

    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    secret = "OUTSIDE-THE-ROOT-do-not-show"
    (elsewhere / "secret.txt").write_text(secret + "\n", encoding="utf-8")

    # Client roots lie inside --root: a client's roots only narrow the configured ones.
    client_root_a = root / "client-root-a"
    client_root_a.mkdir()
    (client_root_a / "from_a.txt").write_text("from client root a\n", encoding="utf-8")
    client_root_b = root / "client root b"
    client_root_b.mkdir()
    (client_root_b / "from_b.txt").write_text("from client root b\n", encoding="utf-8")

    return Workspace(
        base=base,
        root=root,
        outside_file=elsewhere / "secret.txt",
        secret=secret,
        client_root_a=client_root_a,
        client_root_b=client_root_b,
        hello=hello,
        big=big,
        tree=listing,
    )


# --------------------------------------------------------------------------------------------------------------------
# Transports: each target opens initialized-or-not ClientSessions against one server


ListRoots = Callable[[Any], Awaitable[types.ListRootsResult]]


PROTOCOL_2026 = "2026-07-28"


@dataclass
class Target:
    name: str
    open: Callable[..., Any]  # open(list_roots=None) -> async context manager yielding a ClientSession (or a Client)
    roots: bool  # the client's roots reach the server (roots/list, or within a call on 2026-07-28)
    many_sessions: bool  # one server process serves several clients at once
    log: Path  # the server's standard error
    keeps_session: bool = True  # the server keeps a session (ledger) across this client's calls
    protocol: str = "handshake"  # "handshake" (initialize, up to 2025-11-25) or PROTOCOL_2026 (server/discover)


def new_session(read, write, list_roots: ListRoots | None) -> ClientSession:
    return ClientSession(
        read,
        write,
        read_timeout_seconds=REQUEST_TIMEOUT_S,
        list_roots_callback=list_roots,
        client_info=types.Implementation(name="agent-read-e2e", version="1"),
    )


def stdio_target(binary: Path, ws: Workspace, protocol: str = "handshake") -> Target:
    """The server over stdio, driven by ClientSession through initialize, or (protocol 2026) by the SDK's Client."""
    name = "stdio" if protocol == "handshake" else "stdio 2026"
    log = ws.base / f"{name.replace(' ', '-')}-server.log"
    params = StdioServerParameters(command=str(binary), args=["mcp", "--root", str(ws.root)])

    @asynccontextmanager
    async def open_session(list_roots: ListRoots | None = None) -> AsyncIterator[ClientSession | Client]:
        with log.open("a", encoding="utf-8") as errlog:
            if protocol == PROTOCOL_2026:
                async with client_2026(stdio_client(params, errlog=errlog), list_roots) as client:
                    yield client
                return
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with new_session(read, write, list_roots) as session:
                    yield session

    return Target(name, open_session, roots=True, many_sessions=False, log=log, protocol=protocol)


def client_2026(server: Any, list_roots: ListRoots | None) -> Client:
    """The SDK's high-level client as a user gets it (mode "auto": server/discover, then 2026-07-28 if offered)."""
    return Client(
        server,
        read_timeout_seconds=REQUEST_TIMEOUT_S,
        list_roots_callback=list_roots,
        client_info=types.Implementation(name="agent-read-e2e", version="1"),
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log_tail(log: Path, lines: int = 20) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        text = ""
    tail = text.strip().splitlines()[-lines:] or ["(no output)"]
    return "\n".join("    " + line for line in tail)


@asynccontextmanager
async def http_server(binary: Path, ws: Workspace, stateless: bool, log: Path) -> AsyncIterator[str]:
    """Starts `agent-read mcp --http` on a free port, waits until it accepts connections, and always kills it."""
    port = free_port()
    args = [str(binary), "mcp", "--root", str(ws.root), "--http", f"127.0.0.1:{port}"]
    if stateless:
        args.append("--stateless")
    with log.open("a", encoding="utf-8") as out:
        child = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if child.poll() is not None:
                raise RuntimeError(
                    f"`{' '.join(args)}` exited with status {child.returncode} before accepting connections; "
                    f"its output:\n{log_tail(log)}"
                )
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"`{' '.join(args)}` did not accept connections on 127.0.0.1:{port} within {STARTUP_TIMEOUT_S} s; "
                    f"its output:\n{log_tail(log)}"
                )
            await anyio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        child.terminate()
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def http_target(name: str, url: str, stateless: bool, log: Path) -> Target:
    @asynccontextmanager
    async def open_session(list_roots: ListRoots | None = None) -> AsyncIterator[ClientSession]:
        async with streamable_http_client(url) as (read, write):
            async with new_session(read, write, list_roots) as session:
                yield session

    return Target(name, open_session, roots=not stateless, many_sessions=not stateless, log=log, keeps_session=not stateless)


def http_target_2026(name: str, url: str, log: Path) -> Target:
    """Either HTTP mode: on 2026-07-28 there are no sessions, every call stands alone and carries its roots."""

    @asynccontextmanager
    async def open_client(list_roots: ListRoots | None = None) -> AsyncIterator[Client]:
        async with client_2026(url, list_roots) as client:
            yield client

    return Target(
        f"{name} 2026", open_client, roots=True, many_sessions=True, log=log, keeps_session=False, protocol=PROTOCOL_2026
    )


# --------------------------------------------------------------------------------------------------------------------
# Helpers over tool results


async def read(session: ClientSession, arguments: dict[str, Any]) -> types.CallToolResult:
    """tools/call read; the SDK validates a successful result's structuredContent against the outputSchema."""
    return await session.call_tool("read", arguments)


def text_of(result: types.CallToolResult) -> str:
    expect(len(result.content) == 1, "exactly one content block", dump(result))
    block = result.content[0]
    expect(block.type == "text", "a text content block", dump(result))
    return block.text


def structured_of(result: types.CallToolResult) -> dict[str, Any]:
    """The JSON result in structuredContent; its `output` must be the text content, verbatim."""
    structured = result.structured_content
    expect(isinstance(structured, dict), "structuredContent to be a JSON object", dump(result))
    expect_eq(structured.get("output"), text_of(result), "structuredContent.output vs the text content")
    return structured


def expect_ok(result: types.CallToolResult, what: str) -> dict[str, Any]:
    expect(result.is_error is False, f"{what}: isError false", dump(result))
    structured = structured_of(result)
    expect(structured.get("ok") is True, f"{what}: structuredContent.ok true", structured)
    return structured


def expect_error(result: types.CallToolResult, code: str, what: str) -> dict[str, Any]:
    expect(result.is_error is True, f"{what}: isError true", dump(result))
    structured = structured_of(result)
    expect(
        structured.get("ok") is False and structured.get("kind") == "error" and structured.get("error_code") == code,
        f"{what}: structuredContent with ok false, kind error, error_code {code}",
        structured,
    )
    expect(text_of(result).startswith(f"{code}: "), f"{what}: the text to start with `{code}: `", text_of(result))
    expect(isinstance(structured.get("error"), str) and structured["error"], f"{what}: an `error` message", structured)
    return structured


NUMBERED = re.compile(r"^(\d+): (.*)$", re.S)
NEXT_CALL = re.compile(r"next: offset=(\d+)(?: limit=(\d+))?\)$")


def split_window(text: str) -> tuple[list[tuple[int, str]], str]:
    """A line-mode window's numbered lines (number, content) and its footer (the last line)."""
    *body, footer = text.split("\n")
    lines = []
    for row in body:
        match = NUMBERED.match(row)
        expect(match is not None, "every line before the footer to be `N: text`", row)
        lines.append((int(match.group(1)), match.group(2)))
    return lines, footer


# --------------------------------------------------------------------------------------------------------------------
# The checks: one function each; they return a one-line summary of what they saw


@dataclass
class Context:
    ws: Workspace
    target: Target
    version: str


async def check_initialize(session: ClientSession, ctx: Context) -> str:
    result = await session.initialize()
    expect_eq(result.server_info.name, SERVER_NAME, "serverInfo.name")
    expect_eq(result.server_info.version, ctx.version, "serverInfo.version (Cargo.toml [package].version)")
    expect(result.capabilities.tools is not None, "a tools capability", dump(result))
    expect(result.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS, "a protocol version the SDK knows", dump(result))
    return f"{result.server_info.name} {result.server_info.version}, protocol {result.protocol_version}, tools"


async def check_discover(client: Client, ctx: Context) -> str:
    """A 2026 client has discovered the server on entering: what it found."""
    expect_eq(client.protocol_version, PROTOCOL_2026, "the protocol version the SDK chose after server/discover")
    info = client.server_info
    expect(info is not None, "serverInfo from server/discover", info)
    expect_eq(info.name, SERVER_NAME, "serverInfo.name")
    expect_eq(info.version, ctx.version, "serverInfo.version (Cargo.toml [package].version)")
    expect(client.server_capabilities.tools is not None, "a tools capability", client.server_capabilities)
    return f"{info.name} {info.version}, protocol {client.protocol_version} (no initialize), tools"


async def check_tools_list(session: ClientSession, ctx: Context) -> str:
    listing = await session.list_tools()
    expect_eq([tool.name for tool in listing.tools], ["read", "read_many"], "tool names")
    expect(listing.next_cursor is None, "no further page of tools", dump(listing))
    many = listing.tools[1]
    expect_eq(many.input_schema.get("required"), ["paths"], "read_many inputSchema.required")
    expect(many.annotations is not None and many.annotations.read_only_hint is True, "read_many readOnlyHint", dump(many))
    expect(isinstance(many.output_schema, dict), "a read_many outputSchema", dump(many))
    tool = listing.tools[0]
    expect(bool(tool.description), "a description", dump(tool))

    schema = tool.input_schema
    expect_eq(schema.get("type"), "object", "inputSchema.type")
    expect_eq(schema.get("required"), ["path"], "inputSchema.required")
    properties = schema.get("properties") or {}
    for name, wanted, nullable in (("path", "string", False), ("offset", "integer", True), ("limit", "integer", True)):
        expect(name in properties, f"inputSchema.properties.{name}", sorted(properties))
        declared = properties[name].get("type")
        declared = [declared] if isinstance(declared, str) else declared
        allowed = {wanted, "null"} if nullable else {wanted}
        expect(
            isinstance(declared, list) and wanted in declared and set(declared) <= allowed,
            f"inputSchema.properties.{name}.type to be {wanted!r}" + (" (or null)" if nullable else ""),
            properties[name],
        )

    annotations = tool.annotations
    expect(annotations is not None, "annotations", dump(tool))
    expect(annotations.read_only_hint is True, "annotations.readOnlyHint true", dump(annotations))
    expect(annotations.idempotent_hint is True, "annotations.idempotentHint true", dump(annotations))

    output = tool.output_schema
    expect(isinstance(output, dict) and output.get("type") == "object", "an object outputSchema", dump(tool))
    for name in ("ok", "kind", "output"):
        expect(name in (output.get("properties") or {}), f"outputSchema.properties.{name}", output)
    return "tools `read` and `read_many`; path/offset/limit typed, path required; readOnly+idempotent; outputSchema"


async def check_read_text(session: ClientSession, ctx: Context) -> str:
    result = await read(session, {"path": "hello.txt"})
    structured = expect_ok(result, "read hello.txt")
    lines, footer = split_window(text_of(result))
    expected = ctx.ws.hello.decode().splitlines()
    expect_eq(lines, list(enumerate(expected, start=1)), "the numbered lines of hello.txt")
    expect(
        footer.startswith("(lines 1-3 of 3 · ") and footer.endswith(" · end of file)"),
        "the footer `(lines 1-3 of 3 · … · end of file)`",
        footer,
    )
    expect_eq(structured.get("kind"), "text", "structuredContent.kind")
    meta = structured.get("meta") or {}
    wanted = {
        "path": "hello.txt",
        "size_bytes": len(ctx.ws.hello),
        "encoding": "UTF-8",
        "total_lines": 3,
        "start_line": 1,
        "end_line": 3,
        "returned_lines": 3,
        "more_before": False,
        "more_after": False,
        "line_ending": "lf",
        "trailing_newline": True,
    }
    expect_eq({key: meta.get(key) for key in wanted}, wanted, "structuredContent.meta")
    expect(meta.get("next_offset") is None, "no next_offset at the end of the file", meta)

    # A window in the middle, and one counted from the end.
    middle = await read(session, {"path": "hello.txt", "offset": 2, "limit": 1})
    middle_meta = expect_ok(middle, "read hello.txt offset=2 limit=1").get("meta") or {}
    lines, footer = split_window(text_of(middle))
    expect_eq(lines, [(2, expected[1])], "the window offset=2 limit=1")
    expect_eq(middle_meta.get("next_offset"), 3, "meta.next_offset of offset=2 limit=1")
    expect(NEXT_CALL.search(footer) is not None, "a footer naming the next call", footer)
    last = await read(session, {"path": "hello.txt", "offset": -1})
    expect_ok(last, "read hello.txt offset=-1")
    lines, _ = split_window(text_of(last))
    expect_eq(lines, [(3, expected[2])], "the window offset=-1")
    return "numbered lines, footer, structuredContent meta; offset/limit and offset=-1 windows"


async def check_paging(session: ClientSession, ctx: Context) -> str:
    expected_lines = ctx.ws.big.split("\n")[:-1]
    got: list[str] = []
    offset, pages = 1, 0
    max_pages = BIG_LINES // PAGE + 5
    while True:
        pages += 1
        if pages > max_pages:
            fail(f"paging did not terminate: {max_pages} pages of {PAGE} lines read, now at offset {offset}")
        result = await read(session, {"path": "big.txt", "offset": offset, "limit": PAGE})
        structured = expect_ok(result, f"read big.txt offset={offset}")
        meta = structured.get("meta") or {}
        lines, footer = split_window(text_of(result))
        numbers = [number for number, _ in lines]
        expect(bool(lines), f"lines at offset {offset}", text_of(result))
        expect_eq(numbers, list(range(offset, offset + len(lines))), f"line numbers of the page at offset {offset}")
        expect(len(lines) <= PAGE, f"at most {PAGE} lines a page", len(lines))
        expect_eq(
            (meta.get("start_line"), meta.get("end_line"), meta.get("returned_lines"), meta.get("total_lines")),
            (offset, offset + len(lines) - 1, len(lines), BIG_LINES),
            f"meta start_line/end_line/returned_lines/total_lines of the page at offset {offset}",
        )
        got.extend(content for _, content in lines)

        next_offset = meta.get("next_offset")
        footer_next = NEXT_CALL.search(footer)
        if next_offset is None:
            expect(footer_next is None and footer.endswith("end of file)"), "the last page's footer to end the file", footer)
            expect_eq(meta.get("more_after"), False, "meta.more_after on the last page")
            break
        expect(footer_next is not None, f"the footer to name the next call (meta.next_offset={next_offset})", footer)
        expect_eq(int(footer_next.group(1)), next_offset, "the footer's next offset vs meta.next_offset")
        expect_eq(footer_next.group(2), str(PAGE), "the footer's next limit")
        expect_eq(next_offset, offset + len(lines), "next_offset (no gap, no overlap)")
        offset = next_offset

    expect_eq(meta.get("byte_cap_hit"), False, "meta.byte_cap_hit (short lines: pages end at the limit)")
    expect_eq(pages, BIG_LINES // PAGE, "number of pages")
    if got != expected_lines:
        first = next((i for i, (a, b) in enumerate(zip(got, expected_lines)) if a != b), min(len(got), len(expected_lines)))
        fail(
            f"the paged lines differ from big.txt at line {first + 1}: "
            f"expected {clip(expected_lines[first:first + 2])}, got {clip(got[first:first + 2])} "
            f"({len(got)} lines read, {len(expected_lines)} in the file)"
        )
    expect_eq("".join(line + "\n" for line in got), ctx.ws.big, "the concatenated pages vs big.txt")
    return f"{BIG_LINES} lines in {pages} pages of {PAGE} by next_offset, equal to the file"


async def check_directory(session: ClientSession, ctx: Context) -> str:
    result = await read(session, {"path": "tree"})
    structured = expect_ok(result, "read tree")
    expect_eq(structured.get("kind"), "directory", "structuredContent.kind")
    entries = structured.get("entries")
    expect(isinstance(entries, list), "structuredContent.entries to be a list", structured)
    expect_eq([entry.get("name") for entry in entries], [name for name, _, _ in ctx.ws.tree], "entry names, sorted")
    expect_eq(
        [(entry.get("name"), entry.get("kind")) for entry in entries],
        [(name, kind) for name, kind, _ in ctx.ws.tree],
        "entry kinds",
    )
    for (name, kind, size), entry in zip(ctx.ws.tree, entries):
        if kind == "file":
            expect_eq(entry.get("size"), size, f"size of {name}")
    meta = structured.get("meta") or {}
    count = len(ctx.ws.tree)
    expect_eq((meta.get("path"), meta.get("total_entries"), meta.get("returned_entries")), ("tree", count, count), "meta")

    rows = text_of(result).split("\n")
    expect_eq(len(rows), count + 1, "rows of the listing (one per entry, then the footer)")
    expect_eq(rows[-1], f"(entries 1-{count} of {count} · end of directory)", "the listing's footer")
    for (name, kind, _), row in zip(ctx.ws.tree, rows):
        shown = {"dir": f"{name}/", "symlink": f"{name}  (symlink)"}.get(kind)
        if shown is not None:
            expect_eq(row, shown, f"the listing's row for {kind} {name}")
        else:
            expect(row.startswith(f"{name}  (") and row.endswith(")"), f"the row `{name}  (size)`", row)

    # Paged like a file.
    page = await read(session, {"path": "tree", "offset": 3, "limit": 2})
    page_entries = expect_ok(page, "read tree offset=3 limit=2").get("entries") or []
    expect_eq([entry.get("name") for entry in page_entries], [name for name, _, _ in ctx.ws.tree[2:4]], "page 3-4")
    expect(text_of(page).endswith("next: offset=5 limit=2)"), "the page's footer to name offset=5", text_of(page))
    return f"{count} entries sorted by name bytes, kinds and sizes right, paged"


async def check_missing_file(session: ClientSession, ctx: Context) -> str:
    result = await read(session, {"path": "helo.txt"})
    structured = expect_error(result, "NOT_FOUND", "read helo.txt")
    expect("hello.txt" in (structured.get("suggestions") or []), "hello.txt among the suggestions", structured)
    expect("Did you mean: hello.txt" in text_of(result), "the text to suggest hello.txt", text_of(result))

    nested = await read(session, {"path": "tree/a.tx"})
    structured = expect_error(nested, "NOT_FOUND", "read tree/a.tx")
    expect("tree/a.txt" in (structured.get("suggestions") or []), "tree/a.txt among the suggestions", structured)

    far = await read(session, {"path": "qqqqqqqq.zzz"})
    structured = expect_error(far, "NOT_FOUND", "read qqqqqqqq.zzz")
    expect(not structured.get("suggestions"), "no suggestion when nothing is close", structured)
    return "NOT_FOUND with near-miss suggestions (hello.txt, tree/a.txt), none when nothing is close"


async def check_outside_root(session: ClientSession, ctx: Context) -> str:
    for path in ("../elsewhere/secret.txt", str(ctx.ws.outside_file)):
        result = await read(session, {"path": path})
        structured = expect_error(result, "OUTSIDE_ROOT", f"read {path}")
        expect(ctx.ws.secret not in repr(dump(result)), "nothing of the outside file's content", structured)
    return "../ and an absolute path elsewhere: OUTSIDE_ROOT, nothing leaked"


async def check_invalid_params(session: ClientSession, ctx: Context) -> str:
    cases = [
        ({"path": "hello.txt", "offset": "abc"}, "offset"),
        ({"path": "hello.txt", "limit": 0}, "limit"),
        ({"path": "hello.txt", "lines": 5}, "lines"),
        ({}, "path"),
    ]
    for arguments, field_name in cases:
        result = await read(session, arguments)
        structured = expect_error(result, "INVALID_PARAM", f"read {arguments}")
        expect(f"`{field_name}`" in structured["error"], f"the error to name `{field_name}`", structured)
    return 'offset "abc", limit 0, an unknown field, no path: INVALID_PARAM naming the field'


async def check_read_many(session: ClientSession, ctx: Context) -> str:
    # The SDK validates structuredContent against read_many's outputSchema.
    result = await session.call_tool("read_many", {"paths": ["hello.txt", "tree/*.txt", "../elsewhere/*.txt"]})
    structured = expect_ok(result, "read_many")
    expect_eq(structured.get("kind"), "many", "structuredContent.kind")
    paths = [entry.get("path") for entry in structured.get("files") or []]
    expect_eq(paths, ["hello.txt", "tree/a.txt", "tree/b.txt", "tree/é.txt"], "the files, sorted, the link read once")
    text = text_of(result)
    expect(text.startswith("==> hello.txt <==\n1: Hello, agent-read!\n"), "the first section", text)
    skipped = structured.get("skipped") or []
    expect(
        len(skipped) == 1 and skipped[0].get("error_code") == "OUTSIDE_ROOT",
        "the glob outside the root skipped as OUTSIDE_ROOT",
        skipped,
    )
    expect(ctx.ws.secret not in repr(dump(result)), "nothing of the outside file's content", structured)
    expect(text.endswith(" cap)"), "the summary line last", text)
    return f"{len(paths)} files in one answer, a glob outside the root skipped, summary last"


async def check_unknown_tool(session: ClientSession, ctx: Context) -> str:
    try:
        result = await session.call_tool("write", {"path": "hello.txt"})
    except MCPError as error:
        # The MCP spec's example for an unknown tool is -32602 (invalid params).
        expect_eq(error.code, types.INVALID_PARAMS, "the JSON-RPC error code")
        expect("write" in error.message, "the error message to name the tool", error.message)
        code, message = error.code, error.message
    else:
        fail(f"expected a JSON-RPC error for tools/call `write`; got a tool result: {clip(dump(result))}")
    still = await read(session, {"path": "hello.txt", "limit": 1})
    expect_ok(still, "a read after the protocol error (the connection survives)")
    return f"JSON-RPC error {code} ({message!r}); the session goes on"


async def check_repeat_read(session: ClientSession, ctx: Context) -> str:
    window = {"path": "hello.txt", "offset": 2, "limit": 2}
    first = text_of(await read(session, window))
    repeat = await read(session, window)
    structured = expect_ok(repeat, "the same read again")
    if not ctx.target.keeps_session:  # stateless HTTP, or HTTP on 2026-07-28: every request stands alone
        expect_eq(text_of(repeat), first, "a repeat without a session: the content again")
        return "no session kept: a repeat gets the content again"
    expect_eq(structured.get("kind"), "unchanged", "structuredContent.kind of an exact repeat")
    stub = text_of(repeat)
    expect(stub.startswith("(unchanged since your read at ") and "\n" not in stub, "a one-line notice", stub)
    expect_eq(structured["meta"]["saved_bytes"], len(first.encode()), "meta.saved_bytes: the answer it stands for")
    again = await read(session, {**window, "reread": True})
    expect_eq(text_of(again), first, "reread=true: the content again")
    return "an exact repeat answers a one-line notice (kind unchanged); reread=true sends the content"


PLAIN_CHECKS: list[tuple[str, Callable[[ClientSession, Context], Awaitable[str]]]] = [
    ("initialize", check_initialize),
    ("tools/list", check_tools_list),
    ("read text", check_read_text),
    ("paging", check_paging),
    ("directory", check_directory),
    ("missing file", check_missing_file),
    ("outside root", check_outside_root),
    ("invalid params", check_invalid_params),
    ("read_many", check_read_many),
    ("unknown tool", check_unknown_tool),
    ("repeat read", check_repeat_read),
]


class OfferedRoots:
    """The roots the client offers: a list_roots_callback whose answer the test changes."""

    def __init__(self, *directories: Path) -> None:
        self.directories = list(directories)
        self.asked = 0

    async def __call__(self, context: Any) -> types.ListRootsResult:
        self.asked += 1
        return types.ListRootsResult(
            roots=[types.Root(uri=directory.as_uri(), name=directory.name) for directory in self.directories]
        )


async def eventually(session: ClientSession, path: str, ok: bool, why: str) -> dict[str, Any]:
    """Polls (bounded) until a read of `path` succeeds (ok) or fails (not ok); the last result otherwise fails."""
    deadline = time.monotonic() + ROOTS_POLL_S
    while True:
        result = await read(session, {"path": path})
        structured = structured_of(result)
        if structured.get("ok") is ok:
            return structured
        if time.monotonic() > deadline:
            fail(f"{why}: read {path} still answers {clip(structured)} after {ROOTS_POLL_S} s")
        await anyio.sleep(0.05)


async def change_roots(session: ClientSession | Client, offered: OfferedRoots, to: Path) -> None:
    """The client offers `to` instead and says so (roots/list_changed); the server must follow: reads move there."""
    offered.directories = [to]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)  # Roots: deprecated by 2026-07-28, still used
        await session.send_roots_list_changed()
    await eventually(session, "from_b.txt", True, "roots/list_changed was not followed")
    stale = await eventually(session, "from_a.txt", False, "the old root still answers")
    expect_eq(stale.get("error_code"), "NOT_FOUND", "from_a.txt after the roots changed")


async def check_roots(ctx: Context) -> str:
    ws = ctx.ws
    offered = OfferedRoots(ws.client_root_a)
    async with ctx.target.open(list_roots=offered) as session:
        init = await session.initialize()
        expect_eq(init.server_info.name, SERVER_NAME, "serverInfo.name")
        # The server asks for roots after initialization; its reads move from --root to the client's root.
        found = await eventually(session, "from_a.txt", True, "the client's root was not adopted")
        expect_eq(found["output"], "1: from client root a\n(lines 1-1 of 1 · 19 B · end of file)", "from_a.txt")
        gone = await read(session, {"path": "hello.txt"})
        expect_error(gone, "NOT_FOUND", "hello.txt (only under --root) once the client's root is adopted")
        asked_before = offered.asked
        expect(asked_before >= 1, "the server to have asked for roots", asked_before)

        # The client changes its roots and says so; the server asks again and follows.
        await change_roots(session, offered, ws.client_root_b)
        expect(offered.asked > asked_before, "roots/list asked again after list_changed", offered.asked)

        # Roots beyond --root are refused: the configured root serves, and nothing outside it is read.
        offered.directories = [ws.outside_file.parent, Path("/")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await session.send_roots_list_changed()
        back = await eventually(session, "hello.txt", True, "the configured root did not serve again")
        expect("client roots refused" in back["output"], "the model told the roots were refused", back["output"])
        outside = await read(session, {"path": str(ws.outside_file)})
        expect_error(outside, "OUTSIDE_ROOT", "the outside file, offered as a root")
        expect(ws.secret not in text_of(outside), "the outside file's content never shown", text_of(outside))
    return f"client root adopted, then followed on roots/list_changed (to {ws.client_root_b.name!r}, %20 in its URI)"


async def check_roots_per_session(ctx: Context) -> str:
    """One HTTP server, two sessions: one client's roots must not move another client's reads."""
    offered = OfferedRoots(ctx.ws.client_root_a)
    async with ctx.target.open(list_roots=offered) as with_roots:
        await with_roots.initialize()
        await eventually(with_roots, "from_a.txt", True, "the client's root was not adopted")
        async with ctx.target.open() as plain:
            await plain.initialize()
            expect_ok(await read(plain, {"path": "hello.txt", "limit": 1}), "hello.txt in a session without roots")
            other = await read(plain, {"path": "from_a.txt"})
            expect_error(other, "NOT_FOUND", "from_a.txt (another session's root) in a session without roots")
        expect_ok(await read(with_roots, {"path": "from_a.txt"}), "from_a.txt, still, in the session with roots")
    return "a session's roots stay in that session; another session reads beneath --root"


async def check_roots_2026(ctx: Context) -> str:
    """A 2026-07-28 client's roots come within its calls: the server answers input_required, asking roots/list, and
    the SDK calls again with them. Over stdio the server keeps them for the connection until roots/list_changed; over
    HTTP every call asks, and one client's roots never reach another's calls."""
    ws = ctx.ws
    offered = OfferedRoots(ws.client_root_a)
    per_call = ctx.target.many_sessions  # HTTP
    async with ctx.target.open(list_roots=offered) as client:
        found = expect_ok(await read(client, {"path": "from_a.txt"}), "from_a.txt beneath the client's root")
        expect_eq(found["output"], "1: from client root a\n(lines 1-1 of 1 · 19 B · end of file)", "from_a.txt")
        gone = await read(client, {"path": "hello.txt"})
        expect_error(gone, "NOT_FOUND", "hello.txt (only under --root) beneath the client's root")
        expect_eq(offered.asked, 2 if per_call else 1, "times the server asked for the roots over two calls")
        if per_call:
            offered.directories = [ws.client_root_b]
            expect_ok(await read(client, {"path": "from_b.txt"}), "from_b.txt: the next call brings the new roots")
            async with ctx.target.open() as plain:
                expect_ok(await read(plain, {"path": "hello.txt", "limit": 1}), "hello.txt from a client without roots")
                other = await read(plain, {"path": "from_b.txt"})
                expect_error(other, "NOT_FOUND", "from_b.txt (another client's root) from a client without roots")
            return "roots asked for in every call (input_required, then inputResponses), never shared between clients"
        await change_roots(client, offered, ws.client_root_b)
        expect_eq(offered.asked, 2, "times asked: once more after roots/list_changed")
    return "roots asked for within the first call, kept for the connection, asked again after roots/list_changed"


# --------------------------------------------------------------------------------------------------------------------
# Running and reporting


@dataclass
class Report:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)

    def ok(self, target: str, check: str, detail: str) -> None:
        self.passed += 1
        print(f"ok    {target:<20} {check}: {detail}", flush=True)

    def fail(self, target: str, check: str, detail: str) -> None:
        self.failed += 1
        self.failures.append(f"{target} {check}")
        print(f"FAIL  {target:<20} {check}: {detail}", flush=True)

    def skip(self, target: str, check: str, detail: str, count: int = 1) -> None:
        self.skipped += count
        print(f"skip  {target:<20} {check}: {detail}", flush=True)


def describe(error: BaseException) -> str:
    """The message of a failure, unwrapping the exception groups anyio's task groups add."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if isinstance(error, CheckFailed):
        return str(error)
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in error.exceptions)
    if isinstance(error, MCPError):
        return f"JSON-RPC error {error.code}: {error.message}" + (f" (data: {clip(error.data)})" if error.data else "")
    if isinstance(error, TimeoutError):
        return f"timed out after {CHECK_TIMEOUT_S} s"
    return f"{type(error).__name__}: {error}"


async def run_check(report: Report, target: Target, name: str, run: Callable[[], Awaitable[str]]) -> bool:
    try:
        with anyio.fail_after(CHECK_TIMEOUT_S):
            detail = await run()
    except Exception as error:  # any failure of the check, whatever raised it
        report.fail(target.name, name, describe(error))
        return False
    report.ok(target.name, name, detail)
    return True


async def run_target(report: Report, target: Target, ctx: Context) -> None:
    failed_before = report.failed
    # A 2026 client has no initialize: it discovered the server on entering.
    checks = PLAIN_CHECKS if target.protocol == "handshake" else [("discover", check_discover), *PLAIN_CHECKS[1:]]
    remaining = [name for name, _ in checks]
    try:
        async with target.open() as session:
            for name, check in checks:
                remaining.remove(name)
                passed = await run_check(report, target, name, lambda: check(session, ctx))
                if not passed and name == checks[0][0]:
                    report.skip(target.name, ", ".join(remaining), f"not run: {name} failed", len(remaining))
                    remaining = []
                    break
    except Exception as error:  # the connection itself failed
        report.fail(target.name, "session", describe(error))
        if remaining:
            report.skip(target.name, ", ".join(remaining), "not run: the session failed", len(remaining))

    if target.protocol == PROTOCOL_2026:
        await run_check(report, target, "roots", lambda: check_roots_2026(ctx))
    elif target.roots:
        await run_check(report, target, "roots", lambda: check_roots(ctx))
    else:
        report.skip(target.name, "roots", "not applicable: roots/list needs a session (stateless mode)")
    if target.many_sessions and target.protocol == "handshake":
        await run_check(report, target, "roots per session", lambda: check_roots_per_session(ctx))

    if report.failed > failed_before:
        print(f"      {target.name} server's standard error (last lines):\n{log_tail(target.log)}", flush=True)


async def main_async(transport: str) -> int:
    started = time.monotonic()
    binary = server_binary()
    version = crate_version()
    report = Report()
    help_text = mcp_help(binary)
    print(f"mcp_e2e: {binary} (crate {version}), SDK mcp {sdk_version()}, transport {transport}", flush=True)

    with tempfile.TemporaryDirectory(prefix="agent-read-e2e-") as base:
        ws = make_workspace(Path(base))

        if transport in ("stdio", "all"):
            for target in (stdio_target(binary, ws), stdio_target(binary, ws, PROTOCOL_2026)):
                await run_target(report, target, Context(ws, target, version))

        if transport in ("http", "all"):
            for mode, missing in http_modes(help_text):
                stateless = mode == "http-stateless"
                if missing is not None:
                    why = f"`{binary.name} mcp --help` does not mention {missing}"
                    if transport == "http":
                        report.fail(mode, "transport", f"{why}: this binary cannot serve {mode}")
                    else:
                        print(f"HTTP checks skipped ({mode}): {why} (not in this binary yet)", flush=True)
                        # Both protocols' checks: the handshake's, then 2026-07-28's (with its roots).
                        report.skipped += len(PLAIN_CHECKS) + (1 if stateless else 2) + len(PLAIN_CHECKS) + 1
                    continue
                log = ws.base / f"{mode}-server.log"
                try:
                    async with http_server(binary, ws, stateless=stateless, log=log) as url:
                        print(f"      {mode}: serving at {url}", flush=True)
                        for target in (http_target(mode, url, stateless=stateless, log=log), http_target_2026(mode, url, log)):
                            await run_target(report, target, Context(ws, target, version))
                except Exception as error:
                    report.fail(mode, "server", describe(error))

    print(f"mcp_e2e: {time.monotonic() - started:.1f} s", flush=True)
    if report.failed:
        print("mcp_e2e: failed: " + "; ".join(report.failures), flush=True)
    print(f"e2e: {report.passed} passed, {report.failed} failed, {report.skipped} skipped", flush=True)
    return 1 if report.failed else 0


def http_modes(help_text: str) -> list[tuple[str, str | None]]:
    """The HTTP modes to test, each with the option `agent-read mcp --help` lacks for it (None: supported)."""
    has = {flag: re.search(rf"{flag}\b", help_text) is not None for flag in ("--http", "--stateless")}
    session = None if has["--http"] else "--http"
    stateless = session or (None if has["--stateless"] else "--stateless")
    return [("http", session), ("http-stateless", stateless)]


def sdk_version() -> str:
    from importlib.metadata import version

    return version("mcp")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transport", choices=("stdio", "http", "all"), default="all")
    arguments = parser.parse_args()
    # The SDK's own warnings (e.g. about the HTTP session's DELETE), marked as the SDK's.
    logging.basicConfig(level=logging.WARNING, format="      sdk %(name)s %(levelname)s: %(message)s")
    return anyio.run(main_async, arguments.transport)


if __name__ == "__main__":
    sys.exit(main())
