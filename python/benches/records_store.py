"""The store of issue 15, reproduced: 1,000,000 objects of 200 bytes hashed, compressed, sealed,
stored in Redis, loaded, opened and decompressed, for codecs none, lz4, zstd and zstd with a
trained dictionary; time per stage and sizes. A benchmark, not a test.

    python3 scripts/make-record-corpus.py                 # records-200.ndjson (real JSON, cut)
    python python/benches/records_store.py [--objects N] [--url redis://...] [--markdown]

Without --url it starts redis-server on a unix socket in a temporary directory. Stages:
- hash: SHA-256 of each object (hashlib), whose hex digest is the Redis key and the context the
  record is sealed with;
- compress and encrypt: RecordSealer.seal_many with the codec, minus the same with compress="none"
  (encrypt alone), so each column is that stage's share (both include nonce drawing);
- store / load: pipelined SET / MGET, 10,000 per round trip;
- decrypt and decompress: RecordOpener.open_many likewise split;
- bytes: the sealed values (every overhead included) and Redis's used_memory growth.
The dictionary (64 KiB) is trained on the 200,000 objects after the first 1,000,000, so no object
stored was trained on.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import time

import redis

import zseal

BATCH = 10_000


def objects(path: str, n: int, train: int) -> tuple[list[bytes], list[bytes]]:
    with open(path, "rb") as f:
        lines = [f.readline().rstrip(b"\n") for _ in range(n + train)]
    if len(lines[-1]) != 200:
        raise SystemExit(f"{path} holds fewer than {n + train} objects of 200 bytes")
    return lines[:n], lines[n:]


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def run(client, objs: list[bytes], dictionary: zseal.Dictionary) -> list[dict]:
    key = zseal.RecordKey.generate()
    names, t_hash = timed(lambda: [hashlib.sha256(o).hexdigest() for o in objs])
    plain_sealer = zseal.RecordSealer(key, compress="none")
    plain_opener = zseal.RecordOpener(key)
    sealed_plain, t_enc = timed(lambda: plain_sealer.seal_many(objs, names))
    _, t_dec = timed(lambda: plain_opener.open_many(sealed_plain, names))
    rows = []
    for label, compress, d in [
        ("none", "none", None),
        ("lz4", "lz4", None),
        ("zstd", "zstd:3", None),
        ("zstd+dict", "zstd:3", dictionary),
    ]:
        sealer = zseal.RecordSealer(key, compress=compress, dictionary=d)
        opener = zseal.RecordOpener(key, dictionaries=[d] if d else [])
        sealed, t_seal = timed(lambda: sealer.seal_many(objs, names))
        client.flushdb()
        mem0 = client.info("memory")["used_memory"]

        def store():
            for i in range(0, len(objs), BATCH):
                p = client.pipeline(transaction=False)
                for k, v in zip(names[i : i + BATCH], sealed[i : i + BATCH]):
                    p.set(k, v)
                p.execute()

        _, t_store = timed(store)
        mem = client.info("memory")["used_memory"] - mem0

        def load():
            out = []
            for i in range(0, len(objs), BATCH):
                out.extend(client.mget(names[i : i + BATCH]))
            return out

        loaded, t_load = timed(load)
        opened, t_open = timed(lambda: opener.open_many(loaded, names))
        assert opened == objs, label
        size_in = sum(map(len, objs))
        size_out = sum(map(len, sealed))
        rows.append(
            {
                "codec": label,
                "hash": t_hash,
                "compress": max(t_seal - t_enc, 0.0) if compress != "none" else 0.0,
                "encrypt": t_enc if compress != "none" else t_seal,
                "store": t_store,
                "load": t_load,
                "decrypt": t_dec if compress != "none" else t_open,
                "decompress": max(t_open - t_dec, 0.0) if compress != "none" else 0.0,
                "bytes": size_out,
                "ratio": size_out / size_in,
                "redis_mem": mem,
                "grew": sum(1 for s in sealed if s[1] & 3 == 0) / len(sealed)
                if compress != "none"
                else 0.0,
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    corpus = os.environ.get("ZSEAL_CORPUS", "/tmp/zseal-corpus")
    ap.add_argument("--corpus", default=os.path.join(corpus, "records-200.ndjson"))
    ap.add_argument("--objects", type=int, default=1_000_000)
    ap.add_argument("--url", help="a Redis to use (default: start one)")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    objs, train = objects(a.corpus, a.objects, 200_000)
    dictionary = zseal.Dictionary.train(train, size=64 * 1024)
    tmp = None
    proc = None
    if a.url:
        client = redis.Redis.from_url(a.url)
    else:
        server = shutil.which("redis-server") or "/usr/bin/redis-server"
        tmp = tempfile.mkdtemp()
        sock = os.path.join(tmp, "redis.sock")
        proc = subprocess.Popen(
            [server, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no",
             "--dir", tmp],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis(unix_socket_path=sock)
        for _ in range(100):
            try:
                client.ping()
                break
            except (redis.ConnectionError, FileNotFoundError):
                time.sleep(0.05)
    try:
        rows = run(client, objs, dictionary)
    finally:
        if proc:
            proc.terminate()
            proc.wait()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    cpu = platform.processor() or platform.machine()
    print(
        f"{len(objs):,} objects of 200 bytes from {a.corpus}; dictionary {len(dictionary)} bytes "
        f"trained on 200,000 others; {cpu}, {os.cpu_count()} cores; one Python thread; seconds"
    )
    cols = ["codec", "hash", "compress", "encrypt", "store", "load", "decrypt", "decompress",
            "stored MB", "out/in", "redis MB", "stored raw"]
    if a.markdown:
        print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    else:
        print("  ".join(f"{c:>10}" for c in cols))
    for r in rows:
        cells = [r["codec"]] + [f"{r[k]:.2f}" for k in
                                ("hash", "compress", "encrypt", "store", "load", "decrypt",
                                 "decompress")]
        cells += [f"{r['bytes'] / 1e6:.1f}", f"{r['ratio']:.3f}", f"{r['redis_mem'] / 1e6:.1f}",
                  f"{100 * r['grew']:.1f}%"]
        if a.markdown:
            print("| " + " | ".join(cells) + " |")
        else:
            print("  ".join(f"{c:>10}" for c in cells))


if __name__ == "__main__":
    main()
