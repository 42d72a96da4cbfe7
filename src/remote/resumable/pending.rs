//! Pending uploads as their journals describe them (docs/OBJECTS.md §7): listed for `zseal
//! resume`, the refusal of a new upload into a URL that has one, and `zseal resume --abort`.

use std::io;
use std::path::PathBuf;

use super::invalid;
use super::record::Record;
use crate::remote::{block_on, Remote};
use crate::resume::journal;

/// A pending upload, as its journal describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingUpload {
    /// The object's URL.
    pub url: String,
    /// The source file's path.
    pub source: String,
    /// The source file's size.
    pub source_size: u64,
    /// Parts the store acknowledged.
    pub parts: usize,
    /// Their bytes.
    pub bytes_sent: u64,
    /// When the journal was last written (Unix seconds).
    pub updated: u64,
    /// The journal's path.
    pub journal: PathBuf,
}

pub(super) fn pending_error(p: &PendingUpload) -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{} has a pending resumable upload ({} parts, {} bytes sent, from {}): add \
             --resume to continue it, or end it with `zseal resume --abort {}`",
            p.url, p.parts, p.bytes_sent, p.source, p.url
        ),
    )
}

fn pending_of(rec: &Record, journal: PathBuf) -> PendingUpload {
    PendingUpload {
        url: rec.url.clone(),
        source: rec.source.path.clone(),
        source_size: rec.source.size,
        parts: rec.parts.len(),
        bytes_sent: rec.bytes_sent(),
        updated: rec.updated,
        journal,
    }
}

/// The pending upload into `url`, if there is one.
pub fn pending_upload(url: &str) -> io::Result<Option<PendingUpload>> {
    let path = journal::path_for(journal::Kind::Upload, url)?;
    Ok(Record::load(url)?.map(|r| pending_of(&r, path)))
}

/// Every pending upload of this user, in journal order (a journal that cannot be read is
/// shown by its path, as its URL).
pub fn pending_uploads() -> io::Result<Vec<PendingUpload>> {
    let all = journal::list(journal::Kind::Upload)?;
    Ok(all
        .into_iter()
        .map(|(path, bytes)| {
            let bytes = zeroize::Zeroizing::new(bytes);
            match Record::parse(&bytes, &path.display().to_string()) {
                Ok(r) => pending_of(&r, path),
                Err(e) => PendingUpload {
                    url: format!("({e})"),
                    source: String::new(),
                    source_size: 0,
                    parts: 0,
                    bytes_sent: 0,
                    updated: 0,
                    journal: path,
                },
            }
        })
        .collect())
}

/// What [`abort_pending`] ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    /// The upload, as its journal described it.
    pub pending: PendingUpload,
    /// The store dropped the parts sent (an S3 multipart upload aborted). False on Azure, which
    /// has no abort: the blocks sent stay uncommitted until Azure drops them (after a week) or
    /// the blob is committed by another upload, which commits only its own blocks.
    pub dropped: bool,
}

/// Ends the pending upload into `url`: aborts the multipart upload at the store (one already
/// gone is fine; on Azure there is nothing to abort) and removes the journal.
pub fn abort_pending(url: &str) -> io::Result<Ended> {
    let _job = journal::lock(journal::Kind::Upload, url)?;
    let Some(pending) = pending_upload(url)? else {
        return Err(invalid(format!(
            "there is no pending upload into {url} (`zseal resume --list` shows those there are)"
        )));
    };
    let rec = Record::load(url)?.ok_or_else(|| invalid(format!("{url}: the journal vanished")))?;
    let remote = Remote::from_env(url)?;
    let obj = &remote.inner;
    let store = obj
        .multipart
        .clone()
        .ok_or_else(|| invalid(format!("{url} is read-only")))?;
    match block_on(store.abort_multipart(&obj.path, &rec.upload_id)) {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
        Err(e) => return Err(obj.error("abort the upload to", e)),
    }
    Record::remove(url)?;
    let dropped = !matches!(obj.own, crate::remote::Own::Azure(_));
    Ok(Ended { pending, dropped })
}
