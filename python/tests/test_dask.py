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
