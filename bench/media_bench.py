#!/usr/bin/env python3
"""Benchmark agent-read on media: downscaling a 9600 x 6000 PNG, and extracting the text of a 200-page PDF.

Generates (once, under bench/data/) the PNG (a photo-like gradient with noise, written with zlib) and the PDF (200
pages of 45 text lines each, Helvetica), then times, RUNS times after a warm-up, with peak RSS from /usr/bin/time -v:
  (d) reading the PNG: header, decode, downscale to 2000 px, PNG re-encode, base64 (the JSON result)
  (e) reading the PDF with pages="1-200" and a cap large enough for every page (all 200 pages extracted)
  (f) the default read of the PDF (the first pages that fit the 50 KiB cap)
beside baselines in the same run: `cat` of the same file (the I/O floor) and, for (d), inflating the PNG's pixel
data with Python's zlib (C) — the least any PNG decoder must do — and, when installed, ImageMagick's
`convert -resize 2000x2000`.
"""
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
BIN = os.environ.get("AGENT_READ_BIN", os.path.join(HERE, "..", "target", "release", "agent-read"))
WIDTH, HEIGHT = 9600, 6000
PAGES = 200


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def generate_png(path):
    # A few distinct noisy gradient rows, cycled: realistic compression without minutes of pure-Python pixel work.
    seed = 12345
    rows = []
    for variant in range(61):
        row = bytearray(b"\x00")  # filter type 0
        for x in range(WIDTH):
            seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
            noise = seed >> 27
            base = x * 255 // WIDTH
            row += bytes(((base + noise) & 255, (base // 2 + variant * 3 + noise) & 255, (255 - base + noise) & 255))
        rows.append(bytes(row))
    compressor = zlib.compressobj(6)
    with open(path, "wb") as out:
        out.write(b"\x89PNG\r\n\x1a\n")
        out.write(png_chunk(b"IHDR", struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 2, 0, 0, 0)))
        pending = b""
        for y in range(HEIGHT):
            pending += compressor.compress(rows[y % len(rows)])
            if len(pending) > 1 << 20:
                out.write(png_chunk(b"IDAT", pending))
                pending = b""
        pending += compressor.flush()
        out.write(png_chunk(b"IDAT", pending))
        out.write(png_chunk(b"IEND", b""))


def generate_pdf(path):
    objects = []  # 1-based object bodies
    font_id, pages_id = 1, 2
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objects.append(None)  # the page tree, written once the kids are known
    kids = []
    for page in range(1, PAGES + 1):
        lines = [f"Page {page}, line {i}: the quick brown fox jumps over the lazy dog {page * i}" for i in range(1, 46)]
        ops = ["BT", "/F1 10 Tf", "12 TL", "50 760 Td"] + [f"({line}) Tj T*" for line in lines] + ["ET"]
        stream = "\n".join(ops).encode()
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        content_id = len(objects)
        objects.append(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> "
            b"/Contents %d 0 R >>" % (pages_id, font_id, content_id)
        )
        kids.append(len(objects))
    objects[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    objects.append(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    catalog_id = len(objects)
    body = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(body))
        body += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    xref = len(body)
    body += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    body += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    body += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, catalog_id, xref)
    with open(path, "wb") as out:
        out.write(body)


INFLATE_PNG = r'''
import sys, zlib
data = open(sys.argv[1], "rb").read()
at, idat = 8, []
while at < len(data):
    size = int.from_bytes(data[at:at + 4], "big")
    if data[at + 4:at + 8] == b"IDAT":
        idat.append(data[at + 8:at + 8 + size])
    at += 12 + size
print(len(zlib.decompress(b"".join(idat))))
'''


def is_imagemagick():
    if not shutil.which("convert"):
        return False
    probe = subprocess.run(["convert", "-version"], capture_output=True, text=True)
    return probe.returncode == 0 and "ImageMagick" in probe.stdout


def generate():
    os.makedirs(DATA, exist_ok=True)
    png = os.path.join(DATA, "photo-9600x6000.png")
    if not os.path.exists(png):
        print("generating", png, file=sys.stderr)
        generate_png(png + ".tmp")
        os.replace(png + ".tmp", png)
    pdf = os.path.join(DATA, "report-200-pages.pdf")
    if not os.path.exists(pdf):
        print("generating", pdf, file=sys.stderr)
        generate_pdf(pdf + ".tmp")
        os.replace(pdf + ".tmp", pdf)
    return png, pdf


def measure(cmd, stdin=None):
    """One run: wall seconds and peak RSS in KiB (/usr/bin/time -v)."""
    start = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-v"] + cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    wall = time.perf_counter() - start
    stderr = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{stderr}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr).group(1))
    return wall, rss, proc.stdout


def median_of(cmd, stdin=None):
    measure(cmd, stdin)  # warm-up: page cache hot
    runs = [measure(cmd, stdin) for _ in range(RUNS)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs), runs[-1][2]


def main():
    png, pdf = generate()
    root = DATA
    rows = []
    scratch = tempfile.mkdtemp()
    try:
        cases = [
            ("(d) 9600×6000 PNG → 2000 px attachment", [BIN, "--root", root, "--json", os.path.basename(png)], png,
             "zlib inflate of the pixels", [sys.executable, "-c", INFLATE_PNG, png]),
            ("(e) 200-page PDF, all pages", [BIN, "--root", root, "--json", "--pages", "1-200", "--config",
                                              os.path.join(scratch, "big-cap.toml"), os.path.basename(pdf)], pdf,
             None, None),
            ("(f) 200-page PDF, default read", [BIN, "--root", root, "--json", os.path.basename(pdf)], pdf, None, None),
        ]
        with open(os.path.join(scratch, "big-cap.toml"), "w") as cap:
            cap.write("[limits]\nmax_output_bytes = 16777216\ndefault_lines = 100000\nmax_lines = 100000\n")
        for label, cmd, path, base_name, base_cmd in cases:
            wall, rss, out = median_of(cmd)
            cat_wall, cat_rss, _ = median_of(["cat", path])
            baseline = ""
            if base_name:
                b_wall, b_rss, _ = median_of(base_cmd)
                baseline = f"{base_name}: {b_wall * 1000:.0f} ms, {b_rss / 1024:.1f} MiB (ratio {wall / b_wall:.2f}×)"
            if label.startswith("(d)") and is_imagemagick():
                i_wall, i_rss, _ = median_of(["convert", png, "-resize", "2000x2000", os.path.join(scratch, "o.png")])
                baseline += f"; ImageMagick: {i_wall * 1000:.0f} ms, {i_rss / 1024:.1f} MiB"
            summary = out[:300].decode(errors="replace")
            rows.append((label, os.path.getsize(path), wall, rss, cat_wall, baseline, summary))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nmedian of {RUNS} runs after a warm-up; peak RSS is the largest of the runs\n")
    print("| case | file | agent-read | peak RSS | cat (I/O floor) | other baseline |")
    print("|---|---:|---:|---:|---:|---|")
    for label, size, wall, rss, cat_wall, baseline, _ in rows:
        print(f"| {label} | {size / 1e6:.1f} MB | {wall * 1000:.0f} ms | {rss / 1024:.1f} MiB | "
              f"{cat_wall * 1000:.1f} ms | {baseline or '—'} |")
    for label, *_, summary in rows:
        print(f"\n{label}: {summary}…")


if __name__ == "__main__":
    main()
