//! Transfers that survive a cut, as the command line's (docs/OBJECTS.md §7 and "Resuming a
//! download"): `download`, `upload`, `pending`, `abort`. The library decides (which transfer
//! keeps a journal, what a resume checks, what it refuses); these only ask, and share the
//! journals with the command line, so either continues what the other began.

use crate::*;
use pyo3::types::PyList;
use zseal::resume::download::{Ask, Download};

/// Decrypts the object at `url` into the regular file `dst`, through `DST.zseal-partial` and a
/// journal, as `zseal decrypt URL -o DST [--resume]` does: a run that fails or is killed keeps
/// what it authenticated, and `resume=True` fetches only the rest. Returns the digest.
#[pyfunction]
#[pyo3(signature = (url, dst, *, resume=false, overwrite=false, threads=None, **keys))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn download(
    py: Python<'_>,
    url: String,
    dst: PathBuf,
    resume: bool,
    overwrite: bool,
    threads: Option<usize>,
    keys: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<String>> {
    if !zseal::io::is_url(&url) {
        return Err(PyValueError::new_err(format!(
            "download() reads an object (s3://, gs://, az://, http(s)://), not {url}: use \
             decrypt_file() for a local file"
        )));
    }
    crate::writer::refuse_dash(py, &dst, "the output")?;
    let keys = keys_from_kwargs("download", keys)?;
    let (source, name) = open_source(pyo3::types::PyString::new(py, &url).as_any())?;
    let plan = source.read_plan();
    let ask = Ask {
        url: Some(&url),
        output: Some(&dst),
        resume,
        force: overwrite,
        signer: keys.signers.is_required(),
        range: false,
    };
    // Local checks and the journal: no request.
    let download = Download::plan(&ask, &source).map_err(|e| to_py(py, &name, e))?;
    let opts = DecryptOptions::default()
        .threads(threads_of(threads))
        .signers(keys.signers.clone());
    let mut dec = unlock(py, source, &name, &keys, &opts)?;
    check_beside(py, &mut dec, &keys, Some(&name), &name)?;
    let Some(download) = download else {
        // Not resumable (a store without versions, no state directory): as decrypt_file.
        let out_name = dst.display().to_string();
        let mut t = new_output(py, dst, overwrite, OVERWRITE_HINT)?;
        py.detach(|| plan.copy(&mut dec, None, Output(&mut t)))
            .map_err(|e| {
                to_py(
                    py,
                    if is_output_error(&e) {
                        &out_name
                    } else {
                        &name
                    },
                    e,
                )
            })?;
        py.detach(|| persist(t))
            .map_err(|e| to_py(py, &out_name, e))?;
        unsigned_c4gh_warning(py, &dec, &name)?;
        return Ok(dec.digest_hex());
    };
    let partial = py
        .detach(|| download.start(&mut dec))
        .map_err(|e| to_py(py, &name, e))?;
    let from = partial.from();
    let kept = partial.kept().map_err(|e| to_py(py, &name, e))?;
    let ran = py.detach(|| {
        partial.run(true, |out| {
            match from {
                0 => plan.copy(&mut dec, None, out)?,
                _ => dec.copy_resumed_to(from, kept, out)?,
            };
            // Only a file read to its authenticated end is renamed into place.
            match dec.chunk_count() {
                Some(_) => Ok(()),
                None => Err(Error::Bug("the download ended unverified".into())),
            }
        })
    });
    if let Err(f) = ran {
        let err = to_py(py, &name, f.error);
        if let Some(kept) = f.kept {
            // Python 3.11's exception notes; an older Python shows the error alone.
            let _ = err.value(py).call_method1("add_note", (kept,));
        }
        return Err(err);
    }
    unsigned_c4gh_warning(py, &dec, &name)?;
    Ok(dec.digest_hex())
}

/// Encrypts the regular file `src` into the object at `url`, as `zseal encrypt SRC -o URL
/// [--resume]` does: an upload that can be resumed keeps a journal, a cut one stays pending,
/// and `resume=True` sends only what the store lacks. Returns what the run did.
#[pyfunction]
#[pyo3(signature = (src, url, *, resume=false, overwrite=false, threads=None, **seal))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn upload<'py>(
    py: Python<'py>,
    src: PathBuf,
    url: String,
    resume: bool,
    overwrite: bool,
    threads: Option<usize>,
    seal: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    crate::writer::refuse_dash(py, &src, "the input")?;
    let name = src.display().to_string();
    let args = EncryptArgs {
        threads,
        ..EncryptArgs::from_kwargs("upload", seal)?
    };
    let id = args.recipients_id().map_err(|e| to_py(py, &name, e))?;
    let (keys, opts) = args.clone().parse().map_err(|e| to_py(py, &name, e))?;
    let remote = py
        .detach(|| zseal::remote::Remote::from_env(&url))
        .map_err(|e| to_py(py, &url, Error::from(e)))?;
    let size = std::fs::metadata(&src)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    if resume && size.is_none() {
        return Err(PyValueError::new_err(format!(
            "resume=True needs a regular file as the source: {name} cannot be read again"
        )));
    }
    let journaled = py
        .detach(|| remote.journals_upload(size, &opts, resume))
        .map_err(|e| to_py(py, &url, Error::from(e)))?;
    let out = PyDict::new(py);
    if !journaled {
        // As every upload: the object appears when complete, or not at all.
        let f = File::open(&src).map_err(|e| to_py(py, &name, e.into()))?;
        let mut source = Source::file(f, name.clone());
        let digest = py
            .detach(|| {
                let sink = remote.writer(overwrite, None)?;
                let mut enc = args.start(sink)?;
                zseal::transfer::seal(&mut enc, &mut source, None, None)?;
                let (sink, digest) = enc.finish_with_digest()?;
                sink.commit()?;
                Ok(digest)
            })
            .map_err(|e| to_py(py, &url, e))?;
        out.set_item("journaled", false)?;
        out.set_item("digest", digest)?;
        return Ok(out);
    }
    let done = py
        .detach(|| {
            let refs: Vec<&dyn Recipient> = keys.iter().map(|r| &**r as &dyn Recipient).collect();
            let job = zseal::remote::SealJob {
                source: &src,
                recipients: &refs,
                recipients_id: &id,
                opts: &opts,
                overwrite,
                sealed: None,
            };
            match resume {
                true => remote.resume_upload(&job),
                false => remote.seal_resumable(&job),
            }
        })
        .map_err(|e| to_py(py, &url, Error::from(e)))?;
    if let Some(why) = &done.restarted {
        user_warning(
            py,
            format!(
                "the pending upload into {url} could not be continued safely: {why}. It was \
                 aborted, and the file sealed anew under a new key in a new upload"
            ),
        )?;
    }
    out.set_item("journaled", true)?;
    out.set_item("parts_kept", done.parts_kept)?;
    out.set_item("parts_sent", done.parts_sent)?;
    out.set_item("sealed", done.sealed)?;
    out.set_item("uploaded", done.uploaded)?;
    out.set_item("digest", done.digest_hex)?;
    out.set_item("restarted", done.restarted)?;
    Ok(out)
}

/// What is pending, as `zseal resume --list` shows it: one dict an upload or a download.
#[pyfunction]
pub(crate) fn pending<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    let uploads = py
        .detach(zseal::remote::pending_uploads)
        .map_err(|e| to_py(py, "the journals", Error::from(e)))?;
    let downloads = py
        .detach(zseal::resume::download::pending_downloads)
        .map_err(|e| to_py(py, "the journals", e))?;
    let list = PyList::empty(py);
    for u in uploads {
        let d = PyDict::new(py);
        d.set_item("kind", "upload")?;
        d.set_item("url", u.url)?;
        d.set_item("source", u.source)?;
        d.set_item("parts", u.parts)?;
        d.set_item("bytes_sent", u.bytes_sent)?;
        d.set_item("source_size", u.source_size)?;
        d.set_item("updated", u.updated)?;
        list.append(d)?;
    }
    for p in downloads {
        let d = PyDict::new(py);
        d.set_item("kind", "download")?;
        d.set_item("url", p.url)?;
        d.set_item("destination", p.destination)?;
        d.set_item("bytes_kept", p.done)?;
        d.set_item("object_size", p.object_len)?;
        d.set_item("updated", p.updated)?;
        list.append(d)?;
    }
    Ok(list)
}

/// Ends the pending upload into `url` (`zseal resume --abort URL`): the store's upload aborted
/// (Azure's uncommitted blocks expire instead) and the journal removed.
#[pyfunction]
pub(crate) fn abort(py: Python<'_>, url: String) -> PyResult<()> {
    py.detach(|| zseal::remote::abort_pending(&url))
        .map(|_| ())
        .map_err(|e| to_py(py, &url, Error::from(e)))
}
