//! Objects in object storage as byte sources and sinks (the `remote` feature): `s3://` (AWS and
//! any S3-compatible endpoint), `gs://`, `az://` / `abfs://`, and `http(s)://` read-only, through
//! the `object_store` crate. The engine never sees them: [`RemoteReader`] is an `io::Read +
//! io::Seek` source and [`RemoteWriter`] an `io::Write` sink, exactly what it takes from files.
//!
//! - Reads are ranged GETs of one version of the object (`If-Match` its ETag): a sequential read
//!   keeps up to `parts_in_flight` GETs of `part_size` bytes ahead of the reader; a random read
//!   (a range, `inspect`, a seek) fetches what is read, so that bytes fetched stay close to bytes
//!   needed. Memory: at most `(parts_in_flight + 2) × part_size` (docs/OBJECTS.md).
//! - Writes are a multipart upload whose parts upload concurrently while the caller writes; the
//!   object appears only on [`RemoteWriter::commit`]. Dropped without a commit (an error, a
//!   signal through [`abort_all_uploads`]) the upload is aborted, leaving no object and no parts;
//!   a resumable upload (docs/OBJECTS.md §7) is kept pending by a signal instead.
//!   An object smaller than one part is one conditional PUT.
//! - Credentials, region and endpoint come from what the users' other tools read: the standard
//!   environment variables of each cloud, and for S3 also `AWS_PROFILE` (or
//!   `AWS_DEFAULT_PROFILE`) with the shared credentials and config files (`aws_profile`).
//!
//! Every error is an `io::Error` whose message names the URL and says what to do.

mod answer;
mod aws_process;
mod aws_profile;
pub mod kms;
mod own;
mod parts;
mod reader;
mod rekey;
mod resumable;
#[cfg(feature = "gateway")]
mod root;
mod s3;
mod store;
mod upload;
mod writer;

use std::io;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use object_store::multipart::MultipartStore;
use object_store::path::Path as ObjectPath;
use object_store::{DynObjectStore, ObjectStoreExt};

pub use parts::{PartPlan, PartTicket, PartWriter, SharedUpload, TaskParts, HEAD_LEN, MAX_TASKS};
pub use reader::{FetchStats, ReadMode, RemoteReader, MIN_FETCH};
pub use rekey::{rekey_in_place, replace_head, HeadRewrite, ObjectRekey};
pub use resumable::{
    abort_pending, pending_upload, pending_uploads, recipients_id, Ended, PendingUpload, RotateJob,
    SealJob, UploadDone,
};
#[cfg(feature = "gateway")]
pub(crate) use root::StoreRoot;
pub use store::RETRY_TARGET;
use store::{build_store, Built};
pub use upload::abort_all_uploads;
pub use writer::{ObjectVersion, RemoteWriter, Replace};

/// Default size of one ranged GET and of one uploaded part (8 MiB; S3's smallest part is 5 MiB).
pub const DEFAULT_PART_SIZE: usize = 8 << 20;
/// Default number of GETs or part uploads in flight at once.
pub const DEFAULT_PARTS_IN_FLIGHT: usize = 8;

/// How transfers are sized and how long they may take. [`TransferOptions::from_env`] reads
/// `ZSEAL_PART_SIZE` (K/M/G suffixes, 5M to 5G), `ZSEAL_PARTS_IN_FLIGHT` (1 to 64),
/// `ZSEAL_TIMEOUT` (seconds a request may go without an answer) and `ZSEAL_RETRY_TIMEOUT`
/// (seconds within which a failing request is retried).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransferOptions {
    /// Bytes per ranged GET of a sequential read, and per uploaded part (the first 1,000 parts;
    /// every further 1,000 parts double it, so that a stream of unknown length fits S3's 10,000
    /// parts up to its 5 TiB object limit).
    pub part_size: usize,
    /// GETs (reads) or part uploads (writes) in flight at once.
    pub parts_in_flight: usize,
    /// How long one request may take before it is cut and retried (default 300 s).
    pub request_timeout: Duration,
    /// How long a failing request is retried, with backoff, before the error is reported
    /// (default 180 s, at most 10 retries).
    pub retry_timeout: Duration,
}

impl Default for TransferOptions {
    fn default() -> Self {
        TransferOptions {
            part_size: DEFAULT_PART_SIZE,
            parts_in_flight: DEFAULT_PARTS_IN_FLIGHT,
            request_timeout: Duration::from_secs(300),
            retry_timeout: Duration::from_secs(180),
        }
    }
}

impl TransferOptions {
    /// These options as every transfer of an object uses them: at least one part in flight (the
    /// field is public; 0 would leave uploads and copies with nothing to wait for).
    fn bounded(mut self) -> Self {
        self.parts_in_flight = self.parts_in_flight.max(1);
        self
    }

    /// The defaults, changed by `ZSEAL_PART_SIZE`, `ZSEAL_PARTS_IN_FLIGHT`, `ZSEAL_TIMEOUT` and
    /// `ZSEAL_RETRY_TIMEOUT` when set; a value out of range is an error naming the variable.
    pub fn from_env() -> io::Result<Self> {
        let mut o = TransferOptions::default();
        if let Ok(v) = std::env::var("ZSEAL_PART_SIZE") {
            let n = crate::units::parse_size(&v)
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| (5 << 20..=5 << 30).contains(n))
                .ok_or_else(|| {
                    invalid(format!(
                        "ZSEAL_PART_SIZE={v} is not a size from 5M to 5G (S3's part limits)"
                    ))
                })?;
            o.part_size = n;
        }
        if let Ok(v) = std::env::var("ZSEAL_PARTS_IN_FLIGHT") {
            o.parts_in_flight =
                v.parse()
                    .ok()
                    .filter(|n| (1..=64).contains(n))
                    .ok_or_else(|| {
                        invalid(format!(
                            "ZSEAL_PARTS_IN_FLIGHT={v} is not a number from 1 to 64"
                        ))
                    })?;
        }
        if let Some(t) = seconds("ZSEAL_TIMEOUT", 1, 3600)? {
            o.request_timeout = t;
        }
        if let Some(t) = seconds("ZSEAL_RETRY_TIMEOUT", 0, 86_400)? {
            o.retry_timeout = t;
        }
        Ok(o)
    }
}

/// A whole number of seconds from `min` to `max` in the variable `name`, if it is set.
fn seconds(name: &str, min: u64, max: u64) -> io::Result<Option<Duration>> {
    let Ok(v) = std::env::var(name) else {
        return Ok(None);
    };
    v.trim()
        .parse::<u64>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .map(|n| Some(Duration::from_secs(n)))
        .ok_or_else(|| {
            invalid(format!(
                "{name}={v} is not a whole number of seconds from {min} to {max}"
            ))
        })
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

pub use crate::io::is_url;

/// The kinds of store a URL can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// `s3://bucket/key` (AWS, or the endpoint in `AWS_ENDPOINT_URL`).
    S3,
    /// `gs://bucket/key`.
    Gcs,
    /// `az://container/key`, `abfs://container@account.dfs.core.windows.net/key`.
    Azure,
    /// `http://` or `https://`: read-only, by Range requests.
    Http,
}

/// One object named by URL, with the store that holds it.
#[derive(Clone)]
pub struct Remote {
    inner: Arc<Object>,
}

/// What readers and writers of one object share.
#[derive(Clone)]
pub(crate) struct Object {
    pub(crate) store: Arc<DynObjectStore>,
    pub(crate) path: ObjectPath,
    pub(crate) url: String,
    pub(crate) scheme: Scheme,
    pub(crate) opts: TransferOptions,
    /// The same store's multipart uploads by id (create, put a numbered part, complete,
    /// abort), for every store that writes (not http(s)://): an upload known by its id can be
    /// aborted from a signal handler's thread at any moment, completion included.
    pub(crate) multipart: Option<Arc<dyn MultipartStore>>,
    /// The requests of zseal's own to this store (own.rs): its conditional completion, and
    /// for S3 the server-side copy.
    pub(crate) own: Own,
}

/// Each writable store's requests of zseal's own.
#[derive(Clone)]
pub(crate) enum Own {
    /// http(s)://: read-only.
    None,
    S3(s3::S3),
    /// The bucket, for GCS's XML API completion.
    Gcs(own::Bucket),
    /// The container, for Azure's Put Block List.
    Azure(own::Bucket),
}

impl Remote {
    /// Parses `url` and builds its store from the environment (no request is made yet). An
    /// unknown scheme, a URL without a bucket or an object name, and a configuration the store
    /// refuses each fail with a message naming the URL.
    pub fn new(url: &str, opts: TransferOptions) -> io::Result<Remote> {
        Remote::with_settings(url, opts, &[])
    }

    /// [`Remote::new`], with `settings` over the environment: object_store's configuration keys
    /// for the URL's store (`aws_access_key_id`, `aws_endpoint`, `aws_region`,
    /// `google_service_account`, `azure_storage_account_key`, …, case-insensitive). A key the
    /// store does not know is an error naming it.
    pub fn with_settings(
        url: &str,
        opts: TransferOptions,
        settings: &[(String, String)],
    ) -> io::Result<Remote> {
        let parsed =
            url::Url::parse(url).map_err(|e| invalid(format!("{url} is not a valid URL: {e}")))?;
        let Some(scheme) = scheme_of(&parsed) else {
            return Err(invalid(format!(
                "{url}: unknown scheme '{}://': zseal reads and writes s3://, gs://, az:// \
                 (abfs://) and reads http(s):// URLs; a local file needs no scheme",
                parsed.scheme()
            )));
        };
        let Built {
            store,
            path,
            multipart,
            own,
        } = build_store(scheme, &parsed, url, &opts, settings)?;
        if path.as_ref().is_empty() {
            return Err(invalid(format!(
                "{url} names no object: add the object's key after the bucket, e.g. \
                 s3://bucket/dir/file.zseal"
            )));
        }
        Ok(Remote {
            inner: Arc::new(Object {
                store,
                path,
                url: url.to_string(),
                scheme,
                opts: opts.bounded(),
                multipart,
                own,
            }),
        })
    }

    /// [`Remote::new`] with the transfer settings of the environment
    /// ([`TransferOptions::from_env`]): what the front ends use.
    pub fn from_env(url: &str) -> io::Result<Remote> {
        Remote::new(url, TransferOptions::from_env()?)
    }

    /// True when the store copies byte ranges on its side, so that [`rekey_in_place`] moves
    /// only the header and 5 MiB through the client (S3); elsewhere a rekey streams.
    pub fn copies_server_side(&self) -> bool {
        matches!(self.inner.own, Own::S3(_))
    }

    /// The URL as given.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// Which kind of store holds it.
    pub fn scheme(&self) -> Scheme {
        self.inner.scheme
    }

    /// The object's size, or `None` when there is no object at the URL.
    pub fn size(&self) -> io::Result<Option<u64>> {
        let o = &self.inner;
        match block_on(o.store.head(&o.path)) {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(o.error("look at", e)),
        }
    }

    /// Opens the object for reading (a HEAD request: its size and ETag).
    pub fn reader(&self, mode: ReadMode) -> io::Result<RemoteReader> {
        RemoteReader::open(self.inner.clone(), mode)
    }

    /// Starts writing the object. Without `overwrite` an existing object is refused now, before
    /// anything is uploaded, and again when the upload completes (see [`RemoteWriter::commit`]
    /// for what stays racy). `size_hint` (the input's size, when known) lets the parts be large
    /// enough for S3's 10,000-part limit from the start.
    pub fn writer(&self, overwrite: bool, size_hint: Option<u64>) -> io::Result<RemoteWriter> {
        if self.inner.scheme == Scheme::Http {
            return Err(invalid(format!(
                "{}: http(s):// URLs are read-only; write to s3://, gs:// or az:// instead",
                self.inner.url
            )));
        }
        if !overwrite && self.size()?.is_some() {
            return Err(self.inner.exists());
        }
        let replace = if overwrite {
            Replace::Anything
        } else {
            Replace::Nothing
        };
        Ok(RemoteWriter::new(self.inner.clone(), replace, size_hint))
    }

    /// Starts rewriting the object in place: it replaces `version` (what a reader of it saw,
    /// [`RemoteReader::version`]) and nothing else. When another writer changed the object
    /// meanwhile, [`RemoteWriter::commit`] fails and the other writer's object stays.
    pub fn rewriter(
        &self,
        version: ObjectVersion,
        size_hint: Option<u64>,
    ) -> io::Result<RemoteWriter> {
        let o = &self.inner;
        o.rewritable(&version)?;
        Ok(RemoteWriter::new(
            o.clone(),
            Replace::Version(version),
            size_hint,
        ))
    }
}

/// The store a URL's scheme names (`s3a://`, `abfs://` and the like are the same stores).
fn scheme_of(parsed: &url::Url) -> Option<Scheme> {
    match parsed.scheme() {
        "s3" | "s3a" => Some(Scheme::S3),
        "gs" => Some(Scheme::Gcs),
        "az" | "adl" | "azure" | "abfs" | "abfss" => Some(Scheme::Azure),
        "http" | "https" => Some(Scheme::Http),
        _ => None,
    }
}

impl Object {
    /// True when the store's "not found" `e` means the bucket (container), not the object: the
    /// answer says so (S3's NoSuchBucket, Azure's ContainerNotFound, GCS's "bucket does not
    /// exist"), or, since a HEAD's 404 has no body to say it, a listing under the key finds no
    /// bucket either. Only on the calling thread outside the runtime (it blocks on the listing).
    fn bucket_is_missing(&self, e: &object_store::Error) -> bool {
        let says = |t: &str| {
            ["NoSuchBucket", "ContainerNotFound", "bucket does not exist"]
                .iter()
                .any(|w| t.contains(w))
        };
        if says(&format!("{e:?}")) {
            return true;
        }
        if self.scheme == Scheme::Http || tokio::runtime::Handle::try_current().is_ok() {
            return false;
        }
        match block_on(self.store.list_with_delimiter(Some(&self.path))) {
            Ok(_) => false,
            // A listing in a bucket that exists finds nothing rather than failing.
            Err(object_store::Error::NotFound { .. }) => true,
            Err(l) => says(&format!("{l:?}")),
        }
    }

    /// What the store calls the URL's first part.
    fn bucket_word(&self) -> &'static str {
        match self.scheme {
            Scheme::Azure => "container",
            _ => "bucket",
        }
    }

    /// The bucket (container) of the URL: its first part after the scheme (for abfs://, the
    /// part before `@`).
    fn bucket_name(&self) -> &str {
        let rest = self.url.split_once("://").map_or(&*self.url, |(_, r)| r);
        let first = rest.split('/').next().unwrap_or(rest);
        first.split('@').next().unwrap_or(first)
    }

    /// `e` as an `io::Error` whose message names the URL and says what to do.
    pub(crate) fn error(&self, verb: &str, e: object_store::Error) -> io::Error {
        use object_store::Error as E;
        let url = &self.url;
        let (kind, msg) = match &e {
            E::NotFound { .. } if self.bucket_is_missing(&e) => (
                io::ErrorKind::NotFound,
                format!(
                    "cannot {verb} {url}: there is no {} named '{}' (check its name, and the \
                     account, endpoint and region the URL is resolved in)",
                    self.bucket_word(),
                    self.bucket_name()
                ),
            ),
            E::NotFound { .. } => (
                io::ErrorKind::NotFound,
                format!("cannot {verb} {url}: no such object (check the key)"),
            ),
            E::AlreadyExists { .. } => return self.exists(),
            E::Precondition { .. } => (
                io::ErrorKind::Other,
                format!("cannot {verb} {url}: the object changed while it was being read; read it again"),
            ),
            E::PermissionDenied { .. } => (
                io::ErrorKind::PermissionDenied,
                format!(
                    "cannot {verb} {url}: access denied ({}); check that your credentials may {verb} it",
                    root_cause(&e)
                ),
            ),
            E::Unauthenticated { .. } => (
                io::ErrorKind::PermissionDenied,
                format!(
                    "cannot {verb} {url}: the store refused the credentials ({}); {}",
                    root_cause(&e),
                    self.credentials_hint()
                ),
            ),
            _ => (
                io::ErrorKind::Other,
                format!("cannot {verb} {url}: {}", root_cause(&e)),
            ),
        };
        io::Error::new(kind, msg)
    }

    /// Refuses an in-place rewrite when `version` gives its store nothing to make the
    /// completion conditional on.
    pub(crate) fn rewritable(&self, version: &ObjectVersion) -> io::Result<()> {
        let replace = Replace::Version(version.clone());
        if self.scheme == Scheme::Http || replace.condition(&self.own).is_none() {
            return Err(invalid(format!(
                "{}: the store gave no version of the object to make the rewrite conditional \
                 on, so another writer's change could be lost: write to another object with -o",
                self.url
            )));
        }
        Ok(())
    }

    /// The object is no longer the version that was read: another writer changed it.
    pub(crate) fn changed(&self) -> io::Error {
        io::Error::other(Changed(format!(
            "{} was changed by another writer while it was being rewritten: nothing was \
             replaced, and the upload was aborted; run the command again on the new version",
            self.url
        )))
    }

    pub(crate) fn exists(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} already exists: replace it only if you mean to (--force on the command \
                 line, overwrite=True in Python)",
                self.url
            ),
        )
    }

    fn credentials_hint(&self) -> &'static str {
        match self.scheme {
            Scheme::S3 => {
                "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE with \
                 ~/.aws/credentials), AWS_REGION, and AWS_ENDPOINT_URL for a store other than AWS"
            }
            Scheme::Gcs => "set GOOGLE_APPLICATION_CREDENTIALS to a service account key file",
            Scheme::Azure => {
                "set AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY (or \
                 AZURE_STORAGE_SAS_TOKEN)"
            }
            Scheme::Http => "the server needs no credentials zseal can send",
        }
    }
}

/// The innermost message of an error chain (object_store wraps the HTTP client's errors in
/// several layers whose own messages repeat the request).
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last: &(dyn std::error::Error + 'static) = e;
    let mut text = e.to_string();
    while let Some(s) = last.source() {
        last = s;
        let t = s.to_string();
        if !t.is_empty() {
            text = t;
        }
    }
    text
}

/// The runtime the stores' futures run on: two I/O threads are plenty (the work is waiting).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("zseal-io")
            .enable_all()
            .build()
            .expect("a Tokio runtime (threads and a timer) can be built")
    })
}

/// Runs `f` to completion from a thread outside the runtime.
pub(crate) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

/// Starts `f` on the runtime.
pub(crate) fn spawn<F>(f: F) -> tokio::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    runtime().spawn(f)
}

/// What [`Object::changed`] wraps, so that a caller can tell a lost race apart from a failure
/// to reach the store ([`is_changed`]): the rewrite is over, not to be retried or resumed.
#[derive(Debug)]
struct Changed(String);

impl std::fmt::Display for Changed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Changed {}

/// True for the error of an object changed by another writer during a rewrite.
pub(crate) fn is_changed(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<Changed>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths() {
        for u in [
            "s3://b/k",
            "gs://b/k",
            "az://c/k",
            "https://h/x",
            "s3a://b/k",
        ] {
            assert!(is_url(u), "{u}");
        }
        for p in [
            "file.zseal",
            "/tmp/x",
            "./a://b",
            "-",
            "C:\\x",
            "://x",
            "dir/s3:/x",
        ] {
            assert!(!is_url(p), "{p}");
        }
    }

    #[test]
    fn bad_urls_name_themselves_and_what_to_do() {
        let o = TransferOptions::default();
        let e = Remote::new("ftp://h/x", o).err().unwrap().to_string();
        assert!(
            e.contains("ftp://h/x") && e.contains("unknown scheme 'ftp://'"),
            "{e}"
        );
        let e = Remote::new("s3://bucket", o).err().unwrap().to_string();
        assert!(e.contains("names no object"), "{e}");
        let e = Remote::new("s3://bucket/", o).err().unwrap().to_string();
        assert!(e.contains("names no object"), "{e}");
    }
}
