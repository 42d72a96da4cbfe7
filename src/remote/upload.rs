//! Multipart uploads in progress, known by their id, so that a signal can abort every one of
//! them at any moment: while parts go up, while the store copies parts on its side, and while
//! the completion is in flight (the store then either completes the object or drops the upload,
//! never neither). Both writers of objects use it: [`super::RemoteWriter`] and the server-side
//! rekey.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use object_store::multipart::{MultipartStore, PartId};
use object_store::{Attribute, Attributes, MultipartId, PutMultipartOptions, PutPayload};

use super::own::UPLOAD_MARKER;
use super::{block_on, Object, Own, Replace};

/// Every upload in progress in this process.
static UPLOADS: Mutex<Vec<Weak<Upload>>> = Mutex::new(Vec::new());
/// Set by [`abort_all_uploads`]: the process is ending, and no upload may start.
static ENDING: AtomicBool = AtomicBool::new(false);

/// The uploads in progress, locked.
type Registry = MutexGuard<'static, Vec<Weak<Upload>>>;

fn registry() -> Registry {
    UPLOADS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Ends every multipart upload this process has in progress, for a signal handler, which then
/// exits. An upload that keeps a resume journal (docs/OBJECTS.md §7) is kept, pending at the
/// store with its journal, for `--resume`; every other one is aborted: no object appears and
/// the store keeps no orphaned parts. An upload being created waits for its id first (the
/// registry is held while it is created), and none starts afterwards. Returns the URLs of the
/// uploads kept.
pub fn abort_all_uploads() -> Vec<String> {
    ENDING.store(true, Ordering::SeqCst);
    let uploads = std::mem::take(&mut *registry());
    let mut kept = Vec::new();
    for u in uploads.iter().filter_map(Weak::upgrade) {
        let journaled = u.journal_key().is_some();
        match journaled {
            // Its journal stays as last written: every part sent is in the log beside it.
            true if !u.ended.swap(true, Ordering::SeqCst) => kept.push(u.obj.url.clone()),
            true => {}
            false => u.abort(),
        }
    }
    kept
}

/// One multipart upload of one object: aborted when dropped unless it was completed.
pub(crate) struct Upload {
    obj: Arc<Object>,
    store: Arc<dyn MultipartStore>,
    id: MultipartId,
    /// The random value of the metadata the object carries on GCS (own.rs's `UPLOAD_MARKER`),
    /// by which a completion whose answer was lost recognises the object as its own.
    marker: Option<String>,
    /// Completed or aborted: a signal or a drop leaves it alone.
    ended: AtomicBool,
    /// The key of the resume journal that records it (docs/OBJECTS.md §7): removed with the
    /// upload when it is aborted.
    journal: Mutex<Option<String>>,
}

impl Upload {
    /// Starts an upload of `obj` and registers it for [`abort_all_uploads`].
    pub(crate) fn start(obj: &Arc<Object>) -> io::Result<Arc<Upload>> {
        // The registry is held across the request: a signal handler waits for the id instead of
        // missing it.
        let (store, mut all) = Upload::writable(obj)?;
        let marker = matches!(obj.own, Own::Gcs(_)).then(random_marker);
        let mut opts = PutMultipartOptions::default();
        if let Some(m) = &marker {
            let key = Attribute::Metadata(UPLOAD_MARKER.into());
            opts.attributes = Attributes::from_iter([(key, m.clone())]);
        }
        let id = block_on(store.create_multipart_opts(&obj.path, opts))
            .map_err(|e| obj.error("write", e))?;
        Ok(Upload::register(&mut all, obj, store, id, marker))
    }

    /// The upload `id` of `obj` that an earlier process started (a resumed upload; `marker`:
    /// the GCS marker it was created with), registered for [`abort_all_uploads`] as a new one
    /// is.
    pub(crate) fn adopt(
        obj: &Arc<Object>,
        id: String,
        marker: Option<String>,
    ) -> io::Result<Arc<Upload>> {
        let (store, mut all) = Upload::writable(obj)?;
        Ok(Upload::register(&mut all, obj, store, id, marker))
    }

    /// The GCS marker the upload's object will carry (`None` on other stores).
    pub(crate) fn marker(&self) -> Option<&str> {
        self.marker.as_deref()
    }

    /// The store that takes `obj`'s multipart uploads, and the registry, locked, unless a
    /// signal is ending the process.
    fn writable(obj: &Arc<Object>) -> io::Result<(Arc<dyn MultipartStore>, Registry)> {
        let store = obj.multipart.clone().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{}: this store is read-only", obj.url),
            )
        })?;
        let all = registry();
        if ENDING.load(Ordering::SeqCst) {
            return Err(aborted(&obj.url));
        }
        Ok((store, all))
    }

    fn register(
        all: &mut Vec<Weak<Upload>>,
        obj: &Arc<Object>,
        store: Arc<dyn MultipartStore>,
        id: MultipartId,
        marker: Option<String>,
    ) -> Arc<Upload> {
        let up = Arc::new(Upload {
            obj: obj.clone(),
            store,
            id,
            marker,
            ended: AtomicBool::new(false),
            journal: Mutex::new(None),
        });
        // Uploads ended are gone: a long-lived process (a Python worker) keeps only live ones.
        all.retain(|u| u.strong_count() > 0);
        all.push(Arc::downgrade(&up));
        up
    }

    /// Ties the resume journal kept under `key` to this upload: aborting the upload (a signal,
    /// a refusal) removes it.
    pub(crate) fn journaled(&self, key: &str) {
        *self.journal_key() = Some(key.to_string());
    }

    fn journal_key(&self) -> MutexGuard<'_, Option<String>> {
        self.journal.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the journal by `store`, unless the upload has ended: under the lock that
    /// [`Upload::forget_journal`] takes, so that a signal's abort, which removes the journal,
    /// is never followed by a write that brings it back.
    pub(crate) fn write_journal(&self, store: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        let key = self.journal_key();
        if key.is_some() && !self.ended() {
            store()?;
        }
        Ok(())
    }

    /// Leaves the upload pending at the store (a resumable job that failed): neither a drop
    /// nor a signal aborts it.
    pub(crate) fn keep(&self) {
        self.ended.store(true, Ordering::SeqCst);
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Part `idx` (from 0) as a future for the runtime, holding no reference to the upload (a
    /// drop on the runtime's threads could not abort it).
    pub(crate) fn put_part(
        &self,
        idx: usize,
        data: PutPayload,
    ) -> impl std::future::Future<Output = object_store::Result<PartId>> + Send + 'static {
        let (store, path, id) = (self.store.clone(), self.obj.path.clone(), self.id.clone());
        async move { store.put_part(&path, &id, idx, data).await }
    }

    /// Completes the upload from `parts` (in order), on the condition `replace` sets, by the
    /// store's conditional completion (own.rs; object_store completes unconditionally). A
    /// failed condition is the object's "already exists" or "changed" error, unless the object
    /// is this upload's own (an earlier attempt succeeded and its answer was lost: own.rs,
    /// `Own::holds`).
    pub(crate) fn complete(&self, parts: &[PartId], replace: &Replace) -> io::Result<()> {
        let numbered: Vec<(usize, PartId)> = (1..).zip(parts.iter().cloned()).collect();
        self.complete_numbered(&numbered, replace)
    }

    /// [`Upload::complete`] from parts with their numbers (increasing, gaps allowed): an upload
    /// whose parts came from many processes (FORMAT.md §11.3).
    pub(crate) fn complete_numbered(
        &self,
        parts: &[(usize, PartId)],
        replace: &Replace,
    ) -> io::Result<()> {
        let obj = &self.obj;
        let when = replace.condition(&obj.own).ok_or_else(|| obj.changed())?;
        let (key, marker) = (obj.path.as_ref(), self.marker.as_deref());
        let done = block_on(obj.own.complete(key, &self.id, parts, &when, marker));
        match (done, replace) {
            (Ok(()), _) => {
                self.completed();
                Ok(())
            }
            (Err(e), Replace::Nothing) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(obj.exists())
            }
            (Err(e), Replace::Version(_))
                if matches!(
                    e.kind(),
                    io::ErrorKind::AlreadyExists
                        | io::ErrorKind::NotFound
                        | io::ErrorKind::ResourceBusy
                ) =>
            {
                Err(obj.changed())
            }
            // S3's 409 ConditionalRequestConflict: another write raced this one, and the store
            // dropped this upload.
            (Err(e), _) if e.kind() == io::ErrorKind::ResourceBusy => Err(io::Error::new(
                e.kind(),
                format!(
                    "cannot complete {}: another write to it raced this one and the store \
                     dropped this upload, so nothing was written: run the command again ({e})",
                    obj.url
                ),
            )),
            (Err(e), _) => Err(io::Error::new(
                e.kind(),
                format!("cannot complete {}: {e}", obj.url),
            )),
        }
    }

    /// The store has the object: nothing is left to abort.
    pub(crate) fn completed(&self) {
        self.ended.store(true, Ordering::SeqCst);
    }

    /// True once completed or aborted (a signal may abort it from another thread).
    pub(crate) fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// Aborts the upload, once: no object appears, the store drops the parts (Azure has no
    /// abort: its uncommitted blocks expire). A store that cannot be reached keeps them until
    /// a lifecycle rule removes them (docs/OBJECTS.md §3).
    pub(crate) fn abort(&self) {
        if !self.ended.swap(true, Ordering::SeqCst) {
            let _ = block_on(self.store.abort_multipart(&self.obj.path, &self.id));
            self.forget_journal();
        }
    }

    /// Removes the resume journal of an upload that will never complete.
    pub(crate) fn forget_journal(&self) {
        if let Some(key) = self.journal_key().take() {
            let _ = crate::resume::journal::remove(crate::resume::journal::Kind::Upload, &key);
        }
    }

    /// Sends the abort again, whatever was sent before: a part still uploading when the upload
    /// was aborted may land after it, and S3 says to abort again once such parts finished (a
    /// distributed job's tasks, cancelled, end at their next part).
    pub(crate) fn abort_again(&self) {
        self.ended.store(true, Ordering::SeqCst);
        let _ = block_on(self.store.abort_multipart(&self.obj.path, &self.id));
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        self.abort();
    }
}

/// 128 random bits as hex: a value no other upload's marker has.
fn random_marker() -> String {
    use rand_core::RngCore;
    let mut bytes = [0u8; 16];
    rand_core::OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn aborted(url: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Interrupted,
        format!("the upload of {url} was aborted"),
    )
}
