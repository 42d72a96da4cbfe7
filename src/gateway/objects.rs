//! The object-store backend (docs/GATEWAY.md, "Backends"): `s3://bucket/prefix`, `gs://…`,
//! `az://…`, through the library's stores (its credentials, retry policy, multipart
//! [`crate::remote::RemoteWriter`] and ranged [`crate::remote::RemoteReader`]). Below the prefix,
//! gateway bucket `B` holds object `K` at `B/K` (an ordinary container), its metadata at
//! `B/.zseal-gateway/meta/K`, and the marker `B/.zseal-gateway/bucket` that CreateBucket
//! writes. Multipart parts, sealed to the upload's key, wait in a local spool directory.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use futures_util::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{DynObjectStore, ObjectMeta, ObjectStore, ObjectStoreExt, PutPayload};
use s3s::{s3_error, S3Result};

use super::backend::{Destination, Listed, Stat};
use super::names::{self, OWN_DIR};
use super::store::{internal, refused, Meta};
use crate::remote::{ReadMode, RemoteWriter, StoreRoot, TransferOptions};

/// A prefix of an object store holding the gateway's buckets.
pub struct StoreBackend {
    root: StoreRoot,
    /// Where multipart parts wait (ciphertext only), removed when the gateway stops.
    spool: tempfile::TempDir,
}

/// Runs a request on the library's I/O runtime (where the store's client lives) and waits.
async fn on_io<T: Send + 'static>(
    f: impl std::future::Future<Output = T> + Send + 'static,
) -> S3Result<T> {
    crate::remote::spawn(f)
        .await
        .map_err(|e| internal("a store request stopped", e))
}

fn stat_of(m: &ObjectMeta) -> Stat {
    Stat {
        len: m.size,
        modified: SystemTime::from(m.last_modified),
        tag: m.e_tag.clone(),
    }
}

impl StoreBackend {
    /// The store at `url` (built from the environment, as the command line's are), with a new
    /// spool directory for multipart parts.
    pub fn new(url: &str) -> crate::Result<StoreBackend> {
        let root = StoreRoot::new(url, TransferOptions::from_env()?)?;
        let tmp = std::env::temp_dir();
        remove_dead_spools(&tmp);
        let spool = tempfile::Builder::new()
            .prefix(&format!("{SPOOL}{}-", std::process::id()))
            .tempdir_in(&tmp)?;
        Ok(StoreBackend { root, spool })
    }

    fn marker(&self, bucket: &str) -> ObjectPath {
        self.root.path(&format!("{bucket}/{OWN_DIR}/bucket"))
    }

    fn meta_path(&self, bucket: &str, key: &str) -> ObjectPath {
        self.root.path(&format!("{bucket}/{OWN_DIR}/meta/{key}"))
    }

    /// A bucket exists when its marker does, or (written by other means) any object below it.
    pub async fn bucket(&self, bucket: &str) -> S3Result<()> {
        names::bucket_dir(std::path::Path::new("/"), bucket).map_err(refused)?;
        let store = self.root.store().clone();
        let (marker, below) = (self.marker(bucket), self.root.path(bucket));
        let found = on_io(async move {
            match store.head(&marker).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::NotFound { .. }) => {
                    let first = store.list(Some(&below)).next().await;
                    first.transpose().map(|f| f.is_some())
                }
                Err(e) => Err(e),
            }
        })
        .await?
        .map_err(|e| internal("looking for the bucket", e))?;
        match found {
            true => Ok(()),
            false => Err(s3_error!(NoSuchBucket, "no bucket {bucket:?}")),
        }
    }

    /// The prefixes right below the root whose names are bucket names, with their creation
    /// times (see [`made`]).
    pub async fn buckets(&self) -> S3Result<Vec<(String, Option<SystemTime>)>> {
        let store = self.root.store().clone();
        let at = self.root.path("");
        let at = (!at.as_ref().is_empty()).then_some(at);
        let listed = on_io(async move { store.list_with_delimiter(at.as_ref()).await })
            .await?
            .map_err(|e| internal("listing buckets", e))?;
        let mut names: Vec<String> = listed
            .common_prefixes
            .iter()
            .filter_map(|p| self.root.relative(p))
            .filter(|n| names::bucket_dir(std::path::Path::new("/"), n).is_ok())
            .map(str::to_string)
            .collect();
        names.sort();
        // A marker that cannot be read now (throttled, say) leaves its bucket without a date
        // rather than failing the listing. At most MADE_AT_ONCE HEADs at a time, in order.
        // Owned futures, gathered first: a stream over a borrowing closure is not Send to s3s.
        let heads: Vec<_> = names
            .iter()
            .map(|n| made(self.root.store().clone(), self.marker(n)))
            .collect();
        let made: Vec<_> = futures_util::stream::iter(heads)
            .buffered(MADE_AT_ONCE)
            .collect()
            .await;
        let made = made.into_iter().map(|m| m.ok().flatten());
        Ok(names.into_iter().zip(made).collect())
    }

    /// Writes the bucket's marker, unless the bucket exists.
    pub async fn create_bucket(&self, bucket: &str) -> S3Result<()> {
        // Only a bucket known to be absent is made: a store that failed to answer is an error,
        // not an absent bucket.
        match self.bucket(bucket).await {
            Ok(()) => return Err(s3_error!(BucketAlreadyOwnedByYou, "the bucket exists")),
            Err(e) if *e.code() == s3s::S3ErrorCode::NoSuchBucket => {}
            Err(e) => return Err(e),
        }
        // Written only if absent: of two creates at once, one finds the other's marker.
        let (store, marker) = (self.root.store().clone(), self.marker(bucket));
        let create = object_store::PutOptions::from(object_store::PutMode::Create);
        let put = async move {
            store
                .put_opts(&marker, PutPayload::from_static(b""), create)
                .await
        };
        match on_io(put).await? {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => {
                Err(s3_error!(BucketAlreadyOwnedByYou, "the bucket exists"))
            }
            Err(e) => Err(internal("creating the bucket", e)),
        }
    }

    /// Removes what is left below an empty bucket: its metadata and marker.
    pub async fn delete_bucket(&self, bucket: &str) -> S3Result<()> {
        let store = self.root.store().clone();
        let own = self.root.path(&format!("{bucket}/{OWN_DIR}"));
        on_io(async move {
            let mut listed = store.list(Some(&own));
            while let Some(item) = listed.next().await {
                match store.delete(&item?.location).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })
        .await?
        .map_err(|e| internal("deleting the bucket", e))
    }

    /// Every object below the bucket, with what the listing says of its container.
    pub async fn objects(&self, bucket: &str) -> S3Result<Vec<Listed>> {
        self.bucket(bucket).await?;
        let store = self.root.store().clone();
        let below = self.root.path(bucket);
        let all: Vec<ObjectMeta> = on_io(async move {
            let listed: Vec<object_store::Result<ObjectMeta>> =
                store.list(Some(&below)).collect().await;
            listed.into_iter().collect::<object_store::Result<Vec<_>>>()
        })
        .await?
        .map_err(|e| internal("listing the bucket", e))?;
        let own = format!("{bucket}/{OWN_DIR}/");
        let mut out: Vec<Listed> = all
            .iter()
            .filter_map(|m| {
                let name = self.root.relative(&m.location)?;
                let key = name.strip_prefix(bucket)?.strip_prefix('/')?;
                (!name.starts_with(&own)).then(|| Listed {
                    key: key.to_string(),
                    stat: Some(stat_of(m)),
                })
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// The container of object `key` (NoSuchKey, or NoSuchBucket).
    pub async fn stat(&self, bucket: &str, key: &str) -> S3Result<Stat> {
        names::key_segments(key).map_err(refused)?;
        let store = self.root.store().clone();
        let path = self.root.path(&format!("{bucket}/{key}"));
        match on_io(async move { store.head(&path).await }).await? {
            Ok(m) => Ok(stat_of(&m)),
            Err(object_store::Error::NotFound { .. }) => {
                self.bucket(bucket).await?;
                Err(s3_error!(
                    NoSuchKey,
                    "no object {key:?} in bucket {bucket:?}"
                ))
            }
            Err(e) => Err(internal("looking at the object", e)),
        }
    }

    /// The metadata object of `key`, as written.
    pub async fn meta(&self, bucket: &str, key: &str) -> Option<Meta> {
        let (store, path) = (self.root.store().clone(), self.meta_path(bucket, key));
        let bytes = on_io(async move { store.get(&path).await?.bytes().await })
            .await
            .ok()?
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Object `key`'s container, read by ranged GETs pinned to its ETag (blocking;
    /// `sequential`: it is read from start to end).
    pub fn reader(
        &self,
        bucket: &str,
        key: &str,
        sequential: bool,
    ) -> S3Result<crate::remote::RemoteReader> {
        names::key_segments(key).map_err(refused)?;
        let mode = match sequential {
            true => ReadMode::Sequential,
            false => ReadMode::Random,
        };
        self.root
            .object(&format!("{bucket}/{key}"))
            .reader(mode)
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => {
                    s3_error!(NoSuchKey, "no object {key:?} in bucket {bucket:?}")
                }
                _ => internal("opening the object", e),
            })
    }

    /// A multipart upload of object `key`'s container (blocking): the container appears only
    /// when [`Destination::publish`] completes it; then its metadata is written, naming the
    /// container's ETag. Dropped before, it aborts the upload: the older object and its metadata
    /// stay.
    pub fn upload(&self, bucket: &str, key: &str) -> S3Result<Upload> {
        names::key_segments(key).map_err(refused)?;
        let name = format!("{bucket}/{key}");
        let writer = self
            .root
            .object(&name)
            .writer(true, None)
            .map_err(|e| internal("starting the upload", e))?;
        Ok(Upload {
            writer,
            store: self.root.store().clone(),
            path: self.root.path(&name),
            meta_path: self.meta_path(bucket, key),
        })
    }

    /// Deletes the container and its metadata.
    pub async fn delete(&self, bucket: &str, key: &str) -> S3Result<()> {
        names::key_segments(key).map_err(refused)?;
        self.bucket(bucket).await?;
        let store = self.root.store().clone();
        let paths = [
            self.root.path(&format!("{bucket}/{key}")),
            self.meta_path(bucket, key),
        ];
        on_io(async move {
            for p in paths {
                match store.delete(&p).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })
        .await?
        .map_err(|e| internal("deleting the object", e))
    }

    /// A new spool directory for upload `id`'s sealed parts.
    pub fn upload_dir(&self, bucket: &str, id: &str) -> S3Result<PathBuf> {
        let dir = self.spool.path().join(bucket).join(id);
        std::fs::create_dir_all(&dir).map_err(|e| internal("creating the upload's folder", e))?;
        Ok(dir)
    }
}

/// The start of a spool directory's name, followed by its gateway's process id.
const SPOOL: &str = "zseal-gateway-parts-";

/// Removes the spools of gateways that are no longer running (stopped by a signal, which runs no
/// destructor): their parts are sealed to keys that died with them. A spool whose process id
/// is alive again (reused) stays.
fn remove_dead_spools(tmp: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SPOOL))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = std::path::Path::new("/proc").join(pid.to_string()).exists();
        if !alive && std::path::Path::new("/proc/self").exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A container being written into the store (see [`StoreBackend::upload`]).
pub struct Upload {
    writer: RemoteWriter,
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    meta_path: ObjectPath,
}

impl Write for Upload {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.writer.write(data)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

impl Destination for Upload {
    fn publish(self: Box<Self>, meta: &mut Meta) -> S3Result<SystemTime> {
        let Upload {
            writer,
            store,
            path,
            meta_path,
        } = *self;
        writer
            .commit()
            .map_err(|e| internal("completing the upload", e))?;
        let head = crate::remote::block_on(store.head(&path))
            .map_err(|e| internal("looking at the new object", e))?;
        meta.stored_tag = head.e_tag.clone();
        let json = serde_json::to_vec(&meta).map_err(|e| internal("writing metadata", e))?;
        crate::remote::block_on(store.put(&meta_path, PutPayload::from(json)))
            .map_err(|e| internal("writing metadata", e))?;
        Ok(SystemTime::from(head.last_modified))
    }
}

/// How many bucket markers ListBuckets asks for at once: a root with hundreds of buckets is
/// listed without hundreds of requests in flight.
const MADE_AT_ONCE: usize = 8;

/// When a bucket was made: the time of its `marker` (CreateBucket writes it), `None` for a
/// prefix whose objects were written by other means. One HEAD.
async fn made(store: Arc<DynObjectStore>, marker: ObjectPath) -> S3Result<Option<SystemTime>> {
    match on_io(async move { store.head(&marker).await }).await? {
        Ok(m) => Ok(Some(SystemTime::from(m.last_modified))),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(internal("looking at the bucket's marker", e)),
    }
}
