//! Sources and sinks: a path (read by Rust alone) or any Python binary file object.

use crate::*;

/// A Python binary file object as a Rust reader, writer and seeker.
pub(crate) struct PyFileObj(pub(crate) Py<PyAny>);

pub(crate) fn py_io(e: PyErr) -> io::Error {
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

pub(crate) fn check_len(got: usize, asked: usize) -> io::Result<usize> {
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

/// Reads of the frame headers from a Python file object are a few bytes: a buffer turns them
/// into one call per frame.
pub(crate) const SOURCE_BUFFER: usize = 64 << 10;

/// `file` is a path (str or os.PathLike) or an object with `read`. Returns the engine's source
/// (the transfer layer's), and its name for messages.
pub(crate) fn open_source(file: &Bound<'_, PyAny>) -> PyResult<(Source, String)> {
    let py = file.py();
    if let Some(url) = as_url(file)? {
        // An object: ranged GETs, fetched as read (file objects are sought and read in pieces),
        // with read-ahead that grows along a sequential run.
        let reader = py
            .detach(|| {
                zseal::remote::Remote::from_env(&url)?.reader(zseal::remote::ReadMode::Random)
            })
            .map_err(|e| to_py(py, &url, Error::from(e)))?;
        return Ok((Source::object(reader), url));
    }
    if let Some(path) = as_path(file)? {
        let name = path.display().to_string();
        let f = py
            .detach(|| File::open(&path))
            .map_err(|e| to_py(py, &name, Error::from(e)))?;
        return Ok((Source::file(f, name.clone()), name));
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
    let buffered = BufReader::with_capacity(SOURCE_BUFFER, PyFileObj(file.clone().unbind()));
    let source = match seekable {
        true => Source::seekable(buffered, name.clone()),
        false => Source::stream(buffered, name.clone()),
    };
    Ok((source, name))
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
pub(crate) fn threads_of(threads: Option<usize>) -> Threads {
    let from_env = || {
        ["ZSEAL_THREADS", "OMP_NUM_THREADS"]
            .iter()
            .find_map(|v| std::env::var(v).ok()?.trim().parse::<usize>().ok())
    };
    threads
        .or_else(from_env)
        .map_or(Threads::Auto, Threads::from)
}
