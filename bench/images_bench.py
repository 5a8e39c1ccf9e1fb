#!/usr/bin/env python3
"""Benchmark agent-read's images beside libvips: peak RSS (from /usr/bin/time -v) and wall time for
  (g) an 8000 x 6000 PNG read by the command line (downscaled to 2000 px, re-encoded, base64, JSON), beside
      `vipsthumbnail -s 2000` making the same 2000 x 1500 thumbnail (a JPEG file);
  (h) a 6000 x 4000 JPEG, likewise (vipsthumbnail shrinks it on load, as agent-read decodes it at 1/2 scale);
  (j) the 2000 x 1000 region at the bottom right of the PNG at full resolution, beside `vips crop` to a PNG file;
  (i) six concurrent reads over MCP stdio of six copies of a small PNG declaring 11,000 x 11,000 pixels (the
      finding), the server's own peak RSS.
Each case runs once to warm up, then RUNS times, agent-read and its reference interleaved; wall time is the median,
peak RSS the largest of the runs.

AGENT_READ_BIN is the binary measured (default: target/release/agent-read); AGENT_READ_BEFORE, when set, names
another build (e.g. one from before a change) measured the same way in the same run, side by side.
The files are written once under bench/data/images/ by `cargo run --example bench_images`.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "images")
BIN = os.environ.get("AGENT_READ_BIN", os.path.join(HERE, "..", "target", "release", "agent-read"))
BEFORE = os.environ.get("AGENT_READ_BEFORE")
CLAIM = "claims-11000x11000.png"


def peak_rss_kib(stderr):
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr).group(1))


def timed(command):
    """Runs `command` under GNU time: wall seconds, peak RSS in KiB, and its standard output."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True)
    wall = time.perf_counter() - start
    stderr = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}):\n{stderr[-2000:]}")
    return wall, peak_rss_kib(stderr), proc.stdout


def read_cli(binary, name, *flags):
    """One command-line read: wall seconds, peak RSS in KiB, and the start of the output."""
    wall, rss, stdout = timed([binary, "--root", DATA, "--json", name, *flags])
    return wall, rss, json.loads(stdout)["output"][:160]


def vips_thumbnail(name):
    """vipsthumbnail making the 2000-pixel thumbnail of `name`, as a JPEG file."""
    out = os.path.join(DATA, "vips-thumbnail.jpg")
    wall, rss, _ = timed(["vipsthumbnail", os.path.join(DATA, name), "-s", "2000", "-o", out])
    return wall, rss, f"vipsthumbnail -s 2000: {os.path.getsize(out)} bytes"


def vips_crop(name, left, top, width, height):
    """vips cutting a region of `name` out at full resolution, as a PNG file."""
    out = os.path.join(DATA, "vips-crop.png")
    command = ["vips", "crop", os.path.join(DATA, name), out, str(left), str(top), str(width), str(height)]
    wall, rss, _ = timed(command)
    return wall, rss, f"vips crop: {os.path.getsize(out)} bytes"


def read_six_over_mcp(binary):
    """Six concurrent reads of six copies of the claim, over MCP stdio: wall seconds, the server's peak RSS in KiB
    (or None when it died), and the first answer's start."""
    proc = subprocess.Popen(["/usr/bin/time", "-v", binary, "mcp", "--root", DATA],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def send(message):
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    proc.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    start = time.perf_counter()
    for i in range(1, 7):
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
              "params": {"name": "read", "arguments": {"path": f"claim-{i}.png"}}})
    answers = []
    while len(answers) < 6:
        line = proc.stdout.readline()
        if not line:
            break
        answers.append(json.loads(line))
    wall = time.perf_counter() - start
    proc.stdin.close()
    proc.wait()
    stderr = proc.stderr.read().decode(errors="replace")
    if len(answers) < 6:
        return wall, None, "the server died: " + stderr.strip().splitlines()[0][:100]
    first = answers[0].get("result", {}).get("content", [{}])[0].get("text", "")
    return wall, peak_rss_kib(stderr), first[:120]


def measure(run):
    run()  # warm-up: page cache hot
    runs = [run() for _ in range(RUNS)]
    return summary(runs)


def summary(runs):
    rss = [r[1] for r in runs]
    peak = None if None in rss else max(rss)
    return statistics.median(r[0] for r in runs), peak, runs[-1][2]


def measure_beside(ours, reference):
    """Both runs interleaved, so that noise hits both alike: (ours, reference) summaries."""
    ours(), reference()  # warm-up: page cache hot
    pairs = [(ours(), reference()) for _ in range(RUNS)]
    return summary([p[0] for p in pairs]), summary([p[1] for p in pairs])


def row(label, build, measured, reference=None):
    wall, rss, shown = measured
    peak = "died" if rss is None else f"{rss / 1024:.1f} MiB"
    ratio = f"{wall / reference[0]:.2f}×" if reference else "—"
    print(f"| {label} | {build} | {wall * 1000:.0f} ms | {peak} | {ratio} | {shown} |", flush=True)


def main():
    # The files are written once by an example (a debug build: its codecs are optimised even there).
    subprocess.run(["cargo", "run", "--quiet", "--example", "bench_images", "--", DATA], check=True)
    for i in range(1, 7):
        copy = os.path.join(DATA, f"claim-{i}.png")
        if not os.path.exists(copy):
            os.link(os.path.join(DATA, CLAIM), copy)
    builds = [("after", BIN)] + ([("before", BEFORE)] if BEFORE else [])
    beside = [
        ("(g) 8000×6000 PNG → 2000 px", lambda b: lambda: read_cli(b, "photo-8000x6000.png"),
         lambda: vips_thumbnail("photo-8000x6000.png")),
        ("(h) 6000×4000 JPEG → 2000 px", lambda b: lambda: read_cli(b, "photo-6000x4000.jpg"),
         lambda: vips_thumbnail("photo-6000x4000.jpg")),
        ("(j) region 6000,5000,8000,6000 of the PNG", lambda b: lambda: read_cli(
            b, "photo-8000x6000.png", "--region", "6000,5000,8000,6000"),
         lambda: vips_crop("photo-8000x6000.png", 6000, 5000, 2000, 1000)),
    ]
    print(f"\nmedian of {RUNS} runs after a warm-up, interleaved with the reference; peak RSS is the largest of the runs")
    print("(ratio: wall time ÷ the reference's in the same run)\n")
    print("| case | build | wall | peak RSS | ratio | output |")
    print("|---|---|---:|---:|---:|---|")
    for label, make, reference in beside:
        for build, binary in builds:
            ours, theirs = measure_beside(make(binary), reference)
            row(label, build, ours, theirs)
        row(label, "reference", theirs)
    for build, binary in builds:
        row("(i) six concurrent MCP reads of a 11,000² PNG", build, measure(lambda: read_six_over_mcp(binary)))


if __name__ == "__main__":
    main()
