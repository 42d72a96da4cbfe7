"""zseal for Python: read and write zseal containers where the data is processed.

``zseal.open`` returns a binary file object that decrypts only the chunks a read needs and
authenticates everything it returns; ``zseal::<url>`` works in fsspec, pandas, pyarrow and Dask
(see :mod:`zseal.fs`). The work runs in Rust (the zseal library) without the GIL, on every core.
Small values (database rows, cache entries) are sealed one by one with ``RecordSealer`` and
opened with ``RecordOpener`` under a ``RecordKey``, optionally with a trained ``Dictionary``.

>>> import zseal
>>> identity, recipient = zseal.keygen()
>>> with zseal.open("data.csv.zseal", "wb", recipients=[recipient]) as f:   # doctest: +SKIP
...     f.write(b"a,b\\n1,2\\n")
>>> with zseal.open("data.csv.zseal", identity="me.key") as f:              # doctest: +SKIP
...     f.seek(4); f.read()
"""

from __future__ import annotations

import io
import os
from typing import IO, Any, Union, Unpack

from . import _zseal, errors
from .options import OpenOptions, SealOptions, take_keys, take_seal


class OpenOrSeal(OpenOptions, SealOptions, total=False):
    """What :func:`open` takes besides its own parameters: the keys to read with
    (:class:`OpenOptions`) or the options to write with (:class:`SealOptions`)."""
from ._zseal import (
    Dictionary,
    RecordKey,
    RecordOpener,
    RecordSealer,
    __version__,
    abort,
    decrypt_file,
    download,
    encrypt_file,
    inspect,
    keygen,
    pending,
    upload,
    verify,
)
from .archive import Archive
from .errors import (
    IntegrityError,
    MissingDictionaryError,
    MissingKeyError,
    NotZsealError,
    OptionError,
    TruncatedError,
    WrongKeyError,
    ZsealError,
    ZsealFileExistsError,
    ZsealFileNotFoundError,
    ZsealIOError,
)

__all__ = [
    "open",
    "ZsealReader",
    "ZsealWriter",
    "encrypt_file",
    "SealOptions",
    "OpenOptions",
    "decrypt_file",
    "verify",
    "inspect",
    "keygen",
    "upload",
    "download",
    "pending",
    "abort",
    "Archive",
    "RecordKey",
    "RecordSealer",
    "RecordOpener",
    "Dictionary",
    "__version__",
    *errors.__all__,
]

PathLike = Union[str, "os.PathLike[str]"]


def _close(f: Any, engine: Any, close_io: Any) -> None:
    """Closes the engine (a writer completes its container here), then the inner file object
    this package opened (fsspec), then the io object, whatever fails on the way."""
    if not f.closed:
        try:
            engine.close()
            if f._owned is not None:
                f._owned.close()
        finally:
            close_io()


def _discard(inner: Any) -> None:
    """Throws away an inner file opened for writing without committing it: fsspec's buffered
    files (s3fs aborts its multipart upload) are discarded and marked closed, so that neither
    close() nor the garbage collector uploads what was written."""
    if inner is None:
        return
    discard = getattr(inner, "discard", None)
    if callable(discard):
        discard()
    try:
        inner.closed = True
    except (AttributeError, TypeError):
        pass


class _TextWriter(io.TextIOWrapper):
    """Text over a :class:`ZsealWriter` (modes ``"wt"``, ``"xt"``): leaving a ``with`` block by
    an exception, or being collected unclosed, aborts the container as the binary writer does
    (TextIOWrapper's own exit and finaliser would complete it)."""

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.buffer.abort()
        else:
            self.close()

    def __del__(self) -> None:
        try:
            buffer = self.buffer
        except ValueError:  # detached
            return
        if not buffer.closed:
            buffer.abort()


class ZsealReader(io.BufferedIOBase):
    """A decrypting, seekable, read-only binary file (what ``zseal.open(..., "rb")`` returns).

    Every byte returned has been authenticated; a damaged chunk raises :class:`IntegrityError`
    and returns nothing. After a seek, a read fetches only the frames it covers; sequential reads
    keep the engine's window full (one chunk per worker thread ahead). Reaching the end of the
    file from its first byte also checks the whole-file digest (:meth:`digest`).
    """

    def __init__(
        self,
        file: PathLike | IO[bytes],
        *,
        passphrase: str | None = None,
        threads: int | None = None,
        _owned: Any = None,
        **keys: Unpack[OpenOptions],
    ) -> None:
        """``keys``: :class:`OpenOptions`; the rest as :func:`open` describes them."""
        super().__init__()
        self._owned = _owned
        self._r = _zseal.Reader(file, passphrase=passphrase, threads=threads, **keys)

    @property
    def name(self) -> str:
        return self._r.name

    @property
    def size(self) -> int | None:
        """The plaintext length (authenticated), or None when reading a stream."""
        return self._r.size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._r.seekable

    def read(self, size: int | None = -1) -> bytes:
        return self._r.read(-1 if size is None else size)

    def read1(self, size: int = -1) -> bytes:
        return self._r.read1(size)

    def readinto(self, buffer: Any) -> int:
        return self._r.readinto(buffer)

    def readinto1(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self._r.read1(len(view))
        view[: len(data)] = data
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        return self._r.readline(-1 if size is None else size)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._r.seek(offset, whence)

    def tell(self) -> int:
        return self._r.tell()

    def digest(self) -> str | None:
        """The whole-plaintext digest (hex, as b3sum prints it) once every byte from the first
        has been read and checked; None before that."""
        return self._r.digest()

    def detach(self) -> Any:
        raise io.UnsupportedOperation("a zseal reader has no raw stream to detach")

    def close(self) -> None:
        _close(self, self._r, super().close)

    def __repr__(self) -> str:
        return f"<zseal.ZsealReader name={self.name!r}>"


class ZsealWriter(io.BufferedIOBase):
    """An encrypting, write-only binary file (what ``zseal.open(..., "wb")`` returns).

    The container is complete when :meth:`close` returns; a path is written to a temporary file
    beside it and renamed into place only then. Leaving a ``with`` block by an exception aborts:
    the temporary file is removed and nothing replaces the target.
    """

    def __init__(
        self,
        file: PathLike | IO[bytes],
        *,
        passphrase: str | None = None,
        threads: int | None = None,
        format: str | None = None,
        exclusive: bool = False,
        _owned: Any = None,
        **seal: Unpack[SealOptions],
    ) -> None:
        """``seal``: :class:`SealOptions`; the rest as :func:`open` describes them."""
        super().__init__()
        self._owned = _owned
        self._w = _zseal.Writer(
            file,
            passphrase=passphrase,
            threads=threads,
            format=format,
            exclusive=exclusive,
            **take_seal("ZsealWriter", seal),
        )

    @property
    def name(self) -> str:
        return self._w.name

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return self._w.write(data)

    def close(self) -> None:
        _close(self, self._w, super().close)

    def abort(self) -> None:
        """Drops the container unfinished: a temporary file is removed, an object's upload
        aborted, and an inner fsspec file this package opened is discarded, never committed."""
        if not self.closed:
            try:
                # A writer whose construction failed has no engine to abort.
                engine = getattr(self, "_w", None)
                if engine is not None:
                    engine.abort()
                _discard(getattr(self, "_owned", None))
            finally:
                super().close()

    def __del__(self) -> None:
        # Collected without close(): the producer did not finish, so neither does the container
        # (io's own finaliser would close, completing a container of partial data).
        if not self.closed:
            self.abort()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def __repr__(self) -> str:
        return f"<zseal.ZsealWriter name={self.name!r}>"


def open(
    file: PathLike | IO[bytes],
    mode: str = "rb",
    *,
    passphrase: str | None = None,
    threads: int | None = None,
    encoding: str | None = None,
    errors: str | None = None,
    newline: str | None = None,
    format: str | None = None,
    **options: Unpack[OpenOrSeal],
) -> Any:
    """Opens a zseal container for reading (``"rb"``) or writing (``"wb"``; ``"xb"`` refuses
    to replace a file). ``file`` is a path, an ``s3://``, ``gs://``, ``az://`` or ``http(s)://``
    URL (read and written through zseal's own object store, with the command line's credentials
    rules), or a binary file object (e.g. an fsspec file).

    Reading needs ``identity`` (a path, or a list of paths, of age identity files or OpenSSH
    private keys; an ``AGE-SECRET-KEY-1…`` string also works) or ``passphrase``. Writing needs
    ``recipients`` (``age1…``/``ssh-…`` strings) or ``passphrase``, and takes the rest of
    :class:`SealOptions`: ``compress`` (``"zstd:3"``, ``"lz4"``, ``"gzip:6"``, ``"none"``),
    ``cipher`` (``"aes-256-gcm"``, ``"chacha20-poly1305"``), ``hash`` (``"blake3"``, ``"xxh3"``,
    ``"none"``) and ``chunk_size`` (bytes, a power of two); ``pad=True`` rounds chunk and file
    lengths up to size classes (see FORMAT.md §3.3). ``threads``: worker threads (default: one
    per core).
    A ``"t"`` mode (``"rt"``, ``"wt"``) wraps the file in :class:`io.TextIOWrapper`.
    ``format="age"`` writes a standard age v1 file instead of a container (``age -d`` reads it;
    with ``compress="zstd"``, the default, its plaintext is a seekable zstd stream, which
    ``age -d | zstd -d`` and this package read; ``compress="none"`` writes a plain age file);
    reading tells the two formats apart by themselves. ``format="crypt4gh"`` writes a GA4GH
    Crypt4GH v1 file (``crypt4gh decrypt`` reads it) to ``recipients`` that are X25519 public
    keys (``"age1…"``, ``"ssh-ed25519 …"``) or ``recipients_file`` crypt4gh public key files; it
    has no compression, passphrase or ``sign=`` (see FORMAT.md §13.8).
    ``max_work_factor`` (1 to 22, default 22, age's limit) refuses an age file whose passphrase
    (scrypt) work factor is higher, before any work: at 22 one attempt takes 4 GiB of memory and
    tens of seconds; age writes 18. A file's key, once a passphrase opened it, is kept in this
    process, so that later opens of the same file pay the passphrase's cost no more.
    ``key_passphrase`` unlocks an ``identity`` that is a passphrase-protected OpenSSH key: the
    passphrase itself, or a callable given the key's description that returns it (for example
    ``lambda d: getpass.getpass(d + ": ")``); without it such a key is refused.
    """
    text = "t" in mode
    base = mode.replace("t", "").replace("b", "")
    if base not in ("r", "w", "x") or ("t" in mode and "b" in mode):
        raise OptionError(f"mode {mode!r}: use 'rb', 'wb' or 'xb' (or 'rt', 'wt', 'xt' for text)")
    if not text and (encoding is not None or errors is not None or newline is not None):
        raise OptionError("encoding, errors and newline apply to text modes only")
    f: io.BufferedIOBase
    keys = take_keys(options)
    seal = take_seal("open", options, allowed=keys)
    if base == "r":
        if seal.get("recipients") is not None:
            raise OptionError("recipients are for writing; to read, pass identity= or passphrase=")
        if any(v not in (None, False) for v in seal.values()):
            raise OptionError(f"{', '.join(seal)}: options for writing, not for reading")
        if format is not None:
            raise OptionError("format is for writing: reading tells a container from an age file itself")
        f = ZsealReader(file, passphrase=passphrase, threads=threads, **keys)
    else:
        if keys.get("identity") is not None or keys.get("key_passphrase") is not None:
            raise OptionError("identity is for reading; to write, pass recipients= or passphrase=")
        if keys.get("max_work_factor") is not None:
            raise OptionError("max_work_factor is for reading age files")
        if format is not None and format not in ("zseal", "age", "crypt4gh"):
            raise OptionError(f"format {format!r}: use 'zseal', 'age' or 'crypt4gh'")
        f = ZsealWriter(file, passphrase=passphrase, threads=threads, format=format, exclusive=base == "x", **seal)
    if text:
        wrap = io.TextIOWrapper if base == "r" else _TextWriter
        return wrap(f, encoding=encoding, errors=errors, newline=newline)
    return f
