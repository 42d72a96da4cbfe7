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
// One module a job; each imports what the crate root holds (`use crate::*`), and the root
// gathers their items back, so that they call each other as they did in one file.
mod archive;
mod errors;
mod files;
mod keys;
mod reader;
mod records;
mod source;
mod split;
mod split_open;
mod transfers;
mod writer;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyDict};
use zeroize::Zeroizing;
use zseal::crypto::recipients::{self, KeyPassphrase};
use zseal::crypto::AgeStanza;
use zseal::io::Destination;
use zseal::pipeline::Threads;
use zseal::transfer::{ReadPlan, Source};
use zseal::{
    AgeIdentity, AgeRecipient, Codec, DecryptOptions, EncryptOptions, Error, ErrorKind, FileKey,
    HashAlg, Identity, KeyNeeded, Passphrase, Recipient, Sealed,
};

use errors::*;
use files::*;
use keys::*;
use reader::*;
use source::*;
use writer::*;

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
    m.add_function(wrap_pyfunction!(transfers::download, m)?)?;
    m.add_function(wrap_pyfunction!(transfers::upload, m)?)?;
    m.add_function(wrap_pyfunction!(transfers::pending, m)?)?;
    m.add_function(wrap_pyfunction!(transfers::abort, m)?)?;
    m.add_function(wrap_pyfunction!(archive::archive_members, m)?)?;
    m.add_class::<split::SplitSeal>()?;
    m.add_class::<split::SharedUpload>()?;
    m.add_function(wrap_pyfunction!(split::seal_range, m)?)?;
    m.add_function(wrap_pyfunction!(split::object_version, m)?)?;
    m.add_class::<split_open::SplitOpen>()?;
    m.add_function(wrap_pyfunction!(split_open::open_range, m)?)?;
    m.add_class::<records::RecordKey>()?;
    m.add_class::<records::Dictionary>()?;
    m.add_class::<records::RecordSealer>()?;
    m.add_class::<records::RecordOpener>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
