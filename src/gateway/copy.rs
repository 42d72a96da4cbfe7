//! CopyObject: the source opened with the gateway's identities and its plaintext sealed again
//! into the destination's container (a container's bytes cannot simply be copied under another
//! key by a write-only gateway either way: copying reads contents, so it needs `-i`).

use std::sync::Arc;

use s3s::dto::*;
use s3s::{s3_error, S3Response, S3Result};

use super::read;
use super::service::{blocking, recipient_refs, Gateway};
use super::store::{self, internal, Meta};

impl Gateway {
    pub(super) async fn copy(
        &self,
        input: CopyObjectInput,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        let ids = self.identities()?;
        let (src_bucket, src_key) = match &input.copy_source {
            CopySource::Bucket { bucket, key, .. } => (bucket.to_string(), key.to_string()),
            _ => {
                return Err(s3_error!(
                    NotImplemented,
                    "copies from access points are not supported"
                ))
            }
        };
        self.backend.check_key(&input.bucket, &input.key)?;
        self.backend.check_key(&src_bucket, &src_key)?;
        self.backend.bucket(&input.bucket).await?;
        let stat = self.backend.stat(&src_bucket, &src_key).await?;
        let src_meta = self.backend.meta(&src_bucket, &src_key, &stat).await;
        let replace = input
            .metadata_directive
            .as_ref()
            .is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        let (content_type, user) = match (replace, src_meta) {
            (true, _) => (
                input.content_type,
                input.metadata.unwrap_or_default().into_iter().collect(),
            ),
            (false, Some(m)) => (m.content_type, m.user),
            (false, None) => (None, Default::default()),
        };
        let (backend, bucket, key) = (self.backend.clone(), input.bucket, input.key);
        let (recipients, opts) = (Arc::clone(&self.recipients), Arc::clone(&self.encrypt));
        let permit = self.slots(2).await?;
        let (etag, modified) = blocking(move || {
            let _permit = permit;
            let source = backend.open(&src_bucket, &src_key, true)?;
            let mut reader = read::open(source, &ids)?;
            let to = recipient_refs(&recipients);
            let feed =
                |w: &mut dyn std::io::Write| reader.copy_to(w).map_err(|e| internal("copying", e));
            let meta = |size: &u64, stored_len| Meta {
                size: *size,
                etag: store::random_etag(),
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
}
