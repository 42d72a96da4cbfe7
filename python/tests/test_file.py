"""zseal.open and the whole-file functions: round trips at chunk boundaries, every whence, the
interoperation with the zseal command and the peer hash tools, and every kind of bad input."""

from __future__ import annotations

import hashlib
import io
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import zseal
from conftest import peer

C = 1024  # a small chunk size, so that boundaries are cheap to reach


def noise(n: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(n)


def text(n: int) -> bytes:
    line = b"the quick brown fox jumps over the lazy dog 0123456789\n"
    return (line * (n // len(line) + 1))[:n]


def seal(path: Path, data: bytes, recipient: str, **kw) -> Path:
    with zseal.open(path, "wb", recipients=[recipient], **kw) as f:
        f.write(data)
    return path


SIZES = [0, 1, C - 1, C, C + 1, 3 * C, 3 * C + 5]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("kind", ["text", "noise"])
def test_round_trip_at_chunk_boundaries_and_the_command_agrees(
    tmp_path, keys, zseal_bin, size, kind
):
    identity, recipient = keys
    data = (text if kind == "text" else noise)(size)
    c = seal(tmp_path / "c.zseal", data, recipient, chunk_size=C)
    with zseal.open(c, identity=identity) as f:
        assert f.size == size
        assert f.read() == data
        assert f.read() == b""
        assert f.digest() == zseal.verify(c, identity=identity)
    # The command decrypts what Python wrote, and Python reads what the command wrote.
    out = subprocess.run(
        [zseal_bin, "decrypt", "-i", identity, str(c)], capture_output=True, check=True
    ).stdout
    assert out == data
    (tmp_path / "p").write_bytes(data)
    c2 = tmp_path / "c2.zseal"
    subprocess.run(
        [zseal_bin, "encrypt", "-r", recipient, "--chunk-size", "1K", str(tmp_path / "p"), "-o", str(c2)],
        check=True,
    )
    with zseal.open(c2, identity=identity) as f:
        assert f.read() == data


def test_every_whence_readinto_read1_readline_match_the_plaintext(tmp_path, keys):
    identity, recipient = keys
    data = text(10 * C + 300)
    c = seal(tmp_path / "c.zseal", data, recipient, chunk_size=C)
    rnd = random.Random(3)
    for threads in (1, 2):
        with zseal.open(c, identity=identity, threads=threads) as f:
            assert f.seekable() and f.readable() and not f.writable()
            pos = 0
            for _ in range(300):
                op = rnd.choice(["set", "cur", "end", "read", "readinto", "read1", "line"])
                if op == "set":
                    pos = rnd.randrange(len(data) + 10)
                    assert f.seek(pos) == pos
                elif op == "cur":
                    d = rnd.randrange(-pos, len(data) - pos + 5)
                    pos = f.seek(d, io.SEEK_CUR)
                elif op == "end":
                    d = -rnd.randrange(len(data) + 1)
                    pos = f.seek(d, io.SEEK_END)
                    assert pos == len(data) + d
                elif op == "read":
                    n = rnd.choice([0, 1, 7, C - 1, C, 3 * C + 1, -1])
                    got = f.read(n)
                    want = data[pos:] if n < 0 else data[pos : pos + n]
                    assert got == want, (op, pos, n)
                    pos += len(got)
                elif op == "readinto":
                    buf = bytearray(rnd.choice([1, 100, C + 3, 5 * C]))
                    n = f.readinto(buf)
                    assert bytes(buf[:n]) == data[pos : pos + len(buf)]
                    pos += n
                elif op == "read1":
                    got = f.read1(rnd.choice([1, 50, 4 * C]))
                    assert got == data[pos : pos + len(got)]
                    assert got or pos >= len(data)
                    pos += len(got)
                else:
                    got = f.readline()
                    end = data.find(b"\n", pos)
                    want = data[pos:] if end < 0 else data[pos : end + 1]
                    assert got == want
                    pos += len(got)
                assert f.tell() == pos
            f.seek(0)
            assert list(f) == data.splitlines(keepends=True)
        with pytest.raises(ValueError):
            f.read(1)
    with zseal.open(c, identity=identity) as f, pytest.raises(ValueError):
        f.seek(-1)


def test_text_mode_and_iteration(tmp_path, keys):
    identity, recipient = keys
    with zseal.open(tmp_path / "t.zseal", "wt", recipients=[recipient], encoding="utf-8") as f:
        f.write("zeile ä\nline 2\n")
    with zseal.open(tmp_path / "t.zseal", "rt", identity=identity, encoding="utf-8") as f:
        assert f.readlines() == ["zeile ä\n", "line 2\n"]


def test_python_file_objects_as_source_and_sink(tmp_path, keys):
    identity, recipient = keys
    data = noise(5 * C + 17)
    sink = io.BytesIO()
    with zseal.open(sink, "wb", recipients=[recipient], chunk_size=C) as f:
        for i in range(0, len(data), 1000):
            f.write(memoryview(data)[i : i + 1000])
    blob = sink.getvalue()
    assert not sink.closed, "the caller's file object stays open"
    with zseal.open(io.BytesIO(blob), identity=identity) as f:
        f.seek(2 * C + 3)
        assert f.read(C) == data[2 * C + 3 : 3 * C + 3]

    # A stream that cannot seek: read sequentially, verified at the end.
    with zseal.open(NoSeek(blob), identity=identity) as f:
        assert not f.seekable() and f.size is None
        assert f.read(10) == data[:10]
        with pytest.raises(io.UnsupportedOperation):
            f.seek(0)
        assert f.read() == data[10:]
        assert f.digest() is not None

    class Failing(io.BytesIO):
        def read(self, n=-1):
            if self.tell() > 100:
                raise OSError("the network went away")
            return super().read(n)

    with pytest.raises(OSError, match="the network went away"):
        with zseal.open(Failing(blob), identity=identity) as f:
            f.read()


def test_serial_and_parallel_give_the_same_plaintext(tmp_path, keys):
    identity, recipient = keys
    data = text(64 * C + 9)
    for threads in (1, 2, 4):
        c = seal(tmp_path / f"c{threads}.zseal", data, recipient, chunk_size=C, threads=threads)
        for rt in (1, 3):
            with zseal.open(c, identity=identity, threads=rt) as f:
                assert hashlib.sha256(f.read()).digest() == hashlib.sha256(data).digest()


# Run in a child whose glibc maps every block of 128 KiB or more afresh (a fixed mmap threshold):
# each large object is then a mapping of its own, and advice from anything freed before (the
# extension also advises its own large buffers) cannot be mistaken for the read's.
HUGE_CHILD = r"""
import sys
import zseal

def vm_flags_over(start, end):
    flags, cur = [], None
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                cur = lo < end and hi > start
            elif head == "VmFlags:" and cur:
                flags.append(set(line.split()[1:]))
    return flags

def whole_pages(b, n):
    start = id(b) + sys.getsizeof(b"") - 1  # where a bytes object's data starts (CPython)
    huge = 2 << 20
    return (start + huge - 1) // huge * huge, (start + n) // huge * huge

container, identity, plain = sys.argv[1:]
data = open(plain, "rb").read()
with zseal.open(container, identity=identity) as f:
    for at, n in ((0, len(data)), (12345, 6 << 20)):
        f.seek(at)
        b = f.read(n)
        assert b == data[at:at + n], "the plaintext"
        lo, hi = whole_pages(b, n)
        assert hi - lo >= 2 << 20
        got = vm_flags_over(lo, hi)
        if not got:
            print("no VmFlags")
            sys.exit(0)
        assert got and all("hg" in v for v in got), got
        # A bytes Python makes itself gets no advice: the check above can fail.
        other = bytes(n)
        lo, hi = whole_pages(other, n)
        assert not any("hg" in v for v in vm_flags_over(lo, hi)), vm_flags_over(lo, hi)
        del b, other
    assert f.read() == data[12345 + (6 << 20):]
print("ok")
"""


@pytest.mark.skipif(not Path("/sys/kernel/mm/transparent_hugepage").exists(),
                    reason="needs Linux with transparent huge pages")
def test_a_large_read_is_advised_huge_pages_and_holds_the_plaintext(tmp_path, keys):
    """A read of 4 MiB or more comes back in a fresh bytes whose whole 2 MiB pages are advised
    huge (a Dask block of 64 MB otherwise costs 16,000 page faults inside the decompressor); the
    bytes are the plaintext, from the start and from inside a chunk."""
    identity, recipient = keys
    data = text(9 << 20)
    plain = tmp_path / "plain"
    plain.write_bytes(data)
    c = seal(tmp_path / "big.zseal", data, recipient, chunk_size=1 << 20)
    r = subprocess.run([sys.executable, "-c", HUGE_CHILD, str(c), identity, str(plain)],
                       env={**os.environ, "MALLOC_MMAP_THRESHOLD_": str(128 << 10)},
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    if r.stdout.strip() == "no VmFlags":
        pytest.skip("/proc/self/smaps shows no VmFlags here")
    assert r.stdout.strip() == "ok", r.stdout


def test_concurrent_reads_from_threads_are_serialized_not_corrupted(tmp_path, keys):
    identity, recipient = keys
    data = noise(40 * C)
    c = seal(tmp_path / "c.zseal", data, recipient, chunk_size=C)
    errors = []
    with zseal.open(c, identity=identity) as f:

        def work(seed):
            rnd = random.Random(seed)
            for _ in range(50):
                try:
                    with lock:
                        p = rnd.randrange(len(data))
                        f.seek(p)
                        assert f.read(100) == data[p : p + 100]
                except Exception as e:  # pragma: no cover - reported below
                    errors.append(e)

        lock = threading.Lock()
        ts = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
    assert not errors


@pytest.mark.parametrize("alg,tool,args", [("blake3", "b3sum", []), ("xxh3", "xxhsum", ["-H3"])])
def test_verify_returns_the_digest_the_peer_tools_print(tmp_path, keys, alg, tool, args):
    identity, recipient = keys
    exe = peer(tool)
    if exe is None:
        pytest.skip(f"{tool} not installed")
    data = text(3 * C + 11)
    (tmp_path / "p").write_bytes(data)
    c = seal(tmp_path / "c.zseal", data, recipient, chunk_size=C, hash=alg)
    want = subprocess.run([exe, *args, str(tmp_path / "p")], capture_output=True, text=True, check=True)
    # b3sum: "HEX  FILE"; xxhsum 0.8 -H3: "XXH3 (FILE) = HEX" (BSD style).
    digest = want.stdout.split()[-1] if tool == "xxhsum" else want.stdout.split()[0]
    assert zseal.verify(c, identity=identity) == digest
    assert zseal.verify(seal(tmp_path / "n.zseal", data, recipient, hash="none"), identity=identity) is None


@pytest.mark.parametrize("alg", ["blake3", "xxh3", "none"])
def test_encrypt_file_returns_what_decrypt_file_returns(tmp_path, keys, alg):
    identity, recipient = keys
    data = text(3 * C + 11)
    (tmp_path / "p").write_bytes(data)
    sealed = zseal.encrypt_file(tmp_path / "p", tmp_path / "c", recipients=[recipient], chunk_size=C, hash=alg)
    opened = zseal.decrypt_file(tmp_path / "c", tmp_path / "back", identity=identity)
    assert sealed == opened
    if alg == "blake3":
        assert sealed == zseal.verify(tmp_path / "c", identity=identity)
    if alg == "none":
        assert sealed is None
    else:
        assert isinstance(sealed, str) and len(sealed) == (64 if alg == "blake3" else 16)
    assert zseal.encrypt_file(tmp_path / "p", tmp_path / "c.age", recipients=[recipient], format="age") is None


def test_a_damaged_first_chunk_is_not_blamed_on_the_key(tmp_path, keys):
    identity, recipient = keys
    data = noise(3 * C)
    (tmp_path / "p").write_bytes(data)
    zseal.encrypt_file(tmp_path / "p", tmp_path / "c", recipients=[recipient], chunk_size=C, compress="none")
    header = zseal.inspect(tmp_path / "c")["header_len"]
    bad = bytearray((tmp_path / "c").read_bytes())
    bad[header + 100] ^= 1  # chunk 0, after a header that verifies
    (tmp_path / "bad").write_bytes(bad)
    calls = [
        lambda: zseal.decrypt_file(tmp_path / "bad", tmp_path / "out", identity=identity),
        lambda: zseal.verify(tmp_path / "bad", identity=identity),
        lambda: zseal.open(tmp_path / "bad", identity=identity).read(),
    ]
    for call in calls:
        with pytest.raises(zseal.IntegrityError, match="chunk 0 failed authentication: it is damaged or was tampered") as e:
            call()
        assert "key is wrong" not in str(e.value) and "wrong key" not in str(e.value)
    assert not (tmp_path / "out").exists()


def test_files_inspect_keygen_and_passphrases(tmp_path, keys, zseal_bin):
    identity, recipient = keys
    data = text(100_000)
    (tmp_path / "p").write_bytes(data)
    zseal.encrypt_file(tmp_path / "p", tmp_path / "c", recipients=[recipient], compress="lz4", chunk_size=16384)
    with pytest.raises(zseal.ZsealFileExistsError):
        zseal.encrypt_file(tmp_path / "p", tmp_path / "c", recipients=[recipient])
    info = zseal.inspect(tmp_path / "c")
    assert info["compression"] == "lz4" and info["chunk_size"] == 16384
    assert info["recipient_kinds"] == ["X25519"] and info["chunks"] == 7
    assert info["container_len"] == (tmp_path / "c").stat().st_size
    cli = subprocess.run([zseal_bin, "inspect", "--json", str(tmp_path / "c")], capture_output=True, check=True)
    import json

    cli = json.loads(cli.stdout)
    assert {k: cli.get(k) for k in info} == info
    digest = zseal.decrypt_file(tmp_path / "c", tmp_path / "out", identity=identity)
    assert (tmp_path / "out").read_bytes() == data and digest
    with pytest.raises(zseal.ZsealFileExistsError):
        zseal.decrypt_file(tmp_path / "c", tmp_path / "out", identity=identity)
    # Modes: a new file follows the umask (tempfile alone would leave 0600), a replaced file
    # keeps its own mode (never wider).
    umask = os.umask(0o022)
    os.umask(umask)
    assert os.stat(tmp_path / "out").st_mode & 0o777 == 0o666 & ~umask
    os.chmod(tmp_path / "out", 0o640)
    zseal.decrypt_file(tmp_path / "c", tmp_path / "out", identity=[identity], overwrite=True)
    assert os.stat(tmp_path / "out").st_mode & 0o777 == 0o640
    # keygen: the identity string works as well as the file, and the file is private.
    secret, public = zseal.keygen(tmp_path / "k")
    assert public.startswith("age1") and secret.startswith("AGE-SECRET-KEY-1")
    assert os.stat(tmp_path / "k").st_mode & 0o777 == 0o600
    with pytest.raises(zseal.ZsealFileExistsError):
        zseal.keygen(tmp_path / "k")
    c = seal(tmp_path / "k.zseal", b"x" * 10, public)
    with zseal.open(c, identity=secret) as f:
        assert f.read() == b"x" * 10
    # A passphrase (Argon2 at its default cost, once to write and once to read).
    with zseal.open(tmp_path / "pw.zseal", "wb", passphrase="correct horse battery staple") as f:
        f.write(data)
    with zseal.open(tmp_path / "pw.zseal", passphrase="correct horse battery staple") as f:
        f.seek(50_000)
        assert f.read(10) == data[50_000:50_010]
    # The same passphrase again in this process: the unwrapped key is reused (no second Argon2);
    # a wrong one is still refused.
    with zseal.open(tmp_path / "pw.zseal", passphrase="correct horse battery staple") as f:
        assert f.read() == data
    with pytest.raises(zseal.WrongKeyError, match="wrong passphrase"):
        zseal.open(tmp_path / "pw.zseal", passphrase="correct horse battery stapler")


# ---------------------------------------------------------------------------------------------
# Bad input: one clear exception naming the file, no plaintext from a bad part, nothing on disk.


def test_bad_input_raises_one_clear_exception_naming_the_file(tmp_path, keys, other_key):
    identity, recipient = keys
    data = noise(8 * C)
    c = seal(tmp_path / "good.zseal", data, recipient, chunk_size=C)
    blob = c.read_bytes()
    name = str(c)

    with pytest.raises(zseal.WrongKeyError) as e:
        zseal.open(c, identity=other_key)
    assert name in str(e.value) and "no identity matched" in str(e.value)
    assert e.value.filename == name and e.value.kind == "no matching key"

    with pytest.raises(zseal.MissingKeyError, match="pass identity=") as e:
        zseal.open(c)
    assert name in str(e.value)
    with pytest.raises(zseal.MissingKeyError, match="pass passphrase="):
        pw = tmp_path / "pw.zseal"
        pw.write_bytes(subprocess_free_passphrase_container())
        zseal.open(pw, identity=identity)

    plain = tmp_path / "plain.txt"
    plain.write_bytes(b"just some text, not a container\n" * 10)
    with pytest.raises(zseal.NotZsealError, match="not a zseal, age or crypt4gh file") as e:
        zseal.open(plain, identity=identity)
    assert str(plain) in str(e.value)

    with pytest.raises(zseal.ZsealFileNotFoundError) as e:
        zseal.open(tmp_path / "missing.zseal", identity=identity)
    assert isinstance(e.value, FileNotFoundError) and "missing.zseal" in str(e.value)

    with pytest.raises(zseal.ZsealError, match="cannot read identity file"):
        zseal.open(c, identity=tmp_path / "no.key")

    # Damage in chunk 5: everything before it reads; a read that touches it raises and returns
    # nothing, and so does every read after (the failure is sticky).
    frame = C + 21  # noise is stored raw: a frame header and the AEAD tag around each chunk
    header = zseal.inspect(c)["header_len"]
    bad = bytearray(blob)
    bad[header + 5 * frame + 100] ^= 1
    (tmp_path / "bad.zseal").write_bytes(bad)
    with zseal.open(tmp_path / "bad.zseal", identity=identity) as f:
        got = f.read(2 * C)
        assert got == data[: 2 * C]
        with pytest.raises(zseal.IntegrityError, match="chunk 5 failed authentication") as e:
            f.read()
        assert str(tmp_path / "bad.zseal") in str(e.value) and e.value.kind == "chunk auth"
        with pytest.raises(zseal.IntegrityError):
            f.read(1)
    for threads in (1, 2):
        with zseal.open(tmp_path / "bad.zseal", identity=identity, threads=threads) as f:
            f.seek(5 * C - 10)
            with pytest.raises(zseal.IntegrityError, match="chunk 5"):
                f.read(20)  # 10 good bytes, then the bad chunk: nothing is returned
            with pytest.raises(zseal.IntegrityError):
                f.seek(6 * C)  # the failure is sticky: this reader is done
        with zseal.open(tmp_path / "bad.zseal", identity=identity, threads=threads) as f:
            f.seek(6 * C)  # a new reader that never touches chunk 5 reads the rest
            assert f.read() == data[6 * C :]

    # Truncated, extended, and a damaged footer: refused at open (the trailer is read then).
    for label, b in [("cut", blob[:-7]), ("longer", blob + b"\0"), ("footer", blob[:-3] + bytes([blob[-3] ^ 1]) + blob[-2:])]:
        p = tmp_path / f"{label}.zseal"
        p.write_bytes(b)
        with pytest.raises(zseal.IntegrityError) as e:
            with zseal.open(p, identity=identity) as f:
                f.read()
        assert str(p) in str(e.value), label
        # The streaming path (no seek) refuses them too, at the end.
        with pytest.raises(zseal.IntegrityError):
            with zseal.open(io.BufferedReader(NoSeek(b)), identity=identity) as f:
                f.read()

    # decrypt_file leaves nothing behind on damage.
    with pytest.raises(zseal.IntegrityError):
        zseal.decrypt_file(tmp_path / "bad.zseal", tmp_path / "out", identity=identity)
    assert not (tmp_path / "out").exists()
    assert not [p for p in os.listdir(tmp_path) if "partial" in p]

    # Options.
    with pytest.raises(zseal.OptionError, match="codec|compress"):
        zseal.open(tmp_path / "x.zseal", "wb", recipients=[recipient], compress="brotli")
    with pytest.raises(zseal.OptionError, match="no key to encrypt to"):
        zseal.open(tmp_path / "x.zseal", "wb")
    with pytest.raises(zseal.OptionError, match="mode"):
        zseal.open(c, "ab", identity=identity)
    assert not (tmp_path / "x.zseal").exists()


class NoSeek(io.RawIOBase):
    def __init__(self, b: bytes):
        self.b = io.BytesIO(b)

    def readable(self):
        return True

    def readinto(self, buf):
        return self.b.readinto(buf)


_PW_CONTAINER: bytes | None = None


def subprocess_free_passphrase_container() -> bytes:
    global _PW_CONTAINER
    if _PW_CONTAINER is None:
        sink = io.BytesIO()
        with zseal.open(sink, "wb", passphrase="a passphrase for the test") as f:
            f.write(b"secret")
        _PW_CONTAINER = sink.getvalue()
    return _PW_CONTAINER


def test_an_exception_inside_the_writer_leaves_nothing(tmp_path, keys):
    _, recipient = keys
    target = tmp_path / "out.zseal"
    target.write_bytes(b"the old contents")
    with pytest.raises(RuntimeError):
        with zseal.open(target, "wb", recipients=[recipient], chunk_size=C) as f:
            f.write(noise(10 * C))
            raise RuntimeError("the producer failed")
    assert target.read_bytes() == b"the old contents"
    assert os.listdir(tmp_path) == ["out.zseal"], "no temporary file left"
    with pytest.raises(zseal.ZsealFileExistsError):
        zseal.open(target, "xb", recipients=[recipient])


def test_writers_follow_the_output_rules(tmp_path, keys):
    """The Python writers go where the command line's outputs go (README "Where outputs go"): a
    FIFO is written in place and stays a FIFO, /dev/null needs no overwrite, a link's target is
    replaced and the link kept, a link to nothing and a hard-linked file are refused untouched."""
    import stat

    identity, recipient = keys
    data = text(5 * C + 3)
    c = seal(tmp_path / "c.zseal", data, recipient, chunk_size=C)
    # A FIFO: refused without overwrite, then written in place.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(zseal.ZsealFileExistsError):
        zseal.decrypt_file(c, fifo, identity=identity)
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("b", fifo.read_bytes()))
    reader.start()
    zseal.decrypt_file(c, fifo, identity=identity, overwrite=True)
    reader.join()
    assert got["b"] == data
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    zseal.decrypt_file(c, "/dev/null", identity=identity)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    # A link: the target replaced, the link kept.
    (tmp_path / "real").write_bytes(b"old")
    (tmp_path / "link").symlink_to("real")
    with zseal.open(tmp_path / "link", "wb", recipients=[recipient], chunk_size=C) as f:
        f.write(data)
    assert os.path.islink(tmp_path / "link")
    with zseal.open(tmp_path / "real", identity=identity) as f:
        assert f.read() == data
    # Refusals leave everything as it was.
    (tmp_path / "dangling").symlink_to("nowhere")
    with pytest.raises(zseal.ZsealError, match="does not exist"):
        zseal.decrypt_file(c, tmp_path / "dangling", identity=identity, overwrite=True)
    assert not (tmp_path / "nowhere").exists()
    (tmp_path / "one").write_bytes(b"shared")
    os.link(tmp_path / "one", tmp_path / "two")
    with pytest.raises(zseal.ZsealError, match="2 hard links"):
        zseal.decrypt_file(c, tmp_path / "one", identity=identity, overwrite=True)
    assert (tmp_path / "two").read_bytes() == b"shared"
    assert not [n for n in os.listdir(tmp_path) if "zseal-partial" in n]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a FIFO to another user needs root")
def test_a_fifo_planted_in_a_shared_directory_is_not_written(tmp_path, keys):
    """overwrite=True takes the command line's rule: a FIFO another user made in a sticky,
    world-writable directory is refused (nothing would read it here: a write would block)."""
    identity, recipient = keys
    c = seal(tmp_path / "c.zseal", text(C), recipient, chunk_size=C)
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    fifo = shared / "out"
    os.mkfifo(fifo)
    os.chown(fifo, 54321, 54321)
    with pytest.raises(zseal.ZsealError, match="FIFO owned by another user in a shared directory"):
        zseal.decrypt_file(c, fifo, identity=identity, overwrite=True)
    with pytest.raises(zseal.ZsealError, match="FIFO owned by another user"):
        with zseal.open(fifo, "wb", recipients=[recipient]) as f:
            f.write(b"secret")


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize("container", sorted((FIXTURES / "v1").glob("*.zseal")), ids=lambda p: p.stem)
def test_committed_v1_fixtures_decrypt_through_python(container):
    """Every container a release committed reads here too, whole and by random access."""
    empty = container.stem == "empty"
    want = b"" if empty else (FIXTURES / "sample.log").read_bytes()
    if container.stem == "recipients":
        keys = [dict(identity=str(FIXTURES / "keys" / k)) for k in ("zseal.key", "age.key", "ed25519", "rsa")]
    else:
        pw = (FIXTURES / "passphrase.txt").read_bytes().split(b"\n")[0].decode()
        keys = [dict(passphrase=pw)]
    for key in keys:
        with zseal.open(container, **key) as f:
            assert f.size == len(want)
            assert f.read() == want, key
            if want:
                assert f.digest() == zseal.verify(container, **key)
                assert (f.digest() is None) == (zseal.inspect(container)["digest"] == "none")
                f.seek(len(want) // 3)
                assert f.read(5000) == want[len(want) // 3 : len(want) // 3 + 5000]


def test_padded_containers_round_trip_and_match_the_command(tmp_path, keys, zseal_bin):
    identity, recipient = keys
    data = text(300_000)
    (tmp_path / "p").write_bytes(data)
    zseal.encrypt_file(tmp_path / "p", tmp_path / "c", recipients=[recipient], chunk_size=16384, pad=True)
    with zseal.open(tmp_path / "w", "wb", recipients=[recipient], chunk_size=16384, pad=True) as f:
        f.write(data)
    subprocess.run(
        [zseal_bin, "encrypt", "-q", "--pad", "--chunk-size", "16K", "-r", recipient, "-o", str(tmp_path / "cli"), str(tmp_path / "p")],
        check=True,
    )
    sizes = {(tmp_path / n).stat().st_size for n in ("c", "w", "cli")}
    assert len(sizes) == 1, sizes  # the same class whichever front end wrote it
    size = sizes.pop()
    digest = zseal.encrypt_file(tmp_path / "p", tmp_path / "u", recipients=[recipient], chunk_size=16384)
    assert len(digest) == 64 and size > (tmp_path / "u").stat().st_size
    for n in ("c", "w", "cli"):
        info = zseal.inspect(tmp_path / n)
        assert info["padded"] is True and info["plaintext_min"] == 0
        with zseal.open(tmp_path / n, identity=identity) as f:
            assert f.read() == data
            f.seek(123_456)
            assert f.read(1000) == data[123_456:124_456]
    assert zseal.inspect(tmp_path / "u")["padded"] is False


def test_a_failed_producer_never_yields_a_container(tmp_path, keys):
    """A text writer left by an exception and a binary writer collected without close() both
    abort: the target keeps its old contents and no temporary file is left (io's own exit and
    finaliser would have completed a container of partial data)."""
    import gc

    _, recipient = keys
    target = tmp_path / "t.zseal"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with zseal.open(target, "wt", recipients=[recipient]) as f:
            f.write("row 1\n")
            raise RuntimeError("the producer failed")
    assert target.read_bytes() == b"old"
    f = zseal.open(target, "wb", recipients=[recipient])
    f.write(b"row 1\n")
    del f
    gc.collect()
    assert target.read_bytes() == b"old"
    t = zseal.open(target, "wt", recipients=[recipient])
    t.write("row 1\n")
    del t
    gc.collect()
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["t.zseal"], "no temporary file left"
    # A writer that finishes still completes.
    with zseal.open(target, "wt", recipients=[recipient]) as f:
        f.write("row 1\n")
    assert target.read_bytes() != b"old"


def test_a_tampered_header_never_enters_the_passphrase_cache(tmp_path):
    """A stanza that unwraps but whose header MAC then fails is not cached: every open of the
    tampered file pays Argon2 like a wrong passphrase (FORMAT.md §2.3); the good file's key is."""
    from zseal import _zseal

    pw = "a passphrase for the cache test"
    good = tmp_path / "good.zseal"
    with zseal.open(good, "wb", passphrase=pw) as f:
        f.write(b"x" * 1000)
    data = bytearray(good.read_bytes())
    data[20] ^= 1  # in the payload salt: covered by the header MAC, not by the stanza
    bad = tmp_path / "bad.zseal"
    bad.write_bytes(bytes(data))
    before = _zseal._passphrase_cache_len()
    for _ in range(2):
        with pytest.raises(zseal.ZsealError):
            zseal.open(bad, passphrase=pw)
    assert _zseal._passphrase_cache_len() == before
    with zseal.open(good, passphrase=pw) as f:
        assert f.read() == b"x" * 1000
    assert _zseal._passphrase_cache_len() == before + 1


REPO = Path(__file__).resolve().parents[2]


def test_a_passphrase_protected_ssh_key_opens_with_key_passphrase(tmp_path):
    """An OpenSSH key with a passphrase: refused without key_passphrase, opened with the
    passphrase given as a str or returned by a callable (asked with the key's description),
    through open, verify and decrypt_file alike."""
    key = REPO / "fixtures" / "keys" / "ed25519-encrypted"
    recipient = (REPO / "fixtures" / "keys" / "ed25519-encrypted.pub").read_text().strip()
    data = b"sealed for an ssh key\n" * 1000
    path = tmp_path / "s.zseal"
    with zseal.open(path, "wb", recipients=[recipient]) as f:
        f.write(data)
    with pytest.raises(zseal.ZsealError, match="protected by a passphrase: pass key_passphrase="):
        zseal.open(path, "rb", identity=key).read()
    asked = []

    def ask(description):
        asked.append(description)
        return "zseal fixture"

    with zseal.open(path, "rb", identity=key, key_passphrase="zseal fixture") as f:
        assert f.read() == data
    with zseal.open(path, "rb", identity=key, key_passphrase=ask) as f:
        assert f.read() == data
    assert asked and str(key) in asked[0], asked
    digest = zseal.verify(path, identity=key, key_passphrase=ask)
    assert digest is not None and len(digest) == 64
    out = tmp_path / "s.out"
    assert zseal.decrypt_file(path, out, identity=key, key_passphrase="zseal fixture") == digest
    assert out.read_bytes() == data
    # A wrong answer, or a callable that gives up, is refused, and nothing is written.
    for wrong in ["not it", lambda d: None]:
        with pytest.raises(zseal.ZsealError, match="passphrase was wrong|no identity matched"):
            zseal.decrypt_file(path, tmp_path / "no.out", identity=key, key_passphrase=wrong)
        assert not (tmp_path / "no.out").exists()
    with pytest.raises(ValueError, match="key_passphrase must be a str or a callable"):
        zseal.verify(path, identity=key, key_passphrase=42)
    with pytest.raises(zseal.OptionError, match="identity is for reading"):
        zseal.open(tmp_path / "w.zseal", "wb", recipients=[recipient], key_passphrase="x")


def test_sealing_options_are_one_set_and_misspellings_are_refused(tmp_path, keys):
    """zseal.SealOptions is what every sealing call takes (open "wb", encrypt_file, ZsealWriter,
    zseal.dask.encrypt): a misspelled name is a TypeError naming it, a writing option given to
    a reader an OptionError, and nothing is written."""
    import zseal.dask

    identity, recipient = keys
    (tmp_path / "p").write_bytes(b"x" * 1000)
    with pytest.raises(TypeError, match="'recipents'"):
        zseal.open(tmp_path / "a.zseal", "wb", recipents=[recipient])
    with pytest.raises(TypeError, match="'compres'"):
        zseal.encrypt_file(tmp_path / "p", tmp_path / "b.zseal", recipients=[recipient], compres="lz4")
    with pytest.raises(TypeError, match="'chunksize'"):
        zseal.dask.encrypt(tmp_path / "p", tmp_path / "c.zseal", recipients=[recipient], chunksize=4096)
    assert not [p.name for p in tmp_path.iterdir() if p.name != "p"]
    zseal.encrypt_file(tmp_path / "p", tmp_path / "d.zseal", recipients=(r for r in [recipient]), compress="lz4",
                       chunk_size=4096, pad=True)
    with pytest.raises(zseal.OptionError, match="compress"):
        zseal.open(tmp_path / "d.zseal", "rb", identity=identity, compress="lz4")
    with zseal.open(tmp_path / "d.zseal", identity=identity) as f:
        assert f.read() == b"x" * 1000
    assert set(zseal.SealOptions.__annotations__) == {"recipients", "recipients_file", "sign", "compress", "cipher",
                                                      "hash", "chunk_size", "pad"}


def test_a_dash_is_refused_not_made_a_file(tmp_path, keys, monkeypatch):
    """Issue 48, point 2: ``decrypt_file(src, "-")`` made a plaintext file named ``-``; the
    command line reads ``-`` as a standard stream, these functions take paths, so it is refused,
    saying how to reach standard output, and nothing is created."""
    identity, recipient = keys
    monkeypatch.chdir(tmp_path)
    src = seal(tmp_path / "s.zseal", text(5000), recipient)
    with pytest.raises(zseal.OptionError, match="sys.stdout.buffer"):
        zseal.decrypt_file(str(src), "-", identity=identity)
    with pytest.raises(zseal.OptionError, match="the input is '-'"):
        zseal.decrypt_file("-", str(tmp_path / "out"), identity=identity)
    (tmp_path / "plain").write_bytes(b"x")
    with pytest.raises(zseal.OptionError, match="the output is '-'"):
        zseal.encrypt_file(str(tmp_path / "plain"), "-", recipients=[recipient])
    with pytest.raises(zseal.OptionError, match="the input is '-'"):
        zseal.encrypt_file("-", str(tmp_path / "o.zseal"), recipients=[recipient])
    assert not (tmp_path / "-").exists() and not (tmp_path / "out").exists()


def test_keys_as_text_one_recipient_string_recipients_files_and_signing(tmp_path, keys, zseal_bin):
    """Issue 48, point 4: ``identity=open("me.key").read()`` was taken for a path and the
    exception echoed the secret key; one ``recipients="age1…"`` string split into characters;
    Python lacked the command line's ``-R`` and ``--sign``."""
    identity_path, recipient = keys
    key_text = Path(identity_path).read_text()
    src = tmp_path / "in"
    src.write_bytes(text(70000))
    out = tmp_path / "one.zseal"
    zseal.encrypt_file(str(src), str(out), recipients=recipient)
    with zseal.open(str(out), identity=key_text) as f:
        assert f.read() == text(70000)
    # Key text that opens nothing: the message never holds the secret.
    _, other = zseal.keygen()
    sealed_other = seal(tmp_path / "o.zseal", b"x", other)
    with pytest.raises(zseal.WrongKeyError) as e:
        zseal.decrypt_file(str(sealed_other), str(tmp_path / "never"), identity=key_text)
    secret_line = next(l for l in key_text.splitlines() if l.startswith("AGE-SECRET-KEY-"))
    assert secret_line[15:] not in str(e.value)
    # A secret key where a recipient goes: refused, not repeated.
    with pytest.raises(zseal.OptionError, match="a recipient is a secret key") as e:
        zseal.encrypt_file(str(src), str(tmp_path / "x"), recipients=secret_line)
    assert secret_line[15:] not in str(e.value)
    # recipients_file=, as -R.
    (tmp_path / "team.txt").write_text(f"# the team\n{recipient}\n{other}\n")
    out2 = tmp_path / "team.zseal"
    zseal.encrypt_file(str(src), str(out2), recipients_file=str(tmp_path / "team.txt"))
    info = zseal.inspect(str(out2))
    assert info["recipient_kinds"] == ["X25519", "X25519"]
    assert zseal.decrypt_file(str(out2), str(tmp_path / "back"), identity=identity_path)
    assert (tmp_path / "back").read_bytes() == text(70000)
    # sign=, as --sign: the command line's verify --signer checks it.
    ssh_keygen = peer("ssh-keygen")
    if ssh_keygen is None:
        return
    subprocess.run([ssh_keygen, "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "alice")], check=True)
    signed = tmp_path / "signed.zseal"
    zseal.encrypt_file(str(src), str(signed), recipients=[recipient], sign=str(tmp_path / "alice"))
    done = subprocess.run([zseal_bin, "verify", "-i", identity_path, "--signer", str(tmp_path / "alice.pub"),
                           str(signed)], capture_output=True, text=True)
    assert done.returncode == 0 and "good signature by" in done.stderr, done.stderr


def cut_copies(tmp_path: Path, recipient: str) -> tuple[bytes, list[tuple[str, Path]]]:
    """A container of several chunks and copies of it cut inside the header, a frame, the final
    frame, the index and the footer (issue 48, point 6)."""
    data = noise(5 * C + 77, seed=48)
    whole = seal(tmp_path / "whole.zseal", data, recipient, chunk_size=C).read_bytes()
    info = zseal.inspect(tmp_path / "whole.zseal")
    h, n = info["header_len"], info["chunks"]
    index_at = len(whole) - 16 - 4 * n
    cuts = [("header", 40), ("frame", h + 300), ("frame 3", h + 3 * (C + 21) + 9),
            ("final frame", index_at - 30), ("index", index_at + 3), ("footer", len(whole) - 6)]
    copies = []
    for where, at in cuts:
        p = tmp_path / f"cut-{where.replace(' ', '')}.zseal"
        p.write_bytes(whole[:at])
        copies.append((where, p))
    return data, copies


def test_a_cut_file_raises_truncated_error_on_every_path(tmp_path, keys):
    """Issue 48, point 6: zseal.open said "the footer's end magic is wrong" (damaged) where
    decrypt_file said "truncated". Now every path raises TruncatedError (an IntegrityError) whose
    message says truncated and fetch it again, and inspect describes the header of a cut file."""
    identity, recipient = keys
    _, copies = cut_copies(tmp_path, recipient)

    def reads(p: Path):
        yield "open+read", lambda: zseal.open(p, identity=identity).read()
        yield "open+seek", lambda: zseal.open(p, identity=identity).seek(2 * C)

        def seek_read():
            with zseal.open(p, identity=identity) as f:
                f.seek(C + 5)
                return f.read(100)

        yield "seek+read", seek_read
        yield "decrypt_file", lambda: zseal.decrypt_file(p, tmp_path / "out", identity=identity)
        yield "verify", lambda: zseal.verify(p, identity=identity)
        yield "stream", lambda: zseal.open(io.BufferedReader(io.BytesIO(p.read_bytes())), identity=identity).read()

    for where, p in copies:
        for how, call in reads(p):
            with pytest.raises(zseal.TruncatedError) as e:
                call()
            assert isinstance(e.value, zseal.IntegrityError)
            assert e.value.kind == "truncated", (where, how, e.value)
            assert "truncated" in str(e.value) and "fetch it again" in str(e.value), (where, how)
            assert not (tmp_path / "out").exists()
        if where == "header":
            with pytest.raises(zseal.TruncatedError):
                zseal.inspect(p)
            continue
        info = zseal.inspect(p)
        assert info["problem_kind"] == "truncated" and "fetch it again" in info["problem"], where
        assert info["chunks"] is None and info["cipher"] == "aes-256-gcm", where
    assert zseal.inspect(tmp_path / "whole.zseal")["problem"] is None


def test_inspect_describes_a_crypt4gh_file():
    """A crypt4gh file (the reference tool's, fixtures/crypt4gh) is described without a key, with
    the same fields as `zseal inspect --json`, and says that v1 cannot show a cut file."""
    path = Path(__file__).resolve().parents[2] / "fixtures" / "crypt4gh" / "hello.c4gh"
    info = zseal.inspect(path)
    assert info["format"] == "crypt4gh"
    assert (info["packets"], info["segments"], info["stored_plaintext_len"]) == (2, 1, 1008)
    assert info["truncation_detectable"] is False
    assert "segment boundary" in info["note"]


def test_crypt4gh_files_read_through_open_and_fsspec():
    """crypt4gh files (the reference tool's fixtures) open with a crypt4gh key, plain or protected
    (key_passphrase=), whole and by seek, through their edit list, and through the fsspec layer."""
    import fsspec

    c4gh = Path(__file__).resolve().parents[2] / "fixtures" / "crypt4gh"
    plain = (c4gh / "hello.txt").read_bytes()
    alice = dict(identity=str(c4gh / "alice.sec"))
    bob = dict(identity=str(c4gh / "bob.sec"), key_passphrase="zseal fixture")
    for keys in (alice, bob):
        with zseal.open(str(c4gh / "hello.c4gh"), "rb", **keys) as f:
            assert f.read() == plain
            f.seek(100)
            assert f.read(20) == plain[100:120]
            f.seek(-8, io.SEEK_END)
            assert f.read() == plain[-8:]
    with zseal.open(str(c4gh / "hello-10-500.c4gh"), "rb", **alice) as f:
        assert f.read() == plain[10:499]
        f.seek(5)
        assert f.read(2) == plain[15:17]
    with pytest.raises(zseal.ZsealError, match="pass key_passphrase="):
        zseal.open(str(c4gh / "hello.c4gh"), "rb", identity=str(c4gh / "bob.sec"))
    fs, path = fsspec.core.url_to_fs(f"zseal::file://{c4gh}/hello.c4gh", zseal=alice)
    assert fs.info(path)["size"] == len(plain)
    with fs.open(path, "rb") as f:
        f.seek(1000)
        assert f.read() == plain[1000:]


def test_identity_and_passphrase_together_are_refused(tmp_path, keys):
    """zseal.open with both identity= and passphrase= used to ignore the passphrase silently; a
    file opens with one of them, so the pair is refused, naming both (issue 59 §6)."""
    identity, recipient = keys
    path = tmp_path / "f.zseal"
    with zseal.open(path, "wb", recipients=[recipient]) as f:
        f.write(b"data")
    for call in (
        lambda: zseal.open(path, "rb", identity=identity, passphrase="pw"),
        lambda: zseal.decrypt_file(path, tmp_path / "out", identity=identity, passphrase="pw"),
    ):
        with pytest.raises(zseal.OptionError, match="identity= and passphrase= were both given"):
            call()
    assert not (tmp_path / "out").exists()
    with zseal.open(path, "rb", identity=identity, passphrase=None) as f:
        assert f.read() == b"data"


VECTORS = Path(__file__).resolve().parents[2] / "fixtures" / "vectors"


def vector(name: str) -> tuple[dict, bytes]:
    """A committed test vector (fixtures/README.md): its header fields and its container."""
    raw = (VECTORS / name).read_bytes()
    head, body = raw.split(b"\n\n", 1)
    fields = dict(line.split(": ", 1) for line in head.decode().splitlines()[1:])
    return fields, body


def test_pieced_files_read_whole_by_range_and_refuse_a_splice(tmp_path):
    """A pieced file (FORMAT.md §14, the committed vectors): zseal.open reads it whole and by
    range (the piece table is read when it opens), inspect describes its pieces, and one whose
    pieces were swapped raises before any of their bytes is returned."""
    fields, body = vector("ok-pieced-3-pieces")
    path = tmp_path / "p.zseal"
    path.write_bytes(body)
    pw = fields["passphrase"]
    with zseal.open(path, passphrase=pw) as f:
        whole = f.read()
    assert len(whole) == int(fields["plaintext-length"])
    with zseal.open(path, passphrase=pw) as f:
        f.seek(1500)
        assert f.read(3000) == whole[1500:4500]
    info = zseal.inspect(path)
    assert info["pieced"] is True and info["pieces"] == 3
    assert info["plaintext_min"] == info["plaintext_max"] == len(whole)
    _, swapped = vector("bad-pieced-swapped")
    bad = tmp_path / "swapped.zseal"
    bad.write_bytes(swapped)
    with pytest.raises(zseal.IntegrityError, match="damaged"):
        with zseal.open(bad, passphrase=pw) as f:
            f.read(10)
