"""Sealed records from Python (docs/FORMAT.md §9): RecordKey, Dictionary, RecordSealer,
RecordOpener; interoperation with the command line; batches without the GIL; and 100,000
records stored in and read back from a real Redis (redis-server started here on a unix socket)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import zseal

from conftest import ROOT, peer

sys.path.insert(0, str(ROOT / "python" / "examples"))
import redis_records  # noqa: E402  (the example this file tests)

VALUES = redis_records.sample_values(3000, seed=3)


@pytest.fixture(scope="module")
def dictionary() -> zseal.Dictionary:
    return zseal.Dictionary.train(VALUES[:2000], size=8192)


@pytest.mark.parametrize("compress", ["none", "lz4", "zstd:3", "zstd:19"])
@pytest.mark.parametrize("cipher", ["aes-256-gcm-siv", "xchacha20-poly1305"])
def test_round_trip_and_context_binding(compress: str, cipher: str) -> None:
    key = zseal.RecordKey.generate()
    sealer = zseal.RecordSealer(key, compress=compress, cipher=cipher)
    assert sealer.cipher == cipher
    opener = zseal.RecordOpener(key)
    for value in [b"", b"x", VALUES[0], VALUES[1] * 40, os.urandom(300)]:
        for ctx in ["user:1", b"user:1", bytearray(b"user:1")]:
            sealed = sealer.seal(value, ctx)
            assert opener.open(sealed, "user:1") == value
            assert opener.open(sealed, b"user:1") == value
            with pytest.raises(zseal.IntegrityError) as e:
                opener.open(sealed, "user:2")
            assert e.value.kind == "record auth"
    # Random data is stored raw: exactly the overhead more.
    raw = os.urandom(200)
    overhead = 30 if cipher == "aes-256-gcm-siv" else 42
    assert len(sealer.seal(raw)) == 200 + overhead


def test_seal_many_open_many_and_their_errors(dictionary: zseal.Dictionary) -> None:
    key = zseal.RecordKey.generate()
    sealer = zseal.RecordSealer(key, dictionary=dictionary)
    opener = zseal.RecordOpener(key, dictionaries=[dictionary])
    keys = [f"k{i}" for i in range(len(VALUES))]
    sealed = sealer.seal_many(VALUES, contexts=keys)
    assert opener.open_many(sealed, contexts=keys) == VALUES
    assert [opener.open(s, k) for s, k in zip(sealed[:50], keys)] == VALUES[:50]
    assert len(set(sealed)) == len(sealed)
    # Well below the input with every overhead counted (records not used for training).
    tail_in = sum(map(len, VALUES[2000:]))
    tail_out = sum(map(len, sealed[2000:]))
    assert tail_out < 0.8 * tail_in, (tail_out, tail_in)
    with pytest.raises(zseal.OptionError):
        sealer.seal_many(VALUES[:3], contexts=keys[:2])
    with pytest.raises(zseal.OptionError, match="0 contexts for 3 records"):
        sealer.seal_many(VALUES[:3], contexts=[])
    with pytest.raises(zseal.OptionError):
        opener.open_many(sealed[:3], contexts=keys[:4])
    assert sealer.seal_many([], contexts=[]) == []
    # One bad record in a batch: an exception naming it, no partial result.
    bad = list(sealed[:10])
    bad[7] = bad[7][:-1] + bytes([bad[7][-1] ^ 1])
    with pytest.raises(zseal.IntegrityError, match="record 7"):
        opener.open_many(bad, contexts=keys[:10])
    with pytest.raises(zseal.MissingDictionaryError, match=str(dictionary.id)):
        zseal.RecordOpener(key).open(sealed[0], keys[0])
    with pytest.raises(zseal.NotZsealError):
        opener.open(b"\x02" + sealed[0][1:], keys[0])
    with pytest.raises(zseal.NotZsealError):
        opener.open(b"", keys[0])
    with pytest.raises(zseal.IntegrityError):
        zseal.RecordOpener(zseal.RecordKey.generate(), dictionaries=[dictionary]).open(
            sealed[0], keys[0]
        )
    with pytest.raises(zseal.OptionError):
        zseal.RecordSealer(key, compress="gzip")
    with pytest.raises(zseal.OptionError):
        zseal.RecordSealer(key, cipher="rot13")
    with pytest.raises(zseal.OptionError):
        zseal.Dictionary(b"not a dictionary")
    with pytest.raises(ValueError):
        zseal.RecordKey.from_bytes(b"short")


def test_seal_many_releases_the_gil() -> None:
    """While a large batch is sealed, another Python thread keeps running."""
    sealer = zseal.RecordSealer(zseal.RecordKey.generate())
    batch = VALUES * 60  # 180,000 records: well over 100 ms of work
    ticks_during = 0
    running = threading.Event()
    done = threading.Event()

    def counter() -> None:
        nonlocal ticks_during
        while not done.is_set():
            if running.is_set():
                ticks_during += 1
            time.sleep(0)

    t = threading.Thread(target=counter)
    t.start()
    running.set()
    start = time.perf_counter()
    sealer.seal_many(batch)
    elapsed = time.perf_counter() - start
    running.clear()
    done.set()
    t.join()
    assert elapsed > 0.05, "the batch was too small to tell"
    assert ticks_during > 10, ticks_during


def test_record_keys_travel_as_containers_between_python_and_the_command_line(
    tmp_path: Path, keys: tuple[str, str], zseal_bin: str
) -> None:
    identity, recipient = keys
    # Made by the command line, opened in Python.
    cli_key = tmp_path / "cli.key.zseal"
    subprocess.run(
        [zseal_bin, "keygen", "--record-key", "-r", recipient, "-o", str(cli_key)], check=True
    )
    k1 = zseal.RecordKey.load(str(cli_key), identity=identity)
    text = subprocess.run(
        [zseal_bin, "decrypt", "-i", identity, str(cli_key)], check=True, capture_output=True
    ).stdout
    assert text == b"zseal-record-key-v1 " + k1.to_bytes().hex().encode() + b"\n"
    # Made in Python, opened by the command line; with a passphrase too.
    k2 = zseal.RecordKey.generate()
    py_key = tmp_path / "py.key.zseal"
    k2.save(str(py_key), recipients=[recipient])
    text = subprocess.run(
        [zseal_bin, "decrypt", "-i", identity, str(py_key)], check=True, capture_output=True
    ).stdout
    assert text == b"zseal-record-key-v1 " + k2.to_bytes().hex().encode() + b"\n"
    with pytest.raises(zseal.ZsealFileExistsError):
        k2.save(str(py_key), recipients=[recipient])
    k2.save(str(py_key), passphrase="a record key passphrase", overwrite=True)
    k3 = zseal.RecordKey.load(str(py_key), passphrase="a record key passphrase")
    assert k3.to_bytes() == k2.to_bytes()
    with pytest.raises(zseal.WrongKeyError):
        zseal.RecordKey.load(str(py_key), passphrase="wrong")
    # An ordinary container is not a record key.
    other = tmp_path / "other.zseal"
    zseal.encrypt_file(str(ROOT / "fixtures" / "sample.log"), str(other), recipients=[recipient])
    with pytest.raises(zseal.OptionError, match="not a zseal record key"):
        zseal.RecordKey.load(str(other), identity=identity)
    # Records sealed under the CLI's key open under the same key loaded twice.
    sealed = zseal.RecordSealer(k1).seal(b"value", "k")
    again = zseal.RecordKey.load(str(cli_key), identity=identity)
    assert zseal.RecordOpener(again).open(sealed, "k") == b"value"


def test_dictionaries_from_the_command_line_work_in_python(tmp_path: Path, zseal_bin: str) -> None:
    samples = tmp_path / "samples.ndjson"
    samples.write_bytes(b"\n".join(VALUES[:2000]) + b"\n")
    dict_path = tmp_path / "d.dict"
    subprocess.run(
        [zseal_bin, "dict", "train", str(samples), "-o", str(dict_path), "--size", "8K"],
        check=True,
        capture_output=True,
    )
    d = zseal.Dictionary(dict_path.read_bytes())
    assert len(d) <= 8192 and d.id > 0
    py = zseal.Dictionary.train(VALUES[:2000], size=8192)
    assert py.to_bytes() == d.to_bytes(), "the same trainer on the same samples"
    key = zseal.RecordKey.generate()
    sealed = zseal.RecordSealer(key, dictionary=d).seal(VALUES[2500], "x")
    assert zseal.RecordOpener(key, dictionaries=[py]).open(sealed, "x") == VALUES[2500]


# ---- Redis ----


@pytest.fixture(scope="module")
def redis_client(tmp_path_factory: pytest.TempPathFactory):
    server = peer("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (scripts/test-all installs it as root)")
    redis = pytest.importorskip("redis")
    d = tmp_path_factory.mktemp("redis")
    sock = d / "redis.sock"
    proc = subprocess.Popen(
        [server, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
         "--save", "", "--appendonly", "no", "--dir", str(d)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    client = redis.Redis(unix_socket_path=str(sock))
    for _ in range(200):
        try:
            if client.ping():
                break
        except (redis.ConnectionError, FileNotFoundError):
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("redis-server did not start")
    yield client
    client.close()
    proc.terminate()
    proc.wait(10)


def test_100k_records_stored_in_redis_and_read_back(redis_client) -> None:
    n = 100_000
    values = redis_records.sample_values(n, seed=11)
    dictionary = zseal.Dictionary.train(values[:10_000], size=16 * 1024)
    key = zseal.RecordKey.generate()
    sealer = zseal.RecordSealer(key, dictionary=dictionary)
    opener = zseal.RecordOpener(key, dictionaries=[dictionary])
    keys = [f"user:{i}" for i in range(n)]
    stored = redis_records.store(redis_client, sealer, keys, values)
    assert redis_client.dbsize() == n
    assert sum(redis_client.strlen(k) for k in keys[:1000]) == sum(
        len(s) for s in redis_client.mget(keys[:1000])
    )
    back = redis_records.load(redis_client, opener, keys)
    assert back == values
    size = sum(map(len, values))
    assert stored < 0.8 * size, (stored, size)
    # A value moved under another key does not open; nor does a damaged one.
    redis_client.set("user:1", redis_client.get("user:2"))
    with pytest.raises(zseal.IntegrityError, match="record 1"):
        redis_records.load(redis_client, opener, keys[:10])
    v = bytearray(redis_client.get("user:3"))
    v[-1] ^= 1
    redis_client.set("user:3", bytes(v))
    with pytest.raises(zseal.IntegrityError):
        opener.open(redis_client.get("user:3"), "user:3")
    redis_client.delete("user:5")
    with pytest.raises(KeyError):
        redis_records.load(redis_client, opener, keys[4:6])
