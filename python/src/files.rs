//! Whole-file functions: `encrypt_file`, `decrypt_file`, `verify`, `inspect`, `keygen`.

use crate::*;

/// Decrypts `src` (a path) and verifies it; `dst` (a path) appears only when all of it verified.
#[pyfunction]
#[pyo3(signature = (src, dst, *, threads=None, overwrite=false, **keys))]
pub(crate) fn decrypt_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    threads: Option<usize>,
    overwrite: bool,
    keys: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<String>> {
    let name = src.display().to_string();
    crate::writer::refuse_dash(py, &src, "the input")?;
    crate::writer::refuse_dash(py, &dst, "the output")?;
    let keys = keys_from_kwargs("decrypt_file", keys)?;
    let f = File::open(&src).map_err(|e| to_py(py, &name, e.into()))?;
    let source = Source::file(f, name.clone());
    // The transfer layer chooses how (the workers read long frame bodies by offset).
    let plan = source.read_plan();
    let opts = DecryptOptions::default()
        .threads(threads_of(threads))
        .signers(keys.signers.clone());
    let mut dec = unlock(py, source, &name, &keys, &opts)?;
    check_beside(py, &mut dec, &keys, Some(&name), &name)?;
    let out_name = dst.display().to_string();
    let mut t = new_output(py, dst, overwrite, OVERWRITE_HINT)?;
    py.detach(|| plan.copy(&mut dec, None, Output(&mut t)))
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
    unsigned_c4gh_warning(py, &dec, &name)?;
    Ok(dec.digest_hex())
}

/// What the format cannot promise, said each time its plaintext is released (issue 59 §4): a
/// crypt4gh v1 file cut at a segment boundary decrypts without error.
pub(crate) fn unsigned_c4gh_warning<R: Read>(
    py: Python<'_>,
    dec: &zseal::Reader<R>,
    name: &str,
) -> PyResult<()> {
    if dec.as_crypt4gh().is_some_and(|c| c.signer().is_none()) {
        user_warning(
            py,
            format!(
                "{name} is a crypt4gh file: every segment is authenticated, but {}",
                zseal::format::crypt4gh::describe::UNSIGNED_CAVEAT
            ),
        )?;
    }
    Ok(())
}

/// A `UserWarning` with `msg`.
pub(crate) fn user_warning(py: Python<'_>, msg: String) -> PyResult<()> {
    let msg = std::ffi::CString::new(msg).unwrap_or_default();
    PyErr::warn(
        py,
        &py.get_type::<pyo3::exceptions::PyUserWarning>(),
        &msg,
        1,
    )
}

/// An error of the output (not the container), so that the message names the output file.
#[derive(Debug)]
pub(crate) struct OutputError(pub(crate) io::Error);

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for OutputError {}

/// A writer whose errors are marked as the output's.
pub(crate) struct Output<W>(pub(crate) W);

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

pub(crate) fn is_output_error(e: &Error) -> bool {
    matches!(e, Error::Io(io) if io.get_ref().is_some_and(|r| r.is::<OutputError>()))
}

/// Encrypts `src` (a path) into `dst` (a path), which appears only when complete; returns what
/// `decrypt_file` returns: the whole-plaintext digest in hex, or `None` (hash none, an age file).
#[pyfunction]
#[pyo3(signature = (src, dst, *, threads=None, overwrite=false, format=None, **seal))]
pub(crate) fn encrypt_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    threads: Option<usize>,
    overwrite: bool,
    format: Option<String>,
    seal: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<String>> {
    let name = src.display().to_string();
    let out_name = dst.display().to_string();
    crate::writer::refuse_dash(py, &src, "the input")?;
    let f = File::open(&src).map_err(|e| to_py(py, &name, e.into()))?;
    let sink = new_output(py, dst, overwrite, OVERWRITE_HINT)?;
    let args = EncryptArgs {
        threads,
        format,
        ..EncryptArgs::from_kwargs("encrypt_file", seal)?
    };
    // The transfer layer chooses how: the workers read the file by offset, and write into the
    // output file by offset when it is a regular file.
    let shared = sink.get_ref().shared_handle();
    let mut source = Source::file(f, name);
    py.detach(|| {
        let mut enc = args.start(sink)?;
        zseal::transfer::seal(&mut enc, &mut source, shared, None)?;
        let (sink, digest) = enc.finish_with_digest()?;
        persist(sink)?;
        Ok(digest)
    })
    .map_err(|e| to_py(py, &out_name, e))
}

/// Reads and checks the whole container; returns the whole-plaintext digest in hex (the form
/// of `b3sum` or `xxhsum -H3`), or None when the file was written without one.
#[pyfunction]
#[pyo3(signature = (file, *, threads=None, **keys))]
pub(crate) fn verify(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    threads: Option<usize>,
    keys: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<String>> {
    let keys = keys_from_kwargs("verify", keys)?;
    let (mut dec, name, plan) = open_decryptor(file, &keys, threads)?;
    py.detach(|| plan.copy(&mut dec, None, io::sink()))
        .map_err(|e| to_py(py, &name, e))?;
    Ok(dec.digest_hex())
}

/// What the header and footer (or an age file's header and length) say, without a key.
#[pyfunction]
pub(crate) fn inspect<'py>(
    py: Python<'py>,
    file: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let (mut src, name) = open_source(file)?;
    let info = py
        .detach(|| {
            if src.is_seekable() {
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

/// A new X25519 identity: (`AGE-SECRET-KEY-1…`, `age1…`); with `pq=True` a post-quantum one
/// (`AGE-SECRET-KEY-PQ-1…`, `age1pq1…`, ML-KEM-768 + X25519 as age 1.3 makes). With `path`, also
/// writes the identity file there (mode 0600, never over an existing file), as `zseal keygen -o`
/// does.
#[pyfunction]
#[pyo3(signature = (path=None, *, pq=false))]
pub(crate) fn keygen(
    py: Python<'_>,
    path: Option<PathBuf>,
    pq: bool,
) -> PyResult<(String, String)> {
    let (secret, public) = match pq {
        true => recipients::generate_pq(),
        false => recipients::generate(),
    };
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
