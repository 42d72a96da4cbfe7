//! The S3 operations over the local-directory backend (docs/GATEWAY.md, "Operations"): s3s
//! hands each one over parsed and authenticated; this module seals, opens, lists and deletes.
//! Multipart uploads are in `multipart.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};
use tokio::sync::Semaphore;
use zeroize::Zeroizing;

use super::backend::{Backend, Stat};
use super::body;
use super::list::{self, Entry, Query};
use super::multipart::Upload;
use super::read;
use super::store::{self, internal, Meta};
use crate::crypto::recipients::{read_identities, AgeIdentity, AgeRecipient, KeyPassphrase};
use crate::{EncryptOptions, Identity, Recipient};

/// The message of every read a write-only gateway refuses.
pub const WRITE_ONLY: &str =
    "this gateway is write-only (started without -i): it holds no key to read objects";

/// The gateway: its backend, the keys it seals to and opens with, and the uploads in progress.
pub struct Gateway {
    pub(super) backend: Backend,
    pub(super) recipients: Arc<Vec<AgeRecipient>>,
    /// The identity files' contents (an `AgeIdentity` is not `Send`: each read parses them).
    pub(super) identities: Option<Arc<Vec<Zeroizing<Vec<u8>>>>>,
    pub(super) encrypt: Arc<EncryptOptions>,
    /// The engine's windows that may be held at once (the memory bound): `max_slots` permits.
    pub(super) slots: Arc<Semaphore>,
    pub(super) max_slots: u32,
    pub(super) uploads: Mutex<HashMap<String, Arc<Upload>>>,
    /// The buckets each key may use (`access.rs`): a listing shows a key only its own.
    pub(super) scopes: super::access::Scopes,
}

/// An identity loader that never asks: an encrypted SSH key was refused at start.
#[derive(Clone)]
pub(super) struct NoPrompt;

impl KeyPassphrase for NoPrompt {
    fn passphrase(&self, _description: &str) -> Option<String> {
        None
    }

    fn refusal(&self) -> Option<String> {
        Some("the gateway cannot ask for a key's passphrase: give it an unencrypted identity (zseal keygen)".into())
    }
}

/// Parses identity files' contents into identities.
pub(super) fn parse_identities(files: &[Zeroizing<Vec<u8>>]) -> crate::Result<Vec<AgeIdentity>> {
    let mut out = Vec::new();
    for f in files {
        out.extend(read_identities(f, "-i", NoPrompt)?);
    }
    Ok(out)
}

/// Runs blocking work (file system, engine) off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> S3Result<T> + Send + 'static,
) -> S3Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| internal("a worker stopped", e))?
}

impl Gateway {
    /// The identities, or the write-only refusal (403).
    pub(super) fn identities(&self) -> S3Result<Arc<Vec<Zeroizing<Vec<u8>>>>> {
        self.identities
            .clone()
            .ok_or_else(|| s3_error!(AccessDenied, "{WRITE_ONLY}"))
    }

    /// Slots for a job that holds `windows` of the engine's windows at once (a PUT, a part
    /// or a GET one; a completion or a copy two, the reader's and the sealer's): waits while
    /// `--max-requests` windows are taken, so that they bound the memory (docs/GATEWAY.md).
    pub(super) async fn slots(&self, windows: u32) -> S3Result<tokio::sync::OwnedSemaphorePermit> {
        Arc::clone(&self.slots)
            .acquire_many_owned(windows.min(self.max_slots))
            .await
            .map_err(|e| internal("the gateway is stopping", e))
    }

    /// HEAD's and a listing's view of an object whose container `stat` describes: its
    /// metadata, or, when that is missing or describes another container, the container's
    /// authenticated trailer (needs `-i`).
    pub(super) async fn info(&self, bucket: &str, key: &str, stat: &Stat) -> S3Result<Meta> {
        self.info_of(bucket, key, stat).await.map(|(meta, _)| meta)
    }

    /// [`Gateway::info`], and whether its ETag lasts: true when it comes from the metadata
    /// written with the container, false when it was drawn for this answer.
    pub(super) async fn info_of(
        &self,
        bucket: &str,
        key: &str,
        stat: &Stat,
    ) -> S3Result<(Meta, bool)> {
        if let Some(meta) = self.backend.meta(bucket, key, stat).await {
            return Ok((meta, true));
        }
        let Some(ids) = self.identities.clone() else {
            return Err(internal(
                "the object's metadata is missing or stale, and a write-only gateway cannot read its size from the container",
                format!("{bucket}/{key}"),
            ));
        };
        let (backend, b, k) = (self.backend.clone(), bucket.to_string(), key.to_string());
        let size =
            blocking(move || read::plaintext_len(backend.open(&b, &k, false)?, &ids)).await?;
        let drawn = Meta {
            size,
            etag: store::object_etag(),
            stored_len: stat.len,
            stored_tag: stat.tag.clone(),
            content_type: None,
            user: Default::default(),
        };
        Ok((drawn, false))
    }
}

fn etag(s: &str) -> ETag {
    ETag::Strong(s.to_string())
}

fn metadata(user: &std::collections::BTreeMap<String, String>) -> Option<Metadata> {
    (!user.is_empty()).then(|| user.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

pub(super) fn recipient_refs(r: &[AgeRecipient]) -> Vec<&dyn Recipient> {
    r.iter().map(|r| r as &dyn Recipient).collect()
}

pub(super) fn identity_refs(ids: &[AgeIdentity]) -> Vec<&dyn Identity> {
    ids.iter().map(|i| i as &dyn Identity).collect()
}

#[async_trait::async_trait]
impl S3 for Gateway {
    async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let creds = req.credentials.as_ref();
        let buckets = self
            .backend
            .buckets()
            .await?
            .into_iter()
            .filter(|(name, _)| self.scopes.lists(creds, name))
            .map(|(name, made)| Bucket {
                name: Some(name),
                // S3 always gives one, and clients rely on it (the aws CLI's `s3 ls` fails
                // without): an unknown time shows as the Unix epoch.
                creation_date: Some(Timestamp::from(made.unwrap_or(SystemTime::UNIX_EPOCH))),
                ..Default::default()
            })
            .collect();
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(buckets),
            ..Default::default()
        }))
    }

    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        self.backend.create_bucket(&req.input.bucket).await?;
        Ok(S3Response::new(CreateBucketOutput::default()))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        self.backend.bucket(&req.input.bucket).await?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.backend.bucket(&req.input.bucket).await?;
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        self.backend.delete_bucket(&req.input.bucket).await?;
        Ok(S3Response::new(DeleteBucketOutput::default()))
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        let marker = req.input.marker.clone();
        let v2 = self
            .list_objects_v2(req.map_input(|i| ListObjectsV2Input {
                bucket: i.bucket,
                delimiter: i.delimiter,
                encoding_type: i.encoding_type,
                max_keys: i.max_keys,
                prefix: i.prefix,
                start_after: i.marker,
                ..Default::default()
            }))
            .await?;
        Ok(v2.map_output(|v2| ListObjectsOutput {
            next_marker: v2.next_continuation_token,
            contents: v2.contents,
            common_prefixes: v2.common_prefixes,
            delimiter: v2.delimiter,
            encoding_type: v2.encoding_type,
            name: v2.name,
            prefix: v2.prefix,
            max_keys: v2.max_keys,
            is_truncated: v2.is_truncated,
            marker,
            ..Default::default()
        }))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let input = req.input;
        let max_keys = input.max_keys.unwrap_or(1000).clamp(0, 1000);
        let all = self.backend.objects(&input.bucket).await?;
        let keys: Vec<&str> = all.iter().map(|o| o.key.as_str()).collect();
        let page = list::select(
            &keys,
            &Query {
                prefix: input.prefix.as_deref().unwrap_or(""),
                delimiter: input.delimiter.as_deref(),
                start_after: input.start_after.as_deref(),
                token: input.continuation_token.as_deref(),
                max_keys: max_keys as usize,
            },
        );
        let mut contents = Vec::new();
        let mut prefixes = Vec::new();
        for entry in &page.entries {
            match entry {
                Entry::Prefix(p) => prefixes.push(CommonPrefix {
                    prefix: Some(p.clone()),
                }),
                Entry::Object(i) => {
                    let listed = &all[*i];
                    let stat = match &listed.stat {
                        Some(s) => s.clone(),
                        None => match self.backend.stat(&input.bucket, &listed.key).await {
                            Ok(s) => s,
                            Err(_) => continue,
                        },
                    };
                    let Ok(meta) = self.info(&input.bucket, &listed.key, &stat).await else {
                        continue;
                    };
                    contents.push(Object {
                        key: Some(listed.key.clone()),
                        size: Some(meta.size as i64),
                        e_tag: Some(etag(&meta.etag)),
                        last_modified: Some(Timestamp::from(stat.modified)),
                        ..Default::default()
                    });
                }
            }
        }
        Ok(S3Response::new(ListObjectsV2Output {
            key_count: Some((contents.len() + prefixes.len()) as i32),
            max_keys: Some(max_keys),
            is_truncated: Some(page.next.is_some()),
            next_continuation_token: page.next,
            continuation_token: input.continuation_token,
            contents: Some(contents),
            common_prefixes: (!prefixes.is_empty()).then_some(prefixes),
            delimiter: input.delimiter,
            encoding_type: input.encoding_type,
            name: Some(input.bucket),
            prefix: input.prefix,
            start_after: input.start_after,
            ..Default::default()
        }))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let input = req.input;
        self.backend.check_key(&input.bucket, &input.key)?;
        let stat = self.backend.stat(&input.bucket, &input.key).await?;
        let meta = self.info(&input.bucket, &input.key, &stat).await?;
        Ok(S3Response::new(HeadObjectOutput {
            content_length: Some(meta.size as i64),
            e_tag: Some(etag(&meta.etag)),
            last_modified: Some(Timestamp::from(stat.modified)),
            content_type: meta.content_type.clone(),
            metadata: metadata(&meta.user),
            accept_ranges: Some("bytes".into()),
            ..Default::default()
        }))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let input = req.input;
        let ids = self.identities()?;
        if input.part_number.is_some() {
            return Err(s3_error!(
                NotImplemented,
                "GET by part number is not supported: use a Range"
            ));
        }
        self.backend.check_key(&input.bucket, &input.key)?;
        let stat = self.backend.stat(&input.bucket, &input.key).await?;
        let meta = self.info(&input.bucket, &input.key, &stat).await?;
        let modified = stat.modified;
        let permit = self.slots(1).await?;
        let (backend, bucket, key) = (self.backend.clone(), input.bucket, input.key);
        let sequential = input.range.is_none();
        let open = move || backend.open(&bucket, &key, sequential);
        let opened = read::stream(open, ids, input.range, permit).await?;
        Ok(S3Response::new(GetObjectOutput {
            body: Some(opened.body),
            content_length: Some(opened.len as i64),
            content_range: opened.content_range,
            e_tag: Some(etag(&meta.etag)),
            last_modified: Some(Timestamp::from(modified)),
            content_type: meta.content_type.clone(),
            metadata: metadata(&meta.user),
            accept_ranges: Some("bytes".into()),
            ..Default::default()
        }))
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let trailers = req.trailing_headers;
        let input = req.input;
        if let Some(folder) = super::names::folder_marker(&input.key, input.content_length) {
            // pyarrow and S3 consoles make "folders" as empty objects named `a/b/`: accepted,
            // nothing stored (a folder exists here while objects are below it).
            self.backend.check_key(&input.bucket, folder)?;
            self.backend.bucket(&input.bucket).await?;
            return Ok(S3Response::new(PutObjectOutput {
                e_tag: Some(etag(super::names::EMPTY_MD5)),
                ..Default::default()
            }));
        }
        // Refuse a bad key before reading any of the body.
        self.backend.check_key(&input.bucket, &input.key)?;
        let (body, expected) = body::body_of!(input);
        let user = input.metadata.unwrap_or_default().into_iter().collect();
        self.backend.bucket(&input.bucket).await?;
        let (backend, bucket, key) = (self.backend.clone(), input.bucket, input.key);
        let (recipients, opts) = (Arc::clone(&self.recipients), Arc::clone(&self.encrypt));
        let content_type = input.content_type;
        let rt = tokio::runtime::Handle::current();
        let permit = self.slots(1).await?;
        let (etag_hex, checksum) = blocking(move || {
            let _permit = permit;
            let to = recipient_refs(&recipients);
            let feed = |w: &mut dyn std::io::Write| body::feed(&rt, body, expected, trailers, w);
            let meta = |fed: &body::Fed, stored_len| Meta {
                size: fed.len,
                etag: store::object_etag(),
                stored_len,
                stored_tag: None,
                content_type,
                user,
            };
            let (fed, meta, _) = backend.seal(&bucket, &key, &to, &opts, feed, meta)?;
            Ok((meta.etag, fed.checksum))
        })
        .await?;
        Ok(S3Response::new(body::answer!(
            PutObjectOutput,
            etag(&etag_hex),
            checksum
        )))
    }

    async fn copy_object(
        &self,
        req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        self.copy(req.input).await
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let input = req.input;
        self.backend.check_key(&input.bucket, &input.key)?;
        self.backend.delete(&input.bucket, &input.key).await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let input = req.input;
        let quiet = input.delete.quiet.unwrap_or(false);
        let (deleted, errors) = {
            let (mut deleted, mut errors) = (Vec::new(), Vec::new());
            for o in input.delete.objects {
                let done = match self.backend.check_key(&input.bucket, &o.key) {
                    Ok(()) => self.backend.delete(&input.bucket, &o.key).await,
                    Err(e) => Err(e),
                };
                match done {
                    Ok(()) => deleted.push(DeletedObject {
                        key: Some(o.key),
                        ..Default::default()
                    }),
                    Err(e) => errors.push(Error {
                        key: Some(o.key),
                        code: Some(e.code().as_str().to_string()),
                        message: e.message().map(str::to_string),
                        ..Default::default()
                    }),
                }
            }
            (deleted, errors)
        };
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: (!quiet).then_some(deleted),
            errors: (!errors.is_empty()).then_some(errors),
            ..Default::default()
        }))
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        self.create_upload(req.input).await
    }

    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        self.upload_one_part(req.input, req.trailing_headers).await
    }

    async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        self.copy_part(req.input).await
    }

    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        self.parts_of(req.input).await
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        self.complete(req.input).await
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        self.abort(req.input).await
    }
}
