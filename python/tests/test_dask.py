"""Dask splits ONE container into many partitions that run in separate worker processes
(distributed LocalCluster with processes), locally and over S3, and gets what pandas gets on the
plaintext."""

from __future__ import annotations

import io
import os

import dask
import dask.bag as db
import dask.dataframe as dd
import pandas as pd
import pytest
from distributed import Client, LocalCluster

import zseal
from conftest import csv_text


@pytest.fixture(scope="module")
def client():
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, Client(cluster) as c:
        c.wait_for_workers(2)
        yield c


def assert_same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Equal values and numeric dtypes; text columns compared as text (Dask reads strings as
    pyarrow strings with NA, pandas 3 as its default str dtype with NaN)."""
    got = got.reset_index(drop=True)
    assert list(got.columns) == list(want.columns)
    for c in want.columns:
        if pd.api.types.is_string_dtype(want[c]):
            assert got[c].isna().tolist() == want[c].isna().tolist(), c
            assert got[c].dropna().astype(str).tolist() == want[c].dropna().astype(str).tolist(), c
        else:
            pd.testing.assert_series_equal(got[c], want[c])


def partition_pids(ddf) -> set[int]:
    return set(ddf.map_partitions(lambda p: pd.Series([os.getpid()])).compute().tolist())


def test_read_csv_splits_one_container_across_worker_processes(tmp_path, keys, client):
    identity, recipient = keys
    data = csv_text(120_000, seed=21)  # about 3.7 MB
    (tmp_path / "d.csv").write_bytes(data)
    zseal.encrypt_file(tmp_path / "d.csv", tmp_path / "d.csv.zseal", recipients=[recipient], chunk_size=65536)
    opts = {"zseal": {"identity": identity}}
    ddf = dd.read_csv(f"zseal::file://{tmp_path}/d.csv.zseal", blocksize=256_000, storage_options=opts)
    assert ddf.npartitions >= 10
    assert_same(ddf.compute(), pd.read_csv(tmp_path / "d.csv"))
    workers = set(client.run(os.getpid).values())
    pids = partition_pids(ddf)
    assert pids <= workers and os.getpid() not in pids, "partitions ran in the worker processes"
    print(f"\n{ddf.npartitions} partitions over worker processes {sorted(pids)}")


def test_read_text_and_a_passphrase_reach_the_workers(tmp_path, keys, client):
    lines = [f"line {i} {'x' * (i % 50)}\n" for i in range(50_000)]
    data = "".join(lines).encode()
    with zseal.open(tmp_path / "t.zseal", "wb", passphrase="dask workers share this", chunk_size=16384) as f:
        f.write(data)
    bag = db.read_text(
        f"zseal::file://{tmp_path}/t.zseal",
        blocksize=100_000,
        storage_options={"zseal": {"passphrase": "dask workers share this"}},
    )
    assert bag.npartitions >= 10
    assert bag.compute() == lines
    assert bag.count().compute() == 50_000


def test_dask_over_s3(tmp_path, keys, client, s3, s3_options):
    identity, recipient = keys
    data = csv_text(80_000, seed=22)
    sink = io.BytesIO()
    with zseal.open(sink, "wb", recipients=[recipient], chunk_size=65536) as f:
        f.write(data)
    s3.pipe("zseal-test/dask.csv.zseal", sink.getvalue())
    ddf = dd.read_csv(
        "zseal::s3://zseal-test/dask.csv.zseal",
        blocksize=500_000,
        storage_options={"zseal": {"identity": identity}, "s3": s3_options},
    )
    assert ddf.npartitions >= 4
    want = pd.read_csv(io.BytesIO(data))
    assert_same(ddf.compute(), want)
    assert ddf.value.sum().compute() == want.value.sum()


def test_a_damaged_container_fails_the_dask_job(tmp_path, keys, client):
    identity, recipient = keys
    data = csv_text(40_000, seed=23)
    (tmp_path / "d.csv").write_bytes(data)
    zseal.encrypt_file(tmp_path / "d.csv", tmp_path / "d.csv.zseal", recipients=[recipient], chunk_size=65536)
    blob = bytearray((tmp_path / "d.csv.zseal").read_bytes())
    blob[len(blob) // 2] ^= 1
    (tmp_path / "d.csv.zseal").write_bytes(blob)
    ddf = dd.read_csv(f"zseal::file://{tmp_path}/d.csv.zseal", blocksize=200_000, storage_options={"zseal": {"identity": identity}})
    with pytest.raises(zseal.IntegrityError, match="d.csv.zseal") as e:
        ddf.compute()
    assert e.value.kind == "chunk auth", "the kind survives the trip from the worker"
    assert dask.config.get("scheduler", None) in (None, "dask.distributed")


def _b3sum(path) -> str | None:
    from conftest import peer
    import subprocess

    b3 = peer("b3sum")
    if b3 is None:
        return None
    return subprocess.run([b3, "--no-names", str(path)], capture_output=True, check=True, text=True).stdout.strip()


@pytest.mark.parametrize("size", [0, 1, 65536, 65537, 3 * 1024 * 1024 + 12345])
def test_dask_encrypt_seals_one_container_across_worker_processes(tmp_path, keys, client, size):
    """zseal.dask.encrypt: the tasks run in the worker processes, the container decrypts with the
    command, byte for byte and by range, and its digest is b3sum's of the plaintext."""
    import random
    import subprocess
    import zseal.dask

    identity, recipient = keys
    rnd = random.Random(size)
    plain = csv_text(size // 40 + 1, seed=3)[: size // 2] + rnd.randbytes(size - size // 2)
    src, dst = tmp_path / "p.bin", tmp_path / "p.bin.zseal"
    src.write_bytes(plain)
    r = zseal.dask.encrypt(src, dst, recipients=[recipient], chunk_size=65536, tasks=7, client=client)
    assert r.plaintext_size == size and r.stored_size == dst.stat().st_size
    assert r.tasks == max(1, min(7, -(-size // 65536)))
    workers = set(client.scheduler_info()["workers"])
    assert set(r.workers) <= workers, r.workers
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")], "no parts or temporary file left"
    zseal_bin = os.environ.get("ZSEAL_BIN", "zseal")
    out = subprocess.run([zseal_bin, "decrypt", "-i", identity, str(dst)], capture_output=True, check=True)
    assert out.stdout == plain
    if size > 100:
        n = min(70_000, size - 60)
        part = subprocess.run(
            [zseal_bin, "decrypt", "-i", identity, "--range", f"50..+{n}", str(dst)], capture_output=True, check=True
        )
        assert part.stdout == plain[50 : 50 + n]
    assert zseal.verify(dst, identity=identity) == r.blake3
    want = _b3sum(src)
    if want is not None or os.environ.get("ZSEAL_REQUIRE_PEERS"):
        assert r.blake3 == want


def test_dask_encrypt_refuses_what_it_cannot_do_and_leaves_nothing(tmp_path, keys, client):
    import zseal.dask

    identity, recipient = keys
    src, dst = tmp_path / "p.bin", tmp_path / "p.zseal"
    src.write_bytes(b"x" * 200_000)
    dst.write_bytes(b"keep")
    with pytest.raises(zseal.ZsealFileExistsError, match=r"overwrite=True replaces it; -f on the command line"):
        zseal.dask.encrypt(src, dst, recipients=[recipient], client=client)
    assert dst.read_bytes() == b"keep"
    with pytest.raises(zseal.OptionError, match="XXH3 of the whole file cannot be merged"):
        zseal.dask.encrypt(src, tmp_path / "x.zseal", recipients=[recipient], hash="xxh3", client=client)
    # A source that vanished before its tasks ran fails them all: no destination, no parts.
    gone = tmp_path / "gone.bin"
    gone.write_bytes(b"y" * 300_000)
    real = os.path.getsize
    calls = []

    def size_then_remove(p):
        n = real(p)
        if os.fspath(p) == str(gone) and not calls:
            calls.append(p)
            os.unlink(gone)
        return n

    import zseal.dask as zd

    zd.os.path.getsize = size_then_remove
    try:
        with pytest.raises(Exception):
            zseal.dask.encrypt(gone, tmp_path / "g.zseal", recipients=[recipient], chunk_size=65536, client=client)
    finally:
        zd.os.path.getsize = real
    assert not (tmp_path / "g.zseal").exists()
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")], os.listdir(tmp_path)
    # overwrite=True replaces, and the command reads the result (with Dask's progress bar).
    r = zseal.dask.encrypt(src, dst, recipients=[recipient], client=client, overwrite=True, progress=True)
    assert r.plaintext_size == 200_000
    with zseal.open(dst, identity=identity) as f:
        assert f.read() == b"x" * 200_000


@pytest.mark.parametrize("into", ["file", "s3"])
def test_dask_encrypt_survives_a_worker_killed_mid_job(tmp_path, keys, into, request, monkeypatch):
    """A worker process killed while the tasks run: Dask runs its tasks again elsewhere (a task
    rewrites its part file from the start, or uploads its parts again under the same numbers),
    and the container is still exact."""
    import random
    import signal
    import subprocess
    import threading
    import time

    import zseal.dask

    identity, recipient = keys
    plain = random.Random(5).randbytes(96 << 20)
    src = tmp_path / "big.bin"
    src.write_bytes(plain)
    if into == "s3":
        request.getfixturevalue("s3")
        endpoint = request.getfixturevalue("s3_endpoint")
        for k, v in dict(S3_ENV, AWS_ENDPOINT_URL=endpoint).items():
            monkeypatch.setenv(k, v)  # before the cluster starts: its workers inherit them
        import boto3

        s3c = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                           aws_secret_access_key="testing", region_name="us-east-1")
        dst = "s3://zseal-test/killed.zseal"

        def started() -> bool:
            for u in s3c.list_multipart_uploads(Bucket="zseal-test").get("Uploads", []):
                if s3c.list_parts(Bucket="zseal-test", Key=u["Key"], UploadId=u["UploadId"]).get("Parts"):
                    return True
            return False
    else:
        dst = str(tmp_path / "big.zseal")

        def started() -> bool:
            parts = [p for p in tmp_path.iterdir() if p.name.startswith(".big.zseal.parts-")]
            return bool(parts) and any(parts[0].iterdir())

    # A cluster of its own (its workers are killed), beside the module's: any free ports.
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", scheduler_port=0
    ) as cluster, Client(cluster) as c:
        c.wait_for_workers(2)
        pids = c.run(os.getpid)
        killed = []

        def kill_when_a_part_appears():
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not killed:
                if started():
                    pid = sorted(pids.values())[0]
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                time.sleep(0.005)

        t = threading.Thread(target=kill_when_a_part_appears)
        t.start()
        # Tasks of 16 MiB, so that each has a body in S3 (more than 5 MiB + 8 MiB).
        r = zseal.dask.encrypt(src, dst, recipients=[recipient], chunk_size=1 << 20, tasks=6, threads=1, client=c,
                               compress="none", overwrite=True)
        t.join()
    assert killed, "a worker was killed while the tasks ran"
    zseal_bin = os.environ.get("ZSEAL_BIN", "zseal")
    out = subprocess.run([zseal_bin, "decrypt", "-i", identity, str(dst)], capture_output=True, check=True)
    assert out.stdout == plain
    assert r.plaintext_size == len(plain)
    if into == "s3":
        assert not s3c.list_multipart_uploads(Bucket="zseal-test").get("Uploads")
    want = _b3sum(src)
    if want is not None:
        assert r.blake3 == want


def test_python_m_zseal_dask_names_an_unreachable_scheduler(tmp_path, keys):
    import socket
    import subprocess
    import sys

    _, recipient = keys
    src = tmp_path / "p.bin"
    src.write_bytes(b"z" * 1000)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.run(
        [sys.executable, "-m", "zseal.dask", "encrypt", str(src), str(tmp_path / "p.zseal"), "-r", recipient,
         "--scheduler", f"tcp://127.0.0.1:{port}", "--connect-timeout", "2"],
        capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 1, p.stderr
    assert f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in p.stderr, p.stderr
    assert not (tmp_path / "p.zseal").exists()
    # The command line's own run: a local scheduler, and the digest on standard error.
    ok = subprocess.run(
        [sys.executable, "-m", "zseal.dask", "encrypt", str(src), str(tmp_path / "p.zseal"), "-r", recipient],
        capture_output=True, text=True, timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert "sealed 1000 bytes" in ok.stderr and "blake3 " in ok.stderr, ok.stderr
    again = subprocess.run(
        [sys.executable, "-m", "zseal.dask", "encrypt", str(src), str(tmp_path / "p.zseal"), "-r", recipient],
        capture_output=True, text=True, timeout=120,
    )
    assert again.returncode == 1 and "-f on the command line" in again.stderr, again.stderr


def test_python_m_zseal_dask_takes_the_commands_flags_and_refuses_a_dash(tmp_path, keys):
    """Issue 48, points 2 and 8: ``python -m zseal.dask decrypt X -`` made a plaintext file
    named ``-``; its hints named Python's keywords (``overwrite=True``, ``recipients=[…]``,
    ``identity=``); it lacked ``-R``, ``--passphrase-file`` and ``-o``."""
    import subprocess
    import sys

    identity, recipient = keys
    src = tmp_path / "p.bin"
    src.write_bytes(b"y" * 5000)
    (tmp_path / "team.txt").write_text(f"# team\n{recipient}\n")
    run = lambda *args, **kw: subprocess.run([sys.executable, "-m", "zseal.dask", *args], capture_output=True,
                                               text=True, timeout=120, cwd=tmp_path, **kw)
    ok = run("encrypt", str(src), "-o", str(tmp_path / "r.zseal"), "-R", str(tmp_path / "team.txt"))
    assert ok.returncode == 0, ok.stderr
    for args in (("decrypt", str(tmp_path / "r.zseal"), "-", "-i", identity), ("encrypt", "-", "x.zseal", "-r", recipient)):
        bad = run(*args)
        assert bad.returncode == 1 and "'-' (standard input or output) cannot be" in bad.stderr, bad.stderr
    assert not (tmp_path / "-").exists() and not (tmp_path / "x.zseal").exists()
    nokey = run("decrypt", str(tmp_path / "r.zseal"), "-o", str(tmp_path / "back"))
    assert nokey.returncode == 1 and "here: -i FILE, or --passphrase-file FILE" in nokey.stderr, nokey.stderr
    nokey = run("encrypt", str(src), str(tmp_path / "n.zseal"), env={k: v for k, v in os.environ.items()
                                                                     if k != "ZSEAL_PASSPHRASE"})
    assert nokey.returncode == 1 and "give -r RECIPIENT, -R FILE or --passphrase-file FILE" in nokey.stderr
    # A passphrase from --passphrase-file -, both ways.
    pw = run("encrypt", str(src), str(tmp_path / "pw.zseal"), "--passphrase-file", "-", input="correct horse battery\n")
    assert pw.returncode == 0, pw.stderr
    back = run("decrypt", str(tmp_path / "pw.zseal"), "-o", str(tmp_path / "back"), "--passphrase-file", "-",
               input="correct horse battery\n")
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "back").read_bytes() == b"y" * 5000
    both = run("decrypt", str(tmp_path / "pw.zseal"), str(tmp_path / "b2"), "-o", str(tmp_path / "b3"))
    assert both.returncode == 2 and "give the destination once" in both.stderr


S3_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@pytest.fixture
def s3_env(s3, s3_endpoint, client, monkeypatch):
    """The command line's S3 settings, here and in the module's worker processes; a boto3
    client to look at the bucket."""
    import boto3

    env = dict(S3_ENV, AWS_ENDPOINT_URL=s3_endpoint)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_PROFILE", raising=False)
    client.run(lambda: os.environ.update(env))
    yield boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="testing",
                       aws_secret_access_key="testing", region_name="us-east-1")
    client.run(lambda: [os.environ.pop(k, None) for k in env])


def _no_uploads_left(s3c) -> None:
    assert not s3c.list_multipart_uploads(Bucket="zseal-test").get("Uploads"), "no multipart upload left"


MiB = 1 << 20


@pytest.mark.parametrize(
    "name,size,random_share,tasks",
    [
        ("one-chunk", 1000, 0.5, 3),
        # A task's output just under and just over its 5 MiB head: no body, then one byte of body.
        ("under-5m", 5 * MiB - 200, 1.0, 1),
        ("over-5m", 5 * MiB + 8 * MiB + 100, 1.0, 1),
        # Compressible and random halves: both kinds of frame in one 100+ MiB object.
        ("mixed-100m", 100 * MiB + 12345, 0.5, 3),
    ],
)
def test_dask_encrypt_into_one_multipart_upload(tmp_path, keys, client, s3_env, name, size, random_share, tasks):
    """Every task uploads its body under its own part numbers, this process the seams: the
    object is an ordinary container that the command decrypts whole and by range, whose digest
    is b3sum's, with no upload left behind."""
    import random
    import subprocess

    import zseal.dask

    identity, recipient = keys
    rnd = random.Random(size)
    n_random = int(size * random_share)
    text = (csv_text(size // 30 + 10, seed=4) * 2)[: size - n_random]
    plain = text + rnd.randbytes(n_random)
    assert len(plain) == size
    src = tmp_path / "p.bin"
    src.write_bytes(plain)
    url = f"s3://zseal-test/dask-{name}.zseal"
    r = zseal.dask.encrypt(src, url, recipients=[recipient], chunk_size=MiB, tasks=tasks, client=client,
                           overwrite=True, compress="none" if random_share == 1.0 else None)
    assert r.plaintext_size == size and r.tasks == min(tasks, -(-size // MiB))
    head = s3_env.head_object(Bucket="zseal-test", Key=f"dask-{name}.zseal")
    assert head["ContentLength"] == r.stored_size
    _no_uploads_left(s3_env)
    if size > 13 * MiB:
        assert r.parts > r.tasks, "the tasks uploaded bodies"
    zseal_bin = os.environ.get("ZSEAL_BIN", "zseal")
    out = subprocess.run([zseal_bin, "decrypt", "-i", identity, url], capture_output=True, check=True)
    assert out.stdout == plain
    at, n = size // 3, min(1000, size - size // 3)
    part = subprocess.run([zseal_bin, "decrypt", "-i", identity, "--range", f"{at}..+{n}", url],
                          capture_output=True, check=True)
    assert part.stdout == plain[at : at + n]
    want = _b3sum(src)
    if want is not None or os.environ.get("ZSEAL_REQUIRE_PEERS"):
        assert r.blake3 == want
    assert zseal.verify(url, identity=identity) == r.blake3


def test_dask_encrypt_into_an_object_fails_whole(tmp_path, keys, client, s3_env):
    """A task that fails (its source is shorter than planned) aborts the upload: no object, no
    parts; an existing object is kept without overwrite=True; a missing bucket is named."""
    import random

    import zseal.dask as zd

    identity, recipient = keys
    plain = random.Random(9).randbytes(30 * MiB)
    src = tmp_path / "p.bin"
    src.write_bytes(plain)
    real = zd._source
    zd._source = lambda p, settings: (real(p, settings)[0] + 3 * MiB, None)
    try:
        with pytest.raises(zseal.ZsealError, match="changed while it was being sealed"):
            zd.encrypt(src, "s3://zseal-test/failed-dask.zseal", recipients=[recipient], chunk_size=MiB,
                       tasks=3, client=client, compress="none")
    finally:
        zd._source = real
    assert "Contents" not in s3_env.list_objects_v2(Bucket="zseal-test", Prefix="failed-dask")
    _no_uploads_left(s3_env)
    s3_env.put_object(Bucket="zseal-test", Key="kept.zseal", Body=b"keep")
    with pytest.raises(zseal.ZsealFileExistsError, match="already exists"):
        zd.encrypt(src, "s3://zseal-test/kept.zseal", recipients=[recipient], client=client)
    assert s3_env.get_object(Bucket="zseal-test", Key="kept.zseal")["Body"].read() == b"keep"
    with pytest.raises(zseal.ZsealError, match="no-such-bucket"):
        zd.encrypt(src, "s3://no-such-bucket/x.zseal", recipients=[recipient], client=client)
    _no_uploads_left(s3_env)
    # An object source is read by range in the tasks.
    s3_env.put_object(Bucket="zseal-test", Key="raw.bin", Body=plain)
    r = zd.encrypt("s3://zseal-test/raw.bin", tmp_path / "from-s3.zseal", recipients=[recipient],
                   chunk_size=MiB, tasks=4, client=client)
    with zseal.open(tmp_path / "from-s3.zseal", identity=identity) as f:
        assert f.read() == plain
    assert r.plaintext_size == len(plain)


@pytest.mark.parametrize("size", [0, 1, 65537, 3 * 1024 * 1024 + 12345])
def test_dask_verify_and_decrypt_open_one_container_in_pieces(tmp_path, keys, client, size):
    """zseal.dask.verify and decrypt: the tasks open their ranges in the worker processes, the
    merged digest is b3sum's, the plaintext is exact, and nothing is left beside it."""
    import random

    import zseal.dask

    identity, recipient = keys
    plain = random.Random(size).randbytes(size)
    src = tmp_path / "p.bin"
    src.write_bytes(plain)
    zseal.encrypt_file(src, tmp_path / "p.zseal", recipients=[recipient], chunk_size=65536)
    r = zseal.dask.verify(tmp_path / "p.zseal", identity=identity, client=client, tasks=5)
    want = _b3sum(src)
    if want is not None or os.environ.get("ZSEAL_REQUIRE_PEERS"):
        assert r.blake3 == want
    assert r.blake3 == zseal.verify(tmp_path / "p.zseal", identity=identity)
    assert (r.plaintext_size, r.stored_size) == (size, (tmp_path / "p.zseal").stat().st_size)
    assert r.tasks == max(1, min(5, -(-size // 65536)))
    assert set(r.workers) <= set(client.scheduler_info()["workers"])
    out = tmp_path / "out.bin"
    d = zseal.dask.decrypt(tmp_path / "p.zseal", out, identity=identity, client=client, tasks=5)
    assert out.read_bytes() == plain and d.blake3 == r.blake3
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")], "no temporary file left"
    with pytest.raises(zseal.ZsealFileExistsError, match="overwrite=True"):
        zseal.dask.decrypt(tmp_path / "p.zseal", out, identity=identity, client=client)


def test_dask_verify_and_decrypt_fail_whole_on_damage_and_wrong_keys(tmp_path, keys, client):
    """A flipped byte in any frame fails the job with IntegrityError and writes nothing; a
    wrong key fails before any task runs; a passphrase file needs its passphrase."""
    import random

    import zseal.dask

    identity, recipient = keys
    plain = random.Random(3).randbytes(600_000)
    src = tmp_path / "p.bin"
    src.write_bytes(plain)
    zseal.encrypt_file(src, tmp_path / "good.zseal", recipients=[recipient], chunk_size=65536)
    good = (tmp_path / "good.zseal").read_bytes()
    for at in [len(good) // 3, len(good) // 2, len(good) - 200, len(good) - 3]:
        bad = bytearray(good)
        bad[at] ^= 0x10
        (tmp_path / "bad.zseal").write_bytes(bytes(bad))
        with pytest.raises(zseal.ZsealError):
            zseal.dask.verify(tmp_path / "bad.zseal", identity=identity, client=client, tasks=4)
        with pytest.raises(zseal.ZsealError):
            zseal.dask.decrypt(tmp_path / "bad.zseal", tmp_path / "out", identity=identity, client=client, tasks=4)
        assert not (tmp_path / "out").exists()
        assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]
    other = tmp_path / "other.key"
    zseal.keygen(other)
    with pytest.raises(zseal.WrongKeyError):
        zseal.dask.decrypt(tmp_path / "good.zseal", tmp_path / "out", identity=other, client=client)
    assert not (tmp_path / "out").exists()
    with zseal.open(tmp_path / "pw.zseal", "wb", passphrase="a dask passphrase") as f:
        f.write(plain)
    with pytest.raises(zseal.MissingKeyError, match="passphrase="):
        zseal.dask.verify(tmp_path / "pw.zseal", client=client)
    r = zseal.dask.verify(tmp_path / "pw.zseal", passphrase="a dask passphrase", client=client, tasks=3)
    assert r.plaintext_size == len(plain)


def test_dask_decrypt_into_one_multipart_upload(tmp_path, keys, client, s3_env):
    """A container in S3 verified and decrypted by the cluster into one object whose parts are
    numbered by offset; into a local file too; a damaged container leaves no object and no
    upload; an existing object is kept."""
    import random
    import subprocess
    import sys

    import zseal.dask

    identity, recipient = keys
    plain = random.Random(8).randbytes(30 * MiB + 77)
    src = tmp_path / "p.bin"
    src.write_bytes(plain)
    url = "s3://zseal-test/dask-open.zseal"
    zseal.dask.encrypt(src, url, recipients=[recipient], chunk_size=MiB, tasks=3, client=client,
                       overwrite=True, compress="none")
    v = zseal.dask.verify(url, identity=identity, client=client, tasks=3)
    assert v.blake3 == zseal.verify(url, identity=identity)
    d = zseal.dask.decrypt(url, "s3://zseal-test/dask-open.bin", identity=identity, client=client, tasks=3,
                           overwrite=True)
    got = s3_env.get_object(Bucket="zseal-test", Key="dask-open.bin")["Body"].read()
    assert got == plain and d.parts == 4 and d.blake3 == v.blake3  # parts of 8 MiB
    _no_uploads_left(s3_env)
    zseal.dask.decrypt(url, tmp_path / "local.bin", identity=identity, client=client, tasks=3)
    assert (tmp_path / "local.bin").read_bytes() == plain
    with pytest.raises(zseal.ZsealFileExistsError):
        zseal.dask.decrypt(url, "s3://zseal-test/dask-open.bin", identity=identity, client=client)
    # A damaged frame in the middle: no object, no parts.
    body = bytearray(s3_env.get_object(Bucket="zseal-test", Key="dask-open.zseal")["Body"].read())
    body[len(body) // 2] ^= 1
    s3_env.put_object(Bucket="zseal-test", Key="damaged.zseal", Body=bytes(body))
    with pytest.raises(zseal.IntegrityError):
        zseal.dask.decrypt("s3://zseal-test/damaged.zseal", "s3://zseal-test/damaged.bin", identity=identity,
                           client=client, tasks=3)
    assert "Contents" not in s3_env.list_objects_v2(Bucket="zseal-test", Prefix="damaged.bin")
    _no_uploads_left(s3_env)
    # The shell's entry point, with the local scheduler.
    p = subprocess.run([sys.executable, "-m", "zseal.dask", "verify", url, "-i", identity, "--tasks", "2"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and v.blake3 in p.stderr, p.stderr
    p = subprocess.run([sys.executable, "-m", "zseal.dask", "verify", "s3://zseal-test/damaged.zseal",
                        "-i", identity], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and p.stderr.startswith("zseal: error:") and len(p.stderr.splitlines()) == 1, p.stderr


def test_dask_storage_options_carry_the_credentials(tmp_path, keys, client, s3, s3_endpoint, monkeypatch):
    """With no AWS settings in the environment of this process or of the workers, fsspec-style
    storage_options reach the coordinator and every task; a name no store knows is refused."""
    import random

    import zseal.dask

    identity, recipient = keys
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_PROFILE",
              "AWS_DEFAULT_PROFILE", "AWS_REGION"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    creds = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL")
    seen = client.run(lambda: [k for k in creds if k in os.environ])
    assert not any(seen.values()), seen
    opts = {"key": "testing", "secret": "testing", "endpoint_url": s3_endpoint,
            "client_kwargs": {"region_name": "us-east-1"}}
    plain = random.Random(4).randbytes(15 * MiB + 5)
    (tmp_path / "p.bin").write_bytes(plain)
    url = "s3://zseal-test/with-options.zseal"
    r = zseal.dask.encrypt(tmp_path / "p.bin", url, recipients=[recipient], chunk_size=MiB, tasks=2,
                           client=client, overwrite=True, compress="none", storage_options=opts)
    v = zseal.dask.verify(url, identity=identity, client=client, tasks=3, storage_options=opts)
    assert v.blake3 == r.blake3 and v.stored_size == r.stored_size
    zseal.dask.decrypt(url, tmp_path / "out.bin", identity=identity, client=client, storage_options=opts)
    assert (tmp_path / "out.bin").read_bytes() == plain
    with pytest.raises(zseal.ZsealError, match="'no_such_setting' is not a setting"):
        zseal.dask.verify(url, identity=identity, client=client, storage_options=dict(opts, no_such_setting="1"))
    with pytest.raises(zseal.OptionError, match="one kind of store"):
        zseal.dask.decrypt(url, "gs://bucket/x", identity=identity, client=client, storage_options=opts)


@pytest.mark.parametrize("job", ["encrypt", "decrypt"])
def test_an_interrupt_aborts_the_upload(tmp_path, keys, client, s3_env, monkeypatch, job):
    """Ctrl-C (KeyboardInterrupt) in this process while the tasks upload their parts: the
    tasks are cancelled, the upload aborted and aborted again once the tasks that were running
    ended, so no object and no parts are left."""
    import random
    import time

    import distributed

    import zseal.dask

    identity, recipient = keys
    plain = random.Random(11).randbytes(60 * MiB)
    src = tmp_path / "p.bin"
    src.write_bytes(plain)
    if job == "decrypt":
        zseal.dask.encrypt(src, "s3://zseal-test/to-interrupt.zseal", recipients=[recipient], chunk_size=MiB,
                           tasks=2, client=client, overwrite=True, compress="none")
    real_gather = distributed.Client.gather

    def interrupted(self, futures, *a, **k):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for u in s3_env.list_multipart_uploads(Bucket="zseal-test").get("Uploads", []):
                if s3_env.list_parts(Bucket="zseal-test", Key=u["Key"], UploadId=u["UploadId"]).get("Parts"):
                    raise KeyboardInterrupt
            time.sleep(0.01)
        return real_gather(self, futures, *a, **k)

    monkeypatch.setattr(distributed.Client, "gather", interrupted)
    with pytest.raises(KeyboardInterrupt):
        if job == "encrypt":
            # Tasks of 30 MiB: each uploads body parts while the job runs.
            zseal.dask.encrypt(src, f"s3://zseal-test/interrupted-{job}", recipients=[recipient], chunk_size=MiB,
                               tasks=2, threads=1, client=client, compress="none")
        else:
            zseal.dask.decrypt("s3://zseal-test/to-interrupt.zseal", f"s3://zseal-test/interrupted-{job}",
                               identity=identity, tasks=3, threads=1, client=client)
    monkeypatch.setattr(distributed.Client, "gather", real_gather)
    assert "Contents" not in s3_env.list_objects_v2(Bucket="zseal-test", Prefix=f"interrupted-{job}")
    _no_uploads_left(s3_env)


def _between_tasks(monkeypatch, zd, then) -> list:
    """Makes every job run its first task, then ``then(args)``, then its other tasks (a
    deterministic moment inside a job: after the planning and one task, before the rest);
    returns the list the jobs' task arguments are appended to."""
    real, seen = zd._run, []

    def run(client, fn, args, name, progress, stop=None):
        seen.extend(args)
        first = real(client, fn, args[:1], f"{name}-first", progress, stop)
        then(args)
        return first + real(client, fn, args[1:], f"{name}-rest", progress, stop)

    monkeypatch.setattr(zd, "_run", run)
    return seen


@pytest.mark.parametrize("into", ["file", "s3"])
def test_dask_encrypt_of_an_object_replaced_during_the_job_fails(tmp_path, keys, client, s3_env, monkeypatch,
                                                                 into):
    """Regression (review finding 4): each task HEADed the source and read whatever version it
    found, so an object replaced after the first task sealed the old version's first range and
    the new one's others under a valid digest. Every task now reads the coordinator's ETag
    (If-Match): the job fails naming the change, and leaves no destination and no upload."""
    import random

    import zseal.dask as zd

    _, recipient = keys
    old, new = random.Random(1).randbytes(3 * MiB), random.Random(2).randbytes(3 * MiB)
    s3_env.put_object(Bucket="zseal-test", Key="replaced.bin", Body=old)
    _between_tasks(monkeypatch, zd, lambda args: s3_env.put_object(Bucket="zseal-test", Key="replaced.bin", Body=new))
    dst = str(tmp_path / "out.zseal") if into == "file" else "s3://zseal-test/replaced-out.zseal"
    with pytest.raises(zseal.ZsealError, match=r"s3://zseal-test/replaced.bin: the source changed during the job "
                                               r"\(ETag .+, now .+\): run the job again"):
        zd.encrypt("s3://zseal-test/replaced.bin", dst, recipients=[recipient], chunk_size=MiB, tasks=3,
                   client=client, compress="none")
    assert not os.listdir(tmp_path), "no destination, part or temporary file"
    assert "Contents" not in s3_env.list_objects_v2(Bucket="zseal-test", Prefix="replaced-out")
    _no_uploads_left(s3_env)


@pytest.mark.parametrize("job", ["verify", "decrypt"])
def test_dask_open_of_an_object_replaced_during_the_job_fails(tmp_path, keys, client, s3_env, monkeypatch, job):
    """The same for a container read by verify and decrypt: a task reads the version the
    coordinator unwrapped the key of, or fails naming the change (before, a replaced container
    failed as damage, or a re-upload of other frames under the same key passed)."""
    import random

    import zseal.dask as zd

    identity, recipient = keys
    plain = random.Random(3).randbytes(3 * MiB)
    sealed = []
    for _ in range(2):
        sink = io.BytesIO()
        with zseal.open(sink, "wb", recipients=[recipient], chunk_size=MiB, compress="none") as f:
            f.write(plain)
        sealed.append(sink.getvalue())
    s3_env.put_object(Bucket="zseal-test", Key="replaced.zseal", Body=sealed[0])
    _between_tasks(monkeypatch, zd,
                   lambda args: s3_env.put_object(Bucket="zseal-test", Key="replaced.zseal", Body=sealed[1]))
    with pytest.raises(zseal.ZsealError, match="the source changed during the job"):
        if job == "verify":
            zd.verify("s3://zseal-test/replaced.zseal", identity=identity, client=client, tasks=3)
        else:
            # Into a file: 3 ranges of 1 MiB (into an object, one task would take parts of 8 MiB).
            zd.decrypt("s3://zseal-test/replaced.zseal", tmp_path / "plain", identity=identity, client=client,
                       tasks=3)
    assert not os.listdir(tmp_path), "no destination or temporary file"


def test_dask_encrypt_refuses_a_part_file_that_does_not_hold_its_task_output(tmp_path, keys, client, monkeypatch):
    """Regression (review finding 4): the part files were joined as they were found, so one cut
    short after its task ended (by an earlier attempt of a rescheduled task) made a broken
    container. Each is now measured against its task's result first: the job fails naming it,
    and leaves nothing."""
    import random

    import zseal.dask as zd

    _, recipient = keys
    src = tmp_path / "p.bin"
    src.write_bytes(random.Random(6).randbytes(3 * MiB))
    real = zd._run

    def cut_the_second_part(client, fn, args, name, progress, stop=None):
        done = real(client, fn, args, name, progress, stop)
        part = next(a for a in args[1] if isinstance(a, str) and ".parts-" in a)
        os.truncate(part, os.path.getsize(part) - 100)
        return done

    monkeypatch.setattr(zd, "_run", cut_the_second_part)
    with pytest.raises(zseal.ZsealIOError, match=r"000001: the part file holds \d+ bytes, and its task sealed \d+"):
        zd.encrypt(src, tmp_path / "p.zseal", recipients=[recipient], chunk_size=MiB, tasks=3, client=client,
                   compress="none")
    assert sorted(os.listdir(tmp_path)) == ["p.bin"], "no destination, part or temporary file"


def test_dask_task_arguments_and_logs_hold_no_key(tmp_path, keys, client, s3_env, s3_endpoint, monkeypatch):
    """Regression (review finding 4): the payload key travelled as bytes, and Dask logs a failing
    task's arguments (distributed's "Compute Failed"), so the key reached the workers' logs. It
    now travels wrapped, and so do the store's settings: the repr and str of every task's
    arguments hold fixed texts, the wrapper still pickles with its value, and the log of a
    failed task names neither the key nor the secret."""
    import base64
    import pickle
    import random

    import zseal.dask as zd

    identity, recipient = keys
    plain = random.Random(7).randbytes(2 * MiB)
    s3_env.put_object(Bucket="zseal-test", Key="logged.bin", Body=plain)
    seen = _between_tasks(monkeypatch, zd,
                          lambda args: s3_env.put_object(Bucket="zseal-test", Key="logged.bin", Body=plain[::-1]))
    secret = "not-to-be-logged-" + random.Random().randbytes(8).hex()
    opts = {"key": "testing", "secret": secret, "endpoint_url": s3_endpoint, "region": "us-east-1"}
    with pytest.raises(zseal.ZsealError, match="changed during the job"):
        zd.encrypt("s3://zseal-test/logged.bin", tmp_path / "out.zseal", recipients=[recipient], chunk_size=MiB,
                   tasks=2, client=client, compress="none", storage_options=opts)
    (tmp_path / "p.bin").write_bytes(plain)
    zseal.encrypt_file(tmp_path / "p.bin", tmp_path / "p.zseal", recipients=[recipient], chunk_size=MiB)
    zd.verify(tmp_path / "p.zseal", identity=identity, client=client, tasks=2)
    assert len(seen) == 4, "two tasks of each job"
    logs = "\n".join(m for w in client.get_worker_logs().values() for _, m in w)
    # distributed 2026.8 logs "_seal_task(...)": a task's arguments are elided when a long key
    # leaves under 6 characters an argument, so only a shorter task name or a later version
    # would print them. Their reprs are checked below whatever it prints.
    assert "Compute Failed" in logs, logs[-3000:]
    assert secret not in logs
    for args in seen:
        key = args[0].reveal()
        assert pickle.loads(pickle.dumps(args[0])).reveal() == key, "a task gets its key"
        assert len(key) > 32
        for text in (repr(args), str(args), logs):
            for form in (key.hex(), base64.b64encode(key).decode(), repr(key)[2:-1], repr(key[-32:])[2:-1]):
                assert form not in text
            assert "zsTASK" not in text and secret not in text
        assert repr(args[0]) in ("<zseal task key>", "<zseal open key>") and str(args[0]) == repr(args[0])
        assert repr(args[-1]) == "<zseal store settings>"


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_published_file_is_synced_into_its_directory(tmp_path, monkeypatch, overwrite):
    """The finished file's new name is made durable: its directory is synced after the rename
    or link (as the command line's output is), and nothing is left beside it."""
    import stat
    import zseal.dask as zd

    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append((os.fstat(fd).st_ino, stat.S_ISDIR(os.fstat(fd).st_mode)))
        real(fd)

    monkeypatch.setattr(zd.os, "fsync", fsync)
    tmp, dst = tmp_path / ".out.zseal-x", tmp_path / "out"
    tmp.write_bytes(b"sealed")
    if overwrite:
        dst.write_bytes(b"old")
    zd._publish(str(tmp), str(dst), overwrite)
    assert dst.read_bytes() == b"sealed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert synced == [(os.stat(tmp_path).st_ino, True)]
