//! One container sealed in pieces by many processes (FORMAT.md §11; `zseal.dask`): the
//! coordinator's `SplitSeal` and a task's `seal_range`, over the library's.

use crate::*;

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
    #[pyo3(signature = (*, recipients=None, passphrase=None, compress=None, cipher=None,
                        hash=None, chunk_size=None, pad=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        recipients: Option<Vec<String>>,
        passphrase: Option<String>,
        compress: Option<&str>,
        cipher: Option<&str>,
        hash: Option<&str>,
        chunk_size: Option<usize>,
        pad: bool,
    ) -> PyResult<Self> {
        let args = EncryptArgs {
            recipients,
            passphrase,
            compress,
            cipher,
            hash,
            chunk_size,
            threads: None,
            pad,
            format: None,
        };
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

    /// Appends the container's end, from the tasks' results in order, to the file at `path`, a
    /// frame at a time; returns `(digest hex or None, plaintext size)`.
    fn write_trailer(
        &self,
        py: Python<'_>,
        results: Vec<PyBackedBytes>,
        path: PathBuf,
    ) -> PyResult<(Option<String>, u64)> {
        let name = path.display().to_string();
        let parsed = results
            .iter()
            .map(|r| zseal::RangeResult::from_bytes(r))
            .collect::<zseal::Result<Vec<_>>>()
            .map_err(|e| to_py(py, "", e))?;
        let digest = py
            .detach(|| -> zseal::Result<Option<String>> {
                let file = std::fs::OpenOptions::new().append(true).open(&path)?;
                let sink = std::io::BufWriter::with_capacity(1 << 20, file);
                let (sink, digest) = self.inner.write_trailer(&parsed, sink)?;
                sink.into_inner().map_err(|e| Error::from(e.into_error()))?;
                Ok(digest)
            })
            .map_err(|e| to_py(py, &name, e))?;
        let size = parsed.iter().map(|r| r.plaintext_len).sum();
        Ok((digest, size))
    }

    fn __repr__(&self) -> String {
        format!("<zseal SplitSeal, header of {} bytes>", self.header.len())
    }
}

/// Seals plaintext bytes `start..end` of the file `src` as the chunks from `first_chunk` into
/// the new file `out` (frames only), with `threads`; returns the range's result (bytes, for
/// `SplitSeal.trailer`). The bytes must be exactly `end - start`: a file that changed is an
/// error.
#[pyfunction]
#[pyo3(signature = (task_key, first_chunk, src, start, end, out, threads=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn seal_range<'py>(
    py: Python<'py>,
    task_key: &[u8],
    first_chunk: u64,
    src: PathBuf,
    start: u64,
    end: u64,
    out: PathBuf,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyBytes>> {
    let name = src.display().to_string();
    let key = zseal::TaskKey::from_bytes(task_key).map_err(|e| to_py(py, "", e))?;
    let result = py
        .detach(|| -> zseal::Result<Vec<u8>> {
            let mut f = File::open(&src)?;
            f.seek(SeekFrom::Start(start))?;
            let sink = std::io::BufWriter::with_capacity(1 << 20, File::create(&out)?);
            let mut w = zseal::seal_range(&key, first_chunk, sink, threads_of(threads))?;
            let want = end.saturating_sub(start);
            let got = w.copy_from(&mut (&mut f).take(want))?;
            if got != want {
                return Err(option_error(format!(
                    "{name} holds {got} bytes from offset {start}, not {want}: it changed while \
                     it was being sealed"
                )));
            }
            let (sink, result) = w.finish_range()?;
            let file = sink.into_inner().map_err(|e| Error::from(e.into_error()))?;
            file.sync_all()?;
            Ok(result.to_bytes())
        })
        .map_err(|e| to_py(py, &name, e))?;
    Ok(PyBytes::new(py, &result))
}
