#!/usr/bin/env python3
"""agent-read beside markitdown on the same documents: the fixtures of crates/agent-read-cli/tests/fixtures/documents
(made by python-docx, openpyxl, python-pptx, LibreOffice, odfpy, EbookLib), a hand-written HTML page, and a workbook of
ROWS rows (20,000) made here with openpyxl. Each tool runs as its own process, as an agent harness runs it (RUNS times
after a warm-up; medians): agent-read reads the whole converted text (limits raised so every line comes back in one
answer), markitdown converts the file. ODT and ODS, which markitdown does not read, are timed for agent-read alone.

Deep windows: a workbook of DEEP_ROWS rows × 6 columns (1,000,000; made here with openpyxl), the same saved as ODS by
LibreOffice (when `soffice` is installed), and an Excel 97-2003 sheet of 65,536 rows × 10 made by xlwt, all kept under
target/ for the next run. agent-read reads 100 lines at 90% of the sheet, and the last 100 lines, each a fresh process
(no total known beforehand: the whole sheet is converted to count its lines); markitdown converts the workbook. Wall
time, peak RSS (GNU time's "Maximum resident set size") and CPU time (user and system, which a loaded machine moves
less), medians of DEEP_RUNS (3); DEEP_TIMEOUT_S (30) is agent-read's time budget. markitdown runs once, killed after
DEEP_REFERENCE_S (180): it holds the whole workbook and its Markdown in memory. DEEP_ROWS=0 skips it.

Fidelity: every run of text markitdown shows (a line's text, or a table cell's, with Markdown's marks and its own
`<!-- Slide number -->` comments removed) is looked for in agent-read's text (line numbers and gutters removed,
whitespace collapsed); the runs missing are listed.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
ROWS = int(os.environ.get("ROWS", "20000"))
DEEP_ROWS = int(os.environ.get("DEEP_ROWS", "1000000"))
DEEP_RUNS = int(os.environ.get("DEEP_RUNS", "3"))
DEEP_TIMEOUT_S = int(os.environ.get("DEEP_TIMEOUT_S", "30"))
DEEP_REFERENCE_S = int(os.environ.get("DEEP_REFERENCE_S", "180"))
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
FIXTURES = os.path.join(ROOT, "crates", "agent-read-cli", "tests", "fixtures", "documents")
BIN = os.environ.get("AGENT_READ_BIN", os.path.join(ROOT, "target", "release", "agent-read"))
MARKITDOWN = os.path.join(os.path.dirname(sys.executable), "markitdown")

PAGE = """<!doctype html><html><head><title>Shop</title><style>p { color: red }</style><script>var t = 1;</script>
</head><body><h1>Welcome</h1><p>Read the <a href="/docs/start">getting started guide</a> first.</p>
<ul><li>Fast</li><li>Small</li></ul><table><tr><th>Plan</th><th>Price</th></tr><tr><td>Free</td><td>0</td></tr>
<tr><td>Team</td><td>12</td></tr></table><p>Questions? <a href="mailto:help@example.com">Write to us</a>.</p>
</body></html>"""


def deep_workbook(path, rows):
    """The deep window's workbook: an order log as openpyxl streams one out (dates, numbers, text)."""
    import datetime
    from openpyxl import Workbook

    wb = Workbook(write_only=True)
    sheet = wb.create_sheet("Orders")
    sheet.append(["Order", "Customer", "Units", "Price", "Date", "Note"])
    base = datetime.date(2024, 1, 1)
    for n in range(rows):
        sheet.append([n, f"customer {n % 97}", n % 13, (n % 100) / 4, base + datetime.timedelta(days=n % 365),
                      f"note {n}"])
    wb.save(path)


def capped(argv, cap_s):
    """One run killed after `cap_s` seconds, watched from /proc: (wall seconds, peak RSS MiB, whether it finished,
    CPU seconds: user and system, as of its last second)."""
    tick = os.sysconf("SC_CLK_TCK")
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak, cpu = 0, 0.0
    while child.poll() is None and time.perf_counter() - start < cap_s:
        try:
            with open(f"/proc/{child.pid}/status") as status:
                hwm = [line for line in status if line.startswith("VmHWM:")]
            with open(f"/proc/{child.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            peak = max(peak, int(hwm[0].split()[1]) if hwm else 0)
            cpu = (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.5)
    finished = child.poll() is not None
    if not finished:
        child.kill()
    child.wait()
    return time.perf_counter() - start, peak / 1024, finished, cpu


def timed(argv, stdin=None):
    """One run under GNU time: (wall seconds, peak RSS MiB, stdout, CPU seconds: user and system)."""
    with tempfile.NamedTemporaryFile() as report:
        start = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-v", "-o", report.name] + argv, input=stdin, capture_output=True,
                             check=True).stdout
        elapsed = time.perf_counter() - start
        text = report.read()
    rss = re.search(rb"Maximum resident set size \(kbytes\): (\d+)", text).group(1)
    cpu = sum(float(m) for m in re.findall(rb"(?:User|System) time \(seconds\): ([\d.]+)", text))
    return elapsed, int(rss) / 1024, out, cpu


def xls_workbook(path, rows=65536, columns=10):
    """An Excel 97-2003 sheet as full as the format allows in rows, written by xlwt."""
    import datetime
    import xlwt

    wb = xlwt.Workbook()
    sheet = wb.add_sheet("Orders")
    day = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    for column, title in enumerate(["Order", "Customer", "Date"] + [f"Col{c}" for c in range(3, columns)]):
        sheet.write(0, column, title)
    for n in range(1, rows):
        sheet.write(n, 0, n)
        sheet.write(n, 1, f"customer {n % 97}")
        sheet.write(n, 2, datetime.date(2024, 1, 1) + datetime.timedelta(days=n % 365), day)
        for column in range(3, columns):
            sheet.write(n, column, (n * column) % 1000 / 4)
    wb.save(path)


def deep_files():
    """The deep window's workbooks, made once under target/: (path, rows in its sheet, whether markitdown reads it)."""
    target = os.path.join(ROOT, "target")
    xlsx = os.path.join(target, f"bench-deep-{DEEP_ROWS}.xlsx")
    if not os.path.exists(xlsx):
        deep_workbook(xlsx, DEEP_ROWS)
    files = [(xlsx, DEEP_ROWS + 1, True)]
    ods = xlsx[:-len("xlsx")] + "ods"
    if not os.path.exists(ods) and shutil.which("soffice"):
        subprocess.run(["soffice", "--headless", "--norestore", "--convert-to", "ods", "--outdir", target, xlsx],
                       check=True, capture_output=True)
    if os.path.exists(ods):
        files.append((ods, DEEP_ROWS + 1, False))
    xls = os.path.join(target, "bench-deep-65536.xls")
    if not os.path.exists(xls):
        xls_workbook(xls)
    files.append((xls, 65536, True))
    return files


def deep_window():
    if DEEP_ROWS <= 0:
        return
    print(f"\ndeep windows, medians of {DEEP_RUNS}; markitdown once, killed after {DEEP_REFERENCE_S} s; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'':<60}{'wall':>11}{'CPU':>9}{'peak RSS':>13}")
    for path, rows, reference in deep_files():
        directory, name = os.path.dirname(path), os.path.basename(path)
        total = rows + 2  # the sheet's header line and the table's rule beside its rows

        def ours(offset):
            # The time budget raised (DEEP_TIMEOUT_S, 30 s by default as in a read) so that a loaded machine still
            # measures the whole read.
            request = json.dumps({"path": name, "offset": offset, "limit": 100}).encode()
            return timed([BIN, "--root", directory, "--timeout-ms", str(DEEP_TIMEOUT_S * 1000)], request)

        def answered(out):
            """What an agent-read answer was: its window, or its error code."""
            result = json.loads(out)
            return "window" if result["ok"] else result["error_code"]

        size = os.path.getsize(path) / (1 << 20)
        lines = []
        deep = int(total * 0.9)
        for label, offset in [(f"100 lines at line {deep:,}", deep), ("the last 100 lines", -100)]:
            runs = [ours(offset) for _ in range(DEEP_RUNS)]
            medians = [statistics.median(r[i] for r in runs) for i in (0, 3, 1)]
            lines.append((f"agent-read, {label}", *medians, ", ".join(sorted({answered(r[2]) for r in runs}))))
        if reference:
            # markitdown converts the whole workbook into memory (gigabytes for a million rows): once, capped.
            wall, rss, finished, cpu = capped([MARKITDOWN, path], DEEP_REFERENCE_S)
            lines.append(("markitdown, the whole workbook", wall, cpu, rss, "converted" if finished else "unfinished"))
        print(f"{name} ({rows:,} rows, {size:.1f} MiB)")
        for label, wall, cpu, rss, outcome in lines:
            print(f"  {label:<58}{wall:>9.2f} s{cpu:>7.2f} s{rss:>9.1f} MiB   {outcome}")


def big_workbook(path, rows=ROWS):
    from openpyxl import Workbook

    wb = Workbook(write_only=True)
    sheet = wb.create_sheet("Orders")
    sheet.append(["Order", "Customer", "Units", "Price"])
    for n in range(rows):
        sheet.append([n, f"customer {n % 97}", n % 13, (n % 100) / 4])
    wb.save(path)


def run(argv):
    start = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, check=True).stdout
    return time.perf_counter() - start, out


def agent_read(directory, name):
    request = json.dumps({"path": name, "limit": 1000000})
    argv = [BIN, "--root", directory, "--config", os.path.join(directory, "whole.toml")]
    start = time.perf_counter()
    out = subprocess.run(argv, input=request.encode(), capture_output=True, check=True).stdout
    elapsed = time.perf_counter() - start
    return elapsed, json.loads(out)["output"]


def median_time(fn):
    fn()
    return statistics.median(fn()[0] for _ in range(RUNS))


def runs_of_text(markdown):
    """The runs of text markitdown shows: each line's text, each table cell, without Markdown's marks."""
    runs = []
    for line in markdown.splitlines():
        line = line.strip()
        if not line or set(line) <= set("|-: ") or line.startswith("<!--"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")] if line.startswith("|") else [line]
        for cell in cells:
            cell = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", cell)
            cell = re.sub(r"^(#+|[-*+]|\d+\.)\s+", "", cell).replace("**", "").replace("\\", "").strip()
            if cell and cell.lower() not in ("nan", "unnamed: 0", "unnamed: 1"):
                runs.append(" ".join(cell.split()))
    return runs


def plain(output):
    lines = output.splitlines()[:-1]
    text = "\n".join(re.sub(r"^\d+: (│ ?)?", "", line) for line in lines)
    return " ".join(re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text).replace("\\", "").split())


def main():
    with tempfile.TemporaryDirectory() as work:
        for name in ["report.docx", "report.odt", "book.xlsx", "book.xls", "book.ods", "deck.pptx", "guide.epub"]:
            with open(os.path.join(FIXTURES, name), "rb") as src, open(os.path.join(work, name), "wb") as dst:
                dst.write(src.read())
        with open(os.path.join(work, "shop.html"), "w") as page:
            page.write(PAGE)
        with open(os.path.join(work, "whole.toml"), "w") as config:
            config.write("[limits]\nmax_lines = 1000000\nmax_output_bytes = 67108864\n")
        big_workbook(os.path.join(work, "orders.xlsx"))
        print(f"{'file':<14}{'agent-read':>12}{'markitdown':>12}{'ratio':>8}   fidelity (markitdown's runs found)")
        for name in ["report.docx", "book.xlsx", "book.xls", "deck.pptx", "guide.epub", "shop.html", "orders.xlsx"]:
            ours = median_time(lambda: agent_read(work, name))
            theirs = median_time(lambda: run([MARKITDOWN, os.path.join(work, name)]))
            text = plain(agent_read(work, name)[1])
            expected = runs_of_text(run([MARKITDOWN, os.path.join(work, name)])[1].decode())
            missing = [r for r in expected if r not in text]
            found = len(expected) - len(missing)
            print(f"{name:<14}{ours * 1000:>10.1f}ms{theirs * 1000:>10.1f}ms{theirs / ours:>7.0f}x   "
                  f"{found}/{len(expected)}" + (f"; missing: {missing[:6]}" if missing else ""))
        for name in ["report.odt", "book.ods"]:
            ours = median_time(lambda: agent_read(work, name))
            print(f"{name:<14}{ours * 1000:>10.1f}ms{'(not read)':>12}")
    deep_window()


if __name__ == "__main__":
    main()
