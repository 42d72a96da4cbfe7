"""``zseal::<url>``: zseal containers as plaintext files, for fsspec, pandas, pyarrow and Dask.

A chained filesystem over any other fsspec filesystem (local, ``s3://``, ``gs://``, ...)::

    pd.read_csv("zseal::s3://bucket/big.csv.zseal",
                storage_options={"zseal": {"identity": "me.key"}, "s3": {"anon": False}})
    pd.read_csv("zseal://big.csv.zseal", storage_options={"zseal": {"identity": "me.key"}})

``zseal::s3://…`` is fsspec's chain (fsspec loads s3fs for the inner layer); ``zseal://s3://…``
is one layer given the inner URL, whose ``"s3"`` options fsspec hands to this layer: it reads
through s3fs when installed, else through zseal's own object store (``_OwnStore``: one object
at a time, credentials from the environment). pandas sees a URL only in ``proto://`` or
``proto::proto://``, so a local file is ``zseal://d.csv.zseal``, not ``zseal::d.csv.zseal``.

Paths are the inner filesystem's. ``info()``/``size()``/``ls()`` report the plaintext size, read
from the container's authenticated trailer (this needs the key). Opening for reading fetches the
header and the trailer; a read fetches only the frames it covers, so a Dask task reading one
block of a large container fetches about that block. Opening for writing (``"wb"``) encrypts to
``recipients`` or ``passphrase``. Nothing is cached on disk; the plaintext exists only in the
buffers of the reads that asked for it.

Options (``storage_options={"zseal": {...}}``): ``identity`` (path or list of paths, or an
``AGE-SECRET-KEY-1…`` string), ``passphrase``, ``threads``, ``max_work_factor`` (an age
file's passphrase work factor limit, see :func:`zseal.open`); for writing ``recipients``,
``compress``, ``cipher``, ``hash``, ``chunk_size``, ``pad``, ``format`` (``"age"``: standard age
files). How the key reaches Dask workers: these
options are part of the filesystem, which Dask pickles into every task. An ``identity`` path is
read by each worker when it opens a file, so the file must exist at that path on every worker
(and only the path travels); an identity string or a passphrase travels inside the task graph to
every worker, through the scheduler, in the clear unless the cluster uses TLS.
"""

from __future__ import annotations

from typing import Any

import fsspec
from fsspec.implementations.chained import ChainedFileSystem
from fsspec.implementations.local import LocalFileSystem

from . import ZsealReader, ZsealWriter, _zseal
from .errors import MissingKeyError, OptionError, ZsealError
from .options import OpenOptions, SealOptions

__all__ = ["ZsealFileSystem"]


#: Schemes zseal's own object store reads and writes (docs/OBJECTS.md).
_OWN_SCHEMES = ("s3", "s3a", "gs", "az", "abfs", "abfss", "http", "https")

#: How to pass a key through fsspec: the text replacing the library's "pass identity=".
_HOW_TO_PASS = {
    "pass identity=": 'pass the identity as a zseal option (storage_options={"zseal": {"identity": "me.key"}}'
    ' in pandas and Dask, fsspec.open(url, zseal={"identity": …}), ZsealFileSystem(identity=…))',
    "pass passphrase=": 'pass the passphrase as a zseal option (storage_options={"zseal": {"passphrase": …}}'
    ' in pandas and Dask, fsspec.open(url, zseal={"passphrase": …}), ZsealFileSystem(passphrase=…))',
}


def _inner(protocol: str, options: dict[str, Any] | None) -> Any:
    """The inner fsspec filesystem; for an object store whose fsspec package is missing, zseal's
    own object store (its credentials from the environment, as the command line's)."""
    try:
        return fsspec.filesystem(protocol, **(options or {}))
    except ImportError:
        if protocol not in _OWN_SCHEMES:
            raise
    if options:
        raise OptionError(
            f"options for {protocol}:// ({', '.join(sorted(options))}) are its fsspec filesystem's, which is not "
            f"installed: install it (s3fs, gcsfs, adlfs), or drop the options and set the store's credentials in "
            f"the environment (AWS_*, GOOGLE_*, AZURE_*; docs/OBJECTS.md), which zseal's own object store reads"
        )
    return _OwnStore(protocol)


class _OwnStore:
    """The inner filesystem when it is zseal's own object store (s3fs or its kin not installed):
    it names objects and answers what one HEAD answers; the reads and writes are the Rust
    reader's and writer's. Listing needs the store's fsspec filesystem."""

    def __init__(self, scheme: str) -> None:
        self.scheme = scheme

    def unstrip_protocol(self, path: str) -> str:
        """The object's URL (``bucket/key`` or ``s3://bucket/key`` -> ``s3://bucket/key``)."""
        return path if "://" in path else f"{self.scheme}://{path}"

    def _version(self, path: str) -> tuple[int, str | None]:
        url = self.unstrip_protocol(path)
        seen = _zseal.object_version(url)
        if seen is None:
            raise FileNotFoundError(f"{url}: no such object")
        return seen

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        size, etag = self._version(path)
        return {"name": path.split("://", 1)[-1], "size": size, "type": "file", "ETag": etag}

    def exists(self, path: str, **kwargs: Any) -> bool:
        try:
            self._version(path)
        except FileNotFoundError:
            return False
        return True

    def isfile(self, path: str) -> bool:
        return self.exists(path)

    def isdir(self, path: str) -> bool:
        return False

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        """Nothing to do: an object store has no directories (fsspec.open asks before a write)."""

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        """Nothing to do, as makedirs."""

    def ukey(self, path: str) -> str:
        size, etag = self._version(path)
        return f"{self.unstrip_protocol(path)} {size} {etag}"

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(
            f"{name}: without the {self.scheme}:// fsspec filesystem (s3fs, gcsfs, adlfs) zseal reads and writes "
            f"one object at a time through its own object store; install it to list, copy or remove objects"
        )


def _key_hint(e: MissingKeyError) -> MissingKeyError:
    """The MissingKeyError `e` with its hint in fsspec's terms: identity= and passphrase= are
    not arguments a pandas or Dask user can pass."""
    msg = str(e)
    for lib, here in _HOW_TO_PASS.items():
        msg = msg.replace(lib, here)
    out = MissingKeyError(msg)
    out.__dict__.update(e.__dict__)
    return out


class ZsealFileSystem(ChainedFileSystem):
    """fsspec filesystem for the ``zseal`` protocol (see the module documentation)."""

    protocol = "zseal"
    root_marker = ""

    def __init__(
        self,
        target_protocol: str | None = None,
        target_options: dict[str, Any] | None = None,
        fs: fsspec.AbstractFileSystem | None = None,
        passphrase: str | None = None,
        threads: int | None = None,
        fo: str | None = None,
        format: str | None = None,
        **kwargs: Any,
    ) -> None:
        # The keys (zseal.OpenOptions) and the sealing options (zseal.SealOptions) are this
        # filesystem's; the rest are fsspec's.
        keys = {k: kwargs.pop(k) for k in list(kwargs) if k in OpenOptions.__annotations__}
        seal = {k: kwargs.pop(k) for k in list(kwargs) if k in SealOptions.__annotations__}
        # zseal://s3://bucket/key (one layer, the inner URL in the path): fsspec hands this layer
        # the whole storage_options, the inner filesystem's under its protocol's name.
        inner_options = kwargs.pop(target_protocol, None) if target_protocol else None
        if target_options is None:
            target_options = inner_options
        super().__init__(**kwargs)
        if fs is None:
            fs = _inner(target_protocol or "file", target_options)
        self.fs = fs
        self._read = {"passphrase": passphrase, "threads": threads, **keys}
        self._write = {"passphrase": passphrase, "threads": threads, "format": format, **seal}
        self._sizes: dict[tuple[Any, ...], int] = {}

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = str(path)
        for prefix in ("zseal::", "zseal://"):
            if path.startswith(prefix):
                path = path[len(prefix) :]
        return path

    def unstrip_protocol(self, name: str) -> str:
        """``zseal://`` followed by the inner filesystem's full URL (``zseal://file:///d/x``,
        ``zseal://s3://bucket/key``): a URL this filesystem takes back (``_strip_protocol``
        leaves the inner URL, which the inner filesystem strips), and one that starts with this
        filesystem's own protocol, which is how DuckDB routes the names ``glob`` returns back to
        a registered filesystem (``zseal::file://…`` was sent to DuckDB's local files)."""
        return "zseal://" + self.fs.unstrip_protocol(name)

    @classmethod
    def _get_kwargs_from_urls(cls, path: str) -> dict[str, Any]:
        """``zseal://s3://bucket/key`` names its inner filesystem: opened from the URL alone
        (``fsspec.open``, ``url_to_fs``), that is the filesystem it reads through."""
        inner = cls._strip_protocol(path)
        if "://" in inner:
            protocol = inner.split("://", 1)[0]
            if protocol and protocol != "file":
                return {"target_protocol": protocol}
        return {}

    # -- reading and writing --------------------------------------------------------------

    def _source(self, path: str) -> tuple[Any, Any]:
        """What the reader reads: a local path or an object's URL (read by Rust directly), or an
        inner file opened without read-ahead cache (the reader buffers frame headers itself and
        asks for whole frames, so every byte fetched is one it needs)."""
        if isinstance(self.fs, _OwnStore):
            return self.fs.unstrip_protocol(path), None
        if isinstance(self.fs, LocalFileSystem):
            return self.fs._strip_protocol(path), None
        try:
            f = self.fs.open(path, "rb", cache_type="none")
        except TypeError:
            f = self.fs.open(path, "rb")
        return f, f

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: Any = None,
        autocommit: bool = True,
        cache_options: Any = None,
        **kwargs: Any,
    ) -> Any:
        path = self._strip_protocol(path)
        if "r" in mode:
            src, owned = self._source(path)
            try:
                return ZsealReader(src, _owned=owned, **self._read)
            except BaseException as e:
                if owned is not None:
                    owned.close()
                if isinstance(e, MissingKeyError):
                    raise _key_hint(e) from None
                raise
        exclusive = "x" in mode
        if isinstance(self.fs, _OwnStore):
            return ZsealWriter(self.fs.unstrip_protocol(path), exclusive=exclusive, **self._write)
        if isinstance(self.fs, LocalFileSystem):
            return ZsealWriter(self.fs._strip_protocol(path), exclusive=exclusive, **self._write)
        if exclusive and self.fs.exists(path):
            raise FileExistsError(path)
        inner = self.fs.open(path, "wb")
        try:
            return ZsealWriter(inner, _owned=inner, **self._write)
        except BaseException:
            inner.close()
            raise

    # -- metadata: plaintext sizes --------------------------------------------------------

    def _plain_size(self, path: str, inner: dict[str, Any]) -> int:
        stamp = (
            path,
            inner.get("size"),
            inner.get("mtime") or inner.get("LastModified") or inner.get("ETag"),
        )
        size = self._sizes.get(stamp)
        if size is None:
            with self._open(path, "rb") as f:
                size = f.size
            self._sizes[stamp] = size
        return size

    def _plain(self, entry: dict[str, Any], strict: bool) -> dict[str, Any]:
        if entry.get("type") != "file":
            return entry
        entry = dict(entry)
        entry["encrypted_size"] = entry.get("size")
        try:
            entry["size"] = self._plain_size(entry["name"], entry)
        except ZsealError as e:
            if strict:
                raise
            entry["size"] = None
            entry["zseal_error"] = str(e)
        return entry

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        return self._plain(self.fs.info(self._strip_protocol(path), **kwargs), strict=True)

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> Any:
        out = self.fs.ls(self._strip_protocol(path), detail=detail, **kwargs)
        if not detail:
            return out
        # A directory may hold files that are not containers: they are listed with size None.
        return [self._plain(e, strict=False) for e in out]

    # -- everything else is the inner filesystem's ----------------------------------------

    def exists(self, path: str, **kwargs: Any) -> bool:
        return self.fs.exists(self._strip_protocol(path), **kwargs)

    def isdir(self, path: str) -> bool:
        return self.fs.isdir(self._strip_protocol(path))

    def isfile(self, path: str) -> bool:
        return self.fs.isfile(self._strip_protocol(path))

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        self.fs.mkdir(self._strip_protocol(path), create_parents=create_parents, **kwargs)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        self.fs.makedirs(self._strip_protocol(path), exist_ok=exist_ok)

    def rmdir(self, path: str) -> None:
        self.fs.rmdir(self._strip_protocol(path))

    def rm_file(self, path: str) -> None:
        self.fs.rm_file(self._strip_protocol(path))

    def rm(self, path: Any, recursive: bool = False, maxdepth: Any = None) -> None:
        self.fs.rm(self._strip_protocol(path), recursive=recursive, maxdepth=maxdepth)

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        # A copy of the container: still encrypted, still authenticated.
        self.fs.cp_file(self._strip_protocol(path1), self._strip_protocol(path2), **kwargs)

    def modified(self, path: str) -> Any:
        return self.fs.modified(self._strip_protocol(path))

    def created(self, path: str) -> Any:
        return self.fs.created(self._strip_protocol(path))

    def ukey(self, path: str) -> str:
        return self.fs.ukey(self._strip_protocol(path))
