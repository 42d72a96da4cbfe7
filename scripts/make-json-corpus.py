#!/usr/bin/env python3
"""Builds the JSON corpus of the performance issue: 256 MiB of real JSON, the npm registry's package
documents ("packuments"), one per line, from a breadth-first walk over the dependencies and
development dependencies of well-known packages. Usage: make-json-corpus.py [DIR]   (default: $ZSEAL_CORPUS or /tmp/zseal-corpus)

The registry changes every day, so two runs give different bytes with the same character (nested
objects, repeated keys, URLs, hashes, version strings): ratios are comparable within one run, as
every benchmark here compares tools on the same file. Idempotent: json.ndjson at its size is kept.
"""
import collections
import json
import os
import sys
import urllib.parse
import urllib.request

SIZE = 256 << 20
SEEDS = ["react", "express", "lodash", "typescript", "webpack", "eslint", "jest", "axios",
         "vue", "next", "@babel/core", "rollup", "mocha", "chalk", "commander", "moment"]

def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ZSEAL_CORPUS", "/tmp/zseal-corpus")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "json.ndjson")
    if os.path.exists(path) and os.path.getsize(path) == SIZE:
        print(path, "present")
        return
    queue, seen, total = collections.deque(SEEDS), set(SEEDS), 0
    with open(path + ".tmp", "wb") as out:
        while queue and total < SIZE:
            name = queue.popleft()
            url = "https://registry.npmjs.org/" + urllib.parse.quote(name, safe="@")
            try:
                with urllib.request.urlopen(url, timeout=60) as r:
                    doc = json.loads(r.read())
            except Exception as e:  # a missing or unreachable package: skip it
                print("skip", name, e, file=sys.stderr)
                continue
            line = json.dumps(doc, separators=(",", ":")).encode() + b"\n"
            out.write(line[: SIZE - total])
            total += min(len(line), SIZE - total)
            latest = doc.get("dist-tags", {}).get("latest")
            meta = doc.get("versions", {}).get(latest, {}) if latest else {}
            deps = {**meta.get("dependencies", {}), **meta.get("devDependencies", {})}
            for dep in sorted(deps):
                if dep not in seen:
                    seen.add(dep)
                    queue.append(dep)
    if total < SIZE:
        sys.exit(f"only {total} bytes reached: too few packages")
    os.replace(path + ".tmp", path)
    print(path, total)

main()
