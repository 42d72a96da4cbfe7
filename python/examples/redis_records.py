"""Sealed records in Redis: each value sealed on its own under a record key, bound to the Redis
key it is stored under (the context), compressed with a trained zstd dictionary when that makes
it smaller, stored and read back in pipelined batches.

    python python/examples/redis_records.py --socket /tmp/redis.sock   # or --url redis://host:6379
    zseal keygen --record-key -r age1... -o records.key.zseal          # a key to share

The record key here is made on the spot (pass --key FILE --identity ID to use a shared one).
Everything sealed in one batch runs in Rust without the GIL (seal_many / open_many).
"""

from __future__ import annotations

import argparse
import json
import random
from typing import Sequence

import zseal

BATCH = 10_000


def store(client, sealer: zseal.RecordSealer, keys: Sequence[str], values: Sequence[bytes]) -> int:
    """Seals each value bound to its Redis key and SETs it; returns the bytes stored."""
    stored = 0
    for i in range(0, len(keys), BATCH):
        ks = keys[i : i + BATCH]
        sealed = sealer.seal_many(values[i : i + BATCH], contexts=ks)
        pipe = client.pipeline(transaction=False)
        for k, s in zip(ks, sealed):
            pipe.set(k, s)
            stored += len(s)
        pipe.execute()
    return stored


def load(client, opener: zseal.RecordOpener, keys: Sequence[str]) -> list[bytes]:
    """GETs the keys and opens each value under its key; raises if any is missing or fails."""
    out: list[bytes] = []
    for i in range(0, len(keys), BATCH):
        ks = keys[i : i + BATCH]
        sealed = client.mget(ks)
        missing = [k for k, s in zip(ks, sealed) if s is None]
        if missing:
            raise KeyError(f"{len(missing)} keys are missing, e.g. {missing[0]}")
        out.extend(opener.open_many(sealed, contexts=ks))
    return out


def sample_values(n: int, seed: int = 7) -> list[bytes]:
    """JSON documents of about 200 bytes, as a user store holds."""
    rnd = random.Random(seed)
    names = ["ada", "grace", "alan", "edsger", "barbara", "ken", "dennis", "linus"]
    return [
        json.dumps(
            {
                "id": i,
                "user": f"{rnd.choice(names)}{rnd.randrange(1000)}",
                "email": f"{rnd.choice(names)}@example.org",
                "plan": rnd.choice(["free", "team", "enterprise"]),
                "active": rnd.random() < 0.8,
                "balance": round(rnd.uniform(0, 5000), 2),
                "created": f"2026-{rnd.randrange(1, 13):02}-{rnd.randrange(1, 29):02}",
            },
            separators=(",", ":"),
        ).encode()
        for i in range(n)
    ]


def main() -> None:
    import redis

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--socket", help="Redis unix socket")
    ap.add_argument("--url", default="redis://localhost:6379/0")
    ap.add_argument("-n", type=int, default=100_000, help="records (default 100,000)")
    ap.add_argument("--key", help="record key container (zseal keygen --record-key)")
    ap.add_argument("--identity", help="identity that opens --key")
    a = ap.parse_args()
    client = (
        redis.Redis(unix_socket_path=a.socket) if a.socket else redis.Redis.from_url(a.url)
    )
    key = (
        zseal.RecordKey.load(a.key, identity=a.identity) if a.key else zseal.RecordKey.generate()
    )
    values = sample_values(a.n)
    dictionary = zseal.Dictionary.train(values[: a.n // 10 or 1], size=16 * 1024)
    sealer = zseal.RecordSealer(key, dictionary=dictionary)
    opener = zseal.RecordOpener(key, dictionaries=[dictionary])
    keys = [f"user:{i}" for i in range(a.n)]
    stored = store(client, sealer, keys, values)
    back = load(client, opener, keys)
    assert back == values
    size = sum(map(len, values))
    print(f"{a.n} records, {size} bytes, stored as {stored} bytes ({stored / size:.3f})")


if __name__ == "__main__":
    main()
