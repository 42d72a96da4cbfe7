"""zseal.Archive (docs/PYTHON.md "Archives", FORMAT.md §15): the members of a sealed tar as GNU
tar lists them, each member read by its offsets through a seekable file object, and nothing
listed from a damaged container."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

import zseal


@pytest.fixture
def sealed(tmp_path: Path, keys):
    identity, recipient = keys
    root = tmp_path / "tree"
    (root / "dir").mkdir(parents=True)
    big = random.Random(3).randbytes(300_000)
    (root / "dir" / "big.bin").write_bytes(big)
    (root / "notes.txt").write_bytes(b"what the backup holds\n")
    (root / "empty").write_bytes(b"")
    os.symlink("notes.txt", root / "link")
    tar = tmp_path / "tree.tar"
    subprocess.run(["tar", "--sort=name", "--format=pax", "-cf", str(tar), "-C", str(root), "."], check=True)
    out = tmp_path / "tree.tar.zseal"
    zseal.encrypt_file(tar, out, recipients=[recipient], chunk_size=64 * 1024)
    return out, identity, tar, big


def test_an_archive_lists_and_opens_its_members(sealed):
    out, identity, tar, big = sealed
    a = zseal.Archive(out, identity=identity)
    listed = subprocess.run(["tar", "--quoting-style=literal", "-tf", str(tar)], capture_output=True,
                            check=True, text=True).stdout.splitlines()
    assert a.names() == listed
    by = {m["path"]: m for m in a.members()}
    assert by["./dir/big.bin"]["type"] == "file" and by["./dir/big.bin"]["size"] == len(big)
    assert by["./link"]["type"] == "symlink" and by["./link"]["link"] == "notes.txt"
    assert by["./dir/"]["type"] == "directory"
    assert "data_offset" not in by["./empty"]
    with a.open("dir/big.bin") as f:
        assert f.read() == big
        f.seek(123_456)
        assert f.read(1000) == big[123_456:124_456]
        f.seek(-10, os.SEEK_END)
        assert f.read() == big[-10:]
        assert f.read() == b""
    with a.open("./notes.txt") as f:
        assert f.read() == b"what the backup holds\n"
    assert a.open("empty").read() == b""
    with pytest.raises(KeyError):
        a.open("missing")
    with pytest.raises(IsADirectoryError):
        a.open("dir/")
    with pytest.raises(ValueError):
        a.open("link")


def test_a_damaged_archive_lists_nothing(sealed, tmp_path):
    out, identity, _, _ = sealed
    bad = bytearray(out.read_bytes())
    bad[len(bad) // 2] ^= 1
    damaged = tmp_path / "damaged.zseal"
    damaged.write_bytes(bytes(bad))
    with pytest.raises(zseal.IntegrityError):
        zseal.Archive(damaged, identity=identity)
    plain = tmp_path / "plain.zseal"
    zseal.encrypt_file(Path(__file__), plain, passphrase="pw")
    with pytest.raises(zseal.ZsealError, match="not a tar archive"):
        zseal.Archive(plain, passphrase="pw")
