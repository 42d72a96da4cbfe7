"""Archives: containers whose plaintext is a tar (docs/FORMAT.md §15, docs/PYTHON.md "Archives").

>>> a = zseal.Archive("backup.tar.zseal", identity="me.key")      # doctest: +SKIP
>>> a.names()                                                      # doctest: +SKIP
['./', './notes.txt', ...]
>>> with a.open("notes.txt") as f:                                 # doctest: +SKIP
...     f.read()
"""

from __future__ import annotations

import io
from typing import IO, Any

from . import _zseal


class Archive:
    """The members of an archive: a container (a path, an ``s3://``… URL or a binary file
    object) whose plaintext is a tar, opened with ``identity=`` or ``passphrase=`` as
    :func:`zseal.open` opens it.

    The list is read once, when the archive is opened: until archives carry their member index
    in the container (docs/FORMAT.md §15.1), that reads the whole tar through the decryption,
    and the list is given only once the container's end authenticated. :meth:`open` then reads
    a member by its offsets, decrypting only the chunks it touches."""

    def __init__(self, file: Any, *, threads: int | None = None, **keys: Any) -> None:
        self._file, self._threads, self._keys = file, threads, keys
        self._members = _zseal.archive_members(file, threads=threads, **keys)
        self._by_name: dict[str, dict] = {}
        for m in self._members:
            self._by_name.setdefault(m["path"], m)
            self._by_name.setdefault(_bare(m["path"]), m)

    def names(self) -> list[str]:
        """The members' names, as ``tar t`` lists them (unquoted), in the tar's order."""
        return [m["path"] for m in self._members]

    def members(self) -> list[dict[str, Any]]:
        """Each member as ``zseal ls --json`` gives it: ``path``, ``type`` (``file``,
        ``directory``, ``symlink``, ``hardlink``, ``chardev``, ``blockdev``, ``fifo``,
        ``other``), ``size``, ``mode``, ``mtime`` and ``mtime_nsec``, ``uid``, ``gid``,
        ``owner``, ``group`` and ``link``."""
        return [{k: v for k, v in m.items() if k != "data_offset"} for m in self._members]

    def open(self, member: str) -> IO[bytes]:
        """A seekable binary file object over one regular member's bytes (its name as
        :meth:`names` gives it, with or without the leading ``./``); every byte it returns is
        authenticated. KeyError for a name the archive does not hold, IsADirectoryError for a
        directory, ValueError for another member that has no bytes of its own."""
        m = self._by_name.get(member) or self._by_name.get(_bare(member))
        if m is None:
            raise KeyError(f"{member!r} is not a member of this archive")
        if m["type"] == "directory":
            raise IsADirectoryError(f"{member!r} is a directory")
        if m["type"] != "file":
            raise ValueError(f"{member!r} is a {m['type']}, which has no bytes of its own")
        from . import open as zopen

        inner = zopen(self._file, "rb", threads=self._threads, **self._keys)
        return io.BufferedReader(_Member(inner, m["data_offset"], m["size"]))


def _bare(name: str) -> str:
    """A member name without its leading ``./`` (``./a/b`` and ``a/b`` name one member)."""
    while name.startswith("./"):
        name = name[2:]
    return name


class _Member(io.RawIOBase):
    """The bytes ``[start, start + size)`` of a decrypting reader, as a file of their own."""

    def __init__(self, inner: Any, start: int, size: int) -> None:
        super().__init__()
        self._inner, self._start, self._size, self._pos = inner, start, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise ValueError("a negative position")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        n = max(0, min(len(view), self._size - self._pos))
        if n == 0:
            return 0
        self._inner.seek(self._start + self._pos)
        got = self._inner.readinto(view[:n])
        self._pos += got
        return got

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()
