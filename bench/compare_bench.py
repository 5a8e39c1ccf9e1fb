#!/usr/bin/env python3
"""Side-by-side comparison of read tools on the same files, in one run (run it through bench/compare.sh).

Cases (files under bench/data/, generated once, deterministic):
  small        a 10 KB source-like text file, default read (the whole file)
  5mb-80k      a 5 MiB log-like text file, window at line 80,000 (limit 100)
  1gib-deep    lines-1gib.txt (1 GiB of 55-byte lines from `seq -f '%054.0f'`), window at line 10,000,000 (limit 100)
  1gib-tail    the same file, last 100 lines
  64mib-line   single-line-64mib.txt (64 MiB, one line, no newline), first window (default read)
  dir-first    dir-100k/ (100,000 empty files), entries 1-1000
  dir-page40   the same directory, entries 39001-40000

Tools (one column each; "n/a" with a footnote where a tool cannot express a case):
  agent-read cold               target/release/agent-read --root DATA PATH --offset N --limit M (a process per run)
  agent-read + index cache      the same with --index-cache DATA/index-cache (emptied at start; the warm-up primes it)
  agent-read warm (in-process)  target/release/examples/warm_read: one Reader reads the window WARM_REPS times;
                                the table shows the median of those reads, the raw results also the first read
  unix                          the cheapest coreutils equivalent (sed -n 'A,Bp;Bq', tail -n, head -c, ls -f | sort);
                                `wc -l` (a full pass) is an extra baseline row for 1gib-deep
  harness-read 0.1.1            its CLI, one JSON request on stdin per process
  server-filesystem (Node)      @modelcontextprotocol/server-filesystem over stdio, one long-lived server, tool
                                read_text_file; each call timed from writing the request to the response's arrival

Method: page cache warm. Per case, every tool runs once to warm up, then RUNS times (env RUNS, default 7), the tools
interleaved run by run so machine noise hits all alike; a tool whose warm-up took over SLOW_S seconds runs SLOW_RUNS
times instead (said in a footnote). Wall time is the median over runs, measured around the whole process (process
tools) or per call (warm rows). Peak RSS of process tools is GNU `/usr/bin/time -v`'s "Maximum resident set size",
the largest over runs (for a `sh -c` pipeline: its largest process); for the Node server it is VmHWM from
/proc/PID/status, reset before each case. Every answer is checked cheaply (the window's first line or entry is the
expected one; harness-read's kind is not "error"; Node's result is not isError); failures are counted in the
`errors` column and marked in the cell, never hidden. Node calls time out after NODE_TIMEOUT seconds ("> 120 s"),
after which the server is restarted for the remaining cases.

Output: markdown tables on stdout (results, then the targets), raw results in bench/data/compare-results.json.
Environment: RUNS=7 SLOW_RUNS=3 SLOW_S=5 WARM_REPS=50 NODE_TIMEOUT=120. Standard library only.
"""
import json
import os
import platform
import queue
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA = os.path.join(HERE, "data")
RESULTS = os.path.join(DATA, "compare-results.json")
NODE_LOG = os.path.join(DATA, "compare-node-stderr.log")
INDEX_CACHE = os.path.join(DATA, "index-cache")
BIN = os.path.join(REPO, "target", "release", "agent-read")
WARM_BIN = os.path.join(REPO, "target", "release", "examples", "warm_read")
HR_BIN = os.path.join(HERE, "harness-read", "bin", "harness-read-cli")
NODE_PKG = os.path.join(HERE, "node", "node_modules", "@modelcontextprotocol", "server-filesystem")
NODE_SERVER = os.path.join(NODE_PKG, "dist", "index.js")


def env_int(name, default):
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


RUNS = env_int("RUNS", 7)
SLOW_RUNS = env_int("SLOW_RUNS", 3)
SLOW_S = env_int("SLOW_S", 5)
WARM_REPS = env_int("WARM_REPS", 50)
NODE_TIMEOUT = env_int("NODE_TIMEOUT", 120)
PROC_TIMEOUT = 600
GIB = 1 << 30
MIB = 1 << 20
DIR_ENTRIES = 100_000

COLD, CACHE, WARM, UNIX, HR, NODE, WC = (
    "agent-read cold", "agent-read + index cache", "agent-read warm (in-process)", "unix", "harness-read 0.1.1",
    "server-filesystem (Node)", "wc -l")
COLUMNS = [COLD, CACHE, WARM, UNIX, HR, NODE]


# ---------------------------------------------------------------------------------------------------------------
# Data

WORDS = ("span index window cache reader entry buffer cursor limit offset chunk record token state budget frame "
         "line page block store queue scan parse flush").split()


def source_lines(rng, max_bytes):
    """Rust-like functions until the next one would pass max_bytes."""
    lines, size = [], 0
    while True:
        a, b, c, d = (rng.choice(WORDS) for _ in range(4))
        n = rng.randint(1, 4096)
        block = [f"/// Returns the {a} of the {b}, if {c} is in range.",
                 f"pub fn {a}_{b}_{len(lines)}(&self, {c}: usize) -> Option<usize> {{",
                 f"    let {d} = self.{a}s.get({c})?.{b}_len();",
                 f"    if {d} > {n} {{",
                 f"        return None;",
                 f"    }}",
                 f"    Some({d} + {rng.randint(0, 64)})",
                 "}", ""]
        extra = sum(len(line) + 1 for line in block)
        if size + extra > max_bytes:
            return lines
        lines += block
        size += extra


def log_lines(rng, max_bytes):
    """Short log lines (about 47 bytes) until the next one would pass max_bytes."""
    lines, size, ms = [], 0, 7 * 3600 * 1000
    while True:
        ms += rng.randint(0, 40)
        word, n = rng.choice(WORDS), rng.randint(0, 99999)
        level = rng.choice(("INFO ", "INFO ", "INFO ", "DEBUG", "WARN "))
        message = rng.choice((f"GET /api/{word}/{n} 200 {n % 97}ms", f"{word} cache hit ratio 0.{n % 100:02d}",
                              f"retry {word} attempt {n % 5 + 1}", f"flushed {n} bytes to {word}.log"))
        stamp = f"{ms // 3600000 % 24:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"
        line = f"{stamp} {level} w{n % 8} {message}"
        if size + len(line) + 1 > max_bytes:
            return lines
        lines.append(line)
        size += len(line) + 1


def write_if_changed(path, lines):
    content = ("\n".join(lines) + "\n").encode()
    try:
        with open(path, "rb") as f:
            if f.read() == content:
                return lines
    except OSError:
        pass
    print("generating", path, file=sys.stderr)
    with open(path, "wb") as f:
        f.write(content)
    return lines


def ensure_generated(path, size, shell):
    if not os.path.exists(path) or os.path.getsize(path) != size:
        print("generating", path, file=sys.stderr)
        subprocess.run(shell.format(path=path), shell=True, check=True)


def ensure_dir(path):
    names = [f"entry-{i:06d}.txt" for i in range(DIR_ENTRIES)]
    os.makedirs(path, exist_ok=True)
    present = set(os.listdir(path))
    if present != set(names):
        print(f"generating {path} ({DIR_ENTRIES} empty files)", file=sys.stderr)
        for name in present - set(names):
            os.remove(os.path.join(path, name))
        for name in set(names) - present:
            open(os.path.join(path, name), "wb").close()
    return sorted(names)


def count_lines(path):
    """Lines as a reader counts them: newlines, plus one for a last line without a newline."""
    newlines = int(subprocess.run(["wc", "-l", path], capture_output=True, text=True, check=True).stdout.split()[0])
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return newlines + (f.read(1) != b"\n")


def generate():
    """Writes what is missing; returns what the cases need to know about the data."""
    os.makedirs(DATA, exist_ok=True)
    big, single = os.path.join(DATA, "lines-1gib.txt"), os.path.join(DATA, "single-line-64mib.txt")
    ensure_generated(big, GIB, "seq -f '%054.0f' 1 19522579 | head -c " + str(GIB) + " > '{path}'")
    ensure_generated(single, 64 * MIB, "head -c " + str(64 * MIB) + " /dev/zero | tr '\\0' 'a' > '{path}'")
    small = write_if_changed(os.path.join(DATA, "small-10kb.rs"), source_lines(random.Random(10), 10 * 1024))
    log = write_if_changed(os.path.join(DATA, "log-5mib.txt"), log_lines(random.Random(5), 5 * MIB))
    if len(log) < 80_100:
        raise SystemExit(f"log-5mib.txt has only {len(log)} lines; the 5mb-80k case needs 80,100")
    names = ensure_dir(os.path.join(DATA, "dir-100k"))
    return {"small": small, "log": log, "names": names, "big_lines": count_lines(big)}


# ---------------------------------------------------------------------------------------------------------------
# Cases: what each tool runs, and what its answer must contain

@dataclass
class Case:
    name: str
    rel: str                  # path under DATA
    offset: int | None        # agent-read's --offset (negative: from the end); None: default read
    limit: int | None
    first_no: int             # number of the window's first line (or entry)
    first_text: str           # its text (or entry name); checks compare at most its first 40 characters
    unix: list                # argv of the coreutils equivalent
    unix_check: object        # stdout bytes -> error text or None
    hr_offset: int | None = None   # harness-read's offset (1-based, no negatives)
    node_args: dict | None = None  # read_text_file arguments besides path; None: n/a
    node_na: str = ""
    node_note: str = ""
    unix_note: str = ""
    is_dir: bool = False
    wc: int | None = None     # newline count `wc -l` must print; set: also time it (full-pass baseline row)

    @property
    def path(self):
        return os.path.join(DATA, self.rel)


def expect_first_line(expected, lines=None, nbytes=None):
    def check(out):
        text = out.decode(errors="replace")
        got = text.split("\n")
        if text.endswith("\n"):
            got.pop()
        if nbytes is not None and len(out) != nbytes:
            return f"{len(out)} bytes, expected {nbytes}"
        if lines is not None and len(got) != lines:
            return f"{len(got)} lines, expected {lines}"
        if expected is not None and (not got or got[0] != expected):
            return f"first line {got[0][:60] if got else ''!r}, expected {expected[:60]!r}"
        return None
    return check


LS_NOTE = ("unix dir-*: `ls -f DIR | sort | head -n 1000` and `... | sed -n '39001,40000p'` (sh -c); `ls -f` also "
           "lists . and .., so its pages start two entries earlier (same cost).")


def sed_window(a, b, path):
    return ["sed", "-n", f"{a},{b}p;{b}q", path]


def make_cases(d):
    big_line = lambda n: f"{n:054d}"
    total = d["big_lines"]
    tail_first = total - 99
    ls_sorted = [".", ".."] + d["names"]  # what `ls -f | sort` prints (ls -f lists . and .. too)
    dir_path = os.path.join(DATA, "dir-100k")
    ls_cmd = lambda tail: ["sh", "-c", f"ls -f '{dir_path}' | sort | {tail}"]
    n_small = len(d["small"])
    return [
        Case("small", "small-10kb.rs", None, None, 1, d["small"][0],
             ["cat", os.path.join(DATA, "small-10kb.rs")], expect_first_line(d["small"][0], lines=n_small),
             node_args={}, unix_note="unix small: `cat FILE` (the whole file)."),
        Case("5mb-80k", "log-5mib.txt", 80_000, 100, 80_000, d["log"][79_999],
             sed_window(80_000, 80_099, os.path.join(DATA, "log-5mib.txt")),
             expect_first_line(d["log"][79_999], lines=100), hr_offset=80_000, node_args={"head": 80_100},
             node_note="Node 5mb-80k: head=80100 (read_text_file can only return lines from the top or the end), "
                       "so it returns lines 1-80,100, not the 100-line window."),
        Case("1gib-deep", "lines-1gib.txt", 10_000_000, 100, 10_000_000, big_line(10_000_000),
             sed_window(10_000_000, 10_000_099, os.path.join(DATA, "lines-1gib.txt")),
             expect_first_line(big_line(10_000_000), lines=100), hr_offset=10_000_000, wc=total - 1,
             node_na="Node 1gib-deep: not expressible; read_text_file has head/tail only, and head=10000100 would "
                     "return 10 million lines."),
        Case("1gib-tail", "lines-1gib.txt", -100, None, tail_first, big_line(tail_first),
             ["tail", "-n", "100", os.path.join(DATA, "lines-1gib.txt")],
             expect_first_line(big_line(tail_first), lines=100), hr_offset=tail_first, node_args={"tail": 100}),
        Case("64mib-line", "single-line-64mib.txt", None, None, 1, "a" * 40,
             ["head", "-c", "51200", os.path.join(DATA, "single-line-64mib.txt")],
             expect_first_line("a" * 51200, nbytes=51200), node_args={"head": 1},
             unix_note="unix 64mib-line: `head -c 51200 FILE` (the first 50 KiB of the line).",
             node_note="Node 64mib-line: head=1 returns the whole 64 MiB line (no cut)."),
        Case("dir-first", "dir-100k", 1, 1000, 1, d["names"][0], ls_cmd("head -n 1000"),
             expect_first_line(ls_sorted[0], lines=1000), hr_offset=1, is_dir=True, unix_note=LS_NOTE,
             node_na="Node dir-*: list_directory has no paging (it returns all 100,000 entries)."),
        Case("dir-page40", "dir-100k", 39_001, 1000, 39_001, d["names"][39_000], ls_cmd("sed -n '39001,40000p'"),
             expect_first_line(ls_sorted[39_000], lines=1000), hr_offset=39_001, is_dir=True, unix_note=LS_NOTE,
             node_na="Node dir-*: list_directory has no paging (it returns all 100,000 entries)."),
    ]


def marker(case):
    return case.first_text[:40] if case.is_dir else f"{case.first_no}: {case.first_text[:40]}"


def check_marker(case, text):
    want = marker(case)
    if any(line.startswith(want) for line in text.split("\n")):
        return None
    return f"no line starting with {want[:50]!r} in the answer ({text[:80]!r}...)"


# ---------------------------------------------------------------------------------------------------------------
# Process tools: argv (and stdin) per case, and the check of their output

def agent_read_argv(case, cache=False):
    argv = [BIN, "--root", DATA, case.rel]
    if case.offset is not None:
        argv += ["--offset", str(case.offset)]
    if case.limit is not None:
        argv += ["--limit", str(case.limit)]
    return argv + (["--index-cache", INDEX_CACHE] if cache else [])


def harness_request(case):
    params = {"path": case.path}
    if case.hr_offset is not None:
        params.update(offset=case.hr_offset, limit=case.limit or 100)
    session = {"cwd": DATA, "roots": [DATA], "max_file_size": 2 ** 64 - 1}
    return (json.dumps({"id": 1, "method": "read", "params": {"params": params, "session": session}}) + "\n").encode()


def check_harness(case, out):
    try:
        result = json.loads(out)["result"]
    except (ValueError, KeyError, TypeError):
        return f"not a JSON result: {out[:120]!r}"
    want = "directory" if case.is_dir else "text"
    if result.get("kind") != want:
        return f"kind {result.get('kind')!r} (expected {want}): {json.dumps(result)[:200]}"
    return check_marker(case, result.get("output", ""))


def process_spec(tool, case):
    """(argv, stdin bytes or None, check(stdout) -> error or None) of a process tool."""
    if tool in (COLD, CACHE):
        return agent_read_argv(case, tool == CACHE), None, lambda out: check_marker(case, out.decode(errors="replace"))
    if tool == UNIX:
        return case.unix, None, case.unix_check
    if tool == WC:
        check = lambda out: None if out.split()[:1] == [str(case.wc).encode()] else f"wc -l printed {out[:40]!r}"
        return ["wc", "-l", case.path], None, check
    if tool == HR:
        return [HR_BIN], harness_request(case), lambda out: check_harness(case, out)
    raise ValueError(tool)


def run_process(argv, stdin=None, timeout=PROC_TIMEOUT):
    """One run under /usr/bin/time -v: (wall ms, peak RSS KiB, stdout bytes, error or None)."""
    start = time.perf_counter()
    proc = subprocess.Popen(["/usr/bin/time", "-v", *argv], stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return timeout * 1000.0, None, b"", f"timed out after {timeout} s"
    wall = (time.perf_counter() - start) * 1000
    found = re.search(rb"Maximum resident set size \(kbytes\): (\d+)", err)
    rss = int(found.group(1)) if found else None
    if proc.returncode != 0:
        own = err.split(b"\tCommand being timed:")[0].decode(errors="replace")  # the tool's stderr, not time's
        return wall, rss, out, f"exit {proc.returncode}: {own[-300:]}"
    return wall, rss, out, None


# ---------------------------------------------------------------------------------------------------------------
# The Node server: one long-lived MCP server over stdio

class NodeServer:
    def __init__(self):
        self.log = open(NODE_LOG, "ab")
        self.proc = subprocess.Popen(["node", NODE_SERVER, DATA], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, cwd=DATA)
        self.lines = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "agent-read-compare", "version": "1"}}, 30)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self):
        for line in self.proc.stdout:  # each line stamped on arrival; parsed later, outside the timed span
            self.lines.put((time.perf_counter(), line))

    def _send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params, timeout):
        """(response message, ms from write to arrival); raises TimeoutError."""
        self.next_id += 1
        start = time.perf_counter()
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            left = start + timeout - time.perf_counter()
            try:
                arrived, line = self.lines.get(timeout=max(left, 0.001))
            except queue.Empty:
                raise TimeoutError(f"no answer in {timeout} s") from None
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message, (arrived - start) * 1000

    def read_text(self, path, args, timeout):
        """(text or None, ms, error or None)."""
        message, ms = self.request("tools/call", {"name": "read_text_file", "arguments": {"path": path, **args}},
                                   timeout)
        result = message.get("result")
        if not result or result.get("isError"):
            return None, ms, f"error answer: {json.dumps(message)[:200]}"
        return "".join(c.get("text", "") for c in result.get("content", [])), ms, None

    def status(self, key):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                return next(int(l.split()[1]) for l in f if l.startswith(key + ":"))
        except (OSError, StopIteration):
            return None

    def reset_peak(self):
        with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:
            f.write("5")

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()


def check_node(case, text):
    lines = text.split("\n")
    if "head" in case.node_args and len(lines) != case.node_args["head"]:
        return f"{len(lines)} lines, expected {case.node_args['head']}"
    if "tail" in case.node_args and len(lines) != case.node_args["tail"]:
        return f"{len(lines)} lines, expected {case.node_args['tail']}"
    first = lines[0] if "tail" in case.node_args else lines[case.first_no - 1]
    if not first.startswith(case.first_text[:40]):
        return f"line {case.first_no} is {first[:60]!r}, expected {case.first_text[:60]!r}"
    if case.name == "64mib-line" and len(text) != 64 * MIB:
        return f"{len(text)} characters, expected {64 * MIB}"
    return None


# ---------------------------------------------------------------------------------------------------------------
# Measurement

@dataclass
class Result:
    status: str = "ok"        # ok | n/a | timeout
    reason: str = ""
    runs: int = 0
    wall_ms: list = field(default_factory=list)
    rss_kib: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    warmup_ms: float | None = None
    extra: dict = field(default_factory=dict)

    def median(self):
        return statistics.median(self.wall_ms) if self.wall_ms else None

    def peak(self):
        return max(self.rss_kib) if self.rss_kib else None


class Runner:
    """Runs one case on every tool: warm-ups, the warm in-process reads, then interleaved timed runs."""

    def __init__(self, node_holder):
        self.node = node_holder  # [NodeServer or None], restarted after a timeout

    def tools(self, case):
        tools = [COLD, CACHE, UNIX, HR] + ([WC] if case.wc else [])
        return tools + ([NODE] if case.node_args is not None else [])

    def measure(self, tool, case, result):
        if tool == NODE:
            return self.measure_node(case, result)
        argv, stdin, check = process_spec(tool, case)
        wall, rss, out, error = run_process(argv, stdin)
        error = error or check(out)
        if tool == COLD and not error:
            result.extra["output_bytes"] = len(out)
        return wall, rss, error

    def measure_node(self, case, result):
        if self.node[0] is None:
            self.node[0] = NodeServer()
        try:
            text, ms, error = self.node[0].read_text(case.path, case.node_args, NODE_TIMEOUT)
        except TimeoutError:
            result.extra["peak_rss_kib_at_timeout"] = self.node[0].status("VmHWM")
            self.node[0].close()
            self.node[0] = None
            return None, None, "timeout"
        return ms, None, error or check_node(case, text)

    def run_case(self, case):
        results = {tool: Result() for tool in COLUMNS + ([WC] if case.wc else [])}
        if case.node_args is None:
            results[NODE] = Result(status="n/a", reason=case.node_na)
        if self.node[0] is not None and case.node_args is not None:
            self.node[0].reset_peak()
        runs = {}
        for tool in self.tools(case):
            runs[tool] = self.warm_up(tool, case, results[tool])
        results[WARM] = self.warm_in_process(case, results[COLD].extra.get("output_bytes"))
        for i in range(RUNS):
            for tool in self.tools(case):
                if i < runs[tool] and results[tool].status == "ok":
                    self.record(tool, case, results[tool])
        if case.node_args is not None and self.node[0] is not None and results[NODE].status == "ok":
            results[NODE].rss_kib = [self.node[0].status("VmHWM")]
        return results

    def warm_up(self, tool, case, result):
        """Runs the tool once untimed; returns how many timed runs it gets."""
        start = time.perf_counter()
        wall, rss, error = self.measure(tool, case, result)
        result.warmup_ms = (time.perf_counter() - start) * 1000
        if error == "timeout":
            result.status, result.reason = "timeout", f"warm-up call exceeded {NODE_TIMEOUT} s"
            return 0
        if error:
            result.errors.append(f"warm-up: {error}")
        if result.warmup_ms > SLOW_S * 1000 and SLOW_RUNS < RUNS:
            result.extra["slow_runs_note"] = True
            return SLOW_RUNS
        return RUNS

    def record(self, tool, case, result):
        wall, rss, error = self.measure(tool, case, result)
        if error == "timeout":
            result.status, result.reason = "timeout", f"a timed call exceeded {NODE_TIMEOUT} s"
            return
        result.runs += 1
        if error:
            result.errors.append(error)
            return
        result.wall_ms.append(wall)
        if rss is not None:
            result.rss_kib.append(rss)

    def warm_in_process(self, case, cold_bytes):
        offset = case.offset if case.offset is not None else 1
        limit = case.limit if case.limit is not None else 2000
        argv = [WARM_BIN, DATA, case.rel, str(offset), str(limit), str(WARM_REPS)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=PROC_TIMEOUT)
        result = Result(runs=WARM_REPS)
        if proc.returncode != 0:
            result.errors.append(f"exit {proc.returncode}: {proc.stderr[-300:]}")
            return result
        data = json.loads(proc.stdout)
        result.extra = data
        result.wall_ms = [data["median_us"] / 1000]
        if cold_bytes is not None and data["output_bytes"] != cold_bytes - 1:  # the CLI adds a final newline
            result.errors.append(f"output {data['output_bytes']} bytes, the CLI's {cold_bytes - 1}")
            result.wall_ms = []
        return result


# ---------------------------------------------------------------------------------------------------------------
# Report

class Footnotes:
    def __init__(self):
        self.notes = []

    def mark(self, text):
        if text not in self.notes:
            self.notes.append(text)
        return f"[{self.notes.index(text) + 1}]"


def fmt_ms(ms):
    if ms is None:
        return "—"
    if ms < 1:
        return f"{ms:.3f}"
    if ms < 10:
        return f"{ms:.2f}"
    if ms < 100:
        return f"{ms:.1f}"
    return f"{ms:,.0f}"


def fmt_mib(kib):
    return "—" if kib is None else f"{kib / 1024:.1f}" if kib < 100 * 1024 else f"{kib / 1024:,.0f}"


def cell(tool, case, r, notes):
    if r.status == "n/a":
        return "n/a" + notes.mark(r.reason)
    if r.status == "timeout":
        return f"> {NODE_TIMEOUT} s" + notes.mark(f"{tool} {case.name}: {r.reason}; the server was killed (a later "
                                                    f"case would start a fresh one).")
    text = f"{fmt_ms(r.median())} ms"
    if tool != WARM:
        text += f" ({fmt_mib(r.peak())} MiB)"
    if r.extra.get("slow_runs_note"):
        text += notes.mark(f"{tool}: {SLOW_RUNS} runs where its warm-up took over {SLOW_S} s (instead of {RUNS}).")
    if tool == NODE and case.node_note:
        text += notes.mark(case.node_note)
    if tool == UNIX and case.unix_note:
        text += notes.mark(case.unix_note)
    if r.errors:
        text += f" ✗{len(r.errors)}" + notes.mark(f"{tool} {case.name}: {r.errors[0][:300]}")
    return text


def results_table(cases, all_results, notes):
    rows = ["| case | " + " | ".join(COLUMNS) + " | errors |", "|---|" + "---:|" * len(COLUMNS) + "---:|"]
    for case in cases:
        res = all_results[case.name]
        errors = sum(len(r.errors) for r in res.values())
        rows.append(f"| {case.name} | " + " | ".join(cell(t, case, res[t], notes) for t in COLUMNS) + f" | {errors} |")
        if case.wc:
            wc = cell(WC, case, res[WC], notes)
            blanks = ["" for _ in COLUMNS]
            blanks[COLUMNS.index(UNIX)] = "`wc -l`: " + wc
            rows.append(f"| ↳ {case.name}, full pass | " + " | ".join(blanks) + " | |")
    return "\n".join(rows)


def ratio(a, b):
    return a / b if a is not None and b else None


def targets(all_results):
    """(name, measured text, target text, met) computed from this run."""
    get = lambda case, tool: all_results[case][tool]
    deep_cold, deep_hr = get("1gib-deep", COLD), get("1gib-deep", HR)
    speed = ratio(deep_hr.median(), deep_cold.median())
    memory = ratio(deep_hr.peak(), deep_cold.peak())
    warm = get("1gib-deep", WARM).median()
    line = get("64mib-line", COLD).median()
    rows = [("cold 1 GiB deep window: harness-read / agent-read time", speed, "≥ 30×", speed is not None and speed >= 30),
            ("cold 1 GiB deep window: harness-read / agent-read peak RSS", memory, "≥ 50× (≤ 1/50 of its memory)",
             memory is not None and memory >= 50),
            ("warm deep window (1gib-deep, in-process)", warm, "< 2 ms", warm is not None and warm < 2),
            ("64 MiB single-line first window (cold)", line, "< 20 ms", line is not None and line < 20)]
    for case, baseline in (("dir-first", r"ls -f \| sort \| head"), ("dir-page40", r"ls -f \| sort \| sed")):
        r = ratio(get(case, COLD).median(), get(case, UNIX).median())
        rows.append((f"directory page {case} (cold) / `{baseline}`", r, "≤ 2×", r is not None and r <= 2))
    return rows


def targets_table(rows):
    out = ["| target | measured | target | met |", "|---|---:|---|---|"]
    for name, value, goal, met in rows:
        shown = "—" if value is None else f"{fmt_ms(value)} ms" if "ms" in goal else f"{value:.1f}×"
        out.append(f"| {name} | {shown} | {goal} | {'yes' if met else 'NO'} |")
    return "\n".join(out)


def hr_version():
    """The version cargo install recorded under bench/harness-read/."""
    try:
        with open(os.path.join(HERE, "harness-read", ".crates.toml")) as f:
            found = re.search(r'"harness-read (\S+) ', f.read())
        return found.group(1) if found else "?"
    except OSError:
        return "?"


def machine():
    def first(path, key):
        with open(path) as f:
            return next((l.split(":", 1)[1].strip() for l in f if l.startswith(key)), "?")

    def version(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()
        except OSError:
            return "?"

    with open(os.path.join(NODE_PKG, "package.json")) as f:
        node_pkg = json.load(f).get("version", "?")
    return {"cpu": first("/proc/cpuinfo", "model name"), "cores": os.cpu_count(),
            "ram_gib": round(int(first("/proc/meminfo", "MemTotal").split()[0]) / MIB, 1),
            "kernel": platform.release(), "agent_read": version([BIN, "--version"]), "harness_read": hr_version(),
            "node": version(["node", "--version"]), "server_filesystem": node_pkg}


def machine_line(m):
    return (f"machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM, Linux {m['kernel']}; "
            f"{m['agent_read']}, harness-read {m['harness_read']}, node {m['node']}, "
            f"@modelcontextprotocol/server-filesystem {m['server_filesystem']}")


def write_raw(m, cases, all_results, target_rows, seconds):
    raw = {"machine": m, "params": {"RUNS": RUNS, "SLOW_RUNS": SLOW_RUNS, "SLOW_S": SLOW_S, "WARM_REPS": WARM_REPS,
                                    "NODE_TIMEOUT": NODE_TIMEOUT},
           "total_seconds": round(seconds, 1), "cases": {}, "targets": []}
    for case in cases:
        raw["cases"][case.name] = {"path": case.rel, "offset": case.offset, "limit": case.limit, "tools": {
            tool: {**r.__dict__, "median_ms": r.median(), "peak_rss_kib": r.peak()}
            for tool, r in all_results[case.name].items()}}
    raw["targets"] = [{"name": n, "measured": v, "target": g, "met": met} for n, v, g, met in target_rows]
    with open(RESULTS, "w") as f:
        json.dump(raw, f, indent=1)


# ---------------------------------------------------------------------------------------------------------------

def main():
    for path, hint in ((BIN, "cargo build --release"), (WARM_BIN, "cargo build --release --example warm_read"),
                       (HR_BIN, "bench/compare.sh installs it"), (NODE_SERVER, "bench/compare.sh installs it")):
        if not os.path.exists(path):
            raise SystemExit(f"missing {path}: {hint}")
    started = time.perf_counter()
    data = generate()
    subprocess.run(["rm", "-rf", INDEX_CACHE], check=True)
    os.makedirs(INDEX_CACHE)
    cases = make_cases(data)
    m = machine()
    node, all_results = [NodeServer()], {}
    try:
        runner = Runner(node)
        for case in cases:
            print(f"case {case.name} ...", file=sys.stderr, flush=True)
            all_results[case.name] = runner.run_case(case)
    finally:
        if node[0] is not None:
            node[0].close()
    seconds = time.perf_counter() - started
    notes, rows = Footnotes(), targets(all_results)
    print(machine_line(m))
    print(f"\nruns: {RUNS} per tool and case after one warm-up (median wall ms; peak RSS MiB, max over runs); "
          f"warm row: median of {WARM_REPS} reads in one process\n")
    print(results_table(cases, all_results, notes))
    print()
    for i, note in enumerate(notes.notes, 1):
        print(f"[{i}] {note}")
    print()
    print(targets_table(rows))
    print(f"\nrun time (data, measurements; not the build): {seconds:.0f} s; "
          f"raw results: {os.path.relpath(RESULTS, REPO)}")
    write_raw(m, cases, all_results, rows, seconds)


if __name__ == "__main__":
    main()
