//! Errors: the library's kind picks the Python class (defined in zseal/errors.py), the message is
//! the library's, prefixed with the file it concerns.

use crate::*;

/// The Python exception class for a library error.
pub(crate) fn class_for(e: &Error) -> &'static str {
    let kind = e.kind();
    match kind {
        ErrorKind::Io => match e {
            Error::Io(io) if io.kind() == io::ErrorKind::NotFound => "ZsealFileNotFoundError",
            Error::Io(io) if io.kind() == io::ErrorKind::AlreadyExists => "ZsealFileExistsError",
            _ => "ZsealIOError",
        },
        ErrorKind::NotZseal | ErrorKind::UnsupportedVersion | ErrorKind::NotRecord => {
            "NotZsealError"
        }
        ErrorKind::DictionaryMissing => "MissingDictionaryError",
        ErrorKind::WrongPassphrase | ErrorKind::NoMatchingKey => "WrongKeyError",
        ErrorKind::InvalidOption | ErrorKind::RangePastEnd => "OptionError",
        ErrorKind::Truncated => "TruncatedError",
        k if k.is_integrity() || k == ErrorKind::InvalidHeader || k == ErrorKind::Limit => {
            "IntegrityError"
        }
        _ => "ZsealError",
    }
}

pub(crate) fn raise(py: Python<'_>, class: &str, kind: &str, name: &str, message: &str) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let cls = py.import("zseal.errors")?.getattr(class)?;
        // A message that names its file already is not prefixed with it again.
        let text = if name.is_empty() || message.starts_with(name) {
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
pub(crate) fn missing_key(py: Python<'_>, name: &str, message: String) -> PyErr {
    raise(py, "MissingKeyError", "missing key", name, &message)
}

pub(crate) fn option_error(message: impl Into<String>) -> Error {
    Error::InvalidOption(message.into())
}
