"""The options every call that seals takes, once (``**seal``: ``zseal.open(..., "wb")``,
``encrypt_file``, the fsspec filesystem, ``zseal.dask.encrypt``)."""

from __future__ import annotations

from typing import Iterable, TypedDict


class SealOptions(TypedDict, total=False):
    """How a file is sealed: ``recipients`` (``age1…``/``ssh-…`` strings), ``compress``
    (``"zstd:3"``, ``"lz4"``, ``"gzip:6"``, ``"none"``), ``cipher`` (``"aes-256-gcm"``,
    ``"chacha20-poly1305"``), ``hash`` (``"blake3"``, ``"xxh3"``, ``"none"``), ``chunk_size``
    (bytes, a power of two), ``pad`` (round chunk and file lengths up to size classes,
    FORMAT.md §3.3). A passphrase, which reading takes too, is a parameter of its own."""

    recipients: Iterable[str] | None
    compress: str | None
    cipher: str | None
    hash: str | None
    chunk_size: int | None
    pad: bool


def take_seal(what: str, options: dict, allowed: Iterable[str] = ()) -> dict:
    """The sealing options among a call's keyword arguments (recipients as a list); a name that
    is neither one of them nor in ``allowed`` is a TypeError, as Python reports one."""
    seal = {}
    for k, v in options.items():
        if k in SealOptions.__annotations__:
            seal[k] = list(v) if k == "recipients" and v is not None else v
        elif k not in allowed:
            raise TypeError(f"{what}() got an unexpected keyword argument {k!r}")
    return seal
