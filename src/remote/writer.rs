//! [`RemoteWriter`]: an object as an `io::Write` sink, by a multipart upload that appears only
//! when it is complete.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::Arc;

use object_store::multipart::PartId;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};

use super::own::Condition;
use super::upload::{aborted, Upload};
use super::{block_on, spawn, Object, Own};

/// What a write may replace at its URL.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Replace {
    /// Nothing: an existing object is refused before anything is uploaded and again when the
    /// object would appear.
    Nothing,
    /// Whatever is there (`--force`).
    Anything,
    /// Exactly the version that was read ([`super::RemoteReader::version`]): an in-place
    /// rewrite, which fails, replacing nothing, when another writer changed the object
    /// meanwhile.
    Version(ObjectVersion),
}

impl Replace {
    /// The condition a completion carries on `own`'s store (GCS conditions on the generation,
    /// the others on the ETag); `None` when the version read gives nothing to condition on.
    pub(crate) fn condition(&self, own: &Own) -> Option<Condition> {
        match self {
            Replace::Nothing => Some(Condition::Absent),
            Replace::Anything => Some(Condition::None),
            Replace::Version(v) => match own {
                Own::Gcs(_) => v.version.clone().or_else(|| v.e_tag.clone()),
                _ => v.e_tag.clone(),
            }
            .map(Condition::Matches),
        }
    }
}

/// One version of an object: its ETag (S3, Azure) and its version or generation (GCS), as the
/// store reported them when it was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectVersion {
    pub(crate) e_tag: Option<String>,
    pub(crate) version: Option<String>,
}

/// Parts of a stream of unknown length: `part_size` for the first 1,000, twice that for the next
/// 1,000 and so on, so that S3's 10,000 parts reach its 5 TiB object limit from 8 MiB parts.
const PARTS_PER_DOUBLING: u64 = 1000;
/// The parts zseal plans for when the input's size is known (S3 allows 10,000).
const PLANNED_PARTS: u64 = 9000;

/// The size of an upload's first parts: `base`, or for an input of known size parts large
/// enough that 9,000 of them hold it with 5 % to spare (a container of incompressible data is a
/// little larger than its input).
pub(super) fn first_part_size(base: usize, size_hint: Option<u64>) -> usize {
    let planned = size_hint
        .map(|n| {
            (n + n / 20)
                .div_ceil(PLANNED_PARTS)
                .next_multiple_of(1 << 20)
        })
        .unwrap_or(0);
    (base as u64).max(planned) as usize
}

/// An object being written: bytes are gathered into parts, each uploaded on the runtime while
/// the caller writes on, at most `parts_in_flight` at once (memory: that many parts plus the one
/// being filled). Nothing is visible at the URL until [`RemoteWriter::commit`]; dropped without
/// it, the upload is aborted.
pub struct RemoteWriter {
    obj: Arc<Object>,
    replace: Replace,
    buf: Vec<u8>,
    /// The size of the first 1,000 parts ([`RemoteWriter::part_size`] doubles it after).
    first_part_size: usize,
    /// Parts sent so far.
    parts: u64,
    upload: Option<Arc<Upload>>,
    /// Parts uploaded, in order.
    done: Vec<PartId>,
    in_flight: VecDeque<tokio::task::JoinHandle<object_store::Result<PartId>>>,
    /// A failed part: every later call fails with it, and the upload is aborted.
    failed: Option<(io::ErrorKind, String)>,
}

impl RemoteWriter {
    pub(super) fn new(obj: Arc<Object>, replace: Replace, size_hint: Option<u64>) -> Self {
        let part_size = first_part_size(obj.opts.part_size, size_hint);
        RemoteWriter {
            obj,
            replace,
            buf: Vec::with_capacity(part_size),
            first_part_size: part_size,
            parts: 0,
            upload: None,
            done: Vec::new(),
            in_flight: VecDeque::new(),
            failed: None,
        }
    }

    /// The size of the part being filled: the first size for 1,000 parts, then doubling every
    /// 1,000 (ten times at most).
    fn part_size(&self) -> usize {
        self.first_part_size << (self.parts / PARTS_PER_DOUBLING).min(10)
    }

    /// The URL written.
    pub fn url(&self) -> &str {
        &self.obj.url
    }

    fn check(&self) -> io::Result<()> {
        match &self.failed {
            Some((kind, msg)) => Err(io::Error::new(*kind, msg.clone())),
            None => Ok(()),
        }
    }

    fn fail(&mut self, e: io::Error) -> io::Error {
        self.failed = Some((e.kind(), e.to_string()));
        self.abort();
        e
    }

    /// Sends the filled part.
    fn send_part(&mut self) -> io::Result<()> {
        let upload = match &self.upload {
            Some(u) => u.clone(),
            None => {
                let u = Upload::start(&self.obj)?;
                self.upload = Some(u.clone());
                u
            }
        };
        if upload.ended() {
            return Err(aborted(&self.obj.url));
        }
        // Room first, then the part: never more than `parts_in_flight` on their way, so that
        // with 1 the parts reach the store one after the other, in order.
        while self.in_flight.len() >= self.obj.opts.parts_in_flight {
            self.wait_oldest()?;
        }
        let idx = self.parts as usize;
        self.parts += 1;
        let next = Vec::with_capacity(self.part_size());
        let data = std::mem::replace(&mut self.buf, next);
        self.in_flight
            .push_back(spawn(upload.put_part(idx, PutPayload::from(data))));
        Ok(())
    }

    fn wait_oldest(&mut self) -> io::Result<()> {
        let Some(h) = self.in_flight.pop_front() else {
            return Ok(());
        };
        match block_on(h) {
            Ok(Ok(part)) => {
                self.done.push(part);
                Ok(())
            }
            Ok(Err(e)) => Err(self.obj.error("upload a part of", e)),
            Err(e) => Err(io::Error::other(format!(
                "uploading {}: a transfer task failed: {e}",
                self.obj.url
            ))),
        }
    }

    /// Completes the object: the last part is sent, every part awaited and the upload completed
    /// (an object smaller than one part is a single PUT instead), on the condition
    /// [`Replace`] sets. A single PUT is conditional on every store (`If-None-Match: *`, or
    /// `If-Match` / the generation for [`Replace::Version`]); so is an S3 completion (S3's
    /// conditional writes, by a request of zseal's own: object_store completes
    /// unconditionally). GCS and Azure uploads are checked by a HEAD just before completing,
    /// which leaves a window of one request (docs/OBJECTS.md §3).
    pub fn commit(mut self) -> io::Result<()> {
        self.check()?;
        let r = self.finish();
        if let Err(e) = &r {
            self.failed = Some((e.kind(), e.to_string()));
            self.abort();
        }
        r
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.upload.is_none() {
            let mode = match &self.replace {
                Replace::Nothing => PutMode::Create,
                Replace::Anything => PutMode::Overwrite,
                Replace::Version(v) => PutMode::Update(UpdateVersion {
                    e_tag: v.e_tag.clone(),
                    version: v.version.clone(),
                }),
            };
            let data = PutPayload::from(std::mem::take(&mut self.buf));
            let opts = PutOptions {
                mode,
                ..PutOptions::default()
            };
            return block_on(self.obj.store.put_opts(&self.obj.path, data, opts))
                .map(drop)
                .map_err(|e| match e {
                    // A conditional create that lost: some stores say 412 for it.
                    object_store::Error::Precondition { .. }
                        if self.replace == Replace::Nothing =>
                    {
                        self.obj.exists()
                    }
                    object_store::Error::Precondition { .. }
                    | object_store::Error::NotFound { .. }
                        if matches!(self.replace, Replace::Version(_)) =>
                    {
                        self.obj.changed()
                    }
                    e => self.obj.error("write", e),
                });
        }
        if !self.buf.is_empty() {
            self.send_part()?;
        }
        while !self.in_flight.is_empty() {
            self.wait_oldest()?;
        }
        self.check_target()?;
        let upload = self.upload.clone().expect("a multipart upload");
        upload.complete(&std::mem::take(&mut self.done), &self.replace)
    }

    /// Checks, just before completing, that the object is still what [`Replace`] allows.
    fn check_target(&self) -> io::Result<()> {
        let found = block_on(self.obj.store.head(&self.obj.path));
        match (&self.replace, found) {
            (Replace::Anything, _) => Ok(()),
            (Replace::Nothing, Err(object_store::Error::NotFound { .. })) => Ok(()),
            (Replace::Nothing, Ok(_)) => Err(self.obj.exists()),
            (Replace::Version(_), Err(object_store::Error::NotFound { .. })) => {
                Err(self.obj.changed())
            }
            (Replace::Version(_), Ok(meta)) => {
                // The version found, said as the completion's condition would say it.
                let found = Replace::Version(ObjectVersion {
                    e_tag: meta.e_tag,
                    version: meta.version,
                });
                let own = &self.obj.own;
                if found.condition(own).is_some()
                    && found.condition(own) == self.replace.condition(own)
                {
                    Ok(())
                } else {
                    Err(self.obj.changed())
                }
            }
            (_, Err(e)) => Err(self.obj.error("write", e)),
        }
    }

    /// Aborts the upload (nothing appears; the store drops the parts).
    fn abort(&mut self) {
        // A part already on the wire may land after the abort, and some stores then keep (or
        // re-create) the upload: let the parts in flight end (each within the request
        // timeout), then abort.
        for h in self.in_flight.drain(..) {
            let _ = block_on(h);
        }
        if let Some(up) = self.upload.take() {
            up.abort();
        }
    }
}

impl Write for RemoteWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.check()?;
        let part_size = self.part_size();
        let n = data.len().min(part_size - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == part_size {
            self.send_part().map_err(|e| self.fail(e))?;
        }
        Ok(n)
    }

    /// Parts are sent as they fill; there is nothing to flush before [`RemoteWriter::commit`].
    fn flush(&mut self) -> io::Result<()> {
        self.check()
    }
}

impl Drop for RemoteWriter {
    fn drop(&mut self) {
        self.abort();
    }
}
