//! The writing file object (`zseal.open(..., "wb")`) and the outputs it writes: a temporary
//! file renamed into place, a Python file object, or an object.

use crate::*;

/// Where a writer's bytes go: the library's sink (a path by [`zseal::io::output`]'s rules, a
/// Python file object, an object), behind a large buffer for a path.
pub(crate) type Sink = TempOutput;

/// The library's sink behind a buffer: 1 MiB for a path (a file private while written and
/// renamed into place when complete; a FIFO, device or descriptor written in place; a link
/// followed), none for a file object or an upload, which buffer themselves.
pub(crate) type TempOutput = std::io::BufWriter<zseal::transfer::Sink>;

/// `sink` without a buffer of its own.
fn unbuffered(sink: zseal::transfer::Sink) -> Sink {
    std::io::BufWriter::with_capacity(0, sink)
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

/// Refuses the path `-`, which the command line reads as a standard stream: a Python function
/// given it would otherwise make a file named `-` (or look for one). `what`: "the output",
/// "the input".
pub(crate) fn refuse_dash(py: Python<'_>, path: &std::path::Path, what: &str) -> PyResult<()> {
    if path != std::path::Path::new("-") {
        return Ok(());
    }
    Err(crate::errors::raise(
        py,
        "OptionError",
        "invalid option",
        "",
        &format!(
            "{what} is '-': on the command line that is a standard stream, but these functions \
             take paths. To use standard output or input, open the file with zseal.open(...) and \
             copy to or from sys.stdout.buffer / sys.stdin.buffer (shutil.copyfileobj); a file \
             really named - is './-'"
        ),
    ))
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
    refuse_dash(py, &dst, "the output")?;
    let opened = Destination::resolve(&dst)
        .and_then(|d| zseal::transfer::Sink::create_file(&d, overwrite, private));
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

/// Completes a sink: renames a complete temporary file over (or, without overwrite, beside
/// only) its target, flushes a file object, completes an upload.
pub(crate) fn persist(t: TempOutput) -> zseal::Result<()> {
    let sink = t.into_inner().map_err(|e| Error::from(e.into_error()))?;
    if sink.as_file().is_none() {
        return sink.commit(true).map_err(Error::from);
    }
    let target = sink.name().to_string();
    sink.commit(true).map_err(|e| {
        let what = if e.kind() == io::ErrorKind::AlreadyExists {
            "it exists (pass overwrite=True, or mode \"wb\", to replace it)".to_string()
        } else {
            e.to_string()
        };
        option_error(format!("cannot create {target}: {what}"))
    })
}

/// The keyword arguments every encrypting call takes (`Writer`, `encrypt_file`, `upload`).
#[derive(Clone, Default)]
pub(crate) struct EncryptArgs {
    pub(crate) recipients: Option<Vec<String>>,
    /// Files of recipients, one a line (`recipients_file=`, the command line's `-R`).
    pub(crate) recipients_files: Vec<PathBuf>,
    /// SSH private keys to sign with (`sign=`, the command line's `--sign`).
    pub(crate) sign: Vec<PathBuf>,
    pub(crate) passphrase: Option<String>,
    pub(crate) compress: Option<String>,
    pub(crate) cipher: Option<String>,
    pub(crate) hash: Option<String>,
    pub(crate) chunk_size: Option<usize>,
    pub(crate) threads: Option<usize>,
    pub(crate) pad: bool,
    /// `zseal` (default), `age` or `crypt4gh`.
    pub(crate) format: Option<String>,
}

/// A keyword argument that is one path or a list of them (`recipients_file=`, `sign=`).
fn paths(v: &Bound<'_, PyAny>, what: &'static str) -> PyResult<Vec<PathBuf>> {
    let all: Vec<PathBuf> = (crate::keys::one_or_many(v, what)?.into_iter())
        .map(PathBuf::from)
        .collect();
    for p in &all {
        refuse_dash(v.py(), p, what)?;
    }
    Ok(all)
}

/// Recipients parsed from a caller's arguments.
pub(crate) type Recipients = Vec<Box<dyn Recipient + Send + Sync>>;

impl EncryptArgs {
    /// The sealing options of a call's keyword arguments (`zseal.SealOptions`: `recipients`,
    /// `passphrase`, `compress`, `cipher`, `hash`, `chunk_size`, `pad`), read once for every
    /// function that seals; any other name is a TypeError, as Python reports one.
    pub(crate) fn from_kwargs(what: &str, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut a = EncryptArgs::default();
        for (k, v) in kwargs.into_iter().flatten() {
            let name: String = k.extract()?;
            if v.is_none() {
                continue;
            }
            match name.as_str() {
                // One string is one recipient; else any iterable of strings (a list, a tuple, a
                // generator).
                "recipients" if v.is_instance_of::<pyo3::types::PyString>() => {
                    a.recipients = Some(vec![v.extract()?]);
                }
                "recipients" => {
                    let all = v.try_iter()?.map(|r| r?.extract::<String>());
                    a.recipients = Some(all.collect::<PyResult<_>>()?);
                }
                "recipients_file" => a.recipients_files = paths(&v, "recipients_file")?,
                "sign" => a.sign = paths(&v, "sign")?,
                "passphrase" => a.passphrase = Some(v.extract()?),
                "compress" => a.compress = Some(v.extract()?),
                "cipher" => a.cipher = Some(v.extract()?),
                "hash" => a.hash = Some(v.extract()?),
                "chunk_size" => a.chunk_size = Some(v.extract()?),
                "pad" => a.pad = v.extract()?,
                _ => {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "{what}() got an unexpected keyword argument '{name}'"
                    )))
                }
            }
        }
        Ok(a)
    }

    /// Parses the keys and options and writes the header to `sink`: a container's, or an age
    /// file's.
    pub(crate) fn start<W: Write>(self, sink: W) -> zseal::Result<zseal::Writer<W>> {
        if self.format.as_deref() == Some("crypt4gh") {
            return self.start_crypt4gh(sink);
        }
        let (keys, o) = self.parse()?;
        let refs: Vec<&dyn Recipient> = keys.iter().map(|r| &**r as &dyn Recipient).collect();
        zseal::Writer::new(sink, &refs, &o)
    }

    /// A crypt4gh file's header for the recipients as X25519 public keys (`age1…`,
    /// `ssh-ed25519 …`, crypt4gh public key files; FORMAT.md §13.8).
    fn start_crypt4gh<W: Write>(self, sink: W) -> zseal::Result<zseal::Writer<W>> {
        use zseal::crypto::c4gh;
        let refuse = |what: &str| Err(zseal::Error::InvalidOption(what.into()));
        if self.passphrase.is_some() {
            return refuse("a crypt4gh file has no passphrase: pass recipients=[\"age1…\"]");
        }
        if !self.sign.is_empty() {
            return refuse(
                "sign= with format=\"crypt4gh\": its signature goes beside the file, which \
                 `zseal encrypt --format crypt4gh --sign KEY -o OUT` writes (OUT.sig)",
            );
        }
        let mut to = Vec::new();
        for r in self.recipients.iter().flatten() {
            to.push(c4gh::read_public_key(r, &format!("recipient {r}"))?);
        }
        for f in &self.recipients_files {
            to.extend(c4gh::read_recipients_file(f)?);
        }
        zseal::Writer::crypt4gh(sink, &to, &self.options()?)
    }

    /// Who these arguments seal for, as a resumable upload's journal compares it (the command
    /// line's `-r` and `-R` give the same for the same recipients).
    pub(crate) fn recipients_id(&self) -> zseal::Result<String> {
        let mut texts = Vec::new();
        for r in self.recipients.iter().flatten() {
            texts.push(
                AgeRecipient::parse_with(r, crate::keys::KeyPrompt::None)?
                    .as_str()
                    .to_string(),
            );
        }
        for f in &self.recipients_files {
            let read = recipients::read_recipients_file_with(f, crate::keys::KeyPrompt::None)?;
            texts.extend(read.iter().map(|r| r.as_str().to_string()));
        }
        Ok(zseal::remote::recipients_id(
            texts.iter().map(String::as_str),
        ))
    }

    /// The recipients and the options these arguments name.
    pub(crate) fn parse(self) -> zseal::Result<(Recipients, EncryptOptions)> {
        let mut keys: Recipients = Vec::new();
        for r in self.recipients.iter().flatten() {
            keys.push(Box::new(AgeRecipient::parse_with(
                r,
                crate::keys::KeyPrompt::None,
            )?));
        }
        for f in &self.recipients_files {
            let read = recipients::read_recipients_file_with(f, crate::keys::KeyPrompt::None)?;
            keys.extend(
                read.into_iter()
                    .map(|r| Box::new(r) as Box<dyn Recipient + Send + Sync>),
            );
        }
        if let Some(pw) = &self.passphrase {
            keys.push(Box::new(Passphrase::new(pw.clone().into_bytes())?));
        }
        if keys.is_empty() {
            return Err(option_error(
                "no key to encrypt to: pass recipients=[\"age1…\"] or passphrase=",
            ));
        }
        Ok((keys, self.options()?))
    }

    /// The options these arguments name.
    fn options(&self) -> zseal::Result<EncryptOptions> {
        let mut o = EncryptOptions::default()
            .threads(threads_of(self.threads))
            .pad(self.pad);
        if let Some(c) = &self.compress {
            o = o.codec(c.parse::<Codec>()?);
        }
        if let Some(c) = &self.cipher {
            o = o.cipher(c.parse()?);
        }
        if let Some(h) = &self.hash {
            o = o.hash(h.parse::<HashAlg>()?);
        }
        if let Some(c) = self.chunk_size {
            o = o.chunk_size(c);
        }
        if let Some(f) = &self.format {
            o = o.format(f.parse()?);
        }
        // An encrypted key has no one to ask here: it is refused, naming an agent instead.
        for k in &self.sign {
            o = o.sign(zseal::crypto::sign::SigningKey::read(k, &KeyPrompt::None)?);
        }
        Ok(o)
    }
}

/// An encrypting writer (`zseal.open(..., "wb")`); the container (or age file) is complete
/// after `close()`.
#[pyclass(module = "zseal._zseal", frozen)]
pub(crate) struct Writer {
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
    #[pyo3(signature = (file, *, threads=None, exclusive=false, format=None, **seal))]
    fn new(
        py: Python<'_>,
        file: &Bound<'_, PyAny>,
        threads: Option<usize>,
        exclusive: bool,
        format: Option<String>,
        seal: Option<&Bound<'_, PyDict>>,
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
            (unbuffered(zseal::transfer::Sink::object(w)), url)
        } else if let Some(p) = as_path(file)? {
            let name = p.display().to_string();
            let out = new_output(py, p, !exclusive, "mode \"xb\" never replaces a file")?;
            (out, name)
        } else if file.hasattr("write")? {
            let name = file_name(file);
            let py_file = PyFileObj(file.clone().unbind());
            (
                unbuffered(zseal::transfer::Sink::stream(py_file, &name)),
                name,
            )
        } else {
            return Err(PyValueError::new_err(
                "file must be a path or a binary file object with write()",
            ));
        };
        let args = EncryptArgs {
            threads,
            format,
            ..EncryptArgs::from_kwargs("Writer", seal)?
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
            Some(enc) => persist(enc.finish()?),
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
