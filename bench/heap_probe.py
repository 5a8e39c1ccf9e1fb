#!/usr/bin/env python3
"""Where a running process's heap memory sits, on one line: `python3 bench/heap_probe.py PID`.

Without a debugger (from /proc/PID/status and /proc/PID/smaps):
  rss, threads; arenas = glibc heaps besides the main one (64 MiB-aligned anonymous mappings) and the resident
  memory in them (arena_rss), in the main heap (brk_rss) and in other anonymous mappings (stacks, large blocks).
With HEAP_PROBE_GDB=1 (needs gdb and glibc's debug symbols: `apt-get install gdb libc6-dbg`; attaches for about a
second, so use it only while the process is idle), glibc's own view:
  in_use / free = malloc_info's totals (blocks in the threads' caches count as in use: glibc sees them as allocated);
  tcache = bytes and blocks held in every thread's cache; tops = free memory at the top of all arenas;
  trim/mmap = the trim and mmap thresholds, and whether glibc still adjusts them ("dyn").
bench/mcp_load.py runs it after warm-up and after every repetition when MEM_PROBE=bench/heap_probe.py.
"""
import os
import re
import subprocess
import sys
import tempfile

ARENA_HEAP = 64 << 20  # glibc's HEAP_MAX_SIZE on 64-bit: every non-main arena heap is one aligned mapping this size

# Runs inside gdb: walks the arenas and every thread's tcache. Sizes follow glibc 2.26+ on 64-bit (tcache bin i holds
# blocks of 32 + 16 i bytes).
GDB_SCRIPT = r'''
import gdb
mp = gdb.parse_and_eval("mp_")
main = gdb.parse_and_eval("&main_arena")
arena, tops = main, 0
while True:
    tops += int(arena["top"]["mchunk_size"]) & ~7
    arena = arena["next"]
    if int(arena) == int(main):
        break
cached = blocks = 0
for thread in gdb.selected_inferior().threads():
    thread.switch()
    try:
        tc = gdb.parse_and_eval("tcache")
    except gdb.error:
        continue
    if int(tc) == 0:
        continue
    for i in range(int(mp["tcache_bins"])):
        count = int(tc["counts"][i])
        blocks += count
        cached += count * (32 + 16 * i)
print("HEAP_PROBE tcache=%.2fM/%d tops=%.1fM trim=%dK mmap=%dK dyn=%s" % (
    cached / 2**20, blocks, tops / 2**20, int(mp["trim_threshold"]) >> 10, int(mp["mmap_threshold"]) >> 10,
    "no" if int(mp["no_dyn_threshold"]) else "yes"))
'''


def from_proc(pid):
    status = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "Threads"):
                status[key] = int(rest.split()[0])
    maps, current = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
            if head:
                current = {"start": int(head[1], 16), "end": int(head[2], 16), "perm": head[3],
                           "name": head[4].strip(), "rss": 0}
                maps.append(current)
            elif line.startswith("Rss:") and current:
                current["rss"] = int(line.split()[1])
    arenas = arena_rss = brk_rss = other_anon = 0
    for i, m in enumerate(maps):
        if m["name"] == "[heap]":
            brk_rss += m["rss"]
        elif m["name"]:
            continue  # files, stack of the main thread, vdso...
        elif m["start"] % ARENA_HEAP == 0 and m["perm"].startswith("rw"):
            # An arena heap: its used part, then (unless it is full) its reserved rest, 64 MiB in all.
            following = maps[i + 1] if i + 1 < len(maps) else None
            end = following["end"] if following and following["start"] == m["end"] and \
                following["perm"].startswith("---") else m["end"]
            if end - m["start"] == ARENA_HEAP:
                arenas += 1
                arena_rss += m["rss"]
            else:
                other_anon += m["rss"]
        else:
            other_anon += m["rss"]
    mib = lambda kib: f"{kib / 1024:.1f}M"
    return (f"rss={mib(status.get('VmRSS', 0))} threads={status.get('Threads')} arenas={arenas} "
            f"arena_rss={mib(arena_rss)} brk_rss={mib(brk_rss)} other_anon={mib(other_anon)}")


def from_gdb(pid):
    with tempfile.TemporaryDirectory() as tmp:
        info = os.path.join(tmp, "malloc_info.xml")
        script = os.path.join(tmp, "walk.py")
        with open(script, "w") as f:
            f.write(GDB_SCRIPT)
        try:
            out = subprocess.run(
                ["gdb", "-p", str(pid), "-batch", "-nx",
                 "-ex", f'set $f = (void *) fopen("{info}", "w")', "-ex", "call (int) malloc_info(0, $f)",
                 "-ex", "call (int) fclose($f)", "-x", script],
                capture_output=True, text=True, timeout=60).stdout
            with open(info) as f:
                xml = f.read()
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"gdb failed: {e}"
    totals = xml[xml.rfind("</heap>"):]  # the process-wide totals follow the last arena
    free = sum(int(n) for n in re.findall(r'<total type="(?:fast|rest)" count="\d+" size="(\d+)"', totals))
    system = re.search(r'<system type="current" size="(\d+)"', totals)
    walked = next((line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("HEAP_PROBE ")),
                  "(no glibc symbols: install libc6-dbg)")
    if not system:
        return walked
    return f"in_use={(int(system[1]) - free) / 2**20:.2f}M free={free / 2**20:.1f}M {walked}"


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        raise SystemExit("usage: heap_probe.py PID")
    pid = int(sys.argv[1])
    line = from_proc(pid)
    if os.environ.get("HEAP_PROBE_GDB") == "1":
        line += " " + from_gdb(pid)
    print(line)


if __name__ == "__main__":
    main()
