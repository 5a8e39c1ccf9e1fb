"""Writes the source tree bench/globs.sh walks: a Rust monorepo of about 14,000 entries, the same every time.

Usage: python3 bench/globs_tree.py DIR (does nothing when DIR/.complete exists).

The shape, from a seeded random generator: 190 crates under `crates/`, each with a manifest, a README, `src/` with
nested modules, and some of `tests/`, `benches/`, `examples/` and `docs/`; a `.gitignore` at the top (`target/`,
`*.log`) and in some crates (`*.snap.new`, `generated/`), whose ignored files and folders are written too; build
output under a `target/` at the top and in some crates; hidden folders (`.github/`, `.cargo/`). Directory names use
`_` rather than `-`, so that `sort` (in the C locale) and a per-component sort agree on the order.
"""
import os
import random
import sys

CRATES = 190


def write(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def module_text(rng, name):
    lines = [f"//! The {name} module.", "", "use std::collections::HashMap;", ""]
    for i in range(rng.randint(3, 30)):
        lines.append(f"pub fn {name}_{i}(input: &str) -> usize {{")
        lines.append(f"    input.len() + {i}")
        lines.append("}")
        lines.append("")
    return "\n".join(lines)


def crate(rng, root, name):
    base = os.path.join(root, "crates", name)
    write(os.path.join(base, "Cargo.toml"), f'[package]\nname = "{name}"\nversion = "0.1.0"\n')
    write(os.path.join(base, "README.md"), f"# {name}\n")
    write(os.path.join(base, "src", "lib.rs"), module_text(rng, "lib"))
    for m in range(rng.randint(5, 12)):
        module = os.path.join(base, "src", f"module_{m}")
        write(module + ".rs", module_text(rng, f"m{m}"))
        for s in range(rng.randint(0, 6)):
            write(os.path.join(module, f"part_{s}.rs"), module_text(rng, f"p{s}"))
            if rng.random() < 0.2:
                write(os.path.join(module, f"part_{s}", "inner.rs"), module_text(rng, "inner"))
    for folder, count in (("tests", 6), ("benches", 3), ("examples", 4)):
        if rng.random() < 0.6:
            for t in range(rng.randint(1, count)):
                write(os.path.join(base, folder, f"{folder}_{t}.rs"), module_text(rng, "t"))
    if rng.random() < 0.3:
        for d in range(rng.randint(1, 4)):
            write(os.path.join(base, "docs", f"page_{d}.md"), "# page\n")
    if rng.random() < 0.25:
        write(os.path.join(base, ".gitignore"), "*.snap.new\ngenerated/\n")
        write(os.path.join(base, "tests", "snapshots", "a.snap.new"), "new\n")
        for g in range(rng.randint(1, 8)):
            write(os.path.join(base, "src", "generated", f"gen_{g}.rs"), "// generated\n")
    if rng.random() < 0.15:
        for t in range(rng.randint(5, 30)):
            write(os.path.join(base, "target", "debug", "build", f"out_{t}.rs"), "// build output\n")


def main():
    root = sys.argv[1]
    if os.path.exists(os.path.join(root, ".complete")):
        return
    rng = random.Random(28)
    write(os.path.join(root, ".gitignore"), "target/\n*.log\n")
    write(os.path.join(root, "Cargo.toml"), "[workspace]\nmembers = [\"crates/*\"]\n")
    write(os.path.join(root, ".github", "workflows", "ci.yml"), "on: push\n")
    write(os.path.join(root, ".cargo", "config.toml"), "[build]\n")
    for n in range(CRATES):
        crate(rng, root, f"crate_{n:03}")
    for t in range(400):
        write(os.path.join(root, "target", "debug", "deps", f"dep_{t}.rs"), "// build output\n")
    for t in range(50):
        write(os.path.join(root, "crates", f"crate_{t:03}", "build.log"), "log\n")
    write(os.path.join(root, ".complete"))


main()
