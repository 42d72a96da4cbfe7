"""Writing Crypt4GH files from Python (FORMAT.md §13.8): zseal.open(..., "wb", format="crypt4gh")
and encrypt_file(..., format="crypt4gh") write files the reference (`crypt4gh decrypt`, PyPI
crypt4gh==1.8.6 from python/requirements-test.txt) decrypts; what the format cannot hold is
refused by name and the target left untouched."""

from __future__ import annotations

import subprocess

import pytest

import zseal
from conftest import csv_text, peer


def test_python_writes_crypt4gh_files_the_reference_reads(tmp_path, keys):
    keygen, c4gh = peer("crypt4gh-keygen"), peer("crypt4gh")
    if keygen is None or c4gh is None:
        pytest.skip("the crypt4gh reference is not installed")
    sk, pk = str(tmp_path / "a.sec"), str(tmp_path / "a.pub")
    subprocess.run([keygen, "--sk", sk, "--pk", pk, "--nocrypt", "-f"], check=True, capture_output=True)
    _, age_recipient = keys
    data = csv_text(40000, seed=4)
    out = tmp_path / "w.c4gh"
    with zseal.open(out, "wb", recipients_file=pk, recipients=[age_recipient], format="crypt4gh") as f:
        f.write(data)
    (tmp_path / "src.csv").write_bytes(data)
    digest = zseal.encrypt_file(tmp_path / "src.csv", tmp_path / "e.c4gh", recipients_file=[pk], format="crypt4gh")
    assert len(digest) == 64, "the plaintext's BLAKE3"
    for p in (out, tmp_path / "e.c4gh"):
        with open(p, "rb") as stdin:
            res = subprocess.run([c4gh, "decrypt", "--sk", sk], stdin=stdin, capture_output=True, check=True)
        assert res.stdout == data, p
    for bad, says in [
        ({"compress": "zstd"}, "compression"),
        ({"cipher": "aes-256-gcm"}, "ChaCha20-Poly1305"),
        ({"pad": True}, "padding"),
        ({"passphrase": "pw"}, "no passphrase"),
        ({"recipients": ["age1pq1qqqq"]}, "post-quantum"),
        ({"recipients_file": tmp_path / "nowhere.pub"}, r"cannot read recipients file .*nowhere\.pub"),
    ]:
        target = tmp_path / "bad.c4gh"
        args = {"recipients_file": pk, "format": "crypt4gh", **bad}
        with pytest.raises(zseal.OptionError, match=says):
            with zseal.open(target, "wb", **args) as f:
                f.write(b"x")
        assert not target.exists(), bad


def test_a_cut_crypt4gh_file_is_said_to_be_unproven(tmp_path, keys):
    """decrypt_file of an unsigned crypt4gh file warns what v1 cannot promise, every time: a
    file cut at a segment boundary decrypts without error (issue 59 §4)."""
    identity, recipient = keys
    data = bytes(range(256)) * 1024  # 256 KiB: four 64 KiB segments
    (tmp_path / "src").write_bytes(data)
    zseal.encrypt_file(tmp_path / "src", tmp_path / "f.c4gh", recipients=[recipient], format="crypt4gh")
    whole = (tmp_path / "f.c4gh").read_bytes()
    segment = 65536 + 28
    cut = whole[: len(whole) - 2 * segment]  # the last two segments dropped
    (tmp_path / "cut.c4gh").write_bytes(cut)
    for src, want in [("f.c4gh", data), ("cut.c4gh", data[: 2 * 65536])]:
        with pytest.warns(UserWarning, match="cannot show a cut at a segment boundary"):
            zseal.decrypt_file(tmp_path / src, tmp_path / (src + ".out"), identity=identity)
        assert (tmp_path / (src + ".out")).read_bytes() == want
