"""Types of the Rust extension (python/src/lib.rs); the public API is in zseal/__init__.py."""

import os
from typing import IO, Any, Callable, Sequence, Unpack

from .options import OpenOptions, SealOptions

_Path = str | os.PathLike[str]
_Identity = _Path | Sequence[_Path] | None

__version__: str

class Reader:
    name: str
    seekable: bool
    def __init__(
        self,
        file: _Path | IO[bytes],
        *,
        passphrase: str | None = None,
        threads: int | None = None,
        **keys: Unpack[OpenOptions],
    ) -> None: ...
    @property
    def size(self) -> int | None: ...
    @property
    def closed(self) -> bool: ...
    def read(self, n: int | None = -1) -> bytes: ...
    def read1(self, n: int | None = -1) -> bytes: ...
    def readinto(self, buffer: Any) -> int: ...
    def readline(self, limit: int | None = -1) -> bytes: ...
    def seek(self, offset: int, whence: int = 0) -> int: ...
    def tell(self) -> int: ...
    def digest(self) -> str | None: ...
    def close(self) -> None: ...

class Writer:
    name: str
    def __init__(
        self,
        file: _Path | IO[bytes],
        *,
        passphrase: str | None = None,
        threads: int | None = None,
        exclusive: bool = False,
        format: str | None = None,
        **seal: Unpack[SealOptions],
    ) -> None: ...
    @property
    def closed(self) -> bool: ...
    def write(self, data: Any) -> int: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...

def encrypt_file(
    src: _Path,
    dst: _Path,
    *,
    passphrase: str | None = None,
    threads: int | None = None,
    overwrite: bool = False,
    format: str | None = None,
    **seal: Unpack[SealOptions],
) -> str | None:
    """Encrypts the file src into dst (a container, or with format="age" an age v1 file), which
    appears (atomically) only when complete; returns what decrypt_file returns: the
    whole-plaintext digest (hex, as b3sum or xxhsum -H3 print it), or None for hash="none" and
    for an age file."""

def upload(
    src: _Path,
    url: str,
    *,
    resume: bool = False,
    overwrite: bool = False,
    threads: int | None = None,
    **seal: Unpack[SealOptions],
) -> dict[str, Any]:
    """Encrypts the regular file src into the object at url (s3://, gs://, az://) as
    `zseal encrypt SRC -o URL [--resume]` does: an upload larger than a part keeps a journal
    (shared with the command line), a cut one stays pending, and resume=True sends only what the
    store lacks. Returns {"journaled", "parts_kept", "parts_sent", "sealed", "uploaded",
    "digest", "restarted"} (only "journaled" and "digest" for an upload without a journal)."""

def download(
    url: str,
    dst: _Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    threads: int | None = None,
    **keys: Unpack[OpenOptions],
) -> str | None:
    """Decrypts the object at url into the regular file dst through DST.zseal-partial and a
    journal, as `zseal decrypt URL -o DST [--resume]` does: a cut run keeps what it
    authenticated (said in the exception's note), and resume=True fetches only the rest. dst
    appears only when all of it verified. Returns the whole-plaintext digest, or None."""

def archive_members(file: Any, *, threads: int | None = None, **keys: Any) -> list[dict[str, Any]]:
    """The members of a container whose plaintext is a tar (what zseal.Archive lists), each
    with its data offset; the whole tar is read once, and the list given once the container's
    end authenticated."""

def pending() -> list[dict[str, Any]]:
    """The pending uploads and downloads of this user, as `zseal resume --list` shows them: each
    a dict with "kind" ("upload" or "download") and "url"; an upload's "source", "parts",
    "bytes_sent", "source_size"; a download's "destination", "bytes_kept", "object_size"; both
    "updated" (Unix seconds)."""

def abort(url: str) -> None:
    """Ends the pending upload into url (`zseal resume --abort URL`): the store's upload is
    aborted and the journal removed."""

def decrypt_file(
    src: _Path,
    dst: _Path,
    *,
    passphrase: str | None = None,
    threads: int | None = None,
    overwrite: bool = False,
    **keys: Unpack[OpenOptions],
) -> str | None:
    """Decrypts src into dst, which appears only when every byte verified; returns the
    whole-plaintext digest (hex), or None for a file written without one."""

def verify(
    file: _Path | IO[bytes],
    *,
    passphrase: str | None = None,
    threads: int | None = None,
    **keys: Unpack[OpenOptions],
) -> str | None:
    """Reads and checks the whole container; returns the whole-plaintext digest (hex, as b3sum
    or xxhsum -H3 print it), or None for a file written without one."""

def inspect(file: _Path | IO[bytes]) -> dict[str, Any]:
    """What the header and footer say, without a key (the keys of `zseal inspect --json`)."""

def keygen(path: _Path | None = None) -> tuple[str, str]:
    """A new X25519 identity: (AGE-SECRET-KEY-1…, age1…); with path, also written there (0600,
    never over an existing file)."""

_Bytes = bytes | bytearray | memoryview
_Context = _Bytes | str | None

class RecordKey:
    """A record key (32 secret bytes) for sealed records (docs/FORMAT.md §9)."""
    @staticmethod
    def generate() -> RecordKey: ...
    @staticmethod
    def from_bytes(data: bytes) -> RecordKey: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def load(
        file: _Path | IO[bytes], *, identity: _Identity = None, passphrase: str | None = None
    ) -> RecordKey:
        """Opens a record key container (from save() or `zseal keygen --record-key`)."""
    def save(
        self,
        file: _Path,
        *,
        recipients: Sequence[str] | None = None,
        passphrase: str | None = None,
        overwrite: bool = False,
    ) -> None:
        """Writes the key as a zseal container for recipients and/or a passphrase."""

class Dictionary:
    """A zstd dictionary for records: from train(), `zseal dict train` or `zstd --train`."""
    def __init__(self, data: bytes) -> None: ...
    @staticmethod
    def train(samples: Sequence[bytes], size: int = 65536) -> Dictionary: ...
    @property
    def id(self) -> int: ...
    def to_bytes(self) -> bytes: ...
    def __len__(self) -> int: ...

class RecordSealer:
    """Seals records one by one; compressed only when that makes them smaller."""
    cipher: str
    def __init__(
        self,
        key: RecordKey,
        *,
        compress: str = "zstd:3",
        cipher: str = "aes-256-gcm-siv",
        dictionary: Dictionary | None = None,
    ) -> None: ...
    def seal(self, record: bytes, context: _Context = None) -> bytes: ...
    def seal_many(
        self, records: Sequence[bytes], contexts: Sequence[_Bytes | str] | None = None
    ) -> list[bytes]:
        """Seals a batch without the GIL; contexts: None or one per record."""

class RecordOpener:
    """Opens sealed records; raises unless each authenticates under its context."""
    def __init__(self, key: RecordKey, *, dictionaries: Sequence[Dictionary] = ()) -> None: ...
    def open(self, record: bytes, context: _Context = None) -> bytes: ...
    def open_many(
        self, records: Sequence[bytes], contexts: Sequence[_Bytes | str] | None = None
    ) -> list[bytes]: ...

class SplitSeal:
    """The coordinator of a container sealed in pieces (FORMAT.md §11; see zseal.dask)."""
    def __init__(self, *, passphrase: str | None = None, **seal: Unpack[SealOptions]) -> None: ...
    @property
    def header(self) -> bytes: ...
    def task_key(self) -> bytes: ...
    def ranges(self, size: int, tasks: int) -> list[tuple[int, int, int]]: ...
    def join(self, results: Sequence[bytes], parts: Sequence[_Path], path: _Path) -> tuple[str | None, int]: ...
    def upload(
        self, url: str, ranges: Sequence[tuple[int, int, int]], overwrite: bool = False,
        settings: Sequence[tuple[str, str]] = ...,
    ) -> SharedUpload: ...

class SharedUpload:
    """One multipart upload written by many tasks (FORMAT.md §11.3)."""
    @property
    def plan(self) -> tuple[int, int, int] | None: ...
    def ticket(self, task: int, start: int | None = None) -> bytes: ...
    def complete_aligned(self, parts: Sequence[bytes]) -> int: ...
    def complete(
        self, split: SplitSeal, results: Sequence[bytes], parts: Sequence[bytes]
    ) -> tuple[str | None, int, int, int]: ...
    def abort(self) -> None: ...

def seal_range(
    task_key: bytes,
    first_chunk: int,
    src: _Path,
    start: int,
    end: int,
    out: _Path | bytes,
    threads: int | None = None,
    settings: Sequence[tuple[str, str]] = ...,
    version: str | None = None,
) -> bytes | tuple[bytes, bytes]:
    """Seals bytes start..end of src (a path or an object's URL, of the ETag version when given)
    as the chunks from first_chunk into the file out (written beside it and renamed over it when
    whole), or, given a ticket (bytes), as the task's parts of that upload."""

def object_version(url: str, settings: Sequence[tuple[str, str]] = ...) -> tuple[int, str | None] | None: ...

class SplitOpen:
    """The coordinator of a container opened in pieces (FORMAT.md §11.4; see zseal.dask)."""
    def __init__(
        self,
        src: str,
        *,
        passphrase: str | None = None,
        settings: Sequence[tuple[str, str]] = ...,
        **keys: Unpack[OpenOptions],
    ) -> None: ...
    def open_key(self) -> bytes: ...
    @property
    def plaintext_size(self) -> int: ...
    @property
    def stored_size(self) -> int: ...
    @property
    def version(self) -> str | None: ...
    @property
    def chunk_size(self) -> int: ...
    @property
    def hash(self) -> str: ...
    def ranges(self, tasks: int) -> list[tuple[int, int]]: ...
    def upload(self, url: str, tasks: int, overwrite: bool = False) -> tuple[SharedUpload, list[tuple[int, int]]]: ...
    def check(self, results: Sequence[bytes]) -> str | None: ...

def open_range(
    open_key: bytes,
    src: str,
    start: int,
    end: int,
    out: _Path | bytes | None = None,
    threads: int | None = None,
    settings: Sequence[tuple[str, str]] = ...,
    version: str | None = None,
) -> bytes | tuple[bytes, bytes]:
    """Opens plaintext bytes start..end of the container src (of the ETag version when given)
    into nothing, a file at that offset, or (given a ticket) the task's parts of an upload."""
