//! The local-directory backend's files (docs/GATEWAY.md): containers sealed into a temporary
//! file and renamed into place, the metadata file HEAD and listings read, and the walk behind a
//! listing. Everything here is blocking; the S3 side calls it from `spawn_blocking`.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rand_core::RngCore;
use s3s::{s3_error, S3Error, S3Result};
use serde::{Deserialize, Serialize};

use super::names::{self, Refused, OWN_DIR};
use crate::{EncryptOptions, Encryptor, Recipient};

/// What HEAD and listings show of an object, written beside it at seal time
/// (`ROOT/B/.zseal-gateway/meta/K`, JSON).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Meta {
    /// The plaintext's length.
    pub size: u64,
    /// The ETag clients see: random hex, `HEX-N` for an object of N parts.
    pub etag: String,
    /// The container's length when this was written: a container of another length is not the
    /// one described (a gateway stopped between the two renames).
    pub stored_len: u64,
    /// The object store's ETag of the container (an object-store backend's; none in a
    /// directory): metadata whose tag differs describes another container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_tag: Option<String>,
    /// Content-Type as the client gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// `x-amz-meta-*` as the client gave them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub user: BTreeMap<String, String>,
}

/// A refused name as S3's error.
pub fn refused(r: Refused) -> S3Error {
    let code = s3s::S3ErrorCode::from_bytes(r.code.as_bytes())
        .unwrap_or(s3s::S3ErrorCode::InvalidArgument);
    S3Error::with_message(code, r.message)
}

/// A failure of the gateway itself (a file it cannot write, an engine error), as a 500 that
/// says what failed.
pub fn internal(what: &str, e: impl std::fmt::Display) -> S3Error {
    S3Error::with_message(s3s::S3ErrorCode::InternalError, format!("{what}: {e}"))
}

/// An object's ETag: 16 random bytes in hex, which say nothing about the plaintext, then `-1`,
/// so that no client takes it for the MD5 of what it sent (rclone compares a plain 32-digit
/// ETag with its own MD5, and fails its copy; an S3 multipart ETag `HEX-N` it does not).
pub fn object_etag() -> String {
    format!("{}-1", random_etag())
}

/// 16 random bytes in hex (upload ids, part ETags).
pub fn random_etag() -> String {
    let mut b = [0u8; 16];
    rand_core::OsRng.fill_bytes(&mut b);
    hex(&b)
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates the directories from `base` down to `dir`, refusing any that exists as something
/// other than a directory (a symbolic link included), so that a path built by `names` never
/// leads outside `ROOT`.
pub fn make_dirs(base: &Path, dir: &Path) -> S3Result<()> {
    let rest = dir
        .strip_prefix(base)
        .map_err(|_| internal("a path outside its bucket", dir.display()))?;
    let mut at = base.to_path_buf();
    for part in rest.components() {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(s3_error!(
                    InvalidArgument,
                    "the key needs {} to be a folder, but an object of that name exists: delete it or choose another key",
                    display_in_bucket(base, &at)
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => match fs::create_dir(&at) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(internal("creating a folder", e)),
            },
            Err(e) => return Err(internal("reading a folder", e)),
        }
    }
    Ok(())
}

fn display_in_bucket(base: &Path, at: &Path) -> String {
    at.strip_prefix(base).unwrap_or(at).display().to_string()
}

/// True when every folder between `base` (not checked) and `path` (not checked either) is a
/// real directory, never a symbolic link: a key's path is then beneath `base`, whatever links
/// someone made inside the bucket (the fifth review: a link in the middle of a key's path was
/// followed, and DELETE removed a file outside ROOT). A folder that does not exist is `false`.
fn beneath(base: &Path, path: &Path) -> bool {
    let Ok(rest) = path.strip_prefix(base) else {
        return false;
    };
    let mut at = base.to_path_buf();
    let mut parts: Vec<_> = rest.components().collect();
    parts.pop(); // the file itself, whose own kind the caller checks without following it
    parts.into_iter().all(|part| {
        at.push(part);
        fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_dir())
    })
}

/// The bucket's directory, which must exist (NoSuchBucket otherwise).
pub fn existing_bucket(root: &Path, bucket: &str) -> S3Result<PathBuf> {
    let dir = names::bucket_dir(root, bucket).map_err(refused)?;
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(dir),
        _ => Err(s3_error!(NoSuchBucket, "no bucket {bucket:?}")),
    }
}

/// The object's file, which must be a regular file (NoSuchKey otherwise).
pub fn existing_object(root: &Path, bucket: &str, key: &str) -> S3Result<PathBuf> {
    let base = existing_bucket(root, bucket)?;
    let path = names::object_path(root, bucket, key).map_err(refused)?;
    match fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() && beneath(&base, &path) => Ok(path),
        _ => Err(s3_error!(
            NoSuchKey,
            "no object {key:?} in bucket {bucket:?}"
        )),
    }
}

/// A new temporary file (mode 0600) in the bucket's `tmp/`: removed when dropped, renamed into
/// place by [`publish`].
pub fn temp_file(root: &Path, bucket: &str) -> S3Result<tempfile::NamedTempFile> {
    let base = existing_bucket(root, bucket)?;
    let tmp = names::own_dir(root, bucket, "tmp").map_err(refused)?;
    make_dirs(&base, &tmp)?;
    tempfile::NamedTempFile::new_in(&tmp).map_err(|e| internal("creating a temporary file", e))
}

/// Seals what `feed` writes into `out`, to `recipients`: the whole container. Returns what
/// `feed` returned, the container's length and `out`.
pub fn seal_into<W: Write, T>(
    out: W,
    recipients: &[&dyn Recipient],
    opts: &EncryptOptions,
    feed: impl FnOnce(&mut dyn Write) -> S3Result<T>,
) -> S3Result<(T, u64, W)> {
    let out = crate::io::Counted::new(out, Default::default());
    let mut enc = Encryptor::new(out, recipients, opts).map_err(|e| internal("sealing", e))?;
    let fed = feed(&mut enc)?;
    let out = enc.finish().map_err(|e| internal("sealing", e))?;
    Ok((fed, out.count(), out.into_inner()))
}

/// A file being written (mode 0600, in the bucket's `tmp/`), flushed to disk on [`Self::sync`].
pub struct TempFile(io::BufWriter<tempfile::NamedTempFile>);

impl TempFile {
    /// A new temporary file in the bucket's `tmp/` (see [`temp_file`]).
    pub fn new(root: &Path, bucket: &str) -> S3Result<TempFile> {
        Ok(TempFile::of(temp_file(root, bucket)?))
    }

    /// A new temporary file in `dir` (a multipart upload's directory).
    pub fn in_dir(dir: &Path) -> S3Result<TempFile> {
        let file = tempfile::NamedTempFile::new_in(dir)
            .map_err(|e| internal("creating a temporary file", e))?;
        Ok(TempFile::of(file))
    }

    fn of(file: tempfile::NamedTempFile) -> TempFile {
        TempFile(io::BufWriter::with_capacity(1 << 20, file))
    }

    /// The file, with everything written to it on disk.
    pub fn sync(self) -> S3Result<tempfile::NamedTempFile> {
        let file = self
            .0
            .into_inner()
            .map_err(|e| internal("writing the container", e.error()))?;
        file.as_file()
            .sync_all()
            .map_err(|e| internal("writing the container", e))?;
        Ok(file)
    }
}

impl Write for TempFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.write(data)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// A container of object `key` being written in the directory backend: a temporary file that
/// [`publish`] renames into place.
pub struct Pending {
    root: PathBuf,
    bucket: String,
    key: String,
    file: TempFile,
}

impl Pending {
    pub fn new(root: &Path, bucket: &str, key: &str) -> S3Result<Pending> {
        Ok(Pending {
            file: TempFile::new(root, bucket)?,
            root: root.to_path_buf(),
            bucket: bucket.to_string(),
            key: key.to_string(),
        })
    }
}

impl Write for Pending {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.file.write(data)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl super::backend::Destination for Pending {
    fn publish(self: Box<Self>, meta: &mut Meta) -> S3Result<SystemTime> {
        let file = self.file.sync()?;
        publish(&self.root, &self.bucket, &self.key, file, meta)
    }
}

/// Puts a finished container at `ROOT/B/K` with its metadata: the metadata file first, then the
/// container, each renamed into place, so that a reader sees the old object or the new one.
pub fn publish(
    root: &Path,
    bucket: &str,
    key: &str,
    container: tempfile::NamedTempFile,
    meta: &Meta,
) -> S3Result<SystemTime> {
    let base = existing_bucket(root, bucket)?;
    let target = names::object_path(root, bucket, key).map_err(refused)?;
    let meta_target = names::meta_path(root, bucket, key).map_err(refused)?;
    if let Some(parent) = target.parent() {
        make_dirs(&base, parent)?;
    }
    if fs::symlink_metadata(&target).is_ok_and(|m| !m.is_file()) {
        return Err(s3_error!(
            InvalidArgument,
            "{key:?} is a folder of other objects: an object cannot have its name"
        ));
    }
    if let Some(parent) = meta_target.parent() {
        make_dirs(&base, parent)?;
    }
    let mut meta_tmp = temp_file(root, bucket)?;
    serde_json::to_writer(&mut meta_tmp, meta).map_err(|e| internal("writing metadata", e))?;
    meta_tmp
        .persist(&meta_target)
        .map_err(|e| internal("writing metadata", e.error))?;
    let file = container
        .persist(&target)
        .map_err(|e| internal("placing the object", e.error))?;
    let modified = file
        .metadata()
        .and_then(|m| m.modified())
        .map_err(|e| internal("placing the object", e))?;
    Ok(modified)
}

/// The object's metadata file, as written (the caller checks that it describes the container).
pub fn read_meta_file(root: &Path, bucket: &str, key: &str) -> Option<Meta> {
    let base = names::bucket_dir(root, bucket).ok()?;
    let path = names::meta_path(root, bucket, key).ok()?;
    let regular = fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
    if !regular || !beneath(&base, &path) {
        return None;
    }
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

/// The container file's length and modification time.
pub fn stat(path: &Path) -> S3Result<super::backend::Stat> {
    let m = fs::metadata(path).map_err(|e| internal("reading the object", e))?;
    let modified = m
        .modified()
        .map_err(|e| internal("reading the object", e))?;
    Ok(super::backend::Stat {
        len: m.len(),
        modified,
        tag: None,
    })
}

/// The directories of `root` whose names are bucket names, sorted, with their creation times.
pub fn buckets(root: &Path) -> S3Result<Vec<(String, Option<SystemTime>)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(root).map_err(|e| internal("listing buckets", e))? {
        let entry = entry.map_err(|e| internal("listing buckets", e))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir || names::bucket_dir(root, &name).is_err() {
            continue;
        }
        let made = entry.metadata().and_then(|m| m.created().or(m.modified()));
        out.push((name, made.ok()));
    }
    out.sort();
    Ok(out)
}

/// Makes the bucket's directory.
pub fn create_bucket(root: &Path, bucket: &str) -> S3Result<()> {
    let dir = names::bucket_dir(root, bucket).map_err(refused)?;
    match fs::create_dir(&dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            Err(s3_error!(BucketAlreadyOwnedByYou, "the bucket exists"))
        }
        Err(e) => Err(internal("creating the bucket", e)),
    }
}

/// Removes a bucket that holds no object: its own directory, then the bucket's.
pub fn delete_bucket(root: &Path, bucket: &str) -> S3Result<()> {
    let dir = existing_bucket(root, bucket)?;
    let _ = fs::remove_dir_all(dir.join(OWN_DIR));
    fs::remove_dir(&dir).map_err(|e| internal("deleting the bucket", e))
}

/// Removes object `key` and its metadata, then the folders its key made that are now empty (so
/// that `a` can be an object again once `a/b` is gone). A missing object is no error (S3's).
pub fn delete_object(root: &Path, bucket: &str, key: &str) -> S3Result<()> {
    let base = existing_bucket(root, bucket)?;
    let target = names::object_path(root, bucket, key).map_err(refused)?;
    let meta = names::meta_path(root, bucket, key).map_err(refused)?;
    match fs::symlink_metadata(&target) {
        Ok(m) if m.is_file() && beneath(&base, &target) => {
            fs::remove_file(&target).map_err(|e| internal("deleting the object", e))?
        }
        _ => return Ok(()),
    }
    if beneath(&base, &meta) {
        let _ = fs::remove_file(&meta);
    }
    prune_empty(&base, target.parent());
    let meta_base = names::own_dir(root, bucket, "meta").map_err(refused)?;
    prune_empty(&meta_base, meta.parent());
    Ok(())
}

/// Removes empty directories from `dir` up to (not including) `base`.
fn prune_empty(base: &Path, mut dir: Option<&Path>) {
    while let Some(d) = dir {
        if d == base || !d.starts_with(base) || fs::remove_dir(d).is_err() {
            return;
        }
        dir = d.parent();
    }
}

/// Every object key of a bucket, sorted (S3's order: by UTF-8 bytes), with its file. The
/// gateway's own directory, symbolic links and names that are not UTF-8 are left out.
pub fn walk(base: &Path) -> S3Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let mut dirs = vec![(String::new(), base.to_path_buf())];
    while let Some((prefix, dir)) = dirs.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| internal("listing", e))?;
        for entry in entries {
            let entry = entry.map_err(|e| internal("listing", e))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if prefix.is_empty() && name == OWN_DIR {
                continue;
            }
            let kind = entry.file_type().map_err(|e| internal("listing", e))?;
            let key = format!("{prefix}{name}");
            if kind.is_dir() {
                dirs.push((format!("{key}/"), entry.path()));
            } else if kind.is_file() {
                out.push((key, entry.path()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Removes what a previous run left: temporary files, and multipart uploads (their parts are
/// sealed to keys that died with it).
pub fn clean_leftovers(root: &Path) -> io::Result<usize> {
    let mut removed = 0;
    let Ok(entries) = fs::read_dir(root) else {
        return Ok(0);
    };
    for entry in entries.flatten() {
        for which in ["tmp", "uploads"] {
            let dir = entry.path().join(OWN_DIR).join(which);
            if fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                removed += fs::read_dir(&dir)?.count();
                fs::remove_dir_all(&dir)?;
            }
        }
    }
    Ok(removed)
}
