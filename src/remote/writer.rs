//! [`RemoteWriter`]: an object as an `io::Write` sink, by a multipart upload that appears only
//! when it is complete.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::{Arc, Mutex, Weak};

use object_store::{MultipartUpload, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::{block_on, spawn, Object};

/// An upload in progress (taken out when completed or aborted).
type Slot = Mutex<Option<Box<dyn MultipartUpload>>>;
/// An upload in progress, shared with [`abort_all_uploads`] (a signal handler's thread).
type Shared = Arc<Slot>;

/// Every upload in progress, so that a signal can abort them all before the process exits.
static UPLOADS: Mutex<Vec<Weak<Slot>>> = Mutex::new(Vec::new());

/// Aborts every multipart upload this process has in progress (for a signal handler, which then
/// exits: no object appears and the store keeps no orphaned parts). Later writes to an aborted
/// upload fail.
pub fn abort_all_uploads() {
    let uploads = std::mem::take(&mut *UPLOADS.lock().unwrap_or_else(|p| p.into_inner()));
    for u in uploads.iter().filter_map(Weak::upgrade) {
        if let Some(mut up) = take(&u) {
            let _ = block_on(up.abort());
        }
    }
}

/// The upload out of its slot, unless a signal's abort (or a completion) took it first.
fn take(slot: &Slot) -> Option<Box<dyn MultipartUpload>> {
    slot.lock().unwrap_or_else(|p| p.into_inner()).take()
}

fn aborted(url: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Interrupted,
        format!("the upload of {url} was aborted"),
    )
}

/// Parts of a stream of unknown length: `part_size` for the first 1,000, twice that for the next
/// 1,000 and so on, so that S3's 10,000 parts reach its 5 TiB object limit from 8 MiB parts.
const PARTS_PER_DOUBLING: u64 = 1000;
/// The parts zseal plans for when the input's size is known (S3 allows 10,000).
const PLANNED_PARTS: u64 = 9000;

/// An object being written: bytes are gathered into parts, each uploaded on the runtime while
/// the caller writes on, at most `parts_in_flight` at once (memory: that many parts plus the one
/// being filled). Nothing is visible at the URL until [`RemoteWriter::commit`]; dropped without
/// it, the upload is aborted.
pub struct RemoteWriter {
    obj: Arc<Object>,
    overwrite: bool,
    buf: Vec<u8>,
    /// The size of the first 1,000 parts ([`RemoteWriter::part_size`] doubles it after).
    first_part_size: usize,
    /// Parts sent so far.
    parts: u64,
    upload: Option<Shared>,
    in_flight: VecDeque<tokio::task::JoinHandle<object_store::Result<()>>>,
    /// A failed part: every later call fails with it, and the upload is aborted.
    failed: Option<(io::ErrorKind, String)>,
}

impl RemoteWriter {
    pub(super) fn new(obj: Arc<Object>, overwrite: bool, size_hint: Option<u64>) -> Self {
        let base = obj.opts.part_size as u64;
        // Known input: parts large enough that 9,000 of them hold it with 5 % to spare (a
        // container of incompressible data is a little larger than its input).
        let planned = size_hint
            .map(|n| {
                (n + n / 20)
                    .div_ceil(PLANNED_PARTS)
                    .next_multiple_of(1 << 20)
            })
            .unwrap_or(0);
        let part_size = base.max(planned) as usize;
        RemoteWriter {
            obj,
            overwrite,
            buf: Vec::with_capacity(part_size),
            first_part_size: part_size,
            parts: 0,
            upload: None,
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
        if self.upload.is_none() {
            let up = block_on(self.obj.store.put_multipart(&self.obj.path))
                .map_err(|e| self.obj.error("write", e))?;
            let shared: Shared = Arc::new(Mutex::new(Some(up)));
            let mut all = UPLOADS.lock().unwrap_or_else(|p| p.into_inner());
            // Uploads completed or aborted are gone: a long-lived process (a Python worker)
            // keeps only the ones in progress.
            all.retain(|u| u.strong_count() > 0);
            all.push(Arc::downgrade(&shared));
            self.upload = Some(shared);
        }
        self.parts += 1;
        let next = Vec::with_capacity(self.part_size());
        let data = std::mem::replace(&mut self.buf, next);
        let part = {
            let shared = self.upload.as_ref().expect("created above");
            let mut guard = shared.lock().unwrap_or_else(|p| p.into_inner());
            match guard.as_mut() {
                Some(up) => up.put_part(PutPayload::from(data)),
                None => return Err(aborted(&self.obj.url)),
            }
        };
        self.in_flight.push_back(spawn(part));
        while self.in_flight.len() > self.obj.opts.parts_in_flight {
            self.wait_oldest()?;
        }
        Ok(())
    }

    fn wait_oldest(&mut self) -> io::Result<()> {
        let Some(h) = self.in_flight.pop_front() else {
            return Ok(());
        };
        match block_on(h) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.obj.error("upload a part of", e)),
            Err(e) => Err(io::Error::other(format!(
                "uploading {}: a transfer task failed: {e}",
                self.obj.url
            ))),
        }
    }

    /// Completes the object: the last part is sent, every part awaited and the upload completed
    /// (an object smaller than one part is a single PUT instead). Without overwrite, the single
    /// PUT is conditional (`If-None-Match: *`: atomic where the store supports it, as S3, GCS
    /// and Azure do); a multipart upload checks again just before completing, which leaves a
    /// window of one request in which another writer's new object can be replaced
    /// (docs/OBJECTS.md).
    pub fn commit(mut self) -> io::Result<()> {
        self.check()?;
        let r = self.finish();
        if let Err(e) = &r {
            self.failed = Some((e.kind(), e.to_string()));
        }
        r
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.upload.is_none() {
            let mode = if self.overwrite {
                PutMode::Overwrite
            } else {
                PutMode::Create
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
                    object_store::Error::Precondition { .. } => self.obj.exists(),
                    e => self.obj.error("write", e),
                });
        }
        if !self.buf.is_empty() {
            self.send_part().map_err(|e| self.fail(e))?;
        }
        while !self.in_flight.is_empty() {
            self.wait_oldest().map_err(|e| self.fail(e))?;
        }
        if !self.overwrite {
            let exists = block_on(self.obj.store.head(&self.obj.path));
            match exists {
                Ok(_) => return Err(self.fail(self.obj.exists())),
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.fail(self.obj.error("write", e))),
            }
        }
        let shared = self.upload.take().expect("a multipart upload");
        let Some(mut up) = take(&shared) else {
            return Err(aborted(&self.obj.url));
        };
        match block_on(up.complete()) {
            Ok(_) => Ok(()),
            Err(e) => {
                let e = self.obj.error("complete", e);
                let _ = block_on(up.abort());
                Err(e)
            }
        }
    }

    /// Aborts the upload (nothing appears; the store drops the parts).
    fn abort(&mut self) {
        for h in self.in_flight.drain(..) {
            h.abort();
        }
        if let Some(mut up) = self.upload.take().and_then(|s| take(&s)) {
            let _ = block_on(up.abort());
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
