"""Benchmarks of the Python package (not tests: numbers, medians of interleaved runs, ratios
against a peer measured in the same run).

    python python/benches/bench.py [--corpus DIR] [--runs N] [--only read|dask] [--compress lz4]

read: `zseal.open(...).read()` (and a readinto loop into one reused 16 MiB buffer) against
      `zseal decrypt -i KEY C > /dev/null` on the same container of text.tar (1 GiB of Linux
      source from ../shared/corpus/make_corpus.sh) and of random.bin (256 MiB).
dask: `dask.dataframe.read_csv` of a 1 GiB CSV (made here, deterministic) on a distributed
      LocalCluster of 1 and 2 worker processes, encrypted (zseal::file://) against the same CSV
      in plaintext; every partition is parsed (map_partitions(len)).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zseal

ROOT = Path(__file__).resolve().parents[2]
ZSEAL = os.environ.get("ZSEAL_BIN") or str(ROOT / "target" / "release" / "zseal")


def machine() -> str:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def timed(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def interleaved(cases: dict, runs: int) -> dict[str, float]:
    """Runs every case once per round, rounds `runs` times; returns the median per case."""
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(runs):
        for k, f in cases.items():
            times[k].append(timed(f))
    return {k: statistics.median(v) for k, v in times.items()}


def bench_read(corpus: Path, work: Path, key: str, recipient: str, runs: int) -> None:
    for name in ("text.tar", "random.bin"):
        src = corpus / name
        if not src.exists():
            print(f"skip {name}: not in {corpus} (run ../shared/corpus/make_corpus.sh)")
            continue
        c = work / (name + ".zseal")
        # Sealed afresh by the binary under test: a container left by an older build would
        # measure that build's defaults (chunk size, codec settings), not this one's.
        subprocess.run([ZSEAL, "encrypt", "-q", "-r", recipient, str(src), "-o", str(c), "-f"], check=True)
        size = src.stat().st_size
        buf = bytearray(16 << 20)

        def cli():
            with open(os.devnull, "wb") as null:
                subprocess.run([ZSEAL, "decrypt", "-i", key, str(c)], stdout=null, check=True)

        def read_all():
            with zseal.open(c, identity=key) as f:
                assert len(f.read()) == size

        def readinto():
            n = 0
            with zseal.open(c, identity=key) as f:
                while k := f.readinto(buf):
                    n += k
            assert n == size

        def plain_read():
            # What a fresh object of this size costs Python on its own: the plaintext itself,
            # read from the page cache into a new bytes (the floor under read() of it all).
            with open(src, "rb") as f:
                assert len(f.read()) == size

        m = interleaved(
            {"cli": cli, "read": read_all, "readinto": readinto, "plain": plain_read}, runs
        )
        mb = size / 1e6
        print(f"\n{name} ({size / 2**20:.0f} MiB), medians of {runs} interleaved runs:")
        print(f"  zseal decrypt > /dev/null      {m['cli']:7.3f} s  {mb / m['cli']:7.0f} MB/s")
        for k in ("read", "readinto"):
            label = "zseal.open().read()" if k == "read" else "readinto(16 MiB buffer) loop"
            print(f"  {label:<30} {m[k]:7.3f} s  {mb / m[k]:7.0f} MB/s  {m['cli'] / m[k]:.2f}x the command")
        print(
            f"  {'open(plaintext).read()':<30} {m['plain']:7.3f} s  {mb / m['plain']:7.0f} MB/s"
            f"  (zseal.open().read(): {m['plain'] / m['read']:.2f}x this)"
        )


def make_csv(path: Path, size: int) -> None:
    """A deterministic CSV of about `size` bytes: ints, floats, a category and free text."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(42)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    tmp = path.with_suffix(".part")
    with open(tmp, "w") as out:
        start, first = 0, True
        while out.tell() < size:
            n = 500_000
            df = pd.DataFrame(
                {
                    "id": np.arange(start, start + n),
                    "value": rng.integers(-10**9, 10**9, n),
                    "price": rng.random(n).round(4) * 1000,
                    "kind": words[rng.integers(0, len(words), n)],
                    "note": np.char.add("note ", rng.integers(0, 10**6, n).astype(str)),
                }
            )
            df.to_csv(out, index=False, header=first)
            start, first = start + n, False
    tmp.rename(path)


def bench_dask(work: Path, key: str, recipient: str, runs: int, compress: str | None) -> None:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    csv = work / "data.csv"
    if not csv.exists():
        print("making a 1 GiB CSV ...", flush=True)
        make_csv(csv, 1 << 30)
    enc = work / "data.csv.zseal"
    # Sealed afresh, as in bench_read, with the defaults or the codec asked for.
    zseal.encrypt_file(csv, enc, recipients=[recipient], compress=compress, overwrite=True)
    info = zseal.inspect(enc)
    size = csv.stat().st_size
    print(f"\nDask read_csv of {size / 2**30:.2f} GiB CSV (encrypted: {enc.stat().st_size / 2**20:.0f} MiB, "
          f"{info['compression']}, {info['chunk_size'] >> 20} MiB chunks), "
          f"blocksize 64 MB, medians of {runs} interleaved runs:")
    results = {}
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            client.wait_for_workers(workers)

            def plain():
                ddf = dd.read_csv(str(csv), blocksize="64MB")
                assert ddf.map_partitions(len).compute().sum() > 0

            def encrypted():
                ddf = dd.read_csv(f"zseal::file://{enc}", blocksize="64MB",
                                  storage_options={"zseal": {"identity": key}})
                assert ddf.map_partitions(len).compute().sum() > 0

            encrypted()  # warm the workers (imports)
            results[workers] = interleaved({"plain": plain, "zseal": encrypted}, runs)
            r = results[workers]
            print(f"  {workers} worker(s): plaintext {r['plain']:6.2f} s, zseal {r['zseal']:6.2f} s "
                  f"({r['zseal'] / r['plain']:.2f}x the plaintext read)")
    for k in ("plain", "zseal"):
        print(f"  2 workers vs 1, {k}: {results[1][k] / results[2][k]:.2f}x faster")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.environ.get("ZSEAL_CORPUS", "/tmp/zseal-corpus"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", choices=["read", "dask"])
    ap.add_argument("--compress", help="codec of the Dask CSV's container (default: zseal's default)")
    a = ap.parse_args()
    corpus = Path(a.corpus)
    work = corpus / "python-bench"
    work.mkdir(parents=True, exist_ok=True)
    key = work / "bench.key"
    if not key.exists():
        zseal.keygen(key)
    recipient = subprocess.run([ZSEAL, "keygen", "-y", str(key)], capture_output=True, text=True,
                               check=True).stdout.strip()
    print(f"machine: {machine()}")
    if a.only in (None, "read"):
        bench_read(corpus, work, str(key), recipient, a.runs)
    if a.only in (None, "dask"):
        bench_dask(work, str(key), recipient, max(3, a.runs // 2), a.compress)


if __name__ == "__main__":
    sys.exit(main())
