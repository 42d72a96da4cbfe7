//! CopyObject: the source opened with the gateway's identities and its plaintext sealed again
//! into the destination's container (a container's bytes cannot simply be copied under another
//! key by a write-only gateway either way: copying reads contents, so it needs `-i`).

use std::fs::File;
use std::sync::Arc;

use s3s::dto::*;
use s3s::{s3_error, S3Response, S3Result};

use super::names;
use super::service::{blocking, identity_refs, parse_identities, recipient_refs, Gateway};
use super::store::{self, internal, refused, Meta};
use crate::{DecryptOptions, Sealed};

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
        names::object_path(&self.root, &input.bucket, &input.key).map_err(refused)?;
        let source = store::existing_object(&self.root, &src_bucket, &src_key)?;
        let src_meta = store::read_meta(&self.root, &src_bucket, &src_key, &source);
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
        let (root, bucket, key) = (self.root.clone(), input.bucket, input.key);
        let (recipients, opts) = (Arc::clone(&self.recipients), Arc::clone(&self.encrypt));
        let permit = self.slot().await?;
        let (etag, modified) = blocking(move || {
            let _permit = permit;
            let ids = parse_identities(&ids).map_err(|e| internal("reading the identities", e))?;
            let file = File::open(&source).map_err(|e| internal("opening the source", e))?;
            let mut reader = Sealed::read(file)
                .and_then(|s| s.unlock(&identity_refs(&ids), &DecryptOptions::default()))
                .map_err(|e| internal("opening the source (is -i one of its recipients?)", e))?;
            let tmp = store::temp_file(&root, &bucket)?;
            let to = recipient_refs(&recipients);
            let (size, stored_len) = store::seal_into(tmp.as_file(), &to, &opts, |w| {
                reader.copy_to(w).map_err(|e| internal("copying", e))
            })?;
            let meta = Meta {
                size,
                etag: store::random_etag(),
                stored_len,
                content_type,
                user,
            };
            let modified = store::publish(&root, &bucket, &key, tmp, &meta)?;
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
