//! One container opened in pieces by many processes (FORMAT.md §11.4; `zseal.dask.verify`
//! and `decrypt`): the coordinator's `SplitOpen` and a task's `open_range`, over the
//! library's.

use crate::*;

/// The container's size, and an object's ETag (what the tasks are pinned to).
fn size_and_version(c: &Source) -> io::Result<(u64, Option<String>)> {
    let size = c
        .size()
        .ok_or_else(|| io::Error::other(format!("{}: not a regular file", c.name())))?;
    Ok((size, c.etag().map(str::to_owned)))
}

/// The coordinator of a container opened in pieces: the open key (unwrapped once), the
/// plaintext's size and chunks, and the check of the tasks' results.
#[pyclass(module = "zseal._zseal", frozen)]
pub(crate) struct SplitOpen {
    key: zseal::OpenKey,
    fin: zseal::format::FinalFrame,
    hash: HashAlg,
    chunk_size: usize,
    name: String,
    settings: split::Settings,
    stored_size: u64,
    version: Option<String>,
}

#[pymethods]
impl SplitOpen {
    #[new]
    #[pyo3(signature = (src, *, settings=split::Settings::new(), **keys))]
    fn new(
        py: Python<'_>,
        src: String,
        settings: split::Settings,
        keys: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let keys = keys_from_kwargs("SplitOpen", keys)?;
        if keys.signers.is_required() || keys.signature.is_some() {
            return Err(PyValueError::new_err(
                "signers: a signer check reads the whole file in order, in one process \
                 (zseal.verify(..., signers=...)), not split across tasks",
            ));
        }
        let (locked, (stored_size, version)) = py
            .detach(|| -> zseal::Result<_> {
                let c = split::open_source(&src, &settings, None)?;
                let seen = size_and_version(&c)?;
                Ok((zseal::Locked::read(c)?, seen))
            })
            .map_err(|e| to_py(py, &src, e))?;
        let needs = locked.needs();
        let (key, locked) = with_keys(py, needs, &src, &keys, move |ids| {
            Ok((locked.open_key(ids)?, locked))
        })?;
        let (hash, chunk_size) = (locked.header().hash, locked.header().chunk_size());
        let fin = py
            .detach(|| {
                let mut dec = locked.unlock_with_key(&key, &DecryptOptions::default())?;
                zseal::final_frame(&mut dec)
            })
            .map_err(|e| to_py(py, &src, e))?;
        Ok(SplitOpen {
            key,
            fin,
            hash,
            chunk_size,
            name: src,
            settings,
            stored_size,
            version,
        })
    }

    /// What every task needs: the payload key and the header's digest, never the file key. A
    /// secret: hand it to tasks as an argument only.
    fn open_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.key.to_bytes())
    }

    #[getter]
    fn plaintext_size(&self) -> u64 {
        self.fin.plaintext_len
    }

    /// The container's size when it was opened.
    #[getter]
    fn stored_size(&self) -> u64 {
        self.stored_size
    }

    /// The object's ETag when it was opened (None for a file, or a store without strong
    /// ETags): the version every task must read (`open_range`'s `version`).
    #[getter]
    fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    #[getter]
    fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// The container's digest algorithm: "blake3", "xxh3" or "none".
    #[getter]
    fn hash(&self) -> &'static str {
        self.hash.name()
    }

    /// Chunk-aligned plaintext ranges `(start, end)` cutting the plaintext into at most
    /// `tasks` pieces (one, empty, for an empty plaintext).
    fn ranges(&self, tasks: usize) -> Vec<(u64, u64)> {
        let (c, len) = (self.chunk_size as u64, self.fin.plaintext_len);
        let chunks = len.div_ceil(c).max(1);
        let tasks = (tasks.max(1) as u64).min(chunks);
        (0..tasks)
            .map(|k| (chunks * k / tasks, chunks * (k + 1) / tasks))
            .map(|(a, b)| ((a * c).min(len), (b * c).min(len)))
            .collect()
    }

    /// Plans an object of the plaintext's size written by at most `tasks` tasks, its parts
    /// numbered by offset, and starts its upload: `(upload, ranges)`.
    #[pyo3(signature = (url, tasks, overwrite=false))]
    fn upload(
        &self,
        py: Python<'_>,
        url: String,
        tasks: usize,
        overwrite: bool,
    ) -> PyResult<(split::SharedUpload, Vec<(u64, u64)>)> {
        let (len, c) = (self.fin.plaintext_len, self.chunk_size as u64);
        let (up, ranges) = py
            .detach(|| -> zseal::Result<_> {
                let (plan, ranges) = zseal::remote::PartPlan::aligned(len, c, tasks)?;
                let up = split::remote(&url, &self.settings)?.shared_upload(overwrite, plan)?;
                Ok((up, ranges))
            })
            .map_err(|e| to_py(py, &url, e))?;
        Ok((split::SharedUpload::new(up, url), ranges))
    }

    /// Checks the tasks' results (in order) against the container's final frame: they cover
    /// the plaintext, and their merged digest is the recorded one. Returns the digest's hex
    /// (`b3sum`'s), or None for a container whose digest is not BLAKE3 (its frames were all
    /// authenticated, but XXH3 cannot be merged from pieces). A mismatch raises
    /// IntegrityError.
    fn check(&self, py: Python<'_>, results: Vec<PyBackedBytes>) -> PyResult<Option<String>> {
        let ranges = results
            .iter()
            .map(|r| zseal::OpenedRange::from_bytes(r))
            .collect::<zseal::Result<Vec<_>>>()
            .map_err(|e| to_py(py, "", e))?;
        zseal::merged_digest(self.hash, &self.fin, self.chunk_size, &ranges)
            .map_err(|e| to_py(py, &self.name, e))
    }

    fn __repr__(&self) -> String {
        format!(
            "<zseal SplitOpen of {} ({} bytes)>",
            self.name, self.fin.plaintext_len
        )
    }
}

/// Opens plaintext bytes `start..end` (whole chunks) of the container `src` (a path or an
/// object's URL: of the version whose ETag is `version`, when given) with `open_key`, on `threads`, into `out`: nowhere (None: a verify), the
/// existing file at that path at offset `start`, or, given a ticket (bytes, from
/// `SharedUpload.ticket`), the task's parts of that upload. Returns the range's result (bytes,
/// for `SplitOpen.check`), and with a ticket `(result, parts)`. Nothing that failed
/// authentication is written.
#[pyfunction]
#[pyo3(signature = (open_key, src, start, end, out=None, threads=None,
                    settings=split::Settings::new(), version=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn open_range<'py>(
    py: Python<'py>,
    open_key: &[u8],
    src: String,
    start: u64,
    end: u64,
    out: Option<&Bound<'py, PyAny>>,
    threads: Option<usize>,
    settings: split::Settings,
    version: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let key = zseal::OpenKey::from_bytes(open_key).map_err(|e| to_py(py, "", e))?;
    let opts = DecryptOptions::default().threads(threads_of(threads));
    let open = || -> zseal::Result<_> {
        let container = split::open_source(&src, &settings, version.as_deref())?;
        let mut dec = zseal::Locked::read(container)?.unlock_with_key(&key, &opts)?;
        let (span, inner) = zseal::stored_span(&mut dec, start, end)?;
        inner.plan_span(span.0, span.1);
        Ok(dec)
    };
    let ticket = match out {
        Some(o) if o.is_instance_of::<PyBytes>() => Some(
            zseal::remote::PartTicket::from_bytes(o.cast::<PyBytes>()?.as_bytes())
                .map_err(|e| to_py(py, "", e.into()))?,
        ),
        _ => None,
    };
    if let Some(ticket) = ticket {
        let (result, parts) = py
            .detach(|| -> zseal::Result<_> {
                let parts = zseal::remote::PartWriter::new(&ticket, &settings)?;
                let sink = zseal::transfer::Sink::parts(parts, &src);
                let (sink, r) = zseal::open_range(&mut open()?, start, end, sink)?;
                Ok((r.to_bytes(), sink.commit_parts()?.to_bytes()))
            })
            .map_err(|e| to_py(py, &src, e))?;
        return Ok((PyBytes::new(py, &result), PyBytes::new(py, &parts))
            .into_pyobject(py)?
            .into_any());
    }
    let path: Option<PathBuf> = match out {
        Some(o) if !o.is_none() => Some(o.extract()?),
        _ => None,
    };
    let result = py
        .detach(|| -> zseal::Result<Vec<u8>> {
            let mut dec = open()?;
            let r = match &path {
                None => zseal::open_range(&mut dec, start, end, io::sink())?.1,
                Some(p) => {
                    let region = zseal::transfer::Sink::region(p, SeekFrom::Start(start))?;
                    let (sink, r) =
                        zseal::open_range(&mut dec, start, end, split::buffered(region))?;
                    split::commit(sink, true)?;
                    r
                }
            };
            Ok(r.to_bytes())
        })
        .map_err(|e| to_py(py, &src, e))?;
    Ok(PyBytes::new(py, &result).into_any())
}
