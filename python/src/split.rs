//! One container sealed in pieces by many processes (FORMAT.md §11; `zseal.dask`): the
//! coordinator's `SplitSeal` and a task's `seal_range`, over the library's. What a task or the
//! coordinator writes is a `transfer::Sink` as every front end's output is: a piece file (a new
//! file renamed into place when whole), a region of a shared file, a task's parts of an upload.

use crate::*;
use zseal::transfer::Sink as TransferSink;

/// `sink` behind a 1 MiB buffer: the engine's frames are written in small pieces.
pub(crate) fn buffered(sink: TransferSink) -> io::BufWriter<TransferSink> {
    io::BufWriter::with_capacity(1 << 20, sink)
}

/// Writes out the buffer and commits the sink beneath (`sync`: its data reaches the disk).
pub(crate) fn commit(w: io::BufWriter<TransferSink>, sync: bool) -> zseal::Result<()> {
    let sink = w.into_inner().map_err(|e| Error::from(e.into_error()))?;
    Ok(sink.commit(sync)?)
}

/// Settings for an object store over the environment (object_store's keys: `zseal.dask`'s
/// `storage_options`, translated).
pub(crate) type Settings = Vec<(String, String)>;

/// The object at `url`, with `settings` over the environment.
pub(crate) fn remote(
    url: &str,
    settings: &[(String, String)],
) -> zseal::Result<zseal::remote::Remote> {
    let opts = zseal::remote::TransferOptions::from_env()?;
    Ok(zseal::remote::Remote::with_settings(url, opts, settings)?)
}

/// The object at `url` opened for reading, pinned to `version`: the ETag the job's coordinator
/// saw (None when its store gives no strong ETag). The reader's own HEAD must see that ETag,
/// and every GET it sends carries `If-Match` with it: a task reads the coordinator's version or
/// fails, never a replaced object's bytes beside the first one's.
pub(crate) fn pinned_reader(
    url: &str,
    settings: &[(String, String)],
    version: Option<&str>,
) -> zseal::Result<zseal::remote::RemoteReader> {
    let r = remote(url, settings)?.reader(zseal::io::ReadMode::Random)?;
    match version {
        Some(want) if r.etag() != Some(want) => Err(Error::from(io::Error::other(format!(
            "{url}: the source changed during the job (ETag {want}, now {}): run the job again",
            r.etag().unwrap_or("none")
        )))),
        _ => Ok(r),
    }
}

/// The coordinator of a container sealed in pieces: the header, the task key, the ranges, and
/// the trailer from the tasks' results.
#[pyclass(module = "zseal._zseal", frozen)]
pub(crate) struct SplitSeal {
    inner: zseal::SplitSeal,
    header: Vec<u8>,
}

#[pymethods]
impl SplitSeal {
    #[new]
    #[pyo3(signature = (**seal))]
    fn new(py: Python<'_>, seal: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let args = EncryptArgs::from_kwargs("SplitSeal", seal)?;
        let (keys, opts) = args.parse().map_err(|e| to_py(py, "", e))?;
        let (inner, header) = py
            .detach(|| {
                let refs: Vec<&dyn Recipient> =
                    keys.iter().map(|r| &**r as &dyn Recipient).collect();
                zseal::SplitSeal::new(&refs, &opts)
            })
            .map_err(|e| to_py(py, "", e))?;
        Ok(SplitSeal { inner, header })
    }

    /// The container's first bytes.
    #[getter]
    fn header<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.header)
    }

    /// What every task needs: the payload key and the algorithms, never the file key. A
    /// secret: hand it to tasks as an argument only.
    fn task_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.task_key().to_bytes())
    }

    /// Chunk-aligned ranges `(first_chunk, start, end)` cutting `size` bytes into at most
    /// `tasks` pieces.
    fn ranges(&self, size: u64, tasks: usize) -> Vec<(u64, u64, u64)> {
        self.inner.ranges(size, tasks)
    }

    /// Writes the container into the file at `path` (made empty by the caller): the header,
    /// the tasks' part files in order (each checked to hold what its result says its task
    /// sealed), and the end, a frame at a time; syncs it. Returns `(digest hex or None,
    /// plaintext size)`.
    fn join(
        &self,
        py: Python<'_>,
        results: Vec<PyBackedBytes>,
        parts: Vec<PathBuf>,
        path: PathBuf,
    ) -> PyResult<(Option<String>, u64)> {
        let parsed = parse_results(py, &results)?;
        let digest = py
            .detach(|| -> zseal::Result<Option<String>> {
                let sink = buffered(TransferSink::region(&path, SeekFrom::End(0))?);
                let (sink, digest) = self.inner.join(&self.header, &parts, &parsed, sink)?;
                commit(sink, true)?;
                Ok(digest)
            })
            // Unnamed: the message names the part file at fault, and the temporary output is
            // removed by the caller.
            .map_err(|e| to_py(py, "", e))?;
        let size = parsed.iter().map(|r| r.plaintext_len).sum();
        Ok((digest, size))
    }

    /// Starts one multipart upload of the object at `url` for the tasks sealing `ranges`
    /// (FORMAT.md §11.3); an existing object is refused without `overwrite`.
    #[pyo3(signature = (url, ranges, overwrite=false, settings=Settings::new()))]
    fn upload(
        &self,
        py: Python<'_>,
        url: String,
        ranges: Vec<(u64, u64, u64)>,
        overwrite: bool,
        settings: Settings,
    ) -> PyResult<SharedUpload> {
        let chunk = self.inner.task_key().chunk_size();
        let up = py
            .detach(|| -> zseal::Result<_> {
                let plan = zseal::remote::PartPlan::for_ranges(&ranges, chunk)?;
                Ok(remote(&url, &settings)?.shared_upload(overwrite, plan)?)
            })
            .map_err(|e| to_py(py, &url, e))?;
        Ok(SharedUpload::new(up, url))
    }

    fn __repr__(&self) -> String {
        format!("<zseal SplitSeal, header of {} bytes>", self.header.len())
    }
}

fn parse_results(py: Python<'_>, results: &[PyBackedBytes]) -> PyResult<Vec<zseal::RangeResult>> {
    results
        .iter()
        .map(|r| zseal::RangeResult::from_bytes(r))
        .collect::<zseal::Result<Vec<_>>>()
        .map_err(|e| to_py(py, "", e))
}

/// One multipart upload written by many tasks: tickets for them, and the completion.
#[pyclass(module = "zseal._zseal", frozen)]
pub(crate) struct SharedUpload {
    inner: Mutex<Option<zseal::remote::SharedUpload>>,
    url: String,
}

impl SharedUpload {
    pub(crate) fn new(up: zseal::remote::SharedUpload, url: String) -> Self {
        SharedUpload {
            inner: Mutex::new(Some(up)),
            url,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<zseal::remote::SharedUpload>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take(&self, py: Python<'_>) -> PyResult<zseal::remote::SharedUpload> {
        self.lock().take().ok_or_else(|| {
            to_py(
                py,
                &self.url,
                option_error("the upload was completed or aborted already"),
            )
        })
    }
}

#[pymethods]
impl SharedUpload {
    /// `(tasks, part size, body parts a task)`.
    #[getter]
    fn plan(&self) -> Option<(u32, u64, u32)> {
        self.lock()
            .as_ref()
            .map(|u| u.plan())
            .map(|p| (p.tasks, p.part_size, p.body_parts))
    }

    /// What task `task` needs to upload its parts (no secret); with `start`, for an upload
    /// whose parts are numbered by offset (`SplitOpen.upload`), the task's first byte.
    #[pyo3(signature = (task, start=None))]
    fn ticket<'py>(
        &self,
        py: Python<'py>,
        task: u32,
        start: Option<u64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let guard = self.lock();
        let up = guard
            .as_ref()
            .ok_or_else(|| to_py(py, &self.url, option_error("the upload has ended")))?;
        let ticket = match start {
            Some(at) => up.aligned_ticket(task, at),
            None => up.ticket(task),
        };
        Ok(PyBytes::new(py, &ticket.to_bytes()))
    }

    /// Completes an upload whose parts are numbered by offset from the tasks' parts; returns
    /// the number of parts. Any failure aborts the upload.
    fn complete_aligned(&self, py: Python<'_>, parts: Vec<PyBackedBytes>) -> PyResult<usize> {
        let up = self.take(py)?;
        let url = self.url.clone();
        py.detach(|| -> zseal::Result<usize> {
            let tasks = parts
                .iter()
                .map(|p| zseal::remote::TaskParts::from_bytes(p))
                .collect::<io::Result<Vec<_>>>();
            match tasks {
                Ok(t) => Ok(up.complete_aligned(&t)?),
                Err(e) => {
                    up.abort();
                    Err(e.into())
                }
            }
        })
        .map_err(|e| to_py(py, &url, e))
    }

    /// Uploads the seams and the container's end and completes the object from the tasks'
    /// results and parts, in task order; returns `(digest hex or None, plaintext size, stored
    /// size, parts)`. Any failure aborts the upload.
    fn complete(
        &self,
        py: Python<'_>,
        split: &SplitSeal,
        results: Vec<PyBackedBytes>,
        parts: Vec<PyBackedBytes>,
    ) -> PyResult<(Option<String>, u64, u64, usize)> {
        let up = self.take(py)?;
        let parsed = parse_results(py, &results)?;
        let url = self.url.clone();
        py.detach(|| -> zseal::Result<_> {
            let tasks = parts
                .iter()
                .map(|p| zseal::remote::TaskParts::from_bytes(p))
                .collect::<io::Result<Vec<_>>>();
            let tasks = match tasks {
                Ok(t) => t,
                Err(e) => {
                    up.abort();
                    return Err(e.into());
                }
            };
            let bound = split.inner.trailer_bound(&parsed);
            let mut digest = None;
            let (stored, count) = up.complete(&split.header, &tasks, bound, |w| {
                let (_, d) = split
                    .inner
                    .write_trailer(&parsed, w)
                    .map_err(io::Error::other)?;
                digest = d;
                Ok(())
            })?;
            let plain = parsed.iter().map(|r| r.plaintext_len).sum();
            Ok((digest, plain, stored, count))
        })
        .map_err(|e| to_py(py, &url, e))
    }

    /// Aborts the upload: no object, no parts left. Called again, it aborts again (parts that
    /// were uploading the first time may have landed since).
    fn abort(&self, py: Python<'_>) {
        let guard = self.lock();
        if let Some(up) = guard.as_ref() {
            py.detach(|| up.abort());
        }
    }

    fn __repr__(&self) -> String {
        format!("<zseal SharedUpload of {}>", self.url)
    }
}

/// Bytes `start..` of `src` as the transfer layer's source: a local file, or an object by URL
/// (ranged GETs in parts, with read-ahead, up to `end`, of the version the coordinator saw).
fn open_at(
    src: &str,
    (start, end): (u64, u64),
    settings: &Settings,
    version: Option<&str>,
) -> zseal::Result<Source> {
    let mut source = open_source(src, settings, version)?;
    source.plan_span(start, end);
    source.seek(SeekFrom::Start(start))?;
    Ok(source)
}

/// The file or object at `src` as the transfer layer's source, which a task or the coordinator
/// reads: a local file, or an object by ranged GETs (of the version whose ETag is `version`,
/// when given: see [`pinned_reader`]).
pub(crate) fn open_source(
    src: &str,
    settings: &Settings,
    version: Option<&str>,
) -> zseal::Result<Source> {
    Ok(match zseal::io::is_url(src) {
        true => Source::object(pinned_reader(src, settings, version)?),
        false => Source::file(File::open(src)?, src),
    })
}

/// One task's range: what it seals, from where, with how many threads.
struct Task<'a> {
    key: &'a zseal::TaskKey,
    first_chunk: u64,
    src: &'a str,
    settings: &'a Settings,
    /// The object's ETag when the coordinator planned the job.
    version: Option<&'a str>,
    range: (u64, u64),
    threads: Option<usize>,
}

impl Task<'_> {
    /// Seals `end - start` bytes from `src` (opened at `start`) into `sink` as the chunks from
    /// `first_chunk`; the bytes must be exactly that many: a source that changed is an error.
    fn seal_into<W: Write + Send>(&self, sink: W) -> zseal::Result<(W, zseal::RangeResult)> {
        let (src, (start, end)) = (self.src, self.range);
        let mut input = open_at(src, self.range, self.settings, self.version)?;
        let mut w = zseal::seal_range(self.key, self.first_chunk, sink, threads_of(self.threads))?;
        let want = end.saturating_sub(start);
        let got = w.copy_from(&mut (&mut input).take(want))?;
        if got != want {
            return Err(option_error(format!(
                "{src} holds {got} bytes from offset {start}, not {want}: it changed while it \
                 was being sealed"
            )));
        }
        w.finish_range()
    }
}

/// Seals plaintext bytes `start..end` of `src` (a path, or an object's URL: of the version
/// whose ETag is `version`, when given) as the chunks from `first_chunk` into `out`, with
/// `threads`: the file at that path (frames only; written beside it and renamed over it when
/// whole), or, given a ticket (bytes, from
/// `SharedUpload.ticket`), the task's parts of that upload. Returns the range's result (bytes,
/// for `SplitSeal.join`), and with a ticket `(result, parts)`.
#[pyfunction]
#[pyo3(signature = (task_key, first_chunk, src, start, end, out, threads=None,
                    settings=Settings::new(), version=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn seal_range<'py>(
    py: Python<'py>,
    task_key: &[u8],
    first_chunk: u64,
    src: PathBuf,
    start: u64,
    end: u64,
    out: &Bound<'py, PyAny>,
    threads: Option<usize>,
    settings: Settings,
    version: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let src = src.to_string_lossy().into_owned();
    let key = zseal::TaskKey::from_bytes(task_key).map_err(|e| to_py(py, "", e))?;
    let task = Task {
        key: &key,
        first_chunk,
        src: &src,
        settings: &settings,
        version: version.as_deref(),
        range: (start, end),
        threads,
    };
    if let Ok(ticket) = out.cast::<PyBytes>() {
        let ticket = zseal::remote::PartTicket::from_bytes(ticket.as_bytes())
            .map_err(|e| to_py(py, "", e.into()))?;
        let (result, parts) = py
            .detach(|| -> zseal::Result<_> {
                let parts = zseal::remote::PartWriter::new(&ticket, &settings)?;
                let (sink, result) = task.seal_into(TransferSink::parts(parts, &src))?;
                Ok((result.to_bytes(), sink.commit_parts()?.to_bytes()))
            })
            .map_err(|e| to_py(py, &src, e))?;
        return Ok((PyBytes::new(py, &result), PyBytes::new(py, &parts))
            .into_pyobject(py)?
            .into_any());
    }
    let out: PathBuf = out.extract()?;
    let result = py
        .detach(|| -> zseal::Result<Vec<u8>> {
            // Written beside the piece file and renamed over it when whole: an earlier attempt
            // of a rescheduled task, still running, never truncates or mixes into this one.
            let sink = buffered(TransferSink::create(&out, true, None)?);
            let (sink, result) = task.seal_into(sink)?;
            commit(sink, true)?;
            Ok(result.to_bytes())
        })
        .map_err(|e| to_py(py, &src, e))?;
    Ok(PyBytes::new(py, &result).into_any())
}

/// The object at `url` as one HEAD sees it: `(size, ETag)`, the ETag None when the store
/// gives no strong one; None when there is no object (credentials from the environment and
/// `settings`). A job pins its tasks to that ETag (`seal_range`'s `version`).
#[pyfunction]
#[pyo3(signature = (url, settings=Settings::new()))]
pub(crate) fn object_version(
    py: Python<'_>,
    url: String,
    settings: Settings,
) -> PyResult<Option<(u64, Option<String>)>> {
    py.detach(|| -> zseal::Result<_> {
        match remote(&url, &settings)?.reader(zseal::io::ReadMode::Random) {
            Ok(r) => Ok(Some((r.len(), r.etag().map(str::to_owned)))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    })
    .map_err(|e| to_py(py, &url, e))
}
