"""One container sealed by many Dask workers (FORMAT.md §11): each task seals its own range of
whole chunks with the payload key alone, on all of its worker's cores, and returns its frames'
lengths and BLAKE3 chaining values; this process writes the header and the trailer, whose
digest (what ``b3sum`` prints of the plaintext) is merged from the tasks' values with no second
pass. The result is an ordinary container that ``zseal decrypt`` reads.

Sources and destinations are local paths on a filesystem every worker shares, or objects
(``s3://``, ``gs://``, ``az://``). Into an object, the job is one multipart upload: every task
uploads the middle of its output as parts under numbers reserved for it and returns its first
5 MiB and its last bytes, which this process uploads between them with the header and the
trailer (FORMAT.md §11.3). Into a file, each task writes a part file beside the destination and
the parts are joined. Either way the destination appears whole or not at all.

    import zseal.dask
    r = zseal.dask.encrypt("s3://raw/big.tar", "s3://share/big.tar.zseal", recipients=["age1…"])
    r.blake3   # == b3sum of the plaintext

    python -m zseal.dask encrypt big.tar big.tar.zseal -r age1… --scheduler tcp://h:8786

Every task reads the version of an object source that this process saw when it planned the
job: its ETag travels with the task, and each of the task's GETs is conditional on it
(``If-Match``). A source replaced while the job runs fails the job ("the source changed during
the job"), leaving no destination, instead of sealing the old version's first ranges beside the
new one's last.

What a cluster operator can see: the task key (the payload key: it seals and opens this file's
frames, not the file key) travels to the workers inside the tasks' arguments, never in a task's
name; whoever controls the scheduler or a worker, or the network between them without Dask's
TLS (``tls://``), can take it with the task. Use TLS between scheduler and workers. The key and
the store settings travel wrapped (:class:`_Secret`): Dask logs a failing task's arguments, and
their repr is a fixed text, never the key.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import secrets
import shutil
import sys
from typing import Any, Sequence, TypedDict, Unpack

from . import _zseal
from .errors import MissingKeyError, OptionError, ZsealFileExistsError
from .options import OpenOptions, SealOptions, take_keys, take_seal


@dataclasses.dataclass(frozen=True)
class Result:
    """What a distributed seal did."""

    plaintext_size: int
    stored_size: int
    #: The whole-plaintext BLAKE3 (hex, as ``b3sum`` prints it), or None with ``hash="none"``.
    blake3: str | None
    tasks: int
    #: Parts written: the object's multipart parts, or the part files joined.
    parts: int
    #: The workers the tasks ran on (their addresses; ``"local"`` without a cluster).
    workers: tuple[str, ...]


class _Secret:
    """A secret among a task's arguments (the payload key, the store's settings): Dask logs a
    failing task ("Compute Failed", with the task's repr, which holds its arguments' reprs), and
    this one's repr and str are a fixed text that names what it holds, never its bytes. It
    pickles with its value (a task needs it): only Dask's TLS keeps it off the network."""

    __slots__ = ("_what", "_value")

    def __init__(self, what: str, value: Any) -> None:
        self._what = what
        self._value = value

    def reveal(self) -> Any:
        return self._value

    def __repr__(self) -> str:
        return f"<zseal {self._what}>"

    __str__ = __repr__


def _where() -> str:
    """The address of the worker running this task (``"local"`` without a cluster)."""
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return "local"


def _seal_task(task_key: _Secret, first: int, src: str, version: str | None, start: int, end: int,
               out: str | bytes, threads: int | None, settings: _Secret) -> tuple[Any, str]:
    """One task: seals plaintext bytes start..end of src (an object: of the ETag ``version``)
    into the part file, or as its parts of the upload the ticket ``out`` names."""
    key, opts = task_key.reveal(), settings.reveal()
    # A part file is written beside itself and renamed into place when whole (the library's
    # sink): an earlier attempt of a rescheduled task, still running, never truncates or mixes
    # into the attempt Dask kept.
    return _zseal.seal_range(key, first, src, start, end, out, threads, opts, version), _where()


def _wants_progress(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    try:
        from IPython import get_ipython

        if get_ipython() is not None and "IPKernelApp" in get_ipython().config:
            return True
    except ImportError:
        pass
    return sys.stderr.isatty()


def _exists(dst: str, why: str) -> ZsealFileExistsError:
    e = ZsealFileExistsError(f"{dst}: {why}")
    e.kind, e.filename = "io", dst
    return e


def _is_url(p: str) -> bool:
    return "://" in p


#: fsspec's option names (s3fs, gcsfs, adlfs) and the object_store settings they stand for.
_ALIASES = {
    "key": "aws_access_key_id",
    "secret": "aws_secret_access_key",
    "token": "aws_session_token",
    "endpoint_url": "aws_endpoint",
    "region": "aws_region",
    "region_name": "aws_region",
    "account_name": "azure_storage_account_name",
    "account_key": "azure_storage_account_key",
    "sas_token": "azure_storage_sas_key",
}


def _settings(url: str, storage_options: dict | None) -> list[tuple[str, str]]:
    """storage_options as settings of the URL's store over the environment: fsspec's names
    (``key``, ``secret``, ``token``, ``endpoint_url``, ``client_kwargs={"region_name": …}``,
    ``anon``; gcsfs's ``token`` as a service account file; adlfs's ``account_name``,
    ``account_key``, ``sas_token``) or object_store's own keys (``aws_…``, ``google_…``,
    ``azure_…``). Unknown names are refused by the store, naming them."""
    out: list[tuple[str, str]] = []
    gcs = url.startswith("gs://")
    for k, v in (storage_options or {}).items():
        if v is None:
            continue
        if k == "client_kwargs":
            for ck, cv in v.items():
                if ck in ("region_name", "endpoint_url") and cv is not None:
                    out.append((_ALIASES[ck], str(cv)))
                else:
                    raise OptionError(f"storage_options client_kwargs {ck!r} is not one zseal.dask uses")
        elif k == "anon":
            if v:
                out.append(("aws_skip_signature", "true"))
        elif k == "token" and gcs:
            out.append(("google_service_account", str(v)))
        else:
            out.append((_ALIASES.get(k, k), str(v) if not isinstance(v, bool) else str(v).lower()))
    return out


def _job_settings(urls: list[str], storage_options: dict | None) -> list[tuple[str, str]]:
    """The settings for every object of one job: its URLs must be of one kind of store when
    storage_options are given (each store takes its own keys)."""
    urls = [u for u in urls if _is_url(u)]
    if not storage_options or not urls:
        return []
    kinds = {u.split("://", 1)[0] for u in urls}
    if len(kinds) > 1:
        raise OptionError(
            f"storage_options apply to one kind of store, and this job has {sorted(kinds)}: "
            "set the other store's credentials in the environment instead"
        )
    return _settings(urls[0], storage_options)


def _source(src: str, settings: list[tuple[str, str]]) -> tuple[int, str | None]:
    """The source's size and, for an object, its ETag (one HEAD): the version every task reads."""
    if _is_url(src):
        seen = _zseal.object_version(src, settings)
        if seen is None:
            raise FileNotFoundError(f"{src}: no such object")
        return seen
    return os.path.getsize(src), None


def _client(client: Any) -> Any:
    if client is not None:
        return client
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def _run(client: Any, fn: Any, args: list[tuple], name: str, progress: bool | None,
         stop: Any = None) -> list[Any]:
    """Runs fn over args on the cluster (or Dask's threaded scheduler). Any failure, or an
    interrupt, cancels the tasks, calls ``stop`` (which aborts an upload, so that a task still
    running fails at its next part), and waits up to a minute for the tasks that were running
    to end before it propagates: the caller's clean-up then sees no task still writing."""
    if client is None:
        import dask

        return list(dask.compute(*[dask.delayed(fn)(*a) for a in args], scheduler="threads"))
    futures: list[Any] = []
    try:
        # Task names carry a random token and the range number, never a key.
        futures = [client.submit(fn, *a, key=f"{name}-{k}", pure=False) for k, a in enumerate(args)]
        if _wants_progress(progress):
            from distributed import progress as show_progress

            show_progress(futures)
        return client.gather(futures)
    except BaseException:
        client.cancel(futures)
        if stop is not None:
            stop()
        _settle(client, futures)
        raise


def _settle(client: Any, futures: list[Any]) -> None:
    """Waits (a minute at most) until no task of these futures runs on a worker: a cancelled
    future is forgotten at once, while its task, if it started, runs on to its end."""
    import time

    keys = {f.key for f in futures}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            running = client.processing()
        except Exception:  # noqa: BLE001 - a cluster gone away runs nothing
            return
        if not any(str(k) in keys or k in keys for ks in running.values() for k in ks):
            return
        time.sleep(0.1)


class Job(TypedDict, total=False):
    """What every zseal.dask job takes besides its keys (``**job``).

    ``client``: the Dask client (default: the current one, else Dask's local threaded
    scheduler). ``tasks``: how many ranges (default: two per worker thread). ``threads``: the
    threads each task's engine runs (default: one per core, or ``ZSEAL_THREADS``). ``progress``:
    Dask's progress bar while the tasks run (default: in a notebook, or when standard error is a
    terminal). ``storage_options``: the object store's settings over the environment (fsspec's
    names such as ``key``, ``secret``, ``endpoint_url``, or object_store's ``aws_…``,
    ``google_…``, ``azure_…`` keys); they travel to the tasks in their arguments."""

    client: Any
    tasks: int | None
    threads: int | None
    progress: bool | None
    storage_options: dict | None


class WriteJob(Job, total=False):
    """A job that writes ``dst``: ``overwrite`` replaces an existing one (default: refused)."""

    overwrite: bool


@dataclasses.dataclass
class _Run:
    """One job's settings, resolved: its client, its URLs' settings, the task count asked for,
    and a token naming its tasks and files."""

    client: Any
    settings: list[tuple[str, str]]
    tasks: int
    threads: int | None
    progress: bool | None
    overwrite: bool
    token: str = dataclasses.field(default_factory=lambda: secrets.token_hex(8))

    @classmethod
    def of(cls, what: str, job: dict, urls: list[str], writes: bool) -> _Run:
        if "-" in urls:
            raise OptionError(
                f"zseal.dask.{what}: '-' (standard input or output) cannot be a source or a destination: "
                "the tasks read and write by offset, on many workers; give a file every worker shares "
                "or an object URL (for a stream, use the zseal command)"
            )
        allowed = (WriteJob if writes else Job).__annotations__
        for k in job:
            if k not in allowed:
                raise TypeError(f"zseal.dask.{what}() got an unexpected keyword argument {k!r}")
        dst = urls[-1] if writes else None
        overwrite = bool(job.get("overwrite", False))
        if dst is not None and not _is_url(dst) and os.path.lexists(dst) and not overwrite:
            raise _exists(dst, "it exists (overwrite=True replaces it; -f on the command line)")
        client = _client(job.get("client"))
        return cls(
            client=client,
            settings=_job_settings(urls, job.get("storage_options")),
            tasks=_tasks(client, job.get("tasks")),
            threads=job.get("threads"),
            progress=job.get("progress"),
            overwrite=overwrite,
        )

    def secret_settings(self) -> _Secret:
        """The settings as the tasks get them: they may hold the store's credentials."""
        return _Secret("store settings", self.settings)

    def run(self, fn: Any, args: list[tuple], what: str, stop: Any = None) -> list[Any]:
        return _run(self.client, fn, args, f"zseal-{what}-{self.token}", self.progress, stop)

    def result(self, plain: int, stored: int, digest: str | None, ranges: list, parts: int,
               done: list[Any]) -> Result:
        return Result(
            plaintext_size=plain,
            stored_size=stored,
            blake3=digest,
            tasks=len(ranges),
            parts=parts,
            workers=tuple(sorted({d[1] for d in done})),
        )


class EncryptJob(WriteJob, SealOptions, total=False):
    """What :func:`encrypt` takes: the job's options and the sealing options."""


def encrypt(src: Any, dst: Any, *, passphrase: str | None = None, **job: Unpack[EncryptJob]) -> Result:
    """Seals ``src`` into the container ``dst`` with a Dask cluster (``job``: see
    :class:`WriteJob` and :class:`zseal.SealOptions`). Each may be a local path (on a filesystem every worker shares) or an
    object's URL (``s3://``, ``gs://``, ``az://``; credentials from the environment, as for the
    command line, and ``storage_options``): an object destination is one multipart upload,
    which every task adds its parts to (FORMAT.md §11.3). ``dst`` appears only when every task
    succeeded (a failure or an interrupt aborts the upload: no object, no parts); an existing
    ``dst`` is replaced only with ``overwrite=True``."""
    src, dst = os.fspath(src), os.fspath(dst)
    seal = take_seal("zseal.dask.encrypt", job, allowed=WriteJob.__annotations__)
    run = _Run.of("encrypt", {k: v for k, v in job.items() if k not in seal}, [src, dst], writes=True)
    size, version = _source(src, run.settings)
    split = _zseal.SplitSeal(passphrase=passphrase, **seal)
    ranges = split.ranges(size, run.tasks)
    if not _is_url(src):
        src = os.path.abspath(src)
    key = _Secret("task key", split.task_key())
    if _is_url(dst):
        upload = split.upload(dst, ranges, run.overwrite, run.settings)
        try:
            args = [(key, f, src, version, a, b, upload.ticket(k), run.threads, run.secret_settings())
                    for k, (f, a, b) in enumerate(ranges)]
            done = run.run(_seal_task, args, "seal-range", stop=upload.abort)
            digest, plain, stored, parts = upload.complete(
                split, [d[0][0] for d in done], [d[0][1] for d in done]
            )
        except BaseException:
            upload.abort()
            raise
    else:
        digest, plain, stored, done = _encrypt_to_file(split, key, (src, version), dst, ranges, run)
        parts = len(ranges)
    return run.result(plain, stored, digest, ranges, parts, done)


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def _publish(tmp: str, dst: str, overwrite: bool) -> None:
    """Makes the finished (and synced) temporary file, private while it was written, ``dst``,
    with the mode a new file gets from the umask, as the command line's output; without
    overwrite, only if there is none. The directory is synced after, as the command line's is:
    until then a crash can lose the new name."""
    os.chmod(tmp, 0o666 & ~_umask())
    if overwrite:
        os.replace(tmp, dst)
    else:
        # No clobber: a destination that appeared meanwhile is not replaced.
        try:
            os.link(tmp, dst)
        except FileExistsError:
            raise _exists(dst, "it appeared while the job ran (overwrite=True replaces it; -f on the command line)") from None
        os.unlink(tmp)
    _sync_dir(os.path.dirname(os.path.abspath(dst)))


def _sync_dir(path: str) -> None:
    """Syncs the directory ``path`` (its entries: a rename, a link), where the system can."""
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temporary(dst: str, token: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(dst)), f".{os.path.basename(dst)}.zseal-{token}")


def _encrypt_to_file(split: Any, key: _Secret, source: tuple[str, str | None], dst: str, ranges: list,
                     run: _Run) -> tuple:
    """Each task writes its frames to a part file beside ``dst``; the parts are joined into a
    temporary file that becomes ``dst`` (without overwrite, only if there is none)."""
    src, version = source
    where = os.path.dirname(os.path.abspath(dst))
    parts_dir = os.path.join(where, f".{os.path.basename(dst)}.parts-{run.token}")
    os.mkdir(parts_dir, 0o700)
    tmp = _temporary(dst, run.token)
    parts = [os.path.join(parts_dir, f"{k:06d}") for k in range(len(ranges))]
    args = [
        (key, first, src, version, start, end, parts[k], run.threads, run.secret_settings())
        for k, (first, start, end) in enumerate(ranges)
    ]
    try:
        done = run.run(_seal_task, args, "seal-range")
        results = [d[0] for d in done]
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        # The header, the part files (each checked against its task's result) and the end, a
        # frame at a time (a padded file's padding is not held in memory); synced.
        digest, plain = split.join(results, parts, tmp)
        stored = os.path.getsize(tmp)
        _publish(tmp, dst, run.overwrite)
    finally:
        shutil.rmtree(parts_dir, ignore_errors=True)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return digest, plain, stored, done


def _open_task(open_key: _Secret, src: str, version: str | None, start: int, end: int,
               out: str | bytes | None, threads: int | None, settings: _Secret) -> tuple[Any, str]:
    """One task: opens plaintext bytes start..end of the container src (an object: of the ETag
    ``version``) into out (nowhere, a file at that offset, or its parts of an upload)."""
    key, opts = open_key.reveal(), settings.reveal()
    return _zseal.open_range(key, src, start, end, out, threads, opts, version), _where()


def _opener(what: str, src: str, passphrase: str | None, job: dict, writes: bool,
            urls: list[str]) -> tuple[Any, _Run]:
    """The job's run and the coordinator's opener of ``src``, with the keys among ``job``."""
    keys = take_keys(job)
    run = _Run.of(what, {k: v for k, v in job.items() if k not in keys}, urls, writes)
    return _zseal.SplitOpen(src, passphrase=passphrase, settings=run.settings, **keys), run


class OpenJob(Job, OpenOptions, total=False):
    """What :func:`verify` takes: the job's options and the keys (``identity``, …)."""


class DecryptJob(WriteJob, OpenOptions, total=False):
    """What :func:`decrypt` takes: the job's options and the keys (``identity``, …)."""


def verify(src: Any, *, passphrase: str | None = None, **job: Unpack[OpenJob]) -> Result:
    """Checks the whole container ``src`` (a path on a shared filesystem or an object's URL)
    with a Dask cluster (``job``: see :class:`Job` and :class:`zseal.OpenOptions`): each task authenticates its range of
    frames, the last one the trailer, and this process merges their BLAKE3 chaining values and
    compares the digest with the container's (FORMAT.md §11.4). Any damage raises
    (IntegrityError); a wrong key raises before any task runs. ``Result.blake3`` is the verified
    digest (None for a container whose digest is not BLAKE3: its frames are all authenticated,
    the digest is not recomputed)."""
    src = _absolute(src)
    opener, run = _opener("verify", src, passphrase, job, False, [src])
    ranges = opener.ranges(run.tasks)
    key, version = _Secret("open key", opener.open_key()), opener.version
    args = [(key, src, version, a, b, None, run.threads, run.secret_settings()) for a, b in ranges]
    done = run.run(_open_task, args, "verify-range")
    digest = opener.check([d[0] for d in done])
    return run.result(opener.plaintext_size, opener.stored_size, digest, ranges, 0, done)


def decrypt(src: Any, dst: Any, *, passphrase: str | None = None, **job: Unpack[DecryptJob]) -> Result:
    """Decrypts the container ``src`` into ``dst`` with a Dask cluster (``job``: see
    :class:`WriteJob` and :class:`zseal.OpenOptions`); each may be a path on a shared filesystem or an object's URL. Each task
    opens its range of whole chunks and writes it at its offset (a private temporary file beside
    ``dst``) or as the parts of one multipart upload numbered by offset; ``dst`` appears only
    once every task succeeded and the merged digest equals the container's (FORMAT.md §11.4). A
    damaged frame, a wrong key or any failure leaves no ``dst`` (the upload is aborted); an
    existing ``dst`` is replaced only with ``overwrite=True``."""
    src, dst = _absolute(src), os.fspath(dst)
    opener, run = _opener("decrypt", src, passphrase, job, True, [src, dst])
    key, version = _Secret("open key", opener.open_key()), opener.version
    if _is_url(dst):
        upload, ranges = opener.upload(dst, run.tasks, run.overwrite)
        try:
            args = [(key, src, version, a, b, upload.ticket(k, a), run.threads, run.secret_settings())
                    for k, (a, b) in enumerate(ranges)]
            done = run.run(_open_task, args, "open-range", stop=upload.abort)
            digest = opener.check([d[0][0] for d in done])
            parts = upload.complete_aligned([d[0][1] for d in done])
        except BaseException:
            upload.abort()
            raise
    else:
        ranges = opener.ranges(run.tasks)
        tmp = _temporary(dst, run.token)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, opener.plaintext_size)
            os.close(fd)
            fd = -1
            args = [(key, src, version, a, b, tmp, run.threads, run.secret_settings()) for a, b in ranges]
            done = run.run(_open_task, args, "open-range")
            digest = opener.check([d[0] for d in done])
            _publish(tmp, dst, run.overwrite)
        finally:
            if fd >= 0:
                os.close(fd)
            if os.path.exists(tmp):
                os.unlink(tmp)
        parts = 0
    return run.result(opener.plaintext_size, opener.stored_size, digest, ranges, parts, done)


def _absolute(p: Any) -> str:
    """A URL as it is; a path made absolute (the workers may run elsewhere)."""
    p = os.fspath(p)
    return p if _is_url(p) else os.path.abspath(p)


def _tasks(client: Any, tasks: int | None) -> int:
    """The number of ranges: as given, else two per worker thread of the cluster."""
    if tasks is not None:
        return tasks
    nthreads = sum(client.nthreads().values()) if client is not None else os.cpu_count() or 1
    return 2 * max(1, nthreads)


def _passphrase(file: str | None) -> str | None:
    """The first line of ``file`` (``-``: standard input), else ``ZSEAL_PASSPHRASE``."""
    if file is None:
        return os.environ.get("ZSEAL_PASSPHRASE")
    if file == "-":
        line = sys.stdin.readline()
    else:
        with open(file, encoding="utf-8") as f:
            line = f.readline()
    line = line.rstrip("\r\n")
    if not line:
        raise ValueError(f"passphrase file {file} is empty: put the passphrase on its first line")
    return line


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m zseal.dask", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--tasks", type=int, help="ranges to cut the job into (default: two per worker thread)")
    common.add_argument("--threads", type=int, help="engine threads per task (default: one per core)")
    common.add_argument("--scheduler", help="the Dask scheduler's address (default: a local scheduler)")
    common.add_argument("--connect-timeout", type=float, default=30.0, help="seconds to reach the scheduler")
    common.add_argument("--passphrase-file", metavar="FILE",
                        help="the passphrase on the first line of FILE (- reads stdin; else ZSEAL_PASSPHRASE)")
    e = sub.add_parser("encrypt", parents=[common], help="seal a file or object into a container")
    e.add_argument("src")
    e.add_argument("dst", nargs="?", help="the container (or -o)")
    e.add_argument("-o", "--output", help="the container (instead of DST)")
    e.add_argument("-r", "--recipient", action="append", default=[], help="age1…, age1pq1… or ssh-… (repeatable)")
    e.add_argument("-R", "--recipients-file", action="append", default=[], metavar="FILE",
                   help="every recipient in FILE, one a line (repeatable)")
    e.add_argument("-c", "--compress")
    e.add_argument("--cipher")
    e.add_argument("--hash")
    e.add_argument("--chunk-size", type=int)
    e.add_argument("--pad", action="store_true")
    e.add_argument("-f", "--force", action="store_true", help="replace an existing destination")
    d = sub.add_parser("decrypt", parents=[common], help="decrypt a container into a file or object")
    d.add_argument("src")
    d.add_argument("dst", nargs="?", help="the plaintext's file or object (or -o)")
    d.add_argument("-o", "--output", help="the plaintext's file or object (instead of DST)")
    d.add_argument("-f", "--force", action="store_true", help="replace an existing destination")
    v = sub.add_parser("verify", parents=[common], help="check a whole container")
    v.add_argument("src")
    for p in (d, v):
        p.add_argument("-i", "--identity", action="append", default=[], help="an identity file (repeatable)")
    a = ap.parse_args(argv)
    if a.command != "verify":
        if (a.dst is None) == (a.output is None):
            ap.error(f"{a.command}: give the destination once, as DST or with -o")
        a.dst = a.dst if a.dst is not None else a.output
    # A passphrase comes from --passphrase-file, else the environment, as for the command line.
    try:
        passphrase = _passphrase(a.passphrase_file)
    except (OSError, ValueError) as err:
        print(f"zseal: error: {err}", file=sys.stderr)
        return 1
    client = None
    if a.scheduler:
        from distributed import Client

        try:
            client = Client(a.scheduler, timeout=a.connect_timeout)
        except (OSError, TimeoutError) as err:
            print(
                f"zseal: error: cannot reach the Dask scheduler at {a.scheduler}: {err} "
                "(is it running, and is the address right?)",
                file=sys.stderr,
            )
            return 1
    if a.command == "encrypt" and not (a.recipient or a.recipients_file or passphrase):
        print("zseal: error: no key to encrypt to: give -r RECIPIENT, -R FILE or --passphrase-file FILE "
              "(or set ZSEAL_PASSPHRASE)", file=sys.stderr)
        return 1
    try:
        if a.command == "encrypt":
            r = encrypt(
                a.src,
                a.dst,
                recipients=a.recipient or None,
                recipients_file=a.recipients_file or None,
                passphrase=None if a.recipient or a.recipients_file else passphrase,
                compress=a.compress,
                cipher=a.cipher,
                hash=a.hash,
                chunk_size=a.chunk_size,
                pad=a.pad,
                client=client,
                overwrite=a.force,
                tasks=a.tasks,
                threads=a.threads,
            )
            verb = f"sealed {r.plaintext_size} bytes into {r.stored_size}"
        else:
            keys = dict(identity=a.identity or None, passphrase=passphrase, client=client, tasks=a.tasks,
                        threads=a.threads)
            if a.command == "decrypt":
                r = decrypt(a.src, a.dst, overwrite=a.force, **keys)
                verb = f"decrypted {r.stored_size} bytes into {r.plaintext_size}"
            else:
                r = verify(a.src, **keys)
                verb = f"verified {r.plaintext_size} bytes in {r.stored_size}"
    except Exception as err:  # noqa: BLE001 - one line on stderr, as the command prints
        # The library names Python's keyword arguments; this command line has flags for them.
        hint = " (here: -i FILE, or --passphrase-file FILE)" if isinstance(err, MissingKeyError) else ""
        print(f"zseal: error: {err}{hint}", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()
    print(
        f"{verb} in {r.tasks} tasks ({r.parts} parts) on {len(r.workers)} worker(s); blake3 {r.blake3 or '-'}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
