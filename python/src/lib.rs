//! `zseal._zseal`: the Python bindings, over the library (not the command line). The Python
//! package (`python/zseal/`) wraps these in `io` classes and an fsspec filesystem.
//!
//! Every call that does real work releases the GIL (`Python::detach`); a Python file object as
//! the source or sink is called back with the GIL taken again. The chunk work itself runs on the
//! library's shared pool, so a large read uses every core.

// The library's huge-page allocator, as the command installs it: every file a Dask task opens
// allocates chunk buffers.
#[global_allocator]
static ALLOC: zseal::alloc::HugeForLarge = zseal::alloc::HugeForLarge;
mod records;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyDict};
use zeroize::Zeroizing;
use zseal::crypto::recipients::{self, KeyPassphrase};
use zseal::crypto::Stanza;
use zseal::io::{Destination, OutputFile};
use zseal::pipeline::Threads;
use zseal::{
    AgeIdentity, AgeRecipient, Codec, DecryptOptions, EncryptOptions, Error, ErrorKind, FileKey,
    HashAlg, Identity, KeyNeeded, Passphrase, Recipient, Sealed,
};

// ---------------------------------------------------------------------------------------------
// Errors: the library's kind picks the Python class (defined in zseal/errors.py), the message is
// the library's, prefixed with the file it concerns.

/// The Python exception class for a library error.
fn class_for(e: &Error) -> &'static str {
    let kind = e.kind();
    match kind {
        ErrorKind::Io => match e {
            Error::Io(io) if io.kind() == io::ErrorKind::NotFound => "ZsealFileNotFoundError",
            _ => "ZsealIOError",
        },
        ErrorKind::NotZseal | ErrorKind::UnsupportedVersion | ErrorKind::NotRecord => {
            "NotZsealError"
        }
        ErrorKind::DictionaryMissing => "MissingDictionaryError",
        ErrorKind::WrongPassphrase | ErrorKind::NoMatchingKey => "WrongKeyError",
        ErrorKind::InvalidOption | ErrorKind::RangePastEnd => "OptionError",
        k if k.is_integrity() || k == ErrorKind::InvalidHeader || k == ErrorKind::Limit => {
            "IntegrityError"
        }
        _ => "ZsealError",
    }
}

fn raise(py: Python<'_>, class: &str, kind: &str, name: &str, message: &str) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let cls = py.import("zseal.errors")?.getattr(class)?;
        let text = if name.is_empty() {
            message.to_string()
        } else {
            format!("{name}: {message}")
        };
        let exc = cls.call1((text,))?;
        exc.setattr("kind", kind)?;
        exc.setattr("filename", if name.is_empty() { None } else { Some(name) })?;
        Ok(PyErr::from_value(exc))
    })();
    made.unwrap_or_else(|e| e)
}

/// Converts a library error about `name` into the Python exception. An I/O error that started
/// as a Python exception (raised by a file object we read from) is re-raised as it was.
pub(crate) fn to_py(py: Python<'_>, name: &str, e: Error) -> PyErr {
    if let Error::Io(io) = &e {
        if let Some(inner) = io.get_ref().and_then(|r| r.downcast_ref::<PyErr>()) {
            return inner.clone_ref(py);
        }
    }
    raise(py, class_for(&e), e.kind().name(), name, &e.to_string())
}

/// The error for a key that the caller did not pass.
fn missing_key(py: Python<'_>, name: &str, message: String) -> PyErr {
    raise(py, "MissingKeyError", "missing key", name, &message)
}

fn option_error(message: impl Into<String>) -> Error {
    Error::InvalidOption(message.into())
}

// ---------------------------------------------------------------------------------------------
// Sources and sinks: a path (read by Rust alone) or any Python binary file object.

/// A Python binary file object as a Rust reader, writer and seeker.
struct PyFileObj(Py<PyAny>);

fn py_io(e: PyErr) -> io::Error {
    io::Error::other(e)
}

impl Read for PyFileObj {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Python::attach(|py| {
            let got = self
                .0
                .bind(py)
                .call_method1("read", (buf.len(),))
                .map_err(py_io)?;
            if got.is_none() {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "the file object returned None: a non-blocking stream is not supported",
                ));
            }
            // bytes, or a bytearray from a raw file's readall-style read.
            let bytes = got
                .extract::<PyBackedBytes>()
                .map_err(|e| py_io(PyErr::from(e)))?;
            let n = check_len(bytes.len(), buf.len())?;
            buf[..n].copy_from_slice(&bytes);
            Ok(n)
        })
    }
}

fn check_len(got: usize, asked: usize) -> io::Result<usize> {
    if got > asked {
        return Err(io::Error::other(format!(
            "the file object returned {got} bytes when {asked} were asked for"
        )));
    }
    Ok(got)
}

impl Seek for PyFileObj {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let (off, whence): (i128, u8) = match to {
            SeekFrom::Start(p) => (p.into(), 0),
            SeekFrom::Current(d) => (d.into(), 1),
            SeekFrom::End(d) => (d.into(), 2),
        };
        Python::attach(|py| {
            self.0
                .bind(py)
                .call_method1("seek", (off, whence))
                .and_then(|p| p.extract::<u64>())
                .map_err(py_io)
        })
    }
}

impl Write for PyFileObj {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Python::attach(|py| {
            let n = self
                .0
                .bind(py)
                .call_method1("write", (PyBytes::new(py, buf),))
                .map_err(py_io)?;
            // A raw file may write part of the buffer; None means it would block.
            match n.extract::<Option<usize>>().map_err(py_io)? {
                Some(n) => Ok(n.min(buf.len())),
                None => Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "the file object returned None: a non-blocking stream is not supported",
                )),
            }
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        Python::attach(|py| {
            self.0
                .bind(py)
                .call_method0("flush")
                .map(drop)
                .map_err(py_io)
        })
    }
}

trait Source: Read + Seek + Send {}
impl<T: Read + Seek + Send> Source for T {}

/// Reads of the frame headers are a few bytes: a buffer turns them into one call per frame.
const SOURCE_BUFFER: usize = 64 << 10;

/// `file` is a path (str or os.PathLike) or an object with `read`. Returns the source, its name
/// for messages, and whether it can seek.
fn open_source(file: &Bound<'_, PyAny>) -> PyResult<(Box<dyn Source>, String, bool)> {
    let py = file.py();
    if let Some(url) = as_url(file)? {
        // An object: ranged GETs, fetched as read (file objects are sought and read in pieces),
        // with read-ahead that grows along a sequential run.
        let reader = py
            .detach(|| {
                zseal::remote::Remote::from_env(&url)?.reader(zseal::remote::ReadMode::Random)
            })
            .map_err(|e| to_py(py, &url, Error::from(e)))?;
        return Ok((Box::new(reader), url, true));
    }
    if let Some(path) = as_path(file)? {
        let name = path.display().to_string();
        let f = py
            .detach(|| File::open(&path))
            .map_err(|e| to_py(py, &name, Error::from(e)))?;
        return Ok((
            Box::new(BufReader::with_capacity(SOURCE_BUFFER, f)),
            name,
            true,
        ));
    }
    if !file.hasattr("read")? {
        return Err(PyValueError::new_err(
            "file must be a path or a binary file object with read()",
        ));
    }
    let name = file_name(file);
    let seekable = file.hasattr("seekable")?
        && file.call_method0("seekable")?.is_truthy()?
        && file.hasattr("seek")?;
    Ok((
        Box::new(BufReader::with_capacity(
            SOURCE_BUFFER,
            PyFileObj(file.clone().unbind()),
        )),
        name,
        seekable,
    ))
}

/// A str of the form `scheme://…` (s3://, gs://, az://, http(s)://): an object for the Rust
/// object store, with the command line's credentials rules (docs/OBJECTS.md).
pub(crate) fn as_url(file: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    Ok(file
        .extract::<String>()
        .ok()
        .filter(|s| zseal::io::is_url(s)))
}

/// A str or os.PathLike as a path; None for anything else.
pub(crate) fn as_path(file: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    if file.hasattr("read")? || file.hasattr("write")? {
        return Ok(None);
    }
    let fspath = file.py().import("os")?.getattr("fspath")?;
    match fspath.call1((file,)) {
        Ok(p) => Ok(Some(p.extract::<PathBuf>()?)),
        Err(_) => Ok(None),
    }
}

/// What to call a file object in messages: its `path` (fsspec), `name`, or its type.
pub(crate) fn file_name(file: &Bound<'_, PyAny>) -> String {
    for attr in ["full_name", "path", "name"] {
        if let Ok(v) = file.getattr(attr) {
            if let Ok(s) = v.extract::<String>() {
                return s;
            }
        }
    }
    file.get_type()
        .name()
        .map(|n| format!("<{n}>"))
        .unwrap_or_else(|_| "<file object>".into())
}

/// Worker threads: the caller's count, else `ZSEAL_THREADS`, else `OMP_NUM_THREADS` (the limit
/// Dask's nanny sets to 1 in every worker process, as numpy's BLAS and other native libraries
/// honour it: the cores are already shared out between worker processes, and extra threads
/// there only contend), else one per core.
fn threads_of(threads: Option<usize>) -> Threads {
    let from_env = || {
        ["ZSEAL_THREADS", "OMP_NUM_THREADS"]
            .iter()
            .find_map(|v| std::env::var(v).ok()?.trim().parse::<usize>().ok())
    };
    threads
        .or_else(from_env)
        .map_or(Threads::Auto, Threads::from)
}

// ---------------------------------------------------------------------------------------------
// Keys.

/// An SSH key with a passphrase cannot be asked for from here: it is refused with a message.
#[derive(Clone)]
struct NoPrompt;

impl KeyPassphrase for NoPrompt {
    fn passphrase(&self, _description: &str) -> Option<String> {
        None
    }
}

/// `identity` entries: paths of identity files (age, OpenSSH), or `AGE-SECRET-KEY-1…` strings.
fn read_identities(entries: &[String]) -> zseal::Result<Vec<AgeIdentity>> {
    let mut out = Vec::new();
    for entry in entries {
        let trimmed = entry.trim();
        if trimmed.starts_with("AGE-SECRET-KEY-1") {
            out.extend(recipients::read_identities(
                trimmed.as_bytes(),
                "the identity string",
                NoPrompt,
            )?);
            continue;
        }
        let data = Zeroizing::new(
            std::fs::read(entry)
                .map_err(|e| option_error(format!("cannot read identity file {entry}: {e}")))?,
        );
        out.extend(recipients::read_identities(&data, entry, NoPrompt)?);
    }
    Ok(out)
}

/// File keys already unwrapped by a passphrase in this process, so that the many opens of one
/// file by a Dask worker pay Argon2 (or an age file's scrypt) once. Keyed by a hash of the passphrase and the stanza (its
/// salt makes it unique per file); bounded.
static PASSPHRASE_KEYS: OnceLock<Mutex<HashMap<[u8; 32], FileKey>>> = OnceLock::new();
const PASSPHRASE_CACHE_MAX: usize = 256;

struct CachedPassphrase {
    pw: Passphrase,
    /// A key derived from the passphrase for the cache slots (the passphrase itself is kept
    /// only inside `pw`).
    slot_key: Zeroizing<[u8; 32]>,
    /// The key the passphrase unwrapped, held until the header MAC has verified under it
    /// ([`CachedPassphrase::remember`]): a stanza that unwraps but whose header then fails
    /// never enters the cache, so a header-tampered file costs Argon2 on every open, like a
    /// wrong passphrase (FORMAT.md §2.3: the two must look alike).
    unwrapped: Mutex<Option<([u8; 32], FileKey)>>,
}

impl CachedPassphrase {
    fn new(secret: &str, max_work_factor: Option<u8>) -> zseal::Result<Self> {
        let mut pw = Passphrase::new(secret.as_bytes())?;
        if let Some(n) = max_work_factor {
            pw = pw.with_max_age_work_factor(n)?;
        }
        Ok(CachedPassphrase {
            pw,
            slot_key: Zeroizing::new(blake3::derive_key(
                "zseal python passphrase cache v1",
                secret.as_bytes(),
            )),
            unwrapped: Mutex::new(None),
        })
    }

    /// Caches the key unwrapped last: call once the header it opened has authenticated.
    fn remember(&self) {
        let taken = self
            .unwrapped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some((slot, k)) = taken {
            let mut c = cache();
            if c.len() >= PASSPHRASE_CACHE_MAX {
                c.clear();
            }
            c.insert(slot, k);
        }
    }

    fn slot(&self, stanzas: &[Stanza]) -> [u8; 32] {
        let mut h = blake3::Hasher::new_keyed(&self.slot_key);
        for s in stanzas {
            h.update(&[s.kind]);
            h.update(&(s.body.len() as u64).to_le_bytes());
            h.update(&s.body);
        }
        *h.finalize().as_bytes()
    }

    /// The slot of an age header's stanzas (tag, arguments, body, each length-prefixed, after
    /// the prefix `age`, whose first byte is no zseal stanza kind).
    fn age_slot(&self, stanzas: &[zseal::crypto::AgeStanza]) -> [u8; 32] {
        let mut h = blake3::Hasher::new_keyed(&self.slot_key);
        h.update(b"age");
        let mut field = |b: &[u8]| {
            h.update(&(b.len() as u64).to_le_bytes());
            h.update(b);
        };
        for s in stanzas {
            field(s.tag.as_bytes());
            for a in &s.args {
                field(a.as_bytes());
            }
            field(&s.body);
        }
        *h.finalize().as_bytes()
    }

    /// `unwrap` through the cache: a slot already filled is a hit; a key unwrapped now waits
    /// in `unwrapped` for [`CachedPassphrase::remember`].
    fn cached(
        &self,
        slot: [u8; 32],
        unwrap: impl FnOnce() -> zseal::Result<Option<FileKey>>,
    ) -> zseal::Result<Option<FileKey>> {
        if let Some(k) = cache().get(&slot) {
            return Ok(Some(k.clone()));
        }
        let key = unwrap()?;
        if let Some(k) = &key {
            *self.unwrapped.lock().unwrap_or_else(|p| p.into_inner()) = Some((slot, k.clone()));
        }
        Ok(key)
    }
}

fn cache() -> MutexGuard<'static, HashMap<[u8; 32], FileKey>> {
    PASSPHRASE_KEYS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

impl Identity for CachedPassphrase {
    fn unwrap_stanzas(&self, stanzas: &[Stanza]) -> zseal::Result<Option<FileKey>> {
        self.cached(self.slot(stanzas), || self.pw.unwrap_stanzas(stanzas))
    }

    /// An age file's scrypt stanza, cached the same way: its work factor can make one attempt
    /// cost 4 GiB and tens of seconds, which every open of the file (a Dask task each) would
    /// pay again. A factor over the limit is refused before the cache is looked at.
    fn unwrap_age_stanzas(
        &self,
        stanzas: &[zseal::crypto::AgeStanza],
    ) -> zseal::Result<Option<FileKey>> {
        // Also for a key in the cache: the caller's limit may be lower than when it was cached.
        self.pw.check_age_work_factor(stanzas)?;
        self.cached(self.age_slot(stanzas), || {
            self.pw.unwrap_age_stanzas(stanzas)
        })
    }
}

/// How many file keys the passphrase cache holds (for the tests: a header that fails must not
/// add one).
#[pyfunction]
fn _passphrase_cache_len() -> usize {
    cache().len()
}

/// The keys a caller passed to a decrypting call.
pub(crate) struct Keys {
    identity: Vec<String>,
    passphrase: Option<Zeroizing<String>>,
    /// The largest scrypt work factor of an age file a passphrase is tried on.
    max_work_factor: Option<u8>,
}

/// Reads the header and unlocks it with the key it needs; a key the caller did not pass is a
/// `MissingKeyError` naming what to pass.
fn unlock<R: Read + Send>(
    py: Python<'_>,
    src: R,
    name: &str,
    keys: &Keys,
    opts: &DecryptOptions,
) -> PyResult<zseal::Reader<R>> {
    let locked = py
        .detach(|| Sealed::read(src))
        .map_err(|e| to_py(py, name, e))?;
    match locked.needs() {
        KeyNeeded::Passphrase => {
            let Some(pw) = &keys.passphrase else {
                return Err(missing_key(
                    py,
                    name,
                    "the file is protected by a passphrase, not encrypted to a key: pass passphrase=".into(),
                ));
            };
            let id = CachedPassphrase::new(pw, keys.max_work_factor)
                .map_err(|e| to_py(py, name, e))?;
            py.detach(|| {
                let dec = locked.unlock(&[&id], opts)?;
                // unlock returns only once the header MAC verified under the key.
                id.remember();
                Ok(dec)
            })
            .map_err(|e| to_py(py, name, e))
        }
        KeyNeeded::Identity { kinds } => {
            if keys.identity.is_empty() {
                return Err(missing_key(
                    py,
                    name,
                    format!(
                        "the file is encrypted to {} recipient(s) ({}): pass identity= (an identity file)",
                        kinds.len(),
                        kinds.join(", ")
                    ),
                ));
            }
            py.detach(|| {
                // Read here: an SSH identity is not Send, so it lives and dies on this thread.
                let ids = read_identities(&keys.identity)?;
                let refs: Vec<&dyn Identity> = ids.iter().map(|i| i as &dyn Identity).collect();
                locked.unlock(&refs, opts)
            })
            .map_err(|e| to_py(py, name, e))
        }
        KeyNeeded::Unsupported { kinds } => Err(raise(
            py,
            "NotZsealError",
            "unsupported",
            name,
            &format!(
                "no key stanza this zseal understands ({}): the file is damaged, or was written by a newer zseal",
                kinds.join(", ")
            ),
        )),
        other => Err(raise(
            py,
            "ZsealError",
            "unsupported",
            name,
            &format!("the file needs a key this zseal cannot use ({other:?})"),
        )),
    }
}

/// A decryptor over whatever `open_source` opened.
type SourceDecryptor = zseal::Reader<Box<dyn Source>>;

/// The unlocked decryptor of `file` (a path or a file object), its name, and whether it seeks.
pub(crate) fn open_decryptor(
    file: &Bound<'_, PyAny>,
    keys: &Keys,
    threads: Option<usize>,
) -> PyResult<(SourceDecryptor, String, bool)> {
    let (src, name, seekable) = open_source(file)?;
    let opts = DecryptOptions::default().threads(threads_of(threads));
    let dec = unlock(file.py(), src, &name, keys, &opts)?;
    Ok((dec, name, seekable))
}

pub(crate) fn keys_of(
    identity: Option<&Bound<'_, PyAny>>,
    passphrase: Option<String>,
    max_work_factor: Option<u8>,
) -> PyResult<Keys> {
    let identity = match identity {
        None => Vec::new(),
        Some(v) if v.is_none() => Vec::new(),
        Some(v) => match as_path(v)? {
            Some(p) => vec![p.display().to_string()],
            None => {
                let mut out = Vec::new();
                for item in v.try_iter()? {
                    let item = item?;
                    let path = as_path(&item)?.ok_or_else(|| {
                        PyValueError::new_err("identity must be a path or a list of paths")
                    })?;
                    out.push(path.display().to_string());
                }
                out
            }
        },
    };
    Ok(Keys {
        identity,
        passphrase: passphrase.map(Zeroizing::new),
        max_work_factor,
    })
}

// ---------------------------------------------------------------------------------------------
// The reading file object.

struct ReadState {
    dec: SourceDecryptor,
    /// Plaintext length (authenticated), when the source can seek.
    size: Option<u64>,
    pos: u64,
    /// Where the last read ended: a read that starts there is sequential and reads ahead.
    last_end: u64,
}

impl ReadState {
    /// Sets how far ahead the engine may fetch for a read of `want` bytes (None: not known, as
    /// for a line): a read that continues where the last one ended keeps the window full, a read
    /// after a seek fetches only the frames it covers.
    fn plan(&mut self, want: Option<u64>) -> zseal::Result<()> {
        if self.size.is_none() {
            return Ok(()); // a stream: nothing to seek, nothing to limit
        }
        let limit = match want {
            Some(w) if self.pos != self.last_end => Some(self.pos + w.max(1)),
            _ => None,
        };
        self.dec.limit_read_ahead(limit)
    }

    /// Moves the engine to `at`, the position the read was asked at (a no-op when it is there
    /// already, as for every sequential read and every read of a stream).
    fn go(&mut self, at: u64) -> zseal::Result<()> {
        if self.pos != at {
            self.pos = self.dec.seek(SeekFrom::Start(at)).map_err(Error::from)?;
        }
        Ok(())
    }

    /// Accounts for `k` bytes returned. At the end of the plaintext, runs the end-of-stream
    /// checks (and the whole-file digest, when every chunk from the first went through) now,
    /// not on a later read that may never come.
    fn advance(&mut self, k: usize) -> zseal::Result<()> {
        self.pos += k as u64;
        self.last_end = self.pos;
        if Some(self.pos) == self.size {
            let rest = self.dec.fill_buf().map_err(Error::from)?;
            debug_assert!(rest.is_empty(), "the authenticated length ends here");
        }
        Ok(())
    }

    /// Fills all of `buf` (its length came from `prepare`).
    fn fill(&mut self, buf: &mut [u8]) -> zseal::Result<()> {
        self.dec.read_exact(buf).map_err(Error::from)?;
        self.advance(buf.len())
    }

    /// Up to `buf.len()` bytes from the current chunk (fetching one if none is left).
    fn read_some(&mut self, buf: &mut [u8]) -> zseal::Result<usize> {
        let k = self.dec.read(buf).map_err(Error::from)?;
        self.advance(k)?;
        Ok(k)
    }

    /// A read when the size is unknown (a pipe): up to `n` bytes, or all when negative.
    fn read_stream(&mut self, n: i64) -> zseal::Result<Vec<u8>> {
        let mut out = Vec::new();
        let limit = u64::try_from(n).unwrap_or(u64::MAX);
        (&mut self.dec)
            .take(limit)
            .read_to_end(&mut out)
            .map_err(Error::from)?;
        self.advance(out.len())?;
        Ok(out)
    }
}

/// A new `bytes` of `len` bytes filled by `fill` (which must write every byte or fail). Unlike
/// `PyBytes::new_with` it does not zero the memory first: for a large read that first pass
/// costs as much as the decryption (every page is faulted in on the calling thread before any
/// chunk is copied); here the pages are faulted in by the copy itself, while the workers decrypt,
/// and for a read of 4 MiB or more they are huge pages.
fn fresh_bytes<'py>(
    py: Python<'py>,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> PyResult<()>,
) -> PyResult<Bound<'py, PyBytes>> {
    let size = pyo3::ffi::Py_ssize_t::try_from(len)
        .map_err(|_| PyValueError::new_err("read size too large"))?;
    // SAFETY: PyBytes_FromStringAndSize(NULL, n) returns a new, uniquely owned bytes object with
    // n writable bytes (uninitialized) or NULL with an exception set; `from_owned_ptr_or_err`
    // takes that reference. The object is not visible to any other code until we return it,
    // so writing through its buffer is sound; the slice is made from the pointer and length
    // CPython gives for it, and it is fully written by `fill` before it is returned (on error
    // the object is dropped unseen). `advise` only asks the kernel to back the whole 2 MiB pages
    // inside that buffer with huge pages (see zseal::alloc): no memory's contents or protection
    // change. The kernel may split the mapping there, and on heap memory the advice outlives
    // the object; both are harmless.
    unsafe {
        let obj = pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), size);
        let bytes = Bound::from_owned_ptr_or_err(py, obj)?.cast_into_unchecked::<PyBytes>();
        let data = pyo3::ffi::PyBytes_AsString(bytes.as_ptr()) as *mut u8;
        // Huge pages for a large read, as for the engine's own chunk buffers: the object is
        // fresh and ours alone, and with 4 KiB pages a Dask task's 64 MB block costs 16,000
        // page faults taken one by one inside the decompressor (docs/PERFORMANCE.md §7).
        let buf = std::slice::from_raw_parts_mut(data, len);
        zseal::alloc::advise_huge_pages(buf);
        fill(buf)?;
        Ok(bytes)
    }
}

/// A decrypting reader (`zseal.open(..., "rb")` wraps it in an `io.BufferedIOBase`).
///
/// Its position (`at`) is read and changed only by calls that hold the GIL, when they start: a
/// read takes its start and reserves its length there, then decrypts without the GIL, at that
/// start whatever other threads do meanwhile. So `seek(x); read(n)` made while holding the GIL
/// (DuckDB's positional reads, from several threads on one handle) reads at `x` even when
/// another thread seeks while the first one decrypts; before, the read took its position after
/// releasing the GIL, and such reads returned another range's bytes or failed.
#[pyclass(module = "zseal._zseal", frozen)]
struct Reader {
    state: Mutex<Option<ReadState>>,
    /// Where the next read starts.
    at: AtomicU64,
    /// Set by `close` (a seek or tell on a closed file fails without waiting for the state).
    closed: AtomicBool,
    /// Set when a call failed: the engine's failure is sticky, and a seek reports it too.
    failed: AtomicBool,
    /// The plaintext length, for a source that seeks.
    size: Option<u64>,
    #[pyo3(get)]
    name: String,
    #[pyo3(get)]
    seekable: bool,
}

impl Reader {
    fn lock(&self) -> MutexGuard<'_, Option<ReadState>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fails on a closed file.
    fn open(&self) -> PyResult<()> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(PyValueError::new_err("I/O operation on closed file"));
        }
        Ok(())
    }

    /// For a read of `n` bytes (negative: to the end) from a source of known size: where it
    /// starts and how long it is, with the position moved past it now, while the GIL is held.
    /// `None` for a stream, whose reads take what comes.
    fn reserve(&self, n: i64) -> PyResult<Option<(u64, usize)>> {
        self.open()?;
        let Some(size) = self.size else {
            return Ok(None);
        };
        let start = self.at.load(Ordering::SeqCst);
        let left = size.saturating_sub(start);
        let want = u64::try_from(n).map_or(left, |n| n.min(left));
        let len = usize::try_from(want).map_err(|_| {
            PyValueError::new_err("the read is larger than this machine's address space")
        })?;
        self.at.store(start + want, Ordering::SeqCst);
        Ok(Some((start, len)))
    }

    /// A read of unknown length that started at `start` returned `k` bytes: the position moves
    /// past them, unless another thread moved it meanwhile (its seek wins).
    fn moved(&self, start: u64, k: usize) {
        let _ =
            self.at
                .compare_exchange(start, start + k as u64, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Runs `f` on the open state without the GIL.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut ReadState) -> zseal::Result<T> + Send,
    ) -> PyResult<T> {
        let r = py.detach(|| match self.lock().as_mut() {
            Some(st) => f(st).map_err(Some),
            None => Err(None),
        });
        r.map_err(|e| match e {
            Some(e) => {
                self.failed.store(true, Ordering::SeqCst);
                to_py(py, &self.name, e)
            }
            None => PyValueError::new_err("I/O operation on closed file"),
        })
    }
}

#[pymethods]
impl Reader {
    #[new]
    #[pyo3(signature = (file, *, identity=None, passphrase=None, threads=None, max_work_factor=None))]
    fn new(
        py: Python<'_>,
        file: &Bound<'_, PyAny>,
        identity: Option<&Bound<'_, PyAny>>,
        passphrase: Option<String>,
        threads: Option<usize>,
        max_work_factor: Option<u8>,
    ) -> PyResult<Self> {
        let keys = keys_of(identity, passphrase, max_work_factor)?;
        let (mut dec, name, seekable) = open_decryptor(file, &keys, threads)?;
        let size = if seekable {
            Some(
                py.detach(|| dec.plaintext_len())
                    .map_err(|e| to_py(py, &name, e))?,
            )
        } else {
            None
        };
        Ok(Reader {
            state: Mutex::new(Some(ReadState {
                dec,
                size,
                pos: 0,
                last_end: 0,
            })),
            at: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            size,
            name,
            seekable,
        })
    }

    /// The plaintext length (from the authenticated final frame), or None for a stream.
    #[getter]
    fn size(&self) -> PyResult<Option<u64>> {
        self.open()?;
        Ok(self.size)
    }

    #[pyo3(signature = (n=-1))]
    fn read<'py>(&self, py: Python<'py>, n: Option<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let n = n.unwrap_or(-1);
        match self.reserve(n)? {
            Some((start, len)) => fresh_bytes(py, len, |buf| {
                self.with(py, |st| {
                    st.go(start)?;
                    st.plan(Some(len as u64))?;
                    st.fill(buf)
                })
            }),
            None => {
                let v = self.with(py, |st| st.read_stream(n))?;
                self.at.fetch_add(v.len() as u64, Ordering::SeqCst);
                Ok(PyBytes::new(py, &v))
            }
        }
    }

    /// Reads into a writable, C-contiguous byte buffer; returns the bytes read (0 at the end).
    fn readinto(&self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        let buf = PyBuffer::<u8>::get(buffer)?;
        if buf.readonly() || !buf.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "readinto needs a writable, contiguous buffer",
            ));
        }
        let cap = buf.len_bytes();
        let ptr = buf.buf_ptr() as usize;
        let reserved = self.reserve(i64::try_from(cap).unwrap_or(i64::MAX))?;
        let got = self.with(py, move |st| {
            // SAFETY: `buf` (a PyBuffer) holds the exporter's buffer until it is dropped after
            // this call, so the memory stays allocated and cannot be resized; it is writable,
            // C-contiguous and `cap` bytes long. As with CPython's own readinto, another Python
            // thread writing into the same buffer meanwhile is the caller's race.
            let out = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, cap) };
            match reserved {
                Some((start, len)) => {
                    st.go(start)?;
                    st.plan(Some(len as u64))?;
                    st.fill(&mut out[..len]).map(|()| len)
                }
                None => st.read_some(out),
            }
        });
        drop(buf);
        if reserved.is_none() {
            if let Ok(k) = &got {
                self.at.fetch_add(*k as u64, Ordering::SeqCst);
            }
        }
        got
    }

    /// At most `n` bytes with at most one chunk fetched (`BufferedIOBase.read1`).
    #[pyo3(signature = (n=-1))]
    fn read1<'py>(&self, py: Python<'py>, n: Option<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let n = n.unwrap_or(-1);
        let start = self.at.load(Ordering::SeqCst);
        let v = self.with(py, |st| {
            st.go(start)?;
            st.plan(Some(n.max(1) as u64))?;
            let avail = st.dec.fill_buf().map_err(Error::from)?;
            let k = usize::try_from(n).map_or(avail.len(), |n| n.min(avail.len()));
            let v = avail[..k].to_vec();
            st.dec.consume(k);
            st.advance(k)?;
            Ok(v)
        })?;
        self.moved(start, v.len());
        Ok(PyBytes::new(py, &v))
    }

    /// One line (up to and including b"\n"), or at most `limit` bytes.
    #[pyo3(signature = (limit=-1))]
    fn readline<'py>(&self, py: Python<'py>, limit: Option<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let limit = limit.unwrap_or(-1);
        let start = self.at.load(Ordering::SeqCst);
        let v = self.with(py, |st| {
            st.go(start)?;
            st.plan(None)?;
            let mut out = Vec::new();
            loop {
                let avail = st.dec.fill_buf().map_err(Error::from)?;
                if avail.is_empty() {
                    break;
                }
                let room = if limit < 0 {
                    usize::MAX
                } else {
                    limit as usize - out.len()
                };
                let (k, done) = match avail.iter().take(room).position(|&b| b == b'\n') {
                    Some(i) => (i + 1, true),
                    None => (avail.len().min(room), avail.len() >= room),
                };
                out.extend_from_slice(&avail[..k]);
                st.dec.consume(k);
                if done {
                    break;
                }
            }
            st.advance(out.len())?;
            Ok(out)
        })?;
        self.moved(start, v.len());
        Ok(PyBytes::new(py, &v))
    }

    #[pyo3(signature = (offset, whence=0))]
    fn seek(&self, py: Python<'_>, offset: i64, whence: i32) -> PyResult<u64> {
        if !self.seekable {
            return Err(py
                .import("io")?
                .getattr("UnsupportedOperation")?
                .call1(("the source cannot seek (a pipe or stream)",))
                .map(PyErr::from_value)?);
        }
        let to = match whence {
            0 if offset >= 0 => SeekFrom::Start(offset as u64),
            0 => {
                return Err(PyValueError::new_err(format!(
                    "negative seek position {offset}"
                )))
            }
            1 => SeekFrom::Current(offset),
            2 => SeekFrom::End(offset),
            w => {
                return Err(PyValueError::new_err(format!(
                    "invalid whence ({w}, should be 0, 1 or 2)"
                )))
            }
        };
        self.open()?;
        let at = self.at.load(Ordering::SeqCst);
        let size = self.size.unwrap_or(0);
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => at.checked_add_signed(d),
            SeekFrom::End(d) => size.checked_add_signed(d),
        }
        .ok_or_else(|| {
            to_py(
                py,
                &self.name,
                option_error("seek before the start of the plaintext"),
            )
        })?;
        if self.failed.load(Ordering::SeqCst) {
            // The engine's sticky failure, as the seek of a reader that failed reports it.
            self.with(py, |st| {
                st.dec.seek(SeekFrom::Start(target)).map_err(Error::from)
            })?;
        }
        // The engine moves there at the next read (which may come from another position first,
        // when another thread seeks meanwhile).
        self.at.store(target, Ordering::SeqCst);
        Ok(target)
    }

    fn tell(&self) -> PyResult<u64> {
        self.open()?;
        Ok(self.at.load(Ordering::SeqCst))
    }

    /// The whole-plaintext digest in hex once every byte from the first was read and checked
    /// (None before, after seeks that skipped chunks, or for a file without digest).
    fn digest(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |st| Ok(st.dec.digest_hex()))
    }

    fn close(&self, py: Python<'_>) {
        self.closed.store(true, Ordering::SeqCst);
        py.detach(|| self.lock().take());
    }

    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

// ---------------------------------------------------------------------------------------------
// The writing file object.

pub(crate) enum Sink {
    /// A path: a temporary file beside it, renamed over it when the container is complete.
    Temp(TempOutput),
    Py(PyFileObj),
    /// An object: a multipart upload completed when the container is, aborted when dropped.
    Remote(zseal::remote::RemoteWriter),
}

/// An output path being written, by the rules of [`zseal::io::OutputFile`] (a file private while
/// written and renamed into place when complete; a FIFO, device or descriptor written in place;
/// a link followed), behind a large buffer.
type TempOutput = std::io::BufWriter<OutputFile>;

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Temp(t) => t.write(buf),
            Sink::Py(p) => p.write(buf),
            Sink::Remote(r) => r.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Temp(t) => t.flush(),
            Sink::Py(p) => p.flush(),
            Sink::Remote(r) => r.flush(),
        }
    }
}

pub(crate) const OVERWRITE_HINT: &str = "pass overwrite=True to replace it";

/// The temporary file for an output path; an existing target is an error unless `overwrite`.
/// `refusal` says how to replace it.
pub(crate) fn new_output(
    py: Python<'_>,
    dst: PathBuf,
    overwrite: bool,
    refusal: &str,
) -> PyResult<TempOutput> {
    create_output(py, dst, overwrite, false, refusal)
}

/// [`new_output`] with the choice of a private (0600) file, for keys.
pub(crate) fn create_output(
    py: Python<'_>,
    dst: PathBuf,
    overwrite: bool,
    private: bool,
    refusal: &str,
) -> PyResult<TempOutput> {
    let name = dst.display().to_string();
    let opened =
        Destination::resolve(&dst).and_then(|d| OutputFile::create(&d, overwrite, private));
    match opened {
        Ok(f) => Ok(std::io::BufWriter::with_capacity(1 << 20, f)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(raise(
            py,
            "ZsealFileExistsError",
            "io",
            &name,
            &format!("the file exists ({refusal})"),
        )),
        Err(e) => Err(to_py(py, &name, e.into())),
    }
}

/// Renames a complete temporary file over (or, without overwrite, beside only) its target.
pub(crate) fn persist(t: TempOutput) -> zseal::Result<()> {
    let f = t.into_inner().map_err(|e| Error::from(e.into_error()))?;
    let target = f.destination().to_path_buf();
    f.commit(true).map_err(|e| {
        let what = if e.kind() == io::ErrorKind::AlreadyExists {
            "it exists (pass overwrite=True, or mode \"wb\", to replace it)".to_string()
        } else {
            e.to_string()
        };
        option_error(format!("cannot create {}: {what}", target.display()))
    })
}

/// The keyword arguments every encrypting call takes (`Writer`, `encrypt_file`).
pub(crate) struct EncryptArgs<'a> {
    pub(crate) recipients: Option<Vec<String>>,
    pub(crate) passphrase: Option<String>,
    pub(crate) compress: Option<&'a str>,
    pub(crate) cipher: Option<&'a str>,
    pub(crate) hash: Option<&'a str>,
    pub(crate) chunk_size: Option<usize>,
    pub(crate) threads: Option<usize>,
    pub(crate) pad: bool,
    /// `zseal` (default) or `age`.
    pub(crate) format: Option<&'a str>,
}

impl EncryptArgs<'_> {
    /// Parses the keys and options and writes the header to `sink`: a container's, or an age
    /// file's.
    fn start<W: Write>(self, sink: W) -> zseal::Result<zseal::Writer<W>> {
        let mut keys: Vec<Box<dyn Recipient + Send + Sync>> = Vec::new();
        for r in self.recipients.unwrap_or_default() {
            keys.push(Box::new(AgeRecipient::parse(&r)?));
        }
        if let Some(pw) = self.passphrase {
            keys.push(Box::new(Passphrase::new(pw.into_bytes())?));
        }
        if keys.is_empty() {
            return Err(option_error(
                "no key to encrypt to: pass recipients=[\"age1…\"] or passphrase=",
            ));
        }
        let mut o = EncryptOptions::default()
            .threads(threads_of(self.threads))
            .pad(self.pad);
        if let Some(c) = self.compress {
            o = o.codec(c.parse::<Codec>()?);
        }
        if let Some(c) = self.cipher {
            o = o.cipher(c.parse()?);
        }
        if let Some(h) = self.hash {
            o = o.hash(h.parse::<HashAlg>()?);
        }
        if let Some(c) = self.chunk_size {
            o = o.chunk_size(c);
        }
        if let Some(f) = self.format {
            o = o.format(f.parse()?);
        }
        let refs: Vec<&dyn Recipient> = keys.iter().map(|r| &**r as &dyn Recipient).collect();
        zseal::Writer::new(sink, &refs, &o)
    }
}

/// An encrypting writer (`zseal.open(..., "wb")`); the container (or age file) is complete
/// after `close()`.
#[pyclass(module = "zseal._zseal", frozen)]
struct Writer {
    state: Mutex<Option<zseal::Writer<Sink>>>,
    #[pyo3(get)]
    name: String,
}

impl Writer {
    fn lock(&self) -> MutexGuard<'_, Option<zseal::Writer<Sink>>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl Writer {
    #[new]
    #[pyo3(signature = (file, *, recipients=None, passphrase=None, compress=None, cipher=None,
                        hash=None, chunk_size=None, threads=None, exclusive=false, pad=false,
                        format=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        file: &Bound<'_, PyAny>,
        recipients: Option<Vec<String>>,
        passphrase: Option<String>,
        compress: Option<&str>,
        cipher: Option<&str>,
        hash: Option<&str>,
        chunk_size: Option<usize>,
        threads: Option<usize>,
        exclusive: bool,
        pad: bool,
        format: Option<&str>,
    ) -> PyResult<Self> {
        let (sink, name) = if let Some(url) = as_url(file)? {
            let w = py
                .detach(|| zseal::remote::Remote::from_env(&url)?.writer(!exclusive, None))
                .map_err(|e| {
                    if e.kind() == io::ErrorKind::AlreadyExists {
                        raise(
                            py,
                            "ZsealFileExistsError",
                            "io",
                            &url,
                            "the object exists (mode \"xb\" never replaces one)",
                        )
                    } else {
                        to_py(py, &url, Error::from(e))
                    }
                })?;
            (Sink::Remote(w), url)
        } else if let Some(p) = as_path(file)? {
            let name = p.display().to_string();
            let out = new_output(py, p, !exclusive, "mode \"xb\" never replaces a file")?;
            (Sink::Temp(out), name)
        } else if file.hasattr("write")? {
            (Sink::Py(PyFileObj(file.clone().unbind())), file_name(file))
        } else {
            return Err(PyValueError::new_err(
                "file must be a path or a binary file object with write()",
            ));
        };
        let args = EncryptArgs {
            recipients,
            passphrase,
            compress,
            cipher,
            hash,
            chunk_size,
            threads,
            pad,
            format,
        };
        let enc = py
            .detach(|| args.start(sink))
            .map_err(|e| to_py(py, &name, e))?;
        Ok(Writer {
            state: Mutex::new(Some(enc)),
            name,
        })
    }

    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let owned;
        let bytes: &[u8] = match data.cast::<PyBytes>() {
            Ok(b) => b.as_bytes(),
            Err(_) => {
                owned = PyBuffer::<u8>::get(data)?.to_vec(py)?;
                &owned
            }
        };
        let r = py.detach(|| match self.lock().as_mut() {
            Some(enc) => enc.write_all(bytes).map_err(|e| Some(Error::from(e))),
            None => Err(None),
        });
        r.map(|()| bytes.len()).map_err(|e| match e {
            Some(e) => to_py(py, &self.name, e),
            None => PyValueError::new_err("write to closed file"),
        })
    }

    /// Writes the final frame, index and footer; a path is renamed into place only now.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let r = py.detach(|| match self.lock().take() {
            Some(enc) => match enc.finish()? {
                Sink::Temp(t) => persist(t),
                Sink::Py(mut p) => p.flush().map_err(Error::from),
                Sink::Remote(r) => r.commit().map_err(Error::from),
            },
            None => Ok(()),
        });
        r.map_err(|e| to_py(py, &self.name, e))
    }

    /// Drops the container unfinished: a temporary file is removed, nothing replaces the target.
    fn abort(&self, py: Python<'_>) {
        py.detach(|| self.lock().take());
    }

    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| self.lock().is_none())
    }
}

// ---------------------------------------------------------------------------------------------
// Whole-file functions.

/// Decrypts `src` (a path) and verifies it; `dst` (a path) appears only when all of it verified.
#[pyfunction]
#[pyo3(signature = (src, dst, *, identity=None, passphrase=None, threads=None, overwrite=false,
                    max_work_factor=None))]
#[allow(clippy::too_many_arguments)]
fn decrypt_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    identity: Option<&Bound<'_, PyAny>>,
    passphrase: Option<String>,
    threads: Option<usize>,
    overwrite: bool,
    max_work_factor: Option<u8>,
) -> PyResult<Option<String>> {
    let name = src.display().to_string();
    let keys = keys_of(identity, passphrase, max_work_factor)?;
    let f = File::open(&src).map_err(|e| to_py(py, &name, e.into()))?;
    let opts = DecryptOptions::default().threads(threads_of(threads));
    let mut dec = unlock(
        py,
        BufReader::with_capacity(SOURCE_BUFFER, f),
        &name,
        &keys,
        &opts,
    )?;
    let out_name = dst.display().to_string();
    let mut t = new_output(py, dst, overwrite, OVERWRITE_HINT)?;
    py.detach(|| dec.copy_to(&mut Output(&mut t)))
        .map_err(|e| {
            let who = if is_output_error(&e) {
                &out_name
            } else {
                &name
            };
            to_py(py, who, e)
        })?;
    py.detach(|| persist(t))
        .map_err(|e| to_py(py, &out_name, e))?;
    Ok(dec.digest_hex())
}

/// An error of the output (not the container), so that the message names the output file.
#[derive(Debug)]
struct OutputError(io::Error);

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for OutputError {}

/// A writer whose errors are marked as the output's.
struct Output<W>(W);

impl<W: Write> Write for Output<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .write(buf)
            .map_err(|e| io::Error::new(e.kind(), OutputError(e)))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0
            .flush()
            .map_err(|e| io::Error::new(e.kind(), OutputError(e)))
    }
}

fn is_output_error(e: &Error) -> bool {
    matches!(e, Error::Io(io) if io.get_ref().is_some_and(|r| r.is::<OutputError>()))
}

/// Encrypts `src` (a path) into `dst` (a path), which appears only when complete.
#[pyfunction]
#[pyo3(signature = (src, dst, *, recipients=None, passphrase=None, compress=None, cipher=None,
                    hash=None, chunk_size=None, threads=None, overwrite=false, pad=false,
                    format=None))]
#[allow(clippy::too_many_arguments)]
fn encrypt_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    recipients: Option<Vec<String>>,
    passphrase: Option<String>,
    compress: Option<&str>,
    cipher: Option<&str>,
    hash: Option<&str>,
    chunk_size: Option<usize>,
    threads: Option<usize>,
    overwrite: bool,
    pad: bool,
    format: Option<&str>,
) -> PyResult<()> {
    let name = src.display().to_string();
    let out_name = dst.display().to_string();
    let f = File::open(&src).map_err(|e| to_py(py, &name, e.into()))?;
    let sink = new_output(py, dst, overwrite, OVERWRITE_HINT)?;
    let args = EncryptArgs {
        recipients,
        passphrase,
        compress,
        cipher,
        hash,
        chunk_size,
        threads,
        pad,
        format,
    };
    py.detach(|| {
        let mut enc = args.start(sink)?;
        enc.copy_from_file(&f)?;
        persist(enc.finish()?)
    })
    .map_err(|e| to_py(py, &out_name, e))
}

/// Reads and checks the whole container; returns the whole-plaintext digest in hex (the form
/// of `b3sum` or `xxhsum -H3`), or None when the file was written without one.
#[pyfunction]
#[pyo3(signature = (file, *, identity=None, passphrase=None, threads=None, max_work_factor=None))]
fn verify(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    identity: Option<&Bound<'_, PyAny>>,
    passphrase: Option<String>,
    threads: Option<usize>,
    max_work_factor: Option<u8>,
) -> PyResult<Option<String>> {
    let keys = keys_of(identity, passphrase, max_work_factor)?;
    let (mut dec, name, _) = open_decryptor(file, &keys, threads)?;
    py.detach(|| dec.copy_to(&mut io::sink()))
        .map_err(|e| to_py(py, &name, e))?;
    Ok(dec.digest_hex())
}

/// What the header and footer (or an age file's header and length) say, without a key.
#[pyfunction]
fn inspect<'py>(py: Python<'py>, file: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let (mut src, name, seekable) = open_source(file)?;
    let info = py
        .detach(|| {
            if seekable {
                zseal::inspect::describe_file(&mut src)
            } else {
                zseal::inspect::describe_stream(&mut src)
            }
        })
        .map_err(|e| to_py(py, &name, e))?;
    // The library's one description, as the command's --json prints it.
    py.import("json")?
        .call_method1("loads", (info.to_json().to_string(),))?
        .cast_into::<PyDict>()
        .map_err(PyErr::from)
}

/// A new X25519 identity: (`AGE-SECRET-KEY-1…`, `age1…`). With `path`, also writes the identity
/// file there (mode 0600, never over an existing file), as `zseal keygen -o` does.
#[pyfunction]
#[pyo3(signature = (path=None))]
fn keygen(py: Python<'_>, path: Option<PathBuf>) -> PyResult<(String, String)> {
    let (secret, public) = recipients::generate();
    if let Some(p) = path {
        let text = Zeroizing::new(format!(
            "# created by zseal keygen\n# public key: {public}\n{}\n",
            *secret
        ));
        let name = p.display().to_string();
        let mut f = create_output(py, p, false, true, "a key file is never overwritten")?;
        f.write_all(text.as_bytes())
            .map_err(Error::from)
            .and_then(|()| persist(f))
            .map_err(|e| to_py(py, &name, e))?;
    }
    Ok((secret.to_string(), public))
}

#[pymodule]
fn _zseal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Reader>()?;
    m.add_function(wrap_pyfunction!(_passphrase_cache_len, m)?)?;
    m.add_class::<Writer>()?;
    m.add_function(wrap_pyfunction!(decrypt_file, m)?)?;
    m.add_function(wrap_pyfunction!(encrypt_file, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(keygen, m)?)?;
    m.add_class::<records::RecordKey>()?;
    m.add_class::<records::Dictionary>()?;
    m.add_class::<records::RecordSealer>()?;
    m.add_class::<records::RecordOpener>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
