//! The reading file object (`zseal.open(..., "rb")`).

use crate::*;

pub(crate) struct ReadState {
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
pub(crate) fn fresh_bytes<'py>(
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
pub(crate) struct Reader {
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
    #[pyo3(signature = (file, *, threads=None, **keys))]
    fn new(
        py: Python<'_>,
        file: &Bound<'_, PyAny>,
        threads: Option<usize>,
        keys: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let keys = keys_from_kwargs("Reader", keys)?;
        let (mut dec, name, plan) = open_decryptor(file, &keys, threads)?;
        let seekable = plan.is_seekable();
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
