//! Archives (FORMAT.md §15): the members of a container whose plaintext is a tar, for
//! `zseal.Archive` (python/zseal/archive.py), which opens each member by its offsets.

use crate::*;
use pyo3::types::PyList;

/// The members of the archive `file` (a path, a URL or a binary file object), each a dict of
/// what `zseal ls --json` prints and the member's data offset. Until archives carry their
/// index (FORMAT.md §15.1) the whole tar is read once through the decryption; the list is
/// returned only once the container's end authenticated.
#[pyfunction]
#[pyo3(signature = (file, *, threads=None, **keys))]
pub(crate) fn archive_members<'py>(
    py: Python<'py>,
    file: &Bound<'py, PyAny>,
    threads: Option<usize>,
    keys: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyList>> {
    let keys = keys_from_kwargs("Archive", keys)?;
    let (source, name) = open_source(file)?;
    let opts = DecryptOptions::default().threads(threads_of(threads));
    let mut dec = unlock(py, source, &name, &keys, &opts)?;
    let index = py
        .detach(|| {
            let index = zseal::archive::index_tar(&mut dec)?;
            io::copy(&mut dec, &mut io::sink())?;
            Ok::<_, Error>(index)
        })
        .map_err(|e| to_py(py, &name, e))?;
    let list = PyList::empty(py);
    for m in index.members {
        let d = PyDict::new(py);
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        d.set_item("path", text(&m.path))?;
        d.set_item("type", m.kind.name())?;
        d.set_item("size", m.size)?;
        d.set_item("mode", m.mode & 0o7777)?;
        d.set_item("mtime", m.mtime.0)?;
        d.set_item("mtime_nsec", m.mtime.1)?;
        d.set_item("uid", m.uid)?;
        d.set_item("gid", m.gid)?;
        d.set_item("owner", text(&m.uname))?;
        d.set_item("group", text(&m.gname))?;
        d.set_item("link", text(&m.link))?;
        d.set_item("data_offset", m.data_offset)?;
        list.append(d)?;
    }
    Ok(list)
}
