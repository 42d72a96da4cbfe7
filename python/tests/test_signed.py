"""Signed containers from Python (docs/FORMAT.md §12): ``signers=`` and ``allowed_signers=`` on
``verify``, ``decrypt_file`` and ``open``; the container is sealed and signed by the command
line with a key the real ``ssh-keygen`` made."""

from __future__ import annotations

import subprocess

import pytest

import zseal
from conftest import peer


@pytest.fixture(scope="module")
def signed(tmp_path_factory, zseal_bin, keys):
    ssh_keygen = peer("ssh-keygen")
    if ssh_keygen is None:
        pytest.skip("ssh-keygen is not installed")
    d = tmp_path_factory.mktemp("signed")
    for name in ("alice", "bob"):
        subprocess.run([ssh_keygen, "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(d / name)], check=True)
    plain = bytes(range(256)) * 1000 + b"tail"
    (d / "in.bin").write_bytes(plain)
    identity, recipient = keys
    subprocess.run([zseal_bin, "encrypt", "-q", "--chunk-size", "64K", "-r", recipient, "--sign", str(d / "alice"),
                    str(d / "in.bin"), "-o", str(d / "s.zseal")], check=True)
    subprocess.run([zseal_bin, "encrypt", "-q", "-r", recipient, str(d / "in.bin"), "-o", str(d / "u.zseal")], check=True)
    return d, plain, identity


def test_a_good_signature_by_a_required_signer(signed):
    d, plain, identity = signed
    digest = zseal.verify(str(d / "s.zseal"), identity=identity, signers=[str(d / "alice.pub")])
    b3sum = peer("b3sum")
    if b3sum is not None:
        out = subprocess.run([b3sum, str(d / "in.bin")], check=True, capture_output=True, text=True)
        assert digest == out.stdout.split()[0]


def test_signers_in_every_form(signed):
    d, plain, identity = signed
    text = (d / "alice.pub").read_text().strip()
    (d / "allowed").write_text(f"alice@example namespaces=\"zseal\" {text}\n")
    for kwargs in ({"signers": text}, {"signers": d / "alice.pub"}, {"signers": [str(d / "bob.pub"), text]},
                   {"allowed_signers": str(d / "allowed")}):
        with zseal.open(str(d / "s.zseal"), identity=identity, **kwargs) as f:
            assert f.read() == plain, kwargs
        out = d / "out.bin"
        out.unlink(missing_ok=True)
        zseal.decrypt_file(str(d / "s.zseal"), str(out), identity=identity, **kwargs)
        assert out.read_bytes() == plain


def test_another_signer_or_no_signature_fails_and_writes_nothing(signed):
    d, plain, identity = signed
    bob = str(d / "bob.pub")
    for name, why in (("s.zseal", "none of the signers given"), ("u.zseal", "not signed")):
        with pytest.raises(zseal.ZsealError, match=why):
            zseal.verify(str(d / name), identity=identity, signers=bob)
        out = d / "never.bin"
        with pytest.raises(zseal.ZsealError, match=why):
            zseal.decrypt_file(str(d / name), str(out), identity=identity, signers=bob)
        assert not out.exists()
        with pytest.raises(zseal.ZsealError, match=why):
            with zseal.open(str(d / name), identity=identity, signers=bob) as f:
                f.read()


def test_a_signer_requirement_that_allows_no_key_refuses(signed):
    """Review 4, finding 1: an allowed_signers file with no entry for the namespace zseal (one
    written for git, an empty one, one of comments), or ``signers=[]``, used to require nothing,
    and an unsigned file anyone could make was accepted. Each is now refused before reading."""
    d, plain, identity = signed
    text = (d / "alice.pub").read_text().strip()
    for body, why in ((f'alice@example namespaces="git" {text}\n', "no entry allows the namespace 'zseal'"),
                      ("", "lists no signer"), ("# nobody yet\n", "lists no signer"),
                      (f'alice@example namespaces="*,!zseal" {text}\n', "no entry allows")):
        (d / "allowed-none").write_text(body)
        for name in ("u.zseal", "s.zseal"):
            with pytest.raises(zseal.ZsealError, match=why):
                zseal.verify(str(d / name), identity=identity, allowed_signers=str(d / "allowed-none"))
            out = d / "never.bin"
            with pytest.raises(zseal.ZsealError, match=why):
                zseal.decrypt_file(str(d / name), str(out), identity=identity,
                                   allowed_signers=str(d / "allowed-none"))
            assert not out.exists()
    for name in ("u.zseal", "s.zseal"):
        with pytest.raises(ValueError, match="names no key"):
            zseal.verify(str(d / name), identity=identity, signers=[])
        with pytest.raises(ValueError, match="names no key"):
            zseal.open(str(d / name), identity=identity, signers=[])


def test_a_signer_check_reads_in_order(signed):
    d, plain, identity = signed
    with zseal.open(str(d / "s.zseal"), identity=identity, signers=str(d / "alice.pub")) as f:
        f.seek(0)
        assert f.read(10) == plain[:10]
        f.seek(70000)
        with pytest.raises(zseal.ZsealError, match="whole file"):
            f.read(10)
    with pytest.raises(zseal.ZsealError, match="not an OpenSSH public key"):
        zseal.verify(str(d / "s.zseal"), identity=identity, signers="ssh-ed25519 cut")


def test_post_quantum_keys_seal_and_open(tmp_path):
    """``keygen(pq=True)``: an ``age1pq1…`` recipient (docs/FORMAT.md §1.1), in both formats; a
    classic recipient beside it is refused."""
    secret, public = zseal.keygen(pq=True)
    assert secret.startswith("AGE-SECRET-KEY-PQ-1") and public.startswith("age1pq1")
    plain = b"post-quantum " * 10000
    (tmp_path / "in").write_bytes(plain)
    for fmt in ("zseal", "age"):
        out = tmp_path / f"o.{fmt}"
        zseal.encrypt_file(str(tmp_path / "in"), str(out), recipients=[public], format=fmt)
        with zseal.open(str(out), identity=secret) as f:
            assert f.read() == plain
    _, classic = zseal.keygen()
    with pytest.raises(zseal.ZsealError, match="cannot be mixed with classic"):
        zseal.encrypt_file(str(tmp_path / "in"), str(tmp_path / "x"), recipients=[public, classic])
    assert not (tmp_path / "x").exists()


def test_a_crypt4gh_files_signature_is_checked_beside_it(signed, zseal_bin, keys):
    """A crypt4gh file keeps its signature beside it (FORMAT.md §13.9): ``signers=`` finds
    FILE.c4gh.sig as the command line's ``--signer`` does, ``signature=`` names one elsewhere (a
    file object has nothing beside it), and another signer, a missing signature or a signature
    with no signer to check it against is refused."""
    d, plain, identity = signed
    _, recipient = keys
    c4gh = d / "c.c4gh"
    subprocess.run([zseal_bin, "encrypt", "-q", "--format", "crypt4gh", "-r", recipient, "--sign", str(d / "alice"),
                    str(d / "in.bin"), "-o", str(c4gh)], check=True)
    alice, bob = str(d / "alice.pub"), str(d / "bob.pub")
    with zseal.open(str(c4gh), identity=identity, signers=alice) as f:
        assert f.read() == plain
    out = d / "c.out"
    zseal.decrypt_file(str(c4gh), str(out), identity=identity, signers=alice)
    assert out.read_bytes() == plain
    with pytest.raises(zseal.ZsealError, match="none of the signers given"):
        zseal.verify(str(c4gh), identity=identity, signers=bob)
    lone, elsewhere = d / "lone.c4gh", d / "elsewhere.sig"
    lone.write_bytes(c4gh.read_bytes())
    elsewhere.write_bytes((d / "c.c4gh.sig").read_bytes())
    with pytest.raises(zseal.ZsealFileNotFoundError, match="lone.c4gh.sig"):
        zseal.verify(str(lone), identity=identity, signers=alice)
    zseal.verify(str(lone), identity=identity, signers=alice, signature=str(elsewhere))
    with open(lone, "rb") as fo, pytest.raises(zseal.OptionError, match="signature="):
        zseal.open(fo, identity=identity, signers=alice)
    with open(lone, "rb") as fo, zseal.open(fo, identity=identity, signers=alice, signature=elsewhere) as f:
        assert f.read() == plain
    with pytest.raises(zseal.OptionError, match="signers="):
        zseal.verify(str(lone), identity=identity, signature=str(elsewhere))
    with pytest.raises(zseal.OptionError, match="holds its own"):
        zseal.verify(str(d / "s.zseal"), identity=identity, signers=alice, signature=str(elsewhere))
