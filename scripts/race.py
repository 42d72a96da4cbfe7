#!/usr/bin/env python3
"""Times shell commands against each other in one run: every round runs each command once, in
turn (interleaved, so a noisy neighbour or a warm cache hits all alike), and the medians are
compared with the first command's.

    scripts/race.py [--runs N] [--setup CMD] 'LABEL=COMMAND' ...

--setup runs before every timed command, untimed (e.g. `rm -f /dev/shm/out`). Prints one line
per command: median wall seconds, the spread (min..max), median CPU seconds of the children,
peak RSS of the largest child in MiB (of the median run), and the ratio to the first command.
`--json FILE` also writes the figures as JSON. Used for the figures of docs/PERFORMANCE.md.
"""
import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import time


def run(cmd, setup):
    if setup:
        subprocess.run(setup, shell=True, check=True)
    r0 = os.times()
    t = time.perf_counter()
    # A fresh shell per run, so that ru_maxrss of this child is this run's alone.
    p = subprocess.Popen(["bash", "-c", cmd])
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    r1 = os.times()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"race: failed: {cmd}")
    cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    return wall, cpu, usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--setup")
    ap.add_argument("--json")
    ap.add_argument("commands", nargs="+")
    a = ap.parse_args()
    cmds = [c.split("=", 1) for c in a.commands]
    results = {label: [] for label, _ in cmds}
    for _ in range(a.runs):
        for label, cmd in cmds:
            results[label].append(run(cmd, a.setup))
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                  if l.startswith("model name")), platform.machine())
    print(f"# {model}, {os.cpu_count()} cores; {a.runs} interleaved rounds; medians")
    ref = None
    out = []
    for label, cmd in cmds:
        runs = results[label]
        walls = sorted(r[0] for r in runs)
        med = statistics.median(walls)
        mid = sorted(runs)[len(runs) // 2]
        ref = ref or med
        print(f"{label:34} {med:8.3f} s  ({walls[0]:.3f}..{walls[-1]:.3f})  cpu {mid[1]:6.2f} s"
              f"  rss {mid[2]:6.1f} MiB  x{med / ref:.2f}")
        out.append({"label": label, "command": cmd, "median_s": med, "min_s": walls[0],
                    "max_s": walls[-1], "cpu_s": mid[1], "rss_mib": mid[2], "ratio": med / ref})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
