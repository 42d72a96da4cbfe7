#!/usr/bin/env python3
"""Code shape figures for the library/front-end line (issue 11): lines per module, function
length (median, how many over 50 lines) and public items as `cargo doc` lists them.

Usage: scripts/code-metrics.py [--doc]   (--doc runs `cargo doc --no-deps` first)

Function length counts the lines from a `fn` signature to its closing brace, tests excluded
(everything after a `#[cfg(test)]` line in a file). It is a brace counter, not a parser: good
enough to compare one tree with another, not to argue about single functions.
"""
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def rust_files(top):
    for dirpath, _, names in os.walk(top):
        for n in sorted(names):
            if n.endswith(".rs"):
                yield os.path.join(dirpath, n)


def strip_tests(lines):
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]":
            return lines[:i]
    return lines


def functions(lines):
    out = []
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        depth, j, opened = 0, i, False
        while j < len(lines):
            code = re.sub(r'"(\\.|[^"\\])*"', '""', lines[j].split("//")[0])
            if not opened and ";" in code and "{" not in code:
                break  # a declaration without a body (trait method)
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if opened and depth <= 0:
                out.append((m.group(6), j - i + 1))
                break
            j += 1
        i = j + 1 if opened else i + 1
    return out


def main():
    if "--doc" in sys.argv:
        subprocess.run(["cargo", "doc", "--no-deps", "--lib", "-q"], cwd=ROOT, check=True)
    modules = {}
    lengths = []
    long = []
    for path in rust_files(os.path.join(ROOT, "src")):
        rel = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        parts = rel.split(os.sep)
        key = os.sep.join(parts[:3]) if parts[1] == "bin" else os.sep.join(parts[:2])
        key = re.sub(r"\.rs$", "", key)
        modules[key] = modules.get(key, 0) + len(lines)
        for name, n in functions(strip_tests(lines)):
            lengths.append(n)
            if n > 50:
                long.append((n, f"{rel}:{name}"))
    print("lines per module (src/, tests included):")
    for k in sorted(modules):
        print(f"  {modules[k]:6}  {k}")
    print(f"  {sum(modules.values()):6}  total")
    print(f"functions: {len(lengths)}, median length {statistics.median(lengths):.0f} lines, "
          f"{len(long)} over 50 lines")
    for n, where in sorted(long, reverse=True):
        print(f"  {n:4}  {where}")
    allh = os.path.join(ROOT, "target", "doc", "zseal", "all.html")
    if os.path.exists(allh):
        with open(allh, encoding="utf-8") as f:
            html = f.read()
        items = re.findall(r'<li><a href="[^"]+">([^<]+)</a></li>', html)
        print(f"public items listed by cargo doc (all.html): {len(items)}")
    else:
        print("public items: run with --doc")


if __name__ == "__main__":
    main()
