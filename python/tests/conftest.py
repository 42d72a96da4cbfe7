"""Shared fixtures: keys, the zseal command (built by scripts/test-all), plaintext corpora, and a
local S3-compatible server (moto's, as s3fs's own test suite uses) started per session."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import zseal

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def zseal_bin() -> str:
    """The command-line tool of the same checkout, to cross-check the Python package."""
    path = os.environ.get("ZSEAL_BIN") or str(ROOT / "target" / "release" / "zseal")
    if not Path(path).exists():
        pytest.fail(f"{path} is missing: run `cargo build --release`, or set ZSEAL_BIN (scripts/test-all builds target/ci/zseal and sets it)")
    return path


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(identity file path, recipient)."""
    d = tmp_path_factory.mktemp("keys")
    _, recipient = zseal.keygen(str(d / "me.key"))
    return str(d / "me.key"), recipient


@pytest.fixture(scope="session")
def other_key(tmp_path_factory: pytest.TempPathFactory) -> str:
    d = tmp_path_factory.mktemp("other")
    zseal.keygen(str(d / "other.key"))
    return str(d / "other.key")


def peer(name: str) -> str | None:
    """A real peer tool (b3sum, xxhsum, age); required when ZSEAL_REQUIRE_PEERS is set (CI)."""
    found = shutil.which(name)
    if found is None and os.environ.get("ZSEAL_REQUIRE_PEERS"):
        pytest.fail(f"{name} is not installed (ZSEAL_REQUIRE_PEERS is set)")
    return found


def csv_text(rows: int, seed: int = 1) -> bytes:
    """A CSV with a header, ints, floats, strings and empty fields."""
    import random

    rnd = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "", "epsilon, quoted", "zeta"]
    out = ["id,value,price,name\n"]
    for i in range(rows):
        w = rnd.choice(words)
        name = f'"{w}"' if "," in w else w
        out.append(f"{i},{rnd.randint(-10**6, 10**6)},{rnd.random() * 1000:.4f},{name}\n")
    return "".join(out).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint() -> str:
    """A moto S3 server on a free loopback port, stopped at the end of the session."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url + "/moto-api/", timeout=1)
                break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto_server did not start")
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="session")
def s3_options(s3_endpoint: str) -> dict:
    return {"key": "testing", "secret": "testing", "endpoint_url": s3_endpoint}


@pytest.fixture(scope="session")
def s3(s3_options: dict):
    import s3fs

    fs = s3fs.S3FileSystem(**s3_options)
    if not fs.exists("zseal-test"):
        fs.mkdir("zseal-test")
    return fs


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "load: a load test (short in CI: ZSEAL_LOAD_SECONDS, default 10; the full run by hand)")
