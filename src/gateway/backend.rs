//! Where the gateway keeps its containers (docs/GATEWAY.md, "Backends"): a local directory
//! (`store.rs`) or a prefix of an object store (`objects.rs`). The operations see one
//! [`Backend`]; each of its calls goes to the one that holds the objects. Sealing is one
//! [`Backend::seal`] for both: only where the container goes while it is written, and how it is
//! published, differ (a [`Destination`]: a temporary file renamed into place, or the store's
//! multipart upload completed).

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use s3s::{s3_error, S3Result};

use super::names;
use super::objects::StoreBackend;
use super::store::{self, internal, refused, Meta};
use crate::{EncryptOptions, Recipient};

/// A container opened for reading (a file, or an object read by ranged GETs).
pub trait Source: Read + Seek + Send {}
impl<T: Read + Seek + Send> Source for T {}

/// Where a container is written while it is sealed: nothing of it is visible as an object
/// until [`Destination::publish`], and dropped unpublished it leaves nothing (a temporary file
/// removed, a store's multipart upload aborted).
pub trait Destination: Write + Send {
    /// The container is complete: puts it in place with `meta` (filling its `stored_tag`), and
    /// returns its modification time.
    fn publish(self: Box<Self>, meta: &mut Meta) -> S3Result<SystemTime>;
}

/// What the backend says of a stored container without reading it.
#[derive(Clone, Debug)]
pub struct Stat {
    /// The container's length.
    pub len: u64,
    pub modified: SystemTime,
    /// The store's ETag of the container (none for a file).
    pub tag: Option<String>,
}

/// An object a listing found: its key, and its container's [`Stat`] when the listing gave it.
pub struct Listed {
    pub key: String,
    pub stat: Option<Stat>,
}

/// The gateway's containers: a directory, or a prefix of an object store.
#[derive(Clone)]
pub enum Backend {
    Dir(PathBuf),
    Store(Arc<StoreBackend>),
}

impl Backend {
    /// Refuses a bad bucket name or key (docs/GATEWAY.md, "Keys") before anything is read.
    pub fn check_key(&self, bucket: &str, key: &str) -> S3Result<()> {
        names::object_path(Path::new("/"), bucket, key).map_err(refused)?;
        Ok(())
    }

    /// The bucket must exist (NoSuchBucket otherwise).
    pub async fn bucket(&self, bucket: &str) -> S3Result<()> {
        match self {
            Backend::Dir(root) => store::existing_bucket(root, bucket).map(|_| ()),
            Backend::Store(s) => s.bucket(bucket).await,
        }
    }

    /// Every bucket, sorted, with its creation time when known.
    pub async fn buckets(&self) -> S3Result<Vec<(String, Option<SystemTime>)>> {
        match self {
            Backend::Dir(root) => {
                let root = root.clone();
                super::service::blocking(move || store::buckets(&root)).await
            }
            Backend::Store(s) => s.buckets().await,
        }
    }

    pub async fn create_bucket(&self, bucket: &str) -> S3Result<()> {
        names::bucket_dir(Path::new("/"), bucket).map_err(refused)?;
        match self {
            Backend::Dir(root) => store::create_bucket(root, bucket),
            Backend::Store(s) => s.create_bucket(bucket).await,
        }
    }

    /// Deletes an empty bucket (BucketNotEmpty otherwise) with the gateway's own files in it.
    pub async fn delete_bucket(&self, bucket: &str) -> S3Result<()> {
        let held = self.objects(bucket).await?.len();
        if held > 0 {
            return Err(s3_error!(
                BucketNotEmpty,
                "the bucket holds {held} object(s): delete them first"
            ));
        }
        match self {
            Backend::Dir(root) => store::delete_bucket(root, bucket),
            Backend::Store(s) => s.delete_bucket(bucket).await,
        }
    }

    /// Every object of the bucket, sorted by key (S3's order).
    pub async fn objects(&self, bucket: &str) -> S3Result<Vec<Listed>> {
        match self {
            Backend::Dir(root) => {
                let base = store::existing_bucket(root, bucket)?;
                let walked = super::service::blocking(move || store::walk(&base)).await?;
                Ok(walked
                    .into_iter()
                    .map(|(key, _)| Listed { key, stat: None })
                    .collect())
            }
            Backend::Store(s) => s.objects(bucket).await,
        }
    }

    /// The container of object `key` (NoSuchBucket, NoSuchKey otherwise).
    pub async fn stat(&self, bucket: &str, key: &str) -> S3Result<Stat> {
        match self {
            Backend::Dir(root) => {
                let path = store::existing_object(root, bucket, key)?;
                store::stat(&path)
            }
            Backend::Store(s) => s.stat(bucket, key).await,
        }
    }

    /// The metadata written when the container `stat` describes was sealed; `None` when it is
    /// missing or describes another container.
    pub async fn meta(&self, bucket: &str, key: &str, stat: &Stat) -> Option<Meta> {
        let meta = match self {
            Backend::Dir(root) => store::read_meta_file(root, bucket, key)?,
            Backend::Store(s) => s.meta(bucket, key).await?,
        };
        let same_tag = meta.stored_tag.is_none() || meta.stored_tag == stat.tag;
        (meta.stored_len == stat.len && same_tag).then_some(meta)
    }

    /// Opens object `key`'s container (blocking; `sequential`: it is read from start to end).
    pub fn open(&self, bucket: &str, key: &str, sequential: bool) -> S3Result<Box<dyn Source>> {
        self.open_if(bucket, key, sequential, None)
    }

    /// [`Backend::open`], refused unless the container opened is the one `stat` described: a
    /// copy whose source conditions were checked against `stat` reads that container or none
    /// (the object may be replaced while the request waits for a slot).
    pub fn open_as(
        &self,
        bucket: &str,
        key: &str,
        sequential: bool,
        stat: &Stat,
    ) -> S3Result<Box<dyn Source>> {
        self.open_if(bucket, key, sequential, Some(stat))
    }

    fn open_if(
        &self,
        bucket: &str,
        key: &str,
        sequential: bool,
        stat: Option<&Stat>,
    ) -> S3Result<Box<dyn Source>> {
        let changed = || {
            s3_error!(
                PreconditionFailed,
                "the copy's source was replaced while the request waited: send it again"
            )
        };
        match self {
            Backend::Dir(root) => {
                let path = store::existing_object(root, bucket, key)?;
                let file =
                    std::fs::File::open(path).map_err(|e| internal("opening the object", e))?;
                if let Some(stat) = stat {
                    let m = file
                        .metadata()
                        .map_err(|e| internal("reading the object", e))?;
                    if m.len() != stat.len || m.modified().ok() != Some(stat.modified) {
                        return Err(changed());
                    }
                }
                Ok(Box::new(file))
            }
            Backend::Store(s) => {
                let reader = s.reader(bucket, key, sequential)?;
                match stat.is_none_or(|st| reader.is_version(st.tag.as_deref(), st.len)) {
                    true => Ok(Box::new(reader)),
                    false => Err(changed()),
                }
            }
        }
    }

    /// Seals what `feed` writes into the container of object `key` and publishes it with the
    /// metadata `meta` makes of what `feed` returned and the container's length (blocking).
    /// Until `feed` has returned and the container is complete, any older object stays.
    pub fn seal<T>(
        &self,
        bucket: &str,
        key: &str,
        to: &[&dyn Recipient],
        opts: &EncryptOptions,
        feed: impl FnOnce(&mut dyn Write) -> S3Result<T>,
        meta: impl FnOnce(&T, u64) -> Meta,
    ) -> S3Result<(T, Meta, SystemTime)> {
        let (fed, len, out) = store::seal_into(self.destination(bucket, key)?, to, opts, feed)?;
        let mut meta = meta(&fed, len);
        let modified = out.publish(&mut meta)?;
        Ok((fed, meta, modified))
    }

    /// Where the container of object `key` is written until it is complete (blocking).
    fn destination(&self, bucket: &str, key: &str) -> S3Result<Box<dyn Destination>> {
        Ok(match self {
            Backend::Dir(root) => Box::new(store::Pending::new(root, bucket, key)?),
            Backend::Store(s) => Box::new(s.upload(bucket, key)?),
        })
    }

    /// Removes object `key` and its metadata; a missing object is no error (S3's).
    pub async fn delete(&self, bucket: &str, key: &str) -> S3Result<()> {
        match self {
            Backend::Dir(root) => {
                let (root, bucket, key) = (root.clone(), bucket.to_string(), key.to_string());
                super::service::blocking(move || store::delete_object(&root, &bucket, &key)).await
            }
            Backend::Store(s) => s.delete(bucket, key).await,
        }
    }

    /// A new directory for the sealed parts of multipart upload `id` (ciphertext only): in the
    /// bucket's own directory, or for an object store in the gateway's local spool.
    pub fn upload_dir(&self, bucket: &str, id: &str) -> S3Result<PathBuf> {
        match self {
            Backend::Dir(root) => {
                let base = store::existing_bucket(root, bucket)?;
                let dir = names::own_dir(root, bucket, "uploads")
                    .map_err(refused)?
                    .join(id);
                store::make_dirs(&base, &dir)?;
                Ok(dir)
            }
            Backend::Store(s) => s.upload_dir(bucket, id),
        }
    }
}
