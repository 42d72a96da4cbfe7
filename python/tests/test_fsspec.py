"""The zseal:: protocol through fsspec, pandas and pyarrow, over the local filesystem and over S3
(a local moto server), with the bytes the inner filesystem served counted."""

from __future__ import annotations

import io
import random

import fsspec
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import zseal
from conftest import csv_text
from zseal.fs import ZsealFileSystem

MiB = 1 << 20


def test_the_protocol_is_registered_by_the_entry_point():
    assert fsspec.get_filesystem_class("zseal") is ZsealFileSystem


def test_local_open_info_ls_and_write(tmp_path, keys):
    identity, recipient = keys
    data = csv_text(5000)
    url = f"zseal::file://{tmp_path}/d.csv.zseal"
    with fsspec.open(url, "wb", zseal={"recipients": [recipient], "chunk_size": 16384}) as f:
        f.write(data)
    fs, path = fsspec.core.url_to_fs(url, zseal={"identity": identity})
    assert isinstance(fs, ZsealFileSystem)
    info = fs.info(path)
    assert info["size"] == len(data) == fs.size(path)
    assert info["encrypted_size"] == (tmp_path / "d.csv.zseal").stat().st_size
    (tmp_path / "notes.txt").write_text("not a container")
    listing = {e["name"].rsplit("/", 1)[-1]: e for e in fs.ls(str(tmp_path))}
    assert listing["d.csv.zseal"]["size"] == len(data)
    assert listing["notes.txt"]["size"] is None and "not a zseal, age or crypt4gh file" in listing["notes.txt"]["zseal_error"]
    with fs.open(path) as f:
        f.seek(1000)
        assert f.read(500) == data[1000:1500]
    assert fs.cat_file(path, start=10, end=20) == data[10:20]
    # Writing options include padding.
    padded = f"zseal::file://{tmp_path}/p.csv.zseal"
    with fsspec.open(padded, "wb", zseal={"recipients": [recipient], "chunk_size": 16384, "pad": True}) as f:
        f.write(data)
    assert zseal.inspect(tmp_path / "p.csv.zseal")["padded"] is True
    assert fs.cat_file(f"{tmp_path}/p.csv.zseal") == data
    with fsspec.open(url, "rt", zseal={"identity": identity}) as f:
        assert f.readline() == "id,value,price,name\n"
    with pytest.raises(zseal.MissingKeyError, match="d.csv.zseal"):
        fsspec.open(url).open()


def test_pandas_csv_and_pyarrow_parquet_match_the_plaintext(tmp_path, keys):
    identity, recipient = keys
    data = csv_text(20000, seed=5)
    (tmp_path / "d.csv").write_bytes(data)
    zseal.encrypt_file(tmp_path / "d.csv", tmp_path / "d.csv.zseal", recipients=[recipient], chunk_size=65536)
    opts = {"zseal": {"identity": identity}}
    want = pd.read_csv(tmp_path / "d.csv")
    got = pd.read_csv(f"zseal::file://{tmp_path}/d.csv.zseal", storage_options=opts)
    pd.testing.assert_frame_equal(got, want)

    # Writing through pandas, then reading back.
    wopts = {"zseal": {"recipients": [recipient]}}
    want.to_csv(f"zseal::file://{tmp_path}/w.csv.zseal", index=False, storage_options=wopts)
    pd.testing.assert_frame_equal(pd.read_csv(f"zseal::file://{tmp_path}/w.csv.zseal", storage_options=opts), want)

    # Parquet: pyarrow reads the footer at the end first, then the column chunks it needs.
    table = pa.table(
        {
            "id": pa.array(range(200_000)),
            "x": pa.array([random.Random(i).random() for i in range(200_000)]),
            "s": pa.array([f"row {i % 977}" for i in range(200_000)]),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=20_000)
    zseal.encrypt_file(tmp_path / "t.parquet", tmp_path / "t.parquet.zseal", recipients=[recipient], chunk_size=65536)
    got = pd.read_parquet(f"zseal::file://{tmp_path}/t.parquet.zseal", storage_options=opts)
    pd.testing.assert_frame_equal(got, table.to_pandas())
    fs = ZsealFileSystem(identity=identity)
    cols = pq.read_table(f"{tmp_path}/t.parquet.zseal", filesystem=fs, columns=["x"])
    assert cols.column("x").equals(table.column("x"))
    pf = pq.ParquetFile(fs.open(f"{tmp_path}/t.parquet.zseal"))
    assert pf.metadata.num_rows == 200_000 and pf.metadata.num_row_groups == 10
    assert pf.read_row_group(7).equals(table.slice(140_000, 20_000))


def count_s3_bytes(monkeypatch) -> list[int]:
    """Counts the bytes s3fs fetched from the server (every ranged GET goes through here)."""
    import s3fs.core

    served: list[int] = []
    real = s3fs.core.S3File._fetch_range

    def counting(self, start, end):
        out = real(self, start, end)
        served.append(len(out))
        return out

    monkeypatch.setattr(s3fs.core.S3File, "_fetch_range", counting)
    return served


def test_s3_reads_fetch_only_the_header_trailer_and_needed_frames(tmp_path, keys, s3, s3_options, monkeypatch):
    identity, recipient = keys
    data = random.Random(9).randbytes(64 * MiB)
    s3.pipe("zseal-test/big.bin.zseal", _seal(data, recipient))
    container = s3.size("zseal-test/big.bin.zseal")
    served = count_s3_bytes(monkeypatch)
    opts = {"zseal": {"identity": identity}, "s3": s3_options}
    fs, path = fsspec.core.url_to_fs("zseal::s3://zseal-test/big.bin.zseal", **opts)
    with fs.open(path) as f:
        opened = sum(served)
        f.seek(37 * MiB + 12345)
        block = f.read(MiB)
    assert block == data[37 * MiB + 12345 : 38 * MiB + 12345]
    total = sum(served)
    # Header + trailer (index: 4 bytes a chunk) at open, then the one frame of chunk 4 (8 MiB
    # chunks, the default: 32..40 MiB holds the range), with at most one 64 KiB buffer of
    # read-ahead.
    frame = 8 * MiB + 21
    assert opened < 3 * 65536, opened
    assert total <= opened + frame + 65536, total
    print(f"\n1 MiB read from a {container / MiB:.0f} MiB container on S3: {total / MiB:.2f} MiB fetched"
          f" ({total / container:.1%}), {len(served)} requests")


def _seal(data: bytes, recipient: str, **kw) -> bytes:
    sink = io.BytesIO()
    with zseal.open(sink, "wb", recipients=[recipient], **kw) as f:
        f.write(data)
    return sink.getvalue()


def test_pandas_over_s3_and_bad_input_there(tmp_path, keys, other_key, s3, s3_options):
    identity, recipient = keys
    data = csv_text(30000, seed=11)
    s3.pipe("zseal-test/d.csv.zseal", _seal(data, recipient, chunk_size=65536))
    url = "zseal::s3://zseal-test/d.csv.zseal"
    got = pd.read_csv(url, storage_options={"zseal": {"identity": identity}, "s3": s3_options})
    pd.testing.assert_frame_equal(got, pd.read_csv(io.BytesIO(data)))
    with pytest.raises(zseal.WrongKeyError, match="zseal-test/d.csv.zseal"):
        pd.read_csv(url, storage_options={"zseal": {"identity": other_key}, "s3": s3_options})
    bad = bytearray(_seal(data, recipient, chunk_size=65536))
    bad[len(bad) // 3] ^= 0x40
    s3.pipe("zseal-test/bad.csv.zseal", bytes(bad))
    with pytest.raises(zseal.IntegrityError, match="bad.csv.zseal"):
        pd.read_csv("zseal::s3://zseal-test/bad.csv.zseal", storage_options={"zseal": {"identity": identity}, "s3": s3_options})
    s3.pipe("zseal-test/plain.csv", data)
    with pytest.raises(zseal.NotZsealError, match="plain.csv"):
        pd.read_csv("zseal::s3://zseal-test/plain.csv", storage_options={"zseal": {"identity": identity}, "s3": s3_options})
    # Writing to S3 through the filesystem.
    fs = ZsealFileSystem(target_protocol="s3", target_options=s3_options, recipients=[recipient], identity=identity)
    with fs.open("zseal-test/written.zseal", "wb") as f:
        f.write(data)
    assert fs.cat_file("zseal-test/written.zseal") == data


def test_zseal_open_reads_and_writes_objects_directly(tmp_path, keys, s3, s3_options, s3_endpoint, monkeypatch):
    """zseal.open("s3://…") goes through the Rust object store (no s3fs), with the command line's
    credentials rules; what it writes s3fs reads back, and the reverse; "xb" refuses an existing
    object; an exception inside the writer leaves no object and no upload in progress."""
    import boto3

    identity, recipient = keys
    for var, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_EC2_METADATA_DISABLED": "true",
        "ZSEAL_PART_SIZE": "5M",
    }.items():
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_PROFILE", raising=False)
    data = random.Random(5).randbytes(13 * MiB + 77)
    url = "s3://zseal-test/direct.zseal"
    with zseal.open(url, "wb", recipients=[recipient], chunk_size=MiB) as f:
        for i in range(0, len(data), 3 * MiB):
            f.write(data[i : i + 3 * MiB])
    with zseal.open(url, identity=identity) as f:
        assert f.size == len(data)
        f.seek(7 * MiB + 5)
        assert f.read(1000) == data[7 * MiB + 5 : 7 * MiB + 1005]
        f.seek(0)
        assert f.read() == data
    # The same object through s3fs, and an s3fs-written one through zseal.open.
    with s3.open("zseal-test/direct.zseal", "rb") as raw, zseal.open(raw, identity=identity) as f:
        assert f.read() == data
    with s3.open("zseal-test/by-s3fs.zseal", "wb") as raw, zseal.open(raw, "wb", recipients=[recipient]) as f:
        f.write(data[:100_000])
    with zseal.open("s3://zseal-test/by-s3fs.zseal", identity=identity) as f:
        assert f.read() == data[:100_000]
    with pytest.raises(zseal.ZsealFileExistsError):
        zseal.open(url, "xb", recipients=[recipient])
    client = boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    with pytest.raises(RuntimeError):
        with zseal.open("s3://zseal-test/failed.zseal", "wb", recipients=[recipient], compress="none") as f:
            f.write(data)  # several 5 MiB parts go up
            raise RuntimeError("the producer failed")
    assert "Contents" not in client.list_objects_v2(Bucket="zseal-test", Prefix="failed")
    assert not client.list_multipart_uploads(Bucket="zseal-test").get("Uploads")
    with pytest.raises(zseal.ZsealError, match="no such object"):
        zseal.open("s3://zseal-test/missing.zseal", identity=identity)


def test_an_aborted_fsspec_write_replaces_nothing(keys, s3, s3_options):
    """abort() on a zseal:: writer over S3 discards the inner s3fs file: the previous object
    stays as it was and no multipart upload is left, also once the writer is collected."""
    import gc

    _, recipient = keys
    s3.pipe("zseal-test/kept.zseal", b"the previous object")
    fs = ZsealFileSystem(target_protocol="s3", target_options=s3_options, recipients=[recipient])
    f = fs.open("zseal-test/kept.zseal", "wb")
    f.write(random.Random(3).randbytes(12 * MiB))
    f.abort()
    del f
    gc.collect()
    assert s3.cat("zseal-test/kept.zseal") == b"the previous object"
    with pytest.raises(RuntimeError):
        with fs.open("zseal-test/kept.zseal", "wb") as f:
            f.write(b"partial")
            raise RuntimeError("the producer failed")
    gc.collect()
    assert s3.cat("zseal-test/kept.zseal") == b"the previous object"
    uploads = s3.call_s3("list_multipart_uploads", Bucket="zseal-test")
    assert not uploads.get("Uploads")


def _parquet_set(put, recipient: str, n: int = 3, rows: int = 5000) -> pa.Table:
    """`n` sealed parquet files t0..t{n-1}.parquet.zseal written through `put(name, bytes)`
    (and a plaintext file that a glob of *.parquet.zseal must not pick up); their rows, in
    order."""
    tables = []
    for i in range(n):
        t = pa.table({"id": pa.array(range(i * rows, (i + 1) * rows)), "s": [f"r{j % 97}" for j in range(rows)]})
        buf = io.BytesIO()
        pq.write_table(t, buf, row_group_size=rows // 4)
        put(f"t{i}.parquet.zseal", _seal(buf.getvalue(), recipient, chunk_size=65536))
        tables.append(t)
    put("notes.txt", b"not a container")
    return pa.concat_tables(tables)


def _query_every_way(fs: ZsealFileSystem, root: str, want: pa.Table) -> None:
    """DuckDB (one file, and a glob), pyarrow.dataset, polars (read_parquet on a file object,
    scan_pyarrow_dataset) and pandas, all through `fs`, give `want`'s rows."""
    import duckdb
    import polars as pl
    import pyarrow.dataset as ds

    total = sum(want.column("id").to_pylist())
    con = duckdb.connect()
    con.register_filesystem(fs)
    one = con.sql(f"SELECT count(*), sum(id) FROM read_parquet('zseal://{root}/t0.parquet.zseal')").fetchall()
    assert one == [(want.num_rows // 3, sum(range(want.num_rows // 3)))]
    # DuckDB reads one handle from several threads, each a seek and a read under the GIL: run
    # it often enough that a reader whose read did not start where its seek left it fails.
    con.execute("SET threads=4")
    for _ in range(12):
        every = con.sql(f"SELECT count(*), sum(id) FROM read_parquet('zseal://{root}/*.parquet.zseal')").fetchall()
        assert every == [(want.num_rows, total)]
    # DuckDB's own filter and projection, pushed into the reads of the sealed files.
    some = con.sql(
        f"SELECT s, count(*) FROM read_parquet('zseal://{root}/*.parquet.zseal') WHERE id % 1000 = 7 GROUP BY s ORDER BY s"
    ).fetchall()
    assert sum(n for _, n in some) == want.num_rows // 1000
    paths = sorted(fs.glob(f"{root}/*.parquet.zseal"))
    assert len(paths) == 3
    dataset = ds.dataset(paths, filesystem=fs, format="parquet")
    assert dataset.to_table().sort_by("id").equals(want)
    with fs.open(paths[1]) as f:
        assert pl.read_parquet(f).to_arrow().equals(pl.from_arrow(want.slice(want.num_rows // 3, want.num_rows // 3)).to_arrow())
    lazy = pl.scan_pyarrow_dataset(dataset).filter(pl.col("id") >= want.num_rows - 10).select(pl.col("id").sum())
    assert lazy.collect().item() == sum(range(want.num_rows - 10, want.num_rows))
    frame = pd.read_parquet(paths, filesystem=fs)
    assert sorted(frame["id"]) == want.column("id").to_pylist()


def test_duckdb_polars_pyarrow_and_pandas_over_local_files(tmp_path, keys, other_key):
    """The names glob hands back (zseal://file://…) are ones the filesystem takes again, so
    DuckDB reads sealed parquet files one by one and by glob; a wrong key is one clear error
    naming the file."""
    identity, recipient = keys
    root = tmp_path / "data"
    root.mkdir()
    want = _parquet_set(lambda name, b: (root / name).write_bytes(b), recipient)
    fs = ZsealFileSystem(identity=identity)
    _query_every_way(fs, str(root), want)
    assert fs.unstrip_protocol(f"{root}/t0.parquet.zseal") == f"zseal://file://{root}/t0.parquet.zseal"
    with fsspec.open(fs.unstrip_protocol(f"{root}/t1.parquet.zseal"), "rb", zseal={"identity": identity}) as f:
        assert pq.read_table(f).num_rows == want.num_rows // 3
    import duckdb

    con = duckdb.connect()
    con.register_filesystem(ZsealFileSystem(identity=other_key))
    with pytest.raises(duckdb.Error, match="t0.parquet.zseal"):
        con.sql(f"SELECT count(*) FROM read_parquet('zseal://{root}/t0.parquet.zseal')").fetchall()


def test_duckdb_polars_pyarrow_and_pandas_over_s3(keys, s3, s3_options):
    """The same through S3 (moto): DuckDB's glob and reads go through the zseal filesystem to
    s3fs, whose names come back as zseal://s3://bucket/key."""
    identity, recipient = keys
    want = _parquet_set(lambda name, b: s3.pipe(f"zseal-test/dd/{name}", b), recipient)
    fs = ZsealFileSystem(target_protocol="s3", target_options=s3_options, identity=identity)
    _query_every_way(fs, "zseal-test/dd", want)
    assert fs.unstrip_protocol("zseal-test/dd/t0.parquet.zseal") == "zseal://s3://zseal-test/dd/t0.parquet.zseal"


def test_pandas_reads_a_relative_path_in_the_forms_pandas_takes_for_urls(tmp_path, keys, monkeypatch):
    """Issue 48, point 7: pandas hands a path to fsspec only when it looks like
    ``proto[::proto]://…``, so ``zseal://d.csv.zseal`` and ``zseal::file://d.csv.zseal`` read a
    relative path, while ``zseal::d.csv.zseal`` (fine for fsspec.open) is refused by pandas
    itself: docs/PYTHON.md says exactly this."""
    identity, recipient = keys
    data = csv_text(300, seed=3)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.csv").write_bytes(data)
    zseal.encrypt_file("d.csv", "d.csv.zseal", recipients=[recipient])
    want = pd.read_csv("d.csv")
    opts = {"zseal": {"identity": identity}}
    for url in ("zseal://d.csv.zseal", "zseal::file://d.csv.zseal"):
        pd.testing.assert_frame_equal(pd.read_csv(url, storage_options=opts), want)
    want.to_csv("zseal://w.csv.zseal", index=False, storage_options={"zseal": {"recipients": [recipient]}})
    pd.testing.assert_frame_equal(pd.read_csv("zseal://w.csv.zseal", storage_options=opts), want)
    with fsspec.open("zseal::d.csv.zseal", zseal={"identity": identity}) as f:
        assert f.read() == data
    with pytest.raises(ValueError, match="non-fsspec file path"):
        pd.read_csv("zseal::d.csv.zseal", storage_options=opts)


def test_a_missing_key_is_named_as_a_zseal_option(tmp_path, keys, monkeypatch):
    """Issue 48, point 7: through fsspec the hint is storage_options={"zseal": {…}}, not the
    identity= or passphrase= argument a pandas user has nowhere to pass."""
    _, recipient = keys
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.csv").write_bytes(csv_text(10))
    zseal.encrypt_file("d.csv", "k.csv.zseal", recipients=[recipient])
    zseal.encrypt_file("d.csv", "p.csv.zseal", passphrase="pw")
    with pytest.raises(zseal.MissingKeyError, match=r'storage_options=\{"zseal": \{"identity": "me.key"\}\}') as e:
        pd.read_csv("zseal://k.csv.zseal")
    assert "k.csv.zseal" in str(e.value) and e.value.kind == "missing key" and "identity=" not in str(e.value).replace("(identity=", "")
    with pytest.raises(zseal.MissingKeyError, match=r'storage_options=\{"zseal": \{"passphrase"'):
        pd.read_csv("zseal::file://p.csv.zseal")
    with pytest.raises(zseal.MissingKeyError, match=r'zseal=\{"identity"'):
        fsspec.open("zseal::k.csv.zseal").open()


def test_inner_options_reach_the_inner_filesystem_in_the_one_layer_form(keys, s3, s3_options):
    """Issue 48, point 7: ``zseal://s3://…`` is one layer, to which fsspec hands the whole
    storage_options; the ``s3`` entry is the inner filesystem's (s3fs here), not dropped."""
    identity, recipient = keys
    fs, path = fsspec.core.url_to_fs("zseal://s3://zseal-test/x.zseal", zseal={"identity": identity}, s3=s3_options)
    assert path == "s3://zseal-test/x.zseal"
    assert fs.fs.protocol[0] == "s3" and fs.fs.storage_options["endpoint_url"] == s3_options["endpoint_url"]
    data = csv_text(500, seed=4)
    s3.pipe("zseal-test/one-layer.csv.zseal", _seal(data, recipient))
    got = pd.read_csv("zseal://s3://zseal-test/one-layer.csv.zseal", storage_options={"zseal": {"identity": identity}, "s3": s3_options})
    pd.testing.assert_frame_equal(got, pd.read_csv(io.BytesIO(data)))


WITHOUT_S3FS = r"""
import sys
sys.modules["s3fs"] = None  # import s3fs raises ImportError, as when it is not installed
import fsspec, pandas as pd, pytest, zseal

identity, recipient, want, plain_size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
df = pd.read_csv("zseal://s3://zseal-test/own.csv.zseal", storage_options={"zseal": {"identity": identity}})
assert df.to_csv(index=False).encode() == open(want, "rb").read()
df.to_csv("zseal://s3://zseal-test/own-w.csv.zseal", index=False, storage_options={"zseal": {"recipients": [recipient]}})
with zseal.open("s3://zseal-test/own-w.csv.zseal", identity=identity) as f:
    assert f.read() == open(want, "rb").read()
fs, path = fsspec.core.url_to_fs("zseal://s3://zseal-test/own.csv.zseal", zseal={"identity": identity})
info = fs.info(path)
assert info["size"] == plain_size and info["encrypted_size"] > 0 and fs.exists(path)
assert not fs.exists("s3://zseal-test/none.zseal")
with pytest.raises(zseal.MissingKeyError, match="own.csv.zseal.*storage_options"):
    pd.read_csv("zseal://s3://zseal-test/own.csv.zseal")
with pytest.raises(NotImplementedError, match="install it to list"):
    fs.ls("zseal-test")
with pytest.raises(zseal.OptionError, match="key, secret.*environment"):
    fsspec.core.url_to_fs("zseal://s3://zseal-test/own.csv.zseal", s3={"key": "k", "secret": "s"})
with pytest.raises(ImportError, match="s3fs"):
    pd.read_csv("zseal::s3://zseal-test/own.csv.zseal", storage_options={"zseal": {"identity": identity}})
print("ok")
"""


def test_zseal_over_s3_without_s3fs_uses_zseals_own_store(tmp_path, keys, s3, s3_endpoint):
    """Issue 48, point 7: with s3fs not installed, ``zseal://s3://…`` (docs/PYTHON.md, README)
    reads and writes through zseal's own object store with the environment's credentials;
    ``zseal::s3://…`` needs s3fs, since fsspec loads every layer of a ``::`` chain itself."""
    import os
    import subprocess
    import sys

    identity, recipient = keys
    data = csv_text(2000, seed=8)
    s3.pipe("zseal-test/own.csv.zseal", _seal(data, recipient, chunk_size=65536))
    (tmp_path / "want.csv").write_bytes(pd.read_csv(io.BytesIO(data)).to_csv(index=False).encode())
    env = dict(
        os.environ,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_REGION="us-east-1",
        AWS_ENDPOINT_URL=s3_endpoint,
        AWS_EC2_METADATA_DISABLED="true",
    )
    env.pop("AWS_PROFILE", None)
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_S3FS, identity, recipient, str(tmp_path / "want.csv"), str(len(data))],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_a_cut_file_raises_truncated_error_through_fsspec(tmp_path, keys):
    """Issue 48, point 6: through the zseal:: layer a cut copy said "the footer's end magic is
    wrong"; it raises TruncatedError, as zseal.open does, and ls reports it without failing."""
    identity, recipient = keys
    data = csv_text(3000)
    url = f"zseal::file://{tmp_path}/d.csv.zseal"
    with fsspec.open(url, "wb", zseal={"recipients": [recipient], "chunk_size": 16384}) as f:
        f.write(data)
    whole = (tmp_path / "d.csv.zseal").read_bytes()
    fs, path = fsspec.core.url_to_fs(url, zseal={"identity": identity})
    for at in (len(whole) // 2, len(whole) - 30, len(whole) - 3):
        (tmp_path / "d.csv.zseal").write_bytes(whole[:at])
        fs.invalidate_cache()
        for how, call in [
            ("open", lambda: fs.open(path).read()),
            ("cat_file", lambda: fs.cat_file(path, start=10, end=20)),
            ("info", lambda: fs.info(path)),
            ("pandas", lambda: pd.read_csv(url, storage_options={"zseal": {"identity": identity}})),
        ]:
            with pytest.raises(zseal.TruncatedError, match="truncated.*fetch it again") as e:
                call()
            assert e.value.kind == "truncated", (at, how)
        listed = {e["name"].rsplit("/", 1)[-1]: e for e in fs.ls(str(tmp_path))}
        assert "truncated" in listed["d.csv.zseal"]["zseal_error"], at
