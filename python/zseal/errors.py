"""The exceptions zseal raises. Every one is a :class:`ZsealError`; the message is the library's,
prefixed with the file it concerns, and ``kind`` is the library's stable error kind
(``"chunk auth"``, ``"wrong passphrase"``, ...)."""

from __future__ import annotations

__all__ = [
    "ZsealError",
    "NotZsealError",
    "MissingKeyError",
    "MissingDictionaryError",
    "WrongKeyError",
    "IntegrityError",
    "TruncatedError",
    "OptionError",
    "ZsealIOError",
    "ZsealFileNotFoundError",
    "ZsealFileExistsError",
]


class ZsealError(Exception):
    """Base class. ``kind``: the library's error kind; ``filename``: the file concerned."""

    kind: str = "error"
    filename: str | None = None


class NotZsealError(ZsealError):
    """The input is not a zseal container (or one of a newer format version)."""


class MissingKeyError(ZsealError):
    """The file needs a key that was not passed (``identity=`` or ``passphrase=``)."""


class MissingDictionaryError(ZsealError):
    """A sealed record was compressed with a zstd dictionary the opener was not given (the
    message names its id)."""


class WrongKeyError(ZsealError):
    """The key passed does not open the file (wrong passphrase, no matching identity)."""


class IntegrityError(ZsealError):
    """The container's bytes are not what was written: damaged, truncated, extended or forged.
    No plaintext from the failing part is ever returned."""


class TruncatedError(IntegrityError):
    """The file ends before its container does: the copy is incomplete (a download or a copy
    cut short), so fetching it again is what helps. Raised alike by ``zseal.open`` (reads, seeks,
    ranges), ``decrypt_file``, ``verify`` and the ``zseal::`` fsspec layer, wherever the cut is."""


class OptionError(ZsealError, ValueError):
    """An option is not valid (a codec name, a chunk size, a range past the end, ...)."""


class ZsealIOError(ZsealError, OSError):
    """Reading or writing a file failed."""


class ZsealFileNotFoundError(ZsealIOError, FileNotFoundError):
    """The file does not exist."""


class ZsealFileExistsError(ZsealIOError, FileExistsError):
    """The output exists and was not to be replaced."""


def _rebuild(cls: type, args: tuple, state: dict) -> BaseException:
    e = cls(*args)
    e.__dict__.update(state)
    return e


def _reduce(self: BaseException) -> tuple:
    # Keeps kind and filename when an exception crosses processes (Dask workers pickle it).
    return (_rebuild, (type(self), self.args, dict(self.__dict__)))


for _cls in (ZsealError, ZsealIOError):
    _cls.__reduce__ = _reduce  # type: ignore[method-assign]
