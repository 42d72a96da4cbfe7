"""The options every call that seals, and every call that opens, takes, once (``**seal``:
``zseal.open(..., "wb")``, ``encrypt_file``, the fsspec filesystem, ``zseal.dask.encrypt``;
``**keys``: ``zseal.open(..., "rb")``, ``decrypt_file``, ``verify``, the fsspec filesystem,
``zseal.dask.verify`` and ``decrypt``)."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence, TypedDict


class SealOptions(TypedDict, total=False):
    """How a file is sealed: ``recipients`` (an ``age1…``/``ssh-…`` string, or a list of
    them), ``recipients_file`` (the path of a file of recipients, one a line, ``#`` comments, as
    the command line's ``-R``; or a list of paths), ``sign`` (the path of an OpenSSH private key,
    or a list: a signature frame over the plaintext, FORMAT.md §12, as ``--sign``; a
    passphrase-protected key is refused, a ``.pub`` whose key ssh-agent holds signs through the
    agent; zseal containers only), ``compress``
    (``"zstd:3"``, ``"lz4"``, ``"gzip:6"``, ``"none"``), ``cipher`` (``"aes-256-gcm"``,
    ``"chacha20-poly1305"``), ``hash`` (``"blake3"``, ``"xxh3"``, ``"none"``), ``chunk_size``
    (bytes, a power of two), ``pad`` (round chunk and file lengths up to size classes,
    FORMAT.md §3.3). A passphrase, which reading takes too, is a parameter of its own."""

    recipients: str | Iterable[str] | None
    recipients_file: Any
    sign: Any
    compress: str | None
    cipher: str | None
    hash: str | None
    chunk_size: int | None
    pad: bool


class OpenOptions(TypedDict, total=False):
    """The keys that open a file, besides a passphrase: ``identity`` (a path, or a list of
    paths, of age identity files or OpenSSH private keys; an ``AGE-SECRET-KEY-1…`` string also
    works), ``max_work_factor`` (1 to 22: an age passphrase file whose scrypt work factor is
    higher is refused before any work), ``key_passphrase`` (unlocks a passphrase-protected
    OpenSSH identity: the passphrase, or a callable given the key's description), ``signers``
    (an OpenSSH public key, the path of a ``.pub`` file, or a list of them) and
    ``allowed_signers`` (the path of an OpenSSH allowed_signers file): with either, reading a
    zseal container succeeds only with a good signature by one of them (docs/FORMAT.md §12),
    reading it whole and in order; a crypt4gh file's is its detached signature, ``signature``
    (the path or URL of its ``.sig``; by default ``FILE.sig`` beside the file, FORMAT.md
    §13.9)."""

    identity: Any
    max_work_factor: int | None
    key_passphrase: str | Callable[[str], str | None] | None
    signers: Any
    allowed_signers: Any
    signature: Any


def take_keys(options: dict) -> dict:
    """The opening keys among a call's keyword arguments."""
    return {k: v for k, v in options.items() if k in OpenOptions.__annotations__}


def take_seal(what: str, options: dict, allowed: Iterable[str] = ()) -> dict:
    """The sealing options among a call's keyword arguments (recipients as a list); a name that
    is neither one of them nor in ``allowed`` is a TypeError, as Python reports one."""
    seal = {}
    for k, v in options.items():
        if k in SealOptions.__annotations__:
            # One string is one recipient, not a list of characters.
            many = k == "recipients" and v is not None and not isinstance(v, str)
            seal[k] = list(v) if many else v
        elif k not in allowed:
            raise TypeError(f"{what}() got an unexpected keyword argument {k!r}")
    return seal
