#!/usr/bin/env python3
"""Benchmark agent-read on long and hostile PDFs, with poppler's pdftotext on the same pages as the reference.

Generates (once, under bench/data/):
  long-20000.pdf   20,000 pages, page N showing "Page N text", all kids of one page tree node (5.8 MB)
  long-100000.pdf  the same with 100,000 pages (29 MB)
  flood-8M.pdf     one page of 8 million `(a) Tj` operators in one FlateDecode stream (82 KB)
and times, each case once to warm up and then RUNS times (median wall time, largest peak RSS from /usr/bin/time -v):
  (g) the default read of the 20,000-page PDF (the first pages that fit the 50 KiB cap)
  (h) pages="1-100" of the 100,000-page PDF
  (i) pages="99901-100000" of the 100,000-page PDF (its last 100 pages)
  (j) the default read of the 8-million-operator PDF
The reference extracts the same pages with `pdftotext -f FIRST -l LAST` (for (g), the pages agent-read showed).
"""
import os
import re
import statistics
import subprocess
import sys
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "bench", "data")
BIN = os.path.join(ROOT, "target", "release", "agent-read")
RUNS = int(os.environ.get("RUNS", "5"))


def write_pdf(path, objects):
    """Objects 1.. (object 1 the catalog), a classic cross-reference table, the trailer."""
    body = bytearray(b"%PDF-1.5\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(body))
        body += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    xref = len(body)
    body += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    body += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    body += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    with open(path + ".tmp", "wb") as out:
        out.write(body)
    os.replace(path + ".tmp", path)


def stream(data, extra=b""):
    return b"<< %s/Length %d >>\nstream\n" % (extra, len(data)) + data + b"\nendstream"


def long_pdf(path, pages):
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", None, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for page in range(1, pages + 1):
        objects.append(stream(b"BT /F1 12 Tf 72 720 Td (Page %d text) Tj ET" % page))
        objects.append(b"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>"
                       % len(objects))
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d /MediaBox [0 0 612 792] >>" % (
        b" ".join(b"%d 0 R" % kid for kid in kids), pages)
    write_pdf(path, objects)


def flood_pdf(path, operators):
    content = b"BT /F1 12 Tf 72 720 Td " + b"(a) Tj " * operators + b"0 -20 Td (the end) Tj ET"
    write_pdf(path, [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 /MediaBox [0 0 612 792] >>",
        b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        stream(zlib.compress(content, 9), b"/Filter /FlateDecode "),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ])


def generate():
    os.makedirs(DATA, exist_ok=True)
    files = {
        "long-20000.pdf": lambda path: long_pdf(path, 20_000),
        "long-100000.pdf": lambda path: long_pdf(path, 100_000),
        "flood-8M.pdf": lambda path: flood_pdf(path, 8_000_000),
    }
    for name, make in files.items():
        path = os.path.join(DATA, name)
        if not os.path.exists(path):
            print("generating", path, file=sys.stderr)
            make(path)


def measure(cmd):
    """One run: wall seconds, peak RSS in KiB (/usr/bin/time -v), standard output."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    stderr = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{stderr}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr).group(1))
    return wall, rss, proc.stdout


def median_of(cmd):
    measure(cmd)  # warm-up: page cache hot
    runs = [measure(cmd) for _ in range(RUNS)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs), runs[-1][2]


def agent(name, pages=None):
    cmd = [BIN, "--root", DATA, "--json"]
    if pages:
        cmd += ["--pages", pages]
    return cmd + [name]


def main():
    generate()
    cases = [
        ("(g) 20,000 pages, default read", "long-20000.pdf", None),
        ("(h) 100,000 pages, pages=\"1-100\"", "long-100000.pdf", "1-100"),
        ("(i) 100,000 pages, pages=\"99901-100000\"", "long-100000.pdf", "99901-100000"),
        ("(j) 8 million text operators, default read", "flood-8M.pdf", None),
    ]
    rows = []
    for label, name, pages in cases:
        path = os.path.join(DATA, name)
        wall, rss, out = median_of(agent(name, pages))
        answer = out.decode(errors="replace")
        shown = re.search(r'"pages_shown":"([0-9,-]+)"', answer)
        shown = shown.group(1) if shown else "?"
        first, _, last = shown.partition("-")
        ref_cmd = ["pdftotext", "-f", first, "-l", last or first, path, "-"] if shown != "?" else ["pdftotext", path, "-"]
        ref_wall, ref_rss, _ = median_of(ref_cmd)
        rows.append((label, os.path.getsize(path), shown, wall, rss, ref_wall, ref_rss))
    print(f"\nmedian of {RUNS} runs after a warm-up; peak RSS is the largest of the runs; release build\n")
    print("| case | file | pages shown | agent-read | peak RSS | pdftotext, same pages | its peak RSS | ratio |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for label, size, shown, wall, rss, ref_wall, ref_rss in rows:
        size_text = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} KB"
        print(f"| {label} | {size_text} | {shown} | {wall * 1000:.0f} ms | {rss / 1024:.1f} MiB | "
              f"{ref_wall * 1000:.0f} ms | {ref_rss / 1024:.1f} MiB | {wall / ref_wall:.2f}× |")


if __name__ == "__main__":
    main()
