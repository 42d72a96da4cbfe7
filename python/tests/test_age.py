"""age files made by the real `age` (Debian's) read through the Python package: zseal.open with
seeks and ranges, verify, inspect, the fsspec zseal:: layer with pandas, and the errors."""

from __future__ import annotations

import io
import random
import subprocess
from pathlib import Path

import fsspec
import pandas as pd
import pytest

import zseal
from conftest import csv_text, peer

KiB = 1024


def age_encrypt(tmp_path, recipient: str, data: bytes, name: str, armor: bool = False) -> str:
    age = peer("age")
    if age is None:
        pytest.skip("age is not installed")
    plain = tmp_path / (name + ".plain")
    plain.write_bytes(data)
    out = tmp_path / name
    args = [age, "-r", recipient, "-o", str(out)] + (["-a"] if armor else []) + [str(plain)]
    subprocess.run(args, check=True)
    return str(out)


@pytest.mark.parametrize("armor", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_age_files_read_seek_and_verify(tmp_path, keys, armor, threads):
    identity, recipient = keys
    data = random.Random(7).randbytes(3 * 64 * KiB + 123)
    path = age_encrypt(tmp_path, recipient, data, "r.age", armor)
    with zseal.open(path, "rb", identity=identity, threads=threads) as f:
        assert f.read() == data
    with zseal.open(path, "rb", identity=identity, threads=threads) as f:
        assert f.seekable()
        for start, n in [(0, 1), (64 * KiB - 1, 3), (2 * 64 * KiB + 5, 100), (len(data) - 1, 10), (len(data), 5)]:
            f.seek(start)
            assert f.read(n) == data[start : start + n], (start, n)
        f.seek(-10, io.SEEK_END)
        assert f.read() == data[-10:]
    assert zseal.verify(path, identity=identity) is None  # an age file records no digest
    info = zseal.inspect(path)
    assert (info["format"], info["armored"], info["plaintext_len"]) == ("age", armor, len(data))
    assert info["recipient_kinds"] == ["X25519"]


def test_fsspec_and_pandas_read_an_age_csv(tmp_path, keys):
    identity, recipient = keys
    data = csv_text(20000)
    age_encrypt(tmp_path, recipient, data, "t.csv.age")
    url = f"zseal::file://{tmp_path}/t.csv.age"
    fs, path = fsspec.core.url_to_fs(url, zseal={"identity": identity})
    assert fs.info(path)["size"] == len(data)
    with fsspec.open(url, "rb", zseal={"identity": identity}) as f:
        f.seek(1000)
        assert f.read(500) == data[1000:1500]
    got = pd.read_csv(url, storage_options={"zseal": {"identity": identity}})
    pd.testing.assert_frame_equal(got, pd.read_csv(io.BytesIO(data)))


def test_age_errors_name_what_is_wrong(tmp_path, keys, other_key):
    identity, recipient = keys
    data = random.Random(8).randbytes(200 * KiB)
    path = age_encrypt(tmp_path, recipient, data, "e.age")
    with pytest.raises(zseal.WrongKeyError, match="no identity matched"):
        zseal.open(path, "rb", identity=other_key).read()
    with pytest.raises(zseal.MissingKeyError, match="pass identity="):
        zseal.open(path, "rb", passphrase="secret")
    # A damaged second chunk: the first chunk (64 KiB) comes out, then the error; never a byte
    # of the damaged one.
    raw = bytearray(open(path, "rb").read())
    raw[len(raw) - 200 * KiB + 70 * KiB] ^= 1
    bad = tmp_path / "bad.age"
    bad.write_bytes(bytes(raw))
    got = bytearray()
    with pytest.raises(zseal.IntegrityError, match="chunk 1 failed authentication"):
        with zseal.open(str(bad), "rb", identity=identity) as f:
            while chunk := f.read1(4096):
                got += chunk
    assert bytes(got) == data[: len(got)] and len(got) <= 64 * KiB
    # Cut after a whole chunk: refused by the seekable open (the last chunk is checked first).
    cut = tmp_path / "cut.age"
    header_and_nonce = len(raw) - (200 * KiB + 4 * 16)
    cut.write_bytes(bytes(raw[: header_and_nonce + 64 * KiB + 16]))
    with pytest.raises(zseal.IntegrityError, match="not its last chunk"):
        zseal.open(str(cut), "rb", identity=identity)


def test_zseal_age_files_are_seekable_zstd_for_pyzstd(tmp_path, keys, zseal_bin):
    """The age plaintext zseal writes is a zstd seekable-format stream that another reader of
    that format (pyzstd's SeekableZstdFile) reads, seeks and sizes; zseal.open gives the same
    bytes through the seek table."""
    import pyzstd

    age = peer("age")
    if age is None:
        pytest.skip("age is not installed")
    identity, recipient = keys
    data = csv_text(60000) + random.Random(9).randbytes(700 * KiB)
    plain = tmp_path / "d.bin"
    plain.write_bytes(data)
    f = tmp_path / "d.bin.age"
    subprocess.run(
        [zseal_bin, "encrypt", "--format", "age", "--chunk-size", "256K", "-r", recipient, str(plain), "-o", str(f)],
        check=True,
    )
    zst = tmp_path / "d.zst"
    subprocess.run([age, "-d", "-i", identity, "-o", str(zst), str(f)], check=True)
    with pyzstd.SeekableZstdFile(str(zst), "r") as s:
        assert s.seek(0, io.SEEK_END) == len(data)
        for at in [0, 256 * KiB - 1, len(data) // 2, len(data) - 7]:
            s.seek(at)
            assert s.read(1000) == data[at : at + 1000], at
    with zseal.open(str(f), "rb", identity=identity) as z:
        assert z.size == len(data)
        z.seek(len(data) // 3)
        assert z.read(5000) == data[len(data) // 3 : len(data) // 3 + 5000]
        z.seek(0)
        assert z.read() == data


CCTV = Path(__file__).resolve().parents[2] / "target" / "cctv-age" / "testdata"


@pytest.mark.skipif(not (CCTV / "scrypt").exists(), reason="scripts/fetch-cctv brings age's vectors")
def test_an_age_passphrase_file_is_bounded_and_pays_scrypt_once(tmp_path):
    """CCTV's scrypt vector (work factor 10, passphrase "password"): max_work_factor below the
    file's factor refuses it before any work, for every way of reading; at or above it the file
    opens, and its key is kept, so a second open does not run scrypt again (the cache grows by
    one entry, once), while a lower limit still refuses the cached file."""
    raw = (CCTV / "scrypt").read_bytes()
    f = tmp_path / "s.age"
    f.write_bytes(raw[raw.index(b"\n\n") + 2 :])
    for call in (
        lambda: zseal.open(f, passphrase="password", max_work_factor=9).read(),
        lambda: zseal.verify(f, passphrase="password", max_work_factor=9),
        lambda: zseal.decrypt_file(f, tmp_path / "out", passphrase="password", max_work_factor=9),
        lambda: fsspec.open(f"zseal::{f}", "rb", zseal={"passphrase": "password", "max_work_factor": 9})
        .open()
        .read(),
    ):
        with pytest.raises(zseal.ZsealError, match="work factor 10 is over the limit 9"):
            call()
    assert not (tmp_path / "out").exists()
    before = zseal._zseal._passphrase_cache_len()
    with zseal.open(f, passphrase="password", max_work_factor=10) as r:
        first = r.read()
    assert zseal._zseal._passphrase_cache_len() == before + 1
    with zseal.open(f, passphrase="password") as r:
        assert r.read() == first
    assert zseal._zseal._passphrase_cache_len() == before + 1
    with pytest.raises(zseal.ZsealError, match="over the limit 9"):
        zseal.open(f, passphrase="password", max_work_factor=9)
    with pytest.raises(zseal.ZsealError, match="max_work_factor is for reading"):
        zseal.open(tmp_path / "w", "wb", passphrase="pw", max_work_factor=10)


@pytest.mark.parametrize("compress", ["zstd:3", "none"])
def test_python_writes_age_files_that_stock_age_reads(tmp_path, keys, compress):
    """zseal.open(..., "wb", format="age") and encrypt_file(..., format="age") write standard age
    files: `age -d` decrypts them (through `zstd -d` for the seekable zstd inside), and zseal
    reads them back whole and by range. Container-only options are refused by name, and the
    target is left untouched."""
    age, zstd = peer("age"), peer("zstd")
    identity, recipient = keys
    data = csv_text(40000, seed=9)
    out = tmp_path / "w.age"
    with zseal.open(out, "wb", recipients=[recipient], format="age", compress=compress, chunk_size=1 << 20) as f:
        f.write(data)
    (tmp_path / "src.csv").write_bytes(data)
    zseal.encrypt_file(
        tmp_path / "src.csv", tmp_path / "e.age", recipients=[recipient], format="age", compress=compress
    )
    for path in (out, tmp_path / "e.age"):
        assert zseal.inspect(path)["format"] == "age"
        with zseal.open(path, identity=identity) as f:
            f.seek(12345)
            assert f.read(1000) == data[12345:13345]
            f.seek(0)
            assert f.read() == data
        if age:
            plain = subprocess.run([age, "-d", "-i", identity, str(path)], capture_output=True, check=True).stdout
            if compress != "none":
                assert zstd, "zstd is needed with age"
                plain = subprocess.run([zstd, "-dc"], input=plain, capture_output=True, check=True).stdout
            assert plain == data, path
    for bad, says in [
        ({"cipher": "aes-256-gcm"}, r"a cipher \(an age file is sealed with ChaCha20-Poly1305\)"),
        ({"hash": "blake3"}, "no whole-file digest"),
        ({"pad": True}, "padding is an option of zseal containers"),
        ({"compress": "lz4"}, "zstd"),
        ({"format": "tar"}, "format 'tar'"),
    ]:
        target = tmp_path / "bad.age"
        with pytest.raises(zseal.OptionError, match=says):
            with zseal.open(target, "wb", recipients=[recipient], **{"format": "age", **bad}) as f:
                f.write(b"x")
        assert not target.exists(), bad
    with pytest.raises(zseal.OptionError, match="format is for writing"):
        zseal.open(out, identity=identity, format="age")
