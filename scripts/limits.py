#!/usr/bin/env python3
"""How close zseal comes to the two-core limit, per direction and corpus, in one run (issue 27).

    scripts/limits.py [--runs N] [--corpus DIR] [--only text,json,random] [--json FILE]

For each corpus (text.tar 1 GiB, json.ndjson 256 MiB, random.bin 256 MiB) and each direction
(encrypt a file to /dev/null; decrypt a container to /dev/null), every round runs, interleaved:

  j2      zseal on 2 threads
  j1      zseal on 1 thread
  halves  two zseal -j1 processes at once, each on its own half of the input (the halves are
          made here, and sealed here for decryption): the same work split in two with nothing
          shared and nothing to coordinate, i.e. what two cores of this machine give when the
          split is perfect
  peer    zstd -3 -T0 (encrypt) / zstd -d (decrypt) of the same input, for scale

Printed per row: medians (min..max), and the ratios `j2 / (j1 / 2)` (the issue's limit: one
thread's time halved, which assumes two cores do twice one core's work) and `j2 / halves` (the
limit this machine actually offers: on a VM whose two vCPUs slow each other down, two
independent processes take longer than half of one). `j1 / 2 / halves` shows that slowdown.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from race import run  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPORA = {"text": "text.tar", "json": "json.ndjson", "random": "random.bin"}


def sh(cmd):
    subprocess.run(cmd, shell=True, check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--corpus", default=os.environ.get("ZSEAL_CORPUS", "/tmp/zseal-corpus"))
    ap.add_argument("--only", default="text,json,random")
    ap.add_argument("--json")
    a = ap.parse_args()
    z = os.environ.get("ZSEAL_BIN") or os.path.join(ROOT, "target", "release", "zseal")
    work = tempfile.mkdtemp(prefix="zseal-limits-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    key = os.path.join(work, "key.txt")
    sh(f"{z} keygen -o {key} 2>/dev/null")
    r = subprocess.run([z, "keygen", "-y", key], capture_output=True, text=True, check=True).stdout.strip()
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                  if l.startswith("model name")), "?")
    print(f"# {model}, {os.cpu_count()} cores; {a.runs} interleaved rounds; medians; outputs to /dev/null")
    print(f"{'':18} {'j2':>7} {'j1':>7} {'halves':>7} {'peer':>7}   j2/(j1/2)  j2/halves  (j1/2)/halves")
    rows = []
    for name in a.only.split(","):
        src = os.path.join(a.corpus, CORPORA[name])
        if not os.path.exists(src):
            print(f"{name}: {src} missing (../shared/corpus/make_corpus.sh, scripts/make-json-corpus.py)")
            continue
        size = os.path.getsize(src)
        ha, hb = os.path.join(work, f"{name}.a"), os.path.join(work, f"{name}.b")
        sh(f"head -c {size // 2} {src} > {ha}; tail -c +{size // 2 + 1} {src} > {hb}")
        for p in (src, ha, hb):
            sh(f"{z} encrypt -r {r} {p} -o {os.path.join(work, os.path.basename(p))}.zs -f")
        sh(f"zstd -3 -T0 -q -f {src} -o {os.path.join(work, name)}.zst")
        c, ca, cb = (os.path.join(work, os.path.basename(p)) + ".zs" for p in (src, ha, hb))
        zst = os.path.join(work, name) + ".zst"
        cases = {
            "encrypt": {
                "j2": f"{z} encrypt -r {r} {src} -o /dev/null",
                "j1": f"{z} encrypt -j1 -r {r} {src} -o /dev/null",
                "halves": f"{z} encrypt -j1 -r {r} {ha} -o /dev/null & "
                          f"{z} encrypt -j1 -r {r} {hb} -o /dev/null; wait",
                "peer": f"zstd -3 -T0 -q -c {src} > /dev/null",
            },
            "decrypt": {
                "j2": f"{z} decrypt -i {key} {c} -o /dev/null",
                "j1": f"{z} decrypt -j1 -i {key} {c} -o /dev/null",
                "halves": f"{z} decrypt -j1 -i {key} {ca} -o /dev/null & "
                          f"{z} decrypt -j1 -i {key} {cb} -o /dev/null; wait",
                "peer": f"zstd -d -q -c {zst} > /dev/null",
            },
        }
        for direction, cmds in cases.items():
            times = {k: [] for k in cmds}
            for _ in range(a.runs):
                for k, cmd in cmds.items():
                    times[k].append(run(cmd, None)[0])
            m = {k: statistics.median(v) for k, v in times.items()}
            row = {"corpus": name, "direction": direction, "bytes": size,
                   **{f"{k}_s": v for k, v in m.items()},
                   **{f"{k}_range": [min(v), max(v)] for k, v in times.items()},
                   "j2_over_half_j1": m["j2"] / (m["j1"] / 2),
                   "j2_over_halves": m["j2"] / m["halves"],
                   "half_j1_over_halves": (m["j1"] / 2) / m["halves"]}
            rows.append(row)
            print(f"{direction + ' ' + name:18} {m['j2']:7.3f} {m['j1']:7.3f} {m['halves']:7.3f} "
                  f"{m['peer']:7.3f}   {row['j2_over_half_j1']:9.2f}  {row['j2_over_halves']:9.2f}"
                  f"  {row['half_j1_over_halves']:13.2f}", flush=True)
        for p in (ha, hb, c, ca, cb, zst):
            os.remove(p)
    sh(f"rm -rf {work}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cpu": model, "cores": os.cpu_count(), "runs": a.runs, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
