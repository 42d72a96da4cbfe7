//! Multipart uploads (docs/GATEWAY.md, "Uploads"). Each part is sealed as it arrives into a
//! container of its own, to an X25519 key drawn for the upload and kept only in memory; the
//! completion opens the parts in order and streams them into the object's container, sealed to
//! the recipients. No part is on disk in plaintext, and an upload dies with the gateway.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use md5::Digest as _;
use s3s::dto::*;
use s3s::{s3_error, S3Response, S3Result, TrailingHeaders};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use super::body;
use super::service::{blocking, identity_refs, recipient_refs, Gateway};
use super::store::{self, internal, Meta};
use crate::crypto::recipients::{self, read_identities, AgeRecipient};
use crate::{Codec, DecryptOptions, EncryptOptions, Sealed};

/// An upload in progress.
pub struct Upload {
    bucket: String,
    key: String,
    /// The upload's own identity (`AGE-SECRET-KEY-1…`): its parts open with it alone.
    secret: Zeroizing<String>,
    recipient: AgeRecipient,
    dir: PathBuf,
    content_type: Option<String>,
    user: BTreeMap<String, String>,
    started: Instant,
    /// Held while a part's file and its metadata are put in place, so that two uploads of
    /// the same part number leave one's file with that one's metadata.
    placing: std::sync::Mutex<()>,
}

/// An upload neither completed nor aborted this long after it started is abandoned: the next
/// CreateMultipartUpload removes it and its parts (a restart removes every upload).
pub const ABANDONED_AFTER: Duration = Duration::from_secs(24 * 3600);

/// The uploads started more than `ttl` before `now`.
fn abandoned(uploads: &HashMap<String, Arc<Upload>>, now: Instant, ttl: Duration) -> Vec<String> {
    uploads
        .iter()
        .filter(|(_, u)| now.saturating_duration_since(u.started) > ttl)
        .map(|(id, _)| id.clone())
        .collect()
}

/// What is known of a stored part (`part-NNNNN.json` beside its container).
#[derive(Serialize, Deserialize)]
struct PartMeta {
    size: u64,
    etag: String,
}

fn part_file(dir: &Path, n: i32) -> PathBuf {
    dir.join(format!("part-{n:05}"))
}

fn part_meta_file(dir: &Path, n: i32) -> PathBuf {
    dir.join(format!("part-{n:05}.json"))
}

fn read_part_meta(dir: &Path, n: i32) -> Option<PartMeta> {
    serde_json::from_slice(&fs::read(part_meta_file(dir, n)).ok()?).ok()
}

impl Gateway {
    /// The upload `id`, which must be of this bucket and key.
    pub(super) fn upload(&self, id: &str, bucket: &str, key: &str) -> S3Result<Arc<Upload>> {
        let uploads = self.uploads.lock().map_err(|e| internal("uploads", e))?;
        match uploads.get(id) {
            Some(u) if u.bucket == bucket && u.key == key => Ok(Arc::clone(u)),
            _ => Err(s3_error!(
                NoSuchUpload,
                "no upload {id:?} of {key:?} in bucket {bucket:?} (uploads do not survive a gateway restart)"
            )),
        }
    }

    pub(super) async fn create_upload(
        &self,
        input: CreateMultipartUploadInput,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        self.backend.check_key(&input.bucket, &input.key)?;
        self.backend.bucket(&input.bucket).await?;
        let id = store::random_etag();
        let dir = self.backend.upload_dir(&input.bucket, &id)?;
        let (secret, public) = recipients::generate();
        let recipient = AgeRecipient::parse(&public).map_err(|e| internal("a new key", e))?;
        let upload = Upload {
            bucket: input.bucket.clone(),
            key: input.key.clone(),
            secret,
            recipient,
            dir,
            content_type: input.content_type,
            user: input.metadata.unwrap_or_default().into_iter().collect(),
            started: Instant::now(),
            placing: Default::default(),
        };
        let dropped = {
            let mut uploads = self.uploads.lock().map_err(|e| internal("uploads", e))?;
            let old = abandoned(&uploads, Instant::now(), ABANDONED_AFTER);
            let dropped: Vec<Arc<Upload>> =
                old.iter().filter_map(|id| uploads.remove(id)).collect();
            uploads.insert(id.clone(), Arc::new(upload));
            dropped
        };
        for u in dropped {
            let _ = fs::remove_dir_all(&u.dir);
        }
        Ok(S3Response::new(CreateMultipartUploadOutput {
            bucket: Some(input.bucket),
            key: Some(input.key),
            upload_id: Some(id),
            ..Default::default()
        }))
    }

    pub(super) async fn upload_one_part(
        &self,
        input: UploadPartInput,
        trailers: Option<TrailingHeaders>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        let upload = self.upload(&input.upload_id, &input.bucket, &input.key)?;
        let n = part_number(input.part_number)?;
        let (body, expected) = body::body_of!(input);
        let opts = self.part_options();
        let rt = tokio::runtime::Handle::current();
        let permit = self.slots(1).await?;
        let (etag, checksum) = blocking(move || {
            let _permit = permit;
            store_part(&upload, n, &opts, |w| {
                let fed = body::feed(&rt, body, expected, trailers, w)?;
                Ok((fed.len, fed.checksum))
            })
        })
        .await?;
        Ok(S3Response::new(body::answer!(
            UploadPartOutput,
            ETag::Strong(etag),
            checksum
        )))
    }

    /// How a part is sealed: fast, without compression (it is read once more at completion,
    /// and compressed then).
    pub(super) fn part_options(&self) -> EncryptOptions {
        EncryptOptions::clone(&self.encrypt).codec(Codec::None)
    }

    pub(super) async fn parts_of(
        &self,
        input: ListPartsInput,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        let upload = self.upload(&input.upload_id, &input.bucket, &input.key)?;
        let after = input.part_number_marker.unwrap_or(0);
        let max = input.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
        let mut parts = Vec::new();
        let mut more = false;
        for n in (after + 1)..=10_000 {
            let Some(meta) = read_part_meta(&upload.dir, n) else {
                continue;
            };
            if parts.len() == max {
                more = true;
                break;
            }
            parts.push(Part {
                part_number: Some(n),
                size: Some(meta.size as i64),
                e_tag: Some(ETag::Strong(meta.etag)),
                ..Default::default()
            });
        }
        let last = parts.last().and_then(|p| p.part_number);
        Ok(S3Response::new(ListPartsOutput {
            bucket: Some(input.bucket),
            key: Some(input.key),
            upload_id: Some(input.upload_id),
            part_number_marker: input.part_number_marker,
            next_part_number_marker: more.then_some(last).flatten(),
            max_parts: Some(max as i32),
            is_truncated: Some(more),
            parts: Some(parts),
            ..Default::default()
        }))
    }

    pub(super) async fn complete(
        &self,
        input: CompleteMultipartUploadInput,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let upload = self.upload(&input.upload_id, &input.bucket, &input.key)?;
        let listed = input
            .multipart_upload
            .and_then(|m| m.parts)
            .unwrap_or_default();
        let numbers = checked_parts(&upload.dir, &listed)?;
        let (backend, recipients, opts) = (
            self.backend.clone(),
            Arc::clone(&self.recipients),
            Arc::clone(&self.encrypt),
        );
        let permit = self.slots(2).await?;
        let done = Arc::clone(&upload);
        let etag = blocking(move || {
            let _permit = permit;
            let u = &done;
            let to = recipient_refs(&recipients);
            let feed = |w: &mut dyn std::io::Write| join_parts(u, &numbers, w);
            let meta = |size: &u64, stored_len| Meta {
                size: *size,
                etag: multipart_etag(&u.dir, &numbers),
                stored_len,
                stored_tag: None,
                content_type: u.content_type.clone(),
                user: u.user.clone(),
            };
            let (_, meta, _) = backend.seal(&u.bucket, &u.key, &to, &opts, feed, meta)?;
            let _ = fs::remove_dir_all(&u.dir);
            Ok(meta.etag)
        })
        .await?;
        self.forget(&input.upload_id);
        Ok(S3Response::new(CompleteMultipartUploadOutput {
            bucket: Some(input.bucket),
            key: Some(input.key),
            e_tag: Some(ETag::Strong(etag)),
            ..Default::default()
        }))
    }

    pub(super) async fn abort(
        &self,
        input: AbortMultipartUploadInput,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        let upload = self.upload(&input.upload_id, &input.bucket, &input.key)?;
        self.forget(&input.upload_id);
        let dir = upload.dir.clone();
        blocking(move || {
            fs::remove_dir_all(&dir).map_err(|e| internal("removing the upload's parts", e))
        })
        .await?;
        Ok(S3Response::new(AbortMultipartUploadOutput::default()))
    }

    fn forget(&self, id: &str) {
        if let Ok(mut uploads) = self.uploads.lock() {
            uploads.remove(id);
        }
    }
}

/// `n` when it is a part number S3 allows (1 to 10,000).
pub(super) fn part_number(n: i32) -> S3Result<i32> {
    match (1..=10_000).contains(&n) {
        true => Ok(n),
        false => Err(s3_error!(
            InvalidArgument,
            "part number {n}: parts are numbered 1 to 10,000"
        )),
    }
}

/// Seals what `feed` writes (it returns the plaintext's length and a value for the caller) as
/// part `n` of `upload`: into a container of its own, to the upload's key, in a file that
/// replaces an earlier part `n` only once whole. Returns the part's ETag and `feed`'s value.
pub(super) fn store_part<T>(
    upload: &Upload,
    n: i32,
    opts: &EncryptOptions,
    feed: impl FnOnce(&mut dyn std::io::Write) -> S3Result<(u64, T)>,
) -> S3Result<(String, T)> {
    let to: [&dyn crate::Recipient; 1] = [&upload.recipient];
    let out = store::TempFile::in_dir(&upload.dir)?;
    let ((size, value), _, out) = store::seal_into(out, &to, opts, feed)?;
    let meta = PartMeta {
        size,
        etag: store::random_etag(),
    };
    let tmp = out.sync()?;
    let json = serde_json::to_vec(&meta).map_err(|e| internal("a part's size", e))?;
    // A poisoned lock only means another part's placing panicked: the files are still sound.
    let _placing = upload.placing.lock().unwrap_or_else(|p| p.into_inner());
    tmp.persist(part_file(&upload.dir, n))
        .map_err(|e| internal("placing a part", e.error))?;
    fs::write(part_meta_file(&upload.dir, n), json).map_err(|e| internal("a part's size", e))?;
    Ok((meta.etag, value))
}

/// The part numbers a completion lists, checked: at least one, in ascending order, each
/// uploaded, with the ETag its upload answered.
fn checked_parts(dir: &Path, listed: &[CompletedPart]) -> S3Result<Vec<i32>> {
    if listed.is_empty() {
        return Err(s3_error!(MalformedXML, "the completion lists no part"));
    }
    let mut numbers = Vec::with_capacity(listed.len());
    for p in listed {
        let n = p
            .part_number
            .ok_or_else(|| s3_error!(InvalidPart, "a listed part has no number"))?;
        if numbers.last().is_some_and(|&last| n <= last) {
            return Err(s3_error!(
                InvalidPartOrder,
                "parts must be listed in ascending order"
            ));
        }
        let meta = read_part_meta(dir, n)
            .ok_or_else(|| s3_error!(InvalidPart, "part {n} was not uploaded"))?;
        let given = p.e_tag.as_ref().map(|e| e.value().trim_matches('"'));
        if given.is_some_and(|g| g != meta.etag) {
            return Err(s3_error!(
                InvalidPart,
                "part {n}'s ETag is not the one its upload answered"
            ));
        }
        numbers.push(n);
    }
    Ok(numbers)
}

/// Opens each part in order with the upload's key and writes its plaintext to `w`. Returns
/// the total length.
fn join_parts(u: &Upload, numbers: &[i32], w: &mut dyn std::io::Write) -> S3Result<u64> {
    let ids = read_identities(
        u.secret.as_bytes(),
        "the upload's key",
        super::service::NoPrompt,
    )
    .map_err(|e| internal("the upload's key", e))?;
    let mut total = 0;
    for &n in numbers {
        let file = File::open(part_file(&u.dir, n)).map_err(|e| internal("reading a part", e))?;
        let mut r = Sealed::read(file)
            .and_then(|s| s.unlock(&identity_refs(&ids), &DecryptOptions::default()))
            .map_err(|e| internal(&format!("opening part {n}"), e))?;
        total += r
            .copy_to(&mut *w)
            .map_err(|e| internal(&format!("joining part {n}"), e))?;
    }
    Ok(total)
}

/// S3's form of a multipart ETag: the MD5 of the parts' ETags (as bytes), `-N`.
fn multipart_etag(dir: &Path, numbers: &[i32]) -> String {
    let mut md5 = md5::Md5::new();
    for &n in numbers {
        if let Some(meta) = read_part_meta(dir, n) {
            md5.update(meta.etag.as_bytes());
        }
    }
    format!("{}-{}", store::hex(&md5.finalize()), numbers.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(started: Instant) -> Arc<Upload> {
        let (secret, public) = recipients::generate();
        Arc::new(Upload {
            bucket: "bkt".into(),
            key: "k".into(),
            secret,
            recipient: AgeRecipient::parse(&public).unwrap(),
            dir: PathBuf::from("unused"),
            content_type: None,
            user: BTreeMap::new(),
            started,
            placing: Default::default(),
        })
    }

    #[test]
    fn uploads_older_than_the_limit_are_abandoned() {
        let t0 = Instant::now();
        let later = t0 + ABANDONED_AFTER + Duration::from_secs(1);
        let mut uploads = HashMap::new();
        uploads.insert("old".to_string(), upload(t0));
        uploads.insert("new".to_string(), upload(later - Duration::from_secs(60)));
        assert_eq!(abandoned(&uploads, later, ABANDONED_AFTER), ["old"]);
        assert!(abandoned(&uploads, t0, ABANDONED_AFTER).is_empty());
    }
}
