//! Sealed records for Python (docs/FORMAT.md §9): `RecordKey`, `Dictionary`, `RecordSealer`,
//! `RecordOpener`, over `zseal::records`. Batches (`seal_many`, `open_many`) and anything that
//! compresses run without the GIL.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyList, PyString};
use zseal::records::{self, Opener, RecordCipher, Sealer, SealerOptions};
use zseal::Codec;

use crate::{as_path, file_name, keys_of, new_output, open_decryptor, persist, to_py, EncryptArgs};

/// A record key: 32 secret bytes. Share it as a zseal container with `save`, open it with `load`.
#[pyclass(module = "zseal._zseal", frozen)]
pub struct RecordKey(records::RecordKey);

#[pymethods]
impl RecordKey {
    /// A fresh key from the operating system's random number generator.
    #[staticmethod]
    fn generate(py: Python<'_>) -> PyResult<Self> {
        records::RecordKey::generate()
            .map(RecordKey)
            .map_err(|e| to_py(py, "", e))
    }

    /// A key from its 32 raw bytes (as kept in a key management system).
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        let raw: [u8; 32] = data.try_into().map_err(|_| {
            PyValueError::new_err(format!("a record key is 32 bytes, not {}", data.len()))
        })?;
        Ok(RecordKey(records::RecordKey::from_bytes(raw)))
    }

    /// The 32 raw key bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.0.expose())
    }

    /// Opens a record key container (from `save` or `zseal keygen --record-key`).
    #[staticmethod]
    #[pyo3(signature = (file, *, identity=None, passphrase=None))]
    fn load(
        py: Python<'_>,
        file: &Bound<'_, PyAny>,
        identity: Option<&Bound<'_, PyAny>>,
        passphrase: Option<String>,
    ) -> PyResult<Self> {
        let keys = keys_of(identity, passphrase, None, None)?;
        let (dec, name, _) = open_decryptor(file, &keys, Some(1))?;
        py.detach(|| match dec.format() {
            zseal::Format::Zseal => records::RecordKey::from_decryptor(dec),
            _ => Err(zseal::Error::InvalidOption(
                "a record key is kept in a zseal container (FORMAT.md §9.5); this is an age file"
                    .into(),
            )),
        })
        .map(RecordKey)
        .map_err(|e| to_py(py, &name, e))
    }

    /// Writes the key as a zseal container for `recipients` and/or a `passphrase`.
    #[pyo3(signature = (file, *, recipients=None, passphrase=None, overwrite=false))]
    fn save(
        &self,
        py: Python<'_>,
        file: &Bound<'_, PyAny>,
        recipients: Option<Vec<String>>,
        passphrase: Option<String>,
        overwrite: bool,
    ) -> PyResult<()> {
        let Some(path) = as_path(file)? else {
            return Err(PyValueError::new_err("file must be a path"));
        };
        let name = file_name(file);
        let out = new_output(py, path, overwrite, crate::OVERWRITE_HINT)?;
        let args = EncryptArgs {
            recipients,
            passphrase,
            compress: Some("none".into()),
            threads: Some(1),
            ..EncryptArgs::default()
        };
        let text = self.0.to_text();
        let r = py.detach(|| -> zseal::Result<()> {
            let mut enc = args.start(out)?;
            enc.write_all(text.as_bytes())?;
            persist(enc.finish()?)
        });
        r.map_err(|e| to_py(py, &name, e))
    }

    fn __repr__(&self) -> &'static str {
        "RecordKey(...)"
    }
}

/// A zstd dictionary for records (FORMAT.md §9.4).
#[pyclass(module = "zseal._zseal", frozen)]
pub struct Dictionary(Arc<records::Dictionary>);

#[pymethods]
impl Dictionary {
    /// Wraps a dictionary file's bytes (from `train`, `zseal dict train` or `zstd --train`).
    #[new]
    fn new(py: Python<'_>, data: Vec<u8>) -> PyResult<Self> {
        records::Dictionary::from_bytes(data)
            .map(|d| Dictionary(Arc::new(d)))
            .map_err(|e| to_py(py, "", e))
    }

    /// Trains a dictionary of at most `size` bytes on sample records.
    #[staticmethod]
    #[pyo3(signature = (samples, size=65536))]
    fn train(py: Python<'_>, samples: Vec<PyBackedBytes>, size: usize) -> PyResult<Self> {
        py.detach(|| records::Dictionary::train(&samples, size))
            .map(|d| Dictionary(Arc::new(d)))
            .map_err(|e| to_py(py, "", e))
    }

    /// The dictionary's id (what a record names).
    #[getter]
    fn id(&self) -> u32 {
        self.0.id()
    }

    /// The dictionary file's bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.0.as_bytes())
    }

    fn __len__(&self) -> usize {
        self.0.as_bytes().len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Dictionary(id={}, {} bytes)",
            self.0.id(),
            self.0.as_bytes().len()
        )
    }
}

/// A context: bytes-like, or a str (encoded as UTF-8).
fn context_of(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<u8>> {
    match obj {
        None => Ok(Vec::new()),
        Some(o) if o.is_none() => Ok(Vec::new()),
        Some(o) => match o.cast::<PyString>() {
            Ok(s) => Ok(s.to_str()?.as_bytes().to_vec()),
            Err(_) => Ok(o.extract::<PyBackedBytes>()?.to_vec()),
        },
    }
}

/// The contexts of a batch: `None`, or one per record (the library checks the count).
fn contexts_of(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<Vec<u8>>>> {
    match obj {
        Some(o) if !o.is_none() => o
            .try_iter()?
            .map(|c| context_of(Some(&c?)))
            .collect::<PyResult<Vec<_>>>()
            .map(Some),
        _ => Ok(None),
    }
}

/// Seals or opens one record with `work`: with the GIL held for a small record (cheaper than
/// releasing and taking it back), without it for a large one.
fn one<'py>(
    py: Python<'py>,
    record: &[u8],
    context: Option<&Bound<'py, PyAny>>,
    work: impl FnOnce(&[u8], &[u8], &mut Vec<u8>) -> zseal::Result<()> + Send,
) -> PyResult<Bound<'py, PyBytes>> {
    let context = context_of(context)?;
    let mut out = Vec::new();
    let r = if record.len() < 16 * 1024 {
        work(record, &context, &mut out)
    } else {
        py.detach(|| work(record, &context, &mut out))
    };
    r.map_err(|e| to_py(py, "", e))?;
    Ok(PyBytes::new(py, &out))
}

fn list_of<'py>(py: Python<'py>, items: Vec<Vec<u8>>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, items.iter().map(|b| PyBytes::new(py, b)))
}

/// Seals records one by one under a key (FORMAT.md §9). Thread-safe (calls are serialised);
/// use one per thread for parallel sealing.
#[pyclass(module = "zseal._zseal", frozen)]
pub struct RecordSealer {
    sealer: Mutex<Sealer>,
    /// The record cipher's name.
    #[pyo3(get)]
    cipher: &'static str,
}

impl RecordSealer {
    fn lock(&self) -> MutexGuard<'_, Sealer> {
        self.sealer.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl RecordSealer {
    #[new]
    #[pyo3(signature = (key, *, compress="zstd:3", cipher="aes-256-gcm-siv", dictionary=None))]
    fn new(
        py: Python<'_>,
        key: &RecordKey,
        compress: &str,
        cipher: &str,
        dictionary: Option<&Dictionary>,
    ) -> PyResult<Self> {
        let opts = (|| -> zseal::Result<SealerOptions> {
            Ok(SealerOptions {
                codec: compress.parse::<Codec>()?,
                cipher: cipher.parse::<RecordCipher>()?,
                dictionary: dictionary.map(|d| d.0.clone()),
            })
        })()
        .map_err(|e| to_py(py, "", e))?;
        let cipher = opts.cipher.name();
        let sealer = Sealer::new(&key.0, opts).map_err(|e| to_py(py, "", e))?;
        Ok(RecordSealer {
            sealer: Mutex::new(sealer),
            cipher,
        })
    }

    /// Seals one record; `context` (bytes or str, e.g. the database key) must be given again to
    /// open it.
    #[pyo3(signature = (record, context=None))]
    fn seal<'py>(
        &self,
        py: Python<'py>,
        record: PyBackedBytes,
        context: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        one(py, &record, context, |r, c, out| {
            self.lock().seal_into(r, c, out)
        })
    }

    /// Seals a list of records without the GIL; `contexts` is None or one per record.
    #[pyo3(signature = (records, contexts=None))]
    fn seal_many<'py>(
        &self,
        py: Python<'py>,
        records: Vec<PyBackedBytes>,
        contexts: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let contexts = contexts_of(contexts)?;
        let sealed = py
            .detach(|| self.lock().seal_many(&records, contexts.as_deref()))
            .map_err(|e| to_py(py, "", e))?;
        list_of(py, sealed)
    }
}

/// Opens sealed records; knows any number of dictionaries (by id). Thread-safe (calls are
/// serialised); use one per thread for parallel opening.
#[pyclass(module = "zseal._zseal", frozen)]
pub struct RecordOpener(Mutex<Opener>);

impl RecordOpener {
    fn lock(&self) -> MutexGuard<'_, Opener> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl RecordOpener {
    #[new]
    #[pyo3(signature = (key, *, dictionaries=Vec::new()))]
    fn new(
        py: Python<'_>,
        key: &RecordKey,
        dictionaries: Vec<PyRef<'_, Dictionary>>,
    ) -> PyResult<Self> {
        let dicts: Vec<_> = dictionaries.iter().map(|d| d.0.clone()).collect();
        Opener::new(&key.0, &dicts)
            .map(|o| RecordOpener(Mutex::new(o)))
            .map_err(|e| to_py(py, "", e))
    }

    /// Opens one record sealed with `context`; raises unless it authenticates.
    #[pyo3(signature = (record, context=None))]
    fn open<'py>(
        &self,
        py: Python<'py>,
        record: PyBackedBytes,
        context: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        one(py, &record, context, |r, c, out| {
            self.lock().open_into(r, c, out)
        })
    }

    /// Opens a list of records without the GIL; `contexts` is None or one per record. Raises at
    /// the first record that does not open (its index is in the message).
    #[pyo3(signature = (records, contexts=None))]
    fn open_many<'py>(
        &self,
        py: Python<'py>,
        records: Vec<PyBackedBytes>,
        contexts: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let contexts = contexts_of(contexts)?;
        let mut out = Vec::with_capacity(records.len());
        let r = py.detach(|| {
            self.lock()
                .open_many_into(&records, contexts.as_deref(), &mut out)
        });
        match r {
            Ok(()) => list_of(py, out),
            // `out` holds the records before the one that failed.
            Err(e) if e.kind() == zseal::ErrorKind::InvalidOption => Err(to_py(py, "", e)),
            Err(e) => Err(to_py(py, &format!("record {}", out.len()), e)),
        }
    }
}
