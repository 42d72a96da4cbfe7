#!/usr/bin/env python3
"""Builds the small-record corpora of issue 15 from real data (into /tmp/zseal-corpus or $1):

  records-json.ndjson  one JSON object per line, one per published package version, cut from the
                       npm registry documents of json.ndjson (scripts/make-json-corpus.py): name,
                       version, description, license, homepage; about 200 bytes each.
  records-200.ndjson   json.ndjson cut into 1,200,000 objects of exactly 200 bytes, one per line
                       (newlines inside the JSON text replaced by spaces): the store of issue 15
                       (1,000,000 objects of 200 bytes) and 200,000 more to train a dictionary on.
  records-log.txt      this machine's package logs (/var/log/dpkg.log, alternatives.log,
                       apt/history.log) cut into blocks of 264 bytes, one per line (newlines
                       inside a block replaced by \\x1e): the log of issue 15.
"""
import json
import os
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ZSEAL_CORPUS", "/tmp/zseal-corpus")
src = os.path.join(out, "json.ndjson")
if not os.path.exists(src):
    sys.exit(f"{src} is missing: run scripts/make-json-corpus.py first")

n = 0
with open(src, "rb") as f, open(os.path.join(out, "records-json.ndjson.tmp"), "w") as o:
    for line in f:
        try:
            doc = json.loads(line)
        except ValueError:  # the corpus ends inside its last document
            continue
        for ver, meta in (doc.get("versions") or {}).items():
            if not isinstance(meta, dict):
                continue
            rec = {"name": meta.get("name"), "version": ver}
            for k in ("description", "license", "homepage"):
                v = meta.get(k)
                if isinstance(v, str):
                    rec[k] = v[:160]
            o.write(json.dumps(rec, separators=(",", ":"), ensure_ascii=False) + "\n")
            n += 1
os.replace(os.path.join(out, "records-json.ndjson.tmp"), os.path.join(out, "records-json.ndjson"))

with open(src, "rb") as f, open(os.path.join(out, "records-200.ndjson.tmp"), "wb") as o:
    for _ in range(1_200_000):
        block = f.read(200)
        if len(block) < 200:
            sys.exit("json.ndjson holds fewer than 240 MB")
        o.write(block.replace(b"\n", b" ") + b"\n")
os.replace(os.path.join(out, "records-200.ndjson.tmp"), os.path.join(out, "records-200.ndjson"))

logs = b""
for p in ("/var/log/dpkg.log", "/var/log/alternatives.log", "/var/log/apt/history.log"):
    if os.path.exists(p):
        logs += open(p, "rb").read()
blocks = [logs[i : i + 264] for i in range(0, len(logs) - 263, 264)]
with open(os.path.join(out, "records-log.txt"), "wb") as o:
    for b in blocks:
        o.write(b.replace(b"\n", b"\x1e") + b"\n")
print(f"{n} JSON records, 1,200,000 x 200-byte objects, {len(blocks)} log blocks in {out}")
