//! CopyObject and UploadPartCopy: the source opened with the gateway's identities and its
//! plaintext (all of it, or a part copy's range) sealed again into the destination's container
//! or upload part (a container's bytes cannot simply be copied under another key by a
//! write-only gateway either way: copying reads contents, so it needs `-i`). The source's
//! `x-amz-copy-source-if-match` and `-if-none-match` are checked against the ETag clients see.

use std::sync::Arc;
use std::time::SystemTime;

use s3s::dto::*;
use s3s::{s3_error, S3Response, S3Result};

use super::multipart::{part_number, store_part};
use super::read;
use super::service::{blocking, recipient_refs, Gateway};
use super::store::{self, internal, Meta};

/// The source of a CopyObject or UploadPartCopy (`$input`: two types with the same fields): its
/// bucket and key, the backend's `Stat` and its lasting metadata (`None` for a container stored
/// without the gateway's: nothing is opened for it here, the copy opens it once), once its key
/// is valid and its conditions passed (in an `async fn` of the gateway, `$gw`).
macro_rules! checked_source {
    ($gw:expr, $input:ident) => {{
        let (bucket, key) = source_of(&$input.copy_source)?;
        $gw.backend.check_key(&bucket, &key)?;
        let stat = $gw.backend.stat(&bucket, &key).await?;
        let meta = $gw.backend.meta(&bucket, &key, &stat).await;
        let by_time = $input.copy_source_if_modified_since.is_some()
            || $input.copy_source_if_unmodified_since.is_some();
        let (if_match, if_none_match) = (
            $input.copy_source_if_match.as_ref(),
            $input.copy_source_if_none_match.as_ref(),
        );
        check_source(meta.as_ref(), if_match, if_none_match, by_time)?;
        (bucket, key, stat, meta)
    }};
}

/// The bucket and key of a copy's source.
fn source_of(source: &CopySource) -> S3Result<(String, String)> {
    match source {
        CopySource::Bucket { bucket, key, .. } => Ok((bucket.to_string(), key.to_string())),
        _ => Err(s3_error!(
            NotImplemented,
            "copies from access points are not supported"
        )),
    }
}

/// Refuses the copy when the source is not the one the client named (`x-amz-copy-source-if-match`,
/// `-if-none-match`, against the ETag of `meta`, the metadata written with the container; without
/// it each HEAD draws an ETag, and no condition can hold). The time conditions are refused
/// rather than ignored.
fn check_source(
    meta: Option<&Meta>,
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
    by_time: bool,
) -> S3Result<()> {
    if by_time {
        return Err(s3_error!(
            NotImplemented,
            "x-amz-copy-source-if-modified-since and -if-unmodified-since are not supported: \
             use x-amz-copy-source-if-match with the source's ETag"
        ));
    }
    let Some(etag) = meta.map(|m| m.etag.as_str()) else {
        if if_match.is_none() && if_none_match.is_none() {
            return Ok(());
        }
        return Err(s3_error!(
            PreconditionFailed,
            "the copy's source has no lasting ETag (it was stored without the gateway's \
             metadata, so each HEAD draws one): copy it without x-amz-copy-source-if-match or \
             -if-none-match"
        ));
    };
    let is = |c: &ETagCondition| match c {
        ETagCondition::Any => true,
        ETagCondition::ETag(t) => t.value() == etag,
    };
    if if_match.is_some_and(|c| !is(c)) || if_none_match.is_some_and(is) {
        return Err(s3_error!(
            PreconditionFailed,
            "the copy's source is not the one named by its x-amz-copy-source-if-match or \
             -if-none-match"
        ));
    }
    Ok(())
}

/// `x-amz-copy-source-range: bytes=FIRST-LAST` (inclusive) within a plaintext of `size` bytes,
/// as `FIRST..LAST + 1`; `None` copies the whole source.
fn copy_range(range: Option<&str>, size: u64) -> S3Result<Option<(u64, u64)>> {
    let Some(r) = range else {
        return Ok(None);
    };
    let bad = || {
        s3_error!(
            InvalidArgument,
            "x-amz-copy-source-range {r:?}: give bytes=FIRST-LAST within the source's {size} bytes"
        )
    };
    // Only FIRST-LAST: S3 takes neither an open end nor a suffix here, nor a range past the end.
    match Range::parse(r) {
        Ok(Range::Int {
            first,
            last: Some(last),
        }) if first <= last && last < size => Ok(Some((first, last + 1))),
        _ => Err(bad()),
    }
}

impl Gateway {
    pub(super) async fn copy(
        &self,
        input: CopyObjectInput,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        let ids = self.identities()?;
        self.backend.check_key(&input.bucket, &input.key)?;
        self.backend.bucket(&input.bucket).await?;
        let (src_bucket, src_key, stat, meta) = checked_source!(self, input);
        let replace = input
            .metadata_directive
            .as_ref()
            .is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        let (content_type, user) = match replace {
            true => (
                input.content_type,
                input.metadata.unwrap_or_default().into_iter().collect(),
            ),
            false => meta.map_or_else(Default::default, |m| (m.content_type, m.user)),
        };
        let (backend, bucket, key) = (self.backend.clone(), input.bucket, input.key);
        let (recipients, opts) = (Arc::clone(&self.recipients), Arc::clone(&self.encrypt));
        let permit = self.slots(2).await?;
        let (etag, modified) = blocking(move || {
            let _permit = permit;
            let source = backend.open_as(&src_bucket, &src_key, true, &stat)?;
            let mut reader = read::open(source, &ids)?;
            let to = recipient_refs(&recipients);
            let feed =
                |w: &mut dyn std::io::Write| reader.copy_to(w).map_err(|e| internal("copying", e));
            let meta = |size: &u64, stored_len| Meta {
                size: *size,
                etag: store::object_etag(),
                stored_len,
                stored_tag: None,
                content_type,
                user,
            };
            let (_, meta, modified) = backend.seal(&bucket, &key, &to, &opts, feed, meta)?;
            Ok((meta.etag, modified))
        })
        .await?;
        Ok(S3Response::new(CopyObjectOutput {
            copy_object_result: Some(CopyObjectResult {
                e_tag: Some(ETag::Strong(etag)),
                last_modified: Some(Timestamp::from(modified)),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    /// UploadPartCopy: the source's plaintext (all, or `x-amz-copy-source-range`) as part of a
    /// multipart upload, sealed as an uploaded part is. The aws CLI copies objects over its
    /// multipart threshold (8 MiB) this way.
    pub(super) async fn copy_part(
        &self,
        input: UploadPartCopyInput,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        let ids = self.identities()?;
        let upload = self.upload(&input.upload_id, &input.bucket, &input.key)?;
        let n = part_number(input.part_number)?;
        let (src_bucket, src_key, stat, meta) = checked_source!(self, input);
        let asked = input.copy_source_range;
        // Checked now when the size is known without opening the container, else once it is.
        if let Some(m) = &meta {
            copy_range(asked.as_deref(), m.size)?;
        }
        let (backend, opts) = (self.backend.clone(), self.part_options());
        let permit = self.slots(2).await?;
        let (etag, ()) = blocking(move || {
            let _permit = permit;
            let source = backend.open_as(&src_bucket, &src_key, asked.is_none(), &stat)?;
            let mut reader = read::open(source, &ids)?;
            let range = match (&meta, asked.as_deref()) {
                (_, None) => None,
                (Some(m), r) => copy_range(r, m.size)?,
                (None, r) => {
                    let size = reader
                        .plaintext_len()
                        .map_err(|e| internal("reading the source's length", e))?;
                    copy_range(r, size)?
                }
            };
            store_part(&upload, n, &opts, |w| {
                let copied = match range {
                    Some((start, end)) => reader.copy_range_to(start, Some(end), w),
                    None => reader.copy_to(w),
                };
                copied
                    .map(|len| (len, ()))
                    .map_err(|e| internal("copying", e))
            })
        })
        .await?;
        Ok(S3Response::new(UploadPartCopyOutput {
            copy_part_result: Some(CopyPartResult {
                e_tag: Some(ETag::Strong(etag)),
                last_modified: Some(Timestamp::from(SystemTime::now())),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }
}
